//! What every stage uses and none owns: the boxed future of a type-erased stage, containment of
//! application code's panics, the registry's clock and random source, and which bytes JSON text
//! escapes. A leaf: it imports nothing else of the crate.

pub(crate) mod clock;
pub(crate) mod random;

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;

use clock::ClockHandle;
use random::RandomHandle;

/// A stage's future with its type erased.
pub(crate) type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// The clock and random source a registry runs with.
#[derive(Clone, Default)]
pub(crate) struct Sources {
    pub(crate) clock: ClockHandle,
    pub(crate) random: RandomHandle,
}

/// Application code (a tool body, a fallback, an approver, a repairer) with its panics
/// contained. `make` runs on the first poll, inside the containment: a panic while it builds
/// its future is caught like one while the future runs.
pub(crate) fn contain<M: FnOnce() -> F, F: Future>(make: M) -> Contain<M, F> {
    Contain::Make { make: Some(make) }
}

pin_project_lite::pin_project! {
    /// See [`contain`]. A named future rather than an `async` block, so the closure and the
    /// future it makes share their storage in the call's future.
    #[project = ContainProj]
    pub(crate) enum Contain<M, F> {
        Make { make: Option<M> },
        Run { #[pin] future: F },
    }
}

impl<M: FnOnce() -> F, F: Future> Future for Contain<M, F> {
    type Output = std::thread::Result<F::Output>;

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        loop {
            match self.as_mut().project() {
                ContainProj::Make { make } => {
                    let Some(make) = make.take() else {
                        return std::task::Poll::Ready(Err(Box::new("polled after completion")));
                    };
                    match std::panic::catch_unwind(AssertUnwindSafe(make)) {
                        Ok(future) => self.set(Contain::Run { future }),
                        Err(panic) => return std::task::Poll::Ready(Err(panic)),
                    }
                }
                ContainProj::Run { future } => {
                    return match std::panic::catch_unwind(AssertUnwindSafe(|| future.poll(cx))) {
                        Ok(poll) => poll.map(Ok),
                        Err(panic) => std::task::Poll::Ready(Err(panic)),
                    };
                }
            }
        }
    }
}

/// Whether JSON text must escape the byte `b` inside a string (as serde_json does): `"`, `\`
/// and the controls below U+0020; every other byte, of UTF-8 text, is its own text. Also the
/// bytes that end a run of plain text when a string is read.
#[inline]
pub(crate) fn needs_escape(b: u8) -> bool {
    // Bitwise, not short-circuit: a pass that does not stop early has no branch per byte.
    (b < 0x20) | (b == b'"') | (b == b'\\')
}
