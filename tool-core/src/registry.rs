//! The [`Registry`]: the fixed set of tools a model may call, and the pipeline every call runs.
//!
//! ```
//! # use toolwright_core::{Registry, ToolCall, Status, ErrorKind};
//! # async fn demo() -> Result<(), toolwright_core::BuildError> {
//! let registry = Registry::builder().build()?;
//! let outcome = registry.call(ToolCall::new("call_1", "search_acounts", "{}")).await;
//! assert_eq!(outcome.status(), Status::Error);
//! assert_eq!(outcome.error_kind(), Some(ErrorKind::UnknownTool));
//! # Ok(()) }
//! ```
//!
//! Lookups take no lock: the registry is immutable once built and shared behind an `Arc`, so it
//! is cheap to clone into every task.

use std::any::Any;
use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::Either;
use tokio::time::Instant;

use crate::approval::{Approval, ApprovalRequest};
use crate::call::{Invocation, Session, StateMap, ToolCall};
use crate::error::ToolError;
use crate::execute::clock::ClockHandle;
use crate::execute::random::RandomHandle;
use crate::execute::{
    contain, AttemptInfo, BreakerHandle, BreakerPolicy, Clock, Env, Executed, Guard, RandomSource,
    RetryBudget, RetryPolicy, Settings, Step,
};
use crate::idempotency::{
    Disposition, Fingerprint, IdempotencyKey, IdempotencyStore, KeyMode, Lease, MemoryStore, Prior,
    Settled, StoredOutcome, DEFAULT_LOCK_TTL,
};
use crate::interpret;
use crate::observe::{self, ArgumentLog};
use crate::outcome::{ErrorKind, Failure, Marks, Outcome, Seam};
use crate::recovery::RecoveryBudget;
use crate::repair::{self, Repair, RepairRequest, Repairer};
use crate::tool::{StateRequirement, Tool, ToolSpec};
use crate::validate::shape::{self, ShapeValidator};
use crate::validate::{preview_str, Violations};

/// How long a repairer may take by default.
pub const DEFAULT_REPAIR_TIMEOUT: Duration = Duration::from_secs(10);

/// The per-attempt timeout of tools that declare none.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// How much longer than a call's whole deadline its idempotency lock lasts: room for the clock
/// reads and the store's own round trips around the attempts.
const LOCK_SLACK: Duration = Duration::from_secs(5);

type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A registered tool with its types erased, so one map can hold every tool.
trait DynTool: Send + Sync {
    fn spec(&self) -> &ToolSpec;
    fn guard(&self) -> &Guard;
    fn required_state(&self) -> Vec<StateRequirement>;
    fn dispatch<'a>(
        &'a self,
        call_id: String,
        arguments: String,
        session: &'a Session,
        registry: &'a Inner,
    ) -> BoxFuture<'a, Outcome>;
}

struct Entry<T: Tool> {
    tool: T,
    spec: ToolSpec,
    shape: ShapeValidator,
    guard: Guard,
    /// Not idempotent: every call goes through the idempotency store.
    exactly_once: bool,
}

impl<T: Tool> DynTool for Entry<T> {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn guard(&self) -> &Guard {
        &self.guard
    }

    fn required_state(&self) -> Vec<StateRequirement> {
        T::required_state()
    }

    fn dispatch<'a>(
        &'a self,
        call_id: String,
        arguments: String,
        session: &'a Session,
        registry: &'a Inner,
    ) -> BoxFuture<'a, Outcome> {
        Box::pin(self.run(call_id, arguments, session, registry))
    }
}

impl<T: Tool> Entry<T> {
    /// Validate -> Bound -> Classify for one call. Monomorphized per tool, so the fast path
    /// parses the argument text straight into `T::Args` with no intermediate `Value`.
    ///
    /// The future stays small (it is boxed once per call): a non-idempotent call continues in
    /// [`Entry::run_once`], boxed on its own, and retries in [`Guard::retry`], boxed only when
    /// the first attempt failed.
    async fn run(
        &self,
        call_id: String,
        mut arguments: String,
        session: &Session,
        registry: &Inner,
    ) -> Outcome {
        let started = Instant::now();

        // wiring(exact): oversized argument text is refused before anything parses it.
        if let Err(failure) = crate::validate::check_size(&arguments, registry.max_argument_bytes) {
            let mut outcome = Outcome::failed(call_id, Arc::clone(&self.spec.name), failure);
            outcome.elapsed = started.elapsed();
            observe::call(&outcome, None, None, T::META.fields, registry.argument_log);
            session.count_recovery(&registry.recovery, &mut outcome);
            return outcome;
        }

        // Validation seam, with one repair pass for failures of form. The repaired text
        // replaces the model's: it is what runs, what the key's fingerprint covers.
        let mut repaired = false;
        let args = match self.validate(&arguments, session, registry) {
            Ok(args) => args,
            Err(failure) => {
                let fixed = match &registry.repairer {
                    Some(repairer) if repair::repairable(failure.kind) => {
                        let pass = self.repair(
                            &**repairer,
                            (&call_id, &arguments),
                            &failure,
                            session,
                            registry,
                        );
                        Box::pin(pass).await
                    }
                    _ => None,
                };
                let Some((args, text)) = fixed else {
                    let mut outcome =
                        self.rejected(call_id, arguments, *failure, started, registry);
                    session.count_recovery(&registry.recovery, &mut outcome);
                    return outcome;
                };
                arguments = text;
                repaired = true;
                args
            }
        };
        if T::META.requires_approval {
            // The last step of the validation seam, out of line: most tools never take it.
            if let Err(refusal) = Box::pin(self.approve(&call_id, &arguments, session)).await {
                return self.not_approved(call_id, arguments, refusal, started, registry);
            }
        }
        let mut outcome = if self.exactly_once {
            Box::pin(self.run_once(call_id, arguments, args, started, session, registry)).await
        } else {
            // Execution seam. A tool that takes an idempotency key gets one derived from the
            // call, the same on every attempt.
            let spec = &self.spec;
            let key = spec
                .meta
                .takes_idempotency_key
                .then(|| IdempotencyKey::derive(session.idempotency_scope(), &spec.name, &call_id));
            let mut executed = self
                .execute(
                    &call_id,
                    &arguments,
                    args,
                    key.as_ref(),
                    started,
                    session,
                    registry,
                )
                .await;
            let call = (call_id.as_str(), arguments.as_str(), key.as_ref());
            let degraded = self.recover(&mut executed, call, session, registry).await;
            self.finish(
                call_id,
                arguments,
                executed,
                degraded,
                key.as_ref(),
                started,
                registry,
            )
        };
        if repaired {
            outcome.marks.set(Marks::REPAIRED);
        }
        self.remember(&outcome, session);
        session.count_recovery(&registry.recovery, &mut outcome);
        outcome
    }

