//! The conversation a call belongs to ([`Session`]): its principal and scopes, its memory of
//! grounded ids, its idempotency scope, its approver and asker.

use std::borrow::Cow;
use std::collections::HashSet;
use std::fmt;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use serde::{Deserialize, Serialize};

use crate::approval::{Approvals, Approver};
use crate::ask::Asker;
use crate::conversation::{ConversationMemory, ConversationStore, Grounding, InMemoryConversation};
use crate::idempotency::KeyMode;

/// Who is calling and under which policy: the conversation id, the principal and its scopes,
/// how idempotency keys are scoped and derived, who approves consequential calls, and the
/// conversation's memory (grounded ids, recovery counts). Cheap to clone; clones share the same
/// conversation.
///
/// ```
/// use toolwright::Session;
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
    /// use toolwright::Session;
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
    /// use toolwright::Session;
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
    /// use toolwright::conversation::MemoryConversationStore;
    /// use toolwright::Session;
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
    /// use toolwright::{KeyMode, Session};
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

    /// Sets who brings a tool's questions ([`ToolContext::ask`](crate::ToolContext::ask)) to the user. The MCP server
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
/// use toolwright::conversation::MemoryConversationStore;
/// use toolwright::{KeyMode, Session};
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
