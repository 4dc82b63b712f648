//! Repeated calls: the same tool with the same arguments, made again within a run. Past a
//! threshold the call does not run, and the model is told it already has that answer, or that
//! the call keeps failing. A model in a loop otherwise spends its steps (and the tools' quota)
//! asking the same question, and the step cap stops it only once every step is spent.
//!
//! Two calls are the same when their fingerprints are: the canonical form of the arguments the
//! idempotency key uses ([`Fingerprint::for_tool`]), so `{"a":1,"b":2}` and `{ "b": 2, "a": 1 }`
//! are one call.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use toolwright_core::idempotency::Fingerprint;
use toolwright_core::{ErrorKind, Outcome, Registry, Seam, Status, ToolCall};

/// Identical calls that run in a run by default: 3. A 4th is answered from the record.
///
/// ```
/// use toolwright::agent::{RepeatedCalls, DEFAULT_MAX_IDENTICAL_CALLS};
///
/// assert_eq!(RepeatedCalls::new(), RepeatedCalls::new().max_identical(DEFAULT_MAX_IDENTICAL_CALLS));
/// ```
pub const DEFAULT_MAX_IDENTICAL_CALLS: u32 = 3;

/// Identical calls that may fail in a row by default: 2. A 3rd is not run.
///
/// ```
/// use toolwright::agent::{RepeatedCalls, DEFAULT_MAX_IDENTICAL_FAILURES};
///
/// let same = RepeatedCalls::new().max_failures_in_a_row(DEFAULT_MAX_IDENTICAL_FAILURES);
/// assert_eq!(same, RepeatedCalls::new());
/// ```
pub const DEFAULT_MAX_IDENTICAL_FAILURES: u32 = 2;

/// Distinct calls a run remembers for [`RepeatedCalls`]: 64, the most recently made. A call
/// older than the 64 distinct calls made since is counted afresh; the record of a kept run
/// stays a few kilobytes however long it runs.
///
/// ```
/// assert_eq!(toolwright::agent::REPEAT_RECORD_CAP, 64);
/// ```
pub const REPEAT_RECORD_CAP: usize = 64;

/// When a call made again with the same arguments is not run. Set it with
/// [`AgentBuilder::repeated_calls`](crate::AgentBuilder::repeated_calls); on by default.
///
/// - **After [`max_identical`](Self::max_identical) identical calls ran** (default
///   [`DEFAULT_MAX_IDENTICAL_CALLS`], 3), the next one does not run. When the last one
///   succeeded and the tool is `read_only`, the model gets that earlier outcome again, answered
///   from the run's own record with `"replayed": true` in its envelope, as an idempotency
///   replay says it. For any other tool it gets a `conflict` error, not retryable, saying the
///   call already ran that many times and its result is in the conversation (the error
///   contract reads `conflict` as "the action already happened: do not repeat it").
/// - **After [`max_failures_in_a_row`](Self::max_failures_in_a_row) identical calls failed in
///   a row** (default [`DEFAULT_MAX_IDENTICAL_FAILURES`], 2), the next one does not run: it
///   gets the same `error_type` as the last failure, `retryable: false`, and a message saying
///   the call keeps failing and to change the arguments, use another tool, or tell the user.
///   Failures of the validation seam (arguments the tool never saw) are left to the
///   conversation's recovery budget, which already ends a run that repeats them.
///
/// The record is bounded: [`REPEAT_RECORD_CAP`] distinct calls. It belongs to the run, so a
/// run resumed after approval or a crash ([`Agent::resume_kept`](crate::Agent::resume_kept))
/// keeps counting.
///
/// ```
/// use toolwright::agent::{Agent, RepeatedCalls, ScriptedModel};
/// use toolwright::Registry;
///
/// let agent = Agent::builder(ScriptedModel::new([]), Registry::builder().build().unwrap())
///     .repeated_calls(RepeatedCalls::new().max_identical(5).max_failures_in_a_row(1))
///     .build()
///     .unwrap();
/// # let _ = agent;
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RepeatedCalls {
    identical: Option<u32>,
    failures: Option<u32>,
}

