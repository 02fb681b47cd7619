#!/usr/bin/env bash
# The message-memory micro-benchmark (docs/bench-micro.md): every strategy x {glibc, tcmalloc,
# jemalloc} (reuse+keep: reuse keeping responses' sub-messages) on build-fill-destroy and
# parse-copy-serialize, then callgrind instructions per task
# (glibc) for the issue's targets. Installs dependencies and builds first.
#
#   bench/run_micro.sh [--threads T] [--tasks N] [--rounds R] [--scale S]
#                      [--callgrind-tasks K | --no-callgrind] [--callgrind-allocators "glibc tcmalloc jemalloc"]
# Defaults (2 threads x 40 tasks x 3 rounds, scale 11, 5 callgrind tasks, callgrind on glibc only)
# take ~2-3 min on 2 cores.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
threads=2 tasks=40 rounds=3 scale=11 cg_tasks=5 callgrind=1 cg_allocs=glibc
while [ $# -gt 0 ]; do
  case "$1" in
    --threads) threads=$2; shift 2 ;;
    --tasks) tasks=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --scale) scale=$2; shift 2 ;;
    --callgrind-tasks) cg_tasks=$2; shift 2 ;;
    --no-callgrind) callgrind=0; shift ;;
    --callgrind-allocators) cg_allocs=$2; shift 2 ;;
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
preload_for() {
  case $1 in
    glibc) echo "" ;;
    tcmalloc) echo "$libdir/libtcmalloc.so.4" ;;
    jemalloc) echo "$libdir/libjemalloc.so.2" ;;
    *) echo "run_micro.sh: unknown allocator '$1'" >&2; exit 2 ;;
  esac
}
for alloc in glibc tcmalloc jemalloc; do
  preload=$(preload_for "$alloc")
  if [ -n "$preload" ] && [ ! -f "$preload" ]; then
    echo "run_micro.sh: $preload missing (scripts/install_deps.sh installs it)" >&2; exit 1
  fi
  echo "== $alloc"
  LD_PRELOAD="$preload" "$bin" --threads "$threads" --tasks "$tasks" --rounds "$rounds" \
    --payload_scale "$scale" --allocator "$alloc" --strategies heap,arena,paged,reuse,reuse+keep | tee "$out/$alloc.txt" | grep -v '^RESULT'
done

if [ "$callgrind" = 1 ]; then
  for alloc in $cg_allocs; do
    preload=$(preload_for "$alloc")
    echo "== callgrind ($alloc, 1 thread x $cg_tasks tasks after 2 warm-up tasks, instructions per task)"
    for scenario in build echo; do
      for strategy in heap arena paged reuse reuse+keep; do
        cg_out="$out/cg.$alloc.$scenario.$strategy"
        LD_PRELOAD="$preload" valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$cg_out" \
          "$bin" --threads 1 --tasks "$cg_tasks" --rounds 1 --payload_scale "$scale" \
          --strategies "$strategy" --scenarios "$scenario" --callgrind >/dev/null 2>"$out/cg.log" ||
          { cat "$out/cg.log" >&2; exit 1; }
        ir=$(awk '/^totals:/ {print $2; exit}' "$cg_out")
        echo "CALLGRIND allocator=$alloc scenario=$scenario strategy=$strategy ir_per_task=$((ir / cg_tasks))" \
          >>"$out/callgrind.txt"
      done
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
strategies = ["heap", "arena", "paged", "reuse", "reuse+keep"]
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
        m = re.match(r"CALLGRIND allocator=(\S+) scenario=(\S+) strategy=(\S+) ir_per_task=(\d+)", line)
        ir[(m[1], m[2], m[3])] = int(m[4])
    cg_allocs = [a for a in allocs if any(k[0] == a for k in ir)]
    print("\ncallgrind instructions per task, ratio to heap")
    print("| strategy | " + " | ".join(f"{sc} ({a})" for a in cg_allocs for sc in ["build", "echo"]) + " |")
    print("|---|" + "---|" * (2 * len(cg_allocs)))
    for s in strategies:
        cells = []
        for a in cg_allocs:
            for sc in ["build", "echo"]:
                v, heap = ir.get((a, sc, s)), ir.get((a, sc, "heap"))
                cells.append("-" if v is None or not heap else f"{v / 1e6:.2f} M ({v / heap:.2f}x)")
        print(f"| {s} | " + " | ".join(cells) + " |")
    print("\ntargets (callgrind instructions; echo targets are for glibc):")
    def r(a, sc, s): return ir[(a, sc, s)] / ir[(a, sc, "heap")]
    checks = []
    if "glibc" in cg_allocs:
        checks += [
            ("echo/glibc: arena <= 0.55x heap", r("glibc", "echo", "arena") <= 0.55, r("glibc", "echo", "arena")),
            ("echo/glibc: reuse+keep <= 0.35x heap", r("glibc", "echo", "reuse+keep") <= 0.35,
             r("glibc", "echo", "reuse+keep")),
            ("echo/glibc: paged <= arena", r("glibc", "echo", "paged") <= r("glibc", "echo", "arena"),
             r("glibc", "echo", "paged")),
        ]
    for a in cg_allocs:
        checks += [
            (f"build/{a}: arena beats heap by > 14%", r(a, "build", "arena") < 0.86, r(a, "build", "arena")),
            (f"build/{a}: paged beats arena", r(a, "build", "paged") < r(a, "build", "arena"), r(a, "build", "paged")),
            (f"build/{a}: reuse beats arena", r(a, "build", "reuse") < r(a, "build", "arena"), r(a, "build", "reuse")),
        ]
    for name, ok, ratio in checks:
        print(f"  {'MET   ' if ok else 'MISSED'} {name}  (x{ratio:.2f} of heap)")
PY
