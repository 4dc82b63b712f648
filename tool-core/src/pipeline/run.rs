//! The call's path through the stages, in the order it runs through them.

use std::future::Future;

use tokio::time::Instant;

use super::approval;
use super::erased::{Answer, Args, DynTool, ToolAttempts};
use super::finish::{answer_from_store, conclude, finalize, reject};
use super::idempotency::{self, Step};
use super::state::{Call, Pipeline};
use crate::execute::fallback::{self, Interpreted};
use crate::execute::Executed;
use crate::guard::{output, policy};
use crate::idempotency::IdempotencyKey;
use crate::outcome::{Failure, Fixes, Outcome};
use crate::repair::stage::{self as repair, Repairs};
use crate::runtime::BoxFuture;
use crate::session::Session;
use crate::tool::spec::{Effect, ToolSpec};
use crate::validate as checks;

/// The call through every stage, compiled once for all tools: what needs the tool's types (its
/// checks, its attempts, its fallback) is reached through [`DynTool`]. The future stays small
/// (it is boxed once per call): the stages most calls skip (repair, idempotency, approval,
/// fallback) are boxed on their own, and so is the retry loop, entered only after a failed
/// attempt.
///
/// An `async` block, not an `async fn`: an `async fn` keeps each parameter twice in its
/// state (the argument and the local it is moved into), and the block does not.
#[allow(
    clippy::manual_async_fn,
    reason = "an async fn stores its parameters twice"
)]
pub(super) fn run<'a>(
    tool: &'a dyn DynTool,
    mut call: Call,
    session: &'a Session,
    pipeline: &'a Pipeline,
) -> impl Future<Output = Outcome> + Send + 'a {
    async move {
        let (spec, stats) = (tool.spec(), tool.stats());
        // Validation seam. Scopes first: a session that may not call the tool learns nothing
        // about its arguments.
        // (A temporary, not a named local: a named `Result<Args, _>` would stay in the
        // future's state through every later await, beside the args moved out of it.)
        let (args, repaired_by) = match check_input(tool, &call, session, pipeline) {
            Ok(args) => (args, Fixes::EMPTY),
            Err(failure) if pipeline.rules.is_none() && pipeline.repairer.is_none() => {
                return reject((spec, stats), call, *failure, session, pipeline)
            }
            // The repair pass is an ordinary stage over the type-erased tool, boxed (few
            // calls need it).
            Err(failure) => {
                let repairs = Repairs {
                    rules: pipeline.rules.as_ref(),
                    repairer: pipeline.repairer.as_deref(),
                    clock: &pipeline.sources.clock,
                    timeout: pipeline.repair_timeout,
                };
                let check = |text: &str| tool.check_arguments(text, session, pipeline);
                let (id, arguments) = (&call.id, &mut call.arguments);
                let repair: BoxFuture<'_, Result<(Args, Fixes), Box<Failure>>> =
                    Box::pin(repair::repair(repairs, spec, id, arguments, failure, check));
                match repair.await {
                    Ok(repaired) => repaired,
                    Err(failure) => {
                        return reject((spec, stats), call, *failure, session, pipeline)
                    }
                }
            }
        };
        let repaired = !repaired_by.is_empty();
        if let Some(guard) = pipeline.call_guard.as_deref() {
            if let Err(failure) =
                policy::check_call(guard, spec, session, &call.id, &call.arguments)
            {
                return reject((spec, stats), call, *failure, session, pipeline);
            }
        }
        // Idempotency, then approval: a call that already ran under its key is answered from
        // the store, never asked about again. What these stages wait on (a store, a reviewer)
        // is boxed on its own, entered only by calls that need it, so the call's future holds
        // none of its state.
        let mut lease = None;
        if matches!(spec.effect(), Effect::SideEffecting) {
            let begun = match idempotency::begin(spec, tool.bounds(), &call, session, pipeline) {
                Step::Ready(begun) => begun,
                Step::Waiting(begun) => begun.await,
            };
            match begun {
                // Boxed: the lease waits out every attempt, in the call's future.
                Ok(begun) => lease = Some(Box::new(begun)),
                Err(outcome) => {
                    let call = call.take();
                    return answer_from_store((spec, stats), call, outcome, session, pipeline);
                }
            }
        }
        if spec.requires_approval() {
            let asked =
                approval::ask_approver((spec, stats), &mut call, &mut lease, session, pipeline);
            if let Err(outcome) = Box::pin(asked).await {
                return outcome;
            }
        }
        let key = match &lease {
            Some(lease) => Some(lease.key().clone()),
            None => spec
                .takes_idempotency_key()
                .then(|| IdempotencyKey::derive(&session.call_scope(), spec.name(), &call.id)),
        };
        // The attempt clock starts now; a call that awaited nothing yet starts at its arrival,
        // which spares a clock read on the common path.
        let begin = if repaired || lease.is_some() || spec.requires_approval() {
            Instant::now()
        } else {
            call.arrived
        };
        // Every check passed: whoever watches the call learns its body starts.
        if let Some(progress) = &call.progress {
            progress.started();
        }
        let attempts = ToolAttempts {
            tool,
            call: &call,
            args: Some(args),
            key: key.as_ref(),
            session,
            pipeline,
        };
        let executed = tool
            .bounds()
            .attempts(&pipeline.sources, begin, attempts)
            .await;
        let mut executed = check_output(executed, spec, session, &call.id, pipeline);
        let degraded = match fallback::wanted(spec.has_fallback(), spec.idempotent(), &executed) {
            Some(kind) => {
                match tool.fall_back(&mut executed, kind, &call, key.as_ref(), session, pipeline) {
                    Some(fall_back) => fall_back.await,
                    None => None,
                }
            }
            None => None,
        };
        let uncertain = executed.uncertain;
        // The id moves into the outcome: the call keeps only what `finalize` still reads.
        let id = std::mem::take(&mut call.id);
        let mut outcome = conclude(spec, id, call.arrived, executed, degraded);
        if let Some(lease) = lease {
            if let Some(waiting) = idempotency::settle(pipeline, *lease, &outcome, uncertain) {
                waiting.await;
            }
        }
        outcome.repaired_by = repaired_by;
        // The tool is done: a report still waiting out its interval goes now, before the
        // outcome, and none after it.
        if let Some(progress) = &call.progress {
            progress.finish();
        }
        finalize(
            Some((spec, stats)),
            outcome,
            call.arguments,
            key.as_ref(),
            session,
            pipeline,
        )
    }
}

/// Scopes, the size limit, then the tool's typed checks.
fn check_input(
    tool: &dyn DynTool,
    call: &Call,
    session: &Session,
    pipeline: &Pipeline,
) -> Result<Args, Box<Failure>> {
    crate::guard::scopes(tool.spec(), session)?;
    // The size before anything reads the text.
    checks::check_size(&call.arguments, pipeline.max_argument_bytes).map_err(Box::new)?;
    tool.check_arguments(&call.arguments, session, pipeline)
}

/// The attempts' answer, checked by the output guards.
fn check_output(
    executed: Executed<Answer>,
    spec: &ToolSpec,
    session: &Session,
    call_id: &str,
    pipeline: &Pipeline,
) -> Executed<Interpreted> {
    executed.and_then(|answer| {
        let answer = answer.map_err(|failure| *failure)?;
        if pipeline.max_result_bytes.is_none() && pipeline.result_guard.is_none() {
            return Ok(answer);
        }
        let limits = (pipeline.max_result_bytes, pipeline.result_guard.as_deref());
        output::check(answer, spec, session, call_id, limits)
    })
}
