//! What a tool body can see while it runs: one attempt's [`Invocation`], the owned
//! [`ToolContext`] an `async` body keeps, and the registry's shared [`State`].

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::fmt;
use std::ops::Deref;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use crate::ask::{Answer, Kind, LogLevel, LogRecord, Question, Reply, Root, Sampled, Sampling};
use crate::error::ToolError;
use crate::idempotency::IdempotencyKey;
use crate::progress::{self, ProgressHandle};
use crate::runtime::clock::ClockHandle;
use crate::session::Session;
use serde_json::Value;

/// Shared state registered with [`RegistryBuilder::state`](crate::RegistryBuilder::state),
/// handed to tools that take a `State<T>` parameter.
///
/// ```
/// use toolwright::State;
///
/// struct Db { url: String }
/// fn url(db: State<Db>) -> String { db.url.clone() }
/// ```
pub struct State<T: ?Sized>(pub Arc<T>);

impl<T: ?Sized> Clone for State<T> {
    fn clone(&self) -> Self {
        State(Arc::clone(&self.0))
    }
}

impl<T: ?Sized> Deref for State<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for State<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("State").field(&&*self.0).finish()
    }
}

pub(crate) type StateMap = HashMap<TypeId, Arc<dyn Any + Send + Sync>>;

/// What the registry hands [`Tool::invoke`](crate::Tool::invoke) for one attempt: the call's
/// identity, the session, the attempt number, the deadline, the idempotency key and shared state.
pub struct Invocation<'a> {
    pub(crate) call_id: &'a str,
    pub(crate) tool: &'a Arc<str>,
    pub(crate) session: &'a Session,
    pub(crate) key: Option<&'a IdempotencyKey>,
    pub(crate) attempt: u32,
    pub(crate) deadline: Instant,
    pub(crate) attempt_deadline: Instant,
    pub(crate) state: &'a Arc<StateMap>,
    /// The registry's clock, so `remaining` reads the time line the deadline is on.
    pub(crate) clock: &'a ClockHandle,
    pub(crate) progress: Option<&'a ProgressHandle>,
}

impl Invocation<'_> {
    /// The provider's call id.
    pub fn call_id(&self) -> &str {
        self.call_id
    }

    /// The tool's name.
    pub fn tool(&self) -> &str {
        self.tool
    }

    /// The conversation the call belongs to.
    pub fn session(&self) -> &Session {
        self.session
    }

    /// 1 for the first attempt, 2 for the first retry, ...
    pub fn attempt(&self) -> u32 {
        self.attempt
    }

    /// When the call as a whole (every attempt) must be done.
    pub fn deadline(&self) -> Instant {
        self.deadline
    }

    /// Time left before the call's deadline.
    pub fn remaining(&self) -> Duration {
        self.deadline.saturating_duration_since(self.clock.now())
    }

    /// When this attempt is cancelled: its timeout or the call's deadline, whichever comes
    /// first. A good timeout for a downstream request.
    pub fn attempt_deadline(&self) -> Instant {
        self.attempt_deadline
    }

    /// The call's idempotency key, the same on every attempt.
    pub fn idempotency_key(&self) -> IdempotencyKey {
        match self.key {
            Some(key) => key.clone(),
            None => IdempotencyKey::derive(&self.session.call_scope(), self.tool, self.call_id),
        }
    }

    /// Shared state of type `T`, if the registry has it.
    pub fn state<T: Send + Sync + 'static>(&self) -> Option<State<T>> {
        let any = self.state.get(&TypeId::of::<T>())?.clone();
        any.downcast::<T>().ok().map(State)
    }

    /// Reports how far the call got; see [`ToolContext::progress`].
    pub fn progress(&self, done: f64, total: Option<f64>, message: impl Into<String>) {
        report(
            self.progress,
            self.tool,
            self.call_id,
            done,
            total,
            message.into(),
        );
    }

    /// An owned snapshot of this invocation, for tool bodies that take a [`ToolContext`].
    pub fn context(&self) -> ToolContext {
        ToolContext {
            call_id: self.call_id.into(),
            tool: Arc::clone(self.tool),
            session: self.session.clone(),
            key: self.idempotency_key(),
            attempt: self.attempt,
            deadline: self.deadline,
            attempt_deadline: self.attempt_deadline,
            state: Arc::clone(self.state),
            clock: self.clock.clone(),
            progress: self.progress.cloned(),
            asked: AtomicUsize::new(0),
        }
    }
}

