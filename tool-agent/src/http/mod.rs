//! Model clients over HTTP (the `http` feature): one [`ChatModel`](crate::ChatModel) per
//! provider wire format, each built on toolwright's provider adapters (the tools are the
//! registry's export, the calls are parsed and the outcomes formatted by
//! `toolwright::providers`).
//!
//! | client | API | key | default base URL |
//! |---|---|---|---|
//! | [`OpenAiChat`] | Chat Completions, streaming or not; any OpenAI-compatible server (vLLM, llama.cpp's server, Ollama) | `OPENAI_API_KEY` (optional for a local server) | `OPENAI_BASE_URL`, else `https://api.openai.com/v1` |
//! | [`OpenAiResponses`] | Responses | `OPENAI_API_KEY` | `OPENAI_BASE_URL`, else `https://api.openai.com/v1` |
//! | [`AnthropicMessages`] | Messages | `ANTHROPIC_API_KEY` | `https://api.anthropic.com` |
//! | [`GeminiGenerate`] | `generateContent` | `GEMINI_API_KEY`, else `GOOGLE_API_KEY` | `https://generativelanguage.googleapis.com/v1beta` |
//!
//! Every failure is classified as a tool's request would be (toolwright-core's `reqwest`
//! support): a refused connection is `unavailable` (never started), a 429 is `rate_limited`
//! with its `Retry-After`, a 5xx `unavailable`, a 401 `auth_expired`, a 400 `bad_request` with
//! the provider's own message, a body that is not the provider's format `invalid_result`, and a
//! stream that ends before the answer does `unavailable`, a stream that stalls (no first event,
//! a pause between events, or no end, past [`OpenAiChat`]'s stream timeouts) `timeout`; the
//! [`Agent`](crate::Agent) retries the transient ones. Every client reads the tokens its
//! provider bills, cached prompt tokens and reasoning tokens included, for
//! [`UsageLimits`](crate::UsageLimits).
//!
//! To test code that uses these clients without a key or a network, point them at a
//! [`ScriptedServer`]: scripted turns served on loopback in each API's wire format, every
//! request recorded.
//!
//! ```no_run
//! use toolwright::agent::http::OpenAiChat;
//!
//! // A local OpenAI-compatible server (Ollama here), streaming:
//! let model = OpenAiChat::new("qwen2.5:7b")
//!     .base_url("http://127.0.0.1:11434/v1")
//!     .streaming(true);
//! # let _ = model;
//! ```

mod anthropic;
mod gemini;
mod openai;
mod responses;
mod scripted;

pub use anthropic::AnthropicMessages;
pub use gemini::GeminiGenerate;
pub use openai::{
    OpenAiChat, DEFAULT_CHUNK_TIMEOUT, DEFAULT_FIRST_CHUNK_TIMEOUT, DEFAULT_STREAM_TIMEOUT,
};
pub use responses::OpenAiResponses;
pub use scripted::{ReceivedRequest, ScriptedReply, ScriptedServer};

use serde_json::Value;
use toolwright_core::execute::classify;
use toolwright_core::{ErrorKind, ToolError};

use crate::message::Usage;
use crate::model::ModelError;

/// The HTTP side every client shares: a reqwest client, a base URL and how to authenticate.
#[derive(Debug, Clone)]
pub(crate) struct Transport {
    pub(crate) client: reqwest::Client,
    pub(crate) base_url: String,
    pub(crate) key: Option<String>,
    /// The provider's name, for messages.
    pub(crate) provider: &'static str,
}

impl Transport {
    pub(crate) fn new(provider: &'static str, base_url: String, key: Option<String>) -> Self {
        Transport {
            client: reqwest::Client::new(),
            base_url: base_url.trim_end_matches('/').to_owned(),
            key,
            provider,
        }
    }

    pub(crate) fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base_url)
    }

    /// Sends the request; a non-2xx answer is a classified error carrying the provider's own
    /// message (its `error.message`, or the start of the body).
    pub(crate) async fn send(
        &self,
        request: reqwest::RequestBuilder,
    ) -> Result<reqwest::Response, ModelError> {
        let response = request.send().await.map_err(transport_error)?;
        let status = response.status();
        if status.is_success() {
            return Ok(response);
        }
        let retry_after = response
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let body = response.text().await.unwrap_or_default();
        let what = format!("{} (`{}`)", self.provider, self.base_url);
        let error = match classify::check_status(status.as_u16(), retry_after.as_deref(), &what) {
            Ok(()) => return Err(ModelError::new(ErrorKind::Unavailable, "unreachable")),
            Err(error) => error,
        };
        let mut model_error = ModelError::from(error);
        if let Some(detail) = provider_message(&body) {
            model_error = ModelError::new(
                model_error.kind(),
                format!("{}: {detail}", model_error.message()),
            )
            .with_retry_after_opt(model_error.retry_after());
        }
        Err(model_error)
    }

    /// Sends the request and reads a JSON answer.
    pub(crate) async fn json(&self, request: reqwest::RequestBuilder) -> Result<Value, ModelError> {
        let response = self.send(request).await?;
        let bytes = response.bytes().await.map_err(transport_error)?;
        serde_json::from_slice(&bytes).map_err(|e| {
            ModelError::new(
                ErrorKind::InvalidResult,
                format!("{} answered something that is not JSON: {e}", self.provider),
            )
        })
    }
}

impl ModelError {
    fn with_retry_after_opt(self, wait: Option<std::time::Duration>) -> Self {
        match wait {
            Some(wait) => self.with_retry_after(wait),
            None => self,
        }
    }
}

/// A reqwest failure, classified as a tool's would be.
pub(crate) fn transport_error(e: reqwest::Error) -> ModelError {
    ModelError::from(ToolError::from(e))
}

/// The provider's error message in an error body: `{"error": {"message": ..}}` (OpenAI,
/// Anthropic, Gemini all use it), else the body's first 300 characters.
fn provider_message(body: &str) -> Option<String> {
    let body = body.trim();
    if body.is_empty() {
        return None;
    }
    if let Ok(value) = serde_json::from_str::<Value>(body) {
        if let Some(message) = value
            .pointer("/error/message")
            .or_else(|| value.get("message"))
            .and_then(Value::as_str)
        {
            return Some(message.to_owned());
        }
    }
    Some(body.chars().take(300).collect())
}

/// A required piece of a provider answer that is missing or malformed.
pub(crate) fn malformed(provider: &str, what: impl std::fmt::Display) -> ModelError {
    ModelError::new(
        ErrorKind::InvalidResult,
        format!("{provider} answered in an unexpected shape: {what}"),
    )
}

/// Token counts from a provider's usage object: the sum of the `input` fields and the sum of
/// the `output` fields (a field absent counts 0; a provider that reports cached or reasoning
/// tokens apart from the rest bills them all the same). `None` when no field is a number.
pub(crate) fn usage(value: Option<&Value>, input: &[&str], output: &[&str]) -> Option<Usage> {
    let value = value?;
    let mut found = false;
    let mut sum = |fields: &[&str]| {
        fields
            .iter()
            .filter_map(|field| value.get(*field)?.as_u64())
            .inspect(|_| found = true)
            .fold(0u64, u64::saturating_add)
    };
    let usage = Usage {
        input_tokens: sum(input),
        output_tokens: sum(output),
    };
    found.then_some(usage)
}

/// The environment variable's value, if set and not empty.
pub(crate) fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}
