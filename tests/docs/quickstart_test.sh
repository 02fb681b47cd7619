#!/usr/bin/env bash
# Runs docs/quickstart.md's steps against the built tree: the echo server called with curl and
# with the press, then the quick start's own service (examples/quickstart/) called by its client
# and with curl. Usage: quickstart_test.sh BUILD_DIR
set -euo pipefail
build=$1
work=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

# Starts "$@" with its output in $work/$name.out and waits for "listening on ...:PORT".
start() {
  local name=$1
  shift
  : >"$work/$name.out"  # exists before the first read below (the background job opens it later)
  "$@" >"$work/$name.out" 2>&1 &
  pids+=($!)
  for _ in $(seq 1 400); do
    port=$(sed -n -e 's/.*listening on [0-9.]*:\([0-9][0-9]*\).*/\1/p' \
                  -e 's/.*listening on port \([0-9][0-9]*\).*/\1/p' "$work/$name.out" | head -1)
    [ -n "$port" ] && return 0
    sleep 0.05
  done
  echo "$name did not start:"; cat "$work/$name.out"; exit 1
}

# 1. The echo server, called with curl and with the press.
start echo "$build/examples/echo_server" --address=127.0.0.1:0 --mode=reuse
echo_port=$port
reply=$(curl -sS -H 'Content-Type: application/json' \
  -d '{"payload":{"result":[{"term":["aGk="]}]}}' \
  "http://127.0.0.1:$echo_port/arenarpc.example.EchoService/Echo")
[ "$reply" = '{"payload":{"result":[{"term":["aGk="]}]}}' ] || { echo "curl echo: $reply"; exit 1; }
"$build/tools/press/arenarpc_press" --server="127.0.0.1:$echo_port" --concurrency=2 \
  --duration_s=1 --warmup_s=0 --live=false --json >"$work/press.json"
python3 - "$work/press.json" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
assert report["calls_ok"] > 0 and report["calls_failed"] == 0, report
PY

# 2. The quick start's own service and client.
start greeter "$build/examples/quickstart/greeter_server" 127.0.0.1:0 reuse
greeter_port=$port
"$build/examples/quickstart/greeter_client" "127.0.0.1:$greeter_port" Ada 3 | tee "$work/client.out"
grep -q '^Hello, Ada! (call 3, ' "$work/client.out" || { echo "client output unexpected"; exit 1; }
reply=$(curl -sS -d '{"name":"Grace"}' "http://127.0.0.1:$greeter_port/quickstart.Greeter/SayHello")
[ "$reply" = '{"greeting":"Hello, Grace!","calls":"4"}' ] || { echo "curl greeter: $reply"; exit 1; }
# An empty name fails the call: the client says why and exits 1.
if "$build/examples/quickstart/greeter_client" "127.0.0.1:$greeter_port" "" 2>"$work/err.out"; then
  echo "an empty name succeeded"; exit 1
fi
grep -q "name is empty" "$work/err.out" || { cat "$work/err.out"; exit 1; }
echo "quickstart: OK"
