//! The OpenAI Responses API.

use serde_json::{json, Map, Value};
use toolwright_core::providers::{openai, Export, Provider};

use super::{env, malformed, usage, Transport};
use crate::message::Message;
use crate::model::{AgentEvent, BoxFuture, ChatModel, ModelError, ModelRequest, Turn};

const PROVIDER: &str = "OpenAI Responses";

/// A Responses API client: `POST {base_url}/responses`, not streamed, stateless (the whole
/// conversation is sent each time; `store` is left to the server's default).
///
/// The system prompt goes in `instructions`; a model turn is replayed as its output items came
/// (reasoning items included); each result is a `function_call_output` item.
///
/// ```no_run
/// use toolwright::agent::http::OpenAiResponses;
///
/// let model = OpenAiResponses::new("gpt-4.1-mini"); // OPENAI_API_KEY
/// # let _ = model;
/// ```
#[derive(Debug, Clone)]
pub struct OpenAiResponses {
    transport: Transport,
    model: String,
    strict: bool,
    native_search: bool,
}

impl OpenAiResponses {
    /// A client for `model`, its key from `OPENAI_API_KEY`, its base URL from
    /// `OPENAI_BASE_URL`, else OpenAI's.
    pub fn new(model: impl Into<String>) -> Self {
        let base = env("OPENAI_BASE_URL").unwrap_or_else(|| "https://api.openai.com/v1".into());
        OpenAiResponses {
            transport: Transport::new(PROVIDER, base, env("OPENAI_API_KEY")),
            model: model.into(),
            strict: true,
            native_search: false,
        }
    }

    /// The base URL, up to and including `/v1`.
    pub fn base_url(mut self, url: impl Into<String>) -> Self {
        self.transport.base_url = url.into().trim_end_matches('/').to_owned();
        self
    }

    /// The API key, sent as a bearer token.
    pub fn api_key(mut self, key: impl Into<String>) -> Self {
        self.transport.key = Some(key.into());
        self
    }

    /// Strict function calling (on by default).
    pub fn strict(mut self, strict: bool) -> Self {
        self.strict = strict;
        self
    }

    /// Lets the provider search the registry's deferred tools itself (OpenAI's hosted `tool_search`,
    /// with each deferred tool marked `defer_loading`) instead of the registry's search tool:
    /// [`Export::native_tool_search`](toolwright_core::providers::Export::native_tool_search).
    /// Off by default.
    pub fn native_tool_search(mut self, native: bool) -> Self {
        self.native_search = native;
        self
    }

    /// The request body this client sends for `request` (`ResponseCreateParams`).
    pub fn request_body(&self, request: &ModelRequest<'_>) -> Value {
        let mut input = Vec::new();
        for message in request.messages {
            match message {
                Message::System(text) => input.push(json!({"role": "system", "content": text})),
                Message::User(text) => input.push(json!({"role": "user", "content": text})),
                Message::Assistant(turn) => match &turn.native {
                    Some(Value::Array(items)) => input.extend(items.iter().cloned()),
                    _ => {
                        if let Some(text) = turn.text.as_deref().filter(|t| !t.is_empty()) {
                            input.push(json!({"role": "assistant", "content": text}));
                        }
                        for call in &turn.calls {
                            input.push(json!({"type": "function_call", "call_id": call.id(),
                                              "name": call.name(), "arguments": call.arguments()}));
                        }
                    }
                },
                Message::ToolResults(outcomes) => {
                    input.extend(outcomes.iter().map(openai::function_call_output))
                }
            }
        }
        let mut body = Map::new();
        body.insert("model".into(), Value::from(self.model.as_str()));
        if !request.system.is_empty() {
            body.insert("instructions".into(), Value::from(request.system));
        }
        body.insert("input".into(), Value::Array(input));
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
            .post(self.transport.url("/responses"))
            .json(&body);
        if let Some(key) = &self.transport.key {
            http = http.bearer_auth(key);
        }
        let answer = self.transport.json(http).await?;
        let output = answer
            .get("output")
            .filter(|o| o.is_array())
            .ok_or_else(|| malformed(PROVIDER, "no `output` array"))?;
        let calls = openai::parse_response_calls(&answer).map_err(|e| malformed(PROVIDER, e))?;
        let text: String = output
            .as_array()
            .into_iter()
            .flatten()
            .filter(|item| item.get("type").and_then(Value::as_str) == Some("message"))
            .filter_map(|item| item.get("content").and_then(Value::as_array))
            .flatten()
            .filter(|part| part.get("type").and_then(Value::as_str) == Some("output_text"))
            .filter_map(|part| part.get("text").and_then(Value::as_str))
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
            usage: usage(answer.get("usage"), &["input_tokens"], &["output_tokens"]),
            native: Some(output.clone()),
        })
    }
}

impl ChatModel for OpenAiResponses {
    fn export(&self) -> Export {
        Provider::OpenAiResponses
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
