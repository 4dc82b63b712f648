#!/usr/bin/env python3
"""Prints the import circles among a crate's modules and exits 1 when there is one.

A module is a file (`src/a/b.rs` and `src/a/b/mod.rs` are `a::b`). An edge `a -> b` is a path
to `b` written in `a`'s file outside its `#[cfg(test)]` module (a unit test may reach
anywhere): `crate::b...`, `super::...` resolved from `a`, or `c::...` naming a child `c` of `a`,
each taken to its longest prefix that is a module. A child reaching its parent is an edge like
any other: a parent that uses its child while the child imports from the parent is a circle
(a child imports what it shares with its siblings from the sibling that owns it). A parent's
re-export of its child (`pub use c::X;`) is its table of contents, not an import, and the crate
root is exempt (as a target and as a source). Usage: scripts/module_circles.py [SRC_DIR ...],
default tool-core/src.
"""
import os
import re
import sys

PATH = re.compile(r"\b(crate|super)::((?:(?:[a-z_][a-z0-9_]*|super)::)*[a-z_][a-z0-9_]*|\{)")
CHILD = re.compile(r"(?<![:\w])((?:[a-z_][a-z0-9_]*::)+)")
REEXPORT = re.compile(r"\bpub(?:\([a-z]+\))?\s+use\s+[a-z_][a-z0-9_]*::[^;]*;", re.S)
USE_GROUP = re.compile(r"\buse\s+(crate|super)::\{([^;]*)\};", re.S)


def modules(src):
    found = {}
    for root, _, files in os.walk(src):
        for name in files:
            if not name.endswith(".rs"):
                continue
            path = os.path.join(root, name)
            rel = os.path.relpath(path, src)[:-3].split(os.sep)
            if rel[-1] == "mod":
                rel = rel[:-1]
            if rel in (["lib"], ["main"]):
                rel = []
            found["::".join(rel)] = path
    return found


def strip_tests(text):
    """The file without its `#[cfg(test)] mod ... { ... }` blocks and its comments."""
    text = re.sub(r"//[^\n]*", "", text)
    out, i = [], 0
    for m in re.finditer(r"#\[cfg\(test\)\]\s*mod\s+\w+\s*\{", text):
        if m.start() < i:
            continue
        out.append(text[i : m.start()])
        depth, j = 1, m.end()
        while j < len(text) and depth:
            depth += {"{": 1, "}": -1}.get(text[j], 0)
            j += 1
        i = j
    out.append(text[i:])
    return "".join(out)


def absolute(root, path, module):
    """`crate::a::b` as `a::b`; `super::...` from `module` as the path from the crate root."""
    segs = path.split("::")
    if root == "crate":
        return segs
    if root == "self":
        return (module.split("::") if module else []) + segs
    base = module.split("::") if module else []
    base = base[:-1]
    while segs and segs[0] == "super":
        base, segs = base[:-1], segs[1:]
    return base + segs


def targets(text, known, module):
    paths = []
    for m in USE_GROUP.finditer(text):
        for part in re.split(r",(?![^{]*\})", m.group(2)):
            part = part.strip()
            if part:
                paths.append((m.group(1), re.split(r"::\{|\s+as\s+", part)[0].replace(" ", "")))
    text = USE_GROUP.sub("", text)
    paths += [(m.group(1), m.group(2)) for m in PATH.finditer(text) if m.group(2) != "{"]
    if module:
        # A path that starts at a child of this module (`use c::X;`, `c::f()`).
        body = REEXPORT.sub("", text)
        paths += [("self", m.group(1)[:-2]) for m in CHILD.finditer(body)]
    for root, path in paths:
        segs = absolute(root, path, module)
        # The longest prefix that is a module.
        for n in range(len(segs), 0, -1):
            name = "::".join(segs[:n])
            if name in known:
                yield name
                break


def circles(graph):
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def main():
    srcs = sys.argv[1:] or ["tool-core/src"]
    status = 0
    for src in srcs:
        known = modules(src)
        graph = {m: set() for m in known}
        for name, path in known.items():
            text = strip_tests(open(path, encoding="utf-8").read())
            for target in targets(text, known, name):
                if target not in ("", name):
                    graph[name].add(target)
        found = circles(graph)
        print(f"{src}: {len(known)} modules, {sum(map(len, graph.values()))} edges, {len(found)} circles")
        for comp in found:
            status = 1
            print(f"  circle of {len(comp)}: {', '.join(comp)}")
            members = set(comp)
            for v in comp:
                inside = sorted(w for w in graph[v] if w in members)
                print(f"    {v} -> {', '.join(inside)}")
    sys.exit(status)


if __name__ == "__main__":
    main()