    /// The repair pass: one more try at arguments that failed on their form. The repaired
    /// text, validated again, and its arguments; `None` when the repair gave up, timed out,
    /// panicked or still failed (the model then gets its own arguments' failure).
    async fn repair(
        &self,
        repairer: &dyn Repairer,
        (call_id, arguments): (&str, &str),
        failure: &Failure,
        session: &Session,
        registry: &Inner,
    ) -> Option<(T::Args, String)> {
        let name = &self.spec.name;
        let request = RepairRequest {
            spec: &self.spec,
            arguments,
            failure,
        };
        // The repairer is application code (often a model call): bounded, panics contained.
        let clock = &registry.env.clock;
        let cut = clock.now() + registry.repair_timeout;
        let answer = match clock
            .run_until(cut, contain(|| repairer.repair(&request)))
            .await
            .0
        {
            Some(Ok(answer)) => Ok(answer),
            Some(Err(_)) => Err("the repairer panicked"),
            None => Err("the repairer did not answer in time"),
        };
        let (result, fixed) = match answer {
            Ok(Repair::Arguments(text)) => match self.validate(&text, session, registry) {
                Ok(args) => ("repaired", Some((args, text))),
                Err(_) => ("still invalid", None),
            },
            Ok(Repair::Abort) => ("abort", None),
            Err(why) => (why, None),
        };
        // Seed 004: log every malformed call, recovered or not; a tool whose calls often need
        // repair has a description to fix.
        tracing::info!(
            target: "toolwright::repair",
            tool = %name,
            call_id,
            error_type = failure.kind.as_str(),
            result,
            "malformed arguments; repair pass"
        );
        fixed
    }

    /// A non-idempotent call: its idempotency key begun before the attempts (the store may
    /// answer instead, with a replay or a refusal) and settled after.
    async fn run_once(
        &self,
        call_id: String,
        arguments: String,
        args: T::Args,
        started: Instant,
        session: &Session,
        registry: &Inner,
    ) -> Outcome {
        // Before the breaker's permit, so a replay or a refusal never spends a half-open probe.
        let lease = match self.begin(&call_id, &arguments, session, registry).await {
            Ok(lease) => lease,
            Err(mut outcome) => {
                outcome.elapsed = started.elapsed();
                observe::call(
                    &outcome,
                    None,
                    Some(&arguments),
                    T::META.fields,
                    registry.argument_log,
                );
                if outcome.failure.is_some() && !outcome.is_replayed() {
                    outcome.raw_arguments = Some(arguments);
                }
                return outcome;
            }
        };
        // The lease's key, also in fingerprint mode, the same on every attempt.
        let mut executed = self
            .execute(
                &call_id,
                &arguments,
                args,
                Some(lease.key()),
                started,
                session,
                registry,
            )
            .await;
        let call = (call_id.as_str(), arguments.as_str(), Some(lease.key()));
        let degraded = self.recover(&mut executed, call, session, registry).await;
        let uncertain = executed.uncertain;
        let outcome = self.finish(
            call_id,
            arguments,
            executed,
            degraded,
            Some(lease.key()),
            started,
            registry,
        );
        self.settle(registry, lease, &outcome, uncertain).await;
        outcome
    }

    /// The execution seam: a breaker permit, then attempts bounded by the timeout and one
    /// deadline, transient failures retried within the attempt cap and the retry budget.
    ///
    /// The first attempt runs here; the retry loop is boxed and entered only after a failure, so
    /// the future of a call that succeeds at once carries none of its state.
    #[allow(clippy::too_many_arguments)]
    async fn execute(
        &self,
        call_id: &str,
        arguments: &str,
        args: T::Args,
        key: Option<&IdempotencyKey>,
        started: Instant,
        session: &Session,
        registry: &Inner,
    ) -> Executed<T::Output> {
        let (guard, env) = (&self.guard, &registry.env);
        let mut run = guard.start(env, started);
        if guard.is_unguarded() {
            let info = AttemptInfo {
                number: 1,
                deadline: run.deadline,
                attempt_deadline: run.deadline,
            };
            let invocation = self.invocation(call_id, key, session, registry, info);
            let result = self.tool.invoke(args, &invocation).await;
            return Executed::unguarded(result);
        }
        let admitted = match guard.admit(&run) {
            Ok(admitted) => admitted,
            Err(rejection) => return guard.refused(&mut run, rejection),
        };
        let info = admitted.info;
        let invocation = self.invocation(call_id, key, session, registry, info);
        let (output, waited) = env
            .clock
            .run_until(
                info.attempt_deadline,
                contain(|| self.tool.invoke(args, &invocation)),
            )
            .await;
        let wake = match guard.settle(env, &mut run, admitted, output, waited) {
            Step::Done(executed) => return executed,
            Step::RetryAt(wake) => wake,
        };
        let retries = guard.retry(env, run, wake, |info| {
            // `Args` is not `Clone`: a retry parses the validated text again (deterministic).
            let args = serde_json::from_str::<T::Args>(arguments);
            let invocation = self.invocation(call_id, key, session, registry, info);
            async move {
                let args = args.map_err(|e| {
                    ToolError::new(
                        ErrorKind::InvalidJson,
                        format!("the arguments could not be read again for a retry: {e}"),
                    )
                })?;
                self.tool.invoke(args, &invocation).await
            }
        });
        Box::pin(retries).await
    }

