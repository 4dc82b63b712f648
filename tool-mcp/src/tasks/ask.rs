//! A task's questions to its client: a tool running as a task that asks
//! ([`ToolContext::ask`](toolwright_core::ToolContext::ask)) parks its task `input_required`,
//! its question an entry of `inputRequests` under a key this server mints; the client answers
//! with `tasks/update` (`inputResponses` under the same keys), on any replica, and the tool
//! goes on. Several questions asked at once (`tokio::join!` of two asks) are pending at once,
//! and may be answered one at a time.
//!
//! With a task store the pending questions are part of the task's record (so `tasks/get` on
//! any replica lists them), and an answer sent to another replica is kept beside the record,
//! one entry per key, written once (the store's create-if-absent: of two answers to one key,
//! one wins, on every replica); the waiting tool reads it at its next beat. An answer sent to
//! the replica running the task reaches it at once.
//!
//! Before a task call becomes a task, a client that answers input-required rounds (2026-07-28,
//! with elicitation) answers its questions there instead: see [`Gate`].

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use rmcp::model::{InputRequest, InputRequests};
use serde_json::Value;
use tokio::sync::{oneshot, Notify};
use toolwright_core::ask::{Answer, Asker, LogRecord, Question};
use toolwright_core::conversation::ConversationStore;
use toolwright_core::Outcome;
use toolwright_core::Session;

use crate::input::Input;

/// The most questions one task has waiting at once: 16. A question past it is not asked: the
/// tool's `ask` fails with `bad_request`, saying so.
pub const MAX_PENDING_INPUTS_PER_TASK: usize = 16;

/// The most bytes of one answer in `tasks/update` (its JSON): 64 KiB. A larger one is refused
/// (`-32602`, naming its key) and nothing of that update is delivered.
pub const MAX_INPUT_RESPONSE_BYTES: usize = 64 * 1024;

/// Where an answer to task `id`'s question `key`, sent to a replica not running it, is kept.
pub(super) fn answer_key(id: &str, key: &str) -> String {
    format!("mcp-task-answer:{id}:{key}")
}

/// Where a task call stands, as its future ([`Gated`]) and its asker ([`TaskAsker`]) see it.
/// Both run in the call's own tokio task, so they agree without a race: a call becomes a task
/// the first time it waits after its body started, unless a question ended the request's
/// round first.
#[derive(Default)]
pub(crate) struct Gate {
    /// The body started (every check passed).
    started: AtomicBool,
    /// The call is a task now: its questions go to the task.
    committed: AtomicBool,
    /// A question went back to the client in an input-required result: the call ends within
    /// its request.
    round_ended: AtomicBool,
}

impl Gate {
    pub(crate) fn start(&self) {
        self.started.store(true, Ordering::SeqCst);
    }

    pub(crate) fn started(&self) -> bool {
        self.started.load(Ordering::SeqCst)
    }

    pub(crate) fn round_ended(&self) -> bool {
        self.round_ended.load(Ordering::SeqCst)
    }
}

/// A task call's future, telling `commit` the first time it waits after its body started
/// (unless a question ended the round): the call then becomes a task.
pub(crate) struct Gated {
    pub(crate) inner: Pin<Box<dyn Future<Output = Outcome> + Send>>,
    pub(crate) gate: Arc<Gate>,
    pub(crate) commit: Option<oneshot::Sender<()>>,
}

impl Future for Gated {
    type Output = Outcome;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Outcome> {
        let polled = self.inner.as_mut().poll(cx);
        if polled.is_pending()
            && self.commit.is_some()
            && self.gate.started()
            && !self.gate.round_ended()
        {
            self.gate.committed.store(true, Ordering::SeqCst);
            if let Some(commit) = self.commit.take() {
                let _ = commit.send(());
            }
        }
        polled
    }
}

/// One question waiting for its answer.
struct Pending {
    request: InputRequest,
    answer: Option<oneshot::Sender<Value>>,
}

#[derive(Default)]
struct Waiting {
    /// Keys minted so far: each key is used once in the task's life.
    minted: u64,
    pending: BTreeMap<String, Pending>,
}

/// The questions of one task call, waiting for their answers.
pub(crate) struct TaskInputs {
    id: String,
    store: Option<Arc<dyn ConversationStore>>,
    /// How often a waiting question reads the store for an answer sent to another replica.
    beat: Duration,
    waiting: Mutex<Waiting>,
    /// Told when the questions change, so the task's record in the store is saved at once.
    touched: Arc<Notify>,
}

impl TaskInputs {
    pub(crate) fn new(
        id: String,
        store: Option<Arc<dyn ConversationStore>>,
        beat: Duration,
    ) -> Self {
        TaskInputs {
            id,
            store,
            beat: beat.max(Duration::from_millis(1)),
            waiting: Mutex::new(Waiting::default()),
            touched: Arc::new(Notify::new()),
        }
    }

    pub(crate) fn id(&self) -> &str {
        &self.id
    }

