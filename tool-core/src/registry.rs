//! The [`Registry`]: the table of tools a model may call, and its builder. Every call runs
//! through the same stages, in order: scopes, validation, guard rails, execution, interpretation.
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
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::watch;

use futures_util::future::Either;
use tokio::time::Instant;

use crate::call::{Session, StateMap, ToolCall};
use crate::conversation::RecoveryBudget;
use crate::conversation::{Decision, TicketState};
use crate::execute::clock::ClockHandle;
use crate::execute::random::RandomHandle;
use crate::execute::{
    BreakerHandle, BreakerPolicy, Clock, Env, Guard, RandomSource, RetryBudget, RetryPolicy,
    Settings,
};
use crate::guard;
use crate::guard::approval::{Approvals, DecideError};
use crate::guard::output::ResultGuard;
use crate::guard::policy::CallGuard;
use crate::idempotency::Fingerprint;
use crate::idempotency::{IdempotencyStore, KeyMode, MemoryStore};
use crate::observe::{ArgumentLog, Quarantine, QuarantinePolicy, Stats};
use crate::outcome::{ErrorKind, Failure, Outcome};
use crate::pipeline::{self, Call, DynTool, Shared};
use crate::tool::{Tool, ToolSpec};
use crate::validate as checks;
use crate::validate::preview_str;
use crate::validate::repair::{DeterministicRepair, Repairer};

/// How long a repairer may take by default.
pub const DEFAULT_REPAIR_TIMEOUT: Duration = Duration::from_secs(10);

/// How long an approver may take to decide by default: long enough for a person who is
/// looking, short enough that a forgotten call does not hold its idempotency key for hours.
/// An approver that must wait longer answers `pending` and decides the re-sent call.
pub const DEFAULT_APPROVAL_TIMEOUT: Duration = Duration::from_secs(300);

/// The per-attempt timeout of tools that declare none.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// Tool names are a small fixed set chosen by the application; the model only looks them up, so
/// a fast non-cryptographic hash is safe here (SipHash was a visible share of a call's cost).
type ToolMap = HashMap<Arc<str>, Slot, foldhash::fast::RandomState>;

/// Whether a session is shown a tool: [`RegistryBuilder::visible_when`].
type ShownTo = Arc<dyn Fn(&Session) -> bool + Send + Sync>;

/// Whether a session is shown a tool, for every tool: [`RegistryBuilder::tool_filter`].
type Filter = Arc<dyn Fn(&ToolSpec, &Session) -> bool + Send + Sync>;

/// A tool in the table, and who may see it beyond its scopes. A tool that stays through a
/// change keeps its `Arc` (its breaker, budget and stats) in the new table.
#[derive(Clone)]
struct Slot {
    tool: Arc<dyn DynTool>,
    shown_to: Option<ShownTo>,
}

/// One version of the tool table: what a call looks its tool up in.
struct Table {
    tools: ToolMap,
    specs: Vec<ToolSpec>,
    names: Arc<[String]>,
}

impl Table {
    fn new(tools: ToolMap) -> Table {
        let mut specs: Vec<ToolSpec> = tools.values().map(|t| t.tool.spec().clone()).collect();
        specs.sort_by(|a, b| a.name.cmp(&b.name));
        let names = specs.iter().map(|s| s.name.to_string()).collect();
        Table {
            tools,
            specs,
            names,
        }
    }
}

/// What adding a tool to a built registry needs: the builder's settings.
struct Making {
    settings: Settings,
    breakers: HashMap<String, BreakerPolicy>,
    origin: Instant,
}

