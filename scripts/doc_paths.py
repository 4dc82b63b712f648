#!/usr/bin/env python3
"""Finds rustdoc that names a member crate's path (`toolwright_core::Registry`) where a user of
the `toolwright` crate has only the facade's (`toolwright::Registry`), and rewrites it.

A user adds `toolwright` to Cargo.toml and nothing else, so an example that imports
`toolwright_core::` or `toolwright_mcp::` fails when copied. What is read: `///` and `//!` lines
of the published crates (`src/`, `tool-*/src/`) and the Markdown files they pull in with
`include_str!`. What counts: every line of a fenced code block, and inline code spans in prose.
Not counted: a link's target (`[Registry](toolwright_core::Registry)`, `[x]: toolwright_core::X`),
which rustdoc resolves in the crate that holds the doc, where the facade is not a dependency.

The table from member path to facade path is read from the source, not written here: the
facade's `pub use` items at the root of `src/lib.rs` (`pub use toolwright_core::{Registry, ..}`,
`pub use toolwright_mcp as mcp`), and each member's own root re-exports, so
`toolwright_core::Export` is found as `toolwright_core::providers::Export` and then as
`toolwright::providers::Export`. Usage:

    scripts/doc_paths.py --check [PATH..]
    scripts/doc_paths.py --fix [PATH..]
    scripts/doc_paths.py --table

`--check` lists every such line with its facade path and exits 1 if there is one; `--fix`
rewrites them in place (a path the facade does not export is listed and left); `--table` prints
the table. PATH (files or directories) limits both to those files; the default is every
published crate.
"""
import os
import re
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
FACADE = "toolwright"
# The member crates and their roots; the facade's own crate name is `toolwright`.
MEMBERS = {
    "toolwright_core": "tool-core/src/lib.rs",
    "toolwright_mcp": "tool-mcp/src/lib.rs",
    "toolwright_agent": "tool-agent/src/lib.rs",
    "toolwright_macros": "tool-macros/src/lib.rs",
}
SOURCES = ["src", "tool-core/src", "tool-mcp/src", "tool-agent/src", "tool-macros/src"]

MEMBER_PATH = re.compile(r"\b(" + "|".join(MEMBERS) + r")((?:::[A-Za-z_][A-Za-z0-9_]*)*)(::\{)?")
DOC_LINE = re.compile(r"^(\s*)(///|//!)(.*)$")
INCLUDE = re.compile(r'include_str!\(\s*"([^"]+\.md)"\s*\)')
LINK_TARGET = re.compile(r"\]\([^)]*\)|^\s*\[[^\]]+\]:\s*\S+")


# --- the table --------------------------------------------------------------------------------


def strip_comments(text):
    return re.sub(r"//[^\n]*", "", text)


def top_level_uses(path):
    """The `pub use` trees at the top level of a crate root, as text (`a::{b, c as d}`)."""
    text = strip_comments(open(path, encoding="utf-8").read())
    uses, depth, i = [], 0, 0
    while i < len(text):
        c = text[i]
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
        elif depth == 0 and text.startswith("pub use ", i) and (i == 0 or not text[i - 1].isalnum()):
            end = text.index(";", i)
            uses.append(text[i + len("pub use ") : end].strip())
            i = end
        i += 1
    return uses


def flatten(tree):
    """A use tree as (path segments, the name it binds): `a::{b, c as d}` -> [a::b, b], [a::c, d]."""
    tree = " ".join(tree.split())
    out = []

    def walk(prefix, t):
        t = t.strip()
        if not t:
            return
        brace = t.find("{")
        if brace >= 0 and t.endswith("}"):
            head = t[:brace].rstrip(":").strip()
            inner, parts, depth, start = t[brace + 1 : -1], [], 0, 0
            for k, ch in enumerate(inner):
                if ch == "{":
                    depth += 1
                elif ch == "}":
                    depth -= 1
                elif ch == "," and depth == 0:
                    parts.append(inner[start:k])
                    start = k + 1
            parts.append(inner[start:])
            base = prefix + ([s for s in head.split("::") if s] if head else [])
            for part in parts:
                walk(base, part)
            return
        name, _, alias = t.partition(" as ")
        segs = prefix + [s.strip() for s in name.split("::") if s.strip()]
        if segs and segs[-1] == "self":
            segs = segs[:-1]
        out.append((segs, alias.strip() or segs[-1]))

    walk([], tree)
    return out


