//! The model behind the loop: one trait, [`ChatModel`], that sends a conversation and the
//! tools and returns the model's turn.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde_json::Value;
use toolwright_core::providers::Export;
use toolwright_core::{ErrorKind, Outcome, ToolCall, ToolError};

use crate::message::{Message, Usage};

/// A boxed future, so [`ChatModel`] is object-safe (`Arc<dyn ChatModel>`).
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A model that answers a conversation, possibly with tool calls.
///
/// Implemented by [`ScriptedModel`](crate::ScriptedModel) (turns given in advance, for tests and
/// demos) and, with the `http` feature, by the provider clients in [`http`](crate#model-clients).
/// A client returns the failure of one request classified as a tool's would be
/// ([`ModelError::kind`]): the agent retries `rate_limited`, `unavailable` and `timeout` itself.
pub trait ChatModel: Send + Sync + 'static {
    /// How the registry's tools are exported for this model (the provider and its strict
    /// mode); the agent exports once, when it is built.
    fn export(&self) -> Export;

    /// One request: the conversation and the tools in, the model's turn out.
    fn complete<'a>(&'a self, request: ModelRequest<'a>)
        -> BoxFuture<'a, Result<Turn, ModelError>>;
}

impl<M: ChatModel + ?Sized> ChatModel for Arc<M> {
    fn export(&self) -> Export {
        (**self).export()
    }

    fn complete<'a>(
        &'a self,
        request: ModelRequest<'a>,
    ) -> BoxFuture<'a, Result<Turn, ModelError>> {
        (**self).complete(request)
    }
}

/// What the loop sends the model.
#[derive(Clone, Copy)]
pub struct ModelRequest<'a> {
    /// The agent's system prompt (the error contract included unless turned off).
    pub system: &'a str,
    /// The conversation so far.
    pub messages: &'a [Message],
    /// The tools, exported for [`ChatModel::export`]: the value of the provider's `tools` field.
    pub tools: &'a Value,
    /// Where a streaming client reports text and tool calls as they arrive. What a client does
    /// not report here the loop reports when the answer is whole: its text at once, and each
    /// of its calls as started.
    pub events: &'a Events,
}

impl fmt::Debug for ModelRequest<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ModelRequest")
            .field("messages", &self.messages.len())
            .finish_non_exhaustive()
    }
}

/// The model's answer to one request.
#[derive(Debug, Clone, Default)]
pub struct Turn {
    /// Text, if any.
    pub text: Option<String>,
    /// Tool calls, in order; their argument text exactly as the model wrote it.
    pub calls: Vec<ToolCall>,
    /// Tokens, when the provider reports them.
    pub usage: Option<Usage>,
    /// The answer in the provider's format, replayed to the same provider
    /// ([`AssistantTurn::native`](crate::AssistantTurn::native)).
    pub native: Option<Value>,
}

impl Turn {
    /// A turn of text only: the model's final answer.
    pub fn text(text: impl Into<String>) -> Self {
        Turn {
            text: Some(text.into()),
            ..Turn::default()
        }
    }

    /// A turn of tool calls.
    pub fn calls(calls: impl IntoIterator<Item = ToolCall>) -> Self {
        Turn {
            calls: calls.into_iter().collect(),
            ..Turn::default()
        }
    }

    /// The same turn, with token usage.
    pub fn with_usage(mut self, input_tokens: u64, output_tokens: u64) -> Self {
        self.usage = Some(Usage {
            input_tokens,
            output_tokens,
        });
        self
    }
}

/// A model request that failed, classified with the tools' taxonomy: `rate_limited` (with the
/// provider's `Retry-After`), `unavailable` (5xx, a refused or reset connection, a stream cut
/// short), `timeout`, `auth_expired` (401), `bad_request` (400: the request itself was wrong),
/// `invalid_result` (an answer that is not the provider's format).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct ModelError {
    kind: ErrorKind,
    message: String,
    retry_after: Option<Duration>,
    attempts: u32,
}

impl ModelError {
    /// An error of this kind.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        ModelError {
            kind,
            message: message.into(),
            retry_after: None,
            attempts: 1,
        }
    }

    /// The same error, asking to wait this long before the next request (`Retry-After`).
    pub fn with_retry_after(mut self, wait: Duration) -> Self {
        self.retry_after = Some(wait);
        self
    }

    pub(crate) fn with_attempts(mut self, attempts: u32) -> Self {
        self.attempts = attempts;
        self
    }

    /// The class of the failure.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// What went wrong, for a log or the user.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// How long the provider asked to wait.
    pub fn retry_after(&self) -> Option<Duration> {
        self.retry_after
    }

    /// Requests made before the agent gave up (1 when it was not retried).
    pub fn attempts(&self) -> u32 {
        self.attempts
    }
}

impl From<ToolError> for ModelError {
    fn from(e: ToolError) -> Self {
        let mut error = ModelError::new(e.kind(), e.message().to_owned());
        error.retry_after = e.retry_after();
        error
    }
}