struct Inner {
    /// Every version of the tool table; the one in use is at `current`. Old versions stay (a
    /// map and the specs; the tools are shared), so a call borrows the table it started with
    /// for as long as it runs, without a lock or a reference count.
    tables: boxcar::Vec<Table>,
    current: AtomicUsize,
    filter: Option<Filter>,
    shared: Shared,
    /// Held while a change is made, so changes apply one at a time.
    making: Mutex<Making>,
    changed: watch::Sender<u64>,
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
        &self.table().specs
    }

    /// The specs of the tools `session` is shown, in name order: what
    /// [`Registry::export_for`] exports. A tool is shown when the session holds every scope it
    /// declares, its [`visible_when`](RegistryBuilder::visible_when) predicate (if any) says
    /// yes, and so does the registry's [`tool_filter`](RegistryBuilder::tool_filter).
    pub fn specs_for<'a>(&'a self, session: &'a Session) -> impl Iterator<Item = &'a ToolSpec> {
        let table = self.table();
        table.specs.iter().filter(move |spec| {
            table
                .tools
                .get(spec.name())
                .is_some_and(|slot| self.shows(slot, session))
        })
    }

    /// Whether `session` is shown the tool `name` (see [`Registry::specs_for`]); `false` for a
    /// name the registry does not have.
    ///
    /// ```
    /// # use toolwright_core::{Registry, Session};
    /// let registry = Registry::builder().build().unwrap();
    /// assert!(!registry.is_visible("refund_order", &Session::new("conv-1")));
    /// ```
    pub fn is_visible(&self, name: &str, session: &Session) -> bool {
        self.table()
            .tools
            .get(name)
            .is_some_and(|slot| self.shows(slot, session))
    }

    /// Whether `session` is shown the tool in `slot`: its scopes, then the predicates.
    fn shows(&self, slot: &Slot, session: &Session) -> bool {
        guard::visible(slot.tool.spec(), session) && self.shown(slot, session)
    }

    /// The tool table in use now.
    #[inline]
    fn table(&self) -> &Table {
        // Every index stored in `current` is of a table already pushed, and tables are never
        // removed.
        &self.inner.tables[self.inner.current.load(Ordering::Acquire)]
    }

    /// Whether the predicates (not the scopes) let `session` see the tool.
    #[inline]
    fn shown(&self, slot: &Slot, session: &Session) -> bool {
        slot.shown_to.as_ref().is_none_or(|shown| shown(session))
            && self
                .inner
                .filter
                .as_ref()
                .is_none_or(|filter| filter(slot.tool.spec(), session))
    }

    /// One tool's spec.
    pub fn spec(&self, name: &str) -> Option<&ToolSpec> {
        self.table().tools.get(name).map(|t| t.tool.spec())
    }

    #[cfg(test)]
    pub(crate) fn shared_for_tests(&self) -> &Shared {
        &self.inner.shared
    }

    /// The tool names, sorted.
    pub fn names(&self) -> &[String] {
        &self.table().names
    }

    /// One tool's circuit breaker: its state and stats, and the manual
    /// [`force_open`](BreakerHandle::force_open) and [`reset`](BreakerHandle::reset).
    pub fn breaker(&self, name: &str) -> Option<BreakerHandle> {
        self.table().tools.get(name).map(|t| BreakerHandle {
            breaker: Arc::clone(t.tool.guard().breaker()),
            clock: self.inner.shared.env.clock.clone(),
        })
    }

    /// Every tool's stats so far (sorted by name): calls by status and `error_type`, retries,
    /// repairs, the recovery-required rate, fallbacks, replays, the breaker, latency
    /// percentiles. Serializable; its `Display` is a compact table. See
    /// [`observe::Stats`](crate::observe::Stats).
    ///
    /// ```
    /// # use toolwright_core::{Registry, ToolCall};
    /// # async fn demo() {
    /// let registry = Registry::builder().build().unwrap();
    /// registry.call(ToolCall::new("c1", "no_such_tool", "{}")).await;
    /// assert_eq!(registry.stats().unknown_tool_calls, 1);
    /// # }
    /// ```
    pub fn stats(&self) -> Stats {
        let table = self.table();
        let tools = table
            .specs
            .iter()
            .filter_map(|spec| {
                let slot = table.tools.get(spec.name())?;
                let breaker = self.breaker(spec.name());
                Some(slot.tool.stats().snapshot(spec.name(), breaker.as_ref()))
            })
            .collect();
        let unknown = self
            .inner
            .shared
            .unknown_calls
            .load(std::sync::atomic::Ordering::Relaxed);
        Stats::new(tools, unknown)
    }

    /// The argument text of calls that failed validation, kept (redacted unless the
    /// application opted in to raw text) within the bounds of
    /// [`RegistryBuilder::quarantine`]. Never logged; this is the only way to it.
    ///
    /// ```
    /// # use toolwright_core::Registry;
    /// let registry = Registry::builder().build().unwrap();
    /// for entry in registry.quarantine().entries() {
    ///     println!("{} {} {}: {}", entry.tool, entry.call_id, entry.error_type, entry.text);
    /// }
    /// ```
    pub fn quarantine(&self) -> &Quarantine {
        &self.inner.shared.quarantine
    }

    /// Runs a call outside any conversation ([`Session::anonymous`]): nothing is remembered
    /// between calls, and a side-effecting call's idempotency key is the call's own. Never fails
    /// and never panics: every problem is a classified [`Outcome`].
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
        let shared = &self.inner.shared;
        match self.table().tools.get(name.as_str()) {
            // A tool a predicate hides from this session does not exist for it. (One it lacks
            // a scope for is `unauthorized`, decided by the pipeline before the arguments.)
            Some(slot) if self.shown(slot, session) => Either::Left(slot.tool.dispatch(
                Call::new(id, arguments),
                session,
                shared,
            )),
            _ if session.store().is_some() => Either::Right(Either::Right(
                self.unknown_tool_durable(id, name, arguments, session),
            )),
            _ => Either::Right(Either::Left(std::future::ready(
                self.unknown_tool(id, name, arguments, session),
            ))),
        }
    }

    /// `unknown_tool` in a session whose conversation lives in a store: counted there, so the
    /// model's budget for invented names spans replicas.
    #[cold]
    fn unknown_tool_durable<'a>(
        &'a self,
        id: String,
        name: String,
        arguments: String,
        session: &'a Session,
    ) -> pipeline::BoxFuture<'a, Outcome> {
        Box::pin(async move {
            let overlay = Arc::new(crate::conversation::durable::Overlay::default());
            let in_call = session.in_call(overlay.clone());
            let mut outcome = self.unknown_tool(id, name, arguments, &in_call);
            if let Some(store) = session.store() {
                let budget = &self.inner.shared.recovery;
                crate::conversation::durable::settle(
                    &**store,
                    session.id(),
                    &overlay,
                    budget,
                    false,
                    &mut outcome,
                )
                .await;
            }
            outcome
        })
    }

    /// Approves a waiting call with edited arguments, as a reviewer corrected them: the
    /// arguments are checked again, whole, as the tool would check them in the ticket's
    /// conversation (grounded ids included), and the approval binds to their fingerprint. The
    /// model's next proposal of the original call runs the edited one instead, once.
    ///
    /// `Err(DecideError::Invalid)` carries the failure with every violation and its path, for
    /// the review page to show next to the field; nothing is decided then.
    ///
    /// ```no_run
    /// # use toolwright_core::{Registry, guard::approval::Approvals};
    /// # async fn demo(registry: &Registry, approvals: &Approvals) {
    /// match registry.approve_with(approvals, "t17-0a1b2c3d", r#"{"order_id":"A1","amount":20}"#).await {
    ///     Ok(()) => println!("approved with the new amount"),
    ///     Err(e) => println!("not approved: {e}"),
    /// }
    /// # }
    /// ```
    pub async fn approve_with(
        &self,
        approvals: &Approvals,
        ticket: &str,
        arguments: &str,
    ) -> Result<(), DecideError> {
        let found = approvals
            .ticket(ticket)
            .await?
            .ok_or(DecideError::UnknownTicket)?;
        if found.state != TicketState::Waiting {
            return Err(DecideError::AlreadyDecided(found.state));
        }
        let table = self.table();
        let Some(slot) = table.tools.get(found.tool.as_str()) else {
            return Err(DecideError::UnknownTicket);
        };
        let tool = &slot.tool;
        let mut session =
            Session::new(found.conversation.clone()).with_store(Arc::clone(approvals.store()));
        if let Some(principal) = &found.principal {
            session = session.with_principal(principal.clone());
        }
        let shared = &self.inner.shared;
        let checked = checks::check_size(arguments, shared.max_argument_bytes)
            .map_err(|f| Outcome::failed(String::new(), Arc::clone(&tool.spec().name), f));
        if let Err(outcome) = checked {
            return Err(DecideError::Invalid(Box::new(outcome)));
        }
        if let Err(outcome) = tool.revalidate(arguments, &session, shared).await {
            return Err(DecideError::Invalid(Box::new(outcome)));
        }
        let spec = tool.spec();
        let decision = Decision::ApproveWith {
            arguments: arguments.to_owned(),
            fingerprint: Fingerprint::for_tool(spec, arguments).to_string(),
            redacted: crate::observe::redacted(arguments, spec.input_schema(), spec.fields()),
        };
        approvals.decide(ticket, &decision).await
    }

    /// `unknown_tool`, listing the tools this session is shown (and no others).
    #[cold]
    fn unknown_tool(
        &self,
        call_id: String,
        name: String,
        arguments: String,
        session: &Session,
    ) -> Outcome {
        let shown = if name.chars().count() <= 64 {
            format!("'{name}'")
        } else {
            preview_str(&name)
        };
        let mut failure = Failure::new(
            ErrorKind::UnknownTool,
            format!("{shown} is not an available tool; call one of available_tools instead"),
        );
        let visible: Vec<&ToolSpec> = self.specs_for(session).collect();
        failure.available_tools = Some(if visible.len() == self.table().specs.len() {
            Arc::clone(&self.table().names)
        } else {
            visible.iter().map(|s| s.name().to_owned()).collect()
        });
        let outcome = Outcome::failed(call_id, Arc::from(name), failure);
        // No tool, so no field is known: the arguments are never logged.
        pipeline::finalize(None, outcome, arguments, None, session, &self.inner.shared)
    }
}

