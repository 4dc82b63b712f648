//! [`ConversationStore`]: what a conversation remembers, kept where every replica of a service
//! (and the same replica after a restart) finds it, and [`MemoryConversationStore`], the one
//! that lives in this process.
//!
//! A store holds three things per conversation: the grounded ids of each kind (bounded, the
//! oldest forgotten first), the model's failures in a row per tool and category (its recovery
//! budget), and approval tickets with their state. A conversation idle for longer than the
//! store's idle time is forgotten whole.
//!
//! Beside conversations it keeps *runs*: a serialized body under an id, held by one holder at a
//! time for a lease ([`ConversationStore::claim_run`]). The agent keeps its runs there
//! (`Agent::run_kept`), and an MCP server its tasks (`McpServer::task_store`), so that another
//! replica continues a run, or answers for a task, and a holder that died gives it up when its
//! lease passes.
//!
//! And it keeps single-use tokens ([`ConversationStore::redeem`]): an MCP server marks there each
//! approval it runs, so an approval runs one call on whichever replica it reaches.
//!
//! Each operation is one atomic step on the store (one round trip for the Redis store), so two
//! replicas serving one conversation at once never see half of the other's update, and a ticket
//! is decided at most once.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::error::Error as StdError;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use tokio::time::Instant;

use super::memory::{FailureCategory, MAX_IDS_PER_KIND};
use super::redeem::{Redeemed, Redemptions};
use super::runs::{RunClaim, Runs, MAX_RUN_BYTES};
use super::slots::{SlotCap, SlotHold, Slots};

/// How long a conversation no one touched is remembered by default: 24 hours.
pub const DEFAULT_IDLE_TTL: Duration = Duration::from_secs(24 * 60 * 60);

/// How long an approval ticket lives by default (waiting, or approved and not yet used): 7 days,
/// so a call asked on Friday is still waiting on Monday.
pub const DEFAULT_APPROVAL_TTL: Duration = Duration::from_secs(7 * 24 * 60 * 60);

/// What an operation of a [`ConversationStore`] returns.
pub type ConversationFuture<'a, T> =
    Pin<Box<dyn Future<Output = Result<T, ConversationStoreError>> + Send + 'a>>;

/// A conversation store failed: unreachable, or it answered something this version cannot read.
#[derive(Debug)]
#[non_exhaustive]
pub enum ConversationStoreError {
    /// The backend failed or could not be reached.
    Backend(Box<dyn StdError + Send + Sync + 'static>),
    /// The store answered something this version cannot read.
    Corrupt(String),
    /// The store does not keep this (a store of the application's own that implements only
    /// the conversation, asked to keep a run).
    Unsupported(&'static str),
    /// A value larger than the store takes.
    TooLarge {
        /// What it was (`a run`).
        what: &'static str,
        /// Its size in bytes.
        bytes: usize,
        /// The most the store takes, in bytes.
        limit: usize,
    },
    /// The store keeps no more of these: it holds `limit`, none of which it may forget now
    /// (a memory store whose every run is held,
    /// [`MAX_MEMORY_RUNS`](super::MAX_MEMORY_RUNS)).
    Full {
        /// What it keeps no more of (`runs`).
        what: &'static str,
        /// How many it keeps at most.
        limit: usize,
    },
}

impl ConversationStoreError {
    /// A backend failure.
    pub fn backend(error: impl StdError + Send + Sync + 'static) -> Self {
        ConversationStoreError::Backend(Box::new(error))
    }
}

impl fmt::Display for ConversationStoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConversationStoreError::Backend(e) => write!(f, "the conversation store failed: {e}"),
            ConversationStoreError::Corrupt(what) => {
                write!(
                    f,
                    "the conversation store answered something unreadable: {what}"
                )
            }
            ConversationStoreError::Unsupported(what) => {
                write!(f, "this conversation store does not keep {what}")
            }
            ConversationStoreError::TooLarge { what, bytes, limit } => write!(
                f,
                "the conversation store takes {what} of at most {limit} bytes, got {bytes}"
            ),
            ConversationStoreError::Full { what, limit } => write!(
                f,
                "the conversation store keeps at most {limit} {what} and may forget none of them now; try again when one ends"
            ),
        }
    }
}

impl StdError for ConversationStoreError {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        match self {
            ConversationStoreError::Backend(e) => Some(&**e),
            ConversationStoreError::Corrupt(_)
            | ConversationStoreError::Unsupported(_)
            | ConversationStoreError::TooLarge { .. }
            | ConversationStoreError::Full { .. } => None,
        }
    }
}