    /// What one attempt sees of the call.
    fn invocation<'a>(
        &'a self,
        call_id: &'a str,
        key: Option<&'a IdempotencyKey>,
        session: &'a Session,
        registry: &'a Inner,
        info: AttemptInfo,
    ) -> Invocation<'a> {
        Invocation {
            call_id,
            tool: &self.spec.name,
            session,
            key,
            attempt: info.number,
            deadline: info.deadline,
            attempt_deadline: info.attempt_deadline,
            state: &registry.state,
            clock: &registry.env.clock,
        }
    }

    /// Whether the tool's fallback should answer for this call, and for which failure: it has
    /// one, the call ended because the tool is unavailable (an open breaker, a transient failure
    /// that was not or could no longer be retried), and no attempt may have acted, unless
    /// repeating the tool is harmless anyway.
    fn fallback_for(&self, executed: &Executed<T::Output>) -> Option<ErrorKind> {
        if !T::META.fallback {
            return None;
        }
        let kind = executed.result.as_ref().err()?.kind;
        let unavailable = matches!(
            kind,
            ErrorKind::CircuitOpen
                | ErrorKind::Unavailable
                | ErrorKind::Timeout
                | ErrorKind::RateLimited
        );
        let safe = !executed.uncertain || self.spec.meta.idempotent;
        (unavailable && safe).then_some(kind)
    }

    /// The fallback, when it should answer for this call ([`Entry::fallback_for`]); boxed, as
    /// most calls never need it. Returns the failure it answered for.
    async fn recover(
        &self,
        executed: &mut Executed<T::Output>,
        call: (&str, &str, Option<&IdempotencyKey>),
        session: &Session,
        registry: &Inner,
    ) -> Option<ErrorKind> {
        let kind = self.fallback_for(executed)?;
        Box::pin(self.fall_back(executed, kind, call, session, registry)).await
    }

    /// Runs the fallback once, under the tool's timeout with panics contained. Its answer
    /// replaces the failure (the outcome is then degraded, and this returns the failure it
    /// stands in for); its own failure is added to the tool's failure message.
    #[cold]
    async fn fall_back(
        &self,
        executed: &mut Executed<T::Output>,
        kind: ErrorKind,
        (call_id, arguments, key): (&str, &str, Option<&IdempotencyKey>),
        session: &Session,
        registry: &Inner,
    ) -> Option<ErrorKind> {
        let name = &self.spec.name;
        let clock = &registry.env.clock;
        let cut = clock.now() + self.spec.timeout;
        let info = AttemptInfo {
            number: 1,
            deadline: cut,
            attempt_deadline: cut,
        };
        let invocation = self.invocation(call_id, key, session, registry, info);
        // `Args` is not `Clone`: the validated text is parsed again (deterministic).
        let answer = match serde_json::from_str::<T::Args>(arguments) {
            Ok(args) => {
                let body = contain(|| self.tool.fallback(args, &invocation));
                match clock.run_until(cut, body).await.0 {
                    Some(Ok(result)) => result,
                    Some(Err(_)) => Err(ToolError::new(
                        ErrorKind::ToolPanicked,
                        "it failed with an internal error",
                    )),
                    None => Err(ToolError::timeout(format!(
                        "it did not answer within {} ms",
                        self.spec.timeout.as_millis()
                    ))),
                }
            }
            Err(e) => Err(ToolError::new(
                ErrorKind::InvalidJson,
                format!("the arguments could not be read again: {e}"),
            )),
        };
        match answer {
            Ok(value) => {
                tracing::info!(
                    target: "toolwright::execute",
                    tool = %name,
                    error_type = kind.as_str(),
                    "the tool is unavailable; its fallback answered"
                );
                executed.result = Ok(value);
                Some(kind)
            }
            Err(e) => {
                tracing::warn!(
                    target: "toolwright::execute",
                    tool = %name,
                    error_type = kind.as_str(),
                    fallback_error_type = e.kind().as_str(),
                    "the tool is unavailable and its fallback failed too"
                );
                if let Err(failure) = &mut executed.result {
                    let end = if failure.message.ends_with('.') {
                        ""
                    } else {
                        "."
                    };
                    failure.message = format!(
                        "{}{end} Its fallback failed too: {}",
                        failure.message,
                        e.message()
                    );
                }
                None
            }
        }
    }

    /// The interpretation seam, and the outcome of the call: its data or failure, its attempts,
    /// and how long it took. `degraded`: the fallback answered, for this failure.
    #[inline]
    #[allow(clippy::too_many_arguments)]
    fn finish(
        &self,
        call_id: String,
        arguments: String,
        executed: Executed<T::Output>,
        degraded: Option<ErrorKind>,
        key: Option<&IdempotencyKey>,
        started: Instant,
        registry: &Inner,
    ) -> Outcome {
        let Executed {
            result,
            mut history,
            stop,
            open_since,
            ..
        } = executed;
        let name = Arc::clone(&self.spec.name);
        let mut outcome = match result {
            Ok(output) => match interpret::result(&self.spec.name, &output) {
                Ok((status, data)) => Outcome::success(call_id, name, status, data),
                Err(failure) => Outcome::failed(call_id, name, failure),
            },
            Err(failure) => Outcome::failed_boxed(call_id, name, failure),
        };
        let finished = Instant::now();
        if let Some(begin) = open_since {
            history.close(finished.saturating_duration_since(begin));
        }
        outcome.attempts = u32::try_from(history.as_slice().len()).unwrap_or(u32::MAX);
        outcome.history = history.into_kept();
        outcome.retry_stop = stop;
        outcome.elapsed = finished.saturating_duration_since(started);
        if outcome.failure.is_none() {
            outcome.degraded = degraded;
        }
        observe::call(
            &outcome,
            key,
            Some(&arguments),
            T::META.fields,
            registry.argument_log,
        );
        if outcome.failure.is_some() {
            // Kept for debugging a failed call; dropped on success, never in the envelope.
            outcome.raw_arguments = Some(arguments);
        }
        outcome
    }

    /// Asks the session's approver about this exact call (`#[tool(requires_approval)]`).
    async fn approve(
        &self,
        call_id: &str,
        arguments: &str,
        session: &Session,
    ) -> Result<(), Refusal> {
        let name = &self.spec.name;
        let Some(approver) = session.approver() else {
            return Err(Refusal::Denied(Failure::new(
                ErrorKind::ApprovalDenied,
                format!("`{name}` needs a person's approval and no one can approve it in this conversation; do not retry, tell the user it cannot be done here"),
            )));
        };
        let request = ApprovalRequest {
            session,
            tool: name,
            call_id,
            arguments,
            fields: T::META.fields,
            // wiring(exact): schema-guided, so `null` counts where the tool sees it.
            fingerprint: Fingerprint::for_tool(&self.spec, arguments),
        };
        // The approver is application code: a panic in it refuses the call, it does not
        // reach the caller.
        let decision = contain(|| approver.review(&request)).await;
        match decision {
            Ok(Approval::Approved) => Ok(()),
            Ok(Approval::Denied { reason }) => Err(Refusal::Denied(Failure::new(
                ErrorKind::ApprovalDenied,
                format!("`{name}` was not approved: {reason}. Do not retry it; tell the user"),
            ))),
            Ok(Approval::Pending { ticket }) => Err(Refusal::Pending(ticket)),
            Err(_) => {
                tracing::error!(target: "toolwright::approval", tool = %name, "the approver panicked; the call is refused");
                Err(Refusal::Denied(Failure::new(
                    ErrorKind::ApprovalDenied,
                    format!("`{name}` could not be approved: the approval check failed with an internal error. Do not retry it; tell the user"),
                )))
            }
        }
    }

    /// The outcome of a call that was not approved: `approval_denied`, or `pending` with the
    /// ticket as its data.
    #[cold]
    fn not_approved(
        &self,
        call_id: String,
        arguments: String,
        refusal: Refusal,
        started: Instant,
        registry: &Inner,
    ) -> Outcome {
        let ticket = match refusal {
            Refusal::Denied(failure) => {
                return self.rejected(call_id, arguments, failure, started, registry)
            }
            Refusal::Pending(ticket) => ticket,
        };
        let data = serde_json::value::to_raw_value(&serde_json::json!({ "ticket": ticket }))
            .unwrap_or_else(|_| serde_json::value::RawValue::NULL.to_owned());
        let mut outcome = Outcome::success(
            call_id,
            Arc::clone(&self.spec.name),
            crate::outcome::Status::Pending,
            data,
        );
        outcome.attempts = 0;
        outcome.elapsed = started.elapsed();
        observe::call(&outcome, None, None, T::META.fields, registry.argument_log);
        outcome
    }

    /// Begins a non-idempotent call under its idempotency key: the lease to run under, or the
    /// outcome to answer instead (a replay, `duplicate_in_flight`, `idempotency_mismatch`, or
    /// `unavailable` when the store cannot answer).
    async fn begin(
        &self,
        call_id: &str,
        arguments: &str,
        session: &Session,
        registry: &Inner,
    ) -> Result<Lease, Outcome> {
        let spec = &self.spec;
        let mode = session.key_mode().unwrap_or(registry.key_mode);
        // wiring(exact): schema-guided, so `null` counts where the tool sees it.
        let fingerprint = Fingerprint::for_tool(spec, arguments);
        let key = mode.key(
            session.idempotency_scope(),
            &spec.name,
            call_id,
            &fingerprint,
        );
        // The lock outlives the whole call (every attempt and wait), so a slow call is never
        // taken over while it runs.
        let lock_ttl = DEFAULT_LOCK_TTL.max(self.guard.deadline() + LOCK_SLACK);
        let lease = match registry.store.begin(&key, &fingerprint, lock_ttl).await {
            Ok(begin) => begin.into_lease(call_id, &spec.name)?,
            // Fail closed: without the record the framework cannot tell a retry from a new
            // action. The tool did not fail, so its breaker never hears of it.
            Err(e) => {
                return Err(Outcome::failed(
                    call_id.to_owned(),
                    Arc::clone(&spec.name),
                    ToolError::from(e).into_failure(),
                ))
            }
        };
        if lease.prior() != Prior::Fresh {
            tracing::info!(
                target: "toolwright::idempotency",
                tool = %spec.name,
                key = %lease.key(),
                prior = ?lease.prior(),
                unknown_effects = lease.unknown_effects(),
                "an earlier call under this key ended with its effect unknown; going downstream again with the same key"
            );
        }
        Ok(lease)
    }

    /// Settles a finished call once. `uncertain`: some attempt may have acted, so a call that
    /// ends refused (a conflict, an open breaker) records an unknown effect rather than
    /// forgetting it. A store failure is only logged: the real outcome still goes to the model.
    async fn settle(&self, registry: &Inner, lease: Lease, outcome: &Outcome, uncertain: bool) {
        let store = &*registry.store;
        let settled = match Disposition::of(outcome, true) {
            Disposition::Complete => {
                store
                    .complete(&lease, &StoredOutcome::from_outcome(outcome))
                    .await
            }
            Disposition::Release if !uncertain => store.release(&lease).await,
            Disposition::Release | Disposition::UnknownEffect => {
                store.record_unknown_effect(&lease).await
            }
        };
        let name = &self.spec.name;
        match settled {
            Ok(Settled::Recorded) => {}
            Ok(Settled::LeaseLost) => tracing::warn!(
                target: "toolwright::idempotency",
                tool = %name,
                key = %lease.key(),
                "the call outlived its idempotency lock and another call took the key over; its outcome was not recorded"
            ),
            Err(e) => tracing::warn!(
                target: "toolwright::idempotency",
                tool = %name,
                key = %lease.key(),
                error = %e,
                "the outcome could not be recorded in the idempotency store; the key's lock will expire"
            ),
        }
    }

    /// The validation seam: shape, then field rules, then semantics, then authorization.
    /// Synchronous and out of line, so none of it is stored in (or moved with) the call's future.
    fn validate(
        &self,
        arguments: &str,
        session: &Session,
        registry: &Inner,
    ) -> Result<T::Args, Box<Failure>> {
        let spec = &self.spec;
        let args = match shape::parse::<T::Args>(arguments) {
            Ok(args) => args,
            Err(e) => {
                return Err(Box::new(shape::failure::<T::Args>(
                    arguments,
                    e.as_ref(),
                    &spec.input_schema,
                    &self.shape,
                )));
            }
        };
        let mut report = Violations::new();
        T::check_fields(&args, &mut report);
        if !report.is_empty() {
            let violations = report.into_vec();
            let mut failure = Failure::new(
                ErrorKind::SchemaMismatch,
                crate::validate::summarize(&violations),
            );
            failure.violations = violations;
            failure.expected_schema = Some(Arc::clone(&spec.input_schema));
            return Err(Box::new(failure));
        }
        if let Err(e) = T::check_semantics(&args) {
            return Err(Box::new(validation_failure(e, ErrorKind::SemanticInvalid)));
        }
        T::check_grounded(&args, session, &mut report);
        if !report.is_empty() {
            return Err(Box::new(self.ungrounded(report, registry)));
        }
        if let Some(missing) = spec.meta.scopes.iter().find(|s| !session.has_scope(s)) {
            return Err(Box::new(Failure::new(
                ErrorKind::Unauthorized,
                format!(
                    "this conversation may not call `{}`: it lacks the `{missing}` scope",
                    spec.name
                ),
            )));
        }
        if let Err(e) = T::authorize(&args, session) {
            return Err(Box::new(validation_failure(e, ErrorKind::Unauthorized)));
        }
        Ok(args)
    }

    /// `ungrounded_identifier`: every id no tool returned, and which tools return such ids.
    #[cold]
    fn ungrounded(&self, report: Violations, registry: &Inner) -> Failure {
        let violations = report.into_vec();
        let mut message = crate::validate::summarize(&violations);
        let kinds = T::META
            .fields
            .iter()
            .filter_map(|f| f.grounded_kind())
            .collect::<Vec<_>>();
        let mut finders: Vec<&str> = kinds
            .iter()
            .flat_map(|kind| registry.grounding.get(*kind).into_iter().flatten())
            .map(|name| &**name)
            .collect();
        finders.sort_unstable();
        finders.dedup();
        let end = if message.ends_with('.') { "" } else { "." };
        message.push_str(end);
        match finders.as_slice() {
            [] => message.push_str(" Use an id the user or a tool gave you; never invent one."),
            names => {
                let names: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
                message.push_str(&format!(
                    " Look it up first with {}; never invent ids.",
                    names.join(" or ")
                ));
            }
        }
        let mut failure = Failure::new(ErrorKind::UngroundedIdentifier, message);
        failure.violations = violations;
        failure
    }

    /// Remembers the ids a successful result carries ([`provenance`](crate::provenance)).
    fn remember(&self, outcome: &Outcome, session: &Session) {
        if T::META.grounds.is_empty() || !outcome.is_ok() {
            return;
        }
        let Some(data) = outcome.data() else { return };
        let Ok(value) = serde_json::from_str::<serde_json::Value>(data.get()) else {
            return;
        };
        for grounds in T::META.grounds {
            let mut ids = Vec::new();
            grounds.ids_in(&value, &mut ids);
            session.record_ids(grounds.kind(), ids);
        }
    }

    #[cold]
    fn rejected(
        &self,
        call_id: String,
        arguments: String,
        mut failure: Failure,
        started: Instant,
        registry: &Inner,
    ) -> Outcome {
        // wiring(exact): no `#[arg(sensitive)]` value is quoted back to the model.
        crate::validate::redact_failure(&mut failure, T::META.fields, &arguments);
        let mut outcome = Outcome::failed(call_id, Arc::clone(&self.spec.name), failure);
        outcome.attempts = 1;
        outcome.elapsed = started.elapsed();
        observe::call(
            &outcome,
            None,
            Some(&arguments),
            T::META.fields,
            registry.argument_log,
        );
        outcome.raw_arguments = Some(arguments);
        outcome
    }
}

