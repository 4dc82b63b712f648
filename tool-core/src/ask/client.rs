//! What a tool asks of its client besides a form: a completion of the client's model
//! ([`Sampling`], answered [`Sampled`]), the client's [`Root`]s, and log lines ([`LogLevel`],
//! [`LogRecord`]).

use serde_json::Value;

/// Who speaks in a [`Sampling`] message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The user (the tool, on the user's behalf).
    User,
    /// The model.
    Assistant,
}

/// One text message of a [`Sampling`] request.
#[derive(Debug, Clone, PartialEq)]
pub struct SamplingMessage {
    role: Role,
    text: String,
}

impl SamplingMessage {
    /// Who says it.
    pub fn role(&self) -> Role {
        self.role
    }

    /// What is said.
    pub fn text(&self) -> &str {
        &self.text
    }
}

/// A request for a completion of the client's model, built by a tool
/// ([`ToolContext::sample`](crate::ToolContext::sample)): text messages, a system prompt, a
/// token cap, and hints about the model.
///
/// ```
/// use toolwright::ask::Sampling;
///
/// let request = Sampling::new("Summarise this diff in one sentence:\n+ fn main() {}")
///     .with_system("You review code tersely.")
///     .with_max_tokens(120)
///     .with_temperature(0.2)
///     .with_model_hint("claude");
/// assert_eq!(request.max_tokens(), 120);
/// assert_eq!(request.messages().len(), 1);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Sampling {
    messages: Vec<SamplingMessage>,
    system: Option<String>,
    max_tokens: u32,
    temperature: Option<f64>,
    stop: Vec<String>,
    model_hints: Vec<String>,
}

impl Sampling {
    /// The most tokens a request asks for unless it says otherwise.
    pub const DEFAULT_MAX_TOKENS: u32 = 1_024;

    /// A request of one user message, `prompt`, for at most
    /// [`DEFAULT_MAX_TOKENS`](Self::DEFAULT_MAX_TOKENS).
    pub fn new(prompt: impl Into<String>) -> Self {
        Sampling {
            messages: vec![SamplingMessage {
                role: Role::User,
                text: prompt.into(),
            }],
            system: None,
            max_tokens: Self::DEFAULT_MAX_TOKENS,
            temperature: None,
            stop: Vec::new(),
            model_hints: Vec::new(),
        }
    }

    /// Adds a message of the model (an earlier answer, or the start of the one wanted).
    pub fn assistant(mut self, text: impl Into<String>) -> Self {
        self.messages.push(SamplingMessage {
            role: Role::Assistant,
            text: text.into(),
        });
        self
    }

    /// Adds a message of the user.
    pub fn user(mut self, text: impl Into<String>) -> Self {
        self.messages.push(SamplingMessage {
            role: Role::User,
            text: text.into(),
        });
        self
    }

    /// The system prompt the client should use (it may not).
    pub fn with_system(mut self, text: impl Into<String>) -> Self {
        self.system = Some(text.into());
        self
    }

    /// The most tokens the answer may have.
    pub fn with_max_tokens(mut self, max_tokens: u32) -> Self {
        self.max_tokens = max_tokens;
        self
    }

    /// The sampling temperature (the client may ignore it).
    pub fn with_temperature(mut self, temperature: f64) -> Self {
        self.temperature = Some(temperature);
        self
    }

    /// A sequence that ends the answer.
    pub fn with_stop(mut self, sequence: impl Into<String>) -> Self {
        self.stop.push(sequence.into());
        self
    }

    /// A model name (or part of one) the client should prefer, in order of preference.
    pub fn with_model_hint(mut self, name: impl Into<String>) -> Self {
        self.model_hints.push(name.into());
        self
    }

    /// The messages, in order.
    pub fn messages(&self) -> &[SamplingMessage] {
        &self.messages
    }

    /// The system prompt, if any.
    pub fn system(&self) -> Option<&str> {
        self.system.as_deref()
    }

    /// The token cap of the answer.
    pub fn max_tokens(&self) -> u32 {
        self.max_tokens
    }

