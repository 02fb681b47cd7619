#!/usr/bin/env bash
# Installs every Debian 12 package that arenarpc's build, tests and benchmarks need.
# Idempotent and non-interactive: packages already installed are skipped; uses sudo when not root.
set -euo pipefail

PACKAGES=(
  build-essential g++ cmake ninja-build pkg-config git
  libprotobuf-dev libprotoc-dev protobuf-compiler
  libgrpc++-dev protobuf-compiler-grpc grpc-proto
  libasio-dev libboost-context-dev libgflags-dev libsnappy-dev zlib1g-dev
  libgoogle-perftools-dev google-perftools libjemalloc-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  clang libclang-rt-14-dev lld
  valgrind util-linux procps
  gnuplot-nox python3
  libhttp-parser-dev prometheus-cpp-dev libc-ares-dev curl libssl-dev openssl
  libnghttp2-dev nghttp2-client python3-grpcio python3-protobuf
  prometheus etcd-server etcd-client chromium nodejs
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install_deps: all ${#PACKAGES[@]} packages present"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "install_deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
