//! The stages of one call, in the order it runs through them, and the finalizer every path
//! ends with.
//!
//! ```text
//! scopes ─> shape, field rules, semantic rule, provenance, authorize ─> (one repair pass)
//!   ─> [side-effecting: idempotency begin: replay, duplicate_in_flight, mismatch]
//!   ─> approval ─> breaker, attempts under timeout and deadline, retries ─> interpret
//!   ─> fallback ─> [settle the idempotency key] ─> finalize (ids, recovery budget, log)
//! ```
//!
//! Only what needs the tool's type is generic ([`typed`]: parsing and the typed checks, the
//! attempts of its body with the interpretation of its result, its fallback's future), reached
//! through the type-erased [`DynTool`]; the call's path through the stages ([`run`]) and every
//! stage are ordinary functions, compiled once for all tools, so a tool adds to a build only
//! what its own types need.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use crate::call::{Invocation, Session, StateMap};
use crate::conversation::recovery::{self, RecoveryBudget};
use crate::conversation::{durable, ConversationStore, Prepare};
use crate::error::ToolError;
use crate::execute::fallback::{self, Interpreted};
use crate::execute::{Attempt, AttemptInfo, Bounds, Executed};
use crate::guard::approval::{self, ApprovalRequest, Refusal};
use crate::guard::output;
use crate::guard::provenance::{self, Finders};
use crate::idempotency::{self, Fingerprint, IdempotencyKey, IdempotencyStore, KeyMode, Lease};
use crate::observe::{self, ArgumentLog, Quarantine, ToolStats};
use crate::outcome::{ErrorKind, Failure, Fix, Fixes, Marks, Outcome, Status};
use crate::progress::ProgressHandle;
use crate::runtime::{BoxFuture, Env};
use crate::tool::spec::{Effect, StateRequirement, ToolSpec};
use crate::validate::repair::{self, DeterministicRepair, RepairRequest, Repairer};
use crate::validate::{self as checks, summarize};

mod typed;

pub(crate) use typed::{entry_with, reparse, Body};

/// What every stage may need of the registry: its shared state, its clock and randomness, its
/// stores and policies. Built once with the registry.
pub(crate) struct Shared {
    pub(crate) state: Arc<StateMap>,
    pub(crate) env: Env,
    pub(crate) store: Arc<dyn IdempotencyStore>,
    pub(crate) key_mode: KeyMode,
    pub(crate) argument_log: ArgumentLog,
    /// For each kind of id, the tools whose results carry it (replaced when the tool set
    /// changes; read only to word an `ungrounded_identifier` failure).
    pub(crate) finders: std::sync::RwLock<Arc<Finders>>,
    pub(crate) recovery: RecoveryBudget,
    pub(crate) repairer: Option<Arc<dyn Repairer>>,
    /// The deterministic repair rules, tried before the repairer.
    pub(crate) rules: Option<DeterministicRepair>,
    pub(crate) repair_timeout: Duration,
    pub(crate) approval_timeout: Duration,
    pub(crate) max_argument_bytes: usize,
    /// The arguments of calls that failed validation.
    pub(crate) quarantine: Quarantine,
    /// Calls of names no tool has.
    pub(crate) unknown_calls: std::sync::atomic::AtomicU64,
    /// The cap on a result's JSON text, in bytes.
    pub(crate) max_result_bytes: Option<usize>,
    /// The application's check of every validated call.
    pub(crate) call_guard: Option<Arc<dyn crate::guard::policy::CallGuard>>,
    /// The application's check of every result.
    pub(crate) result_guard: Option<Arc<dyn crate::guard::output::ResultGuard>>,
}

