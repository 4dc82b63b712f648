//! The idempotency stage of a side-effecting call: its key begun before anything acts (a call
//! that already ran under it is answered from the store), settled once the call is over.
//!
//! Each step is one function with the in-memory store's fast path inside it: that store
//! answers at once, so the step returns its answer ([`Step::Ready`]) and the call awaits
//! nothing; any other store's answer is a future ([`Step::Waiting`]), boxed so the call's own
//! future holds none of its state.

use std::sync::Arc;
use std::time::Duration;

use super::state::{Call, Pipeline};
use crate::error::ToolError;
use crate::execute::Bounds;
use crate::idempotency::{
    Begin, Disposition, Fingerprint, IdempotencyKey, Lease, Prior, Settled, StoreError,
    StoredOutcome,
};
use crate::outcome::Outcome;
use crate::runtime::BoxFuture;
use crate::session::Session;
use crate::tool::spec::ToolSpec;

/// How much longer than a call's whole deadline its idempotency lock lasts: room for the clock
/// reads and the store's own round trips around the attempts (and for the breaker's permit
/// between the key's begin and the first attempt).
const LOCK_SLACK: Duration = Duration::from_secs(5);

/// A step's answer: at once, or a future to await.
pub(super) enum Step<'a, T> {
    Ready(T),
    Waiting(BoxFuture<'a, T>),
}

/// Begins a side-effecting call under its key: the lease to run under, or the outcome to answer
/// instead (a replay, `duplicate_in_flight`, `idempotency_mismatch`, or `unavailable` when the
/// store cannot answer). The key is held for as long as the call may take from here: its
/// deadline, and the approval it may wait for.
pub(super) fn begin<'a>(
    spec: &'a ToolSpec,
    bounds: &Bounds,
    call: &'a Call,
    session: &Session,
    pipeline: &'a Pipeline,
) -> Step<'a, Result<Lease, Outcome>> {
    let (key, fingerprint, hold) = key_of(spec, bounds, call, session, pipeline);
    let ttl = lock_ttl(hold);
    match &pipeline.memory {
        Some(memory) => {
            let begun = memory.begin_now(&key, &fingerprint, ttl);
            Step::Ready(lease_from(Ok(begun), (&call.id, &spec.name)))
        }
        None => Step::Waiting(Box::pin(async move {
            let begun = pipeline.store.begin(&key, &fingerprint, ttl).await;
            lease_from(begun, (&call.id, &spec.name))
        })),
    }
}

/// A side-effecting call's key in the session's mode and scope, the fingerprint of its
/// arguments, and how long the key is held: the call's whole deadline, and its approval when it
/// needs one.
fn key_of(
    spec: &ToolSpec,
    bounds: &Bounds,
    call: &Call,
    session: &Session,
    pipeline: &Pipeline,
) -> (IdempotencyKey, Fingerprint, Duration) {
    let mode = session.key_mode().unwrap_or(pipeline.key_mode);
    let fingerprint = Fingerprint::for_tool(spec, &call.arguments);
    let key = mode.key(&session.call_scope(), spec.name(), &call.id, &fingerprint);
    let mut hold = bounds.deadline();
    if spec.requires_approval() {
        hold += pipeline.approval_timeout;
    }
    (key, fingerprint, hold)
}

/// How long a call's lock lasts: as long as the call can (every attempt, every wait, the
/// approval), and no longer. A slow call is never taken over while it runs, a duplicate's
/// `retry_after_ms` (the lock's remaining time) says when the running call must be over, and a
/// key whose call vanished (a crash, a dropped future) is free again as soon as that call would
/// have ended.
fn lock_ttl(hold: Duration) -> Duration {
    hold.saturating_add(LOCK_SLACK)
}

/// The store's answer to a begin, as the lease to run under or the outcome to answer instead.
fn lease_from(
    begun: Result<Begin, StoreError>,
    (call_id, tool): (&str, &Arc<str>),
) -> Result<Lease, Outcome> {
    let lease = match begun {
        Ok(begin) => begin.into_lease(call_id, tool)?,
        // Fail closed: without the record the framework cannot tell a retry from a new action.
        // The tool did not fail, so its breaker never hears of it.
        Err(e) => {
            return Err(Outcome::failed(
                call_id.to_owned(),
                Arc::clone(tool),
                ToolError::from(e).into_failure(),
            ))
        }
    };
    if lease.prior() != Prior::Fresh {
        tracing::info!(
            target: "toolwright::idempotency",
            tool = %tool,
            key = %lease.key(),
            prior = ?lease.prior(),
            unknown_effects = lease.unknown_effects(),
            "an earlier call under this key ended with its effect unknown; going downstream again with the same key"
        );
    }
    Ok(lease)
}

/// Settles a finished call once. `uncertain`: some attempt may have acted, so a call that ends
/// refused (a conflict, an open breaker, a refused approval never gets here) records an unknown
/// effect rather than forgetting it. A store failure is only logged: the real outcome still
/// goes to the model. `None`: settled already (the in-memory store).
pub(super) fn settle<'a>(
    pipeline: &'a Pipeline,
    lease: Lease,
    outcome: &'a Outcome,
    uncertain: bool,
) -> Option<BoxFuture<'a, ()>> {
    let disposition = settlement(outcome, uncertain);
    if let Some(memory) = &pipeline.memory {
        let settled = match disposition {
            Disposition::Complete => {
                memory.complete_now(&lease, StoredOutcome::from_outcome(outcome))
            }
            Disposition::Release => memory.release_now(&lease),
            Disposition::UnknownEffect => memory.record_unknown_effect_now(&lease),
        };
        log_unrecorded(Ok(settled), outcome.tool(), &lease);
        return None;
    }
    Some(Box::pin(async move {
        let store = &*pipeline.store;
        let settled = match disposition {
            Disposition::Complete => {
                store
                    .complete(&lease, StoredOutcome::from_outcome(outcome))
                    .await
            }
            Disposition::Release => store.release(&lease).await,
            Disposition::UnknownEffect => store.record_unknown_effect(&lease).await,
        };
        log_unrecorded(settled, outcome.tool(), &lease);
    }))
}

/// How a finished call settles its key: as [`Disposition::of`] says for a call that never
/// started, except that a release becomes an unknown effect when some attempt may have acted.
fn settlement(outcome: &Outcome, uncertain: bool) -> Disposition {
    match Disposition::of(outcome, true) {
        Disposition::Release if uncertain => Disposition::UnknownEffect,
        disposition => disposition,
    }
}

/// Logs a settlement that did not record the outcome.
fn log_unrecorded(settled: Result<Settled, StoreError>, tool: &str, lease: &Lease) {
    match settled {
        Ok(Settled::Recorded) => {}
        Ok(Settled::LeaseLost) => tracing::warn!(
            target: "toolwright::idempotency",
            tool,
            key = %lease.key(),
            "the call outlived its idempotency lock and another call took the key over; its outcome was not recorded"
        ),
        Err(e) => tracing::warn!(
            target: "toolwright::idempotency",
            tool,
            key = %lease.key(),
            error = %e,
            "the outcome could not be recorded in the idempotency store; the key's lock will expire"
        ),
    }
}
