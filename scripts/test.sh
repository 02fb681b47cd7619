#!/usr/bin/env bash
# The README's test command: installs dependencies, then builds and runs the whole suite twice —
# optimized, and under AddressSanitizer+UBSan — and the concurrency tests under ThreadSanitizer.
#   scripts/test.sh            all three
#   scripts/test.sh release    one flavour (release | asan | tsan)
# ARENARPC_PRUNE_BUILDS=1 removes each flavour's build tree once its tests pass (CI: one tree of
# several GB on the disk at a time instead of three).
# ctest runs twice as many tests at once as there are cores (ARENARPC_TEST_JOBS overrides): many
# end-to-end tests wait on sockets, timers and child processes, and at one test per core the cores
# sit idle about a third of the time. Tests whose measurement moves with what runs beside them run
# alone (RUN_SERIAL).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bash "$root/scripts/install_deps.sh"
flavours=("$@")
[ ${#flavours[@]} -gt 0 ] || flavours=(release asan tsan)
test_jobs=${ARENARPC_TEST_JOBS:-$(( 2 * $(nproc) ))}
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1}
for f in "${flavours[@]}"; do
  echo "=== [$f] build"
  SECONDS=0
  bash "$root/scripts/build.sh" "$f"
  echo "=== [$f] built in $SECONDS s; test"
  SECONDS=0
  label=()
  [ "$f" = tsan ] && label=(-L concurrency)
  (cd "$root/build/$f" && ctest --output-on-failure -j "$test_jobs" "${label[@]}")
  echo "=== [$f] tested in $SECONDS s"
  if [ "${ARENARPC_PRUNE_BUILDS:-0}" = 1 ]; then rm -rf "$root/build/$f"; fi
done
