//! Human approval of consequential actions (`#[tool(requires_approval)]`).
//!
//! For actions that move money, cannot be undone or reach people outside (a refund, a wire, an
//! email), a person's decision is safer than a model's confident guess. A tool that requires
//! approval runs only when the session's [`Approver`] approves that exact call: the tool and its
//! arguments, by their [`Fingerprint`], so a model cannot have one amount approved and send
//! another, and (with [`ApprovalQueue`]) only for the principal and conversation that asked.
//!
//! The decision is an [`Approval`]: run it, refuse it (`approval_denied`, the model is told not
//! to retry), or not decided yet (the outcome is [`Status::Pending`](crate::Status::Pending)
//! with a ticket, `{"status":"pending","message":"...","data":{"ticket":"..."}}`). A session
//! with no approver refuses every such call. Approval is the last stage of the validation seam,
//! after authorization. For a tool that is not idempotent, the idempotency store is asked first:
//! a call that already ran under its key is replayed (and one still running is
//! `duplicate_in_flight`) without asking again, so a re-delivered approved call can never be
//! denied after the fact. A refused or pending call never reaches the breaker or the tool, and
//! leaves its idempotency key as it found it.
//!
//! [`Approvals`] keeps each waiting call as a ticket in a
//! [`ConversationStore`], so tickets survive restarts and
//! any replica decides them (a session given a store files its calls there); [`ApprovalQueue`]
//! is the same in one process's memory. Either queues each new call for a person to decide and
//! answers the same call again, proposed after the decision, with that decision (once):
//!
//! ```
//! use std::sync::Arc;
//! use toolwright::approval::ApprovalQueue;
//! use toolwright::Session;
//!
//! let queue = Arc::new(ApprovalQueue::new());
//! let session = Session::new("conv-7").with_approver(Arc::clone(&queue));
//! // ... a call of a tool that requires approval comes back `pending` with a ticket;
//! // a person reviews `queue.waiting()` and decides:
//! for request in queue.waiting() {
//!     if request.tool == "refund_order" {
//!         queue.approve(&request.ticket);
//!     }
//! }
//! // the model's next proposal of the same call now runs.
//! # let _ = session;
//! ```

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use crate::conversation::{
    ConversationStore, ConversationStoreError, Decided, Decision as Verdict, Review, Ticket,
    TicketRequest, TicketState, WaitingPage, WaitingQuery, DEFAULT_APPROVAL_TTL,
};

use crate::idempotency::Fingerprint;
use crate::outcome::{ErrorKind, Failure};
use crate::runtime::clock::ClockHandle;
use crate::runtime::contain;

/// One call waiting for a decision: what the approver sees.
pub struct ApprovalRequest<'a> {
    pub(crate) conversation: &'a str,
    pub(crate) principal: Option<&'a str>,
    pub(crate) scopes: &'a [String],
    pub(crate) tool: &'a str,
    pub(crate) call_id: &'a str,
    pub(crate) arguments: &'a str,
    pub(crate) redacted: String,
    pub(crate) fingerprint: Fingerprint,
}

impl ApprovalRequest<'_> {
    /// The id of the conversation the call belongs to ([`Session::id`](crate::Session::id)).
    pub fn conversation(&self) -> &str {
        self.conversation
    }

    /// Who asked, when the session names a principal.
    pub fn principal(&self) -> Option<&str> {
        self.principal
    }

    /// The scopes the principal holds.
    pub fn scopes(&self) -> &[String] {
        self.scopes
    }

    /// The tool.
    pub fn tool(&self) -> &str {
        self.tool
    }

    /// The provider's call id.
    pub fn call_id(&self) -> &str {
        self.call_id
    }

    /// The argument text as the model sent it (validated).
    pub fn arguments(&self) -> &str {
        self.arguments
    }

    /// The arguments read into `T`: the tool's own argument struct (`WireMoneyArgs` for
    /// `fn wire_money`, also `<WireMoney as Tool>::Args`), or a type of the approver's own
    /// with the fields it decides on. The text was validated against the tool's arguments, so
    /// the tool's own struct always reads; another type may not, and the error says where.
    ///
    /// ```
    /// use toolwright::approval::{Approval, ApprovalRequest};
    ///
    /// #[derive(serde::Deserialize)]
    /// struct Wire {
    ///     amount_cents: u64,
    /// }
    ///
    /// fn policy(request: &ApprovalRequest<'_>) -> Approval {
    ///     match request.arguments_as::<Wire>() {
    ///         Ok(wire) if wire.amount_cents < 10_000 => Approval::Approved,
    ///         Ok(_) => Approval::Denied { reason: "100 dollars or more need a second person".into() },
    ///         Err(e) => Approval::Denied { reason: e.to_string() },
    ///     }
    /// }
    /// # let _ = policy;
    /// ```
    pub fn arguments_as<T: serde::de::DeserializeOwned>(&self) -> Result<T, ArgumentsError> {
        let mut deserializer = serde_json::Deserializer::from_str(self.arguments);
        serde_path_to_error::deserialize(&mut deserializer).map_err(|e| ArgumentsError {
            tool: self.tool.to_owned(),
            target: std::any::type_name::<T>(),
            path: e.path().to_string(),
            message: e.into_inner().to_string(),
        })
    }

    /// The arguments as a reviewer or a log may see them: every `#[arg(sensitive)]` field and
    /// every field the tool does not declare replaced by `"[redacted]"`.
    pub fn redacted_arguments(&self) -> &str {
        &self.redacted
    }

    /// The tool and its arguments, canonicalized and hashed: the same call proposed again has
    /// the same fingerprint, a call with any other argument has another.
    pub fn fingerprint(&self) -> &Fingerprint {
        &self.fingerprint
    }
}

