//! The execution seam: one attempt of a tool body, bounded by a timeout, with panics contained.
//!
//! # Cancellation
//!
//! When an attempt runs past its timeout its future is **dropped** at its next `.await`: code
//! after that point never runs, and `Drop` implementations run as usual. A tool body therefore
//! must not leave shared state half-updated across an `.await`, and an action that reached a
//! dependency before the drop may still complete there: that is why non-idempotent tools take an
//! [`IdempotencyKey`](crate::IdempotencyKey) and send it downstream.

use std::any::Any;
use std::future::{poll_fn, Future};
use std::panic::AssertUnwindSafe;
use std::pin::pin;
use std::task::Poll;
use std::time::Duration;

use futures_util::FutureExt as _;
use tokio::time::Instant;

use crate::error::ToolError;
use crate::outcome::ErrorKind;

/// Runs one attempt of `body` until `deadline` (`timeout` after the call started), turning a
/// panic into `tool_panicked` and an expired timer into `timeout`.
///
/// The body is polled once before a timer exists: a tool that answers without waiting (an
/// in-memory lookup, a cache hit) then never builds a timer nor reads the clock here. A body
/// that has to wait runs under `timeout_at(deadline)`, the deadline the tool also sees in its
/// [`Invocation`](crate::Invocation), so the bound is the same either way.
pub(crate) async fn attempt<T>(
    tool: &str,
    timeout: Duration,
    deadline: Instant,
    body: impl Future<Output = Result<T, ToolError>>,
) -> Result<T, ToolError> {
    let mut body = pin!(AssertUnwindSafe(body).catch_unwind());
    let first = poll_fn(|cx| Poll::Ready(body.as_mut().poll(cx))).await;
    let finished = match first {
        Poll::Ready(finished) => Ok(finished),
        // Boxed: the timer's state is only needed by a body that waits, and would otherwise
        // enlarge (and be moved with) every call's future.
        Poll::Pending => Box::pin(tokio::time::timeout_at(deadline, body)).await,
    };
    match finished {
        Ok(Ok(result)) => result,
        Ok(Err(panic)) => {
            let detail = panic_message(panic.as_ref());
            tracing::error!(tool, panic = %detail, "tool panicked; the panic was contained");
            Err(ToolError::new(
                ErrorKind::ToolPanicked,
                format!("`{tool}` failed with an internal error; the arguments did not cause it and retrying will not help"),
            ))
        }
        Err(_) => Err(ToolError::timeout(format!(
            "`{tool}` did not answer within {} ms; it may work if tried later",
            timeout.as_millis()
        ))),
    }
}

fn panic_message(panic: &(dyn Any + Send)) -> String {
    if let Some(s) = panic.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = panic.downcast_ref::<String>() {
        s.clone()
    } else {
        "non-string panic payload".to_owned()
    }
}
