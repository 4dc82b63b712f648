#!/usr/bin/env python3
"""Instructions per call on the call path, counted by callgrind, against benches/instructions.txt.

Builds the `dispatch_interleaved` and `idempotency_interleaved` benches (release), runs each
path's profile mode under `valgrind --tool=callgrind` at N = 2,000 and N = 4,000 calls, and takes
the difference divided by 2,000, so the process's setup (runtime, registry, first-call caches)
cancels. Paths:

  success         a valid call through `registry.call` (dispatch_interleaved `profile N`)
  floor           the hand-written floor of the same call, same process (a reference: it moves
                  with the compiler and serde_json, not with toolwright)
  rules           a failing call, two field-rule violations (`profile N rules`)
  shape           a failing call, a type error on the JSON Schema slow path (`profile N shape`)
  idempotent      an idempotent tool, the store skipped (idempotency_interleaved `profile N twin`)
  non_idempotent  its non-idempotent twin through the in-memory store (`profile N`)

The dispatch paths are the inclusive cost of the bench's `through_registry` (or `floor`) future;
the idempotency paths are the program's total (one side per process).

Exits 1 when any path costs more than TOLERANCE (3%) above its figure in the file, and prints a
table: old, new, change. `--update` rewrites the file with the new counts. Needs valgrind
(callgrind_annotate) and cargo; honours CARGO_TARGET_DIR. The ten callgrind runs take under
10 seconds on a 2-core machine; a clean release build of the benches first takes 4 to 5 minutes.
Repeated runs agree within 0.2% on every path but `non_idempotent` (within 1.9%: the store's
hash map is seeded afresh per process); a binary at another path counts up to 0.2% differently.

Usage: scripts/instructions.py [--update] [--file PATH] [--dispatch-bin BIN]
       [--idempotency-bin BIN] [--paths success,rules,...]
(`--dispatch-bin` / `--idempotency-bin` use a prebuilt bench binary instead of building one,
e.g. to count an older build; a binary without a path's profile mode cannot count that path.)
"""
import argparse
import concurrent.futures
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

TOLERANCE = 0.03
N1, N2 = 2000, 4000
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_FILE = os.path.join(ROOT, "benches", "instructions.txt")

REGISTRY = "dispatch_interleaved::common::through_registry::{{closure}}"
FLOOR = "dispatch_interleaved::common::floor::{{closure}}"

# path -> (bench, profile arguments after N, symbol whose inclusive cost is counted; None: total)
PATHS = {
    "success": ("dispatch_interleaved", [], REGISTRY),
    "floor": ("dispatch_interleaved", [], FLOOR),
    "rules": ("dispatch_interleaved", ["rules"], REGISTRY),
    "shape": ("dispatch_interleaved", ["shape"], REGISTRY),
    "idempotent": ("idempotency_interleaved", ["twin"], None),
    "non_idempotent": ("idempotency_interleaved", [], None),
}

HEADER = """\
# Instructions per call on toolwright's call path: callgrind at N = 2,000 and 4,000 calls, the
# difference / 2,000 (scripts/instructions.py, which says what each path is). The script exits 1
# when a path rises more than 3% above its figure here; `scripts/instructions.py --update`
# rewrites this file. Counts move with the compiler and the dependencies, so update the file
# with them, in a change of its own.
"""


