//! One proposed call ([`ToolCall`]), the conversation it belongs to ([`Session`]), and what a
//! tool body can see of both while it runs ([`Invocation`], [`ToolContext`], [`State`]).

use std::any::{Any, TypeId};
use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::fmt;
use std::ops::Deref;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::time::Instant;

use crate::approval::{Approvals, Approver};
use crate::ask::{Answer, Asker, Question, Reply};
use crate::conversation::{ConversationMemory, ConversationStore, Grounding, InMemoryConversation};
use crate::error::ToolError;
use crate::idempotency::{IdempotencyKey, KeyMode};
use crate::progress::{self, ProgressHandle};
use crate::runtime::clock::ClockHandle;

/// A call the model proposed: the provider's call id, the tool name, and the argument text
/// exactly as the model wrote it (parsed by the registry, never trusted).
///
/// ```
/// use toolwright_core::ToolCall;
///
/// let call = ToolCall::new("call_1", "search_orders", r#"{"query":"late"}"#);
/// assert_eq!(call.name(), "search_orders");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    id: String,
    name: String,
    arguments: String,
    /// Where the tool's progress reports go; one pointer, `None` for most calls.
    #[serde(skip)]
    progress: Option<ProgressHandle>,
}

impl ToolCall {
    /// A call with the provider's id, the tool name and the raw argument text.
    pub fn new(
        id: impl Into<String>,
        name: impl Into<String>,
        arguments: impl Into<String>,
    ) -> Self {
        ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: arguments.into(),
            progress: None,
        }
    }

    /// Sends the tool's progress reports ([`ToolContext::progress`]) to `handle`, which
    /// rate-limits them; without one, a report is a `tracing` event. See
    /// [the `progress` module](crate::progress).
    ///
    /// ```
    /// use toolwright_core::progress::{Progress, ProgressHandle};
    /// use toolwright_core::ToolCall;
    ///
    /// let handle = ProgressHandle::new(|p: Progress| println!("{} of {:?}", p.done, p.total));
    /// let call = ToolCall::new("call_1", "import_rows", "{}").with_progress(handle);
    /// assert!(call.progress().is_some());
    /// ```
    pub fn with_progress(mut self, handle: ProgressHandle) -> Self {
        self.progress = Some(handle);
        self
    }

    /// The progress handle attached with [`ToolCall::with_progress`].
    pub fn progress(&self) -> Option<&ProgressHandle> {
        self.progress.as_ref()
    }

    /// The provider's call id (OpenAI `tool_call_id`, Anthropic `tool_use_id`, ...).
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The tool name the model asked for.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The raw argument text.
    pub fn arguments(&self) -> &str {
        &self.arguments
    }

    pub(crate) fn into_parts(self) -> (String, String, String, Option<ProgressHandle>) {
        (self.id, self.name, self.arguments, self.progress)
    }
}

/// Who is calling and under which policy: the conversation id, the principal and its scopes,
/// how idempotency keys are scoped and derived, who approves consequential calls, and the
/// conversation's memory (grounded ids, recovery counts). Cheap to clone; clones share the same
/// conversation.
///
/// ```
/// use toolwright_core::Session;
///
/// let session = Session::new("conv-7").with_principal("user:alice").with_scopes(["orders:read"]);
/// assert!(session.has_scope("orders:read"));
/// ```
#[derive(Clone)]
pub struct Session(Arc<SessionInner>);

/// A kind of id and a tool that grounds it.
type KindAndTool = (Arc<str>, Arc<str>);