impl fmt::Debug for ApprovalRequest<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ApprovalRequest")
            .field("conversation", &self.conversation)
            .field("principal", &self.principal)
            .field("tool", &self.tool)
            .field("call_id", &self.call_id)
            .field("arguments", &self.redacted_arguments())
            .finish()
    }
}

/// Why [`ApprovalRequest::arguments_as`] could not read the arguments as the type asked for.
///
/// It names the tool, the type and the field, with serde's message: "the arguments of
/// `wire_money` do not read as `Dollars`: at `amount_cents`: invalid type: integer `202`,
/// expected a string". That message may quote a scalar it did not expect, so a reason built
/// from it should not reach the model when the field is `#[arg(sensitive)]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArgumentsError {
    tool: String,
    target: &'static str,
    path: String,
    message: String,
}

impl ArgumentsError {
    /// Where the value that did not fit is: `amount_cents`, `lines[0].sku`, or `.` for the
    /// arguments as a whole.
    pub fn path(&self) -> &str {
        &self.path
    }
}

impl fmt::Display for ArgumentsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let target = short_type_name(self.target);
        write!(
            f,
            "the arguments of `{}` do not read as `{target}`: at `{}`: {}",
            self.tool, self.path, self.message
        )
    }
}

impl std::error::Error for ArgumentsError {}

/// `Vec<Dollars>` for `alloc::vec::Vec<my_crate::billing::Dollars>`: each path shortened to its
/// last segment, as a reader writes the type.
fn short_type_name(full: &str) -> String {
    let mut out = String::with_capacity(full.len());
    let mut segment_start = 0;
    for (i, c) in full.char_indices() {
        if c.is_alphanumeric() || c == '_' {
            continue;
        }
        if c == ':' {
            segment_start = i + 1;
            continue;
        }
        out.push_str(&full[segment_start..i]);
        out.push(c);
        segment_start = i + c.len_utf8();
    }
    out.push_str(&full[segment_start..]);
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn type_names_are_shortened_to_what_a_reader_writes() {
        assert_eq!(super::short_type_name("app::billing::Dollars"), "Dollars");
        assert_eq!(
            super::short_type_name("alloc::vec::Vec<app::Line>"),
            "Vec<Line>"
        );
        assert_eq!(
            super::short_type_name("std::collections::HashMap<alloc::string::String, u32>"),
            "HashMap<String, u32>"
        );
        assert_eq!(
            super::short_type_name("(u8, [app::Id; 2])"),
            "(u8, [Id; 2])"
        );
    }
}

/// An approver's decision on one call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Approval {
    /// Run it.
    Approved,
    /// Do not run it; the reason reaches the model (`approval_denied`).
    Denied {
        /// Why, in words the model can pass on to the user.
        reason: String,
    },
    /// Not decided yet; the call comes back `pending` with this ticket.
    Pending {
        /// How the application and the person deciding refer to the request.
        ticket: String,
    },
    /// The approver could not be asked (its store is unreachable): the call does not run and
    /// the model is told `unavailable`, so it may try again later.
    Unavailable {
        /// What went wrong, for the log and the model.
        reason: String,
    },
}

