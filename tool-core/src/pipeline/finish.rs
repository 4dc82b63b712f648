//! How every call ends: its outcome built ([`conclude`], or [`reject`] and
//! [`answer_from_store`] for one that never ran), then [`finalize`]: the ids it returned
//! remembered, the recovery budget, stats, the log, the quarantine.

use std::collections::HashMap;
use std::sync::Arc;

use tokio::time::Instant;

use super::state::{Call, Pipeline};
use crate::conversation::recovery;
use crate::execute::fallback::Interpreted;
use crate::execute::Executed;
use crate::idempotency::IdempotencyKey;
use crate::observe::{self, ToolStats};
use crate::outcome::{ErrorKind, Failure, Marks, Outcome};
use crate::provenance::{self, Finders};
use crate::session::Session;
use crate::tool::spec::ToolSpec;
use crate::validate as checks;

/// A call refused before anything ran: a validation or guard failure.
#[cold]
pub(super) fn reject(
    (spec, stats): (&ToolSpec, &ToolStats),
    call: Call,
    mut failure: Failure,
    session: &Session,
    pipeline: &Pipeline,
) -> Outcome {
    // No `#[arg(sensitive)]` value is quoted back to the model.
    checks::redact_failure(&mut failure, spec.fields(), &call.arguments);
    let mut outcome = Outcome::failed(call.id, Arc::clone(&spec.name), failure);
    outcome.attempts = 1;
    outcome.elapsed = call.arrived.elapsed();
    finalize(
        Some((spec, stats)),
        outcome,
        call.arguments,
        None,
        session,
        pipeline,
    )
}

/// A call the idempotency store answered: a replay, or a refusal (`duplicate_in_flight`,
/// `idempotency_mismatch`, the store unreachable).
#[cold]
pub(super) fn answer_from_store(
    tool: (&ToolSpec, &ToolStats),
    call: Call,
    mut outcome: Outcome,
    session: &Session,
    pipeline: &Pipeline,
) -> Outcome {
    outcome.elapsed = call.arrived.elapsed();
    finalize(Some(tool), outcome, call.arguments, None, session, pipeline)
}

/// The interpretation seam's result as the call's outcome: its data or failure, its attempts,
/// and how long it took. `degraded`: the fallback answered, for this failure.
pub(super) fn conclude(
    spec: &ToolSpec,
    id: String,
    arrived: Instant,
    executed: Executed<Interpreted>,
    degraded: Option<ErrorKind>,
) -> Outcome {
    let Executed {
        result,
        mut history,
        stop,
        open_since,
        ..
    } = executed;
    let name = Arc::clone(&spec.name);
    let mut outcome = match result {
        Ok((status, data)) => Outcome::success(id, name, status, data),
        Err(failure) => Outcome::failed_boxed(id, name, failure),
    };
    let finished = Instant::now();
    if let Some(begin) = open_since {
        history.close(finished.saturating_duration_since(begin));
    }
    outcome.attempts = u16::try_from(history.as_slice().len()).unwrap_or(u16::MAX);
    outcome.history = history.into_kept();
    outcome.retry_stop = stop;
    outcome.elapsed = finished.saturating_duration_since(arrived);
    if outcome.failure.is_none() {
        outcome.degraded = degraded;
        if spec.returns_content && degraded.is_none() {
            outcome.marks.set(Marks::CONTENT);
        }
    }
    outcome
}

/// The one end of every call: the ids a successful result carries are remembered, the model's
/// recovery budget counts the outcome, the tool's stats count it, the call is logged, a call
/// that failed validation is quarantined, and a failed call keeps its raw arguments (never in
/// the envelope, never logged).
pub(crate) fn finalize(
    tool: Option<(&ToolSpec, &ToolStats)>,
    mut outcome: Outcome,
    arguments: String,
    key: Option<&IdempotencyKey>,
    session: &Session,
    pipeline: &Pipeline,
) -> Outcome {
    let spec = tool.map(|(spec, _)| spec);
    // A model retry: this success clears failures of the tool the conversation remembered.
    let mut model_retry = false;
    if let Some(memory) = session.memory() {
        if let (Some(spec), Some(data)) = (spec, outcome.data.as_deref()) {
            if !spec.grounds().is_empty() && outcome.is_ok() {
                let kinds = provenance::remember(spec.grounds(), data, memory);
                session.note_grounded(spec.name(), &kinds);
            }
        }
        model_retry = recovery::apply(&pipeline.recovery, memory, &mut outcome);
    }
    match tool {
        Some((spec, stats)) => {
            stats.record(&outcome, model_retry);
            if outcome.failure.is_some() {
                pipeline.quarantine.keep(spec, &outcome, &arguments);
            }
        }
        None => {
            pipeline
                .unknown_calls
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
    }
    observe::call(&outcome, key, Some(&arguments), spec, pipeline.argument_log);
    if outcome.failure.is_some() && !outcome.is_replayed() {
        outcome.raw_arguments = Some(arguments);
    }
    outcome
}

/// The default of [`Pipeline::finders`]: every kind a tool grounds, and the tools that do.
pub(crate) fn finders(specs: &[ToolSpec]) -> Finders {
    let mut finders: HashMap<&'static str, Vec<Arc<str>>> = HashMap::new();
    for spec in specs {
        for grounds in spec.grounds() {
            let tools = finders.entry(grounds.kind()).or_default();
            if !tools.contains(&spec.name) {
                tools.push(Arc::clone(&spec.name));
            }
        }
    }
    finders
}
