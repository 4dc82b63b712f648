//! The idempotency stage of a side-effecting call: begin its key before anything acts, settle
//! it once the call is over.

use std::sync::Arc;
use std::time::Duration;

use super::{
    Disposition, Fingerprint, IdempotencyKey, IdempotencyStore, Lease, Prior, Settled,
    StoredOutcome,
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
    // The lock lasts as long as the call can (every attempt, every wait, the approval), and no
    // longer: a slow call is never taken over while it runs, a duplicate's `retry_after_ms`
    // (the lock's remaining time) says when the running call must be over, and a key whose
    // call vanished (a crash, a dropped future) is free again as soon as that call would have
    // ended.
    let lock_ttl = hold.saturating_add(LOCK_SLACK);
    let lease = match store.begin(&key, &fingerprint, lock_ttl).await {
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
    let settled = match Disposition::of(outcome, true) {
        Disposition::Complete => {
            store
                .complete(&lease, StoredOutcome::from_outcome(outcome))
                .await
        }
        Disposition::Release if !uncertain => store.release(&lease).await,
        Disposition::Release | Disposition::UnknownEffect => {
            store.record_unknown_effect(&lease).await
        }
    };
    let tool = outcome.tool();
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