/// Decides whether a call of a tool that requires approval may run. Set on a session with
/// [`Session::with_approver`](crate::Session::with_approver).
///
/// A closure `Fn(&ApprovalRequest) -> Approval` is an approver (a fixed policy); an approver
/// that waits for a person either awaits the answer in [`Approver::review`] or answers
/// [`Approval::Pending`] and decides the call when it is proposed again ([`ApprovalQueue`]).
pub trait Approver: Send + Sync + 'static {
    /// The decision on one call.
    fn review<'a>(
        &'a self,
        request: &'a ApprovalRequest<'a>,
    ) -> Pin<Box<dyn Future<Output = Approval> + Send + 'a>>;
}

impl<F> Approver for F
where
    F: Fn(&ApprovalRequest<'_>) -> Approval + Send + Sync + 'static,
{
    fn review<'a>(
        &'a self,
        request: &'a ApprovalRequest<'a>,
    ) -> Pin<Box<dyn Future<Output = Approval> + Send + 'a>> {
        let decision = self(request);
        Box::pin(std::future::ready(decision))
    }
}

/// A call in an [`ApprovalQueue`] waiting for a person.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Waiting {
    /// The ticket to decide it by.
    pub ticket: String,
    /// The conversation.
    pub session: String,
    /// Who asked, when the session names a principal.
    pub principal: Option<String>,
    /// The tool.
    pub tool: String,
    /// The call id it was first proposed under.
    pub call_id: String,
    /// The arguments, sensitive fields redacted.
    pub arguments: String,
}

#[derive(Debug)]
enum Decision {
    /// Waiting, with its place in the queue.
    Waiting(u64, Waiting),
    Approved,
    Denied(String),
}

/// Whose call a decision is for: its conversation, its principal and its fingerprint. A
/// decision is never used for another principal's call, even in a conversation of the same id.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Asker {
    conversation: String,
    principal: Option<String>,
    fingerprint: Fingerprint,
}

#[derive(Default)]
struct Queue {
    next: u64,
    /// By who asked (conversation and principal) and the call's fingerprint.
    entries: HashMap<Asker, Decision>,
    tickets: HashMap<String, Asker>,
}

/// An in-memory [`Approver`]: each new call waits for a person ([`ApprovalQueue::waiting`],
/// [`ApprovalQueue::approve`], [`ApprovalQueue::deny`]); the same call (same conversation,
/// principal, tool and arguments) proposed after the decision gets it, once. One process only: several
/// replicas need an approver backed by a shared store.
#[derive(Default)]
pub struct ApprovalQueue {
    queue: Mutex<Queue>,
}

impl ApprovalQueue {
    /// An empty queue.
    pub fn new() -> Self {
        ApprovalQueue::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The calls waiting for a decision, oldest first.
    pub fn waiting(&self) -> Vec<Waiting> {
        let queue = self.lock();
        let mut waiting: Vec<(u64, Waiting)> = queue
            .entries
            .values()
            .filter_map(|d| match d {
                Decision::Waiting(n, w) => Some((*n, w.clone())),
                _ => None,
            })
            .collect();
        waiting.sort_by_key(|(n, _)| *n);
        waiting.into_iter().map(|(_, w)| w).collect()
    }

    /// Approves a waiting call; `false` if the ticket is unknown or already decided.
    pub fn approve(&self, ticket: &str) -> bool {
        self.decide(ticket, Decision::Approved)
    }

    /// Denies a waiting call with a reason the model will read; `false` if the ticket is
    /// unknown or already decided.
    pub fn deny(&self, ticket: &str, reason: impl Into<String>) -> bool {
        self.decide(ticket, Decision::Denied(reason.into()))
    }

    fn decide(&self, ticket: &str, decision: Decision) -> bool {
        let mut queue = self.lock();
        let Some(key) = queue.tickets.get(ticket).cloned() else {
            return false;
        };
        match queue.entries.get_mut(&key) {
            Some(entry @ Decision::Waiting(..)) => {
                *entry = decision;
                true
            }
            _ => false,
        }
    }
}

impl Approver for ApprovalQueue {
    fn review<'a>(
        &'a self,
        request: &'a ApprovalRequest<'a>,
    ) -> Pin<Box<dyn Future<Output = Approval> + Send + 'a>> {
        let key = Asker {
            conversation: request.conversation.to_owned(),
            principal: request.principal.map(str::to_owned),
            fingerprint: request.fingerprint,
        };
        let mut queue = self.lock();
        let decision = match queue.entries.remove(&key) {
            Some(Decision::Approved) => Approval::Approved,
            Some(Decision::Denied(reason)) => Approval::Denied { reason },
            Some(Decision::Waiting(n, waiting)) => {
                let ticket = waiting.ticket.clone();
                queue
                    .entries
                    .insert(key.clone(), Decision::Waiting(n, waiting));
                Approval::Pending { ticket }
            }
            None => {
                queue.next += 1;
                let ticket = format!("approval-{}", queue.next);
                queue.tickets.insert(ticket.clone(), key.clone());
                let waiting = Waiting {
                    ticket: ticket.clone(),
                    session: request.conversation.to_owned(),
                    principal: request.principal.map(str::to_owned),
                    tool: request.tool.to_owned(),
                    call_id: request.call_id.to_owned(),
                    arguments: request.redacted.clone(),
                };
                let n = queue.next;
                queue
                    .entries
                    .insert(key.clone(), Decision::Waiting(n, waiting));
                Approval::Pending { ticket }
            }
        };
        if !matches!(decision, Approval::Pending { .. }) {
            // Decided and used: the ticket is done.
            queue.tickets.retain(|_, k| *k != key);
        }
        Box::pin(std::future::ready(decision))
    }
}