#[derive(Clone)]
struct SessionInner {
    id: String,
    principal: Option<String>,
    scopes: Vec<String>,
    /// `None` outside a conversation: each call gets a scope of its own.
    idempotency_scope: Option<String>,
    key_mode: Option<KeyMode>,
    approver: Option<Arc<dyn Approver>>,
    /// Who brings a tool's questions to its user ([`ToolContext::ask`]).
    asker: Option<Arc<dyn Asker>>,
    /// What the conversation remembers; `None` outside a conversation, which remembers nothing.
    memory: Option<Arc<dyn ConversationMemory>>,
    /// Where the conversation lives when it is shared or outlives the process; calls then
    /// take the store-backed path ([`Session::with_store`]).
    store: Option<Arc<dyn ConversationStore>>,
    /// The deferred tools this process saw the conversation find (shared by every clone);
    /// `None` outside a conversation, which finds nothing. Holds only names of deferred tools
    /// of the registry, so it is bounded by the registry.
    found: Option<Arc<Mutex<HashSet<Arc<str>>>>>,
    /// (kind, tool): the kinds the latest successful grounding call in this conversation (as
    /// this process saw) returned no id of, so a grounded argument's hint does not send the
    /// model straight back to it. Bounded by the registry's declarations.
    came_back_empty: Option<Arc<Mutex<Vec<KindAndTool>>>>,
    /// The model's provider searches deferred tools itself ([`Session::with_native_tool_search`]).
    native_search: bool,
}

impl Session {
    /// A session for one conversation, remembering in this process
    /// ([`InMemoryConversation`]). Its id is also its idempotency scope.
    pub fn new(id: impl Into<String>) -> Self {
        let id = id.into();
        Session(Arc::new(SessionInner {
            idempotency_scope: Some(id.clone()),
            id,
            principal: None,
            scopes: Vec::new(),
            key_mode: None,
            approver: None,
            asker: None,
            memory: Some(Arc::new(InMemoryConversation::new())),
            store: None,
            found: Some(Arc::default()),
            came_back_empty: Some(Arc::default()),
            native_search: false,
        }))
    }

    /// A session outside any conversation, what [`Registry::call`](crate::Registry::call)
    /// runs in: no principal, no scopes, no approver, no memory (nothing a tool returns is
    /// remembered, and a grounded argument is refused), and each call's idempotency key in a
    /// scope of its own, so two unrelated callers that both send the id `call_1` never share a
    /// key. Redelivering a call is recognized only inside a conversation: use
    /// [`Session::new`] and [`Registry::call_in`](crate::Registry::call_in) for that.
    pub fn anonymous() -> Self {
        Session(Arc::new(SessionInner {
            id: "anonymous".to_owned(),
            principal: None,
            scopes: Vec::new(),
            idempotency_scope: None,
            key_mode: None,
            approver: None,
            asker: None,
            memory: None,
            store: None,
            found: None,
            came_back_empty: None,
            native_search: false,
        }))
    }

