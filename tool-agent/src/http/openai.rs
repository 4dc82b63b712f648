//! OpenAI Chat Completions, and every server that speaks it.

use std::collections::BTreeMap;
use std::time::Duration;

use futures_util::StreamExt;
use serde_json::{json, Map, Value};
use sse_stream::SseStream;
use tokio::time::Instant;
use toolwright_core::providers::{openai, Export, Provider};
use toolwright_core::{ErrorKind, ToolCall};

use super::{env, malformed, usage, Transport};
use crate::message::Message;
use crate::model::{AgentEvent, BoxFuture, ChatModel, ModelError, ModelRequest, Turn};

const PROVIDER: &str = "OpenAI Chat Completions";

/// A Chat Completions client: `POST {base_url}/chat/completions`, streaming (server-sent events)
/// or not.
///
/// With [`streaming`](Self::streaming), text arrives as [`AgentEvent::TextDelta`]s and each call
/// as an [`AgentEvent::ToolCallStarted`] as soon as its name does; a call's argument text is
/// assembled from its deltas and only then parsed and validated by the registry. A stream that
/// ends before its `finish_reason` and `[DONE]` is `unavailable` (and retried), never a turn
/// cut in half. A stream that stalls is a `timeout` (and retried within the run's deadline):
/// no first event within [`first_chunk_timeout`](Self::first_chunk_timeout) (60 s), no event
/// within [`chunk_timeout`](Self::chunk_timeout) of the last (30 s), or not done within
/// [`stream_timeout`](Self::stream_timeout) (10 min).
///
/// ```no_run
/// use toolwright::agent::http::OpenAiChat;
///
/// let openai = OpenAiChat::new("gpt-4.1-mini"); // key from OPENAI_API_KEY
/// let local = OpenAiChat::new("Qwen/Qwen2.5-7B-Instruct")
///     .base_url("http://127.0.0.1:8000/v1") // vLLM
///     .strict(false);
/// # let _ = (openai, local);
/// ```
#[derive(Debug, Clone)]
pub struct OpenAiChat {
    transport: Transport,
    model: String,
    stream: bool,
    strict: bool,
    max_tokens: Option<u32>,
    timeouts: StreamTimeouts,
}

/// The first chunk of a stream waited for when none is set: 60 s, from sending the request
/// to its first event (a reasoning model may think that long before it writes).
///
/// ```
/// use toolwright::agent::http::{OpenAiChat, DEFAULT_FIRST_CHUNK_TIMEOUT};
///
/// // A reasoning model that thinks longer before it writes:
/// let model = OpenAiChat::new("o3").streaming(true).first_chunk_timeout(DEFAULT_FIRST_CHUNK_TIMEOUT * 3);
/// # let _ = model;
/// ```
pub const DEFAULT_FIRST_CHUNK_TIMEOUT: Duration = Duration::from_secs(60);

/// The wait between two events of a stream when none is set: 30 s, far longer than a provider
/// that is still writing pauses.
///
/// ```
/// use toolwright::agent::http::{OpenAiChat, DEFAULT_CHUNK_TIMEOUT};
///
/// let model = OpenAiChat::new("gpt-4.1-mini").streaming(true).chunk_timeout(DEFAULT_CHUNK_TIMEOUT / 3);
/// # let _ = model;
/// ```
pub const DEFAULT_CHUNK_TIMEOUT: Duration = Duration::from_secs(30);

/// The whole of a stream when no limit is set: 10 minutes. The agent's own
/// [`model_timeout`](crate::AgentBuilder::model_timeout) (120 s by default) bounds a request
/// made by the loop sooner.
///
/// ```
/// use std::time::Duration;
/// use toolwright::agent::http::DEFAULT_STREAM_TIMEOUT;
///
/// assert_eq!(DEFAULT_STREAM_TIMEOUT, Duration::from_secs(600));
/// ```
pub const DEFAULT_STREAM_TIMEOUT: Duration = Duration::from_secs(600);

/// When a stream counts as stalled.
#[derive(Debug, Clone, Copy)]
struct StreamTimeouts {
    first: Duration,
    between: Duration,
    total: Duration,
}

