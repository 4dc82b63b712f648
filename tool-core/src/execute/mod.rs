//! The execution seam: every attempt bounded by a timeout, transient failures retried with
//! jittered backoff inside one deadline and a retry budget, a circuit breaker per tool, panics
//! contained.
//!
//! ```text
//! call ──> breaker permit ──> attempt (timeout, catch_unwind) ──> verdict to the breaker
//!   │         │ open: circuit_open + retry_after_ms        │ error
//!   │         v                                            v
//!   │      fail fast                     transient? safe to repeat? attempts left?
//!   │                                    wait (full jitter or Retry-After) fits the deadline?
//!   │                                    budget allows a retry? ── yes ──> next attempt
//!   └── one deadline covers every attempt and every wait ── no ──> the last error, saying why
//! ```
//!
//! Each concept has its type: [`RetryPolicy`] (attempt cap, capped full-jitter backoff, which
//! failures are retried), a pure decision after each failed attempt (`decide`), [`RetryBudget`]
//! (retries as a share of calls), [`BreakerPolicy`] (closed, open, half-open), [`classify`] (HTTP
//! statuses, `Retry-After`, `reqwest` and `io` errors), and the two parameters that make all of it
//! testable on paused time: [`Clock`] and [`RandomSource`].
//!
//! # Configuration
//!
//! | what | where | default |
//! |---|---|---|
//! | per-attempt timeout | `#[tool(timeout_ms = N)]`, else [`RegistryBuilder::default_timeout`](crate::RegistryBuilder::default_timeout) | 30 s |
//! | attempts | `#[tool(retries = N)]` (N + 1 attempts), else [`RetryPolicy::max_attempts`] | 3 |
//! | backoff | [`RetryPolicy::base`], [`RetryPolicy::cap`] | 250 ms, 20 s, full jitter |
//! | call deadline | [`RegistryBuilder::call_deadline`](crate::RegistryBuilder::call_deadline) | every attempt's timeout plus every wait's ceiling |
//! | retry budget | [`RegistryBuilder::retry_budget`](crate::RegistryBuilder::retry_budget) | 20% of first attempts + 1/s over 10 s |
//! | breaker | [`RegistryBuilder::breaker`](crate::RegistryBuilder::breaker), [`breaker_for`](crate::RegistryBuilder::breaker_for) | 50% of ≥ 10 calls in 30 s; 30 s cooldown, ×2 per failed probe up to 5 min; 1 probe |
//! | time, jitter | [`RegistryBuilder::clock`](crate::RegistryBuilder::clock), [`random`](crate::RegistryBuilder::random) | tokio's clock, fastrand |
//!
//! What happened is on the [`Outcome`](crate::Outcome): [`attempts`](crate::Outcome::attempts),
//! one [`AttemptRecord`] per attempt in [`attempt_history`](crate::Outcome::attempt_history) (its
//! error kind or success, its duration, the wait before it), and
//! [`retry_stop`](crate::Outcome::retry_stop) when retrying a transient failure was cut short.
//!
//! # Cancellation: what a tool author must know
//!
//! A tool body is a future, and the framework stops it by **dropping** it, at its next `.await`:
//!
//! - when the attempt runs past its timeout (or past the call's deadline, if that comes first);
//! - when the caller of [`Registry::call`](crate::Registry::call) drops that future (the user
//!   left, the agent turn was abandoned).
//!
//! Code after that `.await` never runs; destructors run as usual. So:
//!
//! 1. Do not leave shared state half-updated across an `.await`: update it in one step after the
//!    last `.await`, or behind a guard whose `Drop` restores it.
//! 2. An action that reached the dependency before the drop may still complete there. The
//!    framework therefore repeats a timed-out non-idempotent tool only when it takes an
//!    [`IdempotencyKey`](crate::IdempotencyKey) (the same on every attempt: send it downstream,
//!    for example as an `Idempotency-Key` header) or when its error says the request never left
//!    ([`ToolError::never_started`](crate::ToolError::never_started)).
//! 3. Spawned work is not cancelled with the body: a `tokio::spawn`ed task keeps running. Keep
//!    the work inside the body, or abort it from a drop guard.
//!    A sync tool (`#[tool]` on a plain `fn`) runs on tokio's blocking pool, and a thread
//!    cannot be dropped: past the timeout the caller stops waiting and gets `timeout`, while the
//!    thread runs the function to its end ([`blocking`]).
//! 4. Budget time with [`Invocation::remaining`](crate::Invocation::remaining) (the call's
//!    deadline) and [`Invocation::attempt_deadline`](crate::Invocation::attempt_deadline) (when
//!    this attempt is dropped), for example as the timeout of a downstream request; read
//!    [`Invocation::attempt`](crate::Invocation::attempt) to know whether this is a retry.
//!
//! A cancelled call counts neither as a success nor as a failure for the breaker, and a cancelled
//! half-open probe gives its permit back.

