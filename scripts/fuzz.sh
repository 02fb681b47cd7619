#!/usr/bin/env bash
# Builds the protocol layer's (baidu_std frames, HTTP requests, HTTP/2 + gRPC, grpc-web bodies) and the reuse strategy's request-shaping libFuzzer targets with clang (ASan + UBSan) and runs each for a
# bounded time, starting from a seed corpus the build generates (the spec's example frames and
# payloads in every codec) and the committed regression corpus (fuzz/corpus/<target>/). Fails on any crash, leak, timeout, OOM or sanitizer report.
#   scripts/fuzz.sh [SECONDS]   total fuzzing time, split between the targets (default 60); JOBS
#                               targets run at once (default 2)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
total=${1:-60}
if ! [[ "$total" =~ ^[0-9]+$ ]] || [ "$total" -lt 2 ]; then
  echo "fuzz.sh: SECONDS must be an integer >= 2, got '$total'" >&2
  exit 2
fi
targets=(fuzz_frame_decoder fuzz_h2_client_session fuzz_h2_session fuzz_http_request_decoder fuzz_payload
         fuzz_shape fuzz_web_wire)
per_target=$(( total / ${#targets[@]} ))
dir="$root/build/fuzz"
jobs=${JOBS:-2}

cxx=$(command -v clang++ || command -v clang++-14 || true)
if [ -z "$cxx" ]; then
  echo "fuzz.sh: clang++ not found (scripts/install_deps.sh installs clang and libclang-rt-14-dev)" >&2
  exit 2
fi
gen=()
if command -v ninja >/dev/null 2>&1; then gen=(-G Ninja); fi
if [ ! -f "$dir/CMakeCache.txt" ]; then
  cmake -S "$root/fuzz" -B "$dir" "${gen[@]}" -DCMAKE_CXX_COMPILER="$cxx" \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
fi
cmake --build "$dir" -j "$jobs" --target "${targets[@]}" fuzz_make_seeds

corpus="$dir/corpus"
"$dir/fuzz_make_seeds" "$corpus/fuzz_frame_decoder" "$corpus/fuzz_payload" "$corpus/fuzz_shape"
mkdir -p "$corpus/fuzz_http_request_decoder"
cp "$root"/fuzz/http_seeds/* "$corpus/fuzz_http_request_decoder/"
# The committed regression corpus (replayed by ctest: fuzz_<target>_corpus) seeds every run too.
for t in "${targets[@]}"; do
  mkdir -p "$corpus/$t"
  cp "$root/fuzz/corpus/$t"/* "$corpus/$t/"
done
mkdir -p "$dir/artifacts"

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:allocator_may_return_null=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
# The targets run $jobs at a time (JOBS, default 2), each for its share of SECONDS: the wall time is
# about SECONDS / JOBS.
log_of() { echo "$dir/$1.log"; }
run_one() {
  local t=$1 log
  log=$(log_of "$t")
  "$dir/$t" "$corpus/$t" -max_total_time="$per_target" -timeout=10 -rss_limit_mb=2048 \
    -max_len=65536 -print_final_stats=1 -artifact_prefix="$dir/artifacts/$t-" >"$log" 2>&1
}
declare -A pid_of
for t in "${targets[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
  echo "=== $t for ${per_target}s"
  run_one "$t" &
  pid_of[$t]=$!
done
status=0
for t in "${targets[@]}"; do
  log=$(log_of "$t")
  if ! wait "${pid_of[$t]}"; then
    echo "fuzz.sh: $t FAILED; last lines of $log:" >&2
    tail -n 40 "$log" >&2
    status=1
  else
    echo "=== $t"
    grep -E "^stat::(number_of_executed_units|peak_rss_mb)|^Done" "$log" || true
  fi
done
exit $status