/// What a call needs to know before it is validated: which of its ids are grounded, and whether
/// its exact arguments were approved with edits ([`ConversationStore::prepare`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Prepare {
    /// `(kind, id)` pairs the call's grounded arguments hold.
    pub ids: Vec<(String, String)>,
    /// `(principal, fingerprint)` of a call that requires approval: the arguments a reviewer
    /// approved in their place, if any.
    pub edited_for: Option<(Option<String>, String)>,
}

/// The answer to a [`Prepare`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Prepared {
    /// For each pair of [`Prepare::ids`], in order, whether the conversation knows it.
    pub grounded: Vec<bool>,
    /// The arguments a reviewer approved in place of the call's own.
    pub edited: Option<String>,
}

/// What one call leaves in its conversation ([`ConversationStore::record`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CallRecord {
    /// Ids the call's result grounded, by kind.
    pub ids: Vec<(String, Vec<String>)>,
    /// One more failure in a row of `(tool, category)`; unknown tool names count under `""`.
    pub failures: Vec<(String, FailureCategory)>,
    /// A success of this tool: its failures in a row, and those of unknown names, are
    /// forgotten.
    pub cleared: Option<String>,
}

impl CallRecord {
    /// Whether the record changes nothing.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty() && self.failures.is_empty() && self.cleared.is_none()
    }
}

/// What [`ConversationStore::record`] answers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FailureCounts {
    /// For each of [`CallRecord::failures`], in order, the count in a row after this one.
    pub counts: Vec<u32>,
    /// Whether [`CallRecord::cleared`] forgot failures of that tool itself.
    pub had_failures: bool,
}

/// A call of a tool that requires approval, as the store files it ([`ConversationStore::review`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TicketRequest {
    /// The conversation.
    pub conversation: String,
    /// Who asked.
    pub principal: Option<String>,
    /// The tool.
    pub tool: String,
    /// The provider's call id it was first proposed under.
    pub call_id: String,
    /// The fingerprint of the tool and its exact arguments.
    pub fingerprint: String,
    /// The arguments as a reviewer may see them (sensitive fields redacted).
    pub arguments: String,
    /// How long the ticket lives, waiting or approved and not yet used.
    pub expire_after: Duration,
}

/// The store's answer to a [`TicketRequest`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Review {
    /// Approved: run it (the approval is used up).
    Approved,
    /// Denied, with the reviewer's reason (the denial is used up).
    Denied(String),
    /// Waiting for a reviewer, under this ticket.
    Pending(String),
}

/// Where a ticket stands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum TicketState {
    /// Waiting for a reviewer.
    Waiting,
    /// Approved; the call runs when it is proposed again.
    Approved,
    /// Denied, with the reason the model is told.
    Denied {
        /// Why.
        reason: String,
    },
    /// Approved and run.
    Used,
}

/// One call waiting for (or given) a reviewer's decision.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ticket {
    /// The ticket id reviewers decide it by.
    pub id: String,
    /// Its place in the queue (the cursor of [`WaitingQuery::after`]).
    pub seq: u64,
    /// The conversation.
    pub conversation: String,
    /// Who asked.
    pub principal: Option<String>,
    /// The tool.
    pub tool: String,
    /// The provider's call id it was first proposed under.
    pub call_id: String,
    /// The fingerprint of the tool and its exact arguments.
    pub fingerprint: String,
    /// The arguments, sensitive fields redacted.
    pub arguments: String,
    /// When it was asked, in milliseconds since the Unix epoch.
    pub asked_at_ms: u64,
    /// Where it stands.
    pub state: TicketState,
    /// The arguments a reviewer approved in place of the call's own, redacted.
    pub edited_arguments: Option<String>,
}

/// A reviewer's decision ([`ConversationStore::decide`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Run the call as asked.
    Approve,
    /// Refuse it, with a reason the model is told.
    Deny(String),
    /// Run it with these arguments instead (already validated whole): the approval binds to
    /// their fingerprint.
    ApproveWith {
        /// The edited argument text, what runs.
        arguments: String,
        /// Its fingerprint.
        fingerprint: String,
        /// The same, redacted for reviewers.
        redacted: String,
    },
}

/// The store's answer to a [`Decision`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decided {
    /// This decision is the ticket's.
    Done,
    /// Another reviewer decided first; the ticket stands as given.
    AlreadyDecided(TicketState),
    /// No such ticket: never asked, or expired.
    Unknown,
}

/// Which waiting tickets to list ([`ConversationStore::waiting`]): oldest first, after a
/// cursor, optionally only one principal's or one tool's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WaitingQuery {
    /// Only tickets after this place in the queue (the previous page's `next`).
    pub after: u64,
    /// At most this many.
    pub limit: usize,
    /// Only this principal's tickets.
    pub principal: Option<String>,
    /// Only this tool's tickets.
    pub tool: Option<String>,
}

