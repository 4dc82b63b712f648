#!/usr/bin/env python3
"""Lists the public paths of a crate's documentation, finds the items reachable by more than one
path, and checks the surface against a checked-in list, so a change to it shows in review.

Reads rustdoc's output (build it first: `cargo doc --no-deps --all-features -p toolwright`).
Two paths are the same item when rustdoc's pages for them link the same source line. The rule
checked: an item has one module path; an everyday type may also sit at the crate root (as
axum's `Router` is `axum::Router` and `axum::routing::Router`), and the prelude, which exists
for a glob import, is not counted. Re-exported foreign crates (rmcp under `mcp::rmcp`) are
counted apart: their surface is theirs. Usage:

    scripts/public_items.py [--list] [--check FILE] [--write FILE] [CRATE]

`--list` prints every path of the crate's own, one a line; `--write FILE` writes that list to
FILE; `--check FILE` fails when the list differs from FILE (printing the difference) or when an
item has two module paths. CRATE defaults to toolwright.
"""
import collections
import difflib
import os
import re
import sys

FOREIGN = ("mcp::rmcp::",)
ITEM = re.compile(r'<a href="([^"]+\.html)">([^<]+)</a>')
SOURCE = re.compile(r'href="(?:\.\./)*src/([^"#]+)#(\d+)')


def source_of(doc_dir, href):
    """The source file and line rustdoc's page for an item links, or the page itself."""
    try:
        text = open(os.path.join(doc_dir, href), encoding="utf-8").read()
    except OSError:
        return href
    found = SOURCE.search(text)
    return f"{found.group(1)}:{found.group(2)}" if found else href


def main(argv):
    listing = "--list" in argv
    check = write = None
    rest = []
    args = iter(argv)
    for arg in args:
        if arg == "--check":
            check = next(args)
        elif arg == "--write":
            write = next(args)
        elif arg != "--list":
            rest.append(arg)
    crate = rest[0] if rest else "toolwright"
    target = os.environ.get("CARGO_TARGET_DIR", "target")
    doc_dir = os.path.join(target, "doc", crate)
    page = os.path.join(doc_dir, "all.html")
    if not os.path.exists(page):
        print(f"{page} not found: run `cargo doc --no-deps --all-features -p {crate}` first")
        return 2
    links = ITEM.findall(open(page, encoding="utf-8").read())
    own = sorted((path, href) for href, path in links if not path.startswith(FOREIGN))
    paths = [path for path, _ in own]

    by_item = collections.defaultdict(list)
    for path, href in own:
        by_item[source_of(doc_dir, href)].append(path)
    twice = []
    for item_paths in by_item.values():
        modules = [p for p in item_paths if "::" in p and not p.startswith("prelude::")]
        if len(modules) > 1:
            twice.append(sorted(modules))
    names = collections.defaultdict(set)
    for source, item_paths in by_item.items():
        names[item_paths[0].rsplit("::", 1)[-1]].add(source)
    shared = sorted(n for n, sources in names.items() if len(sources) > 1)

    if listing:
        for path in paths:
            print(path)
    if write:
        with open(write, "w", encoding="utf-8") as out:
            out.write("".join(f"{p}\n" for p in paths))
    for item_paths in sorted(twice):
        print(f"one item at more than one module path: {', '.join(item_paths)}")
    if shared:
        print(f"names of more than one item (distinct types): {', '.join(shared)}")
    print(
        f"{crate}: {len(links)} public paths, {len(links) - len(own)} of them re-exported "
        f"foreign crates; {len(own)} of its own for {len(by_item)} items; "
        f"{len(twice)} items at more than one module path"
    )
    failed = bool(twice)
    if check:
        expected = open(check, encoding="utf-8").read().splitlines()
        if expected != paths:
            failed = True
            print(f"the public surface differs from {check} (regenerate it with --write {check}):")
            sys.stdout.writelines(
                line + "\n"
                for line in difflib.unified_diff(expected, paths, check, "rustdoc", lineterm="", n=0)
            )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