def build(bench):
    """Builds one bench and returns its executable, from cargo's JSON messages."""
    out = subprocess.run(
        ["cargo", "bench", "--bench", bench, "--no-run", "--message-format=json-render-diagnostics"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        check=True,
        text=True,
    ).stdout
    for line in out.splitlines():
        try:
            message = json.loads(line)
        except json.JSONDecodeError:
            continue
        if message.get("reason") == "compiler-artifact" and message.get("executable"):
            if message["target"]["name"] == bench:
                return message["executable"]
    sys.exit(f"instructions: cargo built no executable for bench {bench}")


def inclusive(annotated, symbol):
    """The inclusive Ir of `symbol` (None: the program total) in callgrind_annotate's output."""
    found = []
    for line in annotated.splitlines():
        m = re.match(r"\s*([\d,]+) \([^)]*\)\s+(.*)$", line)
        if not m:
            continue
        ir, rest = int(m.group(1).replace(",", "")), m.group(2)
        if symbol is None:
            if rest.startswith("PROGRAM TOTALS"):
                return ir
        elif f":{symbol} [" in rest:
            found.append(ir)
    if not found:
        raise LookupError(f"no {symbol or 'PROGRAM TOTALS'} in the profile")
    # Same-named instances nest (a future polling one of its own kind): the outermost counts.
    return max(found)


def profile(binary, args, n, workdir):
    """Runs one profile under callgrind and returns callgrind_annotate's inclusive listing."""
    out = os.path.join(workdir, f"{os.path.basename(binary)}-{'-'.join(args) or 'ok'}-{n}")
    subprocess.run(
        ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", binary, "profile", str(n)]
        + args,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=True,
    )
    return subprocess.run(
        ["callgrind_annotate", "--inclusive=yes", "--threshold=100", out],
        stdout=subprocess.PIPE,
        check=True,
        text=True,
    ).stdout


def count(binaries, paths):
    """Instructions per call for each path, by the two-N difference."""
    runs = {}  # (binary, args, n) -> annotated listing
    for path in paths:
        bench, args, _ = PATHS[path]
        for n in (N1, N2):
            runs[(binaries[bench], tuple(args), n)] = None
    with tempfile.TemporaryDirectory(prefix="instructions-") as workdir:
        # Instruction counts do not depend on load, so the runs share the cores.
        with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
            futures = {key: pool.submit(profile, key[0], list(key[1]), key[2], workdir) for key in runs}
            for key, future in futures.items():
                runs[key] = future.result()
    result = {}
    for path in paths:
        bench, args, symbol = PATHS[path]
        low = inclusive(runs[(binaries[bench], tuple(args), N1)], symbol)
        high = inclusive(runs[(binaries[bench], tuple(args), N2)], symbol)
        result[path] = (high - low) / (N2 - N1)
    return result


def read(file):
    counts = {}
    if not os.path.exists(file):
        return counts
    with open(file) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if line:
                path, figure = line.split()
                counts[path] = float(figure)
    return counts


def write(file, counts):
    rustc = subprocess.run(["rustc", "--version"], stdout=subprocess.PIPE, text=True).stdout.strip()
    with open(file, "w") as f:
        f.write(HEADER)
        f.write(f"# Counted with {rustc}.\n")
        f.write("# path           instructions per call\n")
        for path in PATHS:
            if path in counts:
                f.write(f"{path:<16} {counts[path]:.0f}\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--update", action="store_true", help="rewrite the file with the counts")
    parser.add_argument("--file", default=DEFAULT_FILE)
    parser.add_argument("--dispatch-bin")
    parser.add_argument("--idempotency-bin")
    parser.add_argument("--paths", default=",".join(PATHS))
    options = parser.parse_args()
    paths = [p for p in options.paths.split(",") if p]
    unknown = [p for p in paths if p not in PATHS]
    if unknown:
        sys.exit(f"instructions: unknown path(s) {', '.join(unknown)}; known: {', '.join(PATHS)}")
    for tool in ("valgrind", "callgrind_annotate", "cargo"):
        if shutil.which(tool) is None:
            sys.exit(f"instructions: needs {tool} on PATH")

    given = {
        "dispatch_interleaved": options.dispatch_bin,
        "idempotency_interleaved": options.idempotency_bin,
    }
    binaries = {}
    for bench in sorted({PATHS[p][0] for p in paths}):
        binaries[bench] = given[bench] or build(bench)
    new = count(binaries, paths)
    old = read(options.file)

    print(f"instructions per call (callgrind, N = {N2:,} minus N = {N1:,}); tolerance +{TOLERANCE:.0%}")
    print(f"  {'path':<16} {'old':>10} {'new':>10} {'change':>8}")
    risen = []
    for path in paths:
        if path in old and old[path] > 0:
            change = new[path] / old[path] - 1
            mark = "  ROSE" if change > TOLERANCE else ""
            print(f"  {path:<16} {old[path]:>10,.0f} {new[path]:>10,.1f} {change:>+8.2%}{mark}")
            if change > TOLERANCE:
                risen.append(path)
        else:
            print(f"  {path:<16} {'-':>10} {new[path]:>10,.1f} {'new':>8}")

    if options.update:
        kept = {p: c for p, c in old.items() if p in PATHS}
        kept.update(new)
        write(options.file, kept)
        print(f"wrote {os.path.relpath(options.file, ROOT)}")
        return 0
    if risen:
        print(f"instructions: {', '.join(risen)} rose more than {TOLERANCE:.0%}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
