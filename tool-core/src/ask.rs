//! What a tool asks of its user and its client while it runs: a form typed by a struct
//! ([`ToolContext::ask`]), a completion of the client's model ([`ToolContext::sample`]), the
//! client's [`Root`]s ([`ToolContext::roots`]), and log lines ([`ToolContext::log`]), brought by
//! whoever serves the call (an [`Asker`] on the [`Session`]).
//!
//! Over MCP a 2025-11-25 session's client gets each request at once (`elicitation/create`,
//! `sampling/createMessage`, `roots/list`, `notifications/message`). A 2026-07-28 client (which
//! gets no server-initiated requests) gets the questions as an input-required result; it then
//! sends the call again with the answers and the tool runs again from its start, getting the
//! answers it has so far at once. So a tool that asks should ask before it acts: put every
//! effect after the last question. Questions awaited together (`tokio::try_join!`) are asked in
//! one round. A tool running as an MCP task asks through its task instead (`input_required`
//! until the client answers with `tasks/update`), and goes on where it was. In the agent loop
//! the agent's model answers a sampling request.
//!
//! A caller with no asker (a plain [`Registry::call`](crate::Registry::call)), or a client that
//! did not declare the capability, makes the request fail with `bad_request`, which the tool may
//! handle (go on with a default) or return.
//!
//! ```
//! use toolwright::ask::Reply;
//! use toolwright::{ToolContext, ToolError};
//!
//! /// What the user wants shipped where, asked while the tool runs.
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! struct Destination {
//!     /// The street and number.
//!     street: String,
//!     /// The city.
//!     city: String,
//! }
//!
//! async fn ship(ctx: &ToolContext, order: &str) -> Result<String, ToolError> {
//!     match ctx.ask::<Destination>(format!("Where should {order} go?")).await? {
//!         Reply::Accepted(to) => Ok(format!("{order} ships to {}, {}", to.street, to.city)),
//!         Reply::Declined | Reply::Dismissed => Err(ToolError::bad_request(
//!             "the user did not say where to ship; ask them in the conversation",
//!         )),
//!     }
//! }
//! ```
//!
//! [`ToolContext::ask`]: crate::ToolContext::ask
//! [`ToolContext::sample`]: crate::ToolContext::sample
//! [`ToolContext::roots`]: crate::ToolContext::roots
//! [`ToolContext::log`]: crate::ToolContext::log
//! [`Session`]: crate::Session

use std::fmt;
use std::future::Future;
use std::pin::Pin;

use serde_json::Value;

mod client;
mod forward;

pub use client::{LogLevel, LogRecord, Role, Root, Sampled, Sampling, SamplingMessage};
pub(crate) use forward::forwarding;
pub use forward::ClientLogLayer;

/// One question of a running tool.
#[derive(Debug, Clone)]
pub struct Question {
    pub(crate) tool: String,
    pub(crate) call_id: String,
    pub(crate) index: usize,
    pub(crate) name: Option<String>,
    pub(crate) message: String,
    pub(crate) kind: Kind,
}

/// What a [`Question`] asks for.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Kind {
    /// A form filled in by the user: a JSON Schema object of the answer's fields. Answered
    /// [`Answer::Accepted`], [`Answer::Declined`] or [`Answer::Dismissed`].
    Form(Value),
    /// A completion of the client's model. Answered [`Answer::Sampled`].
    Sampling(Sampling),
    /// The client's roots. Answered [`Answer::Roots`].
    Roots,
}

impl Kind {
    /// The capability a client declares to answer it: `elicitation`, `sampling` or `roots`.
    pub fn capability(&self) -> &'static str {
        match self {
            Kind::Form(_) => "elicitation",
            Kind::Sampling(_) => "sampling",
            Kind::Roots => "roots",
        }
    }
}

impl Question {
    /// The tool that asks.
    pub fn tool(&self) -> &str {
        &self.tool
    }

    /// The call that asks.
    pub fn call_id(&self) -> &str {
        &self.call_id
    }

    /// Which question of this run of the tool it is: 0 for the first. A tool that runs again
    /// (for a 2026-07-28 client, after each answer) asks the same questions in the same order.
    pub fn index(&self) -> usize {
        self.index
    }

    /// The name the tool gave the question ([`ToolContext::ask_named`]), if any: over MCP
    /// 2026-07-28 the key of the question in the input-required result, for clients that
    /// answer a question by its name.
    ///
    /// [`ToolContext::ask_named`]: crate::ToolContext::ask_named
    pub fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }

    /// What the user is asked (for a sampling request, its last message; for roots, a line
    /// that says so).
    pub fn message(&self) -> &str {
        &self.message
    }

    /// What it asks for: a form, a completion, the roots.
    pub fn kind(&self) -> &Kind {
        &self.kind
    }

    /// The form of a form question: a JSON Schema object of the answer's fields (the asked
    /// type's schema); JSON `null` for a question of another kind.
    pub fn schema(&self) -> &Value {
        static NULL: Value = Value::Null;
        match &self.kind {
            Kind::Form(schema) => schema,
            _ => &NULL,
        }
    }
}