    /// One shared anonymous session, so [`Registry::call`](crate::Registry::call) does not
    /// build (and drop) a fresh one per call.
    pub(crate) fn shared_anonymous() -> &'static Session {
        static ANONYMOUS: OnceLock<Session> = OnceLock::new();
        ANONYMOUS.get_or_init(Session::anonymous)
    }

    /// Records `id` as a known `kind` identifier of this conversation, as if a tool had returned
    /// it: an argument declared `#[arg(grounded = "kind")]` may then use it. For ids the
    /// application knows itself (the signed-in customer's account, what the user clicked).
    ///
    /// ```
    /// use toolwright_core::Session;
    ///
    /// let session = Session::new("conv-7");
    /// session.ground("account", "ACC-311");
    /// assert!(session.is_grounded("account", "ACC-311"));
    /// assert!(!session.is_grounded("account", "ACC-312"));
    /// ```
    pub fn ground(&self, kind: &str, id: impl Into<String>) {
        if let Some(memory) = &self.0.memory {
            memory.record_ids(kind, vec![id.into()]);
        }
    }

    /// Whether `id` is a known `kind` identifier of this conversation.
    pub fn is_grounded(&self, kind: &str, id: &str) -> bool {
        self.0
            .memory
            .as_ref()
            .is_some_and(|memory| memory.is_grounded(kind, id))
    }

    /// Whether the conversation found the deferred tool `name` (as this process knows: a
    /// search here, a call here, or [`Registry::refresh_found`](crate::Registry::refresh_found)),
    /// or its memory holds it found.
    pub(crate) fn has_found(&self, name: &str) -> bool {
        self.0.native_search
            || self.0.found.as_ref().is_some_and(|found| {
                found
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .contains(name)
            })
            || self
                .0
                .memory
                .as_ref()
                .is_some_and(|memory| memory.is_grounded(crate::conversation::FOUND_KIND, name))
    }

    /// Serves this session to a model whose provider searches deferred tools itself
    /// ([`Export::native_tool_search`](crate::providers::Export::native_tool_search)): every
    /// deferred tool the session may see is listed (the export marks it `defer_loading`) and
    /// callable, since the provider loads a deferred tool only when its own search returned
    /// it. The agent loop sets it for a model whose export asks for native search.
    ///
    /// ```
    /// use toolwright_core::Session;
    ///
    /// let session = Session::new("conv-7").with_native_tool_search();
    /// assert!(session.native_tool_search());
    /// ```
    pub fn with_native_tool_search(mut self) -> Self {
        Arc::make_mut(&mut self.0).native_search = true;
        self
    }

    /// Whether the model's provider searches deferred tools itself
    /// ([`Session::with_native_tool_search`]).
    pub fn native_tool_search(&self) -> bool {
        self.0.native_search
    }

    /// Records that the conversation found these deferred tools; nothing outside a
    /// conversation.
    pub(crate) fn mark_found<'n>(&self, names: impl IntoIterator<Item = &'n str>) {
        if let Some(found) = &self.0.found {
            let mut found = found.lock().unwrap_or_else(PoisonError::into_inner);
            for name in names {
                if !found.contains(name) {
                    found.insert(Arc::from(name));
                }
            }
        }
    }

    /// Notes what the latest successful call of a grounding tool returned of each kind it
    /// grounds (`kinds`: the kind, and whether the result held an id of it). Only that call
    /// counts: a tool that came back empty earlier, with other tools called since, is a fine
    /// place to look again.
    pub(crate) fn note_grounded(&self, tool: &str, kinds: &[(&str, bool)]) {
        let Some(empty) = &self.0.came_back_empty else {
            return;
        };
        let mut empty = empty.lock().unwrap_or_else(PoisonError::into_inner);
        empty.clear();
        for &(kind, produced) in kinds {
            if !produced {
                empty.push((Arc::from(kind), Arc::from(tool)));
            }
        }
    }

    /// Whether `tool` made the latest successful grounding call in this conversation (as this
    /// process saw) and it returned no id of `kind`.
    pub(crate) fn came_back_empty(&self, kind: &str, tool: &str) -> bool {
        self.0.came_back_empty.as_ref().is_some_and(|empty| {
            empty
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .iter()
                .any(|(k, t)| **k == *kind && **t == *tool)
        })
    }

    /// The conversation's memory; `None` outside a conversation ([`Session::anonymous`]).
    pub fn memory(&self) -> Option<&dyn ConversationMemory> {
        self.0.memory.as_deref()
    }

    /// Keeps the conversation's memory in `memory` instead of this process's, for example a
    /// store shared by every replica of a service. See [`conversation`](crate::conversation).
    pub fn with_memory(mut self, memory: Arc<dyn ConversationMemory>) -> Self {
        Arc::make_mut(&mut self.0).memory = Some(memory);
        self
    }

    /// Keeps the conversation in `store`: grounded ids, the model's recovery counts and
    /// approval tickets are read from it and written to it by every call, so any replica that
    /// shares the store (or this one after a restart) continues the conversation. Unless an
    /// approver is set, calls that require approval are filed there as tickets
    /// ([`Approvals`]) for a person to decide from any replica.
    ///
    /// Calls that need the store fail closed (`unavailable`, nothing runs) while it cannot be
    /// reached; the others do not wait on it. [`Session::ground`] and
    /// [`Session::is_grounded`] do not reach the store: use
    /// [`ConversationStore::record`] for ids the application grounds itself.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use toolwright_core::conversation::MemoryConversationStore;
    /// use toolwright_core::Session;
    ///
    /// let store = Arc::new(MemoryConversationStore::new());
    /// let session = Session::new("conv-7").with_principal("user:alice").with_store(store);
    /// assert!(session.store().is_some());
    /// assert!(session.approver().is_some());
    /// ```
    pub fn with_store(mut self, store: Arc<dyn ConversationStore>) -> Self {
        let inner = Arc::make_mut(&mut self.0);
        if inner.approver.is_none() {
            inner.approver = Some(Arc::new(Approvals::new(Arc::clone(&store))));
        }
        inner.memory = None;
        inner.store = Some(store);
        self
    }

    /// The store the conversation lives in, when it has one ([`Session::with_store`]).
    pub fn store(&self) -> Option<&Arc<dyn ConversationStore>> {
        self.0.store.as_ref()
    }

    /// This session for one call of the store-backed path: its memory is the call's own
    /// `memory`, filled from the store.
    pub(crate) fn in_call(&self, memory: Arc<dyn ConversationMemory>) -> Session {
        let mut inner = (*self.0).clone();
        inner.memory = Some(memory);
        inner.store = None;
        Session(Arc::new(inner))
    }

    /// Sets who is asking (a user or service id).
    pub fn with_principal(mut self, principal: impl Into<String>) -> Self {
        Arc::make_mut(&mut self.0).principal = Some(principal.into());
        self
    }

    /// Sets the scopes the principal holds.
    pub fn with_scopes<I, S>(mut self, scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Arc::make_mut(&mut self.0).scopes = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// Sets the scope idempotency keys are derived in (defaults to the session id). Share a
    /// scope across sessions that must recognize each other's retries.
    pub fn with_idempotency_scope(mut self, scope: impl Into<String>) -> Self {
        Arc::make_mut(&mut self.0).idempotency_scope = Some(scope.into());
        self
    }

    /// Sets how this session's idempotency keys are derived, overriding the registry's choice:
    /// [`KeyMode::CallId`] (one key per delivered proposal) or [`KeyMode::Fingerprint`] (one key
    /// per tool and canonical arguments, so a re-proposed refund maps to the first one's key).
    ///
    /// ```
    /// use toolwright_core::{KeyMode, Session};
    ///
    /// let session = Session::new("conv-7").with_key_mode(KeyMode::Fingerprint);
    /// assert_eq!(session.key_mode(), Some(KeyMode::Fingerprint));
    /// assert_eq!(Session::new("conv-8").key_mode(), None); // the registry decides
    /// ```
    pub fn with_key_mode(mut self, mode: KeyMode) -> Self {
        Arc::make_mut(&mut self.0).key_mode = Some(mode);
        self
    }

    /// Who decides the calls of tools that require approval (`#[tool(requires_approval)]`); a
    /// session without one refuses them (`approval_denied`). See [`approval`](crate::approval).
    pub fn with_approver<A: Approver>(mut self, approver: Arc<A>) -> Self {
        Arc::make_mut(&mut self.0).approver = Some(approver);
        self
    }

    /// The session's approver.
    pub fn approver(&self) -> Option<&dyn Approver> {
        self.0.approver.as_deref()
    }

    /// Sets who brings a tool's questions ([`ToolContext::ask`]) to the user. The MCP server
    /// sets one per request; without one, `ask` fails with `bad_request`.
    pub fn with_asker<A: Asker>(mut self, asker: Arc<A>) -> Self {
        Arc::make_mut(&mut self.0).asker = Some(asker);
        self
    }

    /// The session's asker.
    pub fn asker(&self) -> Option<&dyn Asker> {
        self.0.asker.as_deref()
    }

    /// The key mode this session chose, if any; `None` leaves it to the registry (whose default
    /// is [`KeyMode::CallId`]).
    pub fn key_mode(&self) -> Option<KeyMode> {
        self.0.key_mode
    }

    /// The session id.
    pub fn id(&self) -> &str {
        &self.0.id
    }

    /// Who is asking, if known.
    pub fn principal(&self) -> Option<&str> {
        self.0.principal.as_deref()
    }

    /// The scopes the principal holds.
    pub fn scopes(&self) -> &[String] {
        &self.0.scopes
    }

    /// Whether the principal holds `scope`.
    pub fn has_scope(&self, scope: &str) -> bool {
        self.0.scopes.iter().any(|s| s == scope)
    }

    /// The scope idempotency keys are derived in; `None` outside a conversation, where each
    /// call gets a scope of its own ([`Session::anonymous`]).
    pub fn idempotency_scope(&self) -> Option<&str> {
        self.0.idempotency_scope.as_deref()
    }

    /// The idempotency scope of one call: the session's, or a fresh one of the call's own.
    pub(crate) fn call_scope(&self) -> Cow<'_, str> {
        match &self.0.idempotency_scope {
            Some(scope) => Cow::Borrowed(scope),
            None => Cow::Owned(anonymous_scope(fastrand::u128(..))),
        }
    }
}