impl Default for WaitingQuery {
    fn default() -> Self {
        WaitingQuery {
            after: 0,
            limit: 50,
            principal: None,
            tool: None,
        }
    }
}

/// One page of waiting tickets.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WaitingPage {
    /// The tickets, oldest first.
    pub tickets: Vec<Ticket>,
    /// The cursor of the next page, when there may be one.
    pub next: Option<u64>,
}

/// Where conversations are remembered: grounded ids, recovery counts and approval tickets.
///
/// Set it on a session with [`Session::with_store`](crate::Session::with_store); every call in
/// that session then reads and writes its conversation here. [`MemoryConversationStore`] keeps
/// it in this process; `RedisConversationStore` (feature `redis`) in a Redis that every
/// replica shares. Every operation is atomic.
pub trait ConversationStore: Send + Sync + 'static {
    /// Which of `prepare.ids` the conversation knows, and the arguments approved in place of a
    /// call's own. Refreshes the conversation's idle time.
    fn prepare<'a>(
        &'a self,
        conversation: &'a str,
        prepare: &'a Prepare,
    ) -> ConversationFuture<'a, Prepared>;

    /// Remembers what one call left: grounded ids (each kind bounded, the oldest forgotten
    /// first), failures counted, failures forgotten after a success.
    fn record<'a>(
        &'a self,
        conversation: &'a str,
        turn: &'a CallRecord,
    ) -> ConversationFuture<'a, FailureCounts>;

    /// Files a call that requires approval: its decision (used up once answered) if one was
    /// made, else the waiting ticket, else a new one.
    fn review<'a>(&'a self, request: &'a TicketRequest) -> ConversationFuture<'a, Review>;

    /// Decides a waiting ticket; at most one decision per ticket wins.
    fn decide<'a>(
        &'a self,
        ticket: &'a str,
        decision: &'a Decision,
    ) -> ConversationFuture<'a, Decided>;

    /// A ticket, while it lives.
    fn ticket<'a>(&'a self, ticket: &'a str) -> ConversationFuture<'a, Option<Ticket>>;

    /// Waiting tickets, oldest first, one page.
    fn waiting<'a>(&'a self, query: &'a WaitingQuery) -> ConversationFuture<'a, WaitingPage>;

    /// Creates a run under `run` with its first `body`, held by `holder` for `lease`, living
    /// `ttl` from now; `false` (and nothing written) when a run of that id lives already. The
    /// agent keeps its runs with these four operations (`Agent::run_kept`). A store with a
    /// bound on its runs that may forget none of them answers [`ConversationStoreError::Full`]
    /// (the memory store when its [`MAX_MEMORY_RUNS`](super::MAX_MEMORY_RUNS) runs are all
    /// held).
    ///
    /// A store that keeps no runs answers [`ConversationStoreError::Unsupported`] (the
    /// default).
    fn create_run<'a>(
        &'a self,
        run: &'a str,
        holder: &'a str,
        body: &'a str,
        lease: Duration,
        ttl: Duration,
    ) -> ConversationFuture<'a, bool> {
        let _ = (run, holder, body, lease, ttl);
        no_runs()
    }

    /// Claims a run for `holder` for `lease`: its body when no one else holds it (or their
    /// lease passed), [`RunClaim::Busy`] when someone does, [`RunClaim::Outgrown`] (and
    /// nothing claimed) when a save of it was refused for its size. A holder may claim again
    /// what it holds, which extends its lease.
    fn claim_run<'a>(
        &'a self,
        run: &'a str,
        holder: &'a str,
        lease: Duration,
    ) -> ConversationFuture<'a, RunClaim> {
        let _ = (run, holder, lease);
        no_runs()
    }

    /// Saves a run's body, the run then living `ttl` from now, and releases `holder`'s hold
    /// (`hold: None`) or keeps it for `hold` from now (a checkpoint of a run still driven);
    /// `false` (and nothing written) when another holder claimed it since `holder`'s lease
    /// passed.
    ///
    /// A body larger than [`MAX_RUN_BYTES`] is refused ([`ConversationStoreError::TooLarge`]),
    /// and in the same atomic step the run is left *outgrown* (unless another holds it): the
    /// body saved before is dropped, a claim answers [`RunClaim::Outgrown`] and a load
    /// [`ConversationStoreError::TooLarge`], for `ttl`. A holder that went past what the store
    /// keeps so leaves nothing another replica would continue from an earlier point (and
    /// repeat what the holder did since); a later save of a body that fits replaces it.
    fn save_run<'a>(
        &'a self,
        run: &'a str,
        holder: &'a str,
        body: &'a str,
        ttl: Duration,
        hold: Option<Duration>,
    ) -> ConversationFuture<'a, bool> {
        let _ = (run, holder, body, ttl, hold);
        no_runs()
    }

    /// A run's body as last saved (or created with), whoever holds it; `None` for no such run,
    /// [`ConversationStoreError::TooLarge`] for a run outgrown (see [`save_run`](Self::save_run)).
    fn load_run<'a>(&'a self, run: &'a str) -> ConversationFuture<'a, Option<String>> {
        let _ = run;
        no_runs()
    }

    /// Marks `principal`'s single-use `token` used for `ttl` (by the store's clock), in one
    /// atomic step: [`Redeemed::Now`] when this call marked it, [`Redeemed::AlreadyUsed`] when
    /// it was marked and has not expired, [`Redeemed::Full`] when the principal has
    /// `max_per_principal` unexpired tokens marked (other principals are not affected). An MCP
    /// server marks each approval it runs here (`McpServer::request_state_store`), so one
    /// approval runs one call on whichever replica it reaches.
    ///
    /// A store that keeps no tokens answers [`ConversationStoreError::Unsupported`] (the
    /// default); what it would have approved is then refused.
    fn redeem<'a>(
        &'a self,
        principal: Option<&'a str>,
        token: &'a str,
        ttl: Duration,
        max_per_principal: usize,
    ) -> ConversationFuture<'a, Redeemed> {
        let _ = (principal, token, ttl, max_per_principal);
        Box::pin(std::future::ready(Err(
            ConversationStoreError::Unsupported("single-use tokens"),
        )))
    }

    /// Holds a place named `slot` under every one of `caps` for `lease` from now (by the
    /// store's clock), in one atomic step: [`SlotHold::Held`] when it holds under all of them
    /// (a place held already is renewed, never refused), [`SlotHold::Full`] naming the first cap
    /// with as many unexpired places as it allows (and nothing held). A place is given back by
    /// [`release_slot`](Self::release_slot) or when its lease passes unrenewed. An MCP server
    /// with a task store (`McpServer::task_store`) holds a place here for each task call, so
    /// its caps count the tasks working on every replica.
    ///
    /// Every scope's places are bounded by its cap. A store that keeps no places answers
    /// [`ConversationStoreError::Unsupported`] (the default).
    fn hold_slot<'a>(
        &'a self,
        caps: &'a [SlotCap<'a>],
        slot: &'a str,
        lease: Duration,
    ) -> ConversationFuture<'a, SlotHold> {
        let _ = (caps, slot, lease);
        Box::pin(std::future::ready(Err(
            ConversationStoreError::Unsupported("slots"),
        )))
    }

    /// Gives back the place `slot` holds under each of `scopes` (nothing for a place not held).
    fn release_slot<'a>(
        &'a self,
        scopes: &'a [&'a str],
        slot: &'a str,
    ) -> ConversationFuture<'a, ()> {
        let _ = (scopes, slot);
        Box::pin(std::future::ready(Err(
            ConversationStoreError::Unsupported("slots"),
        )))
    }
}