pub mod blocking;
mod breaker;
mod budget;
pub mod classify;
mod decide;
pub(crate) mod fallback;
mod retry;
mod window;

use std::any::Any;
use std::fmt::Write as _;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

pub use crate::runtime::clock::{Clock, Sleep, TokioClock};
pub use crate::runtime::random::{RandomSource, SeededRandom, ThreadRandom};
pub use breaker::{BreakerHandle, BreakerPolicy, BreakerState, BreakerStats};
pub use budget::{Budget, RetryBudget};
pub use retry::RetryPolicy;

use crate::error::ToolError;
use crate::outcome::{AttemptRecord, History, RetryStop};
use crate::outcome::{ErrorKind, Failure};
use crate::runtime::clock::{ceil_millis, nanos_since, ClockHandle};
use crate::runtime::{contain, BoxFuture, Sources};
pub(crate) use breaker::Rejection;
use breaker::{Breaker, Permit, Verdict};
use decide::{decide, Attempted, Decision, Failed, Rules};

/// The registry-wide settings a [`Bounds`] is resolved from.
#[derive(Clone)]
pub(crate) struct Settings {
    pub(crate) default_timeout: Duration,
    pub(crate) call_deadline: Option<Duration>,
    pub(crate) retry: RetryPolicy,
    pub(crate) budget: RetryBudget,
    pub(crate) breaker: BreakerPolicy,
    /// Benchmarks only: run the body bare, to measure what the guard costs.
    pub(crate) unguarded: bool,
}

/// What one attempt sees of the call: its number and the two instants that bound it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct AttemptInfo {
    pub(crate) number: u32,
    /// When the whole call must be done.
    pub(crate) deadline: Instant,
    /// When this attempt is dropped: its timeout or the deadline, whichever comes first.
    pub(crate) attempt_deadline: Instant,
}

/// What the attempt loop came to.
pub(crate) struct Executed<T> {
    /// The failure is boxed: an `Executed` is the result of an `.await` in the call's future,
    /// whose storage is reserved for the whole await.
    pub(crate) result: Result<T, Box<Failure>>,
    pub(crate) history: History,
    pub(crate) stop: Option<RetryStop>,
    /// When the attempt that produced the result began, if its record still needs its elapsed:
    /// the registry sets it from the clock read it makes for the outcome ([`History::close`]).
    pub(crate) open_since: Option<Instant>,
    /// Some attempt failed in a way that may have acted (a timeout, a 5xx, a panic, none of them
    /// proven never started): the call's effect is unknown unless a later attempt settled it.
    pub(crate) uncertain: bool,
}

impl<T> Executed<T> {
    /// The same execution with its result mapped (the tool's value interpreted, say).
    pub(crate) fn and_then<U>(self, f: impl FnOnce(T) -> Result<U, Failure>) -> Executed<U> {
        Executed {
            result: self.result.and_then(|value| f(value).map_err(Box::new)),
            history: self.history,
            stop: self.stop,
            open_since: self.open_since,
            uncertain: self.uncertain,
        }
    }

