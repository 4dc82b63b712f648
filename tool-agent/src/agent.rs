//! The loop: ask the model, run the calls it makes through the registry, send back the outcomes,
//! until it answers without calls or a limit ends the run.

use std::borrow::Cow;
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::stream::{self, StreamExt};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::time::Instant;
use toolwright_core::ask::Root;
use toolwright_core::conversation::DEFAULT_RUN_TTL;
use toolwright_core::execute::Budget;
use toolwright_core::execute::{RandomSource, RetryBudget, RetryPolicy, ThreadRandom};
use toolwright_core::providers::ExportError;
use toolwright_core::{ErrorKind, Outcome, Registry, Session, Status, ToolCall, ERROR_CONTRACT};
use tracing::Instrument;

use crate::asker::AgentAsker;
use crate::kept::Keeper;
use crate::limits::{Exceeded, Limit, UsageLimits};
use crate::message::{AssistantTurn, Message, Usage};
use crate::model::{AgentEvent, ChatModel, Events, ModelError, ModelRequest, Reported, Turn};
use crate::repeats::{not_retryable, RepeatedCalls, Repeats, Verdict};

/// The step cap when none is set: 10 model turns, the cap of the agent loop in "How to Handle
/// Tool Execution Failures" (a model stuck on a failing tool otherwise loops until the token
/// bill stops it).
pub const DEFAULT_MAX_STEPS: usize = 10;

/// The wall-clock limit of a run when none is set.
pub const DEFAULT_DEADLINE: Duration = Duration::from_secs(600);

/// The limit of one model request when none is set (then it is a `timeout`, and retried).
pub const DEFAULT_MODEL_TIMEOUT: Duration = Duration::from_secs(120);

/// The calls of one model turn that run when no cap is set: 64, far above what a model fanning
/// out a real task makes in a turn, and far below a turn of ten thousand side-effecting calls
/// all started at once. The calls past the cap do not run; each is answered `rate_limited`,
/// telling the model to make it again in a later turn.
pub const DEFAULT_MAX_CALLS_PER_TURN: usize = 64;

/// A model, a registry and the rules of the loop between them. Cheap to clone; one agent serves
/// any number of conversations at once, each with its own [`Session`].
#[derive(Clone)]
pub struct Agent {
    inner: Arc<Inner>,
}

struct Inner {
    model: Arc<dyn ChatModel>,
    registry: Registry,
    tools: Value,
    /// The registry's [`version`](Registry::version) `tools` was exported at.
    tools_version: u64,
    system: String,
    max_steps: usize,
    max_calls_per_turn: usize,
    deadline: Duration,
    run_ttl: Duration,
    lease_margin: Duration,
    tool_concurrency: Option<usize>,
    model_retry: RetryPolicy,
    model_timeout: Duration,
    budget: Budget,
    origin: Instant,
    random: Box<dyn RandomSource>,
    events: Events,
    roots: Option<Arc<[Root]>>,
    limits: UsageLimits,
    repeats: RepeatedCalls,
}

impl fmt::Debug for Agent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Agent")
            .field("tools", &self.inner.registry.names())
            .field("max_steps", &self.inner.max_steps)
            .field("deadline", &self.inner.deadline)
            .field("tool_concurrency", &self.inner.tool_concurrency)
            .finish_non_exhaustive()
    }
}

/// Builds an [`Agent`]; see [`Agent::builder`] for the defaults.
pub struct AgentBuilder {
    model: Arc<dyn ChatModel>,
    registry: Registry,
    system: String,
    error_contract: bool,
    max_steps: usize,
    max_calls_per_turn: usize,
    deadline: Duration,
    run_ttl: Duration,
    lease_margin: Duration,
    tool_concurrency: Option<usize>,
    model_retry: RetryPolicy,
    model_budget: RetryBudget,
    model_timeout: Duration,
    random: Box<dyn RandomSource>,
    events: Events,
    roots: Option<Arc<[Root]>>,
    limits: UsageLimits,
    repeats: RepeatedCalls,
}

impl fmt::Debug for AgentBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AgentBuilder")
            .field("max_steps", &self.max_steps)
            .finish_non_exhaustive()
    }
}

impl Agent {
    /// An agent over `model` and `registry`, with these defaults:
    ///
    /// | setting | default |
    /// |---|---|
    /// | [`system`](AgentBuilder::system) | none, plus [`ERROR_CONTRACT`] (so the model knows how to read a failed call's envelope) |
    /// | [`max_steps`](AgentBuilder::max_steps) | [`DEFAULT_MAX_STEPS`] (10) model turns |
    /// | [`max_calls_per_turn`](AgentBuilder::max_calls_per_turn) | [`DEFAULT_MAX_CALLS_PER_TURN`] (64) calls run per model turn |
    /// | [`deadline`](AgentBuilder::deadline) | [`DEFAULT_DEADLINE`] (10 min) for the whole run |
    /// | [`run_ttl`](AgentBuilder::run_ttl) | [`DEFAULT_RUN_TTL`] (7 days) a kept run lives after it was last saved |
    /// | [`run_lease_margin`](AgentBuilder::run_lease_margin) | [`RUN_LEASE_MARGIN`](crate::RUN_LEASE_MARGIN) (60 s) a replica's hold on a kept run lasts past the deadline |
    /// | [`tool_concurrency`](AgentBuilder::tool_concurrency) | every call of a turn at once |
    /// | [`model_retry`](AgentBuilder::model_retry) | 3 attempts, full jitter from 250 ms, `Retry-After` honoured |
    /// | [`model_retry_budget`](AgentBuilder::model_retry_budget) | retries up to 20% of requests (+1/s) |
    /// | [`model_timeout`](AgentBuilder::model_timeout) | [`DEFAULT_MODEL_TIMEOUT`] (120 s) per request |
    /// | [`usage_limits`](AgentBuilder::usage_limits) | none: requests, tool calls, tokens and cost unlimited |
    /// | [`repeated_calls`](AgentBuilder::repeated_calls) | an identical call runs 3 times, fails 2 times in a row ([`RepeatedCalls::new`]) |
    pub fn builder(model: impl ChatModel, registry: Registry) -> AgentBuilder {
        AgentBuilder {
            model: Arc::new(model),
            registry,
            system: String::new(),
            error_contract: true,
            max_steps: DEFAULT_MAX_STEPS,
            max_calls_per_turn: DEFAULT_MAX_CALLS_PER_TURN,
            deadline: DEFAULT_DEADLINE,
            run_ttl: DEFAULT_RUN_TTL,
            lease_margin: crate::kept::RUN_LEASE_MARGIN,
            tool_concurrency: None,
            model_retry: RetryPolicy::new(),
            model_budget: RetryBudget::default(),
            model_timeout: DEFAULT_MODEL_TIMEOUT,
            random: Box::new(ThreadRandom),
            events: Events::none(),
            roots: None,
            limits: UsageLimits::new(),
            repeats: RepeatedCalls::new(),
        }
    }

