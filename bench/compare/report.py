"""Table and chart of a bench/compare_modes result (the dict it writes as JSON).

Also usable on a saved result:  python3 bench/compare/report.py RESULT.json [CHART.png]
"""

import json
import os
import statistics
import shutil
import subprocess
import sys
import tempfile

CHART_SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "chart.gp")


def _ratio(value, base):
    return f"{value / base:.2f}x" if base else "-"


def _per_core(run):
    us = run.get("cpu_us_per_call", 0)
    return 1e6 / us if us else 0


def _workload(result):
    mix = result.get("payload_mix")
    return f"payload_mix {mix}" if mix else f"payload_scale {result['payload_scale']}"


def quartiles(values):
    """(first quartile, median, third quartile) of a list, or None for fewer than 2 values."""
    if len(values) < 2:
        return None
    q = statistics.quantiles(values, n=4, method="inclusive")
    return q[0], q[1], q[2]


def auto_versus_best(result):
    """auto against the fixed mode (heap, arena, paged, reuse: what it chooses from) with the
    lowest median CPU per call: ratios of the medians, each repeat's ratio (repeats interleave),
    and how far the best mode's own repeats spread ((max - min) / median). None without auto."""
    med = result["medians"]
    fixed = [m for m in result["modes"] if m in ("heap", "arena", "paged", "reuse", "default")]
    if "auto" not in med or not fixed:
        return None
    best = min(fixed, key=lambda m: med[m]["cpu_us_per_call"])
    own = [r["cpu_us_per_call"] for r in result["runs"][best]]
    ratio = lambda k: med["auto"][k] / med[best][k] if med[best][k] else 0
    out = {
        "best": best, "cpu": ratio("cpu_us_per_call"), "p99": ratio("p99"),
        "rss": ratio("rss_peak"),
        "per_repeat": [a["cpu_us_per_call"] / b["cpu_us_per_call"]
                       for a, b in zip(result["runs"]["auto"], result["runs"][best])
                       if b["cpu_us_per_call"]],
        "best_spread": (max(own) - min(own)) / med[best]["cpu_us_per_call"]
        if med[best]["cpu_us_per_call"] else 0,
        "versus_served": _versus_served(result, fixed),
    }
    # Repeat i of every mode ran within one turn of the modes: the ratio of the pair cancels what
    # the machine did over minutes, and its quartiles say how well the pairs agree.
    out["paired"] = quartiles(out["per_repeat"])
    out["paired_served"] = quartiles([r for _, r in out["versus_served"]])
    return out


def auto_versus_best_max(result):
    """At maximum throughput: auto's CPU per call and QPS against the fixed mode of the lowest
    median CPU per call in the closed-loop runs, with each repeat's CPU ratio. None without
    auto's and a fixed mode's max-throughput runs."""
    runs = result.get("max_runs", {})
    med = result.get("max_throughput", {})
    fixed = [m for m in result["modes"] if m in ("heap", "arena", "paged", "reuse") and m in med]
    if "auto" not in med or not fixed:
        return None
    best = min(fixed, key=lambda m: med[m]["cpu_us_per_call"] or float("inf"))
    if not med[best]["cpu_us_per_call"] or not med[best]["achieved_qps"]:
        return None
    own = [r["cpu_us_per_call"] for r in runs.get(best, [])]
    return {
        "best": best,
        "cpu": med["auto"]["cpu_us_per_call"] / med[best]["cpu_us_per_call"],
        "qps": med["auto"]["achieved_qps"] / med[best]["achieved_qps"],
        "per_repeat": [a["cpu_us_per_call"] / b["cpu_us_per_call"]
                       for a, b in zip(runs.get("auto", []), runs.get(best, []))
                       if b["cpu_us_per_call"]],
        "best_spread": (max(own) - min(own)) / med[best]["cpu_us_per_call"] if own else 0,
        "served": [",".join(sorted(set(r.get("auto_chosen", {}).values())))
                   for r in runs.get("auto", [])],
    }


def _versus_served(result, fixed):
    """Per repeat, (the fixed mode auto served its window with, auto's CPU per call over that
    mode's in the same repeat), where auto served every method with one mode that also ran:
    how close auto comes to its own pick, apart from whether the pick was the best."""
    out = []
    for i, run in enumerate(result["runs"]["auto"]):
        served = set(run.get("auto_chosen", {}).values())
        mode = served.pop() if len(served) == 1 else None
        if mode in fixed and i < len(result["runs"][mode]):
            other = result["runs"][mode][i]["cpu_us_per_call"]
            if other:
                out.append((mode, run["cpu_us_per_call"] / other))
    return out


