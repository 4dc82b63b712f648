#!/usr/bin/env bash
# Mutation testing of the reliability core with cargo-mutants (https://mutants.rs): each mutant
# (a `<` made `<=`, a function body replaced by a constant, a match arm deleted) is built and the
# tests that exercise its module are run; a mutant the tests do not catch is a behaviour no test
# pins. Not in CI: too slow. The score per module and every survivor's reason are in
# docs/mutants.md.
#
# Usage: scripts/mutants.sh [MODULE ...] [-- CARGO-MUTANTS ARGS]
#   MODULE: guard (approval.rs, provenance.rs), execute (execute/), idempotency
#   (idempotency/), validate (validate/ with repair/). Default: all four, in that order.
#   Extra args go to cargo-mutants, e.g. `scripts/mutants.sh execute -- --re 'breaker.rs'`
#   (only the mutants whose names match), `-- --list` (count them, build nothing).
#   A run replaces $MUTANTS_OUT/MODULE unless MUTANTS_RESUME=1: then what an earlier run
#   caught or found unviable is kept and only the rest is tested again (after adding tests);
#   what it found under names that no longer exist (the lines moved) is dropped first.
#   MUTANTS_THIRD=0 skips execute's third pass (below), e.g. when `--re` names other mutants.
#
# The tests per module: toolwright-core's unit tests (`--lib`) and the modules of the root crate's
# integration tests (`--test it`) named in `tests_of` below, run by name (`guard_order::`); never
# the trybuild suite (tests/macro_ui.rs) or the browser test, and no test with `soak` in its name
# (minutes each: tests/it/conversation_store.rs's two replicas and a Redis restart). Two passes:
# every mutant against the unit tests, then what they missed against the integration tests (and,
# for execute, a third: classify.rs's reqwest half against fault-fixtures/tests/it/faults.rs).
# Debug impls are not mutated (see `mutants` below).
#
# Output: $MUTANTS_OUT/MODULE/summary.txt (counts and score, every survivor listed; a timeout
# is not counted as caught), MODULE/{caught,missed,timeout,unviable}.txt over all passes, and
# cargo-mutants' own MODULE/{unit,full,third}/mutants.out/ per pass (a log per mutant).
# Directories (defaults under target/mutants/): MUTANTS_TARGET, the target dir, never another
# build's; MUTANTS_WORK, the mutated copy; MUTANTS_OUT, the results.
#
# How: the tree is copied (with file times, so unchanged files are not rebuilt) to one stable
# directory, $MUTANTS_WORK, and mutated in place there: the target dir keeps its builds between
# runs, and the worktree stays free to edit while a run goes on (build it into another target
# dir: cargo gives both trees' artifacts the same names). The unmutated tests run first
# there (a failing baseline would make every mutant look caught). In place means one build at a
# time, which is what a shared machine can spare anyway. Needs cargo-mutants (`cargo install
# cargo-mutants`, 27.x) and, for guard and idempotency, redis-server.
#
# How long, on this project's shared 2-core machine: the first run builds the workspace's test
# targets once (3 to 5 min); then a mutant takes 2 to 5 s against the unit tests and 5 to 20 s
# against the integration tests (an incremental build of toolwright-core and toolwright, then
# linking the test binaries). Measured whole runs are in docs/mutants.md.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

# A target dir of its own: a build of the worktree into the same dir would overwrite the
# mutated build between its build and its test (cargo names the artifacts of both trees alike).
export CARGO_TARGET_DIR=${MUTANTS_TARGET:-$root/target/mutants/target}
work=${MUTANTS_WORK:-$root/target/mutants/src}
out=${MUTANTS_OUT:-$root/target/mutants/out}
# MUTANTS_RESUME=1: keep what an earlier run of the module found and test only the rest.
resume=${MUTANTS_RESUME:-0}
# MUTANTS_THIRD=0: no third pass (and no build of its package), for a `--re` that selects none
# of the mutants it is for (cargo-mutants ORs the pass's `--re` with yours).
third=${MUTANTS_THIRD:-1}
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

