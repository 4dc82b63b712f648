#!/usr/bin/env python3
"""Prints the walk of one successful call through the workspace's source files.

The call is the `dispatch_interleaved` bench's: `Registry::call` on a read-only `#[tool]` with
no store and tracing off. The bench is built unoptimized with line tables (`cargo test --bench
dispatch_interleaved --no-run`, so functions are not inlined into each other), run under
valgrind's lackey tool, which prints the address of every block of machine code it runs, in
order (with `--vex-guest-chase=no`, so a block never runs on into the function it calls);
the blocks of the fourth call (the first three warm the lazily built validator and the
allocator) are mapped to source lines with addr2line. A file is *entered* when the next block
that maps to a workspace source file (the bench's own files and the standard library left out)
maps to a different file than the one before; a *return* is an entry into a file already
entered earlier in the same call.

Usage: scripts/walk.py [--bin BIN] [--call N] [--list]
  --bin BIN  a `dispatch_interleaved` binary built as above (default: build it)
  --call N   which call to walk, counting from 1 (default 4)
  --list     print every entry in order, with the line it entered at
Needs valgrind and binutils' addr2line and nm.
"""
import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
def build():
    out = subprocess.run(
        ["cargo", "test", "--bench", "dispatch_interleaved", "--no-run", "--message-format=json"],
        cwd=ROOT, check=True, capture_output=True, text=True,
    ).stdout
    for line in out.splitlines():
        msg = json.loads(line)
        if msg.get("reason") == "compiler-artifact" and msg.get("executable") and \
                msg["target"]["name"] == "dispatch_interleaved":
            return msg["executable"]
    sys.exit("walk.py: cargo built no dispatch_interleaved executable")


def symbol(binary, name):
    out = subprocess.run(["nm", "-C", binary], check=True, capture_output=True, text=True).stdout
    for line in out.splitlines():
        parts = line.split(" ", 2)
        if len(parts) == 3 and parts[2] == name:
            return int(parts[0], 16)
    sys.exit(f"walk.py: no symbol {name} in {binary}")


def trace(binary, calls):
    with tempfile.NamedTemporaryFile(suffix=".log") as log:
        subprocess.run(
            ["valgrind", "--tool=lackey", "--trace-superblocks=yes", "--vex-guest-chase=no", f"--log-file={log.name}",
             binary, "profile", str(calls)],
            check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        return [int(l[3:], 16) for l in open(log.name) if l.startswith("SB ")]


def lines(binary, offsets):
    """Maps each offset to (file, line), or None where there is no line."""
    text = "\n".join(hex(o) for o in offsets)
    out = subprocess.run(["addr2line", "-e", binary], input=text, check=True,
                         capture_output=True, text=True).stdout.splitlines()
    found = {}
    for offset, where in zip(offsets, out):
        path, _, line = where.rpartition(":")
        line = line.split(" ")[0]
        # Line 0 ("?") is code the compiler made (drop glue, shims), which it files under the
        # crate's root: no file a reader opens.
        found[offset] = None if path in ("??", "") or line in ("?", "0") else (path, line)
    return found


def main():
    args = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    args.add_argument("--bin")
    args.add_argument("--call", type=int, default=4)
    args.add_argument("--list", action="store_true")
    opts = args.parse_args()
    binary = opts.bin or build()

    start = symbol(binary, "dispatch_interleaved::common::through_registry::{{closure}}")
    stop = symbol(binary, "dispatch_interleaved::common::floor::{{closure}}")
    blocks = trace(binary, opts.call + 1)
    # Where the executable was loaded: the page-aligned base at which its `main` ran once and
    # both functions ran (a block of another object can line up with one of them by chance).
    entry = symbol(binary, "dispatch_interleaved::main")
    counts = collections.Counter(blocks)
    bases = [b - entry for b in counts if counts[b] == 1 and (b - entry) % 0x1000 == 0]
    bases = [base for base in bases if counts[base + start] and counts[base + stop]]
    if len(bases) != 1:
        sys.exit(f"walk.py: cannot tell where the executable was loaded ({len(bases)} candidates)")
    blocks = [b - bases[0] for b in blocks]
    starts = [i for i, b in enumerate(blocks) if b == start]
    if len(starts) < opts.call:
        sys.exit(f"walk.py: the trace holds {len(starts)} calls, not {opts.call}")
    begin = starts[opts.call - 1]
    end = next(i for i in range(begin, len(blocks)) if blocks[i] == stop)
    call = blocks[begin:end]
    where = lines(binary, sorted(set(call)))

    entries = []
    for b in call:
        w = where.get(b)
        if w is None:
            continue
        path = w[0]
        if not os.path.isabs(path) or not path.startswith(ROOT + os.sep):
            continue
        rel = os.path.relpath(path, ROOT)
        if rel.startswith("benches" + os.sep):
            continue
        if not entries or entries[-1][0] != rel:
            entries.append((rel, w[1]))

    seen, returns = set(), collections.Counter()
    for rel, _ in entries:
        if rel in seen:
            returns[rel] += 1
        seen.add(rel)
    if opts.list:
        for rel, line in entries:
            print(f"{rel}:{line}")
        print()
    print(f"blocks run: {len(call)}")
    print(f"files entered: {len(seen)}")
    print(f"moves between files: {len(entries) - 1}")
    print(f"returns to a file already entered: {sum(returns.values())}")
    for rel, n in returns.most_common():
        print(f"  {rel}: {n}")


if __name__ == "__main__":
    main()