def member_aliases(crate):
    """A member root's own re-exports: `toolwright_core::Session` -> `toolwright_core::call::Session`."""
    aliases = {}
    path = os.path.join(ROOT, MEMBERS[crate])
    for tree in top_level_uses(path):
        for segs, name in flatten(tree):
            if segs[0] == "crate":
                segs = segs[1:]
            elif segs[0] in ("self", "super") or segs[0] in MEMBERS or not segs[0].islower():
                continue
            if segs and segs[-1] != "*":
                aliases[(crate, name)] = (crate, *segs)
    return aliases


def facade_table():
    """Member path (a tuple of segments) -> facade path, from the facade's root re-exports."""
    table = {}
    for tree in top_level_uses(os.path.join(ROOT, "src/lib.rs")):
        for segs, name in flatten(tree):
            if segs and segs[0] in MEMBERS and segs[-1] != "*":
                table[tuple(segs)] = (FACADE, name)
    return table


class Mapper:
    def __init__(self):
        self.table = facade_table()
        self.aliases = {}
        for crate in MEMBERS:
            self.aliases.update(member_aliases(crate))

    def facade_path(self, segs, seen=0):
        """The facade path of a member path, or None when the facade does not export it."""
        segs = tuple(segs)
        for k in range(len(segs), 0, -1):
            if segs[:k] in self.table:
                return self.table[segs[:k]] + segs[k:]
        if len(segs) >= 2 and segs[:2] in self.aliases and seen < 4:
            return self.facade_path(self.aliases[segs[:2]] + segs[2:], seen + 1)
        return None


# --- reading the docs -------------------------------------------------------------------------


def files(paths):
    found = []
    for p in paths:
        full = os.path.join(ROOT, p) if not os.path.isabs(p) else p
        if os.path.isfile(full):
            found.append(full)
        for dirpath, _, names in os.walk(full):
            found.extend(os.path.join(dirpath, n) for n in sorted(names) if n.endswith(".rs"))
    return found


def included_markdown(rs_files):
    """The Markdown files that `#[doc = include_str!(..)]` pulls into these sources."""
    docs = []
    for path in rs_files:
        for rel in INCLUDE.findall(open(path, encoding="utf-8").read()):
            md = os.path.normpath(os.path.join(os.path.dirname(path), rel))
            if md not in docs and os.path.exists(md):
                docs.append(md)
    return docs


def doc_lines(path):
    """(index, text before the doc text, doc text) of each rustdoc line of a file."""
    lines = open(path, encoding="utf-8").read().split("\n")
    if path.endswith(".md"):
        return lines, [(i, "", line) for i, line in enumerate(lines)]
    found = []
    for i, line in enumerate(lines):
        m = DOC_LINE.match(line)
        if m:
            found.append((i, m.group(1) + m.group(2), m.group(3)))
    return lines, found


def code_spans(text, in_block):
    """(start, end) of the parts of a doc line that are code: all of it in a fenced block;
    backtick spans elsewhere, less those that are a link's target."""
    if in_block:
        return [(0, len(text))]
    spans, targets = [], [m.span() for m in LINK_TARGET.finditer(text)]
    for m in re.finditer(r"`[^`]*`", text):
        if not any(a <= m.start() < b for a, b in targets):
            spans.append(m.span())
    return spans


def use_tree_end(text, start):
    """The index after the `}` closing the group that opens at `start` (the `{`)."""
    depth = 0
    for k in range(start, len(text)):
        if text[k] == "{":
            depth += 1
        elif text[k] == "}":
            depth -= 1
            if depth == 0:
                return k + 1
    return None