impl Default for RepeatedCalls {
    fn default() -> Self {
        RepeatedCalls::new()
    }
}

impl RepeatedCalls {
    /// The defaults: 3 identical calls, 2 identical failures in a row.
    pub const fn new() -> Self {
        RepeatedCalls {
            identical: Some(DEFAULT_MAX_IDENTICAL_CALLS),
            failures: Some(DEFAULT_MAX_IDENTICAL_FAILURES),
        }
    }

    /// Every repeat runs (the loop's other limits still apply).
    pub const fn off() -> Self {
        RepeatedCalls {
            identical: None,
            failures: None,
        }
    }

    /// Identical calls that run in one run (at least 1).
    pub const fn max_identical(mut self, calls: u32) -> Self {
        self.identical = Some(if calls == 0 { 1 } else { calls });
        self
    }

    /// Identical calls that may fail in a row before the next is not run (at least 1).
    pub const fn max_failures_in_a_row(mut self, failures: u32) -> Self {
        self.failures = Some(if failures == 0 { 1 } else { failures });
        self
    }
}

/// What the run remembers of one distinct call.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Seen {
    /// The fingerprint, as 64 hex digits.
    fingerprint: String,
    /// Times it ran.
    ran: u32,
    /// Times in a row it failed (outside the validation seam).
    failed: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    last_error: Option<ErrorKind>,
    /// Where its last successful outcome is, for a read-only tool: the index of its step and
    /// its call id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    answer: Option<(usize, String)>,
}

/// The repeat record of a run, most recently made last.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub(crate) struct Repeats(Vec<Seen>);

/// What to do with a call.
pub(crate) enum Verdict {
    /// Run it.
    Run,
    /// Answer it with this outcome instead.
    Answer(Outcome),
}

fn fingerprint(registry: &Registry, call: &ToolCall) -> String {
    match registry.spec(call.name()) {
        Some(spec) => Fingerprint::for_tool(spec, call.arguments()),
        None => Fingerprint::of(call.name(), call.arguments()),
    }
    .to_string()
}