impl fmt::Debug for Registry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Registry")
            .field("tools", &self.table().names)
            .finish()
    }
}

/// Makes a tool under its registered name (its own, or prefixed by [`RegistryBuilder::prefixed`]).
type Pending =
    Box<dyn FnOnce(Arc<str>, &Settings, BreakerPolicy, Instant) -> Box<dyn DynTool> + Send>;

/// Builds a [`Registry`]: tools, shared state, defaults.
///
/// ```
/// # use toolwright_core::Registry;
/// # use std::time::Duration;
/// let registry = Registry::builder().default_timeout(Duration::from_secs(5)).build().unwrap();
/// assert!(registry.specs().is_empty());
/// ```
pub struct RegistryBuilder {
    /// Each tool's registered name (prefix included), its prefix's length, and its maker.
    pending: Vec<(String, usize, Pending)>,
    /// The prefix of tools added now (inside [`RegistryBuilder::prefixed`]).
    prefix: String,
    shown_to: HashMap<String, ShownTo>,
    filter: Option<Filter>,
    state: StateMap,
    settings: Settings,
    breakers: HashMap<String, BreakerPolicy>,
    env: Env,
    store: Option<Arc<dyn IdempotencyStore>>,
    key_mode: KeyMode,
    argument_log: ArgumentLog,
    recovery: RecoveryBudget,
    repairer: Option<Arc<dyn Repairer>>,
    rules: Option<DeterministicRepair>,
    repair_timeout: Duration,
    approval_timeout: Duration,
    max_argument_bytes: usize,
    quarantine: QuarantinePolicy,
    max_result_bytes: Option<usize>,
    result_guard: Option<Arc<dyn ResultGuard>>,
    call_guard: Option<Arc<dyn CallGuard>>,
}

