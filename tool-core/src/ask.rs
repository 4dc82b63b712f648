//! Questions a tool asks its user while it runs: [`ToolContext::ask`] with a form typed by a
//! struct, answered through whoever serves the call (an [`Asker`] on the [`Session`]).
//!
//! Over MCP the question is a form elicitation: sent to the client at once for a 2025-11-25
//! session, or, for a 2026-07-28 client (which gets no server-initiated requests), returned as
//! an input-required result; the client then sends the call again with the answer and the
//! tool runs again from its start, getting the answers it has so far at once. So a tool that
//! asks should ask before it acts: put every effect after the last question. A tool running as
//! an MCP task asks through its task instead (`input_required` until the client answers with
//! `tasks/update`), and goes on where it was.
//!
//! A caller with no asker (a plain [`Registry::call`](crate::Registry::call), the agent loop
//! unless its session has one) makes `ask` fail with `bad_request`, which the tool may handle
//! (go on with a default) or return.
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
//! [`Session`]: crate::Session

use std::fmt;
use std::future::Future;
use std::pin::Pin;

use serde_json::Value;

/// One question of a running tool.
#[derive(Debug, Clone)]
pub struct Question {
    pub(crate) tool: String,
    pub(crate) call_id: String,
    pub(crate) index: usize,
    pub(crate) name: Option<String>,
    pub(crate) message: String,
    pub(crate) schema: Value,
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

    /// What the user is asked.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The form: a JSON Schema object of the answer's fields (the asked type's schema).
    pub fn schema(&self) -> &Value {
        &self.schema
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

/// Who brings a tool's question to its user: set on the session
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
