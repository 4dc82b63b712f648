//! [`RegistryBuilder`]: the tools, shared state and defaults of a registry, checked when it is
//! built.

use super::*;
use crate::tool::grounds::is_reserved;

/// Makes a tool under its registered name (its own, or prefixed by [`RegistryBuilder::prefixed`]).
pub(super) type Pending =
    Box<dyn FnOnce(Arc<str>, &Settings, BreakerPolicy, Instant) -> Box<dyn DynTool> + Send>;

/// Builds a [`Registry`]: tools, shared state, defaults.
///
/// ```
/// # use toolwright::Registry;
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
    deferred: Vec<String>,
    search: Option<ToolSearch>,
    state: StateMap,
    settings: Settings,
    breakers: HashMap<String, BreakerPolicy>,
    sources: Sources,
    store: Option<Arc<dyn IdempotencyStore>>,
    /// The store, typed, when it is a [`MemoryStore`].
    memory: Option<MemoryStore>,
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
            deferred: Vec::new(),
            search: None,
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
            sources: Sources::default(),
            store: None,
            memory: None,
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
    pub fn tool<T: Tool>(self, tool: T) -> Self {
        self.pending_under(T::META.name, pending_tool(tool))
    }

    /// A tool waiting for [`RegistryBuilder::build`], under the builder's prefix.
    fn pending_under(mut self, name: &str, pending: Pending) -> Self {
        let name = format!("{}{name}", self.prefix);
        self.pending.push((name, self.prefix.len(), pending));
        self
    }

    /// Adds a tool defined at run time ([`DynamicTool`](crate::dynamic::DynamicTool)). It runs
    /// through the same pipeline as a `#[tool]`; two tools with one name make
    /// [`RegistryBuilder::build`] fail.
    pub fn dynamic_tool(self, tool: crate::dynamic::DynamicTool) -> Self {
        let name = tool.meta_name();
        self.pending_under(name, pending_dynamic(tool))
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
    /// # use toolwright::{Effect, Registry, DynamicTool};
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
    /// # use toolwright::{Registry, Session, DynamicTool};
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
    /// # use toolwright::{Registry, Session};
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

    /// Marks tools as found by search: each is left out of every listing and export (and
    /// calling it is `unknown_tool`, telling the model to search) until the model finds it with
    /// the registry's search tool, which the registry then has (`search_tools` unless
    /// [`tool_search`](RegistryBuilder::tool_search) says otherwise). A found tool is shown and
    /// callable in that conversation from then on: on every replica, when the session's
    /// conversation lives in a [`ConversationStore`](crate::conversation::ConversationStore)
    /// ([`Registry::refresh_found`]). Outside a conversation ([`Registry::call`]) nothing is
    /// found. A registry of hundreds of tools keeps the model's context for the conversation
    /// this way: the tools every turn needs stay shown, the rest are found when needed.
    ///
    /// The search ranks by BM25 over each tool's name, description and parameter docs; it sees
    /// only the tools a session could be shown (scopes, [`visible_when`](RegistryBuilder::visible_when),
    /// [`tool_filter`](RegistryBuilder::tool_filter)). A name the registry does not have makes
    /// [`build`](RegistryBuilder::build) fail.
    ///
    /// ```
    /// # use toolwright::{Registry, Session, ToolCall, Status, ErrorKind, DynamicTool};
    /// # use serde_json::json;
    /// # async fn demo() {
    /// let refund = DynamicTool::builder("refund_order")
    ///     .description("Refunds a paid order.")
    ///     .input_schema(json!({"type": "object", "properties": {}}))
    ///     .handler(|_args, _ctx| async { Ok(json!("refunded")) })
    ///     .build()
    ///     .unwrap();
    /// let registry = Registry::builder().dynamic_tool(refund).deferred(["refund_order"]).build().unwrap();
    /// let session = Session::new("conv-1");
    /// assert_eq!(registry.specs_for(&session).map(|s| s.name()).collect::<Vec<_>>(), ["search_tools"]);
    ///
    /// let early = registry.call_in(&session, ToolCall::new("c1", "refund_order", "{}")).await;
    /// assert_eq!(early.error_kind(), Some(ErrorKind::UnknownTool));
    ///
    /// let search = ToolCall::new("c2", "search_tools", r#"{"query":"refund an order"}"#);
    /// assert_eq!(registry.call_in(&session, search).await.status(), Status::Success);
    /// assert!(registry.is_visible("refund_order", &session));
    /// let refund = registry.call_in(&session, ToolCall::new("c3", "refund_order", "{}")).await;
    /// assert_eq!(refund.status(), Status::Success);
    /// # }
    /// ```
    pub fn deferred<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.deferred.extend(names.into_iter().map(Into::into));
        self
    }

    /// The search tool of a registry with deferred tools: its name, how many tools a search
    /// returns, whether results carry input schemas ([`ToolSearch`]). Setting it adds the
    /// search tool even when no tool is deferred yet.
    pub fn tool_search(mut self, search: ToolSearch) -> Self {
        self.search = Some(search);
        self
    }

    /// Adds shared state, handed to tools that take a [`State<T>`](crate::State) parameter;
    /// [`Registry::state`] reads the same value back (one value per type: a second `T`
    /// replaces the first).
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
        self.sources.clock = ClockHandle::new(clock);
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
        self.sources.random = RandomHandle::new(random);
        self
    }

    /// Where non-idempotent tools record what each idempotency key came to (default: a
    /// [`MemoryStore`] of this registry alone). Give every replica the same shared store (the
    /// `RedisStore` of the `redis` feature) so a call re-delivered to another replica is
    /// recognized too. Idempotent and read-only tools never touch the store.
    ///
    /// ```
    /// # use toolwright::{MemoryStore, Registry};
    /// let store = MemoryStore::builder().max_bytes(8 << 20).build();
    /// let registry = Registry::builder().idempotency_store(store).build().unwrap();
    /// # let _ = registry;
    /// ```
    pub fn idempotency_store(mut self, store: impl IdempotencyStore) -> Self {
        // The in-memory store, as it is or in an `Arc`, answers at once: calls reach it without
        // a boxed future.
        let any: &dyn Any = &store;
        self.memory = any.downcast_ref::<MemoryStore>().cloned().or_else(|| {
            any.downcast_ref::<Arc<MemoryStore>>()
                .map(|store| MemoryStore::clone(store))
        });
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
    /// breaker is open). See [`RecoveryBudget`].
    pub fn recovery_budget(mut self, budget: RecoveryBudget) -> Self {
        self.recovery = budget;
        self
    }

    /// One more try at arguments that fail on their form (`invalid_json`, `unknown_argument`,
    /// `schema_mismatch`) before the call fails: the [`repair`](crate::repair) pass. Off by
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
    /// use toolwright::repair::{DeterministicRepair, Fix};
    /// use toolwright::Registry;
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
    /// # use toolwright::Registry;
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
    /// # use toolwright::{observe::QuarantinePolicy, Registry};
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
        let origin = self.sources.clock.now();
        let making = ToolDefaults {
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
        defer(&mut tools, self.deferred.iter().cloned())?;
        // The search tool reaches the registry it serves once the registry exists.
        let link = Arc::new(std::sync::OnceLock::new());
        let search = match self.search {
            Some(search) => Some(search),
            None if !self.deferred.is_empty() => Some(ToolSearch::new()),
            None => None,
        };
        if let Some(search) = &search {
            let tool = search.tool(Arc::clone(&link))?;
            let name = search.tool_name().to_owned();
            add(
                &mut tools,
                vec![(name, 0, pending_dynamic(tool))],
                &mut HashMap::new(),
                &making,
                &self.state,
            )?;
        }
        if let Some(name) = making
            .breakers
            .keys()
            .find(|n| !tools.contains_key(n.as_str()))
        {
            return Err(BuildError::UnknownBreakerTool(name.clone()));
        }
        let table = Table::new(tools);
        let (store, memory) = match self.store {
            Some(store) => (store, self.memory),
            None => {
                let memory = MemoryStore::new();
                let store: Arc<dyn IdempotencyStore> = Arc::new(memory.clone());
                (store, Some(memory))
            }
        };
        let pipeline = Pipeline {
            finders: std::sync::RwLock::new(Arc::new(pipeline::finders(&table.specs))),
            state: Arc::new(self.state),
            sources: self.sources,
            store,
            memory,
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
        let inner = Arc::new(Inner {
            tables,
            current: AtomicUsize::new(first),
            filter: self.filter,
            pipeline,
            making: Mutex::new(making),
            changed: watch::Sender::new(0),
            search: search.map(|s| Arc::from(s.tool_name())),
        });
        let _ = link.set(Arc::downgrade(&inner));
        Ok(Registry { inner })
    }
}

/// Makes the `pending` tools and adds them to `tools`, each with its predicate from `shown_to`:
/// a name already there, an unportable prefix or missing state fails (and adds nothing more).
pub(super) fn add(
    tools: &mut ToolMap,
    pending: Vec<(String, usize, Pending)>,
    shown_to: &mut HashMap<String, ShownTo>,
    making: &ToolDefaults,
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
        declarations(&name, tool.spec())?;
        examples(&name, tool.as_ref())?;
        let shown_to = shown_to.remove(&name);
        tools.insert(
            Arc::clone(&tool.spec().name),
            Slot {
                tool: Arc::from(tool),
                shown_to,
                deferred: false,
            },
        );
    }
    Ok(())
}

