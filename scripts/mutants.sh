#!/usr/bin/env bash
# Mutation testing of the reliability core with cargo-mutants (https://mutants.rs): each mutant
# (a `<` made `<=`, a function body replaced by a constant, a match arm deleted) is built and the
# tests that exercise its module are run; a mutant the tests do not catch is a behaviour no test
# pins. Not in CI: too slow. The score per module and every survivor's reason are in
# docs/mutants.md.
#
# Usage: scripts/mutants.sh [MODULE ...] [-- CARGO-MUTANTS ARGS]
#   MODULE: guard (guard/approval.rs, guard/provenance.rs), execute (execute/), idempotency
#   (idempotency/), validate (validate/ with validate/repair/). Default: all four, in that order.
#   Extra args go to cargo-mutants, e.g. `scripts/mutants.sh execute -- --re 'breaker.rs'`
#   (only the mutants whose names match), `-- --list` (count them, build nothing).
#   A run replaces $MUTANTS_OUT/MODULE: re-run survivors into another MUTANTS_OUT.
#
# The tests per module: toolwright-core's unit tests (`--lib`) and the root crate's integration
# tests named below, never the trybuild suite (tests/ui.rs) or the browser test, and no test
# with `soak` in its name (minutes each: tests/conversation_store.rs's two replicas and a Redis
# restart). Output:
# $MUTANTS_OUT/MODULE/mutants.out/ (caught.txt, missed.txt, timeout.txt, unviable.txt).
#
# How: the tree is copied (with file times, so unchanged files are not rebuilt) to one stable
# directory, $MUTANTS_WORK, and mutated in place there: the target dir keeps its builds between
# runs, and the worktree stays free to edit while a run goes on. The unmutated tests run first
# there (a failing baseline would make every mutant look caught). In place means one build at a
# time.
#
# How long (two shared cores, 2026-12): the first run builds the workspace's test targets once
# (3 to 5 min); then each mutant takes about 5 s with `--lib` only and 8 to 15 s with integration
# tests (an incremental build of toolwright-core, then linking the test binaries). guard: 71
# mutants; execute: 444; idempotency: 456; validate: 579. See docs/mutants.md for measured times.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$root/target/mutants-target}
work=${MUTANTS_WORK:-$CARGO_TARGET_DIR/mutants-src}
out=${MUTANTS_OUT:-$CARGO_TARGET_DIR/mutants-out}
# A missing redis-server fails the Redis store tests instead of skipping them.
export TOOLWRIGHT_REQUIRE_REDIS=1

modules=()
while (($#)) && [[ $1 != -- ]]; do
  modules+=("$1")
  shift
done
[[ ${1:-} == -- ]] && shift
extra=("$@")
((${#modules[@]})) || modules=(guard execute idempotency validate)

# Per module: files to mutate, integration tests (root crate) and cargo features.
files_of() {
  case $1 in
    guard) echo "tool-core/src/guard/approval.rs tool-core/src/guard/provenance.rs" ;;
    execute) echo "tool-core/src/execute/*.rs" ;;
    idempotency) echo "tool-core/src/idempotency/*.rs" ;;
    validate) echo "tool-core/src/validate/*.rs tool-core/src/validate/repair/*.rs" ;;
    *) echo "unknown module $1 (guard, execute, idempotency, validate)" >&2; exit 2 ;;
  esac
}
tests_of() {
  case $1 in
    guard) echo "approval provenance promises_guards guard_order conversation_store" ;;
    execute) echo "breaker promises_breaker execution fallback promises_fallback" ;;
    idempotency) echo "idempotency_store idempotency_pipeline promises_idempotency fingerprint_props" ;;
    validate) echo "repair deterministic_repair repair_claims exactness exact_bounds data_types schema" ;;
  esac
}
features_of() {
  case $1 in
    idempotency | guard) echo "redis" ;;
    *) echo "" ;;
  esac
}

