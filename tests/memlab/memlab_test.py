#!/usr/bin/env python3
"""bench/memlab against real servers: captures a small dump (ARENARPC_CAPTURE), runs memlab on it
with short runs, and checks its JSON.

  memlab_test.py --case echo_identical|reuse_sensitive_handler|nondeterministic_handler
                 --root SRC --press PRESS --echo_server BIN --test_server BIN

echo_identical            the echo server: every strategy reported, every reply identical to
                          heap's, a recommendation line for the method
reuse_sensitive_handler   memlab_test_server --handler=capacity: the replies differ under reuse
                          only; heap, arena and paged identical; reuse is not recommended
nondeterministic_handler  memlab_test_server --handler=counter: reported as a non-deterministic
                          handler, not as a difference of any strategy
"""
import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile

SEARCH = "arenarpc.example.catalog.CatalogService.Search"
ECHO = "arenarpc.example.EchoService.Echo"
LISTENING = re.compile(r"listening on 127\.0\.0\.1:(\d+)")

failures = []


def check(condition, what):
    if not condition:
        failures.append(what)


def capture(a, server_argv, press_args, directory):
    """Runs the server with ARENARPC_CAPTURE into `directory` and presses it for a second."""
    env = dict(os.environ, ARENARPC_CAPTURE=f"{directory},samples_per_second=5000")
    env.pop("ARENARPC_MEMORY_MODE", None)
    server = subprocess.Popen(server_argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, env=env)
    try:
        line = server.stdout.readline()
        m = LISTENING.search(line)
        if not m:
            sys.exit(f"capture: the server did not start: {line} {server.stderr.read()}")
        out = subprocess.run([a.press, f"--server=127.0.0.1:{m.group(1)}", "--qps=300",
                              "--duration_s=1", "--warmup_s=0", "--live=false"] + press_args,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             timeout=30)
        if out.returncode != 0:
            sys.exit(f"capture: arenarpc_press failed: {out.stderr[-500:]}")
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=15)
    files = [f for f in os.listdir(directory) if f.startswith("requests.")]
    if not files:
        sys.exit(f"capture: no dump file in {directory}")


def memlab(a, server_command, strategies, work):
    out_json = os.path.join(work, "memlab.json")
    argv = [sys.executable, os.path.join(a.root, "bench", "memlab"),
            "--dump", os.path.join(work, "dump"), "--server", server_command,
            "--strategies", strategies, "--rounds", "1", "--duration_s", "0.5",
            "--warmup_s", "0.2", "--concurrency", "4", "--qps", "200",
            "--auto_settle_limit_s", "30", "--press", a.press, "--json", out_json]
    out = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         timeout=80)
    print(out.stdout)
    if out.returncode != 0:
        sys.exit(f"memlab failed ({out.returncode}): {out.stderr[-1500:]}")
    with open(out_json) as f:
        return json.load(f), out.stdout


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--case", required=True,
                   choices=["echo_identical", "reuse_sensitive_handler", "nondeterministic_handler"])
    p.add_argument("--root", required=True)
    p.add_argument("--press", required=True)
    p.add_argument("--echo_server", required=True)
    p.add_argument("--test_server", required=True)
    a = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="memlab_test.") as work:
        dump = os.path.join(work, "dump")
        if a.case == "echo_identical":
            capture(a, [a.echo_server, "--address=127.0.0.1:0", "--threads=1"],
                    ["--payload_scale=1"], dump)
            result, text = memlab(a, f"{a.echo_server} --address=127.0.0.1:{{port}} --threads=1",
                                  "heap,arena,paged,reuse,auto", work)
            method = result["methods"].get(ECHO)
            check(method is not None, f"no result for {ECHO}: {list(result['methods'])}")
            if method:
                per = method["strategies"]
                check(sorted(per) == sorted(["heap", "arena", "paged", "reuse", "auto"]),
                      f"strategies reported: {sorted(per)}")
                for name, s in per.items():
                    check(s["replies"] == "identical", f"{name}: replies {s['replies']}")
                    check(s["calls_checked"] > 0, f"{name}: no call checked")
                    check(s["failed"] == 0, f"{name}: {s['failed']} failed calls")
                    check(s["cpu_us_per_call_max"]["median"] > 0, f"{name}: no CPU per call")
                check(not method["nondeterministic"], "echo reported non-deterministic")
                auto = per.get("auto", {}).get("auto")
                check(auto is not None and auto["chosen"] in ("heap", "arena", "paged", "reuse"),
                      f"auto's choice missing: {auto}")
            # Bad input: a command line without {port}, a dump that is not there.
            for args, expected in (
                    (["--dump", dump, "--server", a.echo_server], "must hold {port}"),
                    (["--dump", os.path.join(work, "missing"), "--server", "x {port}"],
                     "is neither a file nor a directory")):
                bad = subprocess.run([sys.executable, os.path.join(a.root, "bench", "memlab"),
                                      "--press", a.press] + args, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, timeout=30)
                check(bad.returncode != 0 and expected in bad.stderr,
                      f"memlab {args}: exit {bad.returncode}, {bad.stderr.strip()[-300:]}")
            check(re.search(r'options\.method_memory_mode\["' + re.escape(ECHO) +
                            r'"\] = "(heap|arena|paged|reuse)";', text) is not None,
                  "no recommendation line for the echo method")
        else:
            handler = "capacity" if a.case == "reuse_sensitive_handler" else "counter"
            server = f"{a.test_server} --port={{port}} --handler={handler}"
            requests = os.path.join(a.root, "examples", "catalog", "search_requests.jsonl")
            capture(a, [a.test_server, "--port=0", f"--handler={handler}"],
                    [f"--proto={os.path.join(a.root, 'examples', 'catalog', 'catalog.proto')}",
                     f"--method={SEARCH}", f"--input={requests}"], dump)
            result, text = memlab(a, server, "heap,arena,paged,reuse", work)
            method = result["methods"].get(SEARCH)
            check(method is not None, f"no result for {SEARCH}: {list(result['methods'])}")
            if method:
                per = method["strategies"]
                if handler == "capacity":
                    check(not method["nondeterministic"], "reported non-deterministic")
                    for name in ("heap", "arena", "paged"):
                        check(per[name]["replies"] == "identical",
                              f"{name}: replies {per[name]['replies']}")
                    check(per["reuse"]["replies"].startswith("DIFFER"),
                          f"reuse: replies {per['reuse']['replies']} (expected DIFFER)")
                    check(method["recommendation"]["strategy"] != "reuse",
                          f"reuse recommended: {method['recommendation']}")
                    check("not reuse" in method["recommendation"]["why"],
                          f"the recommendation does not warn about reuse: "
                          f"{method['recommendation']}")
                else:
                    check(method["nondeterministic"], "not reported non-deterministic")
                    check(method["heap_self_differences"] > 0,
                          "heap's reference run saw no difference")
                    for name, s in per.items():
                        check(s["replies"] == "non-deterministic handler",
                              f"{name}: replies {s['replies']}")
                    check("non-deterministic handler" in text, "the table does not say so")
    if failures:
        for f in failures:
            print(f"FAIL: {f}")
        return 1
    print(f"ok: {a.case}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
