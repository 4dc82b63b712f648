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
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::Either;
use tokio::time::Instant;

use crate::call::{Session, StateMap, ToolCall};
use crate::conversation::RecoveryBudget;
use crate::execute::clock::ClockHandle;
use crate::execute::random::RandomHandle;
use crate::execute::{
    BreakerHandle, BreakerPolicy, Clock, Env, Guard, RandomSource, RetryBudget, RetryPolicy,
    Settings,
};
use crate::guard;
use crate::idempotency::{IdempotencyStore, KeyMode, MemoryStore};
use crate::observe::{ArgumentLog, Quarantine, QuarantinePolicy, Stats};
use crate::outcome::{ErrorKind, Failure, Outcome};
use crate::pipeline::{self, Call, DynTool, Shared};
use crate::tool::{Tool, ToolSpec};
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
type ToolMap = HashMap<Arc<str>, Box<dyn DynTool>, foldhash::fast::RandomState>;

struct Inner {
    tools: ToolMap,
    specs: Vec<ToolSpec>,
    names: Arc<[String]>,
    shared: Shared,
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

    /// The specs of the tools `session` may call (it holds their scopes), in name order: what
    /// [`Registry::export_for`] exports.
    pub fn specs_for<'a>(&'a self, session: &'a Session) -> impl Iterator<Item = &'a ToolSpec> {
        self.inner
            .specs
            .iter()
            .filter(move |spec| guard::visible(spec, session))
    }

    /// One tool's spec.
    pub fn spec(&self, name: &str) -> Option<&ToolSpec> {
        self.inner.tools.get(name).map(|t| t.spec())
    }

    #[cfg(test)]
    pub(crate) fn shared_for_tests(&self) -> &Shared {
        &self.inner.shared
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
        let tools = self
            .inner
            .specs
            .iter()
            .filter_map(|spec| {
                let tool = self.inner.tools.get(spec.name())?;
                let breaker = self.breaker(spec.name());
                Some(tool.stats().snapshot(spec.name(), breaker.as_ref()))
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
        let (id, name, arguments, progress) = call.into_parts();
        let shared = &self.inner.shared;
        match self.inner.tools.get(name.as_str()) {
            Some(tool) => {
                Either::Left(tool.dispatch(Call::new(id, arguments, progress), session, shared))
            }
            None => Either::Right(std::future::ready(
                self.unknown_tool(id, name, arguments, session),
            )),
        }
    }

    /// `unknown_tool`, listing the tools this session may call (and no others).
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
        let visible = self
            .inner
            .specs
            .iter()
            .filter(|s| guard::visible(s, session));
        failure.available_tools = Some(if visible.clone().count() == self.inner.specs.len() {
            Arc::clone(&self.inner.names)
        } else {
            visible.map(|s| s.name().to_owned()).collect()
        });
        let outcome = Outcome::failed(call_id, Arc::from(name), failure);
        // No tool, so no field is known: the arguments are never logged.
        pipeline::finalize(None, outcome, arguments, None, session, &self.inner.shared)
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
    rules: Option<DeterministicRepair>,
    repair_timeout: Duration,
    approval_timeout: Duration,
    max_argument_bytes: usize,
    quarantine: QuarantinePolicy,
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
            rules: None,
            repair_timeout: DEFAULT_REPAIR_TIMEOUT,
            approval_timeout: DEFAULT_APPROVAL_TIMEOUT,
            max_argument_bytes: crate::validate::DEFAULT_MAX_ARGUMENT_BYTES,
            quarantine: QuarantinePolicy::new(),
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
                spec.retries(),
                spec.idempotent() || spec.takes_idempotency_key(),
                settings,
                breaker,
                origin,
            );
            pipeline::entry(tool, spec, guard)
        });
        self.pending.push((T::META.name, pending));
        self
    }

    /// Adds a tool defined at run time ([`DynamicTool`](crate::dynamic::DynamicTool)). It runs
    /// through the same pipeline as a `#[tool]`; two tools with one name make
    /// [`RegistryBuilder::build`] fail.
    pub fn dynamic_tool(mut self, tool: crate::dynamic::DynamicTool) -> Self {
        let name: &'static str = tool.meta_name();
        let pending: Pending = Box::new(move |settings, breaker, origin| {
            let spec = tool.spec(settings.default_timeout);
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
        });
        self.pending.push((name, pending));
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
        let names: Arc<[String]> = specs.iter().map(|s| s.name.to_string()).collect();
        let shared = Shared {
            finders: pipeline::finders(&specs),
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
        };
        Ok(Registry {
            inner: Arc::new(Inner {
                tools,
                specs,
                names,
                shared,
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