    /// The system prompt sent with every request.
    pub fn system_prompt(&self) -> &str {
        &self.inner.system
    }

    /// The tools as the model receives them (the provider's `tools` field), all of them, as
    /// they were when the agent was built. A run sends the model only those its session is
    /// shown, as they are at each step ([`Agent::tools_for`]).
    pub fn tools(&self) -> &Value {
        &self.inner.tools
    }

    /// The tools a run in `session` sends the model: those the session is shown
    /// ([`Registry::specs_for`]: it holds their scopes and no predicate hides them), asked again
    /// at every step, since a predicate may depend on where the conversation is and the
    /// registry's tools may change while it serves ([`Registry::change`]).
    pub fn tools_for(&self, session: &Session) -> Cow<'_, Value> {
        let registry = &self.inner.registry;
        if registry.version() == self.inner.tools_version
            && registry.specs_for(session).count() == registry.specs().len()
        {
            return Cow::Borrowed(&self.inner.tools);
        }
        // Every tool exported when the agent was built, so a subset exports too; a tool added
        // since (`Registry::change`) was checked by its own builder.
        match registry.export_for(session, self.inner.model.export()) {
            Ok(tools) => Cow::Owned(tools),
            Err(_) => Cow::Borrowed(&self.inner.tools),
        }
    }

    /// The registry the calls run in.
    pub fn registry(&self) -> &Registry {
        &self.inner.registry
    }

    /// Runs a conversation to its end: the model's final answer, a limit, a call waiting for
    /// approval, an abort, or a model error ([`End`]). Calls run in `session`, so its grounded
    /// ids, recovery counts, approver and idempotency scope apply to every call.
    pub async fn run(&self, session: &Session, messages: Vec<Message>) -> Run {
        let run = Run::start(messages);
        let session = self.served(session);
        self.drive(&session, run, None)
            .instrument(agent_span(&session))
            .await
    }

    /// Continues a run that ended [`End::Pending`] once a person decided: the calls that waited
    /// are proposed again (the approver answers them with the decision), the calls of that turn
    /// that already ran are not repeated, and the loop goes on. The deadline starts again. A run
    /// that ended otherwise is returned as it is.
    pub async fn resume(&self, session: &Session, run: Run) -> Run {
        if run.pending.is_none() {
            return run;
        }
        let session = self.served(session);
        self.drive(&session, run, None)
            .instrument(agent_span(&session))
            .await
    }

    /// The session the calls run in: marked as searched by the provider when the model's
    /// export lets the provider search deferred tools itself, and asking the agent (its model
    /// answers a tool's sampling request, its roots a request for roots, the session's own
    /// asker a form; a tool's log lines are run events).
    pub(crate) fn served<'s>(&self, session: &'s Session) -> Cow<'s, Session> {
        let inner = &self.inner;
        let mut served = session.clone().with_asker(Arc::new(AgentAsker {
            model: Arc::clone(&inner.model),
            roots: inner.roots.clone(),
            events: inner.events.clone(),
            given: session.clone(),
        }));
        if inner.model.export().uses_native_tool_search() && !session.native_tool_search() {
            served = served.with_native_tool_search();
        }
        Cow::Owned(served)
    }

    /// How long a replica holds a kept run it drives: the deadline of a drive, and a margin.
    pub(crate) fn lease(&self) -> Duration {
        self.inner.deadline.saturating_add(self.inner.lease_margin)
    }

    /// How long a kept run lives after it was last saved.
    pub(crate) fn run_ttl(&self) -> Duration {
        self.inner.run_ttl
    }

    /// The loop, from where `run` stands; a kept run (`keep`) is saved after each turn, and
    /// stops if another replica took it over.
    pub(crate) async fn drive(
        &self,
        session: &Session,
        mut run: Run,
        keep: Option<&Keeper<'_>>,
    ) -> Run {
        let inner = &*self.inner;
        let deadline = Instant::now() + inner.deadline;
        if let Some(turn) = run.pending.take() {
            if let Err(end) = self.finish_turn(session, &mut run, turn, deadline).await {
                run.end = end;
                return run;
            }
            if let Err(end) = checkpoint(keep, &run).await {
                run.end = end;
                return run;
            }
        }
        loop {
            if run.steps.len() >= inner.max_steps {
                run.end = End::StepLimit;
                return run;
            }
            let started = Instant::now();
            // Deferred tools found on another replica (or before a restart) are shown too.
            if inner.registry.search_tool().is_some() {
                if let Err(error) = inner.registry.refresh_found(session).await {
                    tracing::warn!(
                        target: "toolwright::agent",
                        %error,
                        "could not read which deferred tools the conversation found; listing those this process knows"
                    );
                }
            }
            // Asked each step: a predicate may show a tool only at some stage of the conversation.
            let tools = self.tools_for(session);
            // The model's turn, as the OpenTelemetry GenAI conventions name it.
            let chat = tracing::info_span!(
                target: "toolwright::span",
                "chat",
                gen_ai.operation.name = "chat"
            );
            let asked = tokio::time::timeout_at(
                deadline,
                self.ask_model(&run.transcript, &tools, deadline, &mut run.requests)
                    .instrument(chat),
            );
            let (turn, attempts) = match asked.await {
                Err(_) => {
                    run.end = End::Aborted(AbortReason::Deadline);
                    return run;
                }
                Ok(Err(Unanswered::Model(error))) => {
                    run.end = End::ModelError(error);
                    return run;
                }
                Ok(Err(Unanswered::Limit(exceeded))) => {
                    run.end = exceeded.end();
                    return run;
                }
                Ok(Ok(answer)) => answer,
            };
            if let Some(usage) = turn.usage {
                run.usage += usage;
            }
            let Turn {
                text,
                calls,
                usage,
                native,
            } = turn;
            run.steps.push(Step {
                number: run.steps.len() + 1,
                text: text.clone(),
                calls: calls.clone(),
                outcomes: Vec::new(),
                usage,
                model_attempts: attempts,
                model_time: started.elapsed(),
                tool_time: Duration::ZERO,
            });
            run.transcript.push(Message::Assistant(AssistantTurn {
                text: text.clone(),
                calls: calls.clone(),
                native,
            }));
            // Tokens are known only now: the answer that passed a limit ends the run.
            if let Some(exceeded) = inner.limits.after_answer(run.usage) {
                let unrun = vec![None; calls.len()];
                run.end = self.end_unrun(&mut run, &calls, unrun, exceeded);
                return run;
            }
            if calls.is_empty() {
                inner.events.emit(AgentEvent::StepFinished {
                    step: run.steps.len(),
                });
                run.end = End::Final(text.unwrap_or_default());
                return run;
            }
            let mut outcomes = self.past_the_cap(&mut run, &calls);
            self.answer_repeats(&mut run, &calls, &mut outcomes);
            let to_run = outcomes.iter().filter(|o| o.is_none()).count() as u64;
            if let Some(exceeded) = inner.limits.before_calls(run.tool_calls, to_run) {
                run.end = self.end_unrun(&mut run, &calls, outcomes, exceeded);
                return run;
            }
            run.tool_calls = run.tool_calls.saturating_add(to_run);
            let turn = PendingTurn { calls, outcomes };
            if let Err(end) = self.finish_turn(session, &mut run, turn, deadline).await {
                run.end = end;
                return run;
            }
            if let Err(end) = checkpoint(keep, &run).await {
                run.end = end;
                return run;
            }
        }
    }

    /// The outcomes a turn starts with: none for the calls within the per-turn cap, and for
    /// each call past it a `rate_limited` refusal (recorded in the step and reported as an
    /// event), so it never runs.
    fn past_the_cap(&self, run: &mut Run, calls: &[ToolCall]) -> Vec<Option<Outcome>> {
        let inner = &*self.inner;
        let cap = inner.max_calls_per_turn;
        let mut outcomes = vec![None; calls.len()];
        for (slot, call) in outcomes.iter_mut().zip(calls).skip(cap) {
            let outcome = Outcome::refused(
                call.id(),
                call.name(),
                ErrorKind::RateLimited,
                format!(
                    "this call did not run: the turn made {} tool calls and at most {cap} run per turn; split the work and make this call again in a later turn, after reading the results of the first {cap}",
                    calls.len()
                ),
            );
            inner.events.emit(AgentEvent::ToolOutcome {
                call,
                outcome: &outcome,
            });
            if let Some(last) = run.steps.last_mut() {
                last.outcomes.push(outcome.clone());
            }
            *slot = Some(outcome);
        }
        outcomes
    }

    /// Ends the run on a usage limit with the turn's calls not run: each call without an
    /// outcome is answered with a refusal saying which limit, so the transcript pairs every call
    /// with its result and a conversation continued from it (after raising the limit, say) is
    /// one a provider accepts.
    fn end_unrun(
        &self,
        run: &mut Run,
        calls: &[ToolCall],
        outcomes: Vec<Option<Outcome>>,
        exceeded: Exceeded,
    ) -> End {
        if calls.is_empty() {
            return exceeded.end();
        }
        let inner = &*self.inner;
        let mut results = Vec::with_capacity(calls.len());
        for (call, outcome) in calls.iter().zip(outcomes) {
            let outcome = match outcome {
                Some(outcome) => outcome,
                None => {
                    let refused = not_retryable(Outcome::refused(
                        call.id(),
                        call.name(),
                        ErrorKind::RateLimited,
                        format!(
                            "this call did not run: the run reached its limit of {} {}",
                            exceeded.allowed, exceeded.limit
                        ),
                    ));
                    inner.events.emit(AgentEvent::ToolOutcome {
                        call,
                        outcome: &refused,
                    });
                    if let Some(last) = run.steps.last_mut() {
                        last.outcomes.push(refused.clone());
                    }
                    refused
                }
            };
            results.push(outcome);
        }
        run.transcript.push(Message::ToolResults(results));
        exceeded.end()
    }

    /// Answers, in `outcomes`, the calls that repeat a call the run made often enough already
    /// ([`RepeatedCalls`]): from the run's record of the earlier outcome, or with a refusal.
    /// Each answer is recorded in the step and reported as an event, as a refusal past the cap.
    fn answer_repeats(&self, run: &mut Run, calls: &[ToolCall], outcomes: &mut [Option<Outcome>]) {
        let inner = &*self.inner;
        let mut in_turn = std::collections::HashMap::new();
        let answers: Vec<(usize, Outcome)> = calls
            .iter()
            .zip(outcomes.iter())
            .enumerate()
            .filter(|(_, (_, slot))| slot.is_none())
            .filter_map(|(i, (call, _))| {
                let earlier = |step: usize, id: &str| {
                    run.steps
                        .get(step)?
                        .outcomes
                        .iter()
                        .find(|o| o.call_id() == id && o.is_ok())
                };
                match run.repeats.verdict(
                    inner.repeats,
                    &inner.registry,
                    call,
                    &mut in_turn,
                    earlier,
                ) {
                    Verdict::Run => None,
                    Verdict::Answer(outcome) => Some((i, outcome)),
                }
            })
            .collect();
        for (i, outcome) in answers {
            let (Some(call), Some(slot)) = (calls.get(i), outcomes.get_mut(i)) else {
                continue;
            };
            inner.events.emit(AgentEvent::ToolOutcome {
                call,
                outcome: &outcome,
            });
            if let Some(last) = run.steps.last_mut() {
                last.outcomes.push(outcome.clone());
            }
            *slot = Some(outcome);
        }
    }

    /// Runs the calls of a turn that have no outcome yet, concurrently up to the bound, and
    /// appends every outcome in call order; `Err` ends the run.
    async fn finish_turn(
        &self,
        session: &Session,
        run: &mut Run,
        mut turn: PendingTurn,
        deadline: Instant,
    ) -> Result<(), End> {
        let inner = &*self.inner;
        // One slot per call: a turn read back from elsewhere was checked for this when it was
        // read (`Run`'s deserialization); held here too, so no stored shape can index past.
        turn.outcomes.resize(turn.calls.len(), None);
        // Owned calls: a stream of borrowed ones makes the drive's future `Send` only for one
        // lifetime, and a caller could no longer spawn it.
        let todo: Vec<(usize, ToolCall)> = turn
            .calls
            .iter()
            .zip(&turn.outcomes)
            .enumerate()
            .filter(|(_, (_, outcome))| outcome.is_none())
            .map(|(i, (call, _))| (i, call.clone()))
            .collect();
        let bound = inner.tool_concurrency.unwrap_or(todo.len()).max(1);
        let started = Instant::now();
        let batch = stream::iter(todo)
            .map(|(i, call)| async move {
                let outcome = inner.registry.call_in(session, call.clone()).await;
                (i, call, outcome)
            })
            .buffered(bound)
            .collect::<Vec<(usize, ToolCall, Outcome)>>();
        let Ok(finished) = tokio::time::timeout_at(deadline, batch).await else {
            return Err(End::Aborted(AbortReason::Deadline));
        };
        let step = run.steps.len();
        let mut ticket = None;
        let mut done = Vec::with_capacity(finished.len());
        for (i, call, outcome) in finished {
            run.repeats
                .record(&inner.registry, step.saturating_sub(1), &call, &outcome);
            inner.events.emit(AgentEvent::ToolOutcome {
                call: &call,
                outcome: &outcome,
            });
            if let Some(last) = run.steps.last_mut() {
                last.outcomes.push(outcome.clone());
            }
            if outcome.status() == Status::Pending {
                ticket = ticket.or_else(|| pending_ticket(&outcome));
            } else {
                done.push((i, outcome));
            }
        }
        for (i, outcome) in done {
            if let Some(slot) = turn.outcomes.get_mut(i) {
                *slot = Some(outcome);
            }
        }
        if let Some(last) = run.steps.last_mut() {
            // Saturating: a time read back from a stored run may be anything.
            last.tool_time = last.tool_time.saturating_add(started.elapsed());
        }
        if turn.outcomes.iter().any(Option::is_none) {
            run.pending = Some(turn);
            return Err(End::Pending {
                ticket: ticket.unwrap_or_default(),
            });
        }
        let outcomes: Vec<Outcome> = turn.outcomes.into_iter().flatten().collect();
        let abort = run.count_recovery(&outcomes);
        run.transcript.push(Message::ToolResults(outcomes));
        inner.events.emit(AgentEvent::StepFinished { step });
        match abort {
            Some(reason) => Err(End::Aborted(reason)),
            None => Ok(()),
        }
    }

    /// One model request, retried on transient failures as a tool's call would be: capped full
    /// jitter or the provider's `Retry-After`, within the attempt cap, the run's deadline and the
    /// agent's retry budget. Returns the turn and the requests made.
    async fn ask_model(
        &self,
        transcript: &[Message],
        tools: &Value,
        deadline: Instant,
        requests: &mut u64,
    ) -> Result<(Turn, u32), Unanswered> {
        let inner = &*self.inner;
        inner.budget.deposit(inner.nanos());
        let mut attempt = 1;
        loop {
            if let Some(exceeded) = inner.limits.before_request(*requests) {
                return Err(Unanswered::Limit(exceeded));
            }
            *requests = requests.saturating_add(1);
            // What the client reports of this attempt, so the loop reports the rest.
            let reported = Arc::new(Mutex::new(Reported::default()));
            let events = inner.events.watch(&reported);
            let request = ModelRequest {
                system: &inner.system,
                messages: transcript,
                tools,
                events: &events,
            };
            let answer =
                tokio::time::timeout(inner.model_timeout, inner.model.complete(request)).await;
            let error = match answer {
                Ok(Ok(turn)) => {
                    inner.events.report_rest(&turn, &reported);
                    return Ok((turn, attempt));
                }
                Ok(Err(error)) => error,
                Err(_) => ModelError::new(
                    ErrorKind::Timeout,
                    format!(
                        "the model did not answer within {} s",
                        inner.model_timeout.as_secs_f64()
                    ),
                ),
            };
            let error = error.with_attempts(attempt);
            if !error.kind().is_transient() || attempt >= inner.model_retry.attempts() {
                return Err(Unanswered::Model(error));
            }
            let wait = error
                .retry_after()
                .unwrap_or_else(|| inner.model_retry.delay(attempt - 1, &*inner.random));
            if Instant::now() + wait >= deadline {
                let message = format!(
                    "{}; waiting {} s more would pass the run's deadline",
                    error.message(),
                    wait.as_secs_f64()
                );
                return Err(Unanswered::Model(
                    ModelError::new(error.kind(), message).with_attempts(attempt),
                ));
            }
            // A retry the request limit would refuse is not waited for.
            if let Some(exceeded) = inner.limits.before_request(*requests) {
                return Err(Unanswered::Limit(exceeded));
            }
            if !inner.budget.withdraw(inner.nanos()) {
                let message = format!(
                    "{}; the agent's model retry budget is spent",
                    error.message()
                );
                return Err(Unanswered::Model(
                    ModelError::new(error.kind(), message).with_attempts(attempt),
                ));
            }
            inner.events.emit(AgentEvent::ModelRetry {
                error: &error,
                wait,
            });
            tracing::debug!(target: "toolwright::agent", kind = %error.kind(), wait_ms = wait.as_millis() as u64, "model request retried");
            tokio::time::sleep(wait).await;
            attempt += 1;
        }
    }
}

