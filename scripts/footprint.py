#!/usr/bin/env python3
"""The code one call runs through, and whether it fits in the L1 instruction cache.

Runs COMMAND under `valgrind --tool=callgrind --dump-instr=yes` twice, with `{n}` in it replaced
by N1 and then by N2, and takes the difference divided by N2 - N1, so the process's setup
cancels. Prints, per call:

- the instructions executed;
- the footprint: the distinct 64-byte lines of code executed on (nearly) every call, and the
  distinct instructions in them. A loop that runs the same call back to back keeps that code in
  the L1 instruction cache only if the lines fit beside each other there;
- the lines by crate (or C library), and the functions with the most lines;
- with `--i1 SIZE,ASSOC,LINE` (repeatable), the L1 instruction-cache misses per call that
  callgrind's cache simulation counts for a cache of that geometry (this machine's is printed
  by `lscpu`).

A line counts as executed on every call when the instructions run on it in the extra N2 - N1
calls are at least 0.9 x (N2 - N1): a line run by only some calls (an error path taken now and
then) is left out.

Usage:
  scripts/footprint.py [--n1 1000] [--n2 3000] [--top 15] [--i1 32768,8,64 ...] -- COMMAND...

Example (the peers bench's valid 3-argument call, toolwright's side then rig's):
  cargo bench --no-run --manifest-path benches/peers/Cargo.toml
  scripts/footprint.py --i1 32768,8,64 --i1 65536,8,64 -- \\
      benches/peers/target/release/deps/peers-HASH profile 0 {n}
  scripts/footprint.py -- benches/peers/target/release/deps/peers-HASH profile rig 0 {n}

Needs valgrind. Function names need symbols (a release build keeps them unless stripped).
"""
import argparse
import collections
import os
import re
import shutil
import subprocess
import sys
import tempfile

LINE = 64
EVERY_CALL = 0.9
# The first path segment in lower case: `alloc` in `<alloc::string::String as core::..>::clone`.
CRATE = re.compile(r"([a-z_][a-z0-9_]*)::")


