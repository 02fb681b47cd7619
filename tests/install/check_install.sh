#!/usr/bin/env bash
# check_install.sh BUILD_DIR CONSUMER_SRC
set -euo pipefail
build=$1
src=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" >/dev/null
# The reuse engine is private (src/memory/reuse): no installed header may be or include it.
if ls "$work/prefix/include/arenarpc/memory" | grep -E 'reuse|shape_plan|kept_tree|mirror|spare'; then
  echo "install_consumer: private reuse headers were installed" >&2
  exit 1
fi
if grep -rn '#include "memory/' "$work/prefix/include"; then
  echo "install_consumer: an installed header includes a private one" >&2
  exit 1
fi
# 1) CMake package
cmake -S "$src" -B "$work/cmake-build" -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/cmake-build" >/dev/null
"$work/cmake-build/consumer"
# 2) pkg-config
PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig:$work/prefix/lib/x86_64-linux-gnu/pkgconfig" \
  bash -c "g++ -std=c++20 '$src/consumer.cc' -o '$work/consumer-pc' \$(pkg-config --cflags --libs arenarpc)"
"$work/consumer-pc"
echo "install_consumer: find_package and pkg-config consumers built and ran"