/// What a store that keeps no runs answers.
fn no_runs<'a, T: Send + 'a>() -> ConversationFuture<'a, T> {
    Box::pin(std::future::ready(Err(
        ConversationStoreError::Unsupported("runs"),
    )))
}

/// Refuses a run's body over [`MAX_RUN_BYTES`].
pub(crate) fn sized(body: &str) -> Result<(), ConversationStoreError> {
    if body.len() > MAX_RUN_BYTES {
        return Err(ConversationStoreError::TooLarge {
            what: "a run",
            bytes: body.len(),
            limit: MAX_RUN_BYTES,
        });
    }
    Ok(())
}

/// Milliseconds since the Unix epoch, now (when a ticket was asked, for reviewers).
pub(crate) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// The [`ConversationStore`] of one process: gone when it exits. The default for a session
/// that names no store, and the reference the Redis store is tested against.
///
/// ```
/// use toolwright_core::conversation::MemoryConversationStore;
/// use std::time::Duration;
///
/// let store = MemoryConversationStore::builder()
///     .idle_ttl(Duration::from_secs(3600))
///     .max_ids_per_kind(1000)
///     .build();
/// # let _ = store;
/// ```
pub struct MemoryConversationStore {
    idle_ttl: Duration,
    max_ids: usize,
    inner: Mutex<Inner>,
    runs: Mutex<Runs>,
    redemptions: Mutex<Redemptions>,
    slots: Mutex<Slots>,
}