/// Why a model request gave no turn.
enum Unanswered {
    /// The request failed, after the retries it was due.
    Model(ModelError),
    /// The next request would pass the run's request limit.
    Limit(Exceeded),
}

impl Inner {
    fn nanos(&self) -> u64 {
        u64::try_from(self.origin.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }
}

/// Saves a kept run after a turn; `Err` ends it when another replica took it over.
async fn checkpoint(keep: Option<&Keeper<'_>>, run: &Run) -> Result<(), End> {
    match keep {
        Some(keeper) if !keeper.checkpoint(run).await => Err(End::Aborted(AbortReason::TakenOver)),
        _ => Ok(()),
    }
}

fn pending_ticket(outcome: &Outcome) -> Option<String> {
    let data = outcome.data_as::<Value>()?;
    data.get("ticket")?.as_str().map(str::to_owned)
}

impl AgentBuilder {
    /// The agent's instructions. [`ERROR_CONTRACT`] follows them unless
    /// [`without_error_contract`](Self::without_error_contract) is set.
    pub fn system(mut self, prompt: impl Into<String>) -> Self {
        self.system = prompt.into();
        self
    }

    /// Sends only the prompt given to [`system`](Self::system), without [`ERROR_CONTRACT`] (for a
    /// prompt that already explains the envelope).
    pub fn without_error_contract(mut self) -> Self {
        self.error_contract = false;
        self
    }