/// Why an approval step did not let a call through.
enum Refusal {
    Denied(Failure),
    Pending(String),
}

/// A validator's error as a validation-seam failure: its own kind when it names one of the
/// validation seam, `default` otherwise.
fn validation_failure(e: ToolError, default: ErrorKind) -> Failure {
    let mut failure = e.into_failure();
    if failure.kind.seam() != Seam::Validation {
        failure.kind = default;
        failure.retryable = default.model_retryable();
    }
    failure
}

/// Tool names are a small fixed set chosen by the application; the model only looks them up, so
/// a fast non-cryptographic hash is safe here (SipHash was a visible share of a call's cost).
type ToolMap = HashMap<Arc<str>, Box<dyn DynTool>, foldhash::fast::RandomState>;

struct Inner {
    tools: ToolMap,
    specs: Vec<ToolSpec>,
    names: Arc<[String]>,
    state: Arc<StateMap>,
    env: Env,
    store: Arc<dyn IdempotencyStore>,
    key_mode: KeyMode,
    argument_log: ArgumentLog,
    /// For each kind of id, the tools whose results carry it (named in `ungrounded_identifier`).
    grounding: HashMap<&'static str, Vec<Arc<str>>>,
    recovery: RecoveryBudget,
    repairer: Option<Arc<dyn Repairer>>,
    repair_timeout: Duration,
    // wiring(exact): the argument size limit.
    max_argument_bytes: usize,
}

