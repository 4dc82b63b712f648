//! The span of one call (see the [module docs](super) for its name and fields): made in front
//! of the call's future only when a subscriber wants it, and told the outcome when the call ends.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use tracing::field::Empty;
use tracing::Span;

use crate::outcome::{Outcome, Status};
use crate::session::Session;

/// The span of one call, disabled (and free) when no subscriber wants it.
pub(crate) fn call(tool: &str, call_id: &str, session: &Session) -> Span {
    let span = tracing::info_span!(
        target: "toolwright::span",
        "execute_tool",
        otel.name = %format_args!("execute_tool {tool}"),
        otel.kind = "internal",
        otel.status_code = Empty,
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = tool,
        gen_ai.tool.call.id = call_id,
        gen_ai.tool.type = "function",
        gen_ai.conversation.id = Empty,
        error.type = Empty,
        toolwright.status = Empty,
        toolwright.seam = Empty,
        toolwright.attempts = Empty,
        toolwright.degraded_by = Empty,
        toolwright.replayed = Empty,
    );
    // Outside a conversation there is no conversation id to give.
    if !span.is_disabled() && session.id() != "anonymous" {
        span.record("gen_ai.conversation.id", session.id());
    }
    span
}

/// What the outcome says, on its span.
pub(crate) fn record(span: &Span, outcome: &Outcome) {
    span.record("toolwright.status", outcome.status().as_str());
    span.record("toolwright.attempts", outcome.attempts());
    span.record("toolwright.replayed", outcome.is_replayed());
    if let Some(seam) = outcome.seam() {
        span.record("toolwright.seam", seam.as_str());
    }
    if let Some(kind) = outcome.degraded_by() {
        span.record("toolwright.degraded_by", kind.as_str());
    }
    if outcome.status() == Status::Error {
        if let Some(kind) = outcome.error_kind() {
            span.record("error.type", kind.as_str());
        }
        span.record("otel.status_code", "ERROR");
    }
}

pin_project_lite::pin_project! {
    /// A call's future run inside its span, which learns the outcome when the call ends. Made
    /// only when the span is enabled: an untraced call is the pipeline's future alone.
    pub(crate) struct Traced<F> {
        span: Span,
        #[pin]
        inner: F,
    }
}

impl<F> Traced<F> {
    pub(crate) fn new(span: Span, inner: F) -> Self {
        Traced { span, inner }
    }
}

impl<F: Future<Output = Outcome>> Future for Traced<F> {
    type Output = Outcome;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Outcome> {
        let this = self.project();
        let _entered = this.span.enter();
        let poll = this.inner.poll(cx);
        if let Poll::Ready(outcome) = &poll {
            record(this.span, outcome);
        }
        poll
    }
}