/// Marks the tools `names` as deferred ([`RegistryBuilder::deferred`]); a name `tools` lacks
/// fails.
pub(super) fn defer(
    tools: &mut ToolMap,
    names: impl IntoIterator<Item = String>,
) -> Result<(), BuildError> {
    for name in names {
        match tools.get_mut(name.as_str()) {
            Some(slot) => slot.deferred = true,
            None => {
                return Err(BuildError::UnknownTool {
                    setting: "deferred",
                    name,
                })
            }
        }
    }
    Ok(())
}

/// What a tool declares of its ids, checked against what it can do: no kind toolwright keeps
/// for itself (a result that grounded one would grant what only the registry may), and every
/// `grounds` path names a field of the tool's output schema (a path that names none grounds
/// nothing, and the model, told to look the id up with this tool, calls it again and again).
fn declarations(name: &str, spec: &ToolSpec) -> Result<(), BuildError> {
    let kinds = spec
        .grounds()
        .iter()
        .map(|g| g.kind())
        .chain(spec.fields().iter().filter_map(|f| f.grounded_kind()));
    if !spec.meta.internal {
        if let Some(kind) = kinds.into_iter().find(|kind| is_reserved(kind)) {
            return Err(BuildError::ReservedKind {
                tool: name.to_owned(),
                kind: kind.to_owned(),
            });
        }
    }
    for grounds in spec.grounds() {
        if let Some(unreached) = grounds.unreached(spec.output_schema()) {
            return Err(BuildError::UnknownGroundsPath {
                tool: name.to_owned(),
                kind: grounds.kind().to_owned(),
                path: grounds.path().to_owned(),
                at: unreached.at,
                fields: unreached.fields,
            });
        }
    }
    Ok(())
}