impl Default for RegistryBuilder {
    fn default() -> Self {
        RegistryBuilder {
            pending: Vec::new(),
            prefix: String::new(),
            shown_to: HashMap::new(),
            filter: None,
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
            rules: None,
            repair_timeout: DEFAULT_REPAIR_TIMEOUT,
            approval_timeout: DEFAULT_APPROVAL_TIMEOUT,
            max_argument_bytes: crate::validate::DEFAULT_MAX_ARGUMENT_BYTES,
            quarantine: QuarantinePolicy::new(),
            max_result_bytes: None,
            result_guard: None,
            call_guard: None,
        }
    }
}

impl RegistryBuilder {
    /// Adds a tool. Two tools with one name make [`RegistryBuilder::build`] fail.
    pub fn tool<T: Tool>(mut self, tool: T) -> Self {
        let name = format!("{}{}", self.prefix, T::META.name);
        self.pending
            .push((name, self.prefix.len(), pending_tool(tool)));
        self
    }

    /// Adds a tool defined at run time ([`DynamicTool`](crate::dynamic::DynamicTool)). It runs
    /// through the same pipeline as a `#[tool]`; two tools with one name make
    /// [`RegistryBuilder::build`] fail.
    pub fn dynamic_tool(mut self, tool: crate::dynamic::DynamicTool) -> Self {
        let name = format!("{}{}", self.prefix, tool.meta_name());
        self.pending
            .push((name, self.prefix.len(), pending_dynamic(tool)));
        self
    }

    /// Adds every tool of a [`Toolset`] (an `impl` block with `#[toolset]`), each bound to the
    /// one instance `set`, shared behind an `Arc` (never copied per tool or per call).
    pub fn toolset<S: Toolset>(self, set: S) -> Self {
        S::register(Arc::new(set), self)
    }

    /// As [`RegistryBuilder::toolset`], for an instance the application also keeps a handle to.
    pub fn toolset_shared<S: Toolset>(self, set: Arc<S>) -> Self {
        S::register(set, self)
    }

    /// Adds the tools `group` adds under a name prefix: two toolsets that both have a `search`
    /// tool can live in one registry as `crm_search` and `docs_search`. The prefix is part of
    /// the tool's name everywhere: exports, calls, outcomes, logs, stats, and
    /// [`breaker_for`](RegistryBuilder::breaker_for) / [`visible_when`](RegistryBuilder::visible_when).
    /// Prefixes nest. Names that still clash make [`build`](RegistryBuilder::build) fail with
    /// [`BuildError::DuplicateTool`], and a prefix some provider would refuse (a character other
    /// than ASCII letters, digits, `_` and `-`, or a name longer than 64 characters) with
    /// [`BuildError::InvalidName`].
    ///
    /// ```
    /// # use toolwright_core::{Effect, Registry, dynamic::DynamicTool};
    /// # use serde_json::json;
    /// let search = |about: &str| {
    ///     DynamicTool::builder("search")
    ///         .description(format!("Searches {about}."))
    ///         .input_schema(json!({"type": "object", "properties": {}}))
    ///         .effect(Effect::ReadOnly)
    ///         .handler(|_args, _ctx| async { Ok(json!([])) })
    ///         .build()
    ///         .unwrap()
    /// };
    /// let registry = Registry::builder()
    ///     .prefixed("crm_", |b| b.dynamic_tool(search("customers")))
    ///     .prefixed("docs_", |b| b.dynamic_tool(search("the manual")))
    ///     .build()
    ///     .unwrap();
    /// assert_eq!(registry.names(), ["crm_search", "docs_search"]);
    /// ```
    pub fn prefixed(mut self, prefix: &str, group: impl FnOnce(Self) -> Self) -> Self {
        let outer = self.prefix.len();
        self.prefix.push_str(prefix);
        let mut builder = group(self);
        builder.prefix.truncate(outer);
        builder
    }