#[derive(Default)]
struct Inner {
    conversations: HashMap<String, Conversation>,
    tickets: HashMap<String, Entry>,
    /// Waiting tickets by their place in the queue.
    waiting: BTreeMap<u64, String>,
    /// `(conversation, principal, fingerprint)` -> ticket id. Kept apart from the
    /// conversation, for as long as the ticket lives: a call approved after its conversation
    /// went idle still finds its decision.
    approvals: HashMap<Approving, String>,
    seq: u64,
    /// Writes since the last sweep: expired entries are also skipped where they are read, so
    /// the sweep (a walk over everything) runs only every [`SWEEP_EVERY`] writes.
    writes: u32,
}

const SWEEP_EVERY: u32 = 1024;

type Approving = (String, Option<String>, String);

struct Conversation {
    touched: Instant,
    ids: HashMap<String, Ids>,
    failures: HashMap<(String, FailureCategory), u32>,
}

#[derive(Default)]
struct Ids {
    known: HashSet<String>,
    order: VecDeque<String>,
}

struct Entry {
    ticket: Ticket,
    expires: Instant,
    ttl: Duration,
    /// The edited arguments, unredacted: what runs.
    edited: Option<String>,
    edited_fingerprint: Option<String>,
}

impl Default for MemoryConversationStore {
    fn default() -> Self {
        MemoryConversationStore::builder().build()
    }
}

impl MemoryConversationStore {
    /// A store with the defaults: conversations idle 24 h forgotten, 10,000 ids per kind.
    pub fn new() -> Self {
        MemoryConversationStore::default()
    }

    /// A builder to change the defaults.
    pub fn builder() -> ConversationStoreBuilder<MemoryConversationStore> {
        ConversationStoreBuilder::new()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn runs(&self) -> std::sync::MutexGuard<'_, Runs> {
        self.runs.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Inner {
    /// The conversation, forgotten first if it was idle too long; touched now.
    fn conversation(&mut self, id: &str, idle: Duration, now: Instant) -> &mut Conversation {
        if self
            .conversations
            .get(id)
            .is_some_and(|c| now.saturating_duration_since(c.touched) >= idle)
        {
            self.conversations.remove(id);
        }
        let conversation =
            self.conversations
                .entry(id.to_owned())
                .or_insert_with(|| Conversation {
                    touched: now,
                    ids: HashMap::new(),
                    failures: HashMap::new(),
                });
        conversation.touched = now;
        conversation
    }

    /// Forgets expired tickets and idle conversations, every [`SWEEP_EVERY`] writes.
    fn sweep(&mut self, idle: Duration, now: Instant) {
        self.writes += 1;
        if self.writes < SWEEP_EVERY {
            return;
        }
        self.writes = 0;
        self.conversations
            .retain(|_, c| now.saturating_duration_since(c.touched) < idle);
        let expired: Vec<String> = self
            .tickets
            .iter()
            .filter(|(_, e)| e.expires <= now)
            .map(|(id, _)| id.clone())
            .collect();
        for id in expired {
            if let Some(entry) = self.tickets.remove(&id) {
                self.waiting.remove(&entry.ticket.seq);
            }
        }
        let tickets = &self.tickets;
        self.approvals.retain(|_, id| tickets.contains_key(id));
    }

    fn live(&self, id: &str, now: Instant) -> Option<&Entry> {
        self.tickets.get(id).filter(|e| e.expires > now)
    }
}

impl ConversationStore for MemoryConversationStore {
    fn prepare<'a>(
        &'a self,
        conversation: &'a str,
        prepare: &'a Prepare,
    ) -> ConversationFuture<'a, Prepared> {
        let now = Instant::now();
        let mut inner = self.lock();
        let edited_id = prepare.edited_for.as_ref().and_then(|(principal, fp)| {
            let key = (conversation.to_owned(), principal.clone(), fp.clone());
            inner.approvals.get(&key).cloned()
        });
        let c = inner.conversation(conversation, self.idle_ttl, now);
        let grounded = prepare
            .ids
            .iter()
            .map(|(kind, id)| c.ids.get(kind).is_some_and(|ids| ids.known.contains(id)))
            .collect();
        let edited = edited_id
            .and_then(|id| inner.live(&id, now))
            .filter(|e| matches!(e.ticket.state, TicketState::Approved | TicketState::Used))
            .and_then(|e| e.edited.clone());
        Box::pin(std::future::ready(Ok(Prepared { grounded, edited })))
    }