    pub(super) fn touched(&self) -> Arc<Notify> {
        Arc::clone(&self.touched)
    }

    fn waiting(&self) -> std::sync::MutexGuard<'_, Waiting> {
        self.waiting.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The questions waiting, under their keys; `None` when none waits.
    pub(super) fn requests(&self) -> Option<InputRequests> {
        let waiting = self.waiting();
        (!waiting.pending.is_empty()).then(|| {
            waiting
                .pending
                .iter()
                .map(|(key, pending)| (key.clone(), pending.request.clone()))
                .collect()
        })
    }

    /// Delivers the client's answer under `key` to the question waiting for it; an answer to
    /// no waiting question (unknown, already answered, given up) is ignored, as SEP-2663 says.
    pub(super) fn answer(&self, key: &str, value: Value) {
        let pending = self.waiting().pending.remove(key);
        if let Some(mut pending) = pending {
            if let Some(answer) = pending.answer.take() {
                let _ = answer.send(value);
            }
            self.touched.notify_one();
        }
    }

    /// Asks `question` in the task and waits for its answer (the tool's timeout bounds the
    /// wait: the call's future, this one with it, is dropped then).
    async fn ask(&self, question: &Question) -> Answer {
        let request = match crate::input::input_request(question) {
            Ok(request) => request,
            Err(why) => return Answer::Unavailable(why),
        };
        let (answer, answered) = oneshot::channel();
        let key = {
            let mut waiting = self.waiting();
            if waiting.pending.len() >= MAX_PENDING_INPUTS_PER_TASK {
                return Answer::Unavailable(format!(
                    "this task has {MAX_PENDING_INPUTS_PER_TASK} questions waiting already, the \
                     most it may; ask fewer at once"
                ));
            }
            waiting.minted += 1;
            let key = format!("{}-{}", question.name().unwrap_or("input"), waiting.minted);
            waiting.pending.insert(
                key.clone(),
                Pending {
                    request,
                    answer: Some(answer),
                },
            );
            key
        };
        let _parked = Parked {
            inputs: self,
            key: &key,
        };
        self.touched.notify_one();
        match self.wait(&key, answered).await {
            Ok(value) => crate::input::answer_to(question, &value),
            Err(why) => Answer::Unavailable(why),
        }
    }

    /// The answer under `key`: delivered here, or, with a store, sent to another replica.
    async fn wait(&self, key: &str, answered: oneshot::Receiver<Value>) -> Result<Value, String> {
        let mut answered = answered;
        loop {
            tokio::select! {
                answer = &mut answered => {
                    return answer.map_err(|_| "the task ended before its answer came".to_owned());
                }
                () = tokio::time::sleep(self.beat), if self.store.is_some() => {}
            }
            let Some(store) = &self.store else {
                continue;
            };
            match store.load_run(&answer_key(&self.id, key)).await {
                Ok(Some(body)) => {
                    return serde_json::from_str(&body).map_err(|e| {
                        format!("the answer kept in the task store for `{key}` is unreadable: {e}")
                    })
                }
                Ok(None) => {}
                Err(error) => tracing::warn!(
                    target: "toolwright::mcp",
                    task = %self.id,
                    %error,
                    "could not read the task store for an answer"
                ),
            }
        }
    }
}

/// A question's place among those waiting, given up when its wait ends (answered, or its
/// call dropped: timed out, cancelled).
struct Parked<'a> {
    inputs: &'a TaskInputs,
    key: &'a str,
}

impl Drop for Parked<'_> {
    fn drop(&mut self) {
        if self.inputs.waiting().pending.remove(self.key).is_some() {
            self.inputs.touched.notify_one();
        }
    }
}

/// The asker of a task call: before the call is a task, the request's input-required round
/// (when the client answers those, [`Input`]); after, the task ([`TaskInputs`]).
pub(crate) struct TaskAsker {
    pub(crate) gate: Arc<Gate>,
    pub(crate) input: Option<Arc<Input>>,
    pub(crate) inputs: Arc<TaskInputs>,
    /// The session the call came in: its asker takes the tool's log lines (a 2025-11-25
    /// session's client gets them while the task works).
    pub(crate) given: Session,
}

impl TaskAsker {
    async fn ask_now(&self, question: &Question) -> Answer {
        if !self.gate.committed.load(Ordering::SeqCst) {
            if let Some(input) = &self.input {
                let answer = input.ask(question).await;
                if matches!(answer, Answer::Later) {
                    self.gate.round_ended.store(true, Ordering::SeqCst);
                }
                return answer;
            }
        }
        self.inputs.ask(question).await
    }
}

impl Asker for TaskAsker {
    fn ask<'a>(
        &'a self,
        question: &'a Question,
    ) -> Pin<Box<dyn Future<Output = Answer> + Send + 'a>> {
        Box::pin(self.ask_now(question))
    }

    fn log(&self, record: &LogRecord) {
        match &self.input {
            Some(input) => input.log(record),
            None => {
                if let Some(asker) = self.given.asker() {
                    asker.log(record);
                }
            }
        }
    }
}
