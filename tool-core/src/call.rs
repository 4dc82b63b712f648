//! One proposed call ([`ToolCall`]); the conversation it belongs to ([`Session`]) and what a
//! tool body can see of both while it runs ([`Invocation`], [`ToolContext`], [`State`]) are
//! re-exported here from the modules that own them.

use serde::{Deserialize, Serialize};

use crate::progress::ProgressHandle;

pub use crate::context::{Invocation, State, ToolContext};
pub use crate::session::Session;

/// A call the model proposed: the provider's call id, the tool name, and the argument text
/// exactly as the model wrote it (parsed by the registry, never trusted).
///
/// ```
/// use toolwright::ToolCall;
///
/// let call = ToolCall::new("call_1", "search_orders", r#"{"query":"late"}"#);
/// assert_eq!(call.name(), "search_orders");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    id: String,
    name: String,
    arguments: String,
    /// Where the tool's progress reports go; one pointer, `None` for most calls.
    #[serde(skip)]
    progress: Option<ProgressHandle>,
}

impl ToolCall {
    /// A call with the provider's id, the tool name and the raw argument text.
    pub fn new(
        id: impl Into<String>,
        name: impl Into<String>,
        arguments: impl Into<String>,
    ) -> Self {
        ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: arguments.into(),
            progress: None,
        }
    }

    /// Sends the tool's progress reports ([`ToolContext::progress`]) to `handle`, which
    /// rate-limits them; without one, a report is a `tracing` event. See
    /// [the `progress` module](crate::progress).
    ///
    /// ```
    /// use toolwright::progress::{Progress, ProgressHandle};
    /// use toolwright::ToolCall;
    ///
    /// let handle = ProgressHandle::new(|p: Progress| println!("{} of {:?}", p.done, p.total));
    /// let call = ToolCall::new("call_1", "import_rows", "{}").with_progress(handle);
    /// assert!(call.progress().is_some());
    /// ```
    pub fn with_progress(mut self, handle: ProgressHandle) -> Self {
        self.progress = Some(handle);
        self
    }

    /// The progress handle attached with [`ToolCall::with_progress`].
    pub fn progress(&self) -> Option<&ProgressHandle> {
        self.progress.as_ref()
    }

    /// The provider's call id (OpenAI `tool_call_id`, Anthropic `tool_use_id`, ...).
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The tool name the model asked for.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The raw argument text.
    pub fn arguments(&self) -> &str {
        &self.arguments
    }

    pub(crate) fn into_parts(self) -> (String, String, String, Option<ProgressHandle>) {
        (self.id, self.name, self.arguments, self.progress)
    }
}