    /// Model turns before the run ends with [`End::StepLimit`] (at least 1). Default:
    /// [`DEFAULT_MAX_STEPS`], 10, the cap of the agent loop in "How to Handle Tool Execution
    /// Failures", so a model stuck on a failing tool stops before the token bill stops it.
    pub fn max_steps(mut self, steps: usize) -> Self {
        self.max_steps = steps.max(1);
        self
    }

    /// Calls of one model turn that run (at least 1; default [`DEFAULT_MAX_CALLS_PER_TURN`],
    /// 64). The calls past it, in the order the model made them, do not run: each is answered
    /// [`ErrorKind::RateLimited`], retryable, its message telling the model how many calls run
    /// per turn and to make the rest in a later one.
    pub fn max_calls_per_turn(mut self, calls: usize) -> Self {
        self.max_calls_per_turn = calls.max(1);
        self
    }

    /// Wall-clock limit of a run (and of each resumed part of it): past it, the run ends with
    /// [`AbortReason::Deadline`] and whatever was running is cancelled. Default:
    /// [`DEFAULT_DEADLINE`], 10 minutes.
    pub fn deadline(mut self, deadline: Duration) -> Self {
        self.deadline = deadline;
        self
    }

    /// How long a run kept with [`Agent::run_kept`] lives in the store after it was last
    /// saved: a paused run must be resumed within it. Default: [`DEFAULT_RUN_TTL`], 7 days, as
    /// long as an approval ticket waits.
    pub fn run_ttl(mut self, ttl: Duration) -> Self {
        self.run_ttl = ttl;
        self
    }

