//! Fallbacks (`#[tool(fallback = path)]`): when should one answer for a failed call, and
//! running it once, bounded and contained.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use serde_json::value::RawValue;

use super::Executed;
use crate::error::ToolError;
use crate::outcome::{ErrorKind, Status};
use crate::runtime::clock::ClockHandle;
use crate::runtime::contain;

/// A tool's result, interpreted: its status and its JSON text.
pub(crate) type Interpreted = (Status, Box<RawValue>);

/// A fallback's future, made by the tool's typed code.
pub(crate) type FallbackFuture<'a> =
    Pin<Box<dyn Future<Output = Result<Interpreted, ToolError>> + Send + 'a>>;

/// Whether the tool's fallback should answer for this call, and for which failure: it has one,
/// the call ended because the tool is unavailable (an open breaker, a transient failure that was
/// not or could no longer be retried), and no attempt may have acted, unless repeating the tool
/// is harmless anyway (`idempotent`).
pub(crate) fn wanted<T>(
    has_fallback: bool,
    idempotent: bool,
    executed: &Executed<T>,
) -> Option<ErrorKind> {
    if !has_fallback {
        return None;
    }
    let kind = executed.result.as_ref().err()?.kind;
    let unavailable = matches!(
        kind,
        ErrorKind::CircuitOpen
            | ErrorKind::Unavailable
            | ErrorKind::Timeout
            | ErrorKind::RateLimited
    );
    let safe = !executed.uncertain || idempotent;
    (unavailable && safe).then_some(kind)
}

/// Runs the fallback once, under the tool's `timeout` with panics contained. Its answer
/// replaces the failure (the outcome is then degraded, and this returns the failure it stands
/// in for, `kind`); its own failure is added to the tool's failure message.
#[cold]
pub(crate) async fn answer<'a>(
    (tool, timeout): (&str, Duration),
    clock: &ClockHandle,
    executed: &mut Executed<Interpreted>,
    kind: ErrorKind,
    make: Box<dyn FnOnce() -> FallbackFuture<'a> + Send + 'a>,
) -> Option<ErrorKind> {
    let cut = clock.now() + timeout;
    let answer = match clock.run_until(cut, contain(make)).await.0 {
        Some(Ok(result)) => result,
        Some(Err(_)) => Err(ToolError::new(
            ErrorKind::ToolPanicked,
            "it failed with an internal error",
        )),
        None => Err(ToolError::timeout(format!(
            "it did not answer within {} ms",
            timeout.as_millis()
        ))),
    };
    match answer {
        Ok(value) => {
            tracing::info!(
                target: "toolwright::execute",
                tool,
                error_type = kind.as_str(),
                "the tool is unavailable; its fallback answered"
            );
            executed.result = Ok(value);
            Some(kind)
        }
        Err(e) => {
            tracing::warn!(
                target: "toolwright::execute",
                tool,
                error_type = kind.as_str(),
                fallback_error_type = e.kind().as_str(),
                "the tool is unavailable and its fallback failed too"
            );
            if let Err(failure) = &mut executed.result {
                let end = if failure.message.ends_with('.') {
                    ""
                } else {
                    "."
                };
                failure.message = format!(
                    "{}{end} Its fallback failed too: {}",
                    failure.message,
                    e.message()
                );
            }
            None
        }
    }
}
