//! A task tool's call as the MCP handler serves it: run until its body starts, then answered
//! with a task the call keeps running in ([`super::Tasks`] keeps it).

use std::sync::{Arc, OnceLock};

use rmcp::model::{CallToolResponse, ClientCapabilities, CreateTaskResult};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer};
use toolwright_core::progress::ProgressHandle;
use toolwright_core::{Outcome, Session, ToolCall};

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
/// approval all come first, and what they answer is answered at once), then answered with a
/// task that the call's future keeps running in. The same call sent again while it runs (the
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
    side_effecting: bool,
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
    let (started, mut has_started) = tokio::sync::oneshot::channel();
    let status = Arc::new(OnceLock::new());
    let handle = ProgressHandle::with_interval(
        TaskSink::new(started, Arc::clone(&status)),
        shared.progress_interval,
    );
    let call = call.with_progress(handle);
    let registry = shared.registry.clone();
    let owned = session.clone();
    let mut running = Running(tokio::spawn(
        async move { registry.call_in(&owned, call).await },
    ));
    tokio::select! {
        biased;
        outcome = &mut running => return Ok(answered(&outcome?, input)),
        begun = &mut has_started => {
            if begun.is_err() {
                // The call ended without its body starting (its handle went with it).
                return Ok(answered(&running.await?, input));
            }
        }
        () = context.ct.cancelled() => return Err(cancelled()),
        () = disconnected(context) => return Err(cancelled()),
    }
    let run = async move { running.await.map(|outcome| call_tool_result(&outcome)) };
    let task = tasks
        .open(slot, identity, status, run, side_effecting)
        .await?;
    Ok(CallToolResponse::Task(CreateTaskResult::new(task)))
}