    /// Shows the tool `name` only to sessions for which `predicate` holds (beyond its scopes):
    /// tools for some users, some plans, some stages of a conversation. A hidden tool is left
    /// out of [`Registry::specs_for`] and every per-session export, and calling it is
    /// `unknown_tool` listing only the tools the session is shown, exactly as for a name that
    /// does not exist. The predicate runs on every call of the tool and every listing, so keep
    /// it cheap (a lookup in the session, not a database query). A name the registry does not
    /// have makes [`build`](RegistryBuilder::build) fail.
    ///
    /// A tool whose *scopes* the session lacks is also left out of listings, but calling it is
    /// `unauthorized` (not `unknown_tool`): the model was told of it in another session, or
    /// guessed it, and is told plainly it may not.
    ///
    /// ```
    /// # use toolwright_core::{Registry, Session, dynamic::DynamicTool};
    /// # use serde_json::json;
    /// let refund = DynamicTool::builder("refund_order")
    ///     .description("Refunds an order.")
    ///     .input_schema(json!({"type": "object", "properties": {}}))
    ///     .handler(|_args, _ctx| async { Ok(json!("refunded")) })
    ///     .build()
    ///     .unwrap();
    /// let registry = Registry::builder()
    ///     .dynamic_tool(refund)
    ///     .visible_when("refund_order", |s| s.principal().is_some_and(|p| p.starts_with("staff:")))
    ///     .build()
    ///     .unwrap();
    /// assert!(registry.is_visible("refund_order", &Session::new("c1").with_principal("staff:bo")));
    /// assert!(!registry.is_visible("refund_order", &Session::new("c2").with_principal("user:al")));
    /// ```
    pub fn visible_when(
        mut self,
        name: impl Into<String>,
        predicate: impl Fn(&Session) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.shown_to.insert(name.into(), Arc::new(predicate));
        self
    }

