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
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::time::Duration;

use futures_util::FutureExt as _;

use crate::error::ToolError;
use crate::outcome::ErrorKind;

/// Runs one attempt of `body` for at most `timeout`, turning a panic into `tool_panicked` and an
/// expired timer into `timeout`.
pub(crate) async fn attempt<T>(
    tool: &str,
    timeout: Duration,
    body: impl Future<Output = Result<T, ToolError>>,
) -> Result<T, ToolError> {
    match tokio::time::timeout(timeout, AssertUnwindSafe(body).catch_unwind()).await {
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
