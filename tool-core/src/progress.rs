//! Progress of a running call: a tool reports how far it got ([`ToolContext::progress`]), and
//! whoever started the call receives it through a [`ProgressSink`] it attached
//! ([`ToolCall::with_progress`]).
//!
//! Under MCP the sink turns each report into a `notifications/progress` for the request's
//! `progressToken` (MCP 2025-11-25, "Progress"); elsewhere a call has no sink and a report is a
//! `tracing` event at debug level, so a tool reports the same way wherever it runs.
//!
//! A [`ProgressHandle`] is rate-limited: at most one report per interval (50 ms by default, so a
//! report at least that long after the last one delivered is never held back) reaches the sink,
//! later ones replace the one waiting, and the waiting one is delivered when
//! the interval ends, so a tight loop that reports on every item cannot flood a client, and the
//! last report is never lost. [`ProgressHandle::finish`] delivers a waiting report at once and
//! stops the handle (MCP forbids progress after the response).
//!
//! ```
//! use std::sync::{Arc, Mutex};
//! use toolwright::progress::{Progress, ProgressHandle};
//! use toolwright::ToolCall;
//!
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() {
//! let seen = Arc::new(Mutex::new(Vec::new()));
//! let sink = Arc::clone(&seen);
//! let handle = ProgressHandle::new(move |p: Progress| sink.lock().unwrap().push(p.done));
//! let call = ToolCall::new("c1", "import_rows", "{}").with_progress(handle.clone());
//! # let _ = call;
//! for row in 1..=1_000 {
//!     handle.report(row as f64, Some(1_000.0), None);
//! }
//! handle.finish();
//! // The first report and the last one; the 998 in between fell inside one interval.
//! assert_eq!(*seen.lock().unwrap(), vec![1.0, 1_000.0]);
//! # }
//! ```
//!
//! [`ToolContext::progress`]: crate::ToolContext::progress
//! [`ToolCall::with_progress`]: crate::ToolCall::with_progress

use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::time::Instant;

/// The default least time between two reports a sink receives.
pub const DEFAULT_INTERVAL: Duration = Duration::from_millis(50);

/// One progress report: how much is done, of how much if known, and what is happening.
#[derive(Debug, Clone, PartialEq)]
pub struct Progress {
    /// Work done so far; it should grow with every report, even when the total is unknown.
    pub done: f64,
    /// The total, if known.
    pub total: Option<f64>,
    /// What the tool is doing, for a person to read.
    pub message: Option<String>,
}

/// Where a call's progress reports go (an MCP peer, a channel, a UI). Called at most once per
/// interval of the [`ProgressHandle`] it sits behind, while that handle's lock is held (so
/// reports arrive in order): it should not block, nor report to the same handle.
///
/// Any `Fn(Progress) + Send + Sync + 'static` closure is a sink.
pub trait ProgressSink: Send + Sync + 'static {
    /// Receives one report.
    fn report(&self, progress: Progress);

    /// The call passed every check before its body (scopes, arguments, the idempotency store,
    /// approval) and its first attempt starts now. Called at most once per call; a call
    /// refused, replayed or waiting for approval never calls it. Nothing by default.
    ///
    /// An MCP server answers a long-running tool's call with a task from here on: what came
    /// before is answered at once.
    fn started(&self) {}
}

impl<F: Fn(Progress) + Send + Sync + 'static> ProgressSink for F {
    fn report(&self, progress: Progress) {
        self(progress)
    }
}

/// A rate-limited [`ProgressSink`], cheap to clone (one pointer), attached to a call with
/// [`ToolCall::with_progress`](crate::ToolCall::with_progress). See the [module](self) docs.
///
/// Time is tokio's clock, so tests on paused time (`start_paused = true`) drive the interval.
#[derive(Clone)]
pub struct ProgressHandle(Arc<Reporter>);

struct Reporter {
    sink: Box<dyn ProgressSink>,
    interval: Duration,
    state: Mutex<Throttle>,
}