impl OpenAiChat {
    /// A client for `model`, its key from `OPENAI_API_KEY` (none is sent if it is unset, as a
    /// local server needs none) and its base URL from `OPENAI_BASE_URL`, else OpenAI's.
    pub fn new(model: impl Into<String>) -> Self {
        let base = env("OPENAI_BASE_URL").unwrap_or_else(|| "https://api.openai.com/v1".into());
        OpenAiChat {
            transport: Transport::new(PROVIDER, base, env("OPENAI_API_KEY")),
            model: model.into(),
            stream: false,
            strict: true,
            max_tokens: None,
            timeouts: StreamTimeouts {
                first: DEFAULT_FIRST_CHUNK_TIMEOUT,
                between: DEFAULT_CHUNK_TIMEOUT,
                total: DEFAULT_STREAM_TIMEOUT,
            },
        }
    }

    /// The server's base URL, up to and including `/v1` (`http://127.0.0.1:8080/v1` for
    /// llama.cpp's server, `http://127.0.0.1:11434/v1` for Ollama).
    pub fn base_url(mut self, url: impl Into<String>) -> Self {
        self.transport.base_url = url.into().trim_end_matches('/').to_owned();
        self
    }

    /// The API key, sent as a bearer token.
    pub fn api_key(mut self, key: impl Into<String>) -> Self {
        self.transport.key = Some(key.into());
        self
    }

    /// Streams the answer (server-sent events).
    pub fn streaming(mut self, stream: bool) -> Self {
        self.stream = stream;
        self
    }

    /// Strict function calling (on by default: OpenAI then guarantees arguments that match the
    /// schema). Some compatible servers reject or ignore `strict`; turn it off for them.
    pub fn strict(mut self, strict: bool) -> Self {
        self.strict = strict;
        self
    }

    /// `max_completion_tokens` of each request.
    pub fn max_tokens(mut self, tokens: u32) -> Self {
        self.max_tokens = Some(tokens);
        self
    }

    /// How long a streamed answer may take to start: from sending the request to its first
    /// event. Past it the request is a `timeout`, which the agent retries. Default:
    /// [`DEFAULT_FIRST_CHUNK_TIMEOUT`], 60 s.
    ///
    /// ```
    /// use std::time::Duration;
    /// use toolwright::agent::http::OpenAiChat;
    ///
    /// let model = OpenAiChat::new("gpt-4.1-mini")
    ///     .streaming(true)
    ///     .first_chunk_timeout(Duration::from_secs(20))
    ///     .chunk_timeout(Duration::from_secs(10))
    ///     .stream_timeout(Duration::from_secs(180));
    /// # let _ = model;
    /// ```
    pub fn first_chunk_timeout(mut self, timeout: Duration) -> Self {
        self.timeouts.first = timeout;
        self
    }

    /// How long a stream may go without an event once it started: past it the stream stalled,
    /// and the request is a `timeout`, which the agent retries. Default:
    /// [`DEFAULT_CHUNK_TIMEOUT`], 30 s.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use toolwright::agent::http::OpenAiChat;
    /// let model = OpenAiChat::new("gpt-4.1-mini").streaming(true).chunk_timeout(Duration::from_secs(5));
    /// # let _ = model;
    /// ```
    pub fn chunk_timeout(mut self, timeout: Duration) -> Self {
        self.timeouts.between = timeout;
        self
    }

    /// How long a whole streamed answer may take, however steadily it arrives: past it the
    /// request is a `timeout`. Default: [`DEFAULT_STREAM_TIMEOUT`], 10 minutes.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use toolwright::agent::http::OpenAiChat;
    /// let model = OpenAiChat::new("gpt-4.1-mini").streaming(true).stream_timeout(Duration::from_secs(90));
    /// # let _ = model;
    /// ```
    pub fn stream_timeout(mut self, timeout: Duration) -> Self {
        self.timeouts.total = timeout;
        self
    }

    /// The reqwest client to send with (proxies, timeouts, TLS settings).
    pub fn client(mut self, client: reqwest::Client) -> Self {
        self.transport.client = client;
        self
    }

    /// The request body this client sends for `request`: the Chat Completions
    /// `CompletionCreateParams`.
    pub fn request_body(&self, request: &ModelRequest<'_>) -> Value {
        let mut body = Map::new();
        body.insert("model".into(), Value::from(self.model.as_str()));
        body.insert(
            "messages".into(),
            Value::Array(messages(request.system, request.messages)),
        );
        if request.tools.as_array().is_some_and(|t| !t.is_empty()) {
            body.insert("tools".into(), request.tools.clone());
        }
        if let Some(tokens) = self.max_tokens {
            body.insert("max_completion_tokens".into(), Value::from(tokens));
        }
        if self.stream {
            body.insert("stream".into(), Value::Bool(true));
            body.insert("stream_options".into(), json!({"include_usage": true}));
        }
        Value::Object(body)
    }