/// Approvals that survive restarts and span replicas: each call that requires approval is a
/// [`Ticket`] in a [`ConversationStore`], decided by a person from any replica
/// ([`approve`](Self::approve), [`deny`](Self::deny), or
/// [`Registry::approve_with`](crate::Registry::approve_with) for edited arguments), at most
/// once. The same call proposed again after the decision gets it, once. A ticket not decided,
/// or approved and not used, within [`expire_after`](Self::expire_after) is forgotten (the
/// call asks again).
///
/// A session given a store with [`Session::with_store`](crate::Session::with_store) files its
/// calls here unless it names another approver.
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use toolwright::conversation::{MemoryConversationStore, WaitingQuery};
/// use toolwright::approval::Approvals;
///
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// let store = Arc::new(MemoryConversationStore::new());
/// let approvals = Approvals::new(store).expire_after(Duration::from_secs(3 * 24 * 3600));
/// // A review page: the first 20 refunds waiting, then decide one.
/// let query = WaitingQuery { limit: 20, tool: Some("refund_order".into()), ..Default::default() };
/// for ticket in approvals.waiting(&query).await?.tickets {
///     approvals.approve(&ticket.id).await?;
/// }
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Approvals {
    store: Arc<dyn ConversationStore>,
    expire_after: Duration,
}

/// Why a decision was not taken.
#[derive(Debug)]
#[non_exhaustive]
pub enum DecideError {
    /// Another reviewer decided first (or the call already ran): the ticket stands as given.
    AlreadyDecided(TicketState),
    /// No such ticket: never asked, or expired.
    UnknownTicket,
    /// The edited arguments do not pass the tool's checks: the failure, with every violation
    /// and its path, as the model would have been told.
    Invalid(Box<crate::outcome::Outcome>),
    /// The store could not be reached; nothing was decided.
    Store(ConversationStoreError),
}

