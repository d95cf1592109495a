#!/usr/bin/env python3
"""The stops a request makes in the runtime's code: the distinct functions of
`crates/crudforge/src` that a callgrind dump of it entered, and their files.

Measure an unoptimized build (nothing inlined, so every function the code calls is a stop),
one workload, a few requests:

    cargo build -p feature-cost
    benches/callgrind/run.py --server target/debug/feature-cost --backend sqlite \\
        --prefix /plain/ --workloads w4 --rows 50 --warmup 3 --requests 3 --keep-dumps DIR
    benches/callgrind/stops.py DIR/*-w4.callgrind.out [--list]

A function is counted once whatever its type parameters (`select::<Critter>` and
`select::<Habitat>` are one stop), and a closure or an `async` block counts with the function
that writes it. Python 3 standard library only.
"""

import argparse
import re
import sys

RUNTIME = "crates/crudforge/src/"


def strip_generics(name):
    """`a::b<T>::c::<U>` -> `a::b::c`: the function as written, whatever it was made for."""
    out, depth = [], 0
    for ch in name:
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth = max(0, depth - 1)
        elif depth == 0:
            out.append(ch)
    return re.sub(r"::+", "::", "".join(out)).strip(":")


def owner(name):
    """The function a closure or `async` block belongs to."""
    name = strip_generics(name.split(" ")[0])
    name = re.sub(r"::h[0-9a-f]{16}$", "", name)
    parts = [p for p in name.split("::") if not p.startswith("{{")]
    return "::".join(parts)


def entered(dump):
    """(file, function) of every function the dump charges instructions to, the file being
    the one that defines the function (`fl=`), not those whose code was inlined into it."""
    # Names are given once, at their first use by any of these keys, then referred to by number:
    # files share one numbering, functions another.
    space = {"fl": "file", "fi": "file", "fe": "file", "cfi": "file", "cfl": "file"}
    space.update({"fn": "fn", "cfn": "fn"})
    ids = {"file": {}, "fn": {}}
    seen = set()
    file = fn = None
    with open(dump, encoding="utf-8", errors="replace") as f:
        for line in f:
            m = re.match(r"^(fl|fi|fe|cfi|cfl|fn|cfn)=\((\d+)\)(?: (.*))?$", line.rstrip("\n"))
            if m:
                key, n, name = m.groups()
                if name is not None:
                    ids[space[key]][n] = name
                if key == "fl":
                    file = ids["file"].get(n)
                elif key == "fn":
                    fn = ids["fn"].get(n)
                continue
            # A cost line (its position, then its counts) charges the current function.
            if fn and file and re.match(r"^[+\-*]?\d", line) and RUNTIME in file:
                seen.add((file[file.index(RUNTIME) + len(RUNTIME):], owner(fn)))
    return seen


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("dump")
    p.add_argument("--list", action="store_true", help="print each stop")
    a = p.parse_args()
    stops = entered(a.dump)
    functions = sorted({f for _, f in stops})
    files = sorted({fl for fl, _ in stops})
    if a.list:
        for fl, f in sorted(stops):
            print(f"{fl}\t{f}")
    print(f"{len(functions)} functions in {len(files)} files of {RUNTIME}")


if __name__ == "__main__":
    sys.exit(main())
