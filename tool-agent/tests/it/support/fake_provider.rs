//! A fake model provider on loopback: the public `ScriptedServer` with raw replies, so a test
//! gives the provider's exact JSON or server-sent events (malformed ones included), and every
//! request is recorded.

#![allow(dead_code)]

use serde_json::Value;
use toolwright_agent::http::{ReceivedRequest, ScriptedReply, ScriptedServer};

/// A request the server received.
pub type Received = ReceivedRequest;

/// Raw replies, exactly as given.
pub struct Reply;

impl Reply {
    pub fn json(body: Value) -> ScriptedReply {
        ScriptedReply::raw(200, "application/json", body.to_string())
    }

    /// A stream of `data:` events (each a JSON chunk or `[DONE]`), as given: leave out the
    /// finish and `[DONE]` to cut it short.
    pub fn sse(events: &[String]) -> ScriptedReply {
        let body: String = events.iter().map(|e| format!("data: {e}\n\n")).collect();
        ScriptedReply::raw(200, "text/event-stream", body)
    }

    pub fn status(status: u16, body: Value) -> ScriptedReply {
        ScriptedReply::raw(status, "application/json", body.to_string())
    }
}

/// The running server.
pub struct FakeProvider {
    pub base: String,
    server: ScriptedServer,
}

impl FakeProvider {
    pub async fn start(replies: impl IntoIterator<Item = ScriptedReply>) -> Self {
        let server = ScriptedServer::start(replies)
            .await
            .expect("a loopback port");
        FakeProvider {
            base: server.url(),
            server,
        }
    }

    pub fn received(&self) -> Vec<Received> {
        self.server.received()
    }

    pub fn remaining(&self) -> usize {
        self.server.remaining()
    }
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