def rewrite(mapper, text, start, end):
    """The member paths of text[start:end] rewritten; returns (new text, problems)."""
    out, problems, pos = [], [], start
    while True:
        m = MEMBER_PATH.search(text, pos, end)
        if not m:
            break
        out.append(text[pos : m.start()])
        crate, rest = m.group(1), [s for s in m.group(2).split("::") if s]
        head = mapper.facade_path([crate] + rest) if m.group(3) and rest else None
        if head:  # a group under a module the facade exports: its leaves keep their paths
            out.append("::".join(head) + "::{")
            pos = m.end()
            continue
        if m.group(3):  # a group at a crate's root: `toolwright_core::{Registry, providers::Export}`
            close = use_tree_end(text, m.end() - 1)
            group = text[m.end() - 1 : close] if close else None
            leaves = flatten("::".join([crate] + rest) + "::" + group) if group else []
            mapped = [(mapper.facade_path(segs), name) for segs, name in leaves]
            if not group or any(f is None for f, _ in mapped):
                problems.append(m.group(0) + (group[1:] if group else ""))
                out.append(text[m.start() : close or m.end()])
                pos = close or m.end()
                continue
            tails = []
            for (f, name), (segs, _) in zip(mapped, leaves):
                tail = "::".join(f[1:])
                tails.append(tail + (f" as {name}" if name != f[-1] else ""))
            common = os.path.commonprefix([f[1:-1] for f, _ in mapped]) if mapped else ()
            # the group's own prefix when every leaf keeps it, else the facade root
            prefix = [FACADE] + list(common)
            inner = [t[len("::".join(common)) + 2 :] if common else t for t in tails]
            out.append("::".join(prefix) + "::{" + ", ".join(inner) + "}")
            pos = close
            continue
        segs = [crate] + rest
        f = mapper.facade_path(segs)
        if f is None:
            problems.append(m.group(0))
            out.append(m.group(0))
        else:
            out.append("::".join(f))
        pos = m.end()
    out.append(text[pos:end])
    return "".join(out), problems


def scan(mapper, path, fix):
    """Each offending line of a file as (line number, text, suggestion, problems)."""
    lines, docs = doc_lines(path)
    hits, in_block, changed = [], False, False
    for i, lead, text in docs:
        fence = text.strip().startswith("```")
        spans = [] if fence else code_spans(text, in_block)
        if fence:
            in_block = not in_block
        new, problems, last = [], [], 0
        for a, b in spans:
            if not MEMBER_PATH.search(text, a, b):
                continue
            new.append(text[last:a])
            part, bad = rewrite(mapper, text, a, b)
            # `[`toolwright_core::X`]` is a link whose text is its target: the shown path
            # changes, the target stays where rustdoc resolves it.
            shorthand = text[a - 1 : a] == "[" and text[b : b + 1] == "]"
            if shorthand and text[b + 1 : b + 2] not in ("(", "[") and part != text[a:b]:
                part += "](" + text[a + 1 : b - 1]
                b += 1
                part += ")"
            new.append(part)
            problems += bad
            last = b
        if not new:
            continue
        new.append(text[last:])
        fixed = "".join(new)
        hits.append((i + 1, text.strip(), fixed.strip(), problems))
        if fix and fixed != text:
            lines[i] = lead + fixed
            changed = True
    if changed:
        open(path, "w", encoding="utf-8").write("\n".join(lines))
    return hits


def main(argv):
    mode = next((a for a in argv if a in ("--check", "--fix", "--table")), None)
    paths = [a for a in argv if not a.startswith("--")] or SOURCES
    if mode is None:
        print(__doc__)
        return 2
    mapper = Mapper()
    if mode == "--table":
        for member, facade in sorted(mapper.table.items()):
            print(f"{'::'.join(member)} -> {'::'.join(facade)}")
        for (crate, name), target in sorted(mapper.aliases.items()):
            print(f"{crate}::{name} = {'::'.join(target)}")
        return 0
    rs = files(paths)
    everything = rs + included_markdown(rs)
    total, unmapped = 0, 0
    for path in everything:
        for line, text, fixed, problems in scan(mapper, path, mode == "--fix"):
            rel = os.path.relpath(path, ROOT)
            total += 1
            if mode == "--check":
                print(f"{rel}:{line}: {text}")
                if not problems:
                    print(f"{' ' * len(rel)}  -> {fixed}")
            for p in problems:
                unmapped += 1
                print(f"{rel}:{line}: `{p}`: the facade exports no path for it")
    if mode == "--check":
        if total:
            print(
                f"\n{total} rustdoc lines name a member crate's path, which a user of `toolwright`"
                " does not have: `scripts/doc_paths.py --fix` rewrites them"
            )
        return 1 if total else 0
    print(f"rewrote {total - unmapped} lines; {unmapped} paths have no facade path")
    return 1 if unmapped else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