def table(result):
    med, base = result["medians"], result["baseline"]
    b = med[base]
    maxq = result.get("max_throughput", {})
    lines = [
        f"{result['server']} echo server, {_workload(result)}, "
        f"{result['qps']:.0f} QPS open loop, {result['repeats']} interleaved repeats x "
        f"{result['duration_s']:g} s (after {result['warmup_s']:g} s warm-up"
        f"{'; auto: until its start-up trials ended' if any(m.startswith('auto') for m in result['modes']) else ''}"
        f"{'; one server per mode for every repeat' if result.get('keep_servers') else ''}"
        f"); server pinned to "
        f"core {result['server_core']} ({result['server_threads']} I/O thread), press on core "
        f"{result['client_core']}; server malloc {result.get('server_malloc', 'glibc')}; "
        f"medians over repeats, ratios to {base}",
        "",
        "| mode | latency [p80, p90, p99, p99.9] us | CPU cores | CPU us/call | RSS peak MB "
        "| p99 ratio | CPU ratio | RSS ratio | max QPS (1 core) | max QPS ratio "
        "| QPS per core-second | ratio |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for mode in result["modes"]:
        m = med[mode]
        lat = ", ".join(f"{m[k]:.0f}" for k in ("p80", "p90", "p99", "p99.9"))
        mq = maxq.get(mode, {}).get("achieved_qps")
        bq = maxq.get(base, {}).get("achieved_qps")
        # Capacity per core-second of server CPU in the closed-loop run (1e6 / CPU us per call):
        # unlike the raw QPS it does not drop when other processes steal the server's core.
        mc = _per_core(maxq.get(mode, {}))
        bc = _per_core(maxq.get(base, {}))
        lines.append(
            f"| {mode} | [{lat}] | {m['cpu_cores']:.3f} | {m['cpu_us_per_call']:.0f} | "
            f"{m['rss_peak'] / 1e6:.1f} | {_ratio(m['p99'], b['p99'])} | "
            f"{_ratio(m['cpu_us_per_call'], b['cpu_us_per_call'])} | "
            f"{_ratio(m['rss_peak'], b['rss_peak'])} | "
            f"{f'{mq:.0f}' if mq else '-'} | {_ratio(mq, bq) if mq and bq else '-'} | "
            f"{f'{mc:.0f}' if mc else '-'} | {_ratio(mc, bc) if mc and bc else '-'} |")
    # A median of noisy repeats hides how far single repeats stray: show each repeat's ratio (repeats
    # are interleaved, so repeat i of a mode ran next to repeat i of the baseline).
    base_runs = result["runs"][base]
    spread = []
    for mode in result["modes"]:
        if mode == base:
            continue
        ratios = [f"{r['cpu_us_per_call'] / b['cpu_us_per_call']:.2f}"
                  for r, b in zip(result["runs"][mode], base_runs) if b["cpu_us_per_call"]]
        if len(ratios) > 1:
            spread.append(f"{mode} {' '.join(ratios)}")
    if spread:
        lines.append("")
        lines.append(f"CPU ratio to {base} per repeat, in run order: " + "; ".join(spread))
    versus = auto_versus_best(result)
    if versus:
        lines.append("")
        lines.append(
            f"auto / best fixed mode ({versus['best']}): CPU per call {versus['cpu']:.2f} (per "
            f"repeat {' '.join(f'{r:.2f}' for r in versus['per_repeat'])}; {versus['best']}'s own "
            f"repeats spread {versus['best_spread']:.0%} of its median), p99 {versus['p99']:.2f}, "
            f"RSS peak {versus['rss']:.2f}")
        if versus["versus_served"]:
            lines.append(
                "auto / the mode it served each window with (same repeat): " +
                " ".join(f"{r:.2f} ({mode})" for mode, r in versus["versus_served"]))
        for what, q in (("best fixed mode", versus["paired"]),
                        ("the mode it served with", versus["paired_served"])):
            if q:
                lines.append(f"auto / {what}, median of the per-repeat ratios {q[1]:.2f} "
                             f"(quartiles {q[0]:.2f} {q[2]:.2f})")
    at_max = auto_versus_best_max(result)
    if at_max:
        lines.append(
            f"at max throughput, auto / best fixed mode ({at_max['best']}): CPU per call "
            f"{at_max['cpu']:.2f} (per repeat {' '.join(f'{r:.2f}' for r in at_max['per_repeat'])}"
            f"; {at_max['best']}'s own repeats spread {at_max['best_spread']:.0%}), QPS "
            f"{at_max['qps']:.2f}; auto served with {' '.join(at_max['served']) or '?'}")
    # --before_build: this build's CPU per call over the earlier build's, mode by mode (repeat i of
    # "mode" ran right after repeat i of "mode@before").
    before_after = []
    for mode in result["modes"]:
        if mode.endswith("@before") or f"{mode}@before" not in med:
            continue
        earlier = med[f"{mode}@before"]["cpu_us_per_call"]
        ratios = [f"{r['cpu_us_per_call'] / e['cpu_us_per_call']:.3f}"
                  for r, e in zip(result["runs"][mode], result["runs"][f"{mode}@before"])
                  if e["cpu_us_per_call"]]
        before_after.append(f"| {mode} | {earlier:.0f} | {med[mode]['cpu_us_per_call']:.0f} | "
                            f"{_ratio(med[mode]['cpu_us_per_call'], earlier)} | {' '.join(ratios)} |")
    if before_after:
        lines += ["", "| mode | CPU us/call before | after | after/before (medians) | per repeat |",
                  "|---|---|---|---|---|"] + before_after
    failed = {mode: sum(r["calls_failed"] for r in result["runs"][mode]) for mode in result["modes"]}
    if any(failed.values()):
        lines.append("")
        lines.append("errors during the fixed-QPS runs: " +
                     ", ".join(f"{mode} {n}" for mode, n in failed.items() if n))
    if maxq:
        got = min(run.get("cpu_cores", 0) for run in maxq.values())
        if got < 0.8:
            lines.append("")
            lines.append(f"warning: in the closed-loop runs the server used as little as {got:.2f} of "
                         "its pinned core: something else ran on it (or the server waits on "
                         "something else), so the max QPS column understates capacity; the "
                         "per-core-second column does not depend on it")
    load = result.get("machine", {}).get("loadavg_before")
    if load and load > 1.5:
        lines.append("")
        lines.append(f"warning: load average {load:.2f} on {result['machine'].get('cpus')} CPUs "
                     "before the run: the machine was busy, expect noisy figures")
    lag = max(med[mode]["send_lag_p99"] for mode in result["modes"])
    client = max(med[mode]["client_cores"] for mode in result["modes"])
    lines.append("")
    lines.append(f"load generator: send lag p99 <= {lag:.0f} us, press CPU <= {client:.2f} cores "
                 "(well below 1: the generator did not limit the load)"
                 if client < 0.8 else
                 f"load generator: send lag p99 <= {lag:.0f} us, press CPU up to {client:.2f} "
                 "cores: the generator may be near its limit")
    return "\n".join(lines)


def chart(result, png_path):
    """Draws the PNG with gnuplot; returns False (and says why) when it cannot."""
    if not shutil.which("gnuplot"):
        print("report: gnuplot not installed, no chart", file=sys.stderr)
        return False
    med = result["medians"]
    maxq = result.get("max_throughput", {})
    with tempfile.NamedTemporaryFile("w", suffix=".dat", delete=False) as data:
        data.write("mode p80 p90 p99 p999 cpu_us cpu_cores rss_mb max_qps\n")
        for mode in result["modes"]:
            m = med[mode]
            data.write(f"{mode} {m['p80']} {m['p90']} {m['p99']} {m['p99.9']} "
                       f"{m['cpu_us_per_call']:.1f} {m['cpu_cores']:.4f} {m['rss_peak'] / 1e6:.2f} "
                       f"{maxq.get(mode, {}).get('achieved_qps', 0):.1f}\n")
    title = (f"{result['server']} echo, {_workload(result)}, "
             f"{result['qps']:.0f} QPS, medians of {result['repeats']} ({result['utc']})")
    try:
        out = subprocess.run(["gnuplot", "-e", f"datafile='{data.name}'; outfile='{png_path}'; "
                              f"plottitle='{title}'", CHART_SCRIPT],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    finally:
        os.unlink(data.name)
    if out.returncode != 0 or not os.path.exists(png_path):
        print(f"report: gnuplot failed: {out.stderr.strip()}", file=sys.stderr)
        return False
    return True


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    with open(sys.argv[1]) as f:
        saved = json.load(f)
    print(table(saved))
    if len(sys.argv) > 2:
        sys.exit(0 if chart(saved, sys.argv[2]) else 1)
