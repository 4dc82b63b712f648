//! The approval stage of a call that needs one, after its idempotency key was begun (a call
//! that already ran under its key is answered from the store, never asked about again): the
//! session's approver decides this exact call.

use std::sync::Arc;

use super::finish::reject;
use super::state::{Call, Pipeline};
use crate::approval::{self, ApprovalRequest, Refusal};
use crate::idempotency::{Fingerprint, Lease};
use crate::observe::{self, ToolStats};
use crate::outcome::{Outcome, Status};
use crate::session::Session;
use crate::tool::spec::ToolSpec;

/// Asks the session's approver about the call. `Err`: the call's finished outcome
/// (`approval_denied`, or `pending` with the ticket), its key, begun for nothing, released.
/// Boxed by the caller: few calls need approval, and the call's future holds none of this.
pub(super) async fn ask_approver(
    (spec, stats): (&ToolSpec, &ToolStats),
    call: &mut Call,
    lease: &mut Option<Box<Lease>>,
    session: &Session,
    pipeline: &Pipeline,
) -> Result<(), Outcome> {
    match approve(spec, call, session, pipeline).await {
        Ok(()) => Ok(()),
        Err(refusal) => {
            let (call, lease) = (call.take(), lease.take());
            Err(not_approved((spec, stats), call, lease, refusal, session, pipeline).await)
        }
    }
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
        Refusal::Denied(failure) => return reject((spec, stats), call, failure, session, pipeline),
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
