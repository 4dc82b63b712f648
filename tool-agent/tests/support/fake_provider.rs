//! A fake model provider on loopback: answers each request with the next scripted reply, in the
//! provider's real wire format (JSON or server-sent events), and records every request.

#![allow(dead_code)]

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::Response;
use axum::Router;
use serde_json::Value;

/// One scripted reply.
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(&'static str, String)>,
    pub content_type: &'static str,
    pub body: String,
}

impl Reply {
    pub fn json(body: Value) -> Self {
        Reply {
            status: 200,
            headers: Vec::new(),
            content_type: "application/json",
            body: body.to_string(),
        }
    }

    /// A stream of `data:` events (each a JSON chunk or `[DONE]`), as given: leave out the
    /// finish and `[DONE]` to cut it short.
    pub fn sse(events: &[String]) -> Self {
        let body: String = events.iter().map(|e| format!("data: {e}\n\n")).collect();
        Reply {
            status: 200,
            headers: Vec::new(),
            content_type: "text/event-stream",
            body,
        }
    }

    pub fn status(status: u16, body: Value) -> Self {
        Reply {
            status,
            ..Reply::json(body)
        }
    }

    pub fn header(mut self, name: &'static str, value: &str) -> Self {
        self.headers.push((name, value.to_owned()));
        self
    }
}

/// A request the server received.
#[derive(Debug, Clone)]
pub struct Received {
    pub path: String,
    pub headers: HeaderMap,
    pub body: Value,
}

#[derive(Default)]
struct Script {
    replies: Mutex<VecDeque<Reply>>,
    received: Mutex<Vec<Received>>,
}

/// The running server.
pub struct FakeProvider {
    pub base: String,
    script: Arc<Script>,
}

impl FakeProvider {
    pub async fn start(replies: impl IntoIterator<Item = Reply>) -> Self {
        let script = Arc::new(Script {
            replies: Mutex::new(replies.into_iter().collect()),
            received: Mutex::new(Vec::new()),
        });
        let app = Router::new()
            .fallback(answer)
            .with_state(Arc::clone(&script));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a loopback port");
        let address = listener.local_addr().expect("the bound address");
        tokio::spawn(async move { axum::serve(listener, app).await });
        FakeProvider {
            base: format!("http://{address}"),
            script,
        }
    }

    pub fn received(&self) -> Vec<Received> {
        self.script.received.lock().unwrap().clone()
    }

    pub fn remaining(&self) -> usize {
        self.script.replies.lock().unwrap().len()
    }
}

async fn answer(
    State(script): State<Arc<Script>>,
    uri: Uri,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    let body = serde_json::from_slice(&body).unwrap_or(Value::Null);
    script.received.lock().unwrap().push(Received {
        path: uri.path().to_owned(),
        headers,
        body,
    });
    let reply = script.replies.lock().unwrap().pop_front();
    let Some(reply) = reply else {
        return Response::builder()
            .status(StatusCode::GONE)
            .body(Body::from(
                r#"{"error":{"message":"the fake provider's script is used up"}}"#,
            ))
            .unwrap();
    };
    let mut response = Response::builder()
        .status(reply.status)
        .header("content-type", reply.content_type);
    for (name, value) in reply.headers {
        response = response.header(name, value);
    }
    response.body(Body::from(reply.body)).unwrap()
}

/// Chat Completions wire format.
pub mod chat {
    use serde_json::{json, Value};

    pub fn call(id: &str, name: &str, arguments: &str) -> Value {
        json!({"id": id, "type": "function", "function": {"name": name, "arguments": arguments}})
    }

    pub fn calls(calls: Vec<Value>) -> Value {
        json!({
            "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "fake",
            "choices": [{"index": 0, "finish_reason": "tool_calls", "logprobs": null,
                         "message": {"role": "assistant", "content": null, "refusal": null, "tool_calls": calls}}],
            "usage": {"prompt_tokens": 120, "completion_tokens": 30, "total_tokens": 150}
        })
    }

    pub fn text(text: &str) -> Value {
        json!({
            "id": "chatcmpl-2", "object": "chat.completion", "created": 1, "model": "fake",
            "choices": [{"index": 0, "finish_reason": "stop", "logprobs": null,
                         "message": {"role": "assistant", "content": text, "refusal": null}}],
            "usage": {"prompt_tokens": 200, "completion_tokens": 12, "total_tokens": 212}
        })
    }

    /// A streamed chunk with this delta.
    pub fn chunk(delta: Value, finish: Option<&str>) -> String {
        json!({"id": "chatcmpl-3", "object": "chat.completion.chunk", "created": 1, "model": "fake",
               "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
        .to_string()
    }

    pub fn usage_chunk(prompt: u64, completion: u64) -> String {
        json!({"id": "chatcmpl-3", "object": "chat.completion.chunk", "created": 1, "model": "fake",
               "choices": [], "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                                        "total_tokens": prompt + completion}})
        .to_string()
    }
}