    /// How long past the [`deadline`](Self::deadline) a replica's hold on a kept run
    /// ([`Agent::run_kept`], [`Agent::resume_kept`]) lasts, from its last save. A drive ends by
    /// its deadline, so a hold older than the deadline plus this margin belongs to a replica
    /// that died, and another may resume the run: a shorter margin resumes a crashed run sooner,
    /// and must still cover a slow save and the clocks of replicas that disagree (a replica
    /// still driving when another took its run over stops at its next save,
    /// [`AbortReason::TakenOver`]). Default: [`RUN_LEASE_MARGIN`](crate::RUN_LEASE_MARGIN), 60
    /// seconds.
    pub fn run_lease_margin(mut self, margin: Duration) -> Self {
        self.lease_margin = margin;
        self
    }

    /// Calls of one turn that run at once (at least 1; default: all of them). Their outcomes are
    /// sent back in the order of the calls whatever the order they finish in.
    pub fn tool_concurrency(mut self, calls: usize) -> Self {
        self.tool_concurrency = Some(calls.max(1));
        self
    }

    /// Attempts and backoff of one model request (the same policy type as the tools').
    /// Default: [`RetryPolicy::new`], 3 attempts in all, full jitter from 250 ms capped at 20 s,
    /// a provider's `Retry-After` honoured.
    pub fn model_retry(mut self, policy: RetryPolicy) -> Self {
        self.model_retry = policy;
        self
    }

    /// The share of model requests that may be retries, across every run of this agent (so a
    /// provider outage does not multiply the agent's traffic to it). Default:
    /// [`RetryBudget::default`], retries up to 20% of requests plus 1 per second, over 10 s.
    pub fn model_retry_budget(mut self, budget: RetryBudget) -> Self {
        self.model_budget = budget;
        self
    }

    /// Limit of one model request; past it the request is a `timeout`, and retried. Default:
    /// [`DEFAULT_MODEL_TIMEOUT`], 120 s.
    pub fn model_timeout(mut self, timeout: Duration) -> Self {
        self.model_timeout = timeout;
        self
    }