/// A registered tool with its type erased, so one table can hold every tool.
pub(crate) trait DynTool: Send + Sync {
    fn spec(&self) -> &ToolSpec;
    fn guard(&self) -> &Bounds;
    fn stats(&self) -> &ToolStats;
    fn required_state(&self) -> Vec<StateRequirement>;
    /// The typed checks of `arguments` (shape, field rules, semantic rule, provenance,
    /// authorization), the parsed arguments kept for [`DynTool::invoke`] (boxed: only the tool
    /// knows their type).
    fn validated(
        &self,
        arguments: &str,
        session: &Session,
        shared: &Shared,
    ) -> Result<Args, Box<Failure>>;
    /// The tool's body on `args` (taken by its first poll), its result interpreted: `Ok(Err)`
    /// when the body succeeded but its result could not be (that is not the attempt's failure).
    fn invoke<'a>(
        &'a self,
        args: Args,
        invocation: Invocation<'a>,
    ) -> BoxFuture<'a, Result<Answer, ToolError>>;
    /// The validated text read again into the tool's arguments, for a retry.
    fn reparse(&self, arguments: &str) -> Result<Args, ToolError>;
    /// The future of the tool's fallback for a call that failed with `kind`, or `None` when the
    /// tool has none.
    fn fall_back<'a>(
        &'a self,
        executed: &'a mut Executed<Interpreted>,
        kind: ErrorKind,
        call: &'a Call,
        key: Option<&'a IdempotencyKey>,
        session: &'a Session,
        shared: &'a Shared,
    ) -> Option<BoxFuture<'a, Option<ErrorKind>>>;
}

/// Validated arguments on their way from the checks to the tool's body, their type erased
/// (the stages between them are compiled once for all tools). A tool without arguments
/// allocates nothing for them.
pub(crate) type Args = Box<dyn std::any::Any + Send>;

/// A successful attempt's result, interpreted; `Err` when it could not be.
pub(crate) type Answer = Result<Interpreted, Box<Failure>>;

/// One call as it moves through the stages.
pub(crate) struct Call {
    pub(crate) id: String,
    /// The argument text; after a repair, the repaired text (what runs, what the key covers).
    pub(crate) arguments: String,
    pub(crate) arrived: Instant,
    /// Where the tool's progress reports go, when the caller attached a handle.
    pub(crate) progress: Option<ProgressHandle>,
}

impl Call {
    /// The call, leaving an empty one (same arrival) in its place.
    pub(crate) fn take(&mut self) -> Call {
        let arrived = self.arrived;
        std::mem::replace(
            self,
            Call {
                id: String::new(),
                arguments: String::new(),
                arrived,
                progress: None,
            },
        )
    }

    pub(crate) fn new(id: String, arguments: String, progress: Option<ProgressHandle>) -> Call {
        Call {
            id,
            arguments,
            arrived: Instant::now(),
            progress,
        }
    }
}

