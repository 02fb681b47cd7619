#!/usr/bin/env python3
"""Checks that the libraries built from src/ depend only on the libraries they declare.

  check_layers.py SRC_CMAKELISTS LIB_DIR [--without LIB:DEP]

Reads each arenarpc_layer(<name> ... LINK ...) of src/CMakeLists.txt, takes the arenarpc_*
libraries it links and what they link in turn, and fails if a library built in LIB_DIR uses a
symbol that only a library outside that closure defines: a dependency the build does not declare,
which is how a cycle between folders comes back unnoticed (static linking often hides it).
--without LIB:DEP checks as if LIB did not link DEP (the checker's own test: it must then fail).
"""
import os
import re
import subprocess
import sys


def declared_links(cmakelists):
    """{library: the arenarpc_* targets it links}, and the names of the built libraries."""
    text = open(cmakelists).read()
    links = {}
    for m in re.finditer(r"arenarpc_layer\((\w+)(.*?)\)\s*$", text, re.S | re.M):
        name, body = m.group(1), m.group(2)
        link = body.split("LINK", 1)[1] if "LINK" in body else ""
        links[name] = set(re.findall(r"\b(arenarpc_\w+)\b", link))
    built = set(links)
    # Interface libraries (arenarpc_runtime) stand for what they link.
    for m in re.finditer(r"target_link_libraries\((arenarpc_\w+) INTERFACE(.*?)\)", text, re.S):
        links.setdefault(m.group(1), set()).update(re.findall(r"\b(arenarpc_\w+)\b", m.group(2)))
    return links, built


def symbols(path, defined):
    args = ["nm", "-C", "--defined-only" if defined else "-u"]
    if path.endswith(".so") or ".so." in path:
        args.append("-D")
    out = subprocess.run(args + [path], capture_output=True, text=True, check=True).stdout
    result = set()
    for line in out.splitlines():
        parts = line.split(None, 2) if defined else line.split(None, 1)
        if defined and len(parts) == 3 and parts[1] in "TWVDBRtwvdbr" and parts[1].isupper():
            result.add(parts[2])
        elif not defined and len(parts) == 2 and parts[0] == "U":
            result.add(parts[1])
    return result


def library_file(lib_dir, name):
    for suffix in (".a", ".so"):
        path = os.path.join(lib_dir, "lib" + name + suffix)
        if os.path.exists(path):
            return path
    return None


def main(cmakelists, lib_dir, without=None):
    links, built = declared_links(cmakelists)
    if without:
        lib, dep = without.split(":")
        links[lib].discard(dep)
    files = {name: library_file(lib_dir, name) for name in built}
    files = {name: path for name, path in files.items() if path}
    if len(files) < 8:
        print(f"only {len(files)} libraries found in {lib_dir}: build first")
        return 1
    defined = {name: symbols(path, True) for name, path in files.items()}

    def closure(name, seen):
        for dep in links.get(name, ()):
            if dep not in seen:
                seen.add(dep)
                closure(dep, seen)
        return seen

    failures = 0
    for name, path in sorted(files.items()):
        allowed = closure(name, {name})
        missing = symbols(path, False) - defined[name]
        for other in sorted(set(files) - allowed):
            used = sorted(missing & defined[other])
            if used:
                failures += 1
                print(f"{name} uses {len(used)} symbol(s) of {other}, which it does not link: "
                      + "; ".join(used[:3]))
    print(f"{len(files)} libraries checked, {failures} undeclared dependencies")
    return 1 if failures else 0


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[3] == "--without":
        sys.exit(main(sys.argv[1], sys.argv[2], sys.argv[4]))
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1], sys.argv[2]))