    /// A body run bare: no attempts recorded, no breaker, no retries.
    #[cfg(feature = "unguarded-for-benchmarks")]
    pub(crate) fn unguarded(result: Result<T, ToolError>) -> Self {
        Executed {
            result: result.map_err(|e| Box::new(e.into_failure())),
            history: History::Empty,
            stop: None,
            open_since: None,
            uncertain: false,
        }
    }
}

/// Where a call is in its attempts, between two of them.
pub(crate) struct CallAttempts {
    /// When the whole call must be done.
    pub(crate) deadline: Instant,
    /// When the next (or current) attempt began.
    begin: Instant,
    number: u32,
    /// The wait before the current attempt.
    waited: Duration,
    history: History,
    uncertain: bool,
}

/// An attempt the breaker let through: its permit (given back if the attempt is dropped
/// unfinished) and its bounds.
pub(crate) struct Admitted<'g> {
    permit: Permit<'g>,
    begin_at: u64,
    limit: Limit,
    pub(crate) info: AttemptInfo,
}

/// The attempts of one call as [`Bounds::attempts`] drives them.
pub(crate) trait Attempt<'a>: Send {
    /// What a successful attempt answers.
    type Output: Send + 'a;

    /// The future of the attempt `info` describes.
    fn attempt(&mut self, info: AttemptInfo) -> BoxFuture<'a, Result<Self::Output, ToolError>>;

    /// A panic's message without the call's sensitive values, for the log (only called when
    /// an attempt panicked).
    fn scrub(&self, message: &str) -> String;
}

/// What [`Bounds::after_attempt`] came to.
pub(crate) enum Next<T> {
    /// The call is over.
    Done(Executed<T>),
    /// Retry once the clock reads this instant.
    RetryAt(Instant),
}

/// The execution seam of one tool, resolved when the registry is built.
pub(crate) struct Bounds {
    tool: Arc<str>,
    timeout: Duration,
    deadline: Duration,
    attempts: u32,
    /// Idempotent, or takes an idempotency key: a transient failure may be repeated.
    retry_safe: bool,
    policy: RetryPolicy,
    breaker: Arc<Breaker>,
    budget: Budget,
    /// Time zero of the breaker's and the budget's windows.
    origin: Instant,
    #[cfg_attr(
        not(feature = "unguarded-for-benchmarks"),
        allow(dead_code, reason = "read only by the benchmark switch")
    )]
    unguarded: bool,
}

impl Bounds {
    pub(crate) fn new(
        tool: Arc<str>,
        timeout: Duration,
        retries: Option<u32>,
        retry_safe: bool,
        settings: &Settings,
        breaker: BreakerPolicy,
        origin: Instant,
    ) -> Self {
        let attempts = retries.map_or(settings.retry.attempts(), |r| r.saturating_add(1));
        let deadline = settings
            .call_deadline
            .unwrap_or_else(|| settings.retry.deadline_for(timeout, attempts));
        Bounds {
            breaker: Arc::new(Breaker::new(Arc::clone(&tool), breaker, timeout, origin)),
            budget: Budget::new(settings.budget),
            origin,
            tool,
            timeout,
            deadline,
            attempts,
            retry_safe,
            policy: settings.retry,
            unguarded: settings.unguarded,
        }
    }

    pub(crate) fn breaker(&self) -> &Arc<Breaker> {
        &self.breaker
    }

    /// The whole call's deadline: every attempt and every wait between them.
    pub(crate) fn deadline(&self) -> Duration {
        self.deadline
    }

    /// The attempts of a call whose execution begins at `begin`, before the first.
    ///
    /// The call's deadline and the first attempt's timeout both count from `begin`, the moment
    /// the first attempt starts: what came before (validation, a repair pass, a person's
    /// approval, the idempotency store) has bounds of its own and never eats into the tool's
    /// timeout. With an injected clock the call begins at that clock's `now`.
    #[inline]
    fn start(&self, sources: &Sources, begin: Instant) -> CallAttempts {
        // An injected clock has its own time line, on which the call begins now.
        let begin = match &sources.clock {
            ClockHandle::Tokio => begin,
            ClockHandle::Custom(clock) => clock.now(),
        };
        CallAttempts {
            deadline: begin + self.deadline,
            begin,
            number: 1,
            waited: Duration::ZERO,
            history: History::Empty,
            uncertain: false,
        }
    }