/// The user's answer, as an [`Asker`] brings it.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Answer {
    /// The form as the user filled it in.
    Accepted(Value),
    /// The user said no.
    Declined,
    /// The user closed the question without answering.
    Dismissed,
    /// The client model's completion, for a [`Kind::Sampling`] question.
    Sampled(Sampled),
    /// The client's roots, for a [`Kind::Roots`] question.
    Roots(Vec<Root>),
    /// The answer comes with the call sent again (a 2026-07-28 input-required result): the
    /// tool stops here and runs again from its start when it comes.
    Later,
    /// The question could not be asked; why, for the model.
    Unavailable(String),
}

/// The user's reply to [`ToolContext::ask`](crate::ToolContext::ask), typed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply<T> {
    /// The form as the user filled it in.
    Accepted(T),
    /// The user said no.
    Declined,
    /// The user closed the question without answering.
    Dismissed,
}

/// Who brings a tool's questions to its user and its client (forms, sampling requests, roots,
/// log lines): set on the session
/// ([`Session::with_asker`](crate::Session::with_asker)); the MCP server sets one per request.
///
/// ```
/// use std::future::Future;
/// use std::pin::Pin;
///
/// use serde_json::json;
/// use toolwright::ask::{Answer, Asker, Question};
///
/// /// Answers every question with the same form: for tests.
/// struct Always(serde_json::Value);
///
/// impl Asker for Always {
///     fn ask<'a>(&'a self, _question: &'a Question) -> Pin<Box<dyn Future<Output = Answer> + Send + 'a>> {
///         Box::pin(std::future::ready(Answer::Accepted(self.0.clone())))
///     }
/// }
///
/// let asker = Always(json!({"city": "Springfield"}));
/// # let _ = asker;
/// ```
pub trait Asker: Send + Sync + 'static {
    /// Asks `question` and waits for the answer (the tool's timeout bounds the wait).
    fn ask<'a>(
        &'a self,
        question: &'a Question,
    ) -> Pin<Box<dyn Future<Output = Answer> + Send + 'a>>;

    /// Takes a log line of the tool ([`ToolContext::log`](crate::ToolContext::log)) to the
    /// user's side: over MCP a `notifications/message` to the client, at or above the level
    /// the client set. It must not wait; the default drops it (every line is also a `tracing`
    /// event).
    fn log(&self, record: &LogRecord) {
        let _ = record;
    }
}

impl fmt::Debug for dyn Asker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Asker")
    }
}

/// The error that stops a tool whose answer comes with the call sent again
/// ([`Answer::Later`]): `conflict` (not retried, not counted by the breaker, its idempotency
/// key released), replaced by the server's input-required result before anyone sees it.
pub(crate) fn later() -> crate::ToolError {
    crate::ToolError::conflict(
        "this call waits for its user's answer to a question; it runs again when the answer comes",
    )
}

/// What `question` asks for, for messages: "an answer to a form", "a sampling request", "its roots".
pub(crate) fn what(question: &Question) -> &'static str {
    match question.kind() {
        Kind::Form(_) => "an answer to a form",
        Kind::Sampling(_) => "a completion of its model (sampling)",
        Kind::Roots => "its roots",
    }
}

/// The kind of `answer`, for messages.
pub(crate) fn answer_kind(answer: &Answer) -> &'static str {
    match answer {
        Answer::Accepted(_) | Answer::Declined | Answer::Dismissed => "a form's answer",
        Answer::Sampled(_) => "a completion",
        Answer::Roots(_) => "roots",
        Answer::Later => "later",
        Answer::Unavailable(_) => "unavailable",
    }
}

/// A tool's log line as a `tracing` event of the target `toolwright::tool_log`.
pub(crate) fn traced(record: &LogRecord) {
    let text = match record.data() {
        Value::String(text) => std::borrow::Cow::Borrowed(text.as_str()),
        other => std::borrow::Cow::Owned(other.to_string()),
    };
    let (tool, call_id, logger) = (record.tool(), record.call_id(), record.logger());
    match record.level() {
        LogLevel::Debug => {
            tracing::debug!(target: "toolwright::tool_log", tool, call_id, logger, "{text}")
        }
        LogLevel::Info | LogLevel::Notice => {
            tracing::info!(target: "toolwright::tool_log", tool, call_id, logger, "{text}")
        }
        LogLevel::Warning => {
            tracing::warn!(target: "toolwright::tool_log", tool, call_id, logger, "{text}")
        }
        _ => tracing::error!(target: "toolwright::tool_log", tool, call_id, logger, "{text}"),
    }
}