/// The tools a model may call, and the pipeline each call runs through. Cheap to clone.
///
/// Build one with [`Registry::builder`] or collect every `#[tool]` of the binary with
/// [`Registry::from_collected`].
#[derive(Clone)]
pub struct Registry {
    inner: Arc<Inner>,
}

impl Registry {
    /// An empty builder.
    pub fn builder() -> RegistryBuilder {
        RegistryBuilder::default()
    }

    /// A builder holding every tool defined with `#[tool]` anywhere in the binary, to add state
    /// or a default timeout to before building.
    pub fn collected() -> RegistryBuilder {
        let mut builder = RegistryBuilder::default();
        for entry in inventory::iter::<CollectedTool> {
            builder = (entry.register)(builder);
        }
        builder
    }

    /// A registry of every tool defined with `#[tool]` anywhere in the binary.
    pub fn from_collected() -> Result<Registry, BuildError> {
        Registry::collected().build()
    }

    /// Every tool's spec, sorted by name.
    pub fn specs(&self) -> &[ToolSpec] {
        &self.inner.specs
    }

    /// One tool's spec.
    pub fn spec(&self, name: &str) -> Option<&ToolSpec> {
        self.inner.tools.get(name).map(|t| t.spec())
    }

    /// The tool names, sorted.
    pub fn names(&self) -> &[String] {
        &self.inner.names
    }