    /// One predicate over every tool and session (the "active tools" of a conversation): a
    /// tool is shown to a session only if it holds. Hidden tools behave as with
    /// [`visible_when`](RegistryBuilder::visible_when). Cheap checks only: it runs on every call.
    ///
    /// ```
    /// # use toolwright_core::{Registry, Session};
    /// // Read-only tools for anonymous sessions, everything for signed-in ones.
    /// let registry = Registry::builder()
    ///     .tool_filter(|spec, session| session.principal().is_some() || spec.read_only())
    ///     .build()
    ///     .unwrap();
    /// # let _ = registry;
    /// ```
    pub fn tool_filter(
        mut self,
        filter: impl Fn(&ToolSpec, &Session) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.filter = Some(Arc::new(filter));
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
    /// Only with the non-default `unguarded-for-benchmarks` feature.
    #[cfg(feature = "unguarded-for-benchmarks")]
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
    /// events are described in the [`observe`](crate::observe) module.
    pub fn log_arguments(mut self, mode: ArgumentLog) -> Self {
        self.argument_log = mode;
        self
    }

    /// How many times in a row a model may retry a tool after each kind of failure, in one
    /// conversation, before the envelope tells it to stop (default: [`RecoveryBudget::new`]:
    /// 2 after a schema violation, 1 after an unknown tool or a semantic failure, 0 while a
    /// breaker is open). See [`recovery`](crate::conversation::recovery).
    pub fn recovery_budget(mut self, budget: RecoveryBudget) -> Self {
        self.recovery = budget;
        self
    }

    /// One more try at arguments that fail on their form (`invalid_json`, `unknown_argument`,
    /// `schema_mismatch`) before the call fails: the [`repair`](crate::validate::repair) pass. Off by
    /// default.
    pub fn repairer(mut self, repairer: impl Repairer) -> Self {
        self.repairer = Some(Arc::new(repairer));
        self
    }

    /// Deterministic repair of mechanical slips (a code fence, a trailing comma, `"2"` for an
    /// integer, ...) before any repairer: the [`DeterministicRepair`] rules, each switchable,
    /// using only the text and the tool's input schema. Off by default. When a rule applies,
    /// the result is validated again, whole; if it passes, the call runs with it and the
    /// envelope says `"repaired": true, "repaired_by": [...]` with the rules' names; if not,
    /// the [`repairer`](RegistryBuilder::repairer) (if any) gets the model's original
    /// arguments, and without one the model gets its own arguments' failure.
    ///
    /// ```
    /// use toolwright_core::validate::repair::{DeterministicRepair, Fix};
    /// use toolwright_core::Registry;
    ///
    /// let registry = Registry::builder()
    ///     .deterministic_repair(DeterministicRepair::default().rule(Fix::SingleQuotes, false))
    ///     .build()
    ///     .unwrap();
    /// # let _ = registry;
    /// ```
    pub fn deterministic_repair(mut self, rules: DeterministicRepair) -> Self {
        self.rules = Some(rules);
        self
    }

    /// How long the repairer may take (default 10 s); past it, the call fails as if there were
    /// no repairer.
    pub fn repair_timeout(mut self, timeout: Duration) -> Self {
        self.repair_timeout = timeout;
        self
    }

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

    /// The bounds of the quarantine, where the argument text of calls that failed validation
    /// is kept, redacted unless the policy says [`raw_text`](QuarantinePolicy::raw_text)
    /// (default: 1,000 entries, 1 MiB, one hour; see [`Registry::quarantine`]).
    ///
    /// ```
    /// # use toolwright_core::{observe::QuarantinePolicy, Registry};
    /// let registry = Registry::builder()
    ///     .quarantine(QuarantinePolicy::new().max_entries(100).raw_text(true))
    ///     .build()
    ///     .unwrap();
    /// # let _ = registry;
    /// ```
    pub fn quarantine(mut self, policy: QuarantinePolicy) -> Self {
        self.quarantine = policy;
        self
    }

    /// How long a session's approver may take to decide a call (default 5 minutes,
    /// [`DEFAULT_APPROVAL_TIMEOUT`]); past it the call is `approval_denied` and nothing runs.
    /// The wait never counts against the tool's timeout or the call's deadline, which start
    /// with the first attempt.
    pub fn approval_timeout(mut self, timeout: Duration) -> Self {
        self.approval_timeout = timeout;
        self
    }

    /// Refuses a tool's result whose JSON text is longer than `bytes`, as `invalid_result`
    /// with `retryable: true` and a message that says the size and the limit and asks for less
    /// (a model's context is finite; one huge answer can crowd out the conversation). No limit
    /// by default.
    pub fn max_result_bytes(mut self, bytes: usize) -> Self {
        self.max_result_bytes = Some(bytes);
        self
    }

    /// Checks every successful result before it becomes the envelope: keep it, replace it (a
    /// redacted copy) or refuse it. See [`guard::output`].
    pub fn result_guard(mut self, guard: impl ResultGuard) -> Self {
        self.result_guard = Some(Arc::new(guard));
        self
    }

    /// Checks every call once its arguments are valid, before approval, the idempotency store
    /// and the tool: a registry-wide policy that refuses with a kind of its own. See
    /// [`guard::policy`].
    pub fn call_guard(mut self, guard: impl CallGuard) -> Self {
        self.call_guard = Some(Arc::new(guard));
        self
    }

    /// Builds the registry; fails on duplicate names and on missing shared state.
    pub fn build(self) -> Result<Registry, BuildError> {
        let mut tools = ToolMap::with_capacity_and_hasher(self.pending.len(), Default::default());
        let origin = self.env.clock.now();
        let making = Making {
            settings: self.settings,
            breakers: self.breakers,
            origin,
        };
        let mut shown_to = self.shown_to;
        add(
            &mut tools,
            self.pending,
            &mut shown_to,
            &making,
            &self.state,
        )?;
        if let Some(name) = shown_to.into_keys().next() {
            return Err(BuildError::UnknownTool {
                setting: "visible_when",
                name,
            });
        }
        if let Some(name) = making
            .breakers
            .keys()
            .find(|n| !tools.contains_key(n.as_str()))
        {
            return Err(BuildError::UnknownBreakerTool(name.clone()));
        }
        let table = Table::new(tools);
        let shared = Shared {
            finders: std::sync::RwLock::new(Arc::new(pipeline::finders(&table.specs))),
            state: Arc::new(self.state),
            env: self.env,
            store: self
                .store
                .unwrap_or_else(|| Arc::new(MemoryStore::new()) as Arc<dyn IdempotencyStore>),
            key_mode: self.key_mode,
            argument_log: self.argument_log,
            recovery: self.recovery,
            repairer: self.repairer,
            rules: self.rules,
            repair_timeout: self.repair_timeout,
            approval_timeout: self.approval_timeout,
            max_argument_bytes: self.max_argument_bytes,
            quarantine: Quarantine::new(self.quarantine),
            unknown_calls: std::sync::atomic::AtomicU64::new(0),
            max_result_bytes: self.max_result_bytes,
            result_guard: self.result_guard,
            call_guard: self.call_guard,
        };
        let tables = boxcar::Vec::new();
        let first = tables.push(table);
        Ok(Registry {
            inner: Arc::new(Inner {
                tables,
                current: AtomicUsize::new(first),
                filter: self.filter,
                shared,
                making: Mutex::new(making),
                changed: watch::Sender::new(0),
            }),
        })
    }
}

/// Makes the `pending` tools and adds them to `tools`, each with its predicate from `shown_to`:
/// a name already there, an unportable prefix or missing state fails (and adds nothing more).
fn add(
    tools: &mut ToolMap,
    pending: Vec<(String, usize, Pending)>,
    shown_to: &mut HashMap<String, ShownTo>,
    making: &Making,
    state: &StateMap,
) -> Result<(), BuildError> {
    for (name, prefix, make) in pending {
        if tools.contains_key(name.as_str()) {
            return Err(BuildError::DuplicateTool(name));
        }
        if let Some(why) = invalid_prefixed_name(&name, prefix) {
            return Err(BuildError::InvalidName { name, why });
        }
        let breaker = making
            .breakers
            .get(&name)
            .copied()
            .unwrap_or(making.settings.breaker);
        let tool = make(
            Arc::from(name.as_str()),
            &making.settings,
            breaker,
            making.origin,
        );
        if let Some(need) = tool
            .required_state()
            .into_iter()
            .find(|need| !state.contains_key(&need.type_id))
        {
            return Err(BuildError::MissingState {
                tool: name,
                state: need.type_name,
            });
        }
        let shown_to = shown_to.remove(&name);
        tools.insert(
            Arc::clone(&tool.spec().name),
            Slot {
                tool: Arc::from(tool),
                shown_to,
            },
        );
    }
    Ok(())
}

/// A change to the tools of a registry that is serving: tools to add, replace or remove, made
/// with [`Registry::change`]. The whole change applies at once, or (on an error) not at all.
#[derive(Default)]
#[must_use = "a change does nothing until `Registry::change` applies it"]
pub struct Changes {
    pending: Vec<(String, usize, Pending)>,
    removed: Vec<String>,
    shown_to: HashMap<String, ShownTo>,
}

impl Changes {
    /// Adds a `#[tool]`. To replace a tool of the same name, [`remove`](Changes::remove) it in
    /// the same change.
    pub fn tool<T: Tool>(mut self, tool: T) -> Self {
        self.pending
            .push((T::META.name.to_owned(), 0, pending_tool(tool)));
        self
    }