/// `anonymous.` and 32 lowercase hex digits: the scope of one call outside any session. Written
/// digit by digit, not with `format!`: every side-effecting call of an anonymous session pays it.
fn anonymous_scope(random: u128) -> String {
    const PREFIX: &str = "anonymous.";
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut scope = String::with_capacity(PREFIX.len() + 32);
    scope.push_str(PREFIX);
    for shift in (0..32).rev() {
        let digit = (random >> (shift * 4)) & 0xf;
        scope.push(char::from(HEX[digit as usize]));
    }
    scope
}

impl Grounding for Session {
    fn is_grounded(&self, kind: &str, id: &str) -> bool {
        Session::is_grounded(self, kind, id)
    }
}

impl Default for Session {
    fn default() -> Self {
        Session::anonymous()
    }
}

impl fmt::Debug for Session {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Session")
            .field("id", &self.0.id)
            .field("principal", &self.0.principal)
            .field("scopes", &self.0.scopes)
            .field("approver", &self.0.approver.is_some())
            .field("conversation", &self.0.memory.is_some())
            .field("store", &self.0.store.is_some())
            .finish()
    }
}

/// What a [`Session`] is written as: who calls and under which policy. The memory, the store
/// and the approver are not written; they belong to the process that reads the session back
/// (set them again with [`Session::with_store`] or [`Session::with_approver`]).
#[derive(Serialize, Deserialize)]
#[serde(rename = "Session")]
struct Persisted {
    id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    principal: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    scopes: Vec<String>,
    /// `None` outside a conversation.
    #[serde(default)]
    idempotency_scope: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    key_mode: Option<KeyMode>,
}

