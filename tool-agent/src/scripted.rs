//! A model whose turns are given in advance: for tests, demos and examples that must run with
//! no key and no network. It records every request, so a test can assert what the loop sent.

use std::collections::VecDeque;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use serde_json::Value;
use toolwright_core::providers::{Export, Provider};
use toolwright_core::ErrorKind;

use crate::message::Message;
use crate::model::{AgentEvent, BoxFuture, ChatModel, ModelError, ModelRequest, Turn};

/// A [`ChatModel`] that answers from a script, one entry per request, and records what it was
/// sent.
///
/// ```
/// use toolwright::agent::{ScriptedModel, Turn};
/// use toolwright::ToolCall;
///
/// let model = ScriptedModel::new([
///     Turn::calls([ToolCall::new("c1", "search_orders", r#"{"query":"ada"}"#)]),
///     Turn::text("Ada has one order."),
/// ]);
/// assert_eq!(model.remaining(), 2);
/// ```
#[derive(Debug)]
pub struct ScriptedModel {
    script: Mutex<VecDeque<Result<Turn, ModelError>>>,
    requests: Mutex<Vec<ScriptedRequest>>,
    export: Export,
    latency: Duration,
}

/// One request a [`ScriptedModel`] received.
#[derive(Debug, Clone)]
pub struct ScriptedRequest {
    /// The system prompt.
    pub system: String,
    /// The conversation as sent.
    pub messages: Vec<Message>,
    /// The exported tools.
    pub tools: Value,
}

impl ScriptedModel {
    /// A model answering with these turns, in order. Its tools are exported for OpenAI Chat
    /// Completions.
    pub fn new(turns: impl IntoIterator<Item = Turn>) -> Self {
        ScriptedModel {
            script: Mutex::new(turns.into_iter().map(Ok).collect()),
            requests: Mutex::new(Vec::new()),
            export: Export::new(Provider::OpenAi),
            latency: Duration::ZERO,
        }
    }

    /// Adds a turn at the end of the script.
    pub fn then(self, turn: Turn) -> Self {
        self.lock_script().push_back(Ok(turn));
        self
    }

    /// Adds a failed request at the end of the script (the agent retries transient ones).
    pub fn then_fail(self, error: ModelError) -> Self {
        self.lock_script().push_back(Err(error));
        self
    }

    /// Exports the tools for another provider.
    pub fn export_for(mut self, export: impl Into<Export>) -> Self {
        self.export = export.into();
        self
    }

    /// Each answer takes this long (on tokio's clock, so paused tests pass it instantly).
    pub fn latency(mut self, latency: Duration) -> Self {
        self.latency = latency;
        self
    }

    /// Every request received so far.
    pub fn requests(&self) -> Vec<ScriptedRequest> {
        self.requests
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Entries of the script not used yet.
    pub fn remaining(&self) -> usize {
        self.lock_script().len()
    }

    fn lock_script(&self) -> std::sync::MutexGuard<'_, VecDeque<Result<Turn, ModelError>>> {
        self.script.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl ChatModel for ScriptedModel {
    fn export(&self) -> Export {
        self.export.clone()
    }

    fn complete<'a>(
        &'a self,
        request: ModelRequest<'a>,
    ) -> BoxFuture<'a, Result<Turn, ModelError>> {
        let n = {
            let mut requests = self.requests.lock().unwrap_or_else(PoisonError::into_inner);
            requests.push(ScriptedRequest {
                system: request.system.to_owned(),
                messages: request.messages.to_vec(),
                tools: request.tools.clone(),
            });
            requests.len()
        };
        let next = self.lock_script().pop_front();
        Box::pin(async move {
            if !self.latency.is_zero() {
                tokio::time::sleep(self.latency).await;
            }
            let turn = next.unwrap_or_else(|| {
                Err(ModelError::new(
                    ErrorKind::BadRequest,
                    format!(
                        "the scripted model has no turn for request {n}: its script is used up"
                    ),
                ))
            })?;
            if let Some(text) = &turn.text {
                request.events.emit(AgentEvent::TextDelta(text));
            }
            for call in &turn.calls {
                request.events.emit(AgentEvent::ToolCallStarted {
                    id: call.id(),
                    name: call.name(),
                });
            }
            Ok(turn)
        })
    }
}
