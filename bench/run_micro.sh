#!/usr/bin/env bash
# The message-memory micro-benchmark (docs/bench-micro.md): every strategy x {glibc, tcmalloc,
# jemalloc} on build-fill-destroy and parse-copy-serialize, then callgrind instructions per task
# (glibc) for the issue's targets. Installs dependencies and builds first.
#
#   bench/run_micro.sh [--threads T] [--tasks N] [--rounds R] [--scale S]
#                      [--callgrind-tasks K | --no-callgrind]
# Defaults (2 threads x 40 tasks x 3 rounds, scale 11, 5 callgrind tasks) take ~2-3 min on 2 cores.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
threads=2 tasks=40 rounds=3 scale=11 cg_tasks=5 callgrind=1
while [ $# -gt 0 ]; do
  case "$1" in
    --threads) threads=$2; shift 2 ;;
    --tasks) tasks=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --scale) scale=$2; shift 2 ;;
    --callgrind-tasks) cg_tasks=$2; shift 2 ;;
    --no-callgrind) callgrind=0; shift ;;
    *) echo "run_micro.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done

bash "$root/scripts/install_deps.sh"
JOBS=${JOBS:-2} bash "$root/scripts/build.sh" release memory_micro_bench
bin="$root/build/release/bench/micro/memory_micro_bench"
libdir=/usr/lib/x86_64-linux-gnu
out=$(mktemp -d "${TMPDIR:-/tmp}/run_micro.XXXXXX")
trap 'rm -rf "$out"' EXIT

echo "== machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
echo "== load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
for alloc in glibc tcmalloc jemalloc; do
  case $alloc in
    glibc) preload="" ;;
    tcmalloc) preload="$libdir/libtcmalloc.so.4" ;;
    jemalloc) preload="$libdir/libjemalloc.so.2" ;;
  esac
  if [ -n "$preload" ] && [ ! -f "$preload" ]; then
    echo "run_micro.sh: $preload missing (scripts/install_deps.sh installs it)" >&2; exit 1
  fi
  echo "== $alloc"
  LD_PRELOAD="$preload" "$bin" --threads "$threads" --tasks "$tasks" --rounds "$rounds" \
    --payload_scale "$scale" --allocator "$alloc" | tee "$out/$alloc.txt" | grep -v '^RESULT'
done

if [ "$callgrind" = 1 ]; then
  echo "== callgrind (glibc, 1 thread x $cg_tasks tasks after 2 warm-up tasks, instructions per task)"
  for scenario in build echo; do
    for strategy in heap arena paged reuse; do
      valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$out/cg.$scenario.$strategy" \
        "$bin" --threads 1 --tasks "$cg_tasks" --rounds 1 --payload_scale "$scale" \
        --strategies "$strategy" --scenarios "$scenario" --callgrind >/dev/null 2>"$out/cg.log" ||
        { cat "$out/cg.log" >&2; exit 1; }
      ir=$(awk '/^totals:/ {print $2; exit}' "$out/cg.$scenario.$strategy")
      echo "CALLGRIND scenario=$scenario strategy=$strategy ir_per_task=$((ir / cg_tasks))" >>"$out/callgrind.txt"
    done
  done
fi

python3 - "$out" "$threads" "$tasks" "$scale" <<'PY'
import glob, os, re, sys
out, threads, tasks, scale = sys.argv[1:]
ms = {}
for path in glob.glob(os.path.join(out, "*.txt")):
    for line in open(path):
        m = re.match(r"RESULT scenario=(\S+) allocator=(\S+) strategy=(\S+) ms=(\S+)", line)
        if m:
            ms[(m[1], m[2], m[3])] = float(m[4])
allocs = ["glibc", "tcmalloc", "jemalloc"]
strategies = ["heap", "arena", "paged", "reuse"]
for scenario in ["build-fill-destroy", "parse-copy-serialize"]:
    print(f"\n{scenario}: {threads} threads x {tasks} tasks, payload_scale {scale} "
          "(median ms of interleaved rounds; gain vs heap)")
    print("| strategy | " + " | ".join(allocs) + " |")
    print("|---|" + "---|" * len(allocs))
    for s in strategies:
        cells = []
        for a in allocs:
            v, heap = ms.get((scenario, a, s)), ms.get((scenario, a, "heap"))
            if v is None:
                cells.append("-")
            elif s == "heap" or not heap:
                cells.append(f"{v:.0f} ms")
            else:
                cells.append(f"{v:.0f} ms ({(heap - v) / heap * 100:+.1f}%)")
        print(f"| {s} | " + " | ".join(cells) + " |")
cg = os.path.join(out, "callgrind.txt")
if os.path.exists(cg):
    ir = {}
    for line in open(cg):
        m = re.match(r"CALLGRIND scenario=(\S+) strategy=(\S+) ir_per_task=(\d+)", line)
        ir[(m[1], m[2])] = int(m[3])
    print("\ncallgrind instructions per task (glibc), ratio to heap")
    print("| strategy | build-fill-destroy | parse-copy-serialize |")
    print("|---|---|---|")
    for s in strategies:
        cells = []
        for sc in ["build", "echo"]:
            v, heap = ir.get((sc, s)), ir.get((sc, "heap"))
            cells.append("-" if v is None else f"{v / 1e6:.2f} M ({v / heap:.2f}x)")
        print(f"| {s} | " + " | ".join(cells) + " |")
    def r(sc, s): return ir[(sc, s)] / ir[(sc, "heap")]
    checks = [
        ("echo: arena <= 0.55x heap", r("echo", "arena") <= 0.55, r("echo", "arena")),
        ("echo: reuse <= 0.35x heap", r("echo", "reuse") <= 0.35, r("echo", "reuse")),
        ("echo: paged <= arena", ir[("echo", "paged")] <= ir[("echo", "arena")], r("echo", "paged")),
        ("build: arena beats heap by > 14%", r("build", "arena") < 0.86, r("build", "arena")),
        ("build: paged beats arena", ir[("build", "paged")] < ir[("build", "arena")], r("build", "paged")),
        ("build: reuse beats arena", ir[("build", "reuse")] < ir[("build", "arena")], r("build", "reuse")),
    ]
    print("\ntargets (callgrind instructions):")
    for name, ok, ratio in checks:
        print(f"  {'MET   ' if ok else 'MISSED'} {name}  (x{ratio:.2f} of heap)")
PY