    /// Adds a tool defined at run time ([`DynamicTool`](crate::dynamic::DynamicTool)).
    pub fn dynamic_tool(mut self, tool: crate::dynamic::DynamicTool) -> Self {
        let name = tool.meta_name().to_owned();
        self.pending.push((name, 0, pending_dynamic(tool)));
        self
    }

    /// Removes the tool `name`: new calls of it are `unknown_tool`; calls already running
    /// finish. A name the registry does not have fails the change.
    pub fn remove(mut self, name: impl Into<String>) -> Self {
        self.removed.push(name.into());
        self
    }

    /// Shows the tool `name` (added by this change, or already there) only to sessions for
    /// which `predicate` holds, as [`RegistryBuilder::visible_when`].
    pub fn visible_when(
        mut self,
        name: impl Into<String>,
        predicate: impl Fn(&Session) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.shown_to.insert(name.into(), Arc::new(predicate));
        self
    }
}

impl Registry {
    /// Adds, replaces and removes tools while the registry serves. Calls already running keep
    /// the table they started with and finish; calls that start after this returns see the new
    /// one. A tool that stays keeps its breaker, retry budget, stats and idempotency records; a
    /// replaced tool starts with fresh ones. The change is checked as
    /// [`RegistryBuilder::build`] checks a registry (duplicate names, missing state, unknown
    /// names) and applies whole or not at all. Subscribers ([`Registry::subscribe`]) are told;
    /// the MCP server sends its clients `notifications/tools/list_changed`.
    ///
    /// Changes apply one at a time. Each keeps the previous table (its map and specs, not the
    /// tools) until the registry is dropped, so a call never waits for a lock or counts a
    /// reference: change a registry when its tool set changes (a plugin loaded, a server
    /// connected), not per request.
    ///
    /// ```
    /// # use toolwright_core::{Registry, ToolCall, Status, dynamic::DynamicTool};
    /// # use serde_json::json;
    /// # async fn demo() -> Result<(), toolwright_core::BuildError> {
    /// let registry = Registry::builder().build()?;
    /// let ping = DynamicTool::builder("ping")
    ///     .description("Answers pong.")
    ///     .input_schema(json!({"type": "object", "properties": {}}))
    ///     .handler(|_args, _ctx| async { Ok(json!("pong")) })
    ///     .build()?;
    /// registry.change(|c| c.dynamic_tool(ping))?;
    /// let outcome = registry.call(ToolCall::new("c1", "ping", "{}")).await;
    /// assert_eq!(outcome.status(), Status::Success);
    /// registry.change(|c| c.remove("ping"))?;
    /// assert!(registry.names().is_empty());
    /// # Ok(()) }
    /// ```
    pub fn change(&self, change: impl FnOnce(Changes) -> Changes) -> Result<u64, BuildError> {
        let Changes {
            pending,
            removed,
            mut shown_to,
        } = change(Changes::default());
        let making = self
            .inner
            .making
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let mut tools = self.table().tools.clone();
        for name in removed {
            if tools.remove(name.as_str()).is_none() {
                return Err(BuildError::UnknownTool {
                    setting: "remove",
                    name,
                });
            }
        }
        add(
            &mut tools,
            pending,
            &mut shown_to,
            &making,
            &self.inner.shared.state,
        )?;
        for (name, predicate) in shown_to {
            match tools.get_mut(name.as_str()) {
                Some(slot) => slot.shown_to = Some(predicate),
                None => {
                    return Err(BuildError::UnknownTool {
                        setting: "visible_when",
                        name,
                    })
                }
            }
        }
        let table = Table::new(tools);
        *self
            .inner
            .shared
            .finders
            .write()
            .unwrap_or_else(PoisonError::into_inner) = Arc::new(pipeline::finders(&table.specs));
        let index = self.inner.tables.push(table);
        self.inner.current.store(index, Ordering::Release);
        let version = index as u64;
        self.inner.changed.send_replace(version);
        drop(making);
        Ok(version)
    }

    /// The version of the tool set: 0 when built, one more after each
    /// [`change`](Registry::change).
    pub fn version(&self) -> u64 {
        self.inner.current.load(Ordering::Acquire) as u64
    }

    /// A receiver that sees the version change after each [`change`](Registry::change) (a
    /// `tokio::sync::watch` channel: `changed().await`, then list the tools again).
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.inner.changed.subscribe()
    }
}

