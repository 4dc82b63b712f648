//! Gemini `generateContent`.

use serde_json::{json, Map, Value};
use toolwright_core::providers::{gemini, Export, Provider};

use super::{env, malformed, usage, Transport};
use crate::message::Message;
use crate::model::{AgentEvent, BoxFuture, ChatModel, ModelError, ModelRequest, Turn};

const PROVIDER: &str = "Gemini";

/// A Gemini client: `POST {base_url}/models/{model}:generateContent`, not streamed.
///
/// The system prompt goes in `systemInstruction`; a model turn is replayed as its content came
/// (with the `thoughtSignature`s Gemini requires back); a turn's results go back together as
/// `functionResponse` parts of one user content.
///
/// ```no_run
/// use toolwright::agent::http::GeminiGenerate;
///
/// let gemini = GeminiGenerate::new("gemini-2.5-flash"); // GEMINI_API_KEY
/// # let _ = gemini;
/// ```
#[derive(Debug, Clone)]
pub struct GeminiGenerate {
    transport: Transport,
    model: String,
}

impl GeminiGenerate {
    /// A client for `model`, its key from `GEMINI_API_KEY`, else `GOOGLE_API_KEY`.
    pub fn new(model: impl Into<String>) -> Self {
        GeminiGenerate {
            transport: Transport::new(
                PROVIDER,
                "https://generativelanguage.googleapis.com/v1beta".into(),
                env("GEMINI_API_KEY").or_else(|| env("GOOGLE_API_KEY")),
            ),
            model: model.into(),
        }
    }

    /// The base URL, up to and including the API version (`.../v1beta`).
    pub fn base_url(mut self, url: impl Into<String>) -> Self {
        self.transport.base_url = url.into().trim_end_matches('/').to_owned();
        self
    }

    /// The API key (`x-goog-api-key`).
    pub fn api_key(mut self, key: impl Into<String>) -> Self {
        self.transport.key = Some(key.into());
        self
    }

    /// The request body this client sends for `request` (`GenerateContentRequest`).
    pub fn request_body(&self, request: &ModelRequest<'_>) -> Value {
        let mut system = request.system.to_owned();
        let mut contents = Vec::new();
        for message in request.messages {
            match message {
                Message::System(text) => {
                    if !system.is_empty() {
                        system.push_str("\n\n");
                    }
                    system.push_str(text);
                }
                Message::User(text) => {
                    contents.push(json!({"role": "user", "parts": [{"text": text}]}))
                }
                Message::Assistant(turn) => {
                    let content = match &turn.native {
                        Some(native @ Value::Object(_)) => native.clone(),
                        _ => {
                            let mut parts = Vec::new();
                            if let Some(text) = turn.text.as_deref().filter(|t| !t.is_empty()) {
                                parts.push(json!({"text": text}));
                            }
                            for call in &turn.calls {
                                let args = serde_json::from_str::<Value>(call.arguments())
                                    .ok()
                                    .filter(Value::is_object)
                                    .unwrap_or_else(|| Value::Object(Map::new()));
                                parts.push(
                                    json!({"functionCall": {"name": call.name(), "args": args}}),
                                );
                            }
                            json!({"role": "model", "parts": parts})
                        }
                    };
                    contents.push(content);
                }
                Message::ToolResults(outcomes) => contents.push(gemini::user_content(outcomes)),
            }
        }
        let mut body = Map::new();
        body.insert("contents".into(), Value::Array(contents));
        let has_tools = request
            .tools
            .pointer("/0/functionDeclarations")
            .and_then(Value::as_array)
            .is_some_and(|d| !d.is_empty());
        if has_tools {
            body.insert("tools".into(), request.tools.clone());
        }
        if !system.is_empty() {
            body.insert(
                "systemInstruction".into(),
                json!({"parts": [{"text": system}]}),
            );
        }
        Value::Object(body)
    }

    async fn complete_inner(&self, request: ModelRequest<'_>) -> Result<Turn, ModelError> {
        let body = self.request_body(&request);
        let url = self
            .transport
            .url(&format!("/models/{}:generateContent", self.model));
        let mut http = self.transport.client.post(url).json(&body);
        if let Some(key) = &self.transport.key {
            http = http.header("x-goog-api-key", key);
        }
        let answer = self.transport.json(http).await?;
        let content = answer
            .pointer("/candidates/0/content")
            .filter(|c| c.is_object())
            .ok_or_else(|| malformed(PROVIDER, "no `candidates[0].content`"))?;
        let calls: Vec<_> = gemini::parse_calls(&answer)
            .map_err(|e| malformed(PROVIDER, e))?
            .into_iter()
            .map(gemini::GeminiCall::into_call)
            .collect();
        let text: String = content
            .get("parts")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter(|p| p.get("thought").and_then(Value::as_bool) != Some(true))
            .filter_map(|p| p.get("text").and_then(Value::as_str))
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
                answer.get("usageMetadata"),
                // The tool-use prompt and the thinking are counted apart, and billed; a turn
                // of calls only may leave `candidatesTokenCount` out.
                &["promptTokenCount", "toolUsePromptTokenCount"],
                &["candidatesTokenCount", "thoughtsTokenCount"],
            ),
            native: Some(content.clone()),
        })
    }
}

impl ChatModel for GeminiGenerate {
    fn export(&self) -> Export {
        Export::new(Provider::Gemini)
    }

    fn complete<'a>(
        &'a self,
        request: ModelRequest<'a>,
    ) -> BoxFuture<'a, Result<Turn, ModelError>> {
        Box::pin(self.complete_inner(request))
    }
}