/// The call through every stage, compiled once for all tools: what needs the tool's types (its
/// checks, its attempts, its fallback) is reached through [`DynTool`]. The future stays small
/// (it is boxed once per call): the stages most calls skip (repair, idempotency, approval,
/// fallback) are boxed on their own, and so is the retry loop, entered only after a failed
/// attempt.
///
/// An `async` block, not an `async fn`: an `async fn` keeps each parameter twice in its
/// state (the argument and the local it is moved into), and the block does not.
#[allow(
    clippy::manual_async_fn,
    reason = "an async fn stores its parameters twice"
)]
pub(crate) fn run<'a>(
    tool: &'a dyn DynTool,
    mut call: Call,
    session: &'a Session,
    shared: &'a Shared,
) -> impl Future<Output = Outcome> + Send + 'a {
    async move {
        let (spec, stats) = (tool.spec(), tool.stats());
        // Validation seam. Scopes first: a session that may not call the tool learns nothing
        // about its arguments.
        // (A temporary, not a named local: a named `Result<Args, _>` would stay in the
        // future's state through every later await, beside the args moved out of it.)
        let (args, repaired_by) = match checked(tool, &call, session, shared) {
            Ok(args) => (args, Fixes::EMPTY),
            Err(failure) if shared.rules.is_none() && shared.repairer.is_none() => {
                return rejected((spec, stats), call, *failure, session, shared)
            }
            // The repair pass is an ordinary stage over the type-erased tool, boxed (few
            // calls need it).
            Err(failure) => {
                let repair: BoxFuture<'_, Result<(Args, Fixes), Box<Failure>>> =
                    Box::pin(repair_call(tool, &mut call, failure, session, shared));
                match repair.await {
                    Ok(repaired) => repaired,
                    Err(failure) => {
                        return rejected((spec, stats), call, *failure, session, shared)
                    }
                }
            }
        };
        let repaired = !repaired_by.is_empty();
        if let Some(guard) = shared.call_guard.as_deref() {
            if let Err(failure) = policy(guard, spec, session, &call) {
                return rejected((spec, stats), call, *failure, session, shared);
            }
        }
        // The stages before the attempt that wait on something else (the idempotency store,
        // a reviewer) run in one boxed future of their own, entered only by calls that need
        // one, so the call's future holds none of their state.
        let lease = if matches!(spec.effect(), Effect::SideEffecting) || spec.requires_approval() {
            match Box::pin(admit(
                (spec, tool.guard(), stats),
                &mut call,
                session,
                shared,
            ))
            .await
            {
                Ok(lease) => lease,
                Err(outcome) => return outcome,
            }
        } else {
            None
        };
        let key = match &lease {
            Some(lease) => Some(lease.key().clone()),
            None => spec
                .takes_idempotency_key()
                .then(|| IdempotencyKey::derive(&session.call_scope(), spec.name(), &call.id)),
        };
        // The attempt clock starts now; a call that awaited nothing yet starts at its arrival,
        // which spares a clock read on the common path.
        let begin = if repaired || lease.is_some() || spec.requires_approval() {
            Instant::now()
        } else {
            call.arrived
        };
        let attempts = ToolAttempts {
            tool,
            call: &call,
            args: Some(args),
            key: key.as_ref(),
            session,
            shared,
        };
        let executed = tool.guard().attempts(&shared.env, begin, attempts).await;
        let mut executed = interpreted(executed, spec, session, &call.id, shared);
        let degraded = match fallback::wanted(spec.has_fallback(), spec.idempotent(), &executed) {
            Some(kind) => {
                match tool.fall_back(&mut executed, kind, &call, key.as_ref(), session, shared) {
                    Some(fall_back) => fall_back.await,
                    None => None,
                }
            }
            None => None,
        };
        let uncertain = executed.uncertain;
        // The id moves into the outcome: the call keeps only what `finalize` still reads.
        let id = std::mem::take(&mut call.id);
        let mut outcome = conclude(spec, id, call.arrived, executed, degraded);
        if let Some(lease) = lease {
            Box::pin(idempotency::settle_call(
                &*shared.store,
                *lease,
                &outcome,
                uncertain,
            ))
            .await;
        }
        outcome.repaired_by = repaired_by;
        // The tool is done: a report still waiting out its interval goes now, before the
        // outcome, and none after it.
        if let Some(progress) = &call.progress {
            progress.finish();
        }
        finalize(
            Some((spec, stats)),
            outcome,
            call.arguments,
            key.as_ref(),
            session,
            shared,
        )
    }
}

/// Scopes, the size limit, then the tool's typed checks.
fn checked(
    tool: &dyn DynTool,
    call: &Call,
    session: &Session,
    shared: &Shared,
) -> Result<Args, Box<Failure>> {
    guard_scopes(tool.spec(), session)?;
    // The size before anything reads the text.
    checks::check_size(&call.arguments, shared.max_argument_bytes).map_err(Box::new)?;
    tool.validated(&call.arguments, session, shared)
}

/// A call handed to its tool: the one box its future lives in. An untraced call carries no span
/// in its future. A session whose conversation lives in a store takes a path of its own; every
/// other call pays for that one branch only.
pub(crate) fn dispatch<'a>(
    tool: &'a dyn DynTool,
    call: Call,
    session: &'a Session,
    shared: &'a Shared,
) -> BoxFuture<'a, Outcome> {
    let span = observe::span::call(tool.spec().name(), &call.id, session);
    match (session.store(), span.is_disabled()) {
        (None, true) => Box::pin(run(tool, call, session, shared)),
        (None, false) => Box::pin(observe::span::Traced::new(
            span,
            run(tool, call, session, shared),
        )),
        (Some(store), true) => Box::pin(run_durable(tool, call, session, &**store, shared)),
        (Some(store), false) => Box::pin(observe::span::Traced::new(
            span,
            run_durable(tool, call, session, &**store, shared),
        )),
    }
}

