#!/usr/bin/env python3
"""Counts the runtime crate's public surface two ways:

- the items reachable by a public path and shown in its documentation: the entries of
  `target/doc/crudforge/all.html` after `cargo doc -p crudforge --no-deps --all-features`, by
  kind (structs, traits, functions, ...); items marked `#[doc(hidden)]` and everything under
  `crudforge::__private` are left out, as rustdoc leaves them out;
- the `pub` declarations in its sources: lines starting with `pub ` (not `pub(crate)`,
  `pub(super)` or `pub(in ...)`), which counts trait members, fields and builder methods too.

Run from the workspace root: `scripts/public_items.py [--no-build]`. Python 3 standard library.
"""

import argparse
import os
import re
import subprocess
import sys

ALL = "target/doc/crudforge/all.html"
SOURCES = "crates/crudforge/src"


def documented():
    """{kind: count} of the entries of `all.html`."""
    with open(ALL, encoding="utf-8") as f:
        page = f.read()
    counts = {}
    # Each section is `<h3 id="kind">…</h3><ul class="all-items">…</ul>`.
    for kind, items in re.findall(r'<h3 id="([a-z-]+)">.*?</h3><ul class="all-items">(.*?)</ul>', page, re.S):
        counts[kind] = len(re.findall(r"<li>", items))
    return counts


def declarations():
    n = 0
    for root, _, files in os.walk(SOURCES):
        for name in files:
            if not name.endswith(".rs"):
                continue
            with open(os.path.join(root, name), encoding="utf-8") as f:
                n += sum(1 for line in f if re.match(r"^\s*pub\s", line))
    return n


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--no-build", action="store_true", help="read the documentation as built")
    a = p.parse_args()
    if not a.no_build:
        subprocess.run(
            ["cargo", "doc", "-p", "crudforge", "--no-deps", "--all-features", "--quiet"],
            check=True,
        )
    counts = documented()
    for kind, n in sorted(counts.items()):
        print(f"{kind:16} {n}")
    print(f"{'documented':16} {sum(counts.values())}")
    print(f"{'pub lines':16} {declarations()}")


if __name__ == "__main__":
    sys.exit(main())