    /// What one run may use: model requests, tool calls, tokens, cost ([`UsageLimits`]). A run
    /// that would pass a limit ends [`End::UsageLimit`]: before the request or the turn's calls
    /// that would pass a request or tool-call limit, after the answer that passed a token or
    /// cost limit. Default: no limits.
    ///
    /// ```
    /// use toolwright::agent::{Agent, ScriptedModel, UsageLimits};
    /// use toolwright::Registry;
    ///
    /// let agent = Agent::builder(ScriptedModel::new([]), Registry::builder().build().unwrap())
    ///     .usage_limits(UsageLimits::new().max_requests(20).max_total_tokens(200_000))
    ///     .build()
    ///     .unwrap();
    /// # let _ = agent;
    /// ```
    pub fn usage_limits(mut self, limits: UsageLimits) -> Self {
        self.limits = limits;
        self
    }

    /// When a call made again with the same arguments within a run does not run
    /// ([`RepeatedCalls`]). Default: [`RepeatedCalls::new`], 3 identical calls, or 2 identical
    /// failures in a row; [`RepeatedCalls::off`] runs every repeat.
    ///
    /// ```
    /// use toolwright::agent::{Agent, RepeatedCalls, ScriptedModel};
    /// use toolwright::Registry;
    ///
    /// let agent = Agent::builder(ScriptedModel::new([]), Registry::builder().build().unwrap())
    ///     .repeated_calls(RepeatedCalls::off())
    ///     .build()
    ///     .unwrap();
    /// # let _ = agent;
    /// ```
    pub fn repeated_calls(mut self, repeats: RepeatedCalls) -> Self {
        self.repeats = repeats;
        self
    }

    /// The randomness of the backoff jitter (a seeded source makes a test repeatable).
    pub fn random(mut self, random: impl RandomSource) -> Self {
        self.random = Box::new(random);
        self
    }

    /// The roots a tool of this agent is given when it asks for its client's
    /// ([`ToolContext::roots`](toolwright_core::ToolContext::roots)): the directories or other
    /// places the tools may work in. Without them such a tool gets a classified refusal.
    ///
    /// ```
    /// use toolwright::agent::{Agent, ScriptedModel};
    /// use toolwright::ask::Root;
    /// use toolwright::Registry;
    ///
    /// let agent = Agent::builder(ScriptedModel::new([]), Registry::builder().build().unwrap())
    ///     .roots([Root::new("file:///srv/reports").with_name("reports")])
    ///     .build()
    ///     .unwrap();
    /// # let _ = agent;
    /// ```
    pub fn roots(mut self, roots: impl IntoIterator<Item = Root>) -> Self {
        self.roots = Some(roots.into_iter().collect());
        self
    }

    /// Reports text deltas, started calls, outcomes, tools' log lines, retries and finished
    /// steps to `f` as they happen.
    pub fn on_event(mut self, f: impl Fn(&AgentEvent<'_>) + Send + Sync + 'static) -> Self {
        self.events = Events::new(f);
        self
    }

    /// The agent; fails if a tool cannot be exported for the model's provider (the error names
    /// every tool and construct).
    pub fn build(self) -> Result<Agent, ExportError> {
        let tools_version = self.registry.version();
        let tools = self.registry.export(self.model.export())?;
        let system = match (self.system.is_empty(), self.error_contract) {
            (_, false) => self.system,
            (true, true) => ERROR_CONTRACT.to_owned(),
            (false, true) => format!("{}\n\n{ERROR_CONTRACT}", self.system),
        };
        Ok(Agent {
            inner: Arc::new(Inner {
                model: self.model,
                registry: self.registry,
                tools,
                tools_version,
                system,
                max_steps: self.max_steps,
                max_calls_per_turn: self.max_calls_per_turn,
                deadline: self.deadline,
                run_ttl: self.run_ttl,
                lease_margin: self.lease_margin,
                tool_concurrency: self.tool_concurrency,
                model_retry: self.model_retry,
                model_timeout: self.model_timeout,
                budget: Budget::new(self.model_budget),
                origin: Instant::now(),
                random: self.random,
                events: self.events,
                roots: self.roots,
                limits: self.limits,
                repeats: self.repeats,
            }),
        })
    }
}

/// How a run ended.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "end", content = "detail", rename_all = "snake_case")]
#[non_exhaustive]
pub enum End {
    /// The model answered without tool calls: its answer.
    Final(String),
    /// The model still made calls after [`max_steps`](AgentBuilder::max_steps) turns.
    StepLimit,
    /// A call waits for a person's decision ([`approval`](toolwright_core::approval));
    /// decide it, then [`Agent::resume`].
    Pending {
        /// The ticket of the (first) waiting call.
        ticket: String,
    },
    /// The run was stopped.
    Aborted(AbortReason),
    /// The model could not be reached or answered nonsense, after the retries it was due.
    ModelError(ModelError),
    /// The run would have passed one of its [`usage_limits`](AgentBuilder::usage_limits): the
    /// request or the turn's calls that would pass a request or tool-call limit were not made;
    /// the answer that passed a token or cost limit is in the transcript, its calls not run.
    /// A call not run is answered in the transcript and its step with a `rate_limited`
    /// refusal, not retryable, naming the limit, so a conversation continued from the
    /// transcript pairs every call with a result.
    UsageLimit {
        /// The limit.
        limit: Limit,
        /// What the run would have used (a request or tool-call count with those not made) or
        /// used (tokens; a cost in millionths of the prices' currency): more than `allowed`.
        used: u64,
        /// The limit's value.
        allowed: u64,
    },
}

impl Exceeded {
    /// The end of a run that reached this limit (logged: a limit reached is worth a line).
    fn end(self) -> End {
        tracing::info!(
            target: "toolwright::agent",
            limit = %self.limit,
            used = self.used,
            allowed = self.allowed,
            "the run reached a usage limit"
        );
        End::UsageLimit {
            limit: self.limit,
            used: self.used,
            allowed: self.allowed,
        }
    }
}

/// Why a run was stopped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
#[non_exhaustive]
pub enum AbortReason {
    /// The model called a tool again after its envelope said the recovery budget was spent
    /// ([`RecoveryBudget`](toolwright_core::conversation::RecoveryBudget)) and failed the same way: it is not
    /// going to fix the call, so the run ends now rather than at the step cap.
    RecoveryExhausted {
        /// The tool (the name the model used).
        tool: String,
        /// The failure.
        kind: ErrorKind,
    },
    /// The run's wall-clock [`deadline`](AgentBuilder::deadline) passed.
    Deadline,
    /// A kept run ([`Agent::run_kept`]) was taken over by another replica after this one's
    /// hold passed: this one stops, and the other drives it on.
    TakenOver,
}

impl fmt::Display for AbortReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AbortReason::RecoveryExhausted { tool, kind } => write!(
                f,
                "the model called `{tool}` again ({kind}) after being told its recovery budget was spent"
            ),
            AbortReason::Deadline => f.write_str("the run's deadline passed"),
            AbortReason::TakenOver => {
                f.write_str("another replica took the kept run over after this one's hold passed")
            }
        }
    }
}

