//! `notifications/progress` for a call whose request carried a `progressToken` (MCP 2025-11-25,
//! "Progress"): the tool's reports, rate-limited by its [`ProgressHandle`] (one per
//! [`McpServer::progress_interval`](crate::McpServer::progress_interval)), go to the client in
//! order, and all of them before the call's result.

use std::pin::pin;
use std::time::Duration;

use rmcp::model::{ProgressNotificationParam, ProgressToken};
use rmcp::service::Peer;
use rmcp::RoleServer;
use tokio::sync::mpsc;
use toolwright_core::progress::{Progress, ProgressHandle};
use toolwright_core::{Outcome, Registry, Session, ToolCall};

/// Runs `call`, forwarding its progress reports to `peer` under `token` when there is one, at
/// most one per `interval` (every one when it is zero) and the last one always.
pub(crate) async fn call_reporting(
    registry: &Registry,
    session: &Session,
    call: ToolCall,
    token: Option<ProgressToken>,
    interval: Duration,
    peer: &Peer<RoleServer>,
) -> Outcome {
    let Some(token) = token else {
        return registry.call_in(session, call).await;
    };
    // The sink only queues (it must not block the tool); this future sends, in order. The
    // handle's rate limit bounds what the queue can hold.
    let (sender, mut reports) = mpsc::unbounded_channel::<Progress>();
    let handle = ProgressHandle::with_interval(
        move |progress: Progress| {
            // The receiver is gone only once the result is sent: nothing to tell anyone then.
            let _ = sender.send(progress);
        },
        interval,
    );
    let mut running = pin!(registry.call_in(session, call.with_progress(handle)));
    let outcome = loop {
        tokio::select! {
            biased;
            outcome = &mut running => break outcome,
            Some(progress) = reports.recv() => notify(peer, &token, progress).await,
        }
    };
    // The pipeline delivered the last report before the outcome: send what is still queued,
    // then the result. A tool that kept a context past its return reports into a closed queue.
    reports.close();
    while let Ok(progress) = reports.try_recv() {
        notify(peer, &token, progress).await;
    }
    outcome
}

async fn notify(peer: &Peer<RoleServer>, token: &ProgressToken, progress: Progress) {
    let mut param = ProgressNotificationParam::new(token.clone(), progress.done);
    if let Some(total) = progress.total {
        param = param.with_total(total);
    }
    if let Some(message) = progress.message {
        param = param.with_message(message);
    }
    if let Err(e) = peer.notify_progress(param).await {
        tracing::debug!(error = %e, "a progress notification was not sent");
    }
}