#[derive(Default)]
struct Throttle {
    /// When the sink last received a report.
    sent: Option<Instant>,
    /// The newest report that fell inside the interval, waiting for it to end.
    waiting: Option<Progress>,
    /// A timer task is armed to deliver `waiting`.
    armed: bool,
    finished: bool,
}

impl ProgressHandle {
    /// A handle over `sink` delivering at most one report per [`DEFAULT_INTERVAL`] (50 ms).
    pub fn new(sink: impl ProgressSink) -> Self {
        ProgressHandle::with_interval(sink, DEFAULT_INTERVAL)
    }

    /// A handle over `sink` delivering at most one report per `interval`.
    pub fn with_interval(sink: impl ProgressSink, interval: Duration) -> Self {
        ProgressHandle(Arc::new(Reporter {
            sink: Box::new(sink),
            interval,
            state: Mutex::new(Throttle::default()),
        }))
    }

    /// Reports progress: delivered now if the interval since the last delivery has passed,
    /// otherwise kept (replacing any report kept before) and delivered when it has. A report
    /// whose `done` or `total` is not a finite number is ignored (JSON cannot carry it), as is
    /// every report after [`ProgressHandle::finish`].
    pub fn report(&self, done: f64, total: Option<f64>, message: Option<String>) {
        if !done.is_finite() || total.is_some_and(|t| !t.is_finite()) {
            tracing::debug!(
                done,
                ?total,
                "progress report with a non-finite number ignored"
            );
            return;
        }
        let progress = Progress {
            done,
            total,
            message,
        };
        let reporter = &self.0;
        let mut state = reporter.lock();
        if state.finished {
            return;
        }
        let now = Instant::now();
        let due = state.sent.map(|sent| sent + reporter.interval);
        match due {
            Some(due) if now < due => {
                state.waiting = Some(progress);
                if !state.armed && self.arm(due) {
                    state.armed = true;
                }
            }
            _ => {
                state.sent = Some(now);
                state.waiting = None;
                // Delivered under the lock, so two reports racing from two threads reach the
                // sink in the order they were admitted.
                reporter.sink.report(progress);
            }
        }
    }

    /// Tells the sink the call's first attempt starts ([`ProgressSink::started`]).
    pub fn started(&self) {
        self.0.sink.started();
    }

    /// Delivers a waiting report now and ignores every later one: call it when the call is
    /// over, before its result is sent.
    pub fn finish(&self) {
        let mut state = self.0.lock();
        if state.finished {
            return;
        }
        state.finished = true;
        if let Some(waiting) = state.waiting.take() {
            self.0.sink.report(waiting);
        }
    }

    /// Starts the timer that delivers the waiting report at `due`; `false` outside a tokio
    /// runtime, where it waits for the next report or [`ProgressHandle::finish`].
    fn arm(&self, due: Instant) -> bool {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return false;
        };
        let reporter = Arc::downgrade(&self.0);
        runtime.spawn(async move {
            tokio::time::sleep_until(due).await;
            let Some(reporter) = reporter.upgrade() else {
                return;
            };
            let mut state = reporter.lock();
            state.armed = false;
            if state.finished {
                return;
            }
            if let Some(waiting) = state.waiting.take() {
                state.sent = Some(Instant::now());
                reporter.sink.report(waiting);
            }
        });
        true
    }
}

impl Reporter {
    fn lock(&self) -> std::sync::MutexGuard<'_, Throttle> {
        // A sink that panicked leaves plain data behind: keep reporting.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl fmt::Debug for ProgressHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProgressHandle")
            .field("interval", &self.0.interval)
            .finish_non_exhaustive()
    }
}

/// Two handles are equal when they are the same handle (clones of one another).
impl PartialEq for ProgressHandle {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for ProgressHandle {}

/// A report with no sink: a `tracing` event, so progress is visible in logs wherever a tool
/// runs.
pub(crate) fn untracked(tool: &str, call_id: &str, done: f64, total: Option<f64>, message: &str) {
    tracing::debug!(tool, call_id, done, ?total, message, "tool progress");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn recording(interval: Duration) -> (ProgressHandle, Arc<Mutex<Vec<Progress>>>) {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&seen);
        let handle = ProgressHandle::with_interval(
            move |p: Progress| sink.lock().unwrap_or_else(PoisonError::into_inner).push(p),
            interval,
        );
        (handle, seen)
    }

