//! The idempotency stage of a side-effecting call: begin its key before anything acts, settle
//! it once the call is over.

use std::sync::Arc;
use std::time::Duration;

use super::{
    Begin, Disposition, Fingerprint, IdempotencyKey, IdempotencyStore, Lease, MemoryStore, Prior,
    Settled, StoreError, StoredOutcome,
};
use crate::error::ToolError;
use crate::outcome::Outcome;

/// How much longer than a call's whole deadline its idempotency lock lasts: room for the clock
/// reads and the store's own round trips around the attempts (and for the breaker's permit
/// between the key's begin and the first attempt).
const LOCK_SLACK: Duration = Duration::from_secs(5);

/// Begins a side-effecting call under its key: the lease to run under, or the outcome to answer
/// instead (a replay, `duplicate_in_flight`, `idempotency_mismatch`, or `unavailable` when the
/// store cannot answer). `hold` is how long the call may take from here: its deadline, and the
/// approval it may wait for.
pub(crate) async fn begin(
    store: &dyn IdempotencyStore,
    key: IdempotencyKey,
    fingerprint: Fingerprint,
    (call_id, tool): (&str, &Arc<str>),
    hold: Duration,
) -> Result<Lease, Outcome> {
    let begun = store.begin(&key, &fingerprint, lock_ttl(hold)).await;
    leased(begun, (call_id, tool))
}

/// [`begin`] on the in-memory store, which answers at once: no future to box and poll.
pub(crate) fn begin_now(
    store: &MemoryStore,
    key: IdempotencyKey,
    fingerprint: Fingerprint,
    (call_id, tool): (&str, &Arc<str>),
    hold: Duration,
) -> Result<Lease, Outcome> {
    let begun = store.begin_now(&key, &fingerprint, lock_ttl(hold));
    leased(Ok(begun), (call_id, tool))
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
fn leased(
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
/// goes to the model.
pub(crate) async fn settle(
    store: &dyn IdempotencyStore,
    lease: Lease,
    outcome: &Outcome,
    uncertain: bool,
) {
    let settled = match settlement(outcome, uncertain) {
        Disposition::Complete => {
            store
                .complete(&lease, StoredOutcome::from_outcome(outcome))
                .await
        }
        Disposition::Release => store.release(&lease).await,
        Disposition::UnknownEffect => store.record_unknown_effect(&lease).await,
    };
    logged(settled, outcome.tool(), &lease);
}

/// [`settle`] on the in-memory store, which answers at once.
pub(crate) fn settle_now(store: &MemoryStore, lease: Lease, outcome: &Outcome, uncertain: bool) {
    let settled = match settlement(outcome, uncertain) {
        Disposition::Complete => store.complete_now(&lease, StoredOutcome::from_outcome(outcome)),
        Disposition::Release => store.release_now(&lease),
        Disposition::UnknownEffect => store.record_unknown_effect_now(&lease),
    };
    logged(Ok(settled), outcome.tool(), &lease);
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
fn logged(settled: Result<Settled, StoreError>, tool: &str, lease: &Lease) {
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
