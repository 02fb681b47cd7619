#!/usr/bin/env bash
# Server CPU per call over TLS vs clear text on one echo_server: the server (one I/O thread) pinned
# to CPU 0, arenarpc_press (closed loop) pinned to CPU 1, runs alternated, each reporting the
# server's CPU per call (--server_pid). Then full TLS handshakes per second of server CPU with
# `openssl s_time`. Certificates: a test PKI made by tests/e2e/make_test_pki.sh in a temp dir.
# Usage: bench/tls_vs_clear.sh [rounds=3] [payload_scale=10] [mode=reuse]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
rounds=${1:-3}
scale=${2:-10}
mode=${3:-reuse}
server_bin=$root/build/release/examples/echo_server
press_bin=$root/build/release/tools/press/arenarpc_press
pki=$(mktemp -d)
trap 'kill $pid 2>/dev/null || true; rm -rf "$pki"' EXIT
bash "$root/tests/e2e/make_test_pki.sh" "$pki"
port=$((20000 + RANDOM % 20000))
taskset -c 0 "$server_bin" --address=127.0.0.1:$port --threads=1 --mode=$mode \
  --tls_cert="$pki/server.pem" --tls_key="$pki/server.key" >/dev/null 2>&1 &
pid=$!
sleep 1
for round in $(seq "$rounds"); do
  for variant in clear tls; do
    extra=()
    [ $variant = tls ] && extra=(--tls --tls_ca="$pki/ca.pem")
    taskset -c 1 "$press_bin" --server 127.0.0.1:$port --concurrency 8 --payload_scale "$scale" \
      --warmup_s 1 --duration_s 8 --server_pid $pid --server_vars=false --live=false --json \
      "${extra[@]}" 2>/dev/null |
      python3 -c "import json,sys; r=json.load(sys.stdin); u=r['server_usage']; \
print(f\"round $round $variant: {r['calls_ok']} calls, server {u['cpu_us_per_call']:.0f} us CPU per call\")"
  done
done
ticks() { awk '{print $14+$15}' /proc/$pid/stat; }
before=$(ticks)
line=$(taskset -c 1 openssl s_time -connect 127.0.0.1:$port -new -time 5 -CAfile "$pki/ca.pem" \
         -www /health 2>&1 | grep "connections in" | head -1)
after=$(ticks)
n=${line%% *}
echo "full handshakes (TLS 1.3, ECDSA P-256, each GET /health): $n in $(( (after - before) ))0 ms of server CPU" \
     "-> $(( n * 100 / (after - before) )) per server CPU second"