/// A session is written as its identity and policy: id, principal, scopes, idempotency scope
/// and key mode. Read back, it remembers in this process until it is given its store again:
///
/// ```
/// use std::sync::Arc;
/// use toolwright_core::conversation::MemoryConversationStore;
/// use toolwright_core::{KeyMode, Session};
///
/// let store = Arc::new(MemoryConversationStore::new());
/// let session = Session::new("conv-7")
///     .with_principal("user:alice")
///     .with_scopes(["orders:read"])
///     .with_key_mode(KeyMode::Fingerprint)
///     .with_store(store.clone());
/// let saved = serde_json::to_string(&session)?;
/// // ... on any replica, after any restart:
/// let restored: Session = serde_json::from_str(&saved)?;
/// let restored = restored.with_store(store);
/// assert_eq!(restored.id(), "conv-7");
/// assert_eq!(restored.principal(), Some("user:alice"));
/// assert_eq!(restored.key_mode(), Some(KeyMode::Fingerprint));
/// # Ok::<(), serde_json::Error>(())
/// ```
impl Serialize for Session {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let inner = &*self.0;
        Persisted {
            id: inner.id.clone(),
            principal: inner.principal.clone(),
            scopes: inner.scopes.clone(),
            idempotency_scope: inner.idempotency_scope.clone(),
            key_mode: inner.key_mode,
        }
        .serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Session {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let p = Persisted::deserialize(deserializer)?;
        // Outside a conversation (no idempotency scope) there is nothing to remember.
        let memory: Option<Arc<dyn ConversationMemory>> = p
            .idempotency_scope
            .as_ref()
            .map(|_| Arc::new(InMemoryConversation::new()) as Arc<dyn ConversationMemory>);
        Ok(Session(Arc::new(SessionInner {
            id: p.id,
            principal: p.principal,
            scopes: p.scopes,
            idempotency_scope: p.idempotency_scope,
            key_mode: p.key_mode,
            approver: None,
            asker: None,
            found: memory.as_ref().map(|_| Arc::default()),
            came_back_empty: memory.as_ref().map(|_| Arc::default()),
            native_search: false,
            memory,
            store: None,
        })))
    }
}