/// The store-backed path: the ids the call's grounded arguments hold, and the arguments a
/// reviewer approved in place of its own, are read from the store first (one round trip,
/// only when there are any); the stages run unchanged on a memory of this call
/// ([`Overlay`](durable::Overlay)); what the call left is written back after (one round
/// trip, only when it left something). A store that cannot be read refuses the call
/// (`unavailable`) before anything runs, outside the breaker's count.
pub(crate) async fn run_durable(
    tool: &dyn DynTool,
    mut call: Call,
    session: &Session,
    store: &dyn ConversationStore,
    shared: &Shared,
) -> Outcome {
    let spec = tool.spec();
    // A call that requires approval may have been approved with edited arguments: asked
    // in the same round trip as its grounded ids.
    let edited_for = spec.requires_approval().then(|| {
        (
            session.principal().map(str::to_owned),
            Fingerprint::for_tool(spec, &call.arguments).to_string(),
        )
    });
    let (in_call, overlay) =
        match grounding(tool, &call.arguments, session, edited_for, shared).await {
            Ok((in_call, overlay, None)) => (in_call, overlay),
            // The edited call is the one that runs, and is checked (its own ids asked again).
            Ok((_, _, Some(edited))) => {
                call.arguments = edited;
                match grounding(tool, &call.arguments, session, None, shared).await {
                    Ok((in_call, overlay, _)) => (in_call, overlay),
                    Err(failure) => {
                        return rejected((spec, tool.stats()), call, *failure, session, shared)
                    }
                }
            }
            Err(failure) => {
                return rejected((spec, tool.stats()), call, *failure, session, shared);
            }
        };
    let mut outcome = run(tool, call, &in_call, shared).await;
    durable::settle(
        store,
        session.id(),
        &overlay,
        &shared.recovery,
        spec.idempotent(),
        &mut outcome,
    )
    .await;
    outcome
}

/// The session for one store-backed call of `arguments`: its memory knows which of the
/// ids its grounded arguments hold are grounded, asked of the store in one round trip
/// together with the arguments approved in place of these (`edited_for`: the principal
/// and the call's fingerprint), which come back third. `Err`: `unavailable`, the store
/// could not be read.
pub(crate) async fn grounding(
    tool: &dyn DynTool,
    arguments: &str,
    session: &Session,
    edited_for: Option<(Option<String>, String)>,
    shared: &Shared,
) -> Result<(Session, Arc<durable::Overlay>, Option<String>), Box<Failure>> {
    let spec = tool.spec();
    let mut asked = Vec::new();
    if spec.fields().iter().any(|f| f.grounded_kind().is_some()) {
        // The checks run once to learn which ids they ask about (every one taken as known).
        let probe = Arc::new(durable::Overlay::probe());
        let _ = tool.validated(arguments, &session.in_call(probe.clone()), shared);
        asked = probe.asked();
    }
    let (overlay, edited) = match session.store() {
        Some(store) if !asked.is_empty() || edited_for.is_some() => {
            let prepare = Prepare {
                ids: asked,
                edited_for,
            };
            match store.prepare(session.id(), &prepare).await {
                Ok(prepared) => {
                    let overlay = durable::Overlay::knowing(prepare.ids, &prepared);
                    (overlay, prepared.edited)
                }
                Err(e) => return Err(Box::new(durable::unreachable(spec.name(), &e))),
            }
        }
        _ => (durable::Overlay::default(), None),
    };
    let overlay = Arc::new(overlay);
    Ok((session.in_call(overlay.clone()), overlay, edited))
}