    fn record<'a>(
        &'a self,
        conversation: &'a str,
        turn: &'a CallRecord,
    ) -> ConversationFuture<'a, FailureCounts> {
        let now = Instant::now();
        let max = self.max_ids;
        let mut inner = self.lock();
        inner.sweep(self.idle_ttl, now);
        let c = inner.conversation(conversation, self.idle_ttl, now);
        for (kind, ids) in &turn.ids {
            let entry = c.ids.entry(kind.clone()).or_default();
            for id in ids {
                if entry.known.insert(id.clone()) {
                    entry.order.push_back(id.clone());
                    while entry.order.len() > max {
                        if let Some(oldest) = entry.order.pop_front() {
                            entry.known.remove(&oldest);
                        }
                    }
                }
            }
        }
        let mut recorded = FailureCounts::default();
        if let Some(tool) = &turn.cleared {
            recorded.had_failures = c.failures.keys().any(|(name, _)| name == tool);
            c.failures
                .retain(|(name, _), _| name != tool && !name.is_empty());
        }
        for (tool, category) in &turn.failures {
            let count = c.failures.entry((tool.clone(), *category)).or_insert(0);
            *count = count.saturating_add(1);
            recorded.counts.push(*count);
        }
        Box::pin(std::future::ready(Ok(recorded)))
    }

    fn review<'a>(&'a self, request: &'a TicketRequest) -> ConversationFuture<'a, Review> {
        let now = Instant::now();
        let mut inner = self.lock();
        inner.sweep(self.idle_ttl, now);
        let key = (
            request.conversation.clone(),
            request.principal.clone(),
            request.fingerprint.clone(),
        );
        let existing = inner.approvals.get(&key).cloned();
        if let Some(id) = existing {
            if let Some(entry) = inner.tickets.get_mut(&id).filter(|e| e.expires > now) {
                // A ticket approved with edits runs only the edited call; its original call
                // waits (its next proposal is given the edit in its place).
                let original = entry
                    .edited_fingerprint
                    .as_ref()
                    .is_some_and(|edited| *edited != request.fingerprint);
                let review = match &entry.ticket.state {
                    TicketState::Waiting => Some(Review::Pending(id.clone())),
                    TicketState::Approved if original => Some(Review::Pending(id.clone())),
                    TicketState::Approved => Some(Review::Approved),
                    TicketState::Denied { reason } => Some(Review::Denied(reason.clone())),
                    TicketState::Used => None,
                };
                if let Some(review) = review {
                    if !matches!(review, Review::Pending(_)) {
                        entry.ticket.state = TicketState::Used;
                        inner.approvals.remove(&key);
                    }
                    return Box::pin(std::future::ready(Ok(review)));
                }
            }
        }
        inner.seq += 1;
        let seq = inner.seq;
        let id = format!("t{seq}-{:08x}", fastrand::u32(..));
        let ticket = Ticket {
            id: id.clone(),
            seq,
            conversation: request.conversation.clone(),
            principal: request.principal.clone(),
            tool: request.tool.clone(),
            call_id: request.call_id.clone(),
            fingerprint: request.fingerprint.clone(),
            arguments: request.arguments.clone(),
            asked_at_ms: now_ms(),
            state: TicketState::Waiting,
            edited_arguments: None,
        };
        inner.tickets.insert(
            id.clone(),
            Entry {
                ticket,
                expires: now + request.expire_after,
                ttl: request.expire_after,
                edited: None,
                edited_fingerprint: None,
            },
        );
        inner.waiting.insert(seq, id.clone());
        inner.approvals.insert(key, id.clone());
        Box::pin(std::future::ready(Ok(Review::Pending(id))))
    }

    fn decide<'a>(
        &'a self,
        ticket: &'a str,
        decision: &'a Decision,
    ) -> ConversationFuture<'a, Decided> {
        let now = Instant::now();
        let mut inner = self.lock();
        let Some(entry) = inner.tickets.get_mut(ticket).filter(|e| e.expires > now) else {
            return Box::pin(std::future::ready(Ok(Decided::Unknown)));
        };
        if entry.ticket.state != TicketState::Waiting {
            let state = entry.ticket.state.clone();
            return Box::pin(std::future::ready(Ok(Decided::AlreadyDecided(state))));
        }
        entry.ticket.state = match decision {
            Decision::Approve | Decision::ApproveWith { .. } => TicketState::Approved,
            Decision::Deny(reason) => TicketState::Denied {
                reason: reason.clone(),
            },
        };
        // The reviewer has until the ticket's time runs out again to see it used.
        entry.expires = now + entry.ttl;
        let seq = entry.ticket.seq;
        let edited = match decision {
            Decision::ApproveWith {
                arguments,
                fingerprint,
                redacted,
            } => {
                entry.edited = Some(arguments.clone());
                entry.edited_fingerprint = Some(fingerprint.clone());
                entry.ticket.edited_arguments = Some(redacted.clone());
                Some((
                    entry.ticket.conversation.clone(),
                    entry.ticket.principal.clone(),
                    fingerprint.clone(),
                ))
            }
            _ => None,
        };
        inner.waiting.remove(&seq);
        if let Some((conversation, principal, fingerprint)) = edited {
            inner
                .approvals
                .insert((conversation, principal, fingerprint), ticket.to_owned());
        }
        Box::pin(std::future::ready(Ok(Decided::Done)))
    }

    fn ticket<'a>(&'a self, ticket: &'a str) -> ConversationFuture<'a, Option<Ticket>> {
        let now = Instant::now();
        let inner = self.lock();
        let found = inner.live(ticket, now).map(|e| e.ticket.clone());
        Box::pin(std::future::ready(Ok(found)))
    }

    fn waiting<'a>(&'a self, query: &'a WaitingQuery) -> ConversationFuture<'a, WaitingPage> {
        let now = Instant::now();
        let inner = self.lock();
        let mut page = WaitingPage::default();
        for (seq, id) in inner.waiting.range(query.after.saturating_add(1)..) {
            if page.tickets.len() >= query.limit {
                page.next = page.tickets.last().map(|t| t.seq);
                break;
            }
            let Some(entry) = inner.live(id, now) else {
                continue;
            };
            let t = &entry.ticket;
            let wanted = query
                .principal
                .as_ref()
                .is_none_or(|p| t.principal.as_ref() == Some(p))
                && query.tool.as_ref().is_none_or(|tool| &t.tool == tool);
            if wanted && *seq > query.after {
                page.tickets.push(t.clone());
            }
        }
        Box::pin(std::future::ready(Ok(page)))
    }

    fn create_run<'a>(
        &'a self,
        run: &'a str,
        holder: &'a str,
        body: &'a str,
        lease: Duration,
        ttl: Duration,
    ) -> ConversationFuture<'a, bool> {
        let created = sized(body).and_then(|()| self.runs().create(run, holder, body, lease, ttl));
        Box::pin(std::future::ready(created))
    }

    fn claim_run<'a>(
        &'a self,
        run: &'a str,
        holder: &'a str,
        lease: Duration,
    ) -> ConversationFuture<'a, RunClaim> {
        let claim = self.runs().claim(run, holder, lease);
        Box::pin(std::future::ready(Ok(claim)))
    }

    fn save_run<'a>(
        &'a self,
        run: &'a str,
        holder: &'a str,
        body: &'a str,
        ttl: Duration,
        hold: Option<Duration>,
    ) -> ConversationFuture<'a, bool> {
        let saved = self.runs().save(run, holder, body, ttl, hold);
        Box::pin(std::future::ready(saved))
    }

    fn load_run<'a>(&'a self, run: &'a str) -> ConversationFuture<'a, Option<String>> {
        let body = self.runs().load(run);
        Box::pin(std::future::ready(body))
    }

    /// Under the store's lock, by this process's clock; at most
    /// [`MAX_MEMORY_REDEMPTIONS`](super::MAX_MEMORY_REDEMPTIONS) unexpired tokens in all.
    fn redeem<'a>(
        &'a self,
        principal: Option<&'a str>,
        token: &'a str,
        ttl: Duration,
        max_per_principal: usize,
    ) -> ConversationFuture<'a, Redeemed> {
        let redeemed = self
            .redemptions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .redeem(principal, token, ttl, max_per_principal);
        Box::pin(std::future::ready(Ok(redeemed)))
    }

    fn hold_slot<'a>(
        &'a self,
        caps: &'a [SlotCap<'a>],
        slot: &'a str,
        lease: Duration,
    ) -> ConversationFuture<'a, SlotHold> {
        let held = self
            .slots
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .hold(caps, slot, lease);
        Box::pin(std::future::ready(Ok(held)))
    }

    fn release_slot<'a>(
        &'a self,
        scopes: &'a [&'a str],
        slot: &'a str,
    ) -> ConversationFuture<'a, ()> {
        self.slots
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .release(scopes, slot);
        Box::pin(std::future::ready(Ok(())))
    }
}

