#!/usr/bin/env python3
"""Shows that check_docs.py fails when a doc breaks: for each kind of breakage (a flag renamed, an
option renamed, a link or anchor broken, a link leaving the repository, a program block that does
not compile, a shown file that differs), the check concerned passes on a copy of the docs and
fails, naming what broke, once the copy has that one change. (docs_check runs every check on the
docs as they are.)

  check_docs_test.py --root SRC --build BUILD
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def copy_tree(root, into):
    """README.md and docs/ copied (to be edited); everything else linked."""
    for name in os.listdir(root):
        if name in (".git", "build"):
            continue
        source = os.path.join(root, name)
        if name in ("README.md", "docs"):
            (shutil.copytree if os.path.isdir(source) else shutil.copy)(source,
                                                                        os.path.join(into, name))
        else:
            os.symlink(source, os.path.join(into, name))


def run_checker(root, build, only, rel):
    run = subprocess.run([sys.executable, os.path.join(HERE, "check_docs.py"), "--root", root,
                          "--build", build, "--only", only, os.path.join(root, rel)],
                         capture_output=True, text=True)
    return run.returncode, run.stdout + run.stderr


def edit(path, old, new, pattern=False):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    changed = re.sub(old, new, text, count=1) if pattern else text.replace(old, new, 1)
    if changed == text:
        raise SystemExit(f"check_docs_test: cannot break {path}: {old!r} not found")
    with open(path, "w", encoding="utf-8") as f:
        f.write(changed)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--root", required=True)
    parser.add_argument("--build", required=True)
    args = parser.parse_args()
    root, build = os.path.abspath(args.root), os.path.abspath(args.build)

    # (what, check, file, old, new, is regex, text the failure must contain)
    breakages = [
        ("flag renamed in a command", "flags", "docs/press.md", "--concurrency", "--concurrenci", False,
         "arenarpc_press --help does not list --concurrenci"),
        ("flag renamed in prose", "flags", "docs/press.md", "`--max_inflight`", "`--max_in_flight`", False,
         "--max_in_flight is listed by none"),
        ("option renamed in a table", "options", "docs/server.md", "| `max_concurrency` |",
         "| `max_concurency` |", False, "option max_concurency: no *Options struct"),
        ("link to a missing file", "links", "README.md", "](docs/memory.md", "](docs/memroy.md", False,
         "link to a missing file: docs/memroy.md"),
        ("anchor renamed", "links", "README.md", r"\]\(docs/([a-z-]+)\.md\)", r"](docs/\1.md#no-such-heading)",
         True, "no heading #no-such-heading"),
        ("link outside the repository", "links", "docs/memory.md", "\n", "\nSee [x](https://example.com).\n",
         False, "link outside the repository: https://example.com"),
        ("program block that does not compile", "programs", "docs/memory.md", "\n",
         "\n```cpp program\nint main() { return undefined_name; }\n```\n", False,
         "program block does not compile"),
        ("a shown file that differs from the repository's", "shown", "docs/quickstart.md",
         "Hello, ", "Hi, ", False, "block differs from examples/quickstart/greeter_server.cc"),
    ]
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        for what, only, rel, old, new, pattern, expected in breakages:
            copy = os.path.join(tmp, re.sub(r"\W+", "_", what))
            os.mkdir(copy)
            copy_tree(root, copy)
            code, out = run_checker(copy, build, only, rel)
            if code != 0:
                print(f"FAIL: {what}: check {only} fails on {rel} before the change:\n{out}")
                failures += 1
                continue
            edit(os.path.join(copy, rel), old, new, pattern)
            code, out = run_checker(copy, build, only, rel)
            if code == 1 and expected in out:
                print(f"ok: {what} fails: " +
                      next(line for line in out.splitlines() if expected in line))
            else:
                print(f"FAIL: {what} ({rel}) was not caught (exit {code}; "
                      f"expected {expected!r}):\n{out}")
                failures += 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
