#!/usr/bin/env bash
# Runs the replica simulation (tests/sim_replicas.rs) over many seeds, outside CI, and sums up
# what it found: every broken invariant with its count and first seed, the known defects apart.
#
#   scripts/sim.sh [SEEDS] [START]     # default 5000 seeds from 0
#   JOBS=4 CHUNK=250 scripts/sim.sh 20000 100000
#
# Seeds run in chunks of CHUNK (default 500), JOBS chunks at once (default: the CPUs). Each
# chunk is one run of the test binary with SIM_SEED_START and SIM_SEEDS; a finding replays with
# `SIM_SEED=<n> cargo test --all-features --test sim_replicas -- --nocapture`.
# Exits 1 when a promise broke that is not in KNOWN_DEFECTS.
set -euo pipefail

seeds=${1:-5000}
start=${2:-0}
chunk=${CHUNK:-500}
jobs=${JOBS:-$(nproc 2>/dev/null || echo 2)}

cd "$(dirname "$0")/.."
cargo test --all-features --test sim_replicas --no-run --quiet

logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
began=$(date +%s)

chunks=()
for ((from = start; from < start + seeds; from += chunk)); do
    count=$((start + seeds - from < chunk ? start + seeds - from : chunk))
    chunks+=("$from $count")
done

printf '%s\n' "${chunks[@]}" | xargs -P "$jobs" -L 1 sh -c '
    SIM_SEED_START=$0 SIM_SEEDS=$1 cargo test --quiet --all-features --test sim_replicas \
        -- --nocapture >"'"$logs"'/$0.log" 2>&1 || echo failed >"'"$logs"'/$0.failed"
'

elapsed=$(($(date +%s) - began))
echo "seeds $start..$((start + seeds - 1)): $seeds in ${elapsed}s, $jobs at once"
echo
echo "invariant                      surface                        violations  first seed"
cat "$logs"/*.log | awk '
    /^SIM_FINDING / {
        key = $2 " " $3
        n[key] += $4
        if (!(key in first) || $5 < first[key]) first[key] = $5
    }
    END { for (k in n) { split(k, p, " "); printf "%-30s %-30s %10d  %d\n", p[1], p[2], n[k], first[k] } }
' | sort

if compgen -G "$logs/*.failed" >/dev/null; then
    echo
    echo "Promises broken outside KNOWN_DEFECTS:"
    for failed in "$logs"/*.failed; do
        sed -n '/broken promises:/,/^$/p' "${failed%.failed}.log"
    done
    exit 1
fi
echo
echo "Every violation above is a known defect (KNOWN_DEFECTS in tests/sim_replicas.rs)."