    /// The temperature, if set.
    pub fn temperature(&self) -> Option<f64> {
        self.temperature
    }

    /// The stop sequences.
    pub fn stop_sequences(&self) -> &[String] {
        &self.stop
    }

    /// The model hints, most preferred first.
    pub fn model_hints(&self) -> &[String] {
        &self.model_hints
    }

    /// A one-line account of the request, for logs and approvals: its last message, cut.
    pub(crate) fn summary(&self) -> String {
        let last = self.messages.last().map_or("", |m| m.text.as_str());
        let mut text: String = last.chars().take(120).collect();
        if text.len() < last.len() {
            text.push_str("...");
        }
        text
    }
}

/// The client model's answer to a [`Sampling`] request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sampled {
    text: String,
    model: String,
    stop_reason: Option<String>,
}

impl Sampled {
    /// An answer of `text` by `model`.
    pub fn new(text: impl Into<String>, model: impl Into<String>) -> Self {
        Sampled {
            text: text.into(),
            model: model.into(),
            stop_reason: None,
        }
    }

    /// Why the model stopped (`endTurn`, `maxTokens`, `stopSequence`, or the model's own word).
    pub fn with_stop_reason(mut self, reason: impl Into<String>) -> Self {
        self.stop_reason = Some(reason.into());
        self
    }

    /// The answer's text (the text blocks of the answer, joined).
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The model that answered, as the client names it.
    pub fn model(&self) -> &str {
        &self.model
    }

    /// Why the model stopped, if the client said.
    pub fn stop_reason(&self) -> Option<&str> {
        self.stop_reason.as_deref()
    }
}

/// A root the client exposes: a directory or other place a tool may work in, by URI
/// (`file:///home/ada/project`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Root {
    uri: String,
    name: Option<String>,
}

impl Root {
    /// A root at `uri`.
    pub fn new(uri: impl Into<String>) -> Self {
        Root {
            uri: uri.into(),
            name: None,
        }
    }

    /// The root with a name for people.
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Its URI.
    pub fn uri(&self) -> &str {
        &self.uri
    }

    /// Its name, if the client gave one.
    pub fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }
}

/// How much a log line matters, from the least: the syslog levels MCP uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LogLevel {
    /// Detail for debugging.
    Debug,
    /// Normal progress.
    Info,
    /// Normal but significant.
    Notice,
    /// Something unexpected the tool went on from.
    Warning,
    /// Something failed.
    Error,
    /// A component failed.
    Critical,
    /// Someone must act now.
    Alert,
    /// Nothing works.
    Emergency,
}

impl LogLevel {
    /// Its name on the wire (`"warning"`).
    pub fn as_str(self) -> &'static str {
        match self {
            LogLevel::Debug => "debug",
            LogLevel::Info => "info",
            LogLevel::Notice => "notice",
            LogLevel::Warning => "warning",
            LogLevel::Error => "error",
            LogLevel::Critical => "critical",
            LogLevel::Alert => "alert",
            LogLevel::Emergency => "emergency",
        }
    }
}

/// One log line of a running tool ([`ToolContext::log`](crate::ToolContext::log)), as an
/// [`Asker`](crate::ask::Asker) receives it.
#[derive(Debug, Clone)]
pub struct LogRecord {
    pub(crate) tool: String,
    pub(crate) call_id: String,
    pub(crate) level: LogLevel,
    pub(crate) logger: Option<String>,
    pub(crate) data: Value,
}

impl LogRecord {
    /// The tool that logs.
    pub fn tool(&self) -> &str {
        &self.tool
    }

    /// The call that logs.
    pub fn call_id(&self) -> &str {
        &self.call_id
    }

    /// How much it matters.
    pub fn level(&self) -> LogLevel {
        self.level
    }

    /// The logger's name: the tool's unless it said another.
    pub fn logger(&self) -> &str {
        self.logger.as_deref().unwrap_or(&self.tool)
    }

    /// What is logged: a string for a line of text, any JSON for structured data.
    pub fn data(&self) -> &Value {
        &self.data
    }
}