/// Checks `arguments` as a call in `session` would (without its scopes): a reviewer's edited
/// arguments. `Err`: the failure's outcome.
pub(crate) async fn revalidate(
    tool: &dyn DynTool,
    arguments: &str,
    session: &Session,
    shared: &Shared,
) -> Result<(), Outcome> {
    let failure = match grounding(tool, arguments, session, None, shared).await {
        Ok((in_call, _, _)) => match tool.validated(arguments, &in_call, shared) {
            Ok(_) => return Ok(()),
            Err(failure) => failure,
        },
        Err(failure) => failure,
    };
    let mut failure = *failure;
    let spec = tool.spec();
    checks::redact_failure(&mut failure, spec.fields(), arguments);
    Err(Outcome::failed(
        String::new(),
        Arc::clone(&spec.name),
        failure,
    ))
}

/// The idempotency key of a side-effecting call, then approval. A side-effecting call
/// begins its key before approval: a call that already ran under it is answered from the
/// store, never asked about again. `Err`: the call's finished outcome (a replay, a refusal
/// by the store, a denial or a pending ticket).
async fn admit(
    (spec, guard, stats): (&ToolSpec, &Bounds, &ToolStats),
    call: &mut Call,
    session: &Session,
    shared: &Shared,
) -> Result<Option<Box<Lease>>, Outcome> {
    let lease = match spec.effect() {
        // Boxed: the lease waits out every attempt, in the call's future.
        Effect::SideEffecting => match begin(spec, guard, call, session, shared).await {
            Ok(lease) => Some(Box::new(lease)),
            Err(outcome) => {
                let call = call.take();
                return Err(answered_by_store(
                    (spec, stats),
                    call,
                    outcome,
                    session,
                    shared,
                ));
            }
        },
        _ => None,
    };
    if spec.requires_approval() {
        if let Err(refusal) = approve(spec, call, session, shared).await {
            let call = call.take();
            let tool = (spec, stats);
            return Err(not_approved(tool, call, lease, refusal, session, shared).await);
        }
    }
    Ok(lease)
}

/// One call's attempts of its tool, for the execution seam
/// ([`Bounds::attempts`](crate::execute::Bounds::attempts)): the first attempt takes the
/// validated arguments, a retry parses the validated text again (`Args` is not `Clone`; the
/// parse is deterministic).
struct ToolAttempts<'a> {
    tool: &'a dyn DynTool,
    call: &'a Call,
    args: Option<Args>,
    key: Option<&'a IdempotencyKey>,
    session: &'a Session,
    shared: &'a Shared,
}

impl<'a> Attempt<'a> for ToolAttempts<'a> {
    type Output = Answer;

    fn attempt(&mut self, info: AttemptInfo) -> BoxFuture<'a, Result<Answer, ToolError>> {
        let (tool, call) = (self.tool, self.call);
        let invocation = invocation(tool.spec(), call, self.key, self.session, self.shared, info);
        match self
            .args
            .take()
            .map_or_else(|| tool.reparse(&call.arguments), Ok)
        {
            Ok(args) => tool.invoke(args, invocation),
            Err(e) => Box::pin(std::future::ready(Err(e))),
        }
    }

    fn scrub(&self, message: &str) -> String {
        observe::scrubbed(message, &self.call.arguments, self.tool.spec().fields())
    }
}

/// The attempts' answer, checked by the output guards.
fn interpreted(
    executed: Executed<Answer>,
    spec: &ToolSpec,
    session: &Session,
    call_id: &str,
    shared: &Shared,
) -> Executed<Interpreted> {
    executed.and_then(|answer| {
        let answer = answer.map_err(|failure| *failure)?;
        if shared.max_result_bytes.is_none() && shared.result_guard.is_none() {
            return Ok(answer);
        }
        let limits = (shared.max_result_bytes, shared.result_guard.as_deref());
        output::check(answer, spec, session, call_id, limits)
    })
}