    /// One tool's circuit breaker: its state and stats, and the manual
    /// [`force_open`](BreakerHandle::force_open) and [`reset`](BreakerHandle::reset).
    pub fn breaker(&self, name: &str) -> Option<BreakerHandle> {
        self.inner.tools.get(name).map(|t| BreakerHandle {
            breaker: Arc::clone(t.guard().breaker()),
            clock: self.inner.env.clock.clone(),
        })
    }

    /// Runs a call in an anonymous session. Never fails and never panics: every problem is a
    /// classified [`Outcome`].
    pub fn call(&self, call: ToolCall) -> impl Future<Output = Outcome> + Send + '_ {
        self.call_in(Session::shared_anonymous(), call)
    }

    /// Runs a call inside a conversation's [`Session`] (principal, scopes, idempotency scope).
    ///
    /// The tool is looked up when this is called; the returned future runs the pipeline. It is
    /// the tool's own future (or a ready one for an unknown name), not a wrapper around it, so
    /// the call and its outcome are not moved through an extra state machine.
    pub fn call_in<'a>(
        &'a self,
        session: &'a Session,
        call: ToolCall,
    ) -> impl Future<Output = Outcome> + Send + 'a {
        let (id, name, arguments) = call.into_parts();
        match self.inner.tools.get(name.as_str()) {
            Some(tool) => Either::Left(tool.dispatch(id, arguments, session, &self.inner)),
            None => {
                let mut outcome = self.unknown_tool(id, name, arguments);
                session.count_recovery(&self.inner.recovery, &mut outcome);
                Either::Right(std::future::ready(outcome))
            }
        }
    }

    fn unknown_tool(&self, call_id: String, name: String, arguments: String) -> Outcome {
        let shown = if name.chars().count() <= 64 {
            format!("'{name}'")
        } else {
            preview_str(&name)
        };
        let mut failure = Failure::new(
            ErrorKind::UnknownTool,
            format!("{shown} is not an available tool; call one of available_tools instead"),
        );
        failure.available_tools = Some(Arc::clone(&self.inner.names));
        let mut outcome = Outcome::failed(call_id, Arc::from(name), failure);
        // No tool, so no field is known to be sensitive: the arguments are never logged.
        observe::call(&outcome, None, None, &[], self.inner.argument_log);
        outcome.raw_arguments = Some(arguments);
        outcome
    }
}

impl fmt::Debug for Registry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Registry")
            .field("tools", &self.inner.names)
            .finish()
    }
}

type Pending = Box<dyn FnOnce(&Settings, BreakerPolicy, Instant) -> Box<dyn DynTool> + Send>;