def run(command, n, out, extra):
    """Runs the command with `{n}` replaced, under callgrind, its profile written to `out`."""
    argv = [a.replace("{n}", str(n)) for a in command]
    subprocess.run(
        [
            "valgrind",
            "--tool=callgrind",
            "--dump-instr=yes",
            "--compress-strings=no",
            "--compress-pos=no",
            f"--callgrind-out-file={out}",
            *extra,
            *argv,
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=True,
    )


def load(path):
    """Per instruction (object, address): its events' self cost and its function's name, and
    the file's event names and totals."""
    costs, names = {}, {}
    events, totals = [], []
    obj, fn, after_call = "", "", False
    positions = 1
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            if line.startswith("0x"):
                if after_call:
                    # The cost line after `calls=` is the call's inclusive cost: not this
                    # instruction's own.
                    after_call = False
                    continue
                parts = line.split()
                key = (obj, int(parts[0], 16))
                values = [int(v) for v in parts[positions:]]
                old = costs.get(key)
                costs[key] = values if old is None else [a + b for a, b in zip(old, values)]
                names[key] = fn
            elif line.startswith("calls="):
                after_call = True
            elif line.startswith("ob="):
                obj = line[3:].strip()
            elif line.startswith("fn="):
                fn = line[3:].strip()
            elif line.startswith("positions:"):
                # The address, then the source line when callgrind dumps lines (its default).
                positions = len(line.split()) - 1
            elif line.startswith("events:"):
                events = line.split()[1:]
            elif line.startswith(("summary:", "totals:")):
                totals = [int(v) for v in line.split()[1:]]
    return costs, names, events, totals


def crate_of(name, obj):
    match = CRATE.search(name)
    if match:
        return match.group(1)
    return os.path.basename(obj) if obj else "?"


def main():
    parser = argparse.ArgumentParser(
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--n1", type=int, default=1000)
    parser.add_argument("--n2", type=int, default=3000)
    parser.add_argument("--top", type=int, default=15, help="functions listed (default 15)")
    parser.add_argument(
        "--i1",
        action="append",
        default=[],
        metavar="SIZE,ASSOC,LINE",
        help="an L1 instruction cache to simulate (repeatable)",
    )
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command or not any("{n}" in a for a in command):
        parser.error("give a COMMAND after --, with {n} where the number of calls goes")
    if args.n2 <= args.n1:
        parser.error("--n2 must be larger than --n1")
    calls = args.n2 - args.n1
    if shutil.which("valgrind") is None:
        print("footprint.py: valgrind is not on PATH (Debian: apt-get install valgrind)", file=sys.stderr)
        return 2

    try:
        a, z, names, misses = measure(command, args, calls)
    except subprocess.CalledProcessError as e:
        print(f"footprint.py: the command failed under valgrind (exit {e.returncode}): "
              f"{' '.join(command)}", file=sys.stderr)
        return 1
    report(a, z, names, misses, calls, args.top)
    return 0


def measure(command, args, calls):
    """The two profiles' per-instruction costs and names, and the misses per `--i1` cache.

    One pair of runs per cache (a cache simulation still counts every instruction, `Ir` first),
    or one plain pair without `--i1`; the footprint comes from the first pair."""
    a = z = names = None
    misses = []
    with tempfile.TemporaryDirectory() as tmp:
        first, second = os.path.join(tmp, "a"), os.path.join(tmp, "z")
        for geometry in args.i1 or [None]:
            extra = [] if geometry is None else ["--cache-sim=yes", f"--I1={geometry}"]
            run(command, args.n1, first, extra)
            run(command, args.n2, second, extra)
            costs_a, _, events, totals_a = load(first)
            costs_z, names_z, _, totals_z = load(second)
            if a is None:
                a, z, names = costs_a, costs_z, names_z
            if geometry is not None:
                i1mr = events.index("I1mr")
                misses.append((geometry, (totals_z[i1mr] - totals_a[i1mr]) / calls))
    return a, z, names, misses


def report(a, z, names, misses, calls, top):
    """Prints the per-call figures of the N2 - N1 extra calls."""
    executed = 0.0
    lines = collections.defaultdict(collections.Counter)
    for key, values in z.items():
        extra = values[0] - (a.get(key) or [0])[0]
        if extra <= 0:
            continue
        executed += extra
        lines[(key[0], key[1] // LINE)][key] += extra
    hot = {line: per for line, per in lines.items() if sum(per.values()) >= EVERY_CALL * calls}
    distinct = sum(len(per) for per in hot.values())

    by_crate, by_function = collections.Counter(), collections.Counter()
    instructions = collections.Counter()
    for (obj, _), per in hot.items():
        # A line shared by two functions counts for the one that runs more of it.
        owner = max(per, key=per.get)
        name = names[owner]
        by_crate[crate_of(name, obj)] += 1
        by_function[name] += 1
        for key in per:
            instructions[crate_of(names[key], obj)] += 1

    print(f"per call, over {calls} calls:")
    print(f"  instructions executed   {executed / calls:,.0f}")
    print(
        f"  footprint               {len(hot)} lines of {LINE} bytes ({len(hot) * LINE / 1024:.1f} KiB), "
        f"{distinct:,} distinct instructions in them"
    )
    for geometry, count in misses:
        print(f"  L1i misses at {geometry:<10} {count:,.1f}")
    print("lines (distinct instructions) by crate:")
    for crate, count in by_crate.most_common():
        print(f"  {count:5} ({instructions[crate]:5,})  {crate}")
    print(f"functions with the most lines (top {top}):")
    for name, count in by_function.most_common(top):
        print(f"  {count:5}  {name[:140]}")


if __name__ == "__main__":
    sys.exit(main())
