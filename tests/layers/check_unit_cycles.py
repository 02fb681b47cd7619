#!/usr/bin/env python3
"""Fails when the header-plus-source units of a folder under src/ depend on each other in a cycle.

A unit is X.h with X.cc; it depends on unit Y of the same folder when X.h or X.cc includes
"folder/Y.h". Usage: check_unit_cycles.py SRC_DIR FOLDER...
"""
import os
import re
import sys


def units_of(folder_path, folder):
    units = {}
    include = re.compile(r'#include "' + re.escape(folder) + r'/([A-Za-z0-9_]+)\.h"')
    for name in sorted(os.listdir(folder_path)):
        base, ext = os.path.splitext(name)
        if ext not in ('.h', '.cc'):
            continue
        with open(os.path.join(folder_path, name), encoding='utf-8') as f:
            deps = set(include.findall(f.read()))
        units.setdefault(base, set()).update(deps - {base})
    return units


def cycles(units):
    """Strongly connected components of more than one unit (Tarjan, iterative)."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []
    counter = 0
    for root in units:
        if root in index:
            continue
        work = [(root, iter(sorted(units[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in units:
                    continue
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(units[child]))))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def main():
    src, folders = sys.argv[1], sys.argv[2:]
    failed = False
    for folder in folders:
        units = units_of(os.path.join(src, folder), folder)
        components = cycles(units)
        for component in components:
            failed = True
            print(f'{folder}: {len(component)} units in a cycle: {", ".join(component)}')
            for unit in component:
                inside = sorted(d for d in units[unit] if d in component)
                print(f'  {unit} -> {", ".join(inside)}')
        if not components:
            print(f'{folder}: {len(units)} units, no cycle')
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