/// A report to the call's handle, or a `tracing` event when it has none.
fn report(
    handle: Option<&ProgressHandle>,
    tool: &str,
    call_id: &str,
    done: f64,
    total: Option<f64>,
    message: String,
) {
    match handle {
        Some(handle) => handle.report(done, total, (!message.is_empty()).then_some(message)),
        None => progress::untracked(tool, call_id, done, total, &message),
    }
}

/// An owned view of the running call, for tool functions that declare a `ToolContext`
/// parameter (it is injected, never part of the schema).
///
/// ```
/// use toolwright::ToolContext;
///
/// fn budget_ms(ctx: &ToolContext) -> u128 {
///     ctx.remaining().as_millis()
/// }
/// ```
pub struct ToolContext {
    call_id: Arc<str>,
    tool: Arc<str>,
    session: Session,
    key: IdempotencyKey,
    attempt: u32,
    deadline: Instant,
    attempt_deadline: Instant,
    state: Arc<StateMap>,
    clock: ClockHandle,
    progress: Option<ProgressHandle>,
    /// How many questions this run has asked ([`ToolContext::ask`]); a clone goes on from the
    /// count it was made at.
    asked: AtomicUsize,
}

impl Clone for ToolContext {
    fn clone(&self) -> Self {
        ToolContext {
            call_id: Arc::clone(&self.call_id),
            tool: Arc::clone(&self.tool),
            session: self.session.clone(),
            key: self.key.clone(),
            attempt: self.attempt,
            deadline: self.deadline,
            attempt_deadline: self.attempt_deadline,
            state: Arc::clone(&self.state),
            clock: self.clock.clone(),
            progress: self.progress.clone(),
            asked: AtomicUsize::new(self.asked.load(Ordering::Relaxed)),
        }
    }
}

impl ToolContext {
    /// The provider's call id.
    pub fn call_id(&self) -> &str {
        &self.call_id
    }

    /// The tool's name.
    pub fn tool(&self) -> &str {
        &self.tool
    }

    /// The conversation the call belongs to.
    pub fn session(&self) -> &Session {
        &self.session
    }

    /// 1 for the first attempt, 2 for the first retry, ...
    pub fn attempt(&self) -> u32 {
        self.attempt
    }

    /// When the call as a whole must be done.
    pub fn deadline(&self) -> Instant {
        self.deadline
    }

    /// Time left before the call's deadline.
    pub fn remaining(&self) -> Duration {
        self.deadline.saturating_duration_since(self.clock.now())
    }

    /// When this attempt is cancelled: its timeout or the call's deadline, whichever comes
    /// first.
    pub fn attempt_deadline(&self) -> Instant {
        self.attempt_deadline
    }

    /// The call's idempotency key, the same on every attempt.
    pub fn idempotency_key(&self) -> &IdempotencyKey {
        &self.key
    }