    async fn complete_inner(&self, request: ModelRequest<'_>) -> Result<Turn, ModelError> {
        let body = self.request_body(&request);
        let mut http = self
            .transport
            .client
            .post(self.transport.url("/chat/completions"))
            .json(&body);
        if let Some(key) = &self.transport.key {
            http = http.bearer_auth(key);
        }
        if self.stream {
            let clock = StreamClock::start(self.timeouts);
            let response = clock.first(self.transport.send(http)).await??;
            read_stream(response, &request, clock).await
        } else {
            let answer = self.transport.json(http).await?;
            read_completion(&answer)
        }
    }
}

impl ChatModel for OpenAiChat {
    fn export(&self) -> Export {
        Provider::OpenAi.strict(self.strict)
    }

    fn complete<'a>(
        &'a self,
        request: ModelRequest<'a>,
    ) -> BoxFuture<'a, Result<Turn, ModelError>> {
        Box::pin(self.complete_inner(request))
    }
}

/// The conversation as Chat Completions messages.
pub(crate) fn messages(system: &str, conversation: &[Message]) -> Vec<Value> {
    let mut out = Vec::with_capacity(conversation.len() + 1);
    if !system.is_empty() {
        out.push(json!({"role": "system", "content": system}));
    }
    for message in conversation {
        match message {
            Message::System(text) => out.push(json!({"role": "system", "content": text})),
            Message::User(text) => out.push(json!({"role": "user", "content": text})),
            Message::Assistant(turn) => {
                let mut m = Map::new();
                m.insert("role".into(), Value::from("assistant"));
                m.insert(
                    "content".into(),
                    turn.text.as_deref().map_or(Value::Null, Value::from),
                );
                if !turn.calls.is_empty() {
                    let calls: Vec<Value> = turn
                        .calls
                        .iter()
                        .map(|c| {
                            json!({"id": c.id(), "type": "function",
                                   "function": {"name": c.name(), "arguments": c.arguments()}})
                        })
                        .collect();
                    m.insert("tool_calls".into(), Value::Array(calls));
                }
                out.push(Value::Object(m));
            }
            Message::ToolResults(outcomes) => out.extend(outcomes.iter().map(openai::tool_message)),
        }
    }
    out
}

/// A whole (non-streamed) completion.
fn read_completion(answer: &Value) -> Result<Turn, ModelError> {
    let message = answer
        .pointer("/choices/0/message")
        .ok_or_else(|| malformed(PROVIDER, "no `choices[0].message`"))?;
    let calls = openai::parse_calls(answer).map_err(|e| malformed(PROVIDER, e))?;
    let text = match message.get("content") {
        Some(Value::String(text)) => Some(text.clone()),
        Some(Value::Null) | None => None,
        Some(other) => {
            return Err(malformed(
                PROVIDER,
                format!("`choices[0].message.content` should be a string, got {other}"),
            ))
        }
    };
    Ok(Turn {
        text,
        calls,
        usage: usage(
            answer.get("usage"),
            &["prompt_tokens"],
            &["completion_tokens"],
        ),
        native: None,
    })
}

/// A call being assembled from stream deltas.
#[derive(Default)]
struct Partial {
    id: String,
    name: String,
    arguments: String,
    announced: bool,
}

/// The deadlines of one stream: its first event, the next event, the whole.
struct StreamClock {
    timeouts: StreamTimeouts,
    started: Instant,
}

impl StreamClock {
    fn start(timeouts: StreamTimeouts) -> Self {
        StreamClock {
            timeouts,
            started: Instant::now(),
        }
    }

    /// `step` (sending the request, or reading an event), given until the first event's
    /// deadline (`first`) or the next one's, and never past the whole stream's.
    async fn within<T>(
        &self,
        first: bool,
        step: impl std::future::Future<Output = T>,
    ) -> Result<T, ModelError> {
        let whole = self.started + self.timeouts.total;
        let (next, wait) = if first {
            (self.started + self.timeouts.first, self.timeouts.first)
        } else {
            (
                Instant::now() + self.timeouts.between,
                self.timeouts.between,
            )
        };
        let deadline = next.min(whole);
        tokio::time::timeout_at(deadline, step).await.map_err(|_| {
            let what = if deadline == whole && next > whole {
                format!(
                    "the stream did not end within {} s",
                    self.timeouts.total.as_secs_f64()
                )
            } else if first {
                format!("no answer within {} s of the request", wait.as_secs_f64())
            } else {
                format!(
                    "the stream stalled: no event within {} s of the last",
                    wait.as_secs_f64()
                )
            };
            ModelError::new(ErrorKind::Timeout, format!("{PROVIDER}: {what}"))
        })
    }

