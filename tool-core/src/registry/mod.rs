//! The [`Registry`]: the table of tools a model may call, and its builder. Every call runs
//! through the same stages, in order: scopes, validation, guard rails, execution, interpretation.
//!
//! ```
//! # use toolwright::{Registry, ToolCall, Status, ErrorKind};
//! # async fn demo() -> Result<(), toolwright::BuildError> {
//! let registry = Registry::builder().build()?;
//! let outcome = registry.call(ToolCall::new("call_1", "search_acounts", "{}")).await;
//! assert_eq!(outcome.status(), Status::Error);
//! assert_eq!(outcome.error_kind(), Some(ErrorKind::UnknownTool));
//! # Ok(()) }
//! ```
//!
//! Lookups take no lock: a call borrows the version of the tool table that was current when it
//! started ([`Registry::change`] publishes the next), and the registry is shared behind an
//! `Arc`, so it is cheap to clone into every task. The builder is in `builder.rs`, changes to a
//! serving registry in `change.rs`.

mod builder;
mod change;
pub(crate) mod error;
mod export;
mod index;
mod search;
#[cfg(feature = "tower")]
mod serve;

pub use builder::RegistryBuilder;
pub use change::Changes;
pub use error::BuildError;
pub use index::SearchHit;
pub use search::{
    ToolSearch, DEFAULT_SEARCH_RESULTS, DEFAULT_SEARCH_TOOL, MAX_QUERY_CHARS, MAX_SEARCH_RESULTS,
};

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::watch;

use futures_util::future::Either;
use tokio::time::Instant;

use crate::approval::{Approvals, DecideError};
use crate::call::ToolCall;
use crate::context::{State, StateMap};
use crate::conversation::RecoveryBudget;
use crate::conversation::{Decision, TicketState, FOUND_KIND};
use crate::execute::{
    Bounds, BreakerHandle, BreakerPolicy, Clock, RandomSource, RetryBudget, RetryPolicy, Settings,
};
use crate::guard;
use crate::guard::output::ResultGuard;
use crate::guard::policy::CallGuard;
use crate::idempotency::Fingerprint;
use crate::idempotency::{IdempotencyStore, KeyMode, MemoryStore};
use crate::observe::{self, ArgumentLog, Quarantine, QuarantinePolicy, Stats};
use crate::outcome::{ErrorKind, Failure, Outcome};
use crate::pipeline::{self, Call, DynTool, Pipeline};
use crate::repair::{DeterministicRepair, Repairer};
use crate::runtime::clock::ClockHandle;
use crate::runtime::random::RandomHandle;
use crate::runtime::Sources;
use crate::session::Session;
use crate::tool::spec::ToolSpec;
use crate::tool::Tool;
use crate::validate as checks;
use crate::validate::preview_str;

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
    /// Left out of listings until the conversation found it ([`RegistryBuilder::deferred`]).
    deferred: bool,
}

/// One version of the tool table: what a call looks its tool up in.
struct Table {
    tools: ToolMap,
    specs: Vec<ToolSpec>,
    names: Arc<[String]>,
    /// The search index of the deferred tools, when there are any.
    index: Option<index::Index>,
}

impl Table {
    fn new(tools: ToolMap) -> Table {
        let mut specs: Vec<ToolSpec> = tools.values().map(|t| t.tool.spec().clone()).collect();
        specs.sort_by(|a, b| a.name.cmp(&b.name));
        let names = specs.iter().map(|s| s.name.to_string()).collect();
        // In name order, so the index (and a tie between two tools) is the same on every replica.
        let deferred = specs
            .iter()
            .filter_map(|s| tools.get(s.name()))
            .filter(|slot| slot.deferred)
            .map(|slot| slot.tool.spec());
        let index = index::Index::new(deferred);
        Table {
            tools,
            specs,
            names,
            index,
        }
    }
}

/// What adding a tool to a built registry needs: the builder's settings.
struct ToolDefaults {
    settings: Settings,
    breakers: HashMap<String, BreakerPolicy>,
    origin: Instant,
}