    /// Shared state of type `T`, if the registry has it.
    pub fn state<T: Send + Sync + 'static>(&self) -> Option<State<T>> {
        let any = self.state.get(&TypeId::of::<T>())?.clone();
        any.downcast::<T>().ok().map(State)
    }

    /// Reports how far the call got: `done` of `total` (if known), with a message for a person
    /// (empty for none). `done` should grow with every report. Under MCP, when the client asked
    /// for progress, it becomes a `notifications/progress`; with a handle from
    /// [`ToolCall::with_progress`](crate::ToolCall::with_progress) it goes there; otherwise it is a `tracing` event. Reports are
    /// rate-limited (see [the `progress` module](crate::progress)), so report as often as is convenient.
    ///
    /// ```
    /// use toolwright::{ToolContext, ToolError};
    ///
    /// async fn import(ctx: &ToolContext, rows: &[String]) -> Result<usize, ToolError> {
    ///     for (i, _row) in rows.iter().enumerate() {
    ///         // ... write the row ...
    ///         ctx.progress((i + 1) as f64, Some(rows.len() as f64), "importing rows");
    ///     }
    ///     Ok(rows.len())
    /// }
    /// ```
    pub fn progress(&self, done: f64, total: Option<f64>, message: impl Into<String>) {
        report(
            self.progress.as_ref(),
            &self.tool,
            &self.call_id,
            done,
            total,
            message.into(),
        );
    }
}

impl ToolContext {
    /// Asks the user a question with a form of `T`'s fields (a `#[toolwright::data]` struct,
    /// or one deriving `Deserialize` and `JsonSchema`; forms hold strings, numbers, booleans
    /// and enums of strings) and waits for the reply, within the tool's timeout. Over MCP it is
    /// a form elicitation; see [the `ask` module](crate::ask), and ask before the tool acts: a
    /// 2026-07-28 client's answer comes with the call sent again, which runs the tool from its
    /// start.
    ///
    /// Fails with `bad_request` when the caller cannot ask (no asker on the session, a client
    /// without forms), or when the answer does not fit `T`.
    pub async fn ask<T>(&self, message: impl Into<String>) -> Result<Reply<T>, ToolError>
    where
        T: serde::de::DeserializeOwned + schemars::JsonSchema,
    {
        self.asked_as(None, message.into()).await
    }

    /// [`ToolContext::ask`], the question named `name` (unique within the call): over MCP
    /// 2026-07-28 its key in the input-required result, for a client that answers questions by
    /// name. Unnamed questions are keyed by their place in the call.
    pub async fn ask_named<T>(
        &self,
        name: impl Into<String>,
        message: impl Into<String>,
    ) -> Result<Reply<T>, ToolError>
    where
        T: serde::de::DeserializeOwned + schemars::JsonSchema,
    {
        self.asked_as(Some(name.into()), message.into()).await
    }

    /// [`ToolContext::ask_named`] with a form known only at run time (a runtime tool's, a
    /// proxied server's question): `schema` is a JSON Schema object of flat fields, and the
    /// reply is the form as the user filled it in.
    pub async fn ask_schema(
        &self,
        name: impl Into<String>,
        message: impl Into<String>,
        schema: Value,
    ) -> Result<Reply<Value>, ToolError> {
        match self
            .put(Some(name.into()), message.into(), Kind::Form(schema))
            .await?
        {
            (Answer::Accepted(value), _) => Ok(Reply::Accepted(value)),
            (Answer::Declined, _) => Ok(Reply::Declined),
            (Answer::Dismissed, _) => Ok(Reply::Dismissed),
            (other, question) => Err(self.misanswered(&question, &other)),
        }
    }

    async fn asked_as<T>(
        &self,
        name: Option<String>,
        message: String,
    ) -> Result<Reply<T>, ToolError>
    where
        T: serde::de::DeserializeOwned + schemars::JsonSchema,
    {
        let schema = crate::tool::schema::root_schema::<T>();
        match self.put(name, message, Kind::Form(schema)).await? {
            (Answer::Accepted(value), question) => serde_json::from_value(value)
                .map(Reply::Accepted)
                .map_err(|e| {
                    ToolError::bad_request(format!(
                        "the user's answer to `{}` does not fit its form: {e}",
                        question.message
                    ))
                }),
            (Answer::Declined, _) => Ok(Reply::Declined),
            (Answer::Dismissed, _) => Ok(Reply::Dismissed),
            (other, question) => Err(self.misanswered(&question, &other)),
        }
    }

