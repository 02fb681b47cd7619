#!/usr/bin/env bash
# Runs the ported brpc echo example: server on a free port, the client's calls against it, then
# SIGTERM to the server. Usage: run_example.sh SERVER_BINARY CLIENT_BINARY
set -euo pipefail
server_bin=$1 client_bin=$2
out=$(mktemp)
trap 'kill "$server_pid" 2>/dev/null || true; rm -f "$out"' EXIT
"$server_bin" --port=0 >"$out" 2>&1 &
server_pid=$!
port=
for _ in $(seq 1 200); do
  port=$(sed -n 's/^EchoServer is serving on port \([0-9]*\)$/\1/p' "$out")
  [ -n "$port" ] && break
  sleep 0.05
done
[ -n "$port" ] || { echo "server did not start:"; cat "$out"; exit 1; }
"$client_bin" --server="127.0.0.1:$port" --attachment=foo --count=3 --timeout_ms=5000 | tee /dev/stderr |
  grep -q "async response from 127.0.0.1:$port: hello async world (attached=foo)"
kill -TERM "$server_pid"
wait "$server_pid"
grep -q "request\[log_id=3\] from 127.0.0.1:[0-9]* to .*: hello async world (attached=foo)" "$out" ||
  { echo "server output:"; cat "$out"; exit 1; }
echo "brpc_port example: OK"