/// The maker of a `#[tool]`.
fn pending_tool<T: Tool>(tool: T) -> Pending {
    Box::new(move |name, settings, breaker, origin| {
        let mut spec = ToolSpec::of::<T>(settings.default_timeout);
        spec.name = name;
        let guard = Guard::new(
            Arc::clone(&spec.name),
            spec.timeout,
            spec.retries(),
            spec.idempotent() || spec.takes_idempotency_key(),
            settings,
            breaker,
            origin,
        );
        pipeline::entry(tool, spec, guard)
    })
}

/// The maker of a tool defined at run time.
fn pending_dynamic(tool: crate::dynamic::DynamicTool) -> Pending {
    Box::new(move |name, settings, breaker, origin| {
        let mut spec = tool.spec(settings.default_timeout);
        spec.name = name;
        let guard = Guard::new(
            Arc::clone(&spec.name),
            spec.timeout,
            spec.retries(),
            spec.idempotent() || spec.takes_idempotency_key(),
            settings,
            breaker,
            origin,
        );
        let (body, shape) = tool.into_parts();
        pipeline::entry_with(body, spec, shape, guard)
    })
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
    /// A builder setting (`setting`, such as `visible_when`) names a tool the registry does
    /// not have.
    UnknownTool {
        /// The builder method.
        setting: &'static str,
        /// The name it was given.
        name: String,
    },
    /// A tool's registered name (with its [`prefixed`](RegistryBuilder::prefixed) prefix)
    /// is one some provider refuses.
    InvalidName {
        /// The name.
        name: String,
        /// What is wrong with it.
        why: &'static str,
    },
    /// A tool defined at run time has no handler.
    MissingHandler(String),
    /// A tool defined at run time has a schema that is not a valid JSON Schema (draft 2020-12)
    /// object schema.
    InvalidSchema {
        /// The tool.
        tool: String,
        /// JSON Pointer into the schema (`output/..` for the output schema).
        path: String,
        /// What is wrong there.
        message: String,
    },
    /// A tool defined at run time has a schema a provider it targets cannot express.
    Unexpressible {
        /// The tool.
        tool: String,
        /// The provider.
        provider: crate::providers::Provider,
        /// JSON Pointer into the exported schema, of the first problem.
        path: String,
        /// Every problem, as the export reports them.
        message: String,
    },
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
            BuildError::UnknownTool { setting, name } => write!(
                f,
                "`{setting}(\"{name}\", ..)` names no registered tool; check the tool's name (with its prefix)"
            ),
            BuildError::InvalidName { name, why } => {
                write!(f, "the tool name `{name}` {why}")
            }
            BuildError::MissingHandler(name) => {
                write!(
                    f,
                    "tool `{name}` has no handler: add `.handler(..)` to its builder"
                )
            }
            BuildError::InvalidSchema {
                tool,
                path,
                message,
            } => {
                write!(
                    f,
                    "tool `{tool}`: the schema at `{path}` is invalid: {message}"
                )
            }
            BuildError::Unexpressible {
                tool,
                provider,
                path,
                message,
            } => write!(
                f,
                "tool `{tool}`: {provider} cannot express the schema at `{path}`: {message}"
            ),
        }
    }
}

impl std::error::Error for BuildError {}

/// Why a prefix (the first `prefix` bytes of `name`) makes a name some provider refuses
/// (OpenAI and Anthropic accept `^[a-zA-Z0-9_-]{1,64}$`), or `None`. A name without a prefix is
/// the tool's own, checked where the tool is defined.
fn invalid_prefixed_name(name: &str, prefix: usize) -> Option<&'static str> {
    if prefix == 0 {
        None
    } else if name.len() > 64 {
        Some("is longer than the 64 characters OpenAI and Anthropic accept; use a shorter prefix")
    } else if !name[..prefix]
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    {
        Some("has a prefix with a character other than ASCII letters, digits, `_` and `-` (what every provider accepts)")
    } else {
        None
    }
}

/// Tools that are methods of one value: `#[toolset]` on an `impl` block implements it, with one
/// tool per `#[tool]` method, each holding the same `Arc<Self>`. Register them all with
/// [`RegistryBuilder::toolset`].
///
/// Implemented by hand, `register` adds each tool to the builder:
///
/// ```
/// # use std::sync::Arc;
/// # use toolwright_core::registry::{RegistryBuilder, Toolset};
/// struct Nothing;
///
/// impl Toolset for Nothing {
///     fn register(set: Arc<Self>, builder: RegistryBuilder) -> RegistryBuilder {
///         let _ = set;
///         builder
///     }
/// }
///
/// let registry = toolwright_core::Registry::builder().toolset(Nothing).build().unwrap();
/// assert!(registry.specs().is_empty());
/// ```
pub trait Toolset: Send + Sync + 'static {
    /// Adds every tool of the set, each holding a clone of `set`.
    fn register(set: Arc<Self>, builder: RegistryBuilder) -> RegistryBuilder;
}

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