    /// Asks the client's model for a completion of `request` and waits for it, within the
    /// tool's timeout: over MCP a sampling request to the client (sent at once to a
    /// 2025-11-25 session, an input-required result for a 2026-07-28 client, after which the
    /// tool runs again from its start, as for [`ToolContext::ask`]); in the agent loop, the
    /// agent's own model answers it.
    ///
    /// Fails with `bad_request` when the caller cannot sample (a client that did not declare
    /// `sampling`, no asker on the session), with a message that says so.
    ///
    /// ```
    /// use toolwright::ask::Sampling;
    /// use toolwright::{ToolContext, ToolError};
    ///
    /// async fn review(ctx: &ToolContext, diff: &str) -> Result<String, ToolError> {
    ///     let summary = ctx
    ///         .sample(Sampling::new(format!("Summarise this diff in one line:\n{diff}")).with_max_tokens(80))
    ///         .await?;
    ///     Ok(format!("{} (by {})", summary.text(), summary.model()))
    /// }
    /// ```
    pub async fn sample(&self, request: Sampling) -> Result<Sampled, ToolError> {
        self.sample_as(None, request).await
    }

    /// [`ToolContext::sample`], the request named `name` (unique within the call): its key in
    /// a 2026-07-28 input-required result.
    pub async fn sample_named(
        &self,
        name: impl Into<String>,
        request: Sampling,
    ) -> Result<Sampled, ToolError> {
        self.sample_as(Some(name.into()), request).await
    }

    async fn sample_as(
        &self,
        name: Option<String>,
        request: Sampling,
    ) -> Result<Sampled, ToolError> {
        let message = request.summary();
        match self.put(name, message, Kind::Sampling(request)).await? {
            (Answer::Sampled(sampled), _) => Ok(sampled),
            (other, question) => Err(self.misanswered(&question, &other)),
        }
    }

    /// The client's roots (the directories or other places it lets tools work in): over MCP
    /// a `roots/list` request (at once for a 2025-11-25 session, an input-required result for
    /// a 2026-07-28 client); elsewhere what the session's asker answers.
    ///
    /// Fails with `bad_request` when the client did not declare `roots`, or the caller cannot
    /// ask.
    ///
    /// ```
    /// use toolwright::{ToolContext, ToolError};
    ///
    /// async fn inside_roots(ctx: &ToolContext, path: &str) -> Result<bool, ToolError> {
    ///     let roots = ctx.roots().await?;
    ///     Ok(roots.iter().any(|root| path.starts_with(root.uri().trim_start_matches("file://"))))
    /// }
    /// ```
    pub async fn roots(&self) -> Result<Vec<Root>, ToolError> {
        self.roots_as(None).await
    }

    /// [`ToolContext::roots`], the request named `name`: its key in a 2026-07-28
    /// input-required result.
    pub async fn roots_named(&self, name: impl Into<String>) -> Result<Vec<Root>, ToolError> {
        self.roots_as(Some(name.into())).await
    }

    async fn roots_as(&self, name: Option<String>) -> Result<Vec<Root>, ToolError> {
        let message = "the client's roots".to_owned();
        match self.put(name, message, Kind::Roots).await? {
            (Answer::Roots(roots), _) => Ok(roots),
            (other, question) => Err(self.misanswered(&question, &other)),
        }
    }

    /// Sends a log line to the user's side: over MCP a `notifications/message` to the
    /// client (at or above the level it set with `logging/setLevel`, or a 2026-07-28
    /// request's `logLevel`); in the agent loop, the run's events. Every line is also a
    /// `tracing` event of the target `toolwright::tool_log`. Never waits, never fails.
    ///
    /// ```
    /// use toolwright::ask::LogLevel;
    /// use toolwright::ToolContext;
    ///
    /// fn import(ctx: &ToolContext, rows: &[&str]) -> usize {
    ///     let kept: Vec<_> = rows.iter().filter(|row| !row.is_empty()).collect();
    ///     ctx.log(LogLevel::Notice, format!("skipped {} empty rows", rows.len() - kept.len()));
    ///     kept.len()
    /// }
    /// ```
    pub fn log(&self, level: LogLevel, message: impl Into<String>) {
        self.log_json(level, Value::String(message.into()));
    }

