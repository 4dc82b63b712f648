//! The conversation as the loop keeps it: provider-neutral messages, each client writes them in
//! its provider's wire format.

use std::ops::AddAssign;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use toolwright_core::{Outcome, ToolCall};

/// One message of a conversation.
///
/// Tool results are one message per assistant turn, in the order of the calls: Anthropic and
/// Gemini want them together in one message, OpenAI as consecutive `tool` messages, and every
/// client writes them from here.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "role", content = "content", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Message {
    /// Instructions for the model. The agent's own system prompt (with the error contract) is
    /// sent first; a `System` message given to [`Agent::run`](crate::Agent::run) is sent too.
    System(String),
    /// What the user said.
    User(String),
    /// What the model answered: text, tool calls, or both.
    Assistant(AssistantTurn),
    /// The outcomes of one assistant turn's calls, in the order of the calls.
    ToolResults(Vec<Outcome>),
}

impl Message {
    /// A user message.
    pub fn user(text: impl Into<String>) -> Self {
        Message::User(text.into())
    }

    /// A system message.
    pub fn system(text: impl Into<String>) -> Self {
        Message::System(text.into())
    }

    /// An assistant message of text only (a turn from an earlier conversation, say).
    pub fn assistant(text: impl Into<String>) -> Self {
        Message::Assistant(AssistantTurn {
            text: Some(text.into()),
            calls: Vec::new(),
            native: None,
        })
    }

    /// Bytes this message holds on the heap (text, argument text, outcome envelopes), for
    /// measuring what a running conversation costs.
    pub fn heap_bytes(&self) -> usize {
        match self {
            Message::System(text) | Message::User(text) => text.capacity(),
            Message::Assistant(turn) => {
                turn.text.as_ref().map_or(0, String::capacity)
                    + turn
                        .calls
                        .iter()
                        .map(|c| {
                            std::mem::size_of::<ToolCall>()
                                + c.id().len()
                                + c.name().len()
                                + c.arguments().len()
                        })
                        .sum::<usize>()
                    + turn.native.as_ref().map_or(0, |v| v.to_string().len())
            }
            Message::ToolResults(outcomes) => outcomes
                .iter()
                .map(|o| {
                    std::mem::size_of::<Outcome>()
                        + o.call_id().len()
                        + o.data().map_or(0, |d| d.get().len())
                        + o.message().map_or(0, str::len)
                        + o.raw_arguments().map_or(0, str::len)
                })
                .sum(),
        }
    }
}

/// One answer of the model.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct AssistantTurn {
    /// The text, if the model wrote any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// The tool calls, in the order the model made them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub calls: Vec<ToolCall>,
    /// The answer in the provider's own format, when the client needs to send it back as it came
    /// (Gemini's `thoughtSignature`, Anthropic's and the Responses API's reasoning items): the
    /// client that made it replays it, any other ignores it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub native: Option<Value>,
}

/// Tokens, as the provider reports them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Tokens of the request (prompt, tools, history).
    pub input_tokens: u64,
    /// Tokens of the answer.
    pub output_tokens: u64,
}

impl Usage {
    /// Both together.
    pub fn total(&self) -> u64 {
        self.input_tokens.saturating_add(self.output_tokens)
    }
}

/// Saturating: a count read back from a stored run may be anything.
impl AddAssign for Usage {
    fn add_assign(&mut self, other: Usage) {
        self.input_tokens = self.input_tokens.saturating_add(other.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(other.output_tokens);
    }
}
