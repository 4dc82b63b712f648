//! Clearing a side-effecting call or one that needs approval to run, between its checks and its
//! first attempt: its idempotency key begun (a call that already ran under it is answered from
//! the store, never asked about again), then the session's approver asked.

use std::sync::Arc;
use std::time::Duration;

use super::finish::{answered_by_store, rejected};
use super::state::{Call, Pipeline};
use crate::approval::{self, ApprovalRequest, Refusal};
use crate::call::Session;
use crate::execute::Bounds;
use crate::idempotency::{self, Fingerprint, IdempotencyKey, Lease};
use crate::observe::{self, ToolStats};
use crate::outcome::{Outcome, Status};
use crate::tool::spec::{Effect, ToolSpec};

/// The idempotency key of a side-effecting call, then approval. A side-effecting call
/// begins its key before approval: a call that already ran under it is answered from the
/// store, never asked about again. `Err`: the call's finished outcome (a replay, a refusal
/// by the store, a denial or a pending ticket).
pub(super) async fn clear(
    (spec, guard, stats): (&ToolSpec, &Bounds, &ToolStats),
    call: &mut Call,
    session: &Session,
    pipeline: &Pipeline,
) -> Result<Option<Box<Lease>>, Outcome> {
    let lease = match spec.effect() {
        // Boxed: the lease waits out every attempt, in the call's future.
        Effect::SideEffecting => match claim_key(spec, guard, call, session, pipeline).await {
            Ok(lease) => Some(Box::new(lease)),
            Err(outcome) => {
                let call = call.take();
                return Err(answered_by_store(
                    (spec, stats),
                    call,
                    outcome,
                    session,
                    pipeline,
                ));
            }
        },
        _ => None,
    };
    if spec.requires_approval() {
        if let Err(refusal) = approve(spec, call, session, pipeline).await {
            let call = call.take();
            let tool = (spec, stats);
            return Err(not_approved(tool, call, lease, refusal, session, pipeline).await);
        }
    }
    Ok(lease)
}

/// [`clear`] at once, for a call that waits on nothing there: one that needs no approval, on
/// the in-memory store. Only for a call that [`clear`] would see: side-effecting or needing
/// approval, so one that needs none is side-effecting. `None`: the call goes through [`clear`].
pub(super) fn clear_now(
    (spec, guard, stats): (&ToolSpec, &Bounds, &ToolStats),
    call: &mut Call,
    session: &Session,
    pipeline: &Pipeline,
) -> Option<Result<Option<Box<Lease>>, Outcome>> {
    let memory = pipeline.memory.as_ref()?;
    if spec.requires_approval() {
        return None;
    }
    debug_assert!(matches!(spec.effect(), Effect::SideEffecting));
    let (key, fingerprint, hold) = key_of(spec, guard, call, session, pipeline);
    let begun = idempotency::begin_call_now(memory, key, fingerprint, (&call.id, &spec.name), hold);
    Some(match begun {
        Ok(lease) => Ok(Some(Box::new(lease))),
        Err(outcome) => {
            let call = call.take();
            Err(answered_by_store(
                (spec, stats),
                call,
                outcome,
                session,
                pipeline,
            ))
        }
    })
}

/// The idempotency stage's begin for a side-effecting call.
async fn claim_key(
    spec: &ToolSpec,
    guard: &Bounds,
    call: &Call,
    session: &Session,
    pipeline: &Pipeline,
) -> Result<Lease, Outcome> {
    let (key, fingerprint, hold) = key_of(spec, guard, call, session, pipeline);
    idempotency::begin_call(
        &*pipeline.store,
        key,
        fingerprint,
        (&call.id, &spec.name),
        hold,
    )
    .await
}

/// A side-effecting call's key in the session's mode and scope, the fingerprint of its
/// arguments, and how long the key is held: the call's whole deadline, and its approval when it
/// needs one.
fn key_of(
    spec: &ToolSpec,
    guard: &Bounds,
    call: &Call,
    session: &Session,
    pipeline: &Pipeline,
) -> (IdempotencyKey, Fingerprint, Duration) {
    let mode = session.key_mode().unwrap_or(pipeline.key_mode);
    let fingerprint = Fingerprint::for_tool(spec, &call.arguments);
    let key = mode.key(&session.call_scope(), spec.name(), &call.id, &fingerprint);
    let mut hold = guard.deadline();
    if spec.requires_approval() {
        hold += pipeline.approval_timeout;
    }
    (key, fingerprint, hold)
}

/// The approval stage: the session's approver decides this exact call.
async fn approve(
    spec: &ToolSpec,
    call: &Call,
    session: &Session,
    pipeline: &Pipeline,
) -> Result<(), Refusal> {
    let request = ApprovalRequest {
        conversation: session.id(),
        principal: session.principal(),
        scopes: session.scopes(),
        tool: spec.name(),
        call_id: &call.id,
        arguments: &call.arguments,
        redacted: observe::redacted(&call.arguments, spec.input_schema(), spec.fields()),
        fingerprint: Fingerprint::for_tool(spec, &call.arguments),
    };
    approval::review(
        session.approver(),
        &request,
        &pipeline.sources.clock,
        pipeline.approval_timeout,
    )
    .await
}

/// The outcome of a call that was not approved: `approval_denied`, or `pending` with the
/// ticket as its data. Its idempotency key, begun for nothing, is released.
#[cold]
async fn not_approved(
    (spec, stats): (&ToolSpec, &ToolStats),
    call: Call,
    lease: Option<Box<Lease>>,
    refusal: Refusal,
    session: &Session,
    pipeline: &Pipeline,
) -> Outcome {
    if let Some(lease) = lease {
        if let Err(e) = pipeline.store.release(&lease).await {
            tracing::warn!(target: "toolwright::idempotency", tool = spec.name(), error = %e, "the key of a call that was not approved could not be released; its lock will expire");
        }
    }
    let ticket = match refusal {
        Refusal::Denied(failure) => {
            return rejected((spec, stats), call, failure, session, pipeline)
        }
        Refusal::Pending(ticket) => ticket,
    };
    let data = serde_json::value::to_raw_value(&serde_json::json!({ "ticket": ticket }))
        .unwrap_or_else(|_| serde_json::value::RawValue::NULL.to_owned());
    let mut outcome = Outcome::success(call.id, Arc::clone(&spec.name), Status::Pending, data);
    outcome.attempts = 0;
    outcome.elapsed = call.arrived.elapsed();
    observe::call(&outcome, None, None, Some(spec), pipeline.argument_log);
    stats.record(&outcome, false);
    outcome
}
