#!/usr/bin/env python3
"""Lists the public paths of a crate's documentation and counts the names reachable by more
than one path, so a change to the surface shows in review.

Reads rustdoc's `all.html` (build it first: `cargo doc --no-deps --all-features -p toolwright`).
Re-exported foreign crates (rmcp under `mcp::rmcp`, redis under `idempotency::redis`) are
counted apart: their surface is theirs. Usage:

    scripts/public_items.py [--list] [CRATE]   # CRATE defaults to toolwright

With `--list`, every toolwright path is printed, one a line, sorted; then the summary.
"""
import collections
import os
import re
import sys

FOREIGN = ("mcp::rmcp::", "idempotency::redis::")
ITEM = re.compile(r'<a href="[^"]+\.html">([^<]+)</a>')


def main(argv):
    listing = "--list" in argv
    rest = [a for a in argv if a != "--list"]
    crate = rest[0] if rest else "toolwright"
    target = os.environ.get("CARGO_TARGET_DIR", "target")
    page = os.path.join(target, "doc", crate, "all.html")
    if not os.path.exists(page):
        print(f"{page} not found: run `cargo doc --no-deps --all-features -p {crate}` first")
        return 2
    paths = ITEM.findall(open(page, encoding="utf-8").read())
    own = sorted(p for p in paths if not p.startswith(FOREIGN))
    by_name = collections.defaultdict(list)
    for path in own:
        by_name[path.rsplit("::", 1)[-1]].append(path)
    several = {name: ps for name, ps in by_name.items() if len(ps) > 1}
    if listing:
        for path in own:
            print(path)
    for name in sorted(several):
        print(f"more than one path: {name}: {', '.join(several[name])}")
    print(
        f"{crate}: {len(paths)} public paths, {len(paths) - len(own)} of them re-exported "
        f"foreign crates; {len(own)} of its own for {len(by_name)} names; "
        f"{len(several)} names at more than one path"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