# Per module: files to mutate, integration tests (modules of the root crate's `it`) and cargo
# features.
files_of() {
  case $1 in
    guard) echo "tool-core/src/approval.rs tool-core/src/provenance.rs" ;;
    execute) echo "tool-core/src/execute/*.rs" ;;
    idempotency) echo "tool-core/src/idempotency/*.rs" ;;
    validate) echo "tool-core/src/validate/*.rs tool-core/src/repair/*.rs" ;;
    *) echo "unknown module $1 (guard, execute, idempotency, validate)" >&2; exit 2 ;;
  esac
}
tests_of() {
  case $1 in
    guard) echo "guard_approval guard_provenance guard_promises guard_order conversation_store" ;;
    # idempotency_promises: the key's hold is the execution seam's deadline.
    # registry_tool_forms: sync tools on the blocking pool (blocking.rs), a panicking one contained;
    # observe_promises: the contained panic's event and message.
    # outcome_database_errors: classify.rs's rusqlite half, on a real SQLite database.
    execute) echo "execute_breaker execute_breaker_promises execute_attempts execute_fallback execute_fallback_promises idempotency_promises registry_tool_forms observe_promises outcome_database_errors" ;;
    idempotency) echo "idempotency_store idempotency_pipeline idempotency_promises idempotency_fingerprint_props" ;;
    # registry_dynamic_tools: a tool defined at run time checks every call with the shape validator.
    validate) echo "repair_pass repair_deterministic repair_promises guard_exactness validate_exact_bounds registry_data_types registry_schema registry_dynamic_tools" ;;
  esac
}
features_of() {
  case $1 in
    idempotency | guard) echo "redis" ;;
    # classify.rs's rusqlite half is compiled only with the feature.
    execute) echo "rusqlite" ;;
    *) echo "" ;;
  esac
}
# A third pass where another package's tests exercise part of a module: the package, the module
# of its `it` test binary, and a regex of the mutants it is for. classify.rs's reqwest half
# (behind the `reqwest` feature) is tested against real misbehaving HTTP servers in
# fault-fixtures.
third_pass_of() {
  case $1 in
    execute) echo "toolwright-fault-fixtures faults reqwest_support" ;;
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
# The copy keeps file times, so crates that did not change are not rebuilt; but the target dir's
# last build may be of the last mutant of an earlier run, and the copy gives the mutated file its
# older time back, which cargo would take for that build's source. Touching the core's sources
# makes every run's first build (the baseline's) the unmutated code.
find "$work/tool-core/src" -name '*.rs' -exec touch {} +

listing=false
for a in "${extra[@]}"; do [[ $a == --list ]] && listing=true; done

# cargo mutants: `mutants OUT-DIR TEST-PACKAGES "FILE..." CARGO-ARGS... -- MORE-ARGS`; the tests
# run are those whose names match one of `pass_filters` (all when it is empty).
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
    "${feature_args[@]}" "${args[@]}" "${file_args[@]}" --exclude-re 'impl (std::)?(fmt::)?Debug for' \
    --baseline skip --timeout 30 --build-timeout 600 -o "$dir" "$@" "${extra[@]}" \
    -- -- --skip soak "${pass_filters[@]}") || status=$?
  # cargo-mutants exits 2 when a mutant was missed and 3 on a timeout: results, not failures.
  case $status in 0 | 2 | 3) ;; *) exit "$status" ;; esac
}

count() { if [[ -f $1 ]]; then grep -c . "$1" || true; else echo 0; fi; }

# The names of the module's mutants as the code stands now, whatever the filter: a resumed run
# forgets what an earlier one found under names that no longer exist (lines moved since), so
# its counts and survivors are of today's mutants only (those are tested again).
current_names() {
  local file_args=()
  for f in $files; do file_args+=("--file=$f"); done
  (cd "$work" && cargo mutants --list -p toolwright-core "${file_args[@]}" \
    --exclude-re 'impl (std::)?(fmt::)?Debug for')
}

# What every pass found, in $out/$module/{caught,unviable,missed,timeout}.txt: after pass $1
# (a mutants.out), what it caught or found unviable joins those lists; what it missed or timed
# out on is a survivor. A hang stays a hang until a pass catches the mutant: the integration
# pass runs no unit test, so its "missed" must not replace the unit pass's timeout.
settle() {
  local pass=$1 kind
  cat "$pass"/{caught,unviable}.txt >"$out/$module/settled.txt" 2>/dev/null || true
  cat "$pass"/{caught,unviable,missed,timeout}.txt >"$out/$module/seen.txt" 2>/dev/null || true
  for kind in caught unviable timeout missed; do
    touch "$out/$module/$kind.txt"
    { case $kind in
        timeout) grep -vxF -f "$out/$module/settled.txt" "$out/$module/$kind.txt" || true ;;
        missed) grep -vxF -f "$out/$module/seen.txt" "$out/$module/$kind.txt" || true ;;
        *) cat "$out/$module/$kind.txt" ;;
      esac
      cat "$pass/$kind.txt" 2>/dev/null || true; } | sort -u >"$out/$module/$kind.next"
    mv "$out/$module/$kind.next" "$out/$module/$kind.txt"
  done
  { grep -vxF -f "$out/$module/timeout.txt" "$out/$module/missed.txt" || true; } >"$out/$module/missed.next"
  mv "$out/$module/missed.next" "$out/$module/missed.txt"
  rm "$out/$module/seen.txt" "$out/$module/settled.txt"
}