impl fmt::Debug for MemoryConversationStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let inner = self.lock();
        f.debug_struct("MemoryConversationStore")
            .field("conversations", &inner.conversations.len())
            .field("tickets", &inner.tickets.len())
            .field("idle_ttl", &self.idle_ttl)
            .finish()
    }
}

/// Builds a conversation store: how long an idle conversation is remembered and how many ids of
/// one kind it keeps.
#[derive(Debug, Clone)]
pub struct ConversationStoreBuilder<S> {
    pub(crate) idle_ttl: Duration,
    pub(crate) max_ids: usize,
    #[cfg(feature = "redis")]
    pub(crate) prefix: String,
    _store: std::marker::PhantomData<fn() -> S>,
}

impl<S> ConversationStoreBuilder<S> {
    pub(crate) fn new() -> Self {
        ConversationStoreBuilder {
            idle_ttl: DEFAULT_IDLE_TTL,
            max_ids: MAX_IDS_PER_KIND,
            #[cfg(feature = "redis")]
            prefix: "toolwright:conv:".to_owned(),
            _store: std::marker::PhantomData,
        }
    }

    /// A conversation no call touched for this long is forgotten whole. Default 24 h.
    pub fn idle_ttl(mut self, idle: Duration) -> Self {
        self.idle_ttl = idle;
        self
    }

