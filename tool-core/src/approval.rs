//! Human approval of consequential actions (`#[tool(requires_approval)]`).
//!
//! Seed 000: "for consequential actions (anything involving money, irreversible state
//! changes, or external communication) a bounded escalation is safer than a confident guess."
//! A tool that requires approval runs only when the session's [`Approver`] approves that exact
//! call: the tool and its arguments, by their [`Fingerprint`], so a model cannot have one
//! amount approved and send another.
//!
//! The decision is an [`Approval`]: run it, refuse it (`approval_denied`, the model is told not
//! to retry), or not decided yet (the outcome is [`Status::Pending`](crate::Status::Pending)
//! with a ticket, `{"status":"pending","message":"...","data":{"ticket":"..."}}`). A session
//! with no approver refuses every such call. Approval is part of the validation seam, after
//! authorization: a refused or pending call never reaches the idempotency store, the breaker or
//! the tool.
//!
//! [`ApprovalQueue`] is an approver that queues each new call for a person to decide and answers
//! the same call again, proposed after the decision, with that decision (once):
//!
//! ```
//! use std::sync::Arc;
//! use toolwright_core::approval::ApprovalQueue;
//! use toolwright_core::Session;
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
use std::sync::{Mutex, PoisonError};

use crate::call::Session;
use crate::idempotency::Fingerprint;
use crate::observe;
use crate::tool::FieldMeta;

/// One call waiting for a decision: what the approver sees.
pub struct ApprovalRequest<'a> {
    pub(crate) session: &'a Session,
    pub(crate) tool: &'a str,
    pub(crate) call_id: &'a str,
    pub(crate) arguments: &'a str,
    pub(crate) fields: &'a [FieldMeta],
    pub(crate) fingerprint: Fingerprint,
}

impl ApprovalRequest<'_> {
    /// The conversation the call belongs to (its principal, its scopes).
    pub fn session(&self) -> &Session {
        self.session
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

    /// The arguments with every `#[arg(sensitive)]` field replaced by `"[redacted]"`, to show a
    /// reviewer or write to a log.
    pub fn redacted_arguments(&self) -> String {
        observe::redacted(self.arguments, self.fields)
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
            .field("session", &self.session.id())
            .field("tool", &self.tool)
            .field("call_id", &self.call_id)
            .field("arguments", &self.redacted_arguments())
            .finish()
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
}

/// Decides whether a call of a tool that requires approval may run. Set on a session with
/// [`Session::with_approver`].
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

#[derive(Default)]
struct Queue {
    next: u64,
    /// By conversation and call fingerprint.
    entries: HashMap<(String, Fingerprint), Decision>,
    tickets: HashMap<String, (String, Fingerprint)>,
}

/// An in-memory [`Approver`]: each new call waits for a person ([`ApprovalQueue::waiting`],
/// [`ApprovalQueue::approve`], [`ApprovalQueue::deny`]); the same call (same conversation, tool
/// and arguments) proposed after the decision gets it, once. One process only: several
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
        let key = (request.session.id().to_owned(), request.fingerprint);
        let mut queue = self.lock();
        let decision = match queue.entries.remove(&key) {
            Some(Decision::Approved) => Approval::Approved,
            Some(Decision::Denied(reason)) => Approval::Denied { reason },
            Some(Decision::Waiting(n, waiting)) => {
                let ticket = waiting.ticket.clone();
                queue.entries.insert(key, Decision::Waiting(n, waiting));
                Approval::Pending { ticket }
            }
            None => {
                queue.next += 1;
                let ticket = format!("approval-{}", queue.next);
                queue.tickets.insert(ticket.clone(), key.clone());
                let waiting = Waiting {
                    ticket: ticket.clone(),
                    session: request.session.id().to_owned(),
                    principal: request.session.principal().map(str::to_owned),
                    tool: request.tool.to_owned(),
                    call_id: request.call_id.to_owned(),
                    arguments: request.redacted_arguments(),
                };
                let n = queue.next;
                queue.entries.insert(key, Decision::Waiting(n, waiting));
                Approval::Pending { ticket }
            }
        };
        if !matches!(decision, Approval::Pending { .. }) {
            // Decided and used: the ticket is done.
            queue
                .tickets
                .retain(|_, k| k.0 != request.session.id() || k.1 != request.fingerprint);
        }
        Box::pin(std::future::ready(decision))
    }
}