struct Inner {
    /// Every version of the tool table; the one in use is at `current`. Old versions stay (a
    /// map and the specs; the tools are pipeline), so a call borrows the table it started with
    /// for as long as it runs, without a lock or a reference count.
    tables: boxcar::Vec<Table>,
    current: AtomicUsize,
    filter: Option<Filter>,
    pipeline: Pipeline,
    /// Held while a change is made, so changes apply one at a time.
    making: Mutex<ToolDefaults>,
    changed: watch::Sender<u64>,
    /// The search tool's name, when the registry has deferred tools.
    search: Option<Arc<str>>,
}

/// The tools a model may call, and the pipeline each call runs through. Cheap to clone.
///
/// Build one with [`Registry::builder`] or collect every `#[tool]` of the binary with
/// [`Registry::from_collected`].
#[derive(Clone)]
pub struct Registry {
    inner: Arc<Inner>,
}

/// Why a transport refuses a call before handing it over ([`Registry::admit`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Inadmissible {
    /// No tool of the name exists for the session: the registry has none, or a predicate
    /// ([`visible_when`](RegistryBuilder::visible_when),
    /// [`tool_filter`](RegistryBuilder::tool_filter)) hides it.
    UnknownTool,
    /// The argument text is longer than the transport accepts.
    ArgumentsTooLarge {
        /// The argument text's length, in bytes.
        size: usize,
        /// The transport's limit, in bytes.
        limit: usize,
    },
}