/// One model turn and the calls it made.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Step {
    /// From 1.
    pub number: usize,
    /// The model's text.
    pub text: Option<String>,
    /// The calls, in order.
    pub calls: Vec<ToolCall>,
    /// Every outcome, in the order they finished (a call that waited for approval and ran after
    /// it shows both outcomes).
    pub outcomes: Vec<Outcome>,
    /// Tokens of this turn, when reported.
    pub usage: Option<Usage>,
    /// Model requests made for this turn (more than 1 when retried).
    pub model_attempts: u32,
    /// Time waiting for the model, retries included.
    pub model_time: Duration,
    /// Time running this turn's calls.
    pub tool_time: Duration,
}

/// A finished (or paused) run: how it ended, the conversation, every step and the tokens.
///
/// A run serializes whole (serde): the transcript, the steps, the turn waiting for approval, the
/// recovery counts, the usage counts ([`UsageLimits`]) and the record of repeated calls
/// ([`RepeatedCalls`]), so a paused run written out here is resumed by [`Agent::resume`] in
/// another process. [`Agent::run_kept`] keeps it in the session's conversation store instead.
/// Reading one back checks its shape: a waiting turn must have one outcome slot per call (the
/// outcome in a slot of that call), at least one call still to run, and be the last assistant
/// turn of the transcript, and a run ends pending exactly when it has one; a run of another
/// shape is a deserialization error naming the field, what it should hold and what it holds.
///
/// ```
/// use toolwright::agent::Run;
/// # fn demo(run: Run) -> serde_json::Result<()> {
/// let text = serde_json::to_string(&run)?;
/// let back: Run = serde_json::from_str(&text)?;
/// assert_eq!(back.transcript().len(), run.transcript().len());
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(try_from = "RunForm")]
pub struct Run {
    end: End,
    transcript: Vec<Message>,
    steps: Vec<Step>,
    usage: Usage,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pending: Option<PendingTurn>,
    /// Recovery keys (a tool, or "" for invented names) whose budget the model was told is spent.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    exhausted: Vec<String>,
    /// Model requests made, retries included.
    #[serde(default, skip_serializing_if = "is_zero")]
    requests: u64,
    /// Tool calls run.
    #[serde(default, skip_serializing_if = "is_zero")]
    tool_calls: u64,
    /// Identical calls made, for [`RepeatedCalls`].
    #[serde(default, skip_serializing_if = "Repeats::is_empty")]
    repeats: Repeats,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct PendingTurn {
    calls: Vec<ToolCall>,
    outcomes: Vec<Option<Outcome>>,
}

/// A [`Run`] as read, before its shape is checked.
#[derive(Deserialize)]
struct RunForm {
    end: End,
    transcript: Vec<Message>,
    steps: Vec<Step>,
    usage: Usage,
    #[serde(default)]
    pending: Option<PendingTurn>,
    #[serde(default)]
    exhausted: Vec<String>,
    // Counts are read as u64: a negative, fractional or too large number is a deserialization
    // error naming the field (`RunError::Unreadable` for a kept run), never a wrapped count.
    #[serde(default)]
    requests: u64,
    #[serde(default)]
    tool_calls: u64,
    #[serde(default)]
    repeats: Repeats,
}

impl TryFrom<RunForm> for Run {
    type Error = String;

