#!/usr/bin/env bash
# Raw HTTP/2 throughput of a gRPC unary echo with h2load (Debian's nghttp2-client): the same
# framed request (bench/protocol/grpc_request_file) posted to echo_server's port (gRPC on the
# arenarpc runtime, one I/O thread, memory strategy `mode`) and to gRPC C++'s own callback server
# (examples/grpc_echo), each server pinned to CPU 1 and h2load to CPU 0, runs alternated. Reports
# requests/s and the server's CPU per request (utime+stime from /proc/<pid>/stat around the run).
# Usage: bench/h2load_grpc.sh [rounds=3] [payload_scale=1] [mode=heap] [requests=100000]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
rounds=${1:-3}
scale=${2:-1}
mode=${3:-heap}
requests=${4:-100000}
build=$root/build/release
work=$(mktemp -d)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true; rm -rf "$work"' EXIT
"$build/bench/protocol/grpc_request_file" "$scale" "$work/request.bin"
port_a=$((20000 + RANDOM % 20000))
port_g=$((port_a + 1))
taskset -c 1 "$build/examples/echo_server" --address=127.0.0.1:$port_a --threads=1 \
  --mode="$mode" >/dev/null 2>&1 &
pids+=($!)
taskset -c 1 "$build/examples/grpc_echo/grpc_echo_server" --address=127.0.0.1:$port_g \
  --mode=default >/dev/null 2>&1 &
pids+=($!)
sleep 1
declare -A pid_of=([arenarpc]=${pids[0]} [grpc]=${pids[1]})
declare -A url_of=([arenarpc]=http://127.0.0.1:$port_a/arenarpc.example.EchoService/Echo
                   [grpc]=http://127.0.0.1:$port_g/arenarpc.example.GrpcEchoService/Echo)
press() {  # <server> <requests>: prints "<req/s> <succeeded>"
  taskset -c 0 h2load -n "$2" -c 1 -m 8 -H 'content-type: application/grpc' -H 'te: trailers' \
    -d "$work/request.bin" "${url_of[$1]}" |
    awk '/^finished in/ {rps=$4} /^requests:/ {ok=$8} END {print rps, ok}'
}
ticks() { awk '{print $14+$15}' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)
for server in arenarpc grpc; do  # every request must come back as grpc-status 0
  status=$(curl -s --http2-prior-knowledge -H 'content-type: application/grpc' -H 'te: trailers' \
             --data-binary "@$work/request.bin" -D - -o /dev/null "${url_of[$server]}" |
           tr -d '\r' | awk -F': ' '/^grpc-status/ {print $2}')
  [ "$status" = 0 ] || { echo "$server: grpc-status '$status', not 0" >&2; exit 1; }
  press "$server" 2000 >/dev/null  # warm-up
done
echo "payload_scale $scale, $requests requests per run, h2load -c 1 -m 8, arenarpc --mode=$mode"
for round in $(seq "$rounds"); do
  for server in arenarpc grpc; do
    pid=${pid_of[$server]}
    before=$(ticks "$pid")
    read -r rps ok < <(press "$server" "$requests")
    after=$(ticks "$pid")
    cpu_us=$(python3 -c "print(f'{($after - $before) * 1e6 / $hz / $ok:.1f}')")
    echo "round $round $server: $ok ok, $rps req/s, server $cpu_us us CPU per request"
  done
done
