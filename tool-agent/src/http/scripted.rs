//! A model provider on loopback that answers from a script: the HTTP clients' counterpart of
//! [`ScriptedModel`](crate::ScriptedModel), so a test runs the real client (its request body,
//! its headers, its parsing, its streaming, its error classification) with no key and no
//! network.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures_util::stream::{self, StreamExt};
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Bytes, Frame, Incoming};
use hyper::header::{HeaderName, HeaderValue, CONTENT_TYPE};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use reqwest::header::HeaderMap;
use serde_json::{json, Map, Value};
use tokio::net::TcpListener;
use tokio::task::{JoinHandle, JoinSet};

use crate::model::Turn;

/// A server on `127.0.0.1` that answers each request with the next reply of its script, in the
/// wire format of the API the request was sent to, and records every request.
///
/// Point any client of this module at [`url`](Self::url): the path says which API it speaks.
///
/// | client | path it sends to | a [`Turn`] is answered as |
/// |---|---|---|
/// | [`OpenAiChat`](super::OpenAiChat) | `…/chat/completions` | a `chat.completion`, or with [`streaming`](super::OpenAiChat::streaming) (the request's `"stream": true`) server-sent `chat.completion.chunk`s: the text a word at a time, each call's name then its argument text, the finish reason, the usage, `[DONE]` |
/// | [`OpenAiResponses`](super::OpenAiResponses) | `…/responses` | a `response` with a `message` item and `function_call` items |
/// | [`AnthropicMessages`](super::AnthropicMessages) | `…/messages` | a `message` with `text` and `tool_use` blocks |
/// | [`GeminiGenerate`](super::GeminiGenerate) | `…/models/{model}:generateContent` | a candidate with `text` and `functionCall` parts |
///
/// A turn's calls keep their ids (Gemini's `functionCall.id` included), so a test can name
/// them. Chat Completions and Responses carry a call's argument text as written; Anthropic and
/// Gemini carry arguments as a JSON object, so text that is not one is sent as a JSON string,
/// which the client reports as a malformed answer, as it would a provider's.
/// [`ScriptedReply::error`] answers with a provider error (a status, `{"error": {"message"}}`,
/// headers such as `Retry-After`), [`ScriptedReply::raw`] with any bytes at all (a stream cut
/// short, a body that is not JSON). A request after the script is used up is answered 400,
/// which the clients classify as `bad_request`. [`ScriptedReply::pace`] sends a body one
/// server-sent event at a time and [`ScriptedReply::stall`] holds the connection open after
/// it, sending nothing more: a provider that stops mid-stream.
///
/// The server stops when it is dropped.
///
/// ```
/// use toolwright::agent::http::{OpenAiChat, ScriptedServer};
/// use toolwright::agent::{Agent, End, Message, Turn};
/// use toolwright::prelude::*;
///
/// /// Look an order up.
/// #[tool(read_only)]
/// async fn get_order(order_id: String) -> String {
///     format!("{order_id}: delivered")
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let server = ScriptedServer::start([
///     Turn::calls([ToolCall::new("call_1", "get_order", r#"{"order_id":"A1"}"#)]).into(),
///     Turn::text("A1 was delivered.").with_usage(200, 12).into(),
/// ])
/// .await?;
/// let model = OpenAiChat::new("gpt-4.1-mini").base_url(server.url()).api_key("test-key");
/// let registry = Registry::builder().tool(GetOrder).build()?;
/// let agent = Agent::builder(model, registry).build()?;
///
/// let run = agent.run(&Session::new("conv-1"), vec![Message::user("Where is A1?")]).await;
/// assert!(matches!(run.end(), End::Final(text) if text == "A1 was delivered."));
///
/// let sent = server.received();
/// assert_eq!(sent[0].path, "/chat/completions");
/// assert_eq!(sent[0].headers["authorization"], "Bearer test-key");
/// assert_eq!(sent[0].body["tools"][0]["function"]["name"], "get_order");
/// let history = sent[1].body["messages"].as_array().unwrap();
/// assert_eq!(history.last().unwrap()["role"], "tool"); // the outcome went back
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct ScriptedServer {
    address: SocketAddr,
    script: Arc<Script>,
    task: JoinHandle<()>,
}

/// One answer of a [`ScriptedServer`]'s script.
#[derive(Debug, Clone)]
pub struct ScriptedReply {
    answer: Answer,
    headers: Vec<(String, String)>,
    delay: Duration,
    pace: Duration,
    stall: bool,
}

#[derive(Debug, Clone)]
enum Answer {
    Turn(Turn),
    Error {
        status: u16,
        message: String,
    },
    Raw {
        status: u16,
        content_type: String,
        body: String,
    },
}

/// A request a [`ScriptedServer`] received.
#[derive(Debug, Clone)]
pub struct ReceivedRequest {
    /// The request's path, as `/v1/messages`.
    pub path: String,
    /// Its headers (`request.headers["x-api-key"]`).
    pub headers: HeaderMap,
    /// Its body, parsed as JSON (`Value::Null` when it is not JSON).
    pub body: Value,
}

impl ScriptedReply {
    /// A provider error: `status` with the body `{"error": {"message": message}}`, the shape
    /// OpenAI, Anthropic and Gemini share (the clients put the message in theirs).
    pub fn error(status: u16, message: impl Into<String>) -> Self {
        ScriptedReply::new(Answer::Error {
            status,
            message: message.into(),
        })
    }

    /// Exactly this answer, whatever the API: for what a provider should never send.
    pub fn raw(status: u16, content_type: impl Into<String>, body: impl Into<String>) -> Self {
        ScriptedReply::new(Answer::Raw {
            status,
            content_type: content_type.into(),
            body: body.into(),
        })
    }

    /// The same reply with a header (`Retry-After`, say).
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// The same reply, sent after waiting this long (on tokio's clock): for client timeouts.
    pub fn delay(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }

    /// The same reply, its body sent a piece at a time, `every` apart (on tokio's clock): each
    /// server-sent event (a piece ending in a blank line) is one piece, so a streamed turn
    /// arrives event by event, as a slow provider's does.
    ///
    /// ```
    /// use std::time::Duration;
    /// use toolwright::agent::Turn;
    /// use toolwright::agent::http::ScriptedReply;
    ///
    /// // Streamed to a client with `.streaming(true)`: a word every 50 ms.
    /// let slow = ScriptedReply::from(Turn::text("one word at a time")).pace(Duration::from_millis(50));
    /// # let _ = slow;
    /// ```
    pub fn pace(mut self, every: Duration) -> Self {
        self.pace = every;
        self
    }

    /// The same reply, then nothing: once its body (all of it, or none for an empty one) is
    /// sent, the connection stays open and no more bytes come, as from a provider that stalled
    /// mid-stream. For the clients' stream timeouts.
    ///
    /// ```
    /// use toolwright::agent::http::ScriptedReply;
    ///
    /// // Headers, one event, then silence.
    /// let stalled = ScriptedReply::raw(200, "text/event-stream", "data: {}\n\n").stall();
    /// # let _ = stalled;
    /// ```
    pub fn stall(mut self) -> Self {
        self.stall = true;
        self
    }

    fn new(answer: Answer) -> Self {
        ScriptedReply {
            answer,
            headers: Vec::new(),
            delay: Duration::ZERO,
            pace: Duration::ZERO,
            stall: false,
        }
    }
}

impl From<Turn> for ScriptedReply {
    /// The model's turn, in the wire format of the API each request is sent to.
    fn from(turn: Turn) -> Self {
        ScriptedReply::new(Answer::Turn(turn))
    }
}

#[derive(Debug, Default)]
struct Script {
    replies: Mutex<VecDeque<ScriptedReply>>,
    received: Mutex<Vec<ReceivedRequest>>,
}

impl ScriptedServer {
    /// Starts a server on a free port of `127.0.0.1` with these replies, in order.
    pub async fn start(
        replies: impl IntoIterator<Item = ScriptedReply>,
    ) -> std::io::Result<ScriptedServer> {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        let address = listener.local_addr()?;
        let script = Arc::new(Script {
            replies: Mutex::new(replies.into_iter().collect()),
            received: Mutex::new(Vec::new()),
        });
        let task = tokio::spawn(serve(listener, Arc::clone(&script)));
        Ok(ScriptedServer {
            address,
            script,
            task,
        })
    }

    /// The base URL to give a client's `base_url`: `http://127.0.0.1:{port}`.
    pub fn url(&self) -> String {
        format!("http://{}", self.address)
    }

    /// Adds a reply at the end of the script.
    pub fn push(&self, reply: impl Into<ScriptedReply>) {
        lock(&self.script.replies).push_back(reply.into());
    }

    /// Every request received so far, in order.
    pub fn received(&self) -> Vec<ReceivedRequest> {
        lock(&self.script.received).clone()
    }

    /// Replies of the script not sent yet.
    pub fn remaining(&self) -> usize {
        lock(&self.script.replies).len()
    }
}

impl Drop for ScriptedServer {
    fn drop(&mut self) {
        // The connections live in the accept task's set, so they end with it.
        self.task.abort();
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

async fn serve(listener: TcpListener, script: Arc<Script>) {
    let mut connections = JoinSet::new();
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(_) => {
                // Out of file descriptors, say: try again shortly rather than spin.
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        let script = Arc::clone(&script);
        connections.spawn(async move {
            let service = service_fn(move |request| answer(Arc::clone(&script), request));
            let _ = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
        while connections.try_join_next().is_some() {}
    }
}

type Body = UnsyncBoxBody<Bytes, Infallible>;

async fn answer(
    script: Arc<Script>,
    request: Request<Incoming>,
) -> Result<Response<Body>, Infallible> {
    let (parts, body) = request.into_parts();
    let bytes = body
        .collect()
        .await
        .map(|collected| collected.to_bytes())
        .unwrap_or_default();
    let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    let path = parts.uri.path().to_owned();
    let number = {
        let mut received = lock(&script.received);
        received.push(ReceivedRequest {
            path: path.clone(),
            headers: parts.headers,
            body: body.clone(),
        });
        received.len()
    };
    let reply = lock(&script.replies).pop_front();
    let Some(reply) = reply else {
        let message =
            format!("the scripted server has no reply for request {number}: its script is used up");
        return Ok(error_response(400, &message).map(BodyExt::boxed_unsync));
    };
    if !reply.delay.is_zero() {
        tokio::time::sleep(reply.delay).await;
    }
    let mut response = match reply.answer {
        Answer::Turn(turn) => match render(&path, &body, &turn, number) {
            Some((content_type, text)) => response(200, content_type, text),
            None => error_response(
                404,
                &format!(
                    "the scripted server speaks Chat Completions (`/chat/completions`), Responses (`/responses`), Anthropic Messages (`/messages`) and Gemini (`:generateContent`), not `{path}`"
                ),
            ),
        },
        Answer::Error { status, message } => error_response(status, &message),
        Answer::Raw {
            status,
            content_type,
            body,
        } => response(status, &content_type, body),
    };
    for (name, value) in &reply.headers {
        if let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(value),
        ) {
            response.headers_mut().append(name, value);
        }
    }
    if reply.pace.is_zero() && !reply.stall {
        return Ok(response.map(BodyExt::boxed_unsync));
    }
    Ok(response.map(|body| paced(body, reply.pace, reply.stall)))
}

/// The body sent a server-sent event at a time, `every` apart, and then, when `stall`, never
/// ended.
fn paced(body: Full<Bytes>, every: Duration, stall: bool) -> Body {
    // A `Full` body is one frame, ready at once.
    let bytes = futures_util::FutureExt::now_or_never(body.collect())
        .and_then(Result::ok)
        .map(|collected| collected.to_bytes())
        .unwrap_or_default();
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let pieces: Vec<Bytes> = text
        .split_inclusive("\n\n")
        .map(|piece| Bytes::from(piece.to_owned()))
        .collect();
    let sent = stream::iter(pieces).then(move |piece| async move {
        if !every.is_zero() {
            tokio::time::sleep(every).await;
        }
        Ok::<_, Infallible>(Frame::data(piece))
    });
    let frames = if stall {
        sent.chain(stream::pending()).boxed()
    } else {
        sent.boxed()
    };
    BodyExt::boxed_unsync(StreamBody::new(frames))
}

fn response(status: u16, content_type: &str, body: String) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() =
        StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    if let Ok(value) = HeaderValue::from_str(content_type) {
        response.headers_mut().insert(CONTENT_TYPE, value);
    }
    response
}

fn error_response(status: u16, message: &str) -> Response<Full<Bytes>> {
    let body = json!({"error": {"message": message, "type": "scripted_error"}});
    response(status, "application/json", body.to_string())
}

/// The turn in the format of the API at `path`: its content type and body.
fn render(
    path: &str,
    request: &Value,
    turn: &Turn,
    number: usize,
) -> Option<(&'static str, String)> {
    let model = request
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or("scripted");
    if path.ends_with("/chat/completions") {
        if request.get("stream").and_then(Value::as_bool) == Some(true) {
            return Some(("text/event-stream", wire::chat_stream(turn, model, number)));
        }
        return Some((
            "application/json",
            wire::chat(turn, model, number).to_string(),
        ));
    }
    let body = if path.ends_with("/responses") {
        wire::responses(turn, model, number)
    } else if path.ends_with("/messages") {
        wire::anthropic(turn, model, number)
    } else if path.ends_with(":generateContent") {
        wire::gemini(turn)
    } else {
        return None;
    };
    Some(("application/json", body.to_string()))
}

/// A turn in each provider's wire format.
mod wire {
    use super::*;

    fn calls_or_stop<'a>(turn: &Turn, calls: &'a str, stop: &'a str) -> &'a str {
        if turn.calls.is_empty() {
            stop
        } else {
            calls
        }
    }

    /// A call's arguments as the JSON object Anthropic and Gemini carry.
    fn arguments(text: &str) -> Value {
        serde_json::from_str(text).unwrap_or_else(|_| Value::from(text))
    }

    pub(super) fn chat(turn: &Turn, model: &str, number: usize) -> Value {
        let mut message = Map::new();
        message.insert("role".into(), Value::from("assistant"));
        message.insert(
            "content".into(),
            turn.text.as_deref().map_or(Value::Null, Value::from),
        );
        message.insert("refusal".into(), Value::Null);
        if !turn.calls.is_empty() {
            let calls = turn
                .calls
                .iter()
                .map(|c| {
                    json!({"id": c.id(), "type": "function",
                           "function": {"name": c.name(), "arguments": c.arguments()}})
                })
                .collect();
            message.insert("tool_calls".into(), Value::Array(calls));
        }
        let mut body = json!({
            "id": format!("chatcmpl-{number}"), "object": "chat.completion", "created": 0,
            "model": model,
            "choices": [{"index": 0, "logprobs": null, "message": message,
                         "finish_reason": calls_or_stop(turn, "tool_calls", "stop")}],
        });
        if let Some(usage) = turn.usage {
            body["usage"] = json!({"prompt_tokens": usage.input_tokens,
                                   "completion_tokens": usage.output_tokens,
                                   "total_tokens": usage.total()});
        }
        body
    }

    pub(super) fn chat_stream(turn: &Turn, model: &str, number: usize) -> String {
        let chunk = |choices: Value| {
            json!({"id": format!("chatcmpl-{number}"), "object": "chat.completion.chunk",
                   "created": 0, "model": model, "choices": choices})
        };
        let delta = |delta: Value, finish: Option<&str>| {
            chunk(json!([{"index": 0, "delta": delta, "finish_reason": finish}]))
        };
        let mut events = vec![delta(json!({"role": "assistant", "content": ""}), None)];
        if let Some(text) = &turn.text {
            events.extend(
                text.split_inclusive(' ')
                    .map(|word| delta(json!({"content": word}), None)),
            );
        }
        for (index, call) in turn.calls.iter().enumerate() {
            events.push(delta(
                json!({"tool_calls": [{"index": index, "id": call.id(), "type": "function",
                                       "function": {"name": call.name(), "arguments": ""}}]}),
                None,
            ));
            events.push(delta(
                json!({"tool_calls": [{"index": index,
                                       "function": {"arguments": call.arguments()}}]}),
                None,
            ));
        }
        events.push(delta(
            json!({}),
            Some(calls_or_stop(turn, "tool_calls", "stop")),
        ));
        if let Some(usage) = turn.usage {
            let mut last = chunk(json!([]));
            last["usage"] = json!({"prompt_tokens": usage.input_tokens,
                                   "completion_tokens": usage.output_tokens,
                                   "total_tokens": usage.total()});
            events.push(last);
        }
        let mut stream: String = events.iter().map(|e| format!("data: {e}\n\n")).collect();
        stream.push_str("data: [DONE]\n\n");
        stream
    }

    pub(super) fn responses(turn: &Turn, model: &str, number: usize) -> Value {
        let mut output = Vec::new();
        if let Some(text) = &turn.text {
            output.push(json!({
                "type": "message", "id": format!("msg_{number}"), "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": text, "annotations": []}],
            }));
        }
        for (index, call) in turn.calls.iter().enumerate() {
            output.push(json!({
                "type": "function_call", "id": format!("fc_{number}_{index}"),
                "call_id": call.id(), "name": call.name(), "arguments": call.arguments(),
                "status": "completed",
            }));
        }
        let mut body = json!({
            "id": format!("resp_{number}"), "object": "response", "created_at": 0,
            "model": model, "status": "completed", "output": output,
        });
        if let Some(usage) = turn.usage {
            body["usage"] = json!({"input_tokens": usage.input_tokens,
                                   "output_tokens": usage.output_tokens,
                                   "total_tokens": usage.total()});
        }
        body
    }

    pub(super) fn anthropic(turn: &Turn, model: &str, number: usize) -> Value {
        let mut content = Vec::new();
        if let Some(text) = &turn.text {
            content.push(json!({"type": "text", "text": text}));
        }
        for call in &turn.calls {
            content.push(
                json!({"type": "tool_use", "id": call.id(), "name": call.name(),
                                "input": arguments(call.arguments())}),
            );
        }
        let usage = turn.usage.unwrap_or_default();
        json!({
            "id": format!("msg_{number}"), "type": "message", "role": "assistant",
            "model": model, "content": content,
            "stop_reason": calls_or_stop(turn, "tool_use", "end_turn"), "stop_sequence": null,
            "usage": {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens},
        })
    }

    pub(super) fn gemini(turn: &Turn) -> Value {
        let mut parts = Vec::new();
        if let Some(text) = &turn.text {
            parts.push(json!({"text": text}));
        }
        for call in &turn.calls {
            parts.push(
                json!({"functionCall": {"id": call.id(), "name": call.name(),
                                               "args": arguments(call.arguments())}}),
            );
        }
        let mut body = json!({
            "candidates": [{"content": {"role": "model", "parts": parts},
                            "finishReason": "STOP", "index": 0}],
        });
        if let Some(usage) = turn.usage {
            body["usageMetadata"] = json!({"promptTokenCount": usage.input_tokens,
                                           "candidatesTokenCount": usage.output_tokens,
                                           "totalTokenCount": usage.total()});
        }
        body
    }
}