    /// [`ToolContext::log`] of structured data (any JSON).
    pub fn log_json(&self, level: LogLevel, data: Value) {
        let record = LogRecord {
            tool: self.tool.to_string(),
            call_id: self.call_id.to_string(),
            level,
            logger: None,
            data,
        };
        crate::ask::traced(&record);
        if let Some(asker) = self.session.asker() {
            asker.log(&record);
        }
    }

    /// Runs `fut` (a part of the tool's body) with the `tracing` events it emits sent to the
    /// client as log lines too, where the application's subscriber has
    /// [`ClientLogLayer`](crate::ask::ClientLogLayer). Events of tasks `fut` spawns are not
    /// sent (they run outside it).
    ///
    /// ```
    /// use toolwright::{ToolContext, ToolError};
    ///
    /// async fn import(ctx: &ToolContext, rows: Vec<String>) -> Result<usize, ToolError> {
    ///     ctx.forward_tracing(async {
    ///         let kept = rows.iter().filter(|row| !row.is_empty()).count();
    ///         tracing::info!(skipped = rows.len() - kept, "imported {kept} rows");
    ///         Ok(kept)
    ///     })
    ///     .await
    /// }
    /// ```
    pub async fn forward_tracing<F: std::future::Future>(&self, fut: F) -> F::Output {
        crate::ask::forwarding(self.clone(), fut).await
    }

    /// Asks one question of the session's asker.
    async fn put(
        &self,
        name: Option<String>,
        message: String,
        kind: Kind,
    ) -> Result<(Answer, Question), ToolError> {
        let question = Question {
            tool: self.tool.to_string(),
            call_id: self.call_id.to_string(),
            index: self.asked.fetch_add(1, Ordering::Relaxed),
            name,
            message,
            kind,
        };
        let form = matches!(question.kind(), Kind::Form(_));
        let Some(asker) = self.session.asker() else {
            return Err(ToolError::bad_request(if form {
                format!(
                    "the tool `{}` asks its user a question, and this caller cannot ask one; \
                     tell the user what it needs instead",
                    self.tool
                )
            } else {
                format!(
                    "the tool `{}` asks its client for {}, and this caller cannot be asked; \
                     go on without it or tell the user",
                    self.tool,
                    crate::ask::what(&question)
                )
            }));
        };
        match asker.ask(&question).await {
            Answer::Later => {
                // Let every question awaited together with this one be asked in the same
                // round before the call stops (`try_join!` stops at the first error).
                tokio::task::yield_now().await;
                Err(crate::ask::later())
            }
            Answer::Unavailable(why) if form => Err(ToolError::bad_request(format!(
                "the tool `{}` could not ask its user: {why}",
                self.tool
            ))),
            Answer::Unavailable(why) => Err(ToolError::bad_request(format!(
                "the tool `{}` could not ask its client for {}: {why}",
                self.tool,
                crate::ask::what(&question)
            ))),
            answer => Ok((answer, question)),
        }
    }

    /// An answer of the wrong kind for `question`, from a faulty asker.
    fn misanswered(&self, question: &Question, answer: &Answer) -> ToolError {
        ToolError::bad_request(format!(
            "the tool `{}` asked its client for {} and got an answer of another kind ({})",
            self.tool,
            crate::ask::what(question),
            crate::ask::answer_kind(answer)
        ))
    }
}

impl fmt::Debug for ToolContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolContext")
            .field("call_id", &self.call_id)
            .field("tool", &self.tool)
            .field("attempt", &self.attempt)
            .field("session", &self.session)
            .finish()
    }
}
