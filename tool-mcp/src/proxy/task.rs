//! An upstream call answered with a task (the tasks extension, 2026-07-28): followed to its end
//! within the call's attempt, its questions passed on, its status messages as progress, and
//! cancelled upstream when the call ends first.

use std::time::Duration;

use rmcp::model::{
    CallToolResult, CancelTaskParams, CreateTaskResult, GetTaskParams, InputRequiredResult,
    UpdateTaskParams,
};
use rmcp::service::{Peer, RunningService};
use rmcp::RoleClient;
use serde_json::Value;
use toolwright_core::{ToolContext, ToolError};

use super::Handler;

/// The shortest and longest wait between two polls, whatever the upstream suggests.
const POLL_MIN: Duration = Duration::from_millis(50);
const POLL_MAX: Duration = Duration::from_secs(5);

/// Polls the upstream's task `created` until it ends: its result, or a classified failure.
pub(super) async fn follow(
    service: &RunningService<RoleClient, Handler>,
    ctx: &ToolContext,
    name: &str,
    created: CreateTaskResult,
) -> Result<CallToolResult, ToolError> {
    let id = created.task.task_id.clone();
    let mut cancel = CancelOnDrop {
        peer: Some(service.peer().clone()),
        id: id.clone(),
    };
    let mut wait = created
        .task
        .poll_interval_ms
        .map_or(Duration::from_secs(1), Duration::from_millis)
        .clamp(POLL_MIN, POLL_MAX);
    let mut rounds = 0usize;
    loop {
        tokio::time::sleep(wait).await;
        let got = service
            .get_task(GetTaskParams::new(id.clone()))
            .await
            .map_err(|e| {
                ToolError::unavailable(format!(
                    "the upstream's task for `{name}` could not be read: {e}"
                ))
            })?;
        let got = serde_json::to_value(&got).unwrap_or_default();
        if let Some(ms) = got.get("pollIntervalMs").and_then(Value::as_u64) {
            wait = Duration::from_millis(ms).clamp(POLL_MIN, POLL_MAX);
        }
        match got
            .get("status")
            .and_then(Value::as_str)
            .unwrap_or_default()
        {
            "working" => {
                if let Some(message) = got.get("statusMessage").and_then(Value::as_str) {
                    ctx.progress(0.0, None, message);
                }
            }
            "input_required" => {
                rounds += 1;
                if rounds > super::MAX_INPUT_ROUNDS {
                    return Err(ToolError::invalid_result(format!(
                        "the upstream's task for `{name}` asked for input more than {} times",
                        super::MAX_INPUT_ROUNDS
                    )));
                }
                let asked: InputRequiredResult = serde_json::from_value(serde_json::json!({
                    "resultType": "input_required",
                    "inputRequests": got.get("inputRequests").cloned().unwrap_or_default(),
                }))
                .map_err(|e| unreadable(name, &e.to_string()))?;
                let responses = super::input::answers(ctx, name, rounds, &asked).await?;
                service
                    .update_task(UpdateTaskParams::new(id.clone(), responses))
                    .await
                    .map_err(|e| {
                        ToolError::unavailable(format!(
                            "the upstream's task for `{name}` did not take the answers: {e}"
                        ))
                    })?;
            }
            "completed" => {
                cancel.peer = None;
                let result = got.get("result").cloned().unwrap_or_default();
                return serde_json::from_value::<CallToolResult>(result)
                    .map_err(|e| unreadable(name, &e.to_string()));
            }
            "failed" => {
                cancel.peer = None;
                let error = got.get("error").map(Value::to_string).unwrap_or_default();
                return Err(ToolError::unavailable(format!(
                    "the upstream's task for `{name}` failed: {error}"
                )));
            }
            "cancelled" => {
                cancel.peer = None;
                return Err(ToolError::unavailable(format!(
                    "the upstream cancelled its task for `{name}`"
                )));
            }
            other => return Err(unreadable(name, &format!("a status `{other}`"))),
        }
    }
}

fn unreadable(name: &str, why: &str) -> ToolError {
    ToolError::invalid_result(format!(
        "the upstream's task for `{name}` answered something that is not a task's state: {why}"
    ))
}

/// Cancels the upstream's task when the call stops following it before it ended (its timeout,
/// its deadline, the downstream client's cancellation).
struct CancelOnDrop {
    peer: Option<Peer<RoleClient>>,
    id: String,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let Some(peer) = self.peer.take() {
            let id = std::mem::take(&mut self.id);
            if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                runtime.spawn(async move {
                    let _ = peer.cancel_task(CancelTaskParams::new(id)).await;
                });
            }
        }
    }
}