# Before a pass in DIR: everything caught or found unviable so far is skipped (`--iterate`
# reads it from DIR/mutants.out).
prime() {
  rm -rf "$1/mutants.out" "$1/mutants.out.old"
  mkdir -p "$1/mutants.out"
  cat "$out/$module/caught.txt" "$out/$module/unviable.txt" >"$1/mutants.out/previously_caught.txt"
}

for module in "${modules[@]}"; do
  cargo_args=(--lib --test=it)
  # The integration tests' names start with their module's: `guard_order::..`.
  filters=()
  for t in $(tests_of "$module"); do filters+=("$t::"); done
  feature_args=()
  for f in $(features_of "$module"); do feature_args+=("--features=$f"); done
  files=$(files_of "$module")
  read -r third_package third_tests third_re <<<"$(third_pass_of "$module")"
  [[ $third == 1 ]] || third_package=""

  pass_filters=()
  if $listing; then
    mutants "$out/$module/list" toolwright-core "$files" --lib --
    continue
  fi
  echo "== $module: baseline (unmutated tests)"
  (cd "$work" && cargo test -p toolwright-core -p toolwright "${feature_args[@]}" --lib -q -- --skip soak)
  (cd "$work" && cargo test -p toolwright "${feature_args[@]}" --test=it -q -- --skip soak "${filters[@]}")
  if [[ -n $third_package ]]; then
    (cd "$work" && cargo test -p "$third_package" --test=it -q -- --skip soak "$third_tests::")
  fi
  start=$(date +%s)
  [[ $resume == 1 ]] || rm -rf "${out:?}/$module"
  mkdir -p "$out/$module"
  touch "$out/$module"/{caught,unviable,missed,timeout}.txt
  if [[ $resume == 1 ]]; then
    current_names >"$out/$module/current.txt"
    for kind in caught unviable missed timeout; do
      { grep -xF -f "$out/$module/current.txt" "$out/$module/$kind.txt" || true; } \
        >"$out/$module/$kind.next"
      mv "$out/$module/$kind.next" "$out/$module/$kind.txt"
    done
  fi
  # Two passes. A mutant toolwright-core's unit tests catch costs one build of its test
  # harness (2 to 5 s); only what they miss is built with the integration tests (5 to 20 s).
  echo "== $module: against toolwright-core's unit tests"
  prime "$out/$module/unit"
  mutants "$out/$module/unit" toolwright-core "$files" --lib -- --iterate
  settle "$out/$module/unit/mutants.out"
  echo "== $module: what they missed, against the integration tests"
  prime "$out/$module/full"
  pass_filters=("${filters[@]}")
  mutants "$out/$module/full" toolwright-core,toolwright "$files" "${cargo_args[@]:1}" -- --iterate
  settle "$out/$module/full/mutants.out"
  if [[ -n $third_package ]]; then
    echo "== $module: what is still missed of /$third_re/, against $third_package's $third_tests"
    prime "$out/$module/third"
    pass_filters=("$third_tests::")
    mutants "$out/$module/third" "$third_package" "$files" --test=it -- --iterate \
      --re "$third_re"
    settle "$out/$module/third/mutants.out"
  fi
  seconds=$(($(date +%s) - start))
  caught=$(count "$out/$module/caught.txt")
  unviable=$(count "$out/$module/unviable.txt")
  missed=$(count "$out/$module/missed.txt")
  timeout=$(count "$out/$module/timeout.txt")
  viable=$((caught + missed + timeout))
  summary="$module: $((viable + unviable)) mutants, $caught caught, $missed missed, $timeout timeouts, $unviable unviable; $((viable ? 100 * caught / viable : 100))% of viable caught; ${seconds} s"
  echo "$summary" | tee "$out/$module/summary.txt"
  for kind in missed timeout; do
    sed "s/^/  $kind: /" "$out/$module/$kind.txt" | tee -a "$out/$module/summary.txt"
  done
done
