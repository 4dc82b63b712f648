//! A task tool's call as the MCP handler serves it: run until its body starts and first waits,
//! then answered with a task the call keeps running in ([`super::Tasks`] keeps it).

use std::sync::{Arc, OnceLock};

use rmcp::model::{CallToolResponse, CallToolResult, ClientCapabilities, CreateTaskResult};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer};
use serde_json::json;
use toolwright_core::progress::ProgressHandle;
use toolwright_core::{ErrorKind, Outcome, Session, ToolCall};

use super::ask::{Gate, Gated, TaskAsker};
use super::{CallIdentity, TaskSink};
use crate::handler::{answered, call_tool_result, cancelled, disconnected};
use crate::input::Input;
use crate::Served;
use toolwright_core::idempotency::Fingerprint;

/// Whether the client takes tasks (`io.modelcontextprotocol/tasks`), on this request or for its
/// session.
pub(crate) fn declares_tasks(capabilities: Option<&ClientCapabilities>) -> bool {
    capabilities.is_some_and(ClientCapabilities::supports_tasks)
}

/// The call running in a task of its own, aborted when dropped: by a request cancelled before
/// it became a task, or by `tasks/cancel` after.
struct Running(tokio::task::JoinHandle<Outcome>);

impl Drop for Running {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl std::future::Future for Running {
    type Output = Result<Outcome, ErrorData>;

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        std::pin::Pin::new(&mut self.0).poll(cx).map(|joined| {
            joined.map_err(|error| {
                ErrorData::internal_error(format!("the call stopped abnormally: {error}"), None)
            })
        })
    }
}

/// A task tool's call: run until its body starts (checks, the idempotency store and
/// approval all come first, and what they answer is answered at once) and first waits, then
/// answered with a task that the call's future keeps running in. Until then a question of the
/// body goes back in an input-required result to a client that answers those (2026-07-28,
/// with elicitation), the call ending within its request; after, to the task, which waits
/// `input_required` for `tasks/update`. A tool that runs only as a task and ends without
/// waiting is answered with a task all the same. The same call sent again while it runs (the
/// same principal, conversation, call key, tool and arguments) gets the same task; the same
/// call key with another tool or other arguments is a call of its own, which the registry's
/// idempotency store answers `idempotency_mismatch` for a tool with side effects.
pub(crate) async fn call_as_task(
    shared: &Served,
    call: ToolCall,
    session: &Session,
    named: bool,
    input: Option<Arc<Input>>,
    context: &RequestContext<RoleServer>,
    (side_effecting, task_only): (bool, bool),
) -> Result<CallToolResponse, ErrorData> {
    let tasks = &shared.tasks;
    let principal = session.principal();
    // Only a call the client named ([`CALL_KEY`]) has an identity a resent request shares.
    let identity = (named && call.id().starts_with("call:")).then(|| CallIdentity {
        principal: principal.map(str::to_owned),
        conversation: session.id().to_owned(),
        call: call.id().to_owned(),
        tool: call.name().to_owned(),
        fingerprint: Fingerprint::of(call.name(), call.arguments()).to_string(),
    });
    if let Some(identity) = &identity {
        if let Some(task) = tasks.running(identity) {
            return Ok(CallToolResponse::Task(CreateTaskResult::new(task)));
        }
    }
    // The slot is taken before the checks run, so calls under admission count against the caps
    // as working tasks do; it is given back when the call is answered at once.
    let slot = tasks.admit(principal).await?;
    let gate = Arc::new(Gate::default());
    let status = Arc::new(OnceLock::new());
    let handle = ProgressHandle::with_interval(
        TaskSink::new(Arc::clone(&gate), Arc::clone(&status)),
        shared.progress_interval,
    );
    let call = call.with_progress(handle);
    let registry = shared.registry.clone();
    let inputs = tasks.inputs();
    let owned = session.clone().with_asker(Arc::new(TaskAsker {
        gate: Arc::clone(&gate),
        input: input.clone(),
        inputs: Arc::clone(&inputs),
        given: session.clone(),
    }));
    let (commit, mut committed) = tokio::sync::oneshot::channel();
    let mut running = Running(tokio::spawn(Gated {
        inner: Box::pin(async move { registry.call_in(&owned, call).await }),
        gate: Arc::clone(&gate),
        commit: Some(commit),
    }));
    let at_once = tokio::select! {
        biased;
        outcome = &mut running => Some(outcome?),
        became = &mut committed => match became {
            Ok(()) => None,
            // The call ended without waiting after its body started (or before it started).
            Err(_) => Some((&mut running).await?),
        },
        () = context.ct.cancelled() => return Err(cancelled()),
        () = disconnected(context) => return Err(cancelled()),
    };
    let task = match at_once {
        // A tool that runs only as a task is answered with one, once its body ran.
        Some(outcome) if task_only && gate.started() && !gate.round_ended() => {
            let result = ended(&outcome);
            tasks
                .open(
                    slot,
                    (identity, Some(inputs)),
                    status,
                    async move { result },
                    side_effecting,
                )
                .await?
        }
        Some(outcome) => return Ok(answered(&outcome, input)),
        None => {
            let run = async move { ended(&running.await?) };
            tasks
                .open(slot, (identity, Some(inputs)), status, run, side_effecting)
                .await?
        }
    };
    Ok(CallToolResponse::Task(CreateTaskResult::new(task)))
}

/// How a task's call ended: its result (the envelope, `isError` for a tool's failure, which the
/// model reads), or, for a failure of the protocol's making rather than the tool's, the
/// JSON-RPC error the task fails with. toolwright counts as such a body that panicked (the
/// pipeline contained it, `tool_panicked`): the tool did not answer at all.
fn ended(outcome: &Outcome) -> Result<CallToolResult, ErrorData> {
    if outcome.error_kind() == Some(ErrorKind::ToolPanicked) {
        return Err(ErrorData::internal_error(
            format!(
                "the tool `{}` broke while it ran: {}",
                outcome.tool(),
                outcome.message().unwrap_or("it panicked")
            ),
            Some(json!({"error_type": "tool_panicked"})),
        ));
    }
    Ok(call_tool_result(outcome))
}