    /// At most this many ids of one kind per conversation; beyond it the oldest is forgotten.
    /// Default [`MAX_IDS_PER_KIND`].
    pub fn max_ids_per_kind(mut self, max: usize) -> Self {
        self.max_ids = max.max(1);
        self
    }
}

impl ConversationStoreBuilder<MemoryConversationStore> {
    /// The store.
    pub fn build(self) -> MemoryConversationStore {
        MemoryConversationStore {
            idle_ttl: self.idle_ttl,
            max_ids: self.max_ids,
            inner: Mutex::new(Inner::default()),
            runs: Mutex::new(Runs::default()),
            redemptions: Mutex::new(Redemptions::default()),
            slots: Mutex::new(Slots::default()),
        }
    }
}

/// A shared store is a store: `Arc<MemoryConversationStore>` and `Arc<dyn ConversationStore>`
/// both serve where a store is wanted.
impl<S: ConversationStore + ?Sized> ConversationStore for std::sync::Arc<S> {
    fn prepare<'a>(
        &'a self,
        conversation: &'a str,
        prepare: &'a Prepare,
    ) -> ConversationFuture<'a, Prepared> {
        (**self).prepare(conversation, prepare)
    }

    fn record<'a>(
        &'a self,
        conversation: &'a str,
        turn: &'a CallRecord,
    ) -> ConversationFuture<'a, FailureCounts> {
        (**self).record(conversation, turn)
    }

    fn review<'a>(&'a self, request: &'a TicketRequest) -> ConversationFuture<'a, Review> {
        (**self).review(request)
    }

    fn decide<'a>(
        &'a self,
        ticket: &'a str,
        decision: &'a Decision,
    ) -> ConversationFuture<'a, Decided> {
        (**self).decide(ticket, decision)
    }

    fn ticket<'a>(&'a self, ticket: &'a str) -> ConversationFuture<'a, Option<Ticket>> {
        (**self).ticket(ticket)
    }

    fn waiting<'a>(&'a self, query: &'a WaitingQuery) -> ConversationFuture<'a, WaitingPage> {
        (**self).waiting(query)
    }

    fn create_run<'a>(
        &'a self,
        run: &'a str,
        holder: &'a str,
        body: &'a str,
        lease: Duration,
        ttl: Duration,
    ) -> ConversationFuture<'a, bool> {
        (**self).create_run(run, holder, body, lease, ttl)
    }

    fn claim_run<'a>(
        &'a self,
        run: &'a str,
        holder: &'a str,
        lease: Duration,
    ) -> ConversationFuture<'a, RunClaim> {
        (**self).claim_run(run, holder, lease)
    }

    fn save_run<'a>(
        &'a self,
        run: &'a str,
        holder: &'a str,
        body: &'a str,
        ttl: Duration,
        hold: Option<Duration>,
    ) -> ConversationFuture<'a, bool> {
        (**self).save_run(run, holder, body, ttl, hold)
    }

    fn load_run<'a>(&'a self, run: &'a str) -> ConversationFuture<'a, Option<String>> {
        (**self).load_run(run)
    }

    fn redeem<'a>(
        &'a self,
        principal: Option<&'a str>,
        token: &'a str,
        ttl: Duration,
        max_per_principal: usize,
    ) -> ConversationFuture<'a, Redeemed> {
        (**self).redeem(principal, token, ttl, max_per_principal)
    }

    fn hold_slot<'a>(
        &'a self,
        caps: &'a [SlotCap<'a>],
        slot: &'a str,
        lease: Duration,
    ) -> ConversationFuture<'a, SlotHold> {
        (**self).hold_slot(caps, slot, lease)
    }

    fn release_slot<'a>(
        &'a self,
        scopes: &'a [&'a str],
        slot: &'a str,
    ) -> ConversationFuture<'a, ()> {
        (**self).release_slot(scopes, slot)
    }
}
