#!/usr/bin/env bash
# Configures and builds one flavour: release | asan | tsan.  Usage: scripts/build.sh FLAVOUR [targets...]
#   release: -O2 -g1, everything (library, tests, examples, tools, benchmarks)
#   asan:    AddressSanitizer + UndefinedBehaviorSanitizer, library + tests
#   tsan:    ThreadSanitizer, library + tests (the suite's "concurrency" label runs under it)
# Every flavour keeps line tables only (-g1: file:line in reports and profiles, the same code as
# -g, a build that compiles and links faster);
# every flavour links with lld when it is installed (scripts/install_deps.sh installs it).
# The sanitizer flavours compile with clang when it is installed (scripts/install_deps.sh installs
# it for the fuzzers), which builds them faster than g++. CXX=g++ keeps g++.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
flavour=${1:-release}
shift || true
jobs=${JOBS:-$(nproc)}
case "$flavour" in
  release) args=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DARENARPC_BUILD_BENCH=ON
                 "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG" "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG") ;;
  asan)    args=(-DCMAKE_BUILD_TYPE=Debug -DARENARPC_SANITIZE=address,undefined -DARENARPC_BUILD_BENCH=OFF
                 -DCMAKE_CXX_FLAGS=-O1 -DCMAKE_CXX_FLAGS_DEBUG=-g1 -DCMAKE_C_FLAGS_DEBUG=-g1) ;;
  tsan)    args=(-DCMAKE_BUILD_TYPE=Debug -DARENARPC_SANITIZE=thread -DARENARPC_BUILD_BENCH=OFF
                 -DCMAKE_CXX_FLAGS=-O1 -DCMAKE_CXX_FLAGS_DEBUG=-g1 -DCMAKE_C_FLAGS_DEBUG=-g1) ;;
  *) echo "build.sh: unknown flavour '$flavour' (release | asan | tsan)" >&2; exit 2 ;;
esac
if command -v ld.lld >/dev/null 2>&1; then
  args+=(-DCMAKE_EXE_LINKER_FLAGS=-fuse-ld=lld -DCMAKE_SHARED_LINKER_FLAGS=-fuse-ld=lld
         -DCMAKE_MODULE_LINKER_FLAGS=-fuse-ld=lld)
fi
if [ "$flavour" != release ] && [ -z "${CXX:-}" ] && command -v clang++ >/dev/null 2>&1; then
  args+=(-DCMAKE_CXX_COMPILER=clang++ -DCMAKE_C_COMPILER=clang)
fi
dir="$root/build/$flavour"
gen=()
if command -v ninja >/dev/null 2>&1; then gen=(-G Ninja); fi
if [ ! -f "$dir/CMakeCache.txt" ]; then
  cmake -S "$root" -B "$dir" "${gen[@]}" "${args[@]}"
fi
if [ $# -gt 0 ]; then
  cmake --build "$dir" -j "$jobs" --target "$@"
else
  cmake --build "$dir" -j "$jobs"
fi
