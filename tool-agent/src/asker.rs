//! What a tool asks of its client, answered inside the agent loop: a sampling request by the
//! agent's own model, roots from the agent's list, a form by the session's own asker (if it has
//! one), and log lines as run events.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde_json::Value;
use toolwright_core::ask::{
    Answer, Asker, Kind, LogRecord, Question, Role, Root, Sampled, Sampling,
};
use toolwright_core::Session;

use crate::message::Message;
use crate::model::{AgentEvent, ChatModel, Events, ModelRequest};

/// The asker of the calls of one run.
pub(crate) struct AgentAsker {
    pub(crate) model: Arc<dyn ChatModel>,
    pub(crate) roots: Option<Arc<[Root]>>,
    pub(crate) events: Events,
    /// The session as the application gave it: its own asker answers forms.
    pub(crate) given: Session,
}

impl AgentAsker {
    async fn ask_now(&self, question: &Question) -> Answer {
        match question.kind() {
            Kind::Sampling(request) => self.sample(request).await,
            Kind::Roots => match &self.roots {
                Some(roots) => Answer::Roots(roots.to_vec()),
                None => Answer::Unavailable(
                    "this agent lists no roots (the application sets them with \
                     `AgentBuilder::roots`)"
                        .to_owned(),
                ),
            },
            _ => match self.given.asker() {
                Some(asker) => asker.ask(question).await,
                None => Answer::Unavailable(
                    "no one answers forms in this run (the application gives its session an \
                     asker with `Session::with_asker`)"
                        .to_owned(),
                ),
            },
        }
    }

    /// The agent's model answers `request`: its messages as the conversation, its system
    /// prompt, no tools.
    async fn sample(&self, request: &Sampling) -> Answer {
        let messages: Vec<Message> = request
            .messages()
            .iter()
            .map(|m| match m.role() {
                Role::User => Message::user(m.text()),
                _ => Message::assistant(m.text()),
            })
            .collect();
        let tools = Value::Array(Vec::new());
        let events = Events::none();
        let asked = ModelRequest {
            system: request.system().unwrap_or(""),
            messages: &messages,
            tools: &tools,
            events: &events,
        };
        match self.model.complete(asked).await {
            Ok(turn) if turn.calls.is_empty() => Answer::Sampled(
                Sampled::new(turn.text.unwrap_or_default(), "agent").with_stop_reason("endTurn"),
            ),
            Ok(_) => Answer::Unavailable("the agent's model answered with tool calls".to_owned()),
            Err(e) => Answer::Unavailable(format!("the agent's model failed: {e}")),
        }
    }
}

impl Asker for AgentAsker {
    fn ask<'a>(
        &'a self,
        question: &'a Question,
    ) -> Pin<Box<dyn Future<Output = Answer> + Send + 'a>> {
        Box::pin(self.ask_now(question))
    }

    fn log(&self, record: &LogRecord) {
        self.events.emit(AgentEvent::ToolLog { record });
        if let Some(asker) = self.given.asker() {
            asker.log(record);
        }
    }
}