/// Every example of a tool run through the checks a call's arguments get (shape, field rules,
/// semantic rule; not provenance or authorization, which need a conversation): the first that
/// fails is the error, naming the tool and the example's number.
fn examples(name: &str, tool: &dyn DynTool) -> Result<(), BuildError> {
    for (index, text) in tool.spec().example_texts().iter().enumerate() {
        if let Err(failure) = tool.check_example(text) {
            return Err(BuildError::InvalidExample {
                tool: name.to_owned(),
                number: index + 1,
                kind: failure.kind,
                message: failure.message,
                violations: failure.violations,
            });
        }
    }
    Ok(())
}

/// The maker of a `#[tool]`.
pub(super) fn pending_tool<T: Tool>(tool: T) -> Pending {
    Box::new(move |name, settings, breaker, origin| {
        let spec = ToolSpec::of::<T>(settings.default_timeout);
        let (spec, guard) = resolved(spec, name, settings, breaker, origin);
        pipeline::entry_with(
            tool,
            spec,
            crate::validate::shape::ShapeValidator::default(),
            guard,
        )
    })
}

/// The maker of a tool defined at run time.
pub(super) fn pending_dynamic(tool: crate::dynamic::DynamicTool) -> Pending {
    Box::new(move |name, settings, breaker, origin| {
        let spec = tool.spec(settings.default_timeout);
        let (spec, guard) = resolved(spec, name, settings, breaker, origin);
        let (body, shape) = tool.into_parts();
        pipeline::entry_with(body, spec, shape, guard)
    })
}

/// A tool's spec under the name it is registered by, and its execution seam.
fn resolved(
    mut spec: ToolSpec,
    name: Arc<str>,
    settings: &Settings,
    breaker: BreakerPolicy,
    origin: Instant,
) -> (ToolSpec, Bounds) {
    spec.name = name;
    let guard = Bounds::new(
        Arc::clone(&spec.name),
        spec.timeout,
        spec.retries(),
        spec.idempotent() || spec.takes_idempotency_key(),
        settings,
        breaker,
        origin,
    );
    (spec, guard)
}

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

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether the registry reaches its store without a boxed future.
    fn direct(builder: RegistryBuilder) -> bool {
        builder.build().unwrap().inner.pipeline.memory.is_some()
    }

    #[test]
    fn the_in_memory_store_is_reached_directly_as_it_is_or_in_an_arc() {
        assert!(direct(Registry::builder()), "the default store");
        assert!(direct(
            Registry::builder().idempotency_store(MemoryStore::new())
        ));
        let shared = Arc::new(MemoryStore::new());
        assert!(direct(Registry::builder().idempotency_store(shared)));

        // Any other store, here the in-memory one behind its trait alone.
        let behind: Arc<dyn IdempotencyStore> = Arc::new(MemoryStore::new());
        assert!(!direct(Registry::builder().idempotency_store(behind)));
    }
}