impl fmt::Display for ModelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "model request failed ({}): {}", self.kind, self.message)?;
        if self.attempts > 1 {
            write!(f, " (after {} attempts)", self.attempts)?;
        }
        Ok(())
    }
}

impl std::error::Error for ModelError {}

/// What happens during a run, as it happens, for an application to show.
///
/// Every client reports every event: a streaming client the text and each call as they
/// arrive, and for a client that does not stream (or a [`ChatModel`] of the application's own
/// that reports nothing) the loop reports its answer's text as one [`TextDelta`](Self::TextDelta)
/// and each of its calls as a [`ToolCallStarted`](Self::ToolCallStarted) once the answer is
/// whole, before any call runs.
#[derive(Debug)]
#[non_exhaustive]
pub enum AgentEvent<'a> {
    /// A piece of the model's text (streaming clients; for others, the whole text at once).
    TextDelta(&'a str),
    /// The model started a tool call: its name is known, and from a streaming client its
    /// arguments are still arriving (from others, the answer is whole). Once per call.
    ToolCallStarted {
        /// The provider's call id.
        id: &'a str,
        /// The tool.
        name: &'a str,
    },
    /// A tool call finished: the call as the model made it, and what it came to.
    ToolOutcome {
        /// The call.
        call: &'a ToolCall,
        /// Its outcome.
        outcome: &'a Outcome,
    },
    /// A model request failed and is retried after `wait`; text streamed by the failed attempt
    /// is void.
    ModelRetry {
        /// The failure.
        error: &'a ModelError,
        /// The wait before the next attempt.
        wait: Duration,
    },
    /// A running tool sent a log line ([`ToolContext::log`](toolwright_core::ToolContext::log)).
    ToolLog {
        /// The line: its tool, call, level and data.
        record: &'a toolwright_core::ask::LogRecord,
    },
    /// A step ended: the model answered and its calls (if any) ran.
    StepFinished {
        /// The step, from 1.
        step: usize,
    },
}

type Sink = dyn Fn(&AgentEvent<'_>) + Send + Sync;

/// Where events go: nowhere, or a callback set with
/// [`AgentBuilder::on_event`](crate::AgentBuilder::on_event).
#[derive(Clone, Default)]
pub struct Events(Option<Arc<Sink>>);

impl Events {
    /// No listener.
    pub fn none() -> Self {
        Events(None)
    }

    /// Events go to `f`.
    pub fn new(f: impl Fn(&AgentEvent<'_>) + Send + Sync + 'static) -> Self {
        Events(Some(Arc::new(f)))
    }

    /// Reports one event.
    pub fn emit(&self, event: AgentEvent<'_>) {
        if let Some(sink) = &self.0 {
            sink(&event);
        }
    }
}

/// What a client reported of one answer ([`Events::watch`]), so the loop reports the rest.
#[derive(Default)]
pub(crate) struct Reported {
    /// `(id, name)` of each call announced.
    calls: Vec<(String, String)>,
    /// Whether any text was.
    text: bool,
}

impl Events {
    /// The same listener for one model request, remembering in `reported` what the client
    /// reports.
    pub(crate) fn watch(&self, reported: &Arc<Mutex<Reported>>) -> Events {
        let Some(sink) = self.0.clone() else {
            return Events::none();
        };
        let reported = Arc::clone(reported);
        Events::new(move |event| {
            {
                let mut reported = reported.lock().unwrap_or_else(PoisonError::into_inner);
                match event {
                    AgentEvent::ToolCallStarted { id, name } => {
                        reported.calls.push(((*id).to_owned(), (*name).to_owned()))
                    }
                    AgentEvent::TextDelta(_) => reported.text = true,
                    _ => {}
                }
            }
            sink(event);
        })
    }

    /// Reports what the client left unreported of `turn`: its text whole, when none of it was,
    /// and each call not announced as started.
    pub(crate) fn report_rest(&self, turn: &Turn, reported: &Mutex<Reported>) {
        if self.0.is_none() {
            return;
        }
        let mut seen =
            std::mem::take(&mut *reported.lock().unwrap_or_else(PoisonError::into_inner));
        if let Some(text) = turn.text.as_deref().filter(|t| !t.is_empty() && !seen.text) {
            self.emit(AgentEvent::TextDelta(text));
        }
        for call in &turn.calls {
            let announced = seen
                .calls
                .iter()
                .position(|(id, name)| id == call.id() && name == call.name());
            match announced {
                Some(at) => {
                    seen.calls.swap_remove(at);
                }
                None => self.emit(AgentEvent::ToolCallStarted {
                    id: call.id(),
                    name: call.name(),
                }),
            }
        }
    }
}

impl fmt::Debug for Events {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.0.is_some() {
            "Events(listener)"
        } else {
            "Events(none)"
        })
    }
}