/// Shared state registered with [`RegistryBuilder::state`](crate::RegistryBuilder::state),
/// handed to tools that take a `State<T>` parameter.
///
/// ```
/// use toolwright_core::State;
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
/// use toolwright_core::ToolContext;
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
    /// [`ToolCall::with_progress`] it goes there; otherwise it is a `tracing` event. Reports are
    /// rate-limited (see [the `progress` module](crate::progress)), so report as often as is convenient.
    ///
    /// ```
    /// use toolwright_core::{ToolContext, ToolError};
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

    async fn asked_as<T>(
        &self,
        name: Option<String>,
        message: String,
    ) -> Result<Reply<T>, ToolError>
    where
        T: serde::de::DeserializeOwned + schemars::JsonSchema,
    {
        let question = Question {
            tool: self.tool.to_string(),
            call_id: self.call_id.to_string(),
            index: self.asked.fetch_add(1, Ordering::Relaxed),
            name,
            message,
            schema: crate::tool::schema::root_schema::<T>(),
        };
        let Some(asker) = self.session.asker() else {
            return Err(ToolError::bad_request(format!(
                "the tool `{}` asks its user a question, and this caller cannot ask one; \
                 tell the user what it needs instead",
                self.tool
            )));
        };
        match asker.ask(&question).await {
            Answer::Accepted(value) => {
                serde_json::from_value(value)
                    .map(Reply::Accepted)
                    .map_err(|e| {
                        ToolError::bad_request(format!(
                            "the user's answer to `{}` does not fit its form: {e}",
                            question.message
                        ))
                    })
            }
            Answer::Declined => Ok(Reply::Declined),
            Answer::Dismissed => Ok(Reply::Dismissed),
            Answer::Later => Err(crate::ask::later()),
            Answer::Unavailable(why) => Err(ToolError::bad_request(format!(
                "the tool `{}` could not ask its user: {why}",
                self.tool
            ))),
        }
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

#[cfg(test)]
mod tests {
    use super::anonymous_scope;

    #[test]
    fn an_anonymous_scope_is_the_prefix_and_32_lowercase_hex_digits() {
        let samples = [
            0,
            1,
            0xabc,
            u128::MAX,
            1 << 127,
            0x0123_4567_89ab_cdef << 40,
        ];
        for random in samples {
            assert_eq!(anonymous_scope(random), format!("anonymous.{random:032x}"));
        }
        for _ in 0..1000 {
            let random = fastrand::u128(..);
            assert_eq!(anonymous_scope(random), format!("anonymous.{random:032x}"));
        }
    }
}
