//! Sync tool bodies on tokio's blocking pool.
//!
//! `#[tool]` on a plain (non-`async`) `fn` runs the function with
//! [`tokio::task::spawn_blocking`], so a body that blocks (a synchronous database driver, file
//! I/O, a CPU-heavy parse) never stalls the worker threads that drive every other call. The
//! attempt runs under the same pipeline as an `async` body, with one difference a tool author
//! must know: **a thread cannot be cancelled**. When the attempt's timeout (or the call's
//! deadline) passes, the caller stops waiting and gets `timeout`, but the thread runs the function
//! to its end and its result is dropped. A retry of that call starts a second thread while the
//! first may still run, which is why a side-effecting sync tool takes an `IdempotencyKey` to
//! be retried, as an `async` one does.
//!
//! A panic in the thread is contained like a panic in an `async` body (`tool_panicked`, one
//! `tracing` error event), because the future re-raises it inside the registry's containment.
//!
//! `#[tool(blocking = false)]` runs a cheap sync function inline on the calling task instead:
//! no thread hand-off, and no timeout either, since nothing can interrupt it.

use std::future::Future;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use tokio::task::JoinHandle;

use crate::error::ToolError;

/// Runs `body` on tokio's blocking pool; see the [module docs](self) for what a timeout means.
///
/// ```
/// # use toolwright::{execute::blocking::blocking, ToolError};
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let sum = blocking(|| Ok::<_, ToolError>((1..=10u32).sum::<u32>())).await;
/// assert_eq!(sum.ok(), Some(55));
/// # }
/// ```
pub fn blocking<T, F>(body: F) -> Blocking<T>
where
    T: Send + 'static,
    F: FnOnce() -> Result<T, ToolError> + Send + 'static,
{
    Blocking {
        handle: tokio::task::spawn_blocking(body),
    }
}

/// The future of [`blocking`]: the thread's result. Dropping it does not stop the thread.
#[derive(Debug)]
#[must_use = "a future does nothing unless awaited"]
pub struct Blocking<T> {
    handle: JoinHandle<Result<T, ToolError>>,
}

impl<T> Future for Blocking<T> {
    type Output = Result<T, ToolError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        Poll::Ready(match ready!(Pin::new(&mut self.handle).poll(cx)) {
            Ok(result) => result,
            // The body panicked on its thread: raised again here, inside the registry's
            // containment, so the panic is classified and logged as an `async` body's is.
            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            // Only when the runtime shuts down before the thread started: nothing ran.
            Err(_) => Err(ToolError::unavailable(
                "the runtime is shutting down; the tool did not run",
            )
            .never_started()),
        })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;

    use super::*;
    use crate::outcome::ErrorKind;

    #[test]
    fn a_body_the_runtime_shut_down_before_it_started_never_ran() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap_or_else(|e| panic!("{e}"));
        let handle = runtime.handle().clone();
        runtime.shutdown_background();
        let ran = Arc::new(AtomicBool::new(false));
        let pending = {
            let _inside = handle.enter();
            let ran = Arc::clone(&ran);
            blocking(move || {
                ran.store(true, Ordering::SeqCst);
                Ok::<_, ToolError>(())
            })
        };
        let waiter = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap_or_else(|e| panic!("{e}"));
        let err = waiter
            .block_on(pending)
            .expect_err("a runtime that is shut down runs nothing");
        assert_eq!(err.kind(), ErrorKind::Unavailable);
        // Safe to retry anywhere: nothing ran.
        assert!(err.is_never_started());
        assert!(!ran.load(Ordering::SeqCst));
    }
}