/// Builds a [`Registry`]: tools, shared state, defaults.
///
/// ```
/// # use toolwright_core::Registry;
/// # use std::time::Duration;
/// let registry = Registry::builder().default_timeout(Duration::from_secs(5)).build().unwrap();
/// assert!(registry.specs().is_empty());
/// ```
pub struct RegistryBuilder {
    pending: Vec<(&'static str, Pending)>,
    state: StateMap,
    settings: Settings,
    breakers: HashMap<String, BreakerPolicy>,
    env: Env,
    store: Option<Arc<dyn IdempotencyStore>>,
    key_mode: KeyMode,
    argument_log: ArgumentLog,
    recovery: RecoveryBudget,
    repairer: Option<Arc<dyn Repairer>>,
    repair_timeout: Duration,
    // wiring(exact): the argument size limit.
    max_argument_bytes: usize,
}

impl Default for RegistryBuilder {
    fn default() -> Self {
        RegistryBuilder {
            pending: Vec::new(),
            state: StateMap::new(),
            settings: Settings {
                default_timeout: DEFAULT_TIMEOUT,
                call_deadline: None,
                retry: RetryPolicy::new(),
                budget: RetryBudget::default(),
                breaker: BreakerPolicy::new(),
                unguarded: false,
            },
            breakers: HashMap::new(),
            env: Env::default(),
            store: None,
            key_mode: KeyMode::default(),
            argument_log: ArgumentLog::Off,
            recovery: RecoveryBudget::new(),
            repairer: None,
            repair_timeout: DEFAULT_REPAIR_TIMEOUT,
            // wiring(exact): the argument size limit.
            max_argument_bytes: crate::validate::DEFAULT_MAX_ARGUMENT_BYTES,
        }
    }
}

impl RegistryBuilder {
    /// Adds a tool. Two tools with one name make [`RegistryBuilder::build`] fail.
    pub fn tool<T: Tool>(mut self, tool: T) -> Self {
        let pending: Pending = Box::new(move |settings, breaker, origin| {
            let spec = ToolSpec::of::<T>(settings.default_timeout);
            let guard = Guard::new(
                Arc::clone(&spec.name),
                spec.timeout,
                spec.meta.retries,
                spec.meta.idempotent || spec.meta.takes_idempotency_key,
                settings,
                breaker,
                origin,
            );
            Box::new(Entry {
                exactly_once: !(spec.meta.idempotent || spec.meta.read_only),
                spec,
                tool,
                shape: ShapeValidator::default(),
                guard,
            })
        });
        self.pending.push((T::META.name, pending));
        self
    }

    /// Adds shared state, handed to tools that take a [`State<T>`](crate::State) parameter.
    pub fn state<T: Send + Sync + 'static>(mut self, value: T) -> Self {
        let value: Arc<dyn Any + Send + Sync> = Arc::new(value);
        self.state.insert(std::any::TypeId::of::<T>(), value);
        self
    }

    /// The per-attempt timeout of tools that declare no `timeout_ms` (default 30 s).
    pub fn default_timeout(mut self, timeout: Duration) -> Self {
        self.settings.default_timeout = timeout;
        self
    }

    /// One deadline for every call, covering all its attempts and the waits between them.
    /// Default: per tool, long enough for every attempt to reach its timeout and every wait its
    /// ceiling ([`RetryPolicy::deadline_for`]).
    pub fn call_deadline(mut self, deadline: Duration) -> Self {
        self.settings.call_deadline = Some(deadline);
        self
    }

    /// Attempts and backoff for every tool (default: 3 attempts, full jitter from 250 ms capped
    /// at 20 s). A tool's `#[tool(retries = N)]` overrides the attempt count.
    pub fn retry_policy(mut self, policy: RetryPolicy) -> Self {
        self.settings.retry = policy;
        self
    }

    /// The retry budget each tool gets (default: 20% of first attempts plus 1 retry per second,
    /// over 10 s).
    pub fn retry_budget(mut self, budget: RetryBudget) -> Self {
        self.settings.budget = budget;
        self
    }

    /// The circuit breaker policy of every tool without its own ([`RegistryBuilder::breaker_for`]).
    pub fn breaker(mut self, policy: BreakerPolicy) -> Self {
        self.settings.breaker = policy;
        self
    }

    /// A circuit breaker policy for one tool; [`RegistryBuilder::build`] fails if no tool has
    /// that name.
    pub fn breaker_for(mut self, tool: impl Into<String>, policy: BreakerPolicy) -> Self {
        self.breakers.insert(tool.into(), policy);
        self
    }

    /// The clock timeouts, backoff, deadlines, breakers and budgets read (default: tokio's, which
    /// `#[tokio::test(start_paused = true)]` pauses).
    pub fn clock(mut self, clock: impl Clock) -> Self {
        self.env.clock = ClockHandle::new(clock);
        self
    }

    /// Not for production: runs tool bodies with no timeout, breaker, retry, budget or panic
    /// containment, so a benchmark can measure what that machinery costs on the success path.
    #[doc(hidden)]
    pub fn unguarded_for_benchmarks(mut self) -> Self {
        self.settings.unguarded = true;
        self
    }

    /// The random source backoff jitter draws from (default: fastrand's thread-local generator;
    /// [`SeededRandom`](crate::execute::SeededRandom) for reproducible tests).
    pub fn random(mut self, random: impl RandomSource) -> Self {
        self.env.random = RandomHandle::new(random);
        self
    }

    /// Where non-idempotent tools record what each idempotency key came to (default: a
    /// [`MemoryStore`] of this registry alone). Give every replica the same shared store (the
    /// `RedisStore` of the `redis` feature) so a call re-delivered to another replica is
    /// recognized too. Idempotent and read-only tools never touch the store.
    ///
    /// ```
    /// # use toolwright_core::{MemoryStore, Registry};
    /// let store = MemoryStore::builder().max_bytes(8 << 20).build();
    /// let registry = Registry::builder().idempotency_store(store).build().unwrap();
    /// # let _ = registry;
    /// ```
    pub fn idempotency_store(mut self, store: impl IdempotencyStore) -> Self {
        self.store = Some(Arc::new(store));
        self
    }

    /// How idempotency keys are derived when the session does not say
    /// ([`Session::with_key_mode`]): [`KeyMode::CallId`] (default) or
    /// [`KeyMode::Fingerprint`]; [`KeyMode`] explains when each is right.
    pub fn key_mode(mut self, mode: KeyMode) -> Self {
        self.key_mode = mode;
        self
    }

    /// Whether the `tracing` events of failed calls carry their arguments (default: never);
    /// [`ArgumentLog::Redacted`] shows them with every `#[arg(sensitive)]` field replaced. The
    /// events are described in the [`observe`] module.
    pub fn log_arguments(mut self, mode: ArgumentLog) -> Self {
        self.argument_log = mode;
        self
    }