/// The repair pass: one more try at arguments that failed on their form, by the deterministic
/// rules first (a mechanical slip costs no model round trip), then by the repairer. A repaired
/// text is validated again, whole, and logged; on success the call carries it, and its
/// arguments and the fixes that made it come back. Otherwise the model gets its own arguments'
/// failure, never the repair's.
async fn repair_call(
    tool: &dyn DynTool,
    call: &mut Call,
    failure: Box<Failure>,
    session: &Session,
    shared: &Shared,
) -> Result<(Args, Fixes), Box<Failure>> {
    let spec = tool.spec();
    let by_rules = shared
        .rules
        .as_ref()
        .and_then(|rules| repair::by_rules(rules, spec, &call.arguments, &failure));
    let failure = match by_rules {
        Some(repaired) => {
            let fixes = repaired.fixes();
            let text = repaired.into_text();
            match accept_repair(tool, call, failure, text, ("rules", fixes), session, shared) {
                Ok(args) => return Ok((args, fixes)),
                Err(failure) => failure,
            }
        }
        None => failure,
    };
    let text = match shared.repairer.as_deref() {
        Some(repairer) if repair::repairable(failure.kind) => {
            ask_repairer(repairer, spec, call, &failure, shared).await
        }
        _ => None,
    };
    let Some(text) = text else {
        return Err(failure);
    };
    let model = Fixes::EMPTY.with(Fix::Model);
    let args = accept_repair(tool, call, failure, text, ("model", model), session, shared)?;
    Ok((args, model))
}

/// A repair's text validated again, whole, and logged: on success the call carries it and its
/// arguments come back; otherwise the call's own failure does.
fn accept_repair(
    tool: &dyn DynTool,
    call: &mut Call,
    failure: Box<Failure>,
    text: String,
    by: (&str, Fixes),
    session: &Session,
    shared: &Shared,
) -> Result<Args, Box<Failure>> {
    let args = tool.validated(&text, session, shared);
    let result = if args.is_ok() {
        "repaired"
    } else {
        "still invalid"
    };
    repair::log(tool.spec().name(), &call.id, failure.kind, by, result);
    let args = args.map_err(|_| failure)?;
    call.arguments = text;
    Ok(args)
}

/// The repair stage's question: the repairer's corrected text, or `None` (logged) when it gave
/// up, timed out or panicked.
async fn ask_repairer(
    repairer: &dyn Repairer,
    spec: &ToolSpec,
    call: &Call,
    failure: &Failure,
    shared: &Shared,
) -> Option<String> {
    let request = RepairRequest {
        spec,
        call_id: &call.id,
        arguments: &call.arguments,
        failure,
    };
    match repair::ask(repairer, &request, &shared.env.clock, shared.repair_timeout).await {
        Ok(text) => Some(text),
        Err(why) => {
            let model = ("model", Fixes::EMPTY.with(Fix::Model));
            repair::log(spec.name(), &call.id, failure.kind, model, why);
            None
        }
    }
}

/// What one attempt sees of the call.
fn invocation<'a>(
    spec: &'a ToolSpec,
    call: &'a Call,
    key: Option<&'a IdempotencyKey>,
    session: &'a Session,
    shared: &'a Shared,
    info: AttemptInfo,
) -> Invocation<'a> {
    Invocation {
        call_id: &call.id,
        tool: &spec.name,
        session,
        key,
        attempt: info.number,
        deadline: info.deadline,
        attempt_deadline: info.attempt_deadline,
        state: &shared.state,
        clock: &shared.env.clock,
        progress: call.progress.as_ref(),
    }
}

/// `schema_mismatch` with every field-rule violation, and the schema to fix them by.
#[cold]
fn field_failure(
    violations: Vec<crate::outcome::Violation>,
    schema: &Arc<crate::outcome::ToolSchema>,
) -> Failure {
    let mut failure = Failure::new(ErrorKind::SchemaMismatch, summarize(&violations));
    failure.violations = violations;
    failure.expected_schema = Some(Arc::clone(schema));
    failure
}

fn guard_scopes(spec: &ToolSpec, session: &Session) -> Result<(), Box<Failure>> {
    crate::guard::scopes(spec, session)
}