impl fmt::Display for DecideError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecideError::AlreadyDecided(state) => {
                write!(f, "the ticket was already decided: {state:?}")
            }
            DecideError::UnknownTicket => f.write_str("no such ticket (never asked, or expired)"),
            DecideError::Invalid(outcome) => write!(
                f,
                "the edited arguments are invalid: {}",
                outcome.message().unwrap_or("invalid")
            ),
            DecideError::Store(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for DecideError {}

impl From<ConversationStoreError> for DecideError {
    fn from(e: ConversationStoreError) -> Self {
        DecideError::Store(e)
    }
}

impl Approvals {
    /// Approvals kept in `store`; tickets live [`DEFAULT_APPROVAL_TTL`] (7 days).
    pub fn new(store: Arc<dyn ConversationStore>) -> Self {
        Approvals {
            store,
            expire_after: DEFAULT_APPROVAL_TTL,
        }
    }

    /// How long a ticket lives waiting, and again once decided, before it is forgotten.
    /// Default: [`DEFAULT_APPROVAL_TTL`], 7 days.
    pub fn expire_after(mut self, expire_after: Duration) -> Self {
        self.expire_after = expire_after;
        self
    }

    /// The store the tickets live in.
    pub fn store(&self) -> &Arc<dyn ConversationStore> {
        &self.store
    }

    /// Approves a waiting call: it runs when proposed again, on any replica.
    pub async fn approve(&self, ticket: &str) -> Result<(), DecideError> {
        self.decide(ticket, &Verdict::Approve).await
    }

    /// Denies a waiting call with a reason the model is told.
    pub async fn deny(&self, ticket: &str, reason: impl Into<String>) -> Result<(), DecideError> {
        self.decide(ticket, &Verdict::Deny(reason.into())).await
    }

    pub(crate) async fn decide(&self, ticket: &str, decision: &Verdict) -> Result<(), DecideError> {
        match self.store.decide(ticket, decision).await? {
            Decided::Done => Ok(()),
            Decided::AlreadyDecided(state) => Err(DecideError::AlreadyDecided(state)),
            Decided::Unknown => Err(DecideError::UnknownTicket),
        }
    }

    /// A ticket, while it lives.
    pub async fn ticket(&self, ticket: &str) -> Result<Option<Ticket>, ConversationStoreError> {
        self.store.ticket(ticket).await
    }

    /// One page of waiting tickets, oldest first, optionally one principal's or one tool's.
    pub async fn waiting(
        &self,
        query: &WaitingQuery,
    ) -> Result<WaitingPage, ConversationStoreError> {
        self.store.waiting(query).await
    }
}

impl fmt::Debug for Approvals {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Approvals")
            .field("expire_after", &self.expire_after)
            .finish_non_exhaustive()
    }
}

impl Approver for Approvals {
    fn review<'a>(
        &'a self,
        request: &'a ApprovalRequest<'a>,
    ) -> Pin<Box<dyn Future<Output = Approval> + Send + 'a>> {
        Box::pin(async move {
            let ticket = TicketRequest {
                conversation: request.conversation.to_owned(),
                principal: request.principal.map(str::to_owned),
                tool: request.tool.to_owned(),
                call_id: request.call_id.to_owned(),
                fingerprint: request.fingerprint.to_string(),
                arguments: request.redacted.clone(),
                expire_after: self.expire_after,
            };
            match self.store.review(&ticket).await {
                Ok(Review::Approved) => Approval::Approved,
                Ok(Review::Denied(reason)) => Approval::Denied { reason },
                Ok(Review::Pending(ticket)) => Approval::Pending { ticket },
                Err(e) => Approval::Unavailable {
                    reason: e.to_string(),
                },
            }
        })
    }
}

/// Why the approval stage did not let a call through.
pub(crate) enum Refusal {
    /// `approval_denied`, with the reason.
    Denied(Failure),
    /// Waiting for a person, with the ticket.
    Pending(String),
}

/// The approval stage: asks `approver` about this exact call, bounded by `timeout` on `clock`,
/// with a panic in the approver contained (it refuses the call).
pub(crate) async fn review(
    approver: Option<&dyn Approver>,
    request: &ApprovalRequest<'_>,
    clock: &ClockHandle,
    timeout: Duration,
) -> Result<(), Refusal> {
    let name = request.tool;
    let denied = |message: String| {
        Err(Refusal::Denied(Failure::new(
            ErrorKind::ApprovalDenied,
            message,
        )))
    };
    let Some(approver) = approver else {
        return denied(format!("`{name}` needs a person's approval and no one can approve it in this conversation; do not retry, tell the user it cannot be done here"));
    };
    let cut = clock.now() + timeout;
    match clock.run_until(cut, contain(|| approver.review(request))).await.0 {
        Some(Ok(Approval::Approved)) => Ok(()),
        Some(Ok(Approval::Denied { reason })) => denied(format!(
            "`{name}` was not approved: {reason}. Do not retry it; tell the user"
        )),
        Some(Ok(Approval::Pending { ticket })) => Err(Refusal::Pending(ticket)),
        Some(Ok(Approval::Unavailable { reason })) => Err(Refusal::Denied(Failure::new(
            ErrorKind::Unavailable,
            format!("`{name}` did not run: its approval cannot be checked right now ({reason}). Nothing was done; try again shortly"),
        ))),
        Some(Err(_)) => {
            tracing::error!(target: "toolwright::approval", tool = %name, "the approver panicked; the call is refused");
            denied(format!("`{name}` could not be approved: the approval check failed with an internal error. Do not retry it; tell the user"))
        }
        None => denied(format!(
            "`{name}` was not approved: no decision came within {} s. Do not retry it now; tell the user it is waiting for a person",
            timeout.as_secs()
        )),
    }
}
