#!/usr/bin/env bash
# HTTP+JSON echo vs baidu_std echo on one server core (docs/http.md, "Benchmark").
#   bench/http_vs_baidu_std.sh [BUILD_DIR] [SECONDS] [REPEATS] [MODE]
# Starts examples' echo_server (one I/O thread, pinned to CPU 0) and alternates, REPEATS times,
# arenarpc_press on baidu_std and on HTTP+JSON (pinned to CPU 1, closed loop, 8 calls in flight
# on one connection, payload_scale 1, the same ring of payloads). Prints each run's QPS and the
# median HTTP/baidu_std ratio.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build/release}
seconds=${2:-10}
repeats=${3:-3}
mode=${4:-heap}
server_bin=$build/examples/echo_server
press_bin=$build/tools/press/arenarpc_press
for bin in "$server_bin" "$press_bin"; do
  [ -x "$bin" ] || { echo "http_vs_baidu_std: $bin is missing (build echo_server arenarpc_press)" >&2; exit 2; }
done
log=$(mktemp)
taskset -c 0 "$server_bin" --address=127.0.0.1:0 --threads=1 --mode="$mode" >"$log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null; rm -f "$log"' EXIT
for _ in $(seq 100); do grep -q "listening on" "$log" && break; sleep 0.1; done
address=$(sed -n 's/.*listening on \([^ ]*\).*/\1/p' "$log")
[ -n "$address" ] || { echo "http_vs_baidu_std: echo_server did not start:" >&2; cat "$log" >&2; exit 1; }

# QPS of one closed-loop press run over protocol $1.
qps() {
  taskset -c 1 "$press_bin" --server="$address" --protocol="$1" --concurrency=8 \
    --payload_scale=1 --warmup_s=2 --duration_s="$seconds" --server_vars=false --json \
    2>/dev/null | sed -n 's/.*"achieved_qps":\([0-9.]*\).*/\1/p' | tail -1
}
baidu=() http=()
for r in $(seq "$repeats"); do
  b=$(qps baidu_std)
  h=$(qps http)
  echo "run $r: baidu_std ${b} QPS, http_json ${h} QPS, ratio $(python3 -c "print(f'{$h / $b:.2f}')")"
  baidu+=("$b") http+=("$h")
done
python3 - "${baidu[*]}" "${http[*]}" <<'PY'
import statistics, sys
b = [float(x) for x in sys.argv[1].split()]
h = [float(x) for x in sys.argv[2].split()]
print(f"median: baidu_std {statistics.median(b):.0f} QPS, http_json {statistics.median(h):.0f} QPS, "
      f"ratio {statistics.median(h) / statistics.median(b):.2f}")
PY
