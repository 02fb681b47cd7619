#!/usr/bin/env bash
# Server instructions (callgrind Ir) per HTTP+JSON echo call — stable on a loaded machine, unlike
# QPS. Compare with bench/callgrind_server's baidu_std number for the same server and payload.
#   bench/http_callgrind.sh [BUILD_DIR] [MODE] [PAYLOAD_SCALE]
# Starts echo_server (one I/O thread) under callgrind with instrumentation off, warms it up with
# bench/http_echo for 3 s, counts 6 s (2 pipelined calls in flight), prints Ir per call.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build/release}
mode=${2:-heap}
scale=${3:-1}
server_bin=$build/examples/echo_server
http_bin=$build/bench/http_echo
for bin in "$server_bin" "$http_bin"; do
  [ -x "$bin" ] || { echo "http_callgrind: $bin is missing (build echo_server http_echo)" >&2; exit 2; }
done
command -v valgrind >/dev/null || { echo "http_callgrind: valgrind is not installed" >&2; exit 2; }
dir=$(mktemp -d)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$dir/cg.out" "$server_bin" \
  --address=127.0.0.1:"$port" --mode="$mode" --threads=1 >/dev/null 2>&1 &
server=$!
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null; rm -rf "$dir"' EXIT
for _ in $(seq 200); do (echo >/dev/tcp/127.0.0.1/"$port") 2>/dev/null && break; sleep 0.3; done
"$http_bin" --server=127.0.0.1:"$port" --depth=2 --payload_scale="$scale" --warmup_s=0 --duration_s=3 >/dev/null
callgrind_control -i on $server >/dev/null 2>&1
calls=$("$http_bin" --server=127.0.0.1:"$port" --depth=2 --payload_scale="$scale" --warmup_s=0 \
          --duration_s=6 | sed -n 's/.*"calls":\([0-9]*\).*/\1/p')
callgrind_control -i off $server >/dev/null 2>&1
kill $server; wait $server 2>/dev/null || true
total=$(grep -h "^totals:" "$dir"/cg.out* | awk '{s += $2} END {print s}')
echo "http_json mode=$mode payload_scale=$scale: $calls calls, $(( total / calls )) Ir/call"