    /// Asks the breaker to run the next attempt: its permit and bounds, or why not (then
    /// [`Bounds::refused`] ends the call).
    #[inline]
    fn admit(&self, run: &CallAttempts) -> Result<Admitted<'_>, Rejection> {
        let permit = self.breaker.admit(run.begin)?;
        let begin_at = nanos_since(self.origin, run.begin);
        if run.number == 1 && self.attempts > 1 {
            self.budget.deposit(begin_at);
        }
        let (cut, limit) = if run.begin + self.timeout <= run.deadline {
            (run.begin + self.timeout, Limit::Timeout(self.timeout))
        } else {
            (run.deadline, Limit::Deadline(self.deadline))
        };
        Ok(Admitted {
            permit,
            begin_at,
            limit,
            info: AttemptInfo {
                number: run.number,
                deadline: run.deadline,
                attempt_deadline: cut,
            },
        })
    }

    /// The end of a call the breaker turned away.
    #[cold]
    fn refused<T>(&self, run: &mut CallAttempts, rejection: Rejection) -> Executed<T> {
        Executed {
            result: Err(Box::new(self.rejected(rejection, run.history.last_error()))),
            stop: (run.number > 1).then_some(RetryStop::CircuitOpen),
            history: std::mem::take(&mut run.history),
            open_since: None,
            uncertain: run.uncertain,
        }
    }

    /// Every attempt of one call, the first included: a breaker permit, the attempt bounded by
    /// its timeout and the call's deadline with its panics contained, the verdict to the
    /// breaker, then [`decide`] on a failure and the retry budget on a retry, until an attempt
    /// ends the call. `body` makes each attempt's future.
    ///
    /// Generic over the body, of which the registry has one kind (every tool's attempts are
    /// reached through the same type-erased body), so it is compiled once. An `async` block,
    /// not an `async fn`, which would keep each parameter twice in its state.
    #[allow(
        clippy::manual_async_fn,
        reason = "an async fn stores its parameters twice"
    )]
    pub(crate) fn attempts<'s, B: Attempt<'s> + 's>(
        &'s self,
        sources: &'s Sources,
        begin: Instant,
        mut body: B,
    ) -> impl Future<Output = Executed<B::Output>> + Send + 's {
        async move {
            let mut run = self.start(sources, begin);
            // Only with the benchmark feature: no tool compiles this branch otherwise.
            #[cfg(feature = "unguarded-for-benchmarks")]
            if self.unguarded {
                let info = AttemptInfo {
                    number: 1,
                    deadline: run.deadline,
                    attempt_deadline: run.deadline,
                };
                return Executed::unguarded(body.attempt(info).await);
            }
            loop {
                let admitted = match self.admit(&run) {
                    Ok(admitted) => admitted,
                    Err(rejection) => return self.refused(&mut run, rejection),
                };
                let cut = admitted.info.attempt_deadline;
                let (output, waited) = sources
                    .clock
                    .run_until(cut, contain(|| body.attempt(admitted.info)))
                    .await;
                let next = {
                    let scrub = |message: &str| body.scrub(message);
                    self.after_attempt(sources, &mut run, admitted, output, waited, &scrub)
                };
                match next {
                    Next::Done(executed) => return executed,
                    Next::RetryAt(wake) => {
                        sources.clock.sleep_until(wake).await;
                        run.begin = sources.clock.now();
                    }
                }
            }
        }
    }

    /// What an admitted attempt came to: the call's end, or the instant to retry at.
    /// `output` is `None` when the attempt was cut at its deadline, `waited` whether the body
    /// ever returned `Pending`.
    #[inline]
    fn after_attempt<T>(
        &self,
        sources: &Sources,
        run: &mut CallAttempts,
        admitted: Admitted<'_>,
        output: Option<std::thread::Result<Result<T, ToolError>>>,
        waited: bool,
        scrub: &dyn Fn(&str) -> String,
    ) -> Next<T> {
        let Admitted {
            permit,
            begin_at,
            limit,
            info,
        } = admitted;
        let (number, begin) = (info.number, run.begin);
        let error = match classify_attempt(&self.tool, limit, output, scrub) {
            Ok(value) => {
                // A body that answered on its first poll costs no clock read here: the
                // breaker files its success under the attempt's start, and the registry
                // closes its record with the clock read it makes for the outcome anyway.
                // One that waited (on I/O, on a timer) may have run long: read the clock.
                let (end_at, elapsed, open_since) = match &sources.clock {
                    ClockHandle::Tokio if !waited => (begin_at, Duration::ZERO, Some(begin)),
                    clock => {
                        let end = clock.now();
                        let elapsed = end.saturating_duration_since(begin);
                        (nanos_since(self.origin, end), elapsed, None)
                    }
                };
                permit.record(Verdict::Success, end_at);
                run.history.push(AttemptRecord {
                    number,
                    waited: run.waited,
                    elapsed,
                    error: None,
                });
                return Next::Done(Executed {
                    result: Ok(value),
                    history: std::mem::take(&mut run.history),
                    stop: None,
                    open_since,
                    uncertain: run.uncertain,
                });
            }
            Err(error) => error,
        };
        let end = sources.clock.now();
        let end_at = nanos_since(self.origin, end);
        let verdict = if error.kind().counts_against_breaker() {
            Verdict::Failure
        } else {
            Verdict::Neutral
        };
        permit.record(verdict, end_at);
        run.uncertain |= error.kind().may_have_acted(never_started(&error));
        run.history.push(AttemptRecord {
            number,
            waited: run.waited,
            elapsed: end.saturating_duration_since(begin),
            error: Some(error.kind()),
        });

        let failed = Failed {
            kind: error.kind(),
            never_started: never_started(&error),
            retry_after: error.retry_after(),
        };
        let attempted = Attempted {
            number,
            ended: end,
            deadline: run.deadline,
        };
        let rules = Rules {
            max_attempts: self.attempts,
            retry_safe: self.retry_safe,
            policy: self.policy,
            random: &sources.random,
        };
        let stop = match decide(&failed, &attempted, &rules) {
            Decision::Retry { wait } if self.budget.withdraw(end_at) => {
                tracing::debug!(
                    target: "toolwright::execute",
                    tool = %self.tool,
                    attempt = number,
                    error_type = error.kind().as_str(),
                    elapsed_ms = ceil_millis(end.saturating_duration_since(begin)),
                    wait_ms = ceil_millis(wait),
                    "attempt failed; retrying"
                );
                run.waited = wait;
                run.number += 1;
                return Next::RetryAt(end + wait);
            }
            Decision::Retry { .. } => Some(RetryStop::Budget),
            Decision::Stop(stop) => stop,
        };
        let failure = self.stopped(error, stop, run.history.as_slice());
        Next::Done(Executed {
            result: Err(Box::new(failure)),
            history: std::mem::take(&mut run.history),
            stop,
            open_since: None,
            uncertain: run.uncertain,
        })
    }

    /// The last error as the call's failure, its message saying why it was not retried.
    fn stopped(
        &self,
        error: ToolError,
        stop: Option<RetryStop>,
        history: &[AttemptRecord],
    ) -> Failure {
        let mut failure = error.into_failure();
        let Some(stop) = stop else {
            return failure;
        };
        tracing::debug!(
            target: "toolwright::execute",
            tool = %self.tool,
            attempts = history.len(),
            error_type = failure.kind.as_str(),
            stop = stop.as_str(),
            "retries stopped"
        );
        let message = &mut failure.message;
        let tool = &self.tool;
        let _ = match stop {
            RetryStop::NotIdempotent => {
                // Calling again could repeat the side effect: the model must check first.
                failure.retryable = false;
                write!(
                    message,
                    ". It was not retried: `{tool}` is not idempotent and the action may already have taken effect; check its result before calling it again"
                )
            }
            RetryStop::Attempts => {
                let _ = write!(message, " (failed {} attempts:", history.len());
                for (i, record) in history.iter().enumerate() {
                    let kind = record.error.map_or("ok", ErrorKind::as_str);
                    let _ = write!(message, "{}{kind}", if i == 0 { " " } else { ", " });
                }
                write!(message, ")")
            }
            RetryStop::Deadline => write!(
                message,
                " (not retried: the next attempt could not start before the call's {} ms deadline)",
                self.deadline.as_millis()
            ),
            RetryStop::Budget => write!(
                message,
                " (not retried: the retry budget of `{tool}` is spent, too many of its calls are already being retried)"
            ),
            RetryStop::CircuitOpen => Ok(()),
        };
        failure
    }

    fn rejected(&self, rejection: Rejection, last: Option<ErrorKind>) -> Failure {
        let tool = &self.tool;
        let wait = rejection.retry_after.map(ceil_millis);
        let message = match (rejection.state, last, wait) {
            (BreakerState::ForcedOpen, _, _) => format!(
                "`{tool}` was taken out of service by an operator; do not call it until it is back"
            ),
            (BreakerState::HalfOpen, _, Some(ms)) => format!(
                "`{tool}` is being tested after an outage (a probe call is running); try again in {ms} ms"
            ),
            (_, Some(kind), Some(ms)) => format!(
                "`{tool}` is unavailable: its circuit breaker opened after this call's last attempt failed ({kind}); try again in {ms} ms"
            ),
            (_, _, Some(ms)) => format!(
                "`{tool}` is temporarily unavailable: its circuit breaker is open after repeated failures; try again in {ms} ms"
            ),
            (_, _, None) => format!("`{tool}` is temporarily unavailable: its circuit breaker is open"),
        };
        let mut failure = Failure::new(ErrorKind::CircuitOpen, message);
        failure.retry_after = rejection.retry_after;
        if rejection.state == BreakerState::ForcedOpen {
            failure.retryable = false;
        }
        failure
    }
}