    /// How many times in a row a model may retry a tool after each kind of failure, in one
    /// conversation, before the envelope tells it to stop (default: [`RecoveryBudget::new`]:
    /// 2 after a schema violation, 1 after an unknown tool or a semantic failure, 0 while a
    /// breaker is open). See [`recovery`](crate::recovery).
    pub fn recovery_budget(mut self, budget: RecoveryBudget) -> Self {
        self.recovery = budget;
        self
    }

    /// One more try at arguments that fail on their form (`invalid_json`, `unknown_argument`,
    /// `schema_mismatch`) before the call fails: the [`repair`] pass. Off by
    /// default.
    pub fn repairer(mut self, repairer: impl Repairer) -> Self {
        self.repairer = Some(Arc::new(repairer));
        self
    }

    /// How long the repairer may take (default 10 s); past it, the call fails as if there were
    /// no repairer.
    pub fn repair_timeout(mut self, timeout: Duration) -> Self {
        self.repair_timeout = timeout;
        self
    }

    // wiring(exact): the builder option of the argument size limit.
    /// The longest argument text a call may carry, in bytes (default 1 MiB,
    /// [`DEFAULT_MAX_ARGUMENT_BYTES`](crate::validate::DEFAULT_MAX_ARGUMENT_BYTES)). Longer
    /// text is refused before it is parsed, as `bad_request` with `retryable: true` and a
    /// message that states the limit and the size received: a model's runaway output (or a
    /// hostile one) must not cost seconds of parsing and hundreds of megabytes on the failure
    /// path, which reads the whole text to report every problem.
    ///
    /// ```
    /// # use toolwright_core::Registry;
    /// let registry = Registry::builder().max_argument_bytes(64 << 10).build().unwrap();
    /// # let _ = registry;
    /// ```
    pub fn max_argument_bytes(mut self, bytes: usize) -> Self {
        self.max_argument_bytes = bytes;
        self
    }

    /// Builds the registry; fails on duplicate names and on missing shared state.
    pub fn build(self) -> Result<Registry, BuildError> {
        let mut tools = ToolMap::with_capacity_and_hasher(self.pending.len(), Default::default());
        let origin = self.env.clock.now();
        for (name, make) in self.pending {
            if tools.contains_key(name) {
                return Err(BuildError::DuplicateTool(name.to_owned()));
            }
            let breaker = self
                .breakers
                .get(name)
                .copied()
                .unwrap_or(self.settings.breaker);
            let tool = make(&self.settings, breaker, origin);
            for need in tool.required_state() {
                if !self.state.contains_key(&need.type_id) {
                    return Err(BuildError::MissingState {
                        tool: name.to_owned(),
                        state: need.type_name,
                    });
                }
            }
            tools.insert(Arc::clone(&tool.spec().name), tool);
        }
        if let Some(name) = self
            .breakers
            .keys()
            .find(|n| !tools.contains_key(n.as_str()))
        {
            return Err(BuildError::UnknownBreakerTool(name.clone()));
        }
        let mut specs: Vec<ToolSpec> = tools.values().map(|t| t.spec().clone()).collect();
        specs.sort_by(|a, b| a.name.cmp(&b.name));
        let mut grounding: HashMap<&'static str, Vec<Arc<str>>> = HashMap::new();
        for spec in &specs {
            for grounds in spec.meta.grounds {
                let tools = grounding.entry(grounds.kind()).or_default();
                if !tools.contains(&spec.name) {
                    tools.push(Arc::clone(&spec.name));
                }
            }
        }
        let names: Arc<[String]> = specs.iter().map(|s| s.name.to_string()).collect();
        Ok(Registry {
            inner: Arc::new(Inner {
                tools,
                specs,
                names,
                state: Arc::new(self.state),
                env: self.env,
                store: self
                    .store
                    .unwrap_or_else(|| Arc::new(MemoryStore::new()) as Arc<dyn IdempotencyStore>),
                key_mode: self.key_mode,
                argument_log: self.argument_log,
                grounding,
                recovery: self.recovery,
                repairer: self.repairer,
                repair_timeout: self.repair_timeout,
                // wiring(exact): the argument size limit.
                max_argument_bytes: self.max_argument_bytes,
            }),
        })
    }
}

/// Why a registry could not be built.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum BuildError {
    /// Two tools share a name; a model could not tell them apart.
    DuplicateTool(String),
    /// A tool takes `State<T>` but no `T` was given to [`RegistryBuilder::state`].
    MissingState {
        /// The tool.
        tool: String,
        /// The missing state's type.
        state: &'static str,
    },
    /// [`RegistryBuilder::breaker_for`] names a tool the registry does not have.
    UnknownBreakerTool(String),
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BuildError::DuplicateTool(name) => {
                write!(f, "two tools are named `{name}`; tool names must be unique")
            }
            BuildError::MissingState { tool, state } => {
                write!(f, "tool `{tool}` takes `State<{state}>`, but the registry has no `{state}`: add `.state(value)` to the builder")
            }
            BuildError::UnknownBreakerTool(name) => {
                write!(
                    f,
                    "`breaker_for(\"{name}\", ..)` names no registered tool; check the tool's name"
                )
            }
        }
    }
}

impl std::error::Error for BuildError {}

/// An auto-collection entry: `#[tool]` submits one per tool so [`Registry::from_collected`]
/// finds every tool in the binary without a hand-kept list.
pub struct CollectedTool {
    register: fn(RegistryBuilder) -> RegistryBuilder,
}

impl CollectedTool {
    /// An entry that adds one tool to a builder.
    pub const fn new(register: fn(RegistryBuilder) -> RegistryBuilder) -> Self {
        CollectedTool { register }
    }
}

inventory::collect!(CollectedTool);