    fn try_from(form: RunForm) -> Result<Run, String> {
        let pending_end = matches!(form.end, End::Pending { .. });
        match &form.pending {
            Some(turn) => {
                if !pending_end {
                    return Err(format!(
                        "`end`: a run with a waiting turn ends `pending`, got {:?}",
                        form.end
                    ));
                }
                turn.check(&form.transcript, form.steps.len())?;
            }
            None if pending_end => {
                return Err(
                    "`pending`: a run that ends `pending` holds its waiting turn, got none"
                        .to_owned(),
                )
            }
            None => {}
        }
        Ok(Run {
            end: form.end,
            transcript: form.transcript,
            steps: form.steps,
            usage: form.usage,
            pending: form.pending,
            exhausted: form.exhausted,
            requests: form.requests,
            tool_calls: form.tool_calls,
            repeats: form.repeats,
        })
    }
}

impl PendingTurn {
    /// Whether a waiting turn read back is one a run could have left: `Err` names the field,
    /// what it should hold and what it holds.
    fn check(&self, transcript: &[Message], steps: usize) -> Result<(), String> {
        let calls = self.calls.len();
        if calls == 0 {
            return Err("`pending.calls`: expected at least 1 call, got 0".to_owned());
        }
        if self.outcomes.len() != calls {
            return Err(format!(
                "`pending.outcomes`: expected {calls} (one slot per call of `pending.calls`), got {}",
                self.outcomes.len()
            ));
        }
        for (i, (call, outcome)) in self.calls.iter().zip(&self.outcomes).enumerate() {
            if let Some(outcome) = outcome.as_ref().filter(|o| o.call_id() != call.id()) {
                return Err(format!(
                    "`pending.outcomes[{i}]`: expected the outcome of call `{}`, got that of `{}`",
                    call.id(),
                    outcome.call_id()
                ));
            }
        }
        if self.outcomes.iter().all(Option::is_some) {
            return Err(format!(
                "`pending.outcomes`: expected at least 1 empty slot (a call still to run), got {calls} outcomes"
            ));
        }
        if steps == 0 {
            return Err(
                "`steps`: expected the step that made the waiting turn, got 0 steps".to_owned(),
            );
        }
        let last_calls = match transcript.last() {
            Some(Message::Assistant(turn)) => Some(&turn.calls),
            _ => None,
        };
        let same = last_calls.is_some_and(|last| {
            last.len() == calls && last.iter().zip(&self.calls).all(|(a, b)| a.id() == b.id())
        });
        if !same {
            return Err(format!(
                "`transcript`: expected the waiting turn's {calls} calls as its last message, got {}",
                match (transcript.last(), last_calls) {
                    (None, _) => "no message".to_owned(),
                    (Some(_), None) => "a message that is not the model's turn".to_owned(),
                    (Some(_), Some(last)) => format!("a model turn of {} other calls", last.len()),
                }
            ));
        }
        Ok(())
    }
}

impl Run {
    /// A run not yet started, of these messages.
    pub(crate) fn start(messages: Vec<Message>) -> Run {
        Run {
            end: End::StepLimit,
            transcript: messages,
            steps: Vec::new(),
            usage: Usage::default(),
            pending: None,
            exhausted: Vec::new(),
            requests: 0,
            tool_calls: 0,
            repeats: Repeats::default(),
        }
    }

    /// Whether it waits for a decision, with calls to run when resumed.
    pub(crate) fn is_pending(&self) -> bool {
        self.pending.is_some()
    }

    /// How it ended.
    pub fn end(&self) -> &End {
        &self.end
    }

    /// The model's final answer, if it gave one.
    pub fn final_text(&self) -> Option<&str> {
        match &self.end {
            End::Final(text) => Some(text),
            _ => None,
        }
    }

    /// The conversation: the messages given, every assistant turn and every turn's results.
    pub fn transcript(&self) -> &[Message] {
        &self.transcript
    }

    /// Every step.
    pub fn steps(&self) -> &[Step] {
        &self.steps
    }

    /// Tokens over every step that reported them.
    pub fn usage(&self) -> Usage {
        self.usage
    }

    /// Model requests the run made, retries included, across every resume: what
    /// [`UsageLimits::max_requests`](crate::UsageLimits::max_requests) counts.
    ///
    /// ```
    /// # fn show(run: &toolwright::agent::Run) {
    /// println!("{} requests, {} tool calls", run.model_requests(), run.tool_calls());
    /// # }
    /// ```
    pub fn model_requests(&self) -> u64 {
        self.requests
    }

    /// Tool calls the run ran, across every resume: what
    /// [`UsageLimits::max_tool_calls`](crate::UsageLimits::max_tool_calls) counts (calls refused
    /// by the per-turn cap or answered from the repeat record did not run, and are not counted).
    ///
    /// ```
    /// # fn show(run: &toolwright::agent::Run) {
    /// assert!(run.tool_calls() as usize <= run.outcomes().count());
    /// # }
    /// ```
    pub fn tool_calls(&self) -> u64 {
        self.tool_calls
    }

    /// Every tool outcome of the run, in order.
    pub fn outcomes(&self) -> impl Iterator<Item = &Outcome> {
        self.steps.iter().flat_map(|s| s.outcomes.iter())
    }

    /// Heap bytes of the transcript (text, arguments, envelopes), for sizing how many
    /// conversations fit in memory.
    pub fn transcript_bytes(&self) -> usize {
        self.transcript
            .iter()
            .map(Message::heap_bytes)
            .sum::<usize>()
            + self.transcript.capacity() * std::mem::size_of::<Message>()
    }

    /// Counts this turn's outcomes against what the model was told: a failure past its recovery
    /// budget (its envelope says `retryable: false` though its kind is one the model may fix) is
    /// a warning the first time, and ends the run the next time the model makes it.
    fn count_recovery(&mut self, outcomes: &[Outcome]) -> Option<AbortReason> {
        for outcome in outcomes {
            if outcome.is_ok() {
                self.exhausted.retain(|key| key != outcome.tool());
                continue;
            }
            let Some(kind) = outcome.error_kind() else {
                continue;
            };
            let budgeted = matches!(
                kind,
                ErrorKind::InvalidJson
                    | ErrorKind::UnknownArgument
                    | ErrorKind::SchemaMismatch
                    | ErrorKind::UnknownTool
                    | ErrorKind::SemanticInvalid
                    | ErrorKind::CircuitOpen
            );
            if !budgeted || outcome.retryable() {
                continue;
            }
            let key = if kind == ErrorKind::UnknownTool {
                ""
            } else {
                outcome.tool()
            };
            if self.exhausted.iter().any(|k| k == key) {
                return Some(AbortReason::RecoveryExhausted {
                    tool: outcome.tool().to_owned(),
                    kind,
                });
            }
            self.exhausted.push(key.to_owned());
        }
        None
    }
}

/// The span of a run (or a resumed run): `invoke_agent` after the OpenTelemetry GenAI
/// conventions. The model's turns (`chat`) and the tool calls (`execute_tool`) are its
/// children, so a trace shows each call inside the run that made it.
pub(crate) fn agent_span(session: &Session) -> tracing::Span {
    tracing::info_span!(
        target: "toolwright::span",
        "invoke_agent",
        otel.name = "invoke_agent",
        gen_ai.operation.name = "invoke_agent",
        gen_ai.conversation.id = session.id(),
    )
}
