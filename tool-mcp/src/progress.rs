//! `notifications/progress` for a call whose request carried a `progressToken` (MCP 2025-11-25,
//! "Progress"): the tool's reports, rate-limited by its [`ProgressHandle`] (one per
//! [`McpServer::progress_interval`](crate::McpServer::progress_interval)), go to the client in
//! order, and all of them before the call's result.

use std::collections::VecDeque;
use std::pin::pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rmcp::model::{ProgressNotificationParam, ProgressToken};
use rmcp::service::Peer;
use rmcp::RoleServer;
use tokio::sync::Notify;
use toolwright_core::progress::{Progress, ProgressHandle, ProgressSink};
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
    match token {
        None => registry.call_in(session, call).await,
        // Boxed: the future of every call, reported or not, would otherwise hold the space of
        // the notifications' futures.
        Some(token) => Box::pin(reporting(registry, session, call, token, interval, peer)).await,
    }
}

/// [`call_reporting`] for a call with a progress token.
async fn reporting(
    registry: &Registry,
    session: &Session,
    call: ToolCall,
    token: ProgressToken,
    interval: Duration,
    peer: &Peer<RoleServer>,
) -> Outcome {
    // The sink only queues (it must not block the tool); this future sends, in order. The
    // handle's rate limit bounds what the queue can hold. (Every request of rmcp's client
    // carries a progress token, and most tools report nothing: a queue that allocates nothing
    // until a report comes costs those calls less than a channel.)
    let reports = Arc::new(Reports::default());
    let handle = ProgressHandle::with_interval(Sink(Arc::clone(&reports)), interval);
    let mut running = pin!(registry.call_in(session, call.with_progress(handle)));
    let outcome = loop {
        tokio::select! {
            biased;
            outcome = &mut running => break outcome,
            () = reports.ready.notified() => {
                while let Some(progress) = reports.next() {
                    notify(peer, &token, progress).await;
                }
            }
        }
    };
    // The pipeline delivered the last report before the outcome: send what is still queued,
    // then the result. A tool that kept a context past its return reports into a closed queue.
    reports.close();
    while let Some(progress) = reports.next() {
        notify(peer, &token, progress).await;
    }
    outcome
}

/// The reports of one call waiting to be sent, and the wake-up of the future that sends them.
#[derive(Default)]
struct Reports {
    queue: Mutex<Queue>,
    ready: Notify,
}

#[derive(Default)]
struct Queue {
    waiting: VecDeque<Progress>,
    /// The result is being sent: later reports are dropped.
    closed: bool,
}

impl Reports {
    fn queue(&self) -> std::sync::MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn next(&self) -> Option<Progress> {
        self.queue().waiting.pop_front()
    }

    fn close(&self) {
        self.queue().closed = true;
    }
}

/// The sink end of [`Reports`].
struct Sink(Arc<Reports>);

impl ProgressSink for Sink {
    fn report(&self, progress: Progress) {
        let mut queue = self.0.queue();
        if queue.closed {
            return;
        }
        queue.waiting.push_back(progress);
        drop(queue);
        self.0.ready.notify_one();
    }
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