/// Which bound cut an attempt short, for the message.
#[derive(Clone, Copy)]
enum Limit {
    Timeout(Duration),
    Deadline(Duration),
}

/// What one attempt came to, a panic turned into `tool_panicked` and an expired bound into
/// `timeout`.
fn classify_attempt<T>(
    tool: &str,
    limit: Limit,
    output: Option<std::thread::Result<Result<T, ToolError>>>,
    scrub: &dyn Fn(&str) -> String,
) -> Result<T, ToolError> {
    match output {
        Some(Ok(result)) => result,
        Some(Err(panic)) => {
            let detail = scrub(&panic_message(panic.as_ref()));
            tracing::error!(target: "toolwright::execute", tool, panic = %detail, "tool panicked; the panic was contained");
            Err(ToolError::new(
                ErrorKind::ToolPanicked,
                format!("`{tool}` failed with an internal error; the arguments did not cause it and retrying will not help"),
            ))
        }
        None => Err(ToolError::timeout(match limit {
            Limit::Timeout(timeout) => {
                format!("`{tool}` did not answer within {} ms", timeout.as_millis())
            }
            Limit::Deadline(deadline) => format!(
                "`{tool}` did not answer before the call's {} ms deadline ran out",
                deadline.as_millis()
            ),
        })),
    }
}

/// Whether the failed attempt provably did nothing: the tool said so, or the dependency refused
/// the request outright by throttling it (a 429 is answered before any work is done, which is
/// why Stripe and AWS call it safe to retry whatever the request).
fn never_started(error: &ToolError) -> bool {
    error.is_never_started() || error.kind() == ErrorKind::RateLimited
}

fn panic_message(panic: &(dyn Any + Send)) -> String {
    if let Some(s) = panic.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = panic.downcast_ref::<String>() {
        s.clone()
    } else {
        "non-string panic payload".to_owned()
    }
}