    fn dones(seen: &Mutex<Vec<Progress>>) -> Vec<f64> {
        seen.lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .map(|p| p.done)
            .collect()
    }

    #[tokio::test(start_paused = true)]
    async fn a_tight_loop_delivers_the_first_report_then_one_per_interval() {
        let (handle, seen) = recording(Duration::from_millis(100));
        for i in 1..=10_000 {
            handle.report(f64::from(i), Some(10_000.0), None);
        }
        assert_eq!(dones(&seen), vec![1.0]);
        tokio::time::sleep(Duration::from_millis(99)).await;
        assert_eq!(dones(&seen), vec![1.0], "nothing more within the interval");
        tokio::time::sleep(Duration::from_millis(2)).await;
        // The timer delivered the newest report kept during the interval, and only it.
        assert_eq!(dones(&seen), vec![1.0, 10_000.0]);
    }

    /// A tool that reports every 50 ms (as the MCP conformance suite's progress scenario does:
    /// 0, 50, 100) gets every report to the client under the default interval.
    #[tokio::test(start_paused = true)]
    async fn reports_50_ms_apart_all_arrive_under_the_default_interval() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&seen);
        let handle = ProgressHandle::new(move |p: Progress| {
            sink.lock().unwrap_or_else(PoisonError::into_inner).push(p)
        });
        for done in [0.0, 50.0, 100.0] {
            handle.report(done, Some(100.0), None);
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        handle.finish();
        assert_eq!(dones(&seen), vec![0.0, 50.0, 100.0]);
    }

    #[tokio::test(start_paused = true)]
    async fn reports_further_apart_than_the_interval_all_arrive() {
        let (handle, seen) = recording(Duration::from_millis(100));
        for i in 1..=5 {
            handle.report(f64::from(i), None, Some(format!("step {i}")));
            tokio::time::sleep(Duration::from_millis(150)).await;
        }
        assert_eq!(dones(&seen), vec![1.0, 2.0, 3.0, 4.0, 5.0]);
    }

    #[tokio::test(start_paused = true)]
    async fn no_more_than_one_report_per_interval_reaches_the_sink() {
        let (handle, seen) = recording(Duration::from_millis(100));
        // One report every 10 ms for a second: about ten deliveries, never two within 100 ms.
        for i in 1..=100 {
            handle.report(f64::from(i), Some(100.0), None);
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        handle.finish();
        let delivered = dones(&seen);
        assert!(
            (10..=12).contains(&delivered.len()),
            "delivered {delivered:?}"
        );
        assert_eq!(
            delivered.last(),
            Some(&100.0),
            "the last report is delivered"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn finish_delivers_the_waiting_report_and_stops_the_handle() {
        let (handle, seen) = recording(Duration::from_secs(10));
        handle.report(1.0, None, None);
        handle.report(2.0, None, None);
        handle.finish();
        assert_eq!(dones(&seen), vec![1.0, 2.0]);
        handle.report(3.0, None, None);
        tokio::time::sleep(Duration::from_secs(20)).await;
        assert_eq!(dones(&seen), vec![1.0, 2.0], "nothing after finish");
    }

    #[tokio::test(start_paused = true)]
    async fn non_finite_numbers_are_ignored() {
        let (handle, seen) = recording(Duration::ZERO);
        handle.report(f64::NAN, None, None);
        handle.report(1.0, Some(f64::INFINITY), None);
        handle.report(2.0, Some(4.0), None);
        assert_eq!(dones(&seen), vec![2.0]);
    }

    #[test]
    fn outside_a_runtime_the_waiting_report_waits_for_finish() {
        let (handle, seen) = recording(Duration::from_secs(3600));
        handle.report(1.0, None, None);
        handle.report(2.0, None, None);
        assert_eq!(dones(&seen), vec![1.0]);
        handle.finish();
        assert_eq!(dones(&seen), vec![1.0, 2.0]);
    }
}
