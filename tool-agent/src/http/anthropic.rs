//! Anthropic Messages.

use serde_json::{json, Map, Value};
use toolwright_core::providers::{anthropic, Export, Provider};

use super::{env, malformed, usage, Transport};
use crate::message::Message;
use crate::model::{AgentEvent, BoxFuture, ChatModel, ModelError, ModelRequest, Turn};

const PROVIDER: &str = "Anthropic Messages";

/// An Anthropic Messages client: `POST {base_url}/v1/messages`, not streamed.
///
/// The system prompt (and any [`Message::System`]) goes in `system`; a turn's tool results go
/// back together in one user message, as Anthropic requires; an assistant turn is replayed as
/// its content blocks came (thinking blocks included).
///
/// ```no_run
/// use toolwright::agent::http::AnthropicMessages;
///
/// let claude = AnthropicMessages::new("claude-sonnet-4-5").max_tokens(2048); // ANTHROPIC_API_KEY
/// # let _ = claude;
/// ```
#[derive(Debug, Clone)]
pub struct AnthropicMessages {
    transport: Transport,
    model: String,
    max_tokens: u32,
    strict: bool,
    native_search: bool,
}

impl AnthropicMessages {
    /// A client for `model`, its key from `ANTHROPIC_API_KEY`.
    pub fn new(model: impl Into<String>) -> Self {
        AnthropicMessages {
            transport: Transport::new(
                PROVIDER,
                "https://api.anthropic.com".into(),
                env("ANTHROPIC_API_KEY"),
            ),
            model: model.into(),
            max_tokens: 4096,
            strict: false,
            native_search: false,
        }
    }

    /// The base URL (without `/v1`).
    pub fn base_url(mut self, url: impl Into<String>) -> Self {
        self.transport.base_url = url.into().trim_end_matches('/').to_owned();
        self
    }

    /// The API key (`x-api-key`).
    pub fn api_key(mut self, key: impl Into<String>) -> Self {
        self.transport.key = Some(key.into());
        self
    }

    /// `max_tokens` of each request (Anthropic requires one; default 4096).
    pub fn max_tokens(mut self, tokens: u32) -> Self {
        self.max_tokens = tokens;
        self
    }

    /// Strict tool use (grammar-constrained inputs; off by default).
    pub fn strict(mut self, strict: bool) -> Self {
        self.strict = strict;
        self
    }

    /// Lets the provider search the registry's deferred tools itself (Anthropic's `tool_search_tool_bm25`,
    /// with each deferred tool marked `defer_loading`) instead of the registry's search tool:
    /// [`Export::native_tool_search`](toolwright_core::providers::Export::native_tool_search).
    /// Off by default.
    pub fn native_tool_search(mut self, native: bool) -> Self {
        self.native_search = native;
        self
    }

    /// The request body this client sends for `request` (`MessageCreateParams`).
    pub fn request_body(&self, request: &ModelRequest<'_>) -> Value {
        let mut system = request.system.to_owned();
        let mut messages = Vec::new();
        for message in request.messages {
            match message {
                Message::System(text) => {
                    if !system.is_empty() {
                        system.push_str("\n\n");
                    }
                    system.push_str(text);
                }
                Message::User(text) => messages.push(json!({"role": "user", "content": text})),
                Message::Assistant(turn) => {
                    let content = match &turn.native {
                        Some(native @ Value::Array(_)) => native.clone(),
                        _ => {
                            let mut blocks = Vec::new();
                            if let Some(text) = turn.text.as_deref().filter(|t| !t.is_empty()) {
                                blocks.push(json!({"type": "text", "text": text}));
                            }
                            for call in &turn.calls {
                                let input = serde_json::from_str::<Value>(call.arguments())
                                    .ok()
                                    .filter(Value::is_object)
                                    .unwrap_or_else(|| Value::Object(Map::new()));
                                blocks.push(json!({"type": "tool_use", "id": call.id(),
                                                   "name": call.name(), "input": input}));
                            }
                            if blocks.is_empty() {
                                blocks.push(json!({"type": "text", "text": "(no answer)"}));
                            }
                            Value::Array(blocks)
                        }
                    };
                    messages.push(json!({"role": "assistant", "content": content}));
                }
                Message::ToolResults(outcomes) => messages.push(anthropic::user_message(outcomes)),
            }
        }
        let mut body = Map::new();
        body.insert("model".into(), Value::from(self.model.as_str()));
        body.insert("max_tokens".into(), Value::from(self.max_tokens));
        if !system.is_empty() {
            body.insert("system".into(), Value::from(system));
        }
        body.insert("messages".into(), Value::Array(messages));
        if request.tools.as_array().is_some_and(|t| !t.is_empty()) {
            body.insert("tools".into(), request.tools.clone());
        }
        Value::Object(body)
    }

    async fn complete_inner(&self, request: ModelRequest<'_>) -> Result<Turn, ModelError> {
        let body = self.request_body(&request);
        let mut http = self
            .transport
            .client
            .post(self.transport.url("/v1/messages"))
            .header("anthropic-version", "2023-06-01")
            .json(&body);
        if let Some(key) = &self.transport.key {
            http = http.header("x-api-key", key);
        }
        let answer = self.transport.json(http).await?;
        let content = answer
            .get("content")
            .filter(|c| c.is_array())
            .ok_or_else(|| malformed(PROVIDER, "no `content` array"))?;
        let calls = anthropic::parse_calls(&answer).map_err(|e| malformed(PROVIDER, e))?;
        let text: String = content
            .as_array()
            .into_iter()
            .flatten()
            .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect();
        if !text.is_empty() {
            request.events.emit(AgentEvent::TextDelta(&text));
        }
        for call in &calls {
            request.events.emit(AgentEvent::ToolCallStarted {
                id: call.id(),
                name: call.name(),
            });
        }
        Ok(Turn {
            text: (!text.is_empty()).then_some(text),
            calls,
            usage: usage(
                answer.get("usage"),
                // Tokens read from or written to the prompt cache are counted apart from
                // `input_tokens`, and billed.
                &[
                    "input_tokens",
                    "cache_creation_input_tokens",
                    "cache_read_input_tokens",
                ],
                &["output_tokens"],
            ),
            native: Some(content.clone()),
        })
    }
}

impl ChatModel for AnthropicMessages {
    fn export(&self) -> Export {
        Provider::Anthropic
            .strict(self.strict)
            .native_tool_search(self.native_search)
    }

    fn complete<'a>(
        &'a self,
        request: ModelRequest<'a>,
    ) -> BoxFuture<'a, Result<Turn, ModelError>> {
        Box::pin(self.complete_inner(request))
    }
}