/// The idempotency stage's begin for a side-effecting call: the key in the session's mode
/// and scope, held for the call's whole deadline (and its approval, when it needs one).
async fn begin(
    spec: &ToolSpec,
    guard: &Bounds,
    call: &Call,
    session: &Session,
    shared: &Shared,
) -> Result<Lease, Outcome> {
    let mode = session.key_mode().unwrap_or(shared.key_mode);
    let fingerprint = Fingerprint::for_tool(spec, &call.arguments);
    let key = mode.key(&session.call_scope(), spec.name(), &call.id, &fingerprint);
    let mut hold = guard.deadline();
    if spec.requires_approval() {
        hold += shared.approval_timeout;
    }
    idempotency::begin_call(
        &*shared.store,
        key,
        fingerprint,
        (&call.id, &spec.name),
        hold,
    )
    .await
}

/// The approval stage: the session's approver decides this exact call.
async fn approve(
    spec: &ToolSpec,
    call: &Call,
    session: &Session,
    shared: &Shared,
) -> Result<(), Refusal> {
    let request = ApprovalRequest {
        conversation: session.id(),
        principal: session.principal(),
        scopes: session.scopes(),
        tool: spec.name(),
        call_id: &call.id,
        arguments: &call.arguments,
        redacted: observe::redacted(&call.arguments, spec.input_schema(), spec.fields()),
        fingerprint: Fingerprint::for_tool(spec, &call.arguments),
    };
    approval::review(
        session.approver(),
        &request,
        &shared.env.clock,
        shared.approval_timeout,
    )
    .await
}

/// The outcome of a call that was not approved: `approval_denied`, or `pending` with the
/// ticket as its data. Its idempotency key, begun for nothing, is released.
#[cold]
async fn not_approved(
    (spec, stats): (&ToolSpec, &ToolStats),
    call: Call,
    lease: Option<Box<Lease>>,
    refusal: Refusal,
    session: &Session,
    shared: &Shared,
) -> Outcome {
    if let Some(lease) = lease {
        if let Err(e) = shared.store.release(&lease).await {
            tracing::warn!(target: "toolwright::idempotency", tool = spec.name(), error = %e, "the key of a call that was not approved could not be released; its lock will expire");
        }
    }
    let ticket = match refusal {
        Refusal::Denied(failure) => return rejected((spec, stats), call, failure, session, shared),
        Refusal::Pending(ticket) => ticket,
    };
    let data = serde_json::value::to_raw_value(&serde_json::json!({ "ticket": ticket }))
        .unwrap_or_else(|_| serde_json::value::RawValue::NULL.to_owned());
    let mut outcome = Outcome::success(call.id, Arc::clone(&spec.name), Status::Pending, data);
    outcome.attempts = 0;
    outcome.elapsed = call.arrived.elapsed();
    observe::call(&outcome, None, None, Some(spec), shared.argument_log);
    stats.record(&outcome, false);
    outcome
}

/// A call refused before anything ran: a validation or guard failure.
#[cold]
fn rejected(
    (spec, stats): (&ToolSpec, &ToolStats),
    call: Call,
    mut failure: Failure,
    session: &Session,
    shared: &Shared,
) -> Outcome {
    // No `#[arg(sensitive)]` value is quoted back to the model.
    checks::redact_failure(&mut failure, spec.fields(), &call.arguments);
    let mut outcome = Outcome::failed(call.id, Arc::clone(&spec.name), failure);
    outcome.attempts = 1;
    outcome.elapsed = call.arrived.elapsed();
    finalize(
        Some((spec, stats)),
        outcome,
        call.arguments,
        None,
        session,
        shared,
    )
}

/// The application's [`CallGuard`](crate::guard::policy::CallGuard) on a validated call.
#[cold]
fn policy(
    guard: &dyn crate::guard::policy::CallGuard,
    spec: &ToolSpec,
    session: &Session,
    call: &Call,
) -> Result<(), Box<Failure>> {
    let check = crate::guard::policy::CallCheck {
        tool: spec,
        session,
        call_id: &call.id,
        arguments: &call.arguments,
    };
    guard.check(&check).map_err(|e| Box::new(e.into_failure()))
}