impl Repeats {
    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether `call` runs under `policy`, or the outcome it gets instead. `in_turn` counts the
    /// calls of this turn that run before it, by fingerprint (a call that runs is counted);
    /// `earlier` finds a recorded outcome by its step index and call id.
    pub(crate) fn verdict<'o>(
        &self,
        policy: RepeatedCalls,
        registry: &Registry,
        call: &ToolCall,
        in_turn: &mut HashMap<String, u32>,
        earlier: impl Fn(usize, &str) -> Option<&'o Outcome>,
    ) -> Verdict {
        if policy == RepeatedCalls::off() {
            return Verdict::Run;
        }
        let print = fingerprint(registry, call);
        let same_turn = in_turn.get(&print).copied().unwrap_or(0);
        let seen = self.0.iter().find(|s| s.fingerprint == print);
        let verdict = Self::judge(policy, call, seen, same_turn, earlier);
        if matches!(verdict, Verdict::Run) {
            let made = in_turn.entry(print).or_insert(0);
            *made = made.saturating_add(1);
        }
        verdict
    }

    /// [`Repeats::verdict`] for a call seen before as `seen`, made `same_turn` times already
    /// in this turn.
    fn judge<'o>(
        policy: RepeatedCalls,
        call: &ToolCall,
        seen: Option<&Seen>,
        same_turn: u32,
        earlier: impl Fn(usize, &str) -> Option<&'o Outcome>,
    ) -> Verdict {
        let ran = seen.map_or(0, |s| s.ran).saturating_add(same_turn);
        let Some(seen) = seen else {
            return match policy.identical {
                Some(max) if ran >= max => Verdict::Answer(Outcome::refused(
                    call.id(),
                    call.name(),
                    ErrorKind::Conflict,
                    format!(
                        "this call did not run: the same call (`{}` with the same arguments) is made {} times in this turn already; use one call's result",
                        call.name(),
                        ran
                    ),
                )),
                _ => Verdict::Run,
            };
        };
        if let (Some(max), Some(kind)) = (policy.failures, seen.last_error) {
            if seen.failed >= max {
                let message = format!(
                    "this call did not run: the same call (`{}` with the same arguments) failed {} times in a row ({kind}), and making it again will not help; change the arguments, use another tool, or tell the user it failed",
                    call.name(),
                    seen.failed
                );
                let refused = Outcome::refused(call.id(), call.name(), kind, message);
                return Verdict::Answer(not_retryable(refused));
            }
        }
        match policy.identical {
            Some(max) if ran >= max => {}
            _ => return Verdict::Run,
        }
        let replayed = seen
            .answer
            .as_ref()
            .and_then(|(step, id)| earlier(*step, id))
            .and_then(|outcome| replay(outcome, call.id()));
        Verdict::Answer(replayed.unwrap_or_else(|| {
            Outcome::refused(
                call.id(),
                call.name(),
                ErrorKind::Conflict,
                format!(
                    "this call did not run: the same call (`{}` with the same arguments) already ran {} times in this run, and its result is in the conversation above; use that result, or change the arguments",
                    call.name(),
                    ran
                ),
            )
        }))
    }

    /// Counts a call that ran, in step `step` (an index), and what it came to.
    pub(crate) fn record(
        &mut self,
        registry: &Registry,
        step: usize,
        call: &ToolCall,
        outcome: &Outcome,
    ) {
        // A call waiting for approval has not run yet; one the validation seam refused never
        // reached the tool, and the recovery budget counts it.
        if outcome.status() == Status::Pending || outcome.seam() == Some(Seam::Validation) {
            return;
        }
        let print = fingerprint(registry, call);
        let mut seen = match self.0.iter().position(|s| s.fingerprint == print) {
            Some(at) => self.0.remove(at),
            None => Seen {
                fingerprint: print,
                ran: 0,
                failed: 0,
                last_error: None,
                answer: None,
            },
        };
        seen.ran = seen.ran.saturating_add(1);
        match outcome.error_kind() {
            None => {
                seen.failed = 0;
                seen.last_error = None;
                let read_only = registry.spec(call.name()).is_some_and(|s| s.read_only());
                seen.answer = read_only.then(|| (step, outcome.call_id().to_owned()));
            }
            Some(kind) => {
                seen.failed = seen.failed.saturating_add(1);
                seen.last_error = Some(kind);
                seen.answer = None;
            }
        }
        self.0.push(seen);
        if self.0.len() > REPEAT_RECORD_CAP {
            let over = self.0.len() - REPEAT_RECORD_CAP;
            self.0.drain(..over);
        }
    }
}

/// The outcome as its written form (a stable, documented record of every field) edited:
/// `Outcome` has no setter for these, and the agent's answers must read exactly as the
/// registry's do.
fn rewrite(outcome: &Outcome, edit: impl FnOnce(&mut Map<String, Value>)) -> Option<Outcome> {
    let mut value = serde_json::to_value(outcome).ok()?;
    edit(value.as_object_mut()?);
    serde_json::from_value(value).ok()
}

/// A refusal that tells the model not to make the call again, whatever its kind's default.
pub(crate) fn not_retryable(outcome: Outcome) -> Outcome {
    rewrite(&outcome, |record| {
        if let Some(failure) = record.get_mut("failure").and_then(Value::as_object_mut) {
            failure.insert("retryable".into(), Value::Bool(false));
        }
    })
    .unwrap_or(outcome)
}

/// An earlier outcome given again to call `call_id`, marked replayed: nothing ran.
fn replay(earlier: &Outcome, call_id: &str) -> Option<Outcome> {
    rewrite(earlier, |record| {
        record.insert("call_id".into(), Value::from(call_id));
        record.insert("replayed".into(), Value::Bool(true));
        record.insert("attempts".into(), Value::from(0));
        record.insert("elapsed_us".into(), Value::from(0));
        record.remove("history");
        record.remove("raw_arguments");
    })
}