    async fn first<T>(&self, step: impl std::future::Future<Output = T>) -> Result<T, ModelError> {
        self.within(true, step).await
    }
}

/// A streamed completion: text and call deltas assembled, events reported as they arrive.
async fn read_stream(
    response: reqwest::Response,
    request: &ModelRequest<'_>,
    clock: StreamClock,
) -> Result<Turn, ModelError> {
    let mut events = SseStream::from_bytes_stream(response.bytes_stream());
    let mut text = String::new();
    let mut calls: BTreeMap<u64, Partial> = BTreeMap::new();
    let mut finished = false;
    let mut done = false;
    let mut turn_usage = None;
    let mut first = true;
    while let Some(event) = clock.within(first, events.next()).await? {
        first = false;
        let event = event.map_err(|e| {
            ModelError::new(
                ErrorKind::Unavailable,
                format!("{PROVIDER}: the stream broke off: {e}"),
            )
        })?;
        let Some(data) = event.data else { continue };
        if data.trim() == "[DONE]" {
            done = true;
            break;
        }
        let chunk: Value = serde_json::from_str(&data)
            .map_err(|e| malformed(PROVIDER, format!("a stream event that is not JSON ({e})")))?;
        if let Some(error) = chunk.get("error") {
            let message = error
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("an error event");
            return Err(ModelError::new(
                ErrorKind::Unavailable,
                format!("{PROVIDER} sent an error in the stream: {message}"),
            ));
        }
        if let Some(u) = usage(
            chunk.get("usage"),
            &["prompt_tokens"],
            &["completion_tokens"],
        ) {
            turn_usage = Some(u);
        }
        let Some(choice) = chunk.pointer("/choices/0") else {
            continue;
        };
        if choice.get("finish_reason").is_some_and(|r| !r.is_null()) {
            finished = true;
        }
        let Some(delta) = choice.get("delta") else {
            continue;
        };
        if let Some(piece) = delta.get("content").and_then(Value::as_str) {
            if !piece.is_empty() {
                text.push_str(piece);
                request.events.emit(AgentEvent::TextDelta(piece));
            }
        }
        if let Some(deltas) = delta.get("tool_calls").and_then(Value::as_array) {
            for (position, d) in deltas.iter().enumerate() {
                add_call_delta(&mut calls, position, d, request);
            }
        }
    }
    if !finished && !done {
        return Err(ModelError::new(
            ErrorKind::Unavailable,
            format!("{PROVIDER}: the stream ended before the answer did (no `finish_reason`, no `[DONE]`)"),
        ));
    }
    // A server that sends no call id still needs one to answer the call by.
    let calls = calls
        .into_iter()
        .map(|(index, p)| {
            let id = if p.id.is_empty() {
                format!("call_{index}")
            } else {
                p.id
            };
            ToolCall::new(id, p.name, p.arguments)
        })
        .collect();
    Ok(Turn {
        text: (!text.is_empty()).then_some(text),
        calls,
        usage: turn_usage,
        native: None,
    })
}

/// One `tool_calls` delta: the first of a call carries its `index`, `id` and name, the rest
/// pieces of its argument text. Servers that differ are read too: a delta without `index` is
/// the call at its position (Ollama sends each call whole), and an `id` or name sent again with
/// every piece is kept once.
fn add_call_delta(
    calls: &mut BTreeMap<u64, Partial>,
    position: usize,
    delta: &Value,
    request: &ModelRequest<'_>,
) {
    let index = delta
        .get("index")
        .and_then(Value::as_u64)
        .unwrap_or(position as u64);
    let partial = calls.entry(index).or_default();
    if let Some(id) = delta.get("id").and_then(Value::as_str) {
        if partial.id.is_empty() {
            partial.id = id.to_owned();
        }
    }
    if let Some(function) = delta.get("function") {
        if let Some(name) = function.get("name").and_then(Value::as_str) {
            if partial.name != name {
                partial.name.push_str(name);
            }
        }
        if let Some(piece) = function.get("arguments").and_then(Value::as_str) {
            partial.arguments.push_str(piece);
        }
    }
    if !partial.announced && !partial.name.is_empty() {
        partial.announced = true;
        request.events.emit(AgentEvent::ToolCallStarted {
            id: &partial.id,
            name: &partial.name,
        });
    }
}