/// A call the idempotency store answered: a replay, or a refusal (`duplicate_in_flight`,
/// `idempotency_mismatch`, the store unreachable).
#[cold]
fn answered_by_store(
    tool: (&ToolSpec, &ToolStats),
    call: Call,
    mut outcome: Outcome,
    session: &Session,
    shared: &Shared,
) -> Outcome {
    outcome.elapsed = call.arrived.elapsed();
    finalize(Some(tool), outcome, call.arguments, None, session, shared)
}

/// The interpretation seam's result as the call's outcome: its data or failure, its attempts,
/// and how long it took. `degraded`: the fallback answered, for this failure.
fn conclude(
    spec: &ToolSpec,
    id: String,
    arrived: Instant,
    executed: Executed<Interpreted>,
    degraded: Option<ErrorKind>,
) -> Outcome {
    let Executed {
        result,
        mut history,
        stop,
        open_since,
        ..
    } = executed;
    let name = Arc::clone(&spec.name);
    let mut outcome = match result {
        Ok((status, data)) => Outcome::success(id, name, status, data),
        Err(failure) => Outcome::failed_boxed(id, name, failure),
    };
    let finished = Instant::now();
    if let Some(begin) = open_since {
        history.close(finished.saturating_duration_since(begin));
    }
    outcome.attempts = u16::try_from(history.as_slice().len()).unwrap_or(u16::MAX);
    outcome.history = history.into_kept();
    outcome.retry_stop = stop;
    outcome.elapsed = finished.saturating_duration_since(arrived);
    if outcome.failure.is_none() {
        outcome.degraded = degraded;
        if spec.returns_content && degraded.is_none() {
            outcome.marks.set(Marks::CONTENT);
        }
    }
    outcome
}

/// The one end of every call: the ids a successful result carries are remembered, the model's
/// recovery budget counts the outcome, the tool's stats count it, the call is logged, a call
/// that failed validation is quarantined, and a failed call keeps its raw arguments (never in
/// the envelope, never logged).
pub(crate) fn finalize(
    tool: Option<(&ToolSpec, &ToolStats)>,
    mut outcome: Outcome,
    arguments: String,
    key: Option<&IdempotencyKey>,
    session: &Session,
    shared: &Shared,
) -> Outcome {
    let spec = tool.map(|(spec, _)| spec);
    // A model retry: this success clears failures of the tool the conversation remembered.
    let mut model_retry = false;
    if let Some(memory) = session.memory() {
        if let (Some(spec), Some(data)) = (spec, outcome.data.as_deref()) {
            if !spec.grounds().is_empty() && outcome.is_ok() {
                provenance::remember(spec.grounds(), data, memory);
            }
        }
        model_retry = recovery::apply(&shared.recovery, memory, &mut outcome);
    }
    match tool {
        Some((spec, stats)) => {
            stats.record(&outcome, model_retry);
            if outcome.failure.is_some() {
                shared.quarantine.keep(spec, &outcome, &arguments);
            }
        }
        None => {
            shared
                .unknown_calls
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
    }
    observe::call(&outcome, key, Some(&arguments), spec, shared.argument_log);
    if outcome.failure.is_some() && !outcome.is_replayed() {
        outcome.raw_arguments = Some(arguments);
    }
    outcome
}

/// The default of [`Shared::finders`]: every kind a tool grounds, and the tools that do.
pub(crate) fn finders(specs: &[ToolSpec]) -> Finders {
    let mut finders: HashMap<&'static str, Vec<Arc<str>>> = HashMap::new();
    for spec in specs {
        for grounds in spec.grounds() {
            let tools = finders.entry(grounds.kind()).or_default();
            if !tools.contains(&spec.name) {
                tools.push(Arc::clone(&spec.name));
            }
        }
    }
    finders
}

#[cfg(test)]
mod size;