impl fmt::Display for Inadmissible {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Inadmissible::UnknownTool => f.write_str("no tool of this name exists for the session"),
            Inadmissible::ArgumentsTooLarge { size, limit } => write!(
                f,
                "the arguments are {size} bytes, over the limit of {limit} bytes"
            ),
        }
    }
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
    /// # use toolwright::{Registry, Session};
    /// let registry = Registry::builder().build().unwrap();
    /// assert!(!registry.is_visible("refund_order", &Session::new("conv-1")));
    /// ```
    pub fn is_visible(&self, name: &str, session: &Session) -> bool {
        self.table()
            .tools
            .get(name)
            .is_some_and(|slot| self.shows(slot, session))
    }

    /// Whether the tool `name` exists for `session`: the registry has it and no predicate
    /// ([`visible_when`](RegistryBuilder::visible_when),
    /// [`tool_filter`](RegistryBuilder::tool_filter)) hides it. A call of a name that does not
    /// exist for the session is `unknown_tool`; one that does reaches the pipeline, which
    /// refuses a tool whose scopes the session lacks as `unauthorized` (such a tool exists but
    /// is not shown, see [`Registry::is_visible`]) and answers a deferred tool the
    /// conversation has not found yet by telling the model to search.
    ///
    /// ```
    /// # use toolwright::{Registry, Session, DynamicTool};
    /// # use serde_json::json;
    /// let close = DynamicTool::builder("close_books")
    ///     .description("Closes the books.")
    ///     .input_schema(json!({"type": "object", "properties": {}}))
    ///     .scopes(["finance"])
    ///     .handler(|_args, _ctx| async { Ok(json!("closed")) })
    ///     .build()
    ///     .unwrap();
    /// let registry = Registry::builder().dynamic_tool(close).build().unwrap();
    /// let clerk = Session::new("conv-1");
    /// assert!(!registry.is_visible("close_books", &clerk)); // not listed for the clerk
    /// assert!(registry.exists_for("close_books", &clerk)); // but refused when called, not unknown
    /// assert!(!registry.exists_for("open_books", &clerk));
    /// ```
    pub fn exists_for(&self, name: &str, session: &Session) -> bool {
        self.slot_for(name, session).is_some()
    }

    /// The checks a transport makes before it hands a call over, decided as
    /// [`Registry::call_in`] decides them: whether the tool `name` exists for `session` (see
    /// [`Registry::exists_for`]; a tool whose scopes the session lacks exists, and the call
    /// refuses it as `unauthorized`), then whether the argument text is within
    /// `max_argument_bytes`, the transport's own limit on what it accepts. The transport answers
    /// a refusal in its protocol (the MCP server: JSON-RPC `-32602`) instead of an outcome; a
    /// call admitted here still goes through every check of the call itself.
    ///
    /// ```
    /// # use toolwright::{Registry, Session, registry::Inadmissible};
    /// let registry = Registry::builder().build().unwrap();
    /// let session = Session::new("conv-1");
    /// assert_eq!(
    ///     registry.admit("refund_order", "{}", &session, 1024),
    ///     Err(Inadmissible::UnknownTool)
    /// );
    /// ```
    pub fn admit(
        &self,
        name: &str,
        arguments: &str,
        session: &Session,
        max_argument_bytes: usize,
    ) -> Result<(), Inadmissible> {
        if self.slot_for(name, session).is_none() {
            return Err(Inadmissible::UnknownTool);
        }
        if arguments.len() > max_argument_bytes {
            return Err(Inadmissible::ArgumentsTooLarge {
                size: arguments.len(),
                limit: max_argument_bytes,
            });
        }
        Ok(())
    }

    /// The tool `name` in the table, unless a predicate hides it from `session`: what a call of
    /// the name reaches.
    #[inline]
    fn slot_for(&self, name: &str, session: &Session) -> Option<&Slot> {
        self.table()
            .tools
            .get(name)
            .filter(|slot| self.predicates_allow(slot, session))
    }

    /// Whether `session` is shown the tool in `slot`: its scopes, then the predicates, and
    /// for a deferred tool, whether the conversation found it.
    fn shows(&self, slot: &Slot, session: &Session) -> bool {
        self.may_see(slot, session)
            && (!slot.deferred || session.has_found(slot.tool.spec().name()))
    }

    /// Whether `session` could be shown the tool in `slot` (its scopes and the predicates),
    /// found or not: what a search looks through.
    fn may_see(&self, slot: &Slot, session: &Session) -> bool {
        guard::visible(slot.tool.spec(), session) && self.predicates_allow(slot, session)
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
    fn predicates_allow(&self, slot: &Slot, session: &Session) -> bool {
        slot.shown_to.as_ref().is_none_or(|shown| shown(session))
            && self
                .inner
                .filter
                .as_ref()
                .is_none_or(|filter| filter(slot.tool.spec(), session))
    }

    /// The shared state of type `T` given to [`RegistryBuilder::state`]: the same value the
    /// tools read through their `State<T>` parameter (not a copy), or `None` when the registry
    /// has no `T`. What a test reads to see what its tools did to a shared store.
    ///
    /// ```
    /// # use std::sync::Mutex;
    /// # use toolwright::Registry;
    /// struct Outbox {
    ///     sent: Mutex<Vec<String>>,
    /// }
    ///
    /// let empty = Outbox { sent: Mutex::new(Vec::new()) };
    /// let registry = Registry::builder().state(empty).build().unwrap();
    /// let outbox = registry.state::<Outbox>().unwrap();
    /// assert!(outbox.sent.lock().unwrap().is_empty());
    /// assert!(registry.state::<String>().is_none());
    /// ```
    pub fn state<T: Send + Sync + 'static>(&self) -> Option<State<T>> {
        let any = self.inner.pipeline.state.get(&TypeId::of::<T>())?;
        Arc::clone(any).downcast::<T>().ok().map(State)
    }

    /// One tool's spec.
    pub fn spec(&self, name: &str) -> Option<&ToolSpec> {
        self.table().tools.get(name).map(|t| t.tool.spec())
    }

    #[cfg(test)]
    pub(crate) fn pipeline_for_tests(&self) -> &Pipeline {
        &self.inner.pipeline
    }

    /// The tool names, sorted.
    pub fn names(&self) -> &[String] {
        &self.table().names
    }

    /// One tool's circuit breaker: its state and stats, and the manual
    /// [`force_open`](BreakerHandle::force_open) and [`reset`](BreakerHandle::reset).
    pub fn breaker(&self, name: &str) -> Option<BreakerHandle> {
        self.table().tools.get(name).map(|t| BreakerHandle {
            breaker: Arc::clone(t.tool.bounds().breaker()),
            clock: self.inner.pipeline.sources.clock.clone(),
        })
    }

    /// Every tool's stats so far (sorted by name): calls by status and `error_type`, retries,
    /// repairs, the recovery-required rate, fallbacks, replays, the breaker, latency
    /// percentiles. Serializable; its `Display` is a compact table. See
    /// [`observe::Stats`].
    ///
    /// ```
    /// # use toolwright::{Registry, ToolCall};
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
            .pipeline
            .unknown_calls
            .load(std::sync::atomic::Ordering::Relaxed);
        Stats::new(tools, unknown)
    }

    /// The argument text of calls that failed validation, kept (redacted unless the
    /// application opted in to raw text) within the bounds of
    /// [`RegistryBuilder::quarantine`]. Never logged; this is the only way to it.
    ///
    /// ```
    /// # use toolwright::Registry;
    /// let registry = Registry::builder().build().unwrap();
    /// for entry in registry.quarantine().entries() {
    ///     println!("{} {} {}: {}", entry.tool, entry.call_id, entry.error_type, entry.text);
    /// }
    /// ```
    pub fn quarantine(&self) -> &Quarantine {
        &self.inner.pipeline.quarantine
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
        let pipeline = &self.inner.pipeline;
        // A tool a predicate hides from this session does not exist for it. (One it lacks a
        // scope for is `unauthorized`, decided by the pipeline before the arguments.)
        match self.slot_for(name.as_str(), session) {
            Some(slot) if !slot.deferred => Either::Left(pipeline::dispatch(
                &*slot.tool,
                Call::new(id, arguments, progress),
                session,
                pipeline,
            )),
            // A deferred tool runs once the conversation found it.
            Some(slot) => {
                let call = Call::new(id, arguments, progress);
                Either::Right(Either::Right(self.deferred(slot, name, call, session)))
            }
            _ if session.store().is_some() => Either::Right(Either::Right(
                self.unknown_tool_durable(id, name, arguments, session, false),
            )),
            _ => Either::Right(Either::Left(std::future::ready(
                self.unknown_tool(id, name, arguments, session, false),
            ))),
        }
    }

    /// A call of a deferred tool: it runs if the conversation found it, as this process knows
    /// or (when the session has a store) as the store knows, found on another replica;
    /// otherwise it is `unknown_tool`, telling the model to search. Off the path of the tools
    /// every session is shown.
    #[cold]
    fn deferred<'a>(
        &'a self,
        slot: &'a Slot,
        name: String,
        call: Call,
        session: &'a Session,
    ) -> crate::runtime::BoxFuture<'a, Outcome> {
        let pipeline = &self.inner.pipeline;
        if session.has_found(&name) {
            return pipeline::dispatch(&*slot.tool, call, session, pipeline);
        }
        Box::pin(async move {
            if let Some(store) = session.store() {
                let prepare = crate::conversation::Prepare {
                    ids: vec![(FOUND_KIND.to_owned(), name.clone())],
                    edited_for: None,
                };
                match store.prepare(session.id(), &prepare).await {
                    Ok(prepared) if prepared.grounded.first() == Some(&true) => {
                        session.mark_found([name.as_str()]);
                        return pipeline::dispatch(&*slot.tool, call, session, pipeline).await;
                    }
                    Ok(_) => {
                        return self
                            .unknown_tool_durable(call.id, name, call.arguments, session, true)
                            .await
                    }
                    Err(e) => {
                        let failure =
                            crate::conversation::durable::unreachable(slot.tool.spec().name(), &e);
                        let outcome = Outcome::failed(call.id, Arc::from(name), failure);
                        return pipeline::finalize(
                            Some((slot.tool.spec(), slot.tool.stats())),
                            outcome,
                            call.arguments,
                            None,
                            session,
                            pipeline,
                        );
                    }
                }
            }
            self.unknown_tool(call.id, name, call.arguments, session, true)
        })
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
        deferred: bool,
    ) -> crate::runtime::BoxFuture<'a, Outcome> {
        Box::pin(async move {
            let overlay = Arc::new(crate::conversation::durable::Overlay::default());
            let in_call = session.in_call(overlay.clone());
            let mut outcome = self.unknown_tool(id, name, arguments, &in_call, deferred);
            if let Some(store) = session.store() {
                let budget = &self.inner.pipeline.recovery;
                crate::conversation::durable::write_back(
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
    /// the review page to show next to the field; nothing is decided then. A ticket does not
    /// hold the session's scopes: they are not checked here, and an `authorize` rule sees the
    /// ticket's principal without them; all of it is checked again when the edited call runs.
    /// The edited text is kept in the store as given, since it is
    /// what runs; reviewers see it redacted
    /// ([`Ticket::edited_arguments`](crate::conversation::Ticket::edited_arguments)).
    ///
    /// ```no_run
    /// # use toolwright::{Registry, approval::Approvals};
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
        let pipeline = &self.inner.pipeline;
        let checked = checks::check_size(arguments, pipeline.max_argument_bytes)
            .map_err(|f| Outcome::failed(String::new(), Arc::clone(&tool.spec().name), f));
        if let Err(outcome) = checked {
            return Err(DecideError::Invalid(Box::new(outcome)));
        }
        if let Err(outcome) = pipeline::revalidate(&**tool, arguments, &session, pipeline).await {
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

    /// `unknown_tool`, listing the tools this session is shown (and no others); for a
    /// `deferred` tool the conversation has not found, telling the model to search first.
    #[cold]
    fn unknown_tool(
        &self,
        call_id: String,
        name: String,
        arguments: String,
        session: &Session,
        deferred: bool,
    ) -> Outcome {
        let shown = if name.chars().count() <= 64 {
            format!("'{name}'")
        } else {
            preview_str(&name)
        };
        let message = match (&self.inner.search, deferred) {
            (Some(search), true) => format!(
                "{shown} is not loaded in this conversation yet; call `{search}` with what you need done, then call a tool it finds"
            ),
            _ => format!("{shown} is not an available tool; call one of available_tools instead"),
        };
        let mut failure = Failure::new(ErrorKind::UnknownTool, message);
        let visible: Vec<&ToolSpec> = self.specs_for(session).collect();
        failure.available_tools = Some(if visible.len() == self.table().specs.len() {
            Arc::clone(&self.table().names)
        } else {
            visible.iter().map(|s| s.name().to_owned()).collect()
        });
        // A name longer than any tool's may be anything the model sent: the span keeps 64 chars.
        let cut = name.char_indices().nth(64).map_or(name.len(), |(i, _)| i);
        let span = observe::span::call(&name[..cut], &call_id, session);
        let _entered = span.enter();
        let outcome = Outcome::failed(call_id, Arc::from(name), failure);
        // No tool, so no field is known: the arguments are never logged.
        let outcome = pipeline::finalize(
            None,
            outcome,
            arguments,
            None,
            session,
            &self.inner.pipeline,
        );
        observe::span::record(&span, &outcome);
        outcome
    }
}

impl fmt::Debug for Registry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Registry")
            .field("tools", &self.table().names)
            .finish()
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
/// # use toolwright::registry::{RegistryBuilder, Toolset};
/// struct Nothing;
///
/// impl Toolset for Nothing {
///     fn register(set: Arc<Self>, builder: RegistryBuilder) -> RegistryBuilder {
///         let _ = set;
///         builder
///     }
/// }
///
/// let registry = toolwright::Registry::builder().toolset(Nothing).build().unwrap();
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