# One run at a time: the copy is mutated in place.
mkdir -p "$work" "$out"
exec 9>"$work.lock"
flock -n 9 || { echo "another scripts/mutants.sh is running in $work" >&2; exit 1; }

# A copy of the tree (sources only) at a stable path.
find "$work" -mindepth 1 -maxdepth 1 ! -name target -exec rm -rf {} +
tar --exclude=./target --exclude=./.git --exclude='./mutants.out*' -cf - . | tar -C "$work" -xf -

listing=false
for a in "${extra[@]}"; do [[ $a == --list ]] && listing=true; done

# cargo mutants: `mutants OUT-DIR TEST-PACKAGES "FILE..." CARGO-ARGS... -- MORE-ARGS`.
mutants() {
  local dir=$1 packages=$2 file_args=()
  for f in $3; do file_args+=("--file=$f"); done
  shift 3
  local args=()
  while [[ $1 != -- ]]; do args+=("--cargo-arg=$1"); shift; done
  shift
  local status=0
  # Debug impls are left out: their text is for people reading logs, and no contract rests on
  # it. `soak` tests are skipped (minutes each).
  (cd "$work" && cargo mutants --in-place -p toolwright-core --test-package "$packages" \
    "${feature_args[@]}" "${args[@]}" "${file_args[@]}" --exclude-re 'impl (fmt::)?Debug for' \
    --baseline skip --timeout 120 --build-timeout 600 -o "$dir" "$@" "${extra[@]}" \
    -- -- --skip soak) || status=$?
  # cargo-mutants exits 2 when a mutant was missed and 3 on a timeout: results, not failures.
  case $status in 0 | 2 | 3) ;; *) exit "$status" ;; esac
}

count() { if [[ -f $1 ]]; then grep -c . "$1" || true; else echo 0; fi; }

for module in "${modules[@]}"; do
  cargo_args=(--lib)
  for t in $(tests_of "$module"); do cargo_args+=("--test=$t"); done
  feature_args=()
  for f in $(features_of "$module"); do feature_args+=("--features=$f"); done
  files=$(files_of "$module")

  if $listing; then
    mutants "$out/$module/full" toolwright-core "$files" --lib --
    continue
  fi
  echo "== $module: baseline (unmutated tests)"
  (cd "$work" && cargo test -p toolwright-core -p toolwright "${feature_args[@]}" "${cargo_args[@]}" \
    -q -- --skip soak)
  start=$(date +%s)
  rm -rf "$out/$module"
  mkdir -p "$out/$module/full"
  # Two passes. A mutant toolwright-core's unit tests catch costs one build of its test
  # harness (2 to 5 s); only what they miss is built with the integration tests (5 to 15 s).
  echo "== $module: against toolwright-core's unit tests"
  mutants "$out/$module/unit" toolwright-core "$files" --lib --
  cp -r "$out/$module/unit/mutants.out" "$out/$module/full/"
  echo "== $module: what they missed, against the integration tests"
  mutants "$out/$module/full" toolwright-core,toolwright "$files" "${cargo_args[@]:1}" -- --iterate
  seconds=$(($(date +%s) - start))
  full=$out/$module/full/mutants.out
  unit=$out/$module/unit/mutants.out
  caught=$(($(count "$full/caught.txt") + $(count "$unit/caught.txt")))
  unviable=$(($(count "$full/unviable.txt") + $(count "$unit/unviable.txt")))
  missed=$(count "$full/missed.txt")
  timeout=$(count "$full/timeout.txt")
  viable=$((caught + missed + timeout))
  summary="$module: $((viable + unviable)) mutants, $caught caught, $missed missed, $timeout timeouts, $unviable unviable; $((viable ? 100 * (caught + timeout) / viable : 100))% of viable caught or timed out; ${seconds} s"
  echo "$summary" | tee "$out/$module/summary.txt"
  for kind in missed timeout; do
    if [[ -s $full/$kind.txt ]]; then sed "s/^/  $kind: /" "$full/$kind.txt"; fi
  done
done
