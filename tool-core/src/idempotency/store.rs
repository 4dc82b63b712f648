//! The [`IdempotencyStore`] contract: begin a call under a key, then settle it.
//!
//! The semantics are those of Stripe's idempotent requests and the IETF `Idempotency-Key` HTTP
//! header draft, adapted to tool calls:
//!
//! | the key is | [`begin`](IdempotencyStore::begin) answers | the pipeline |
//! |---|---|---|
//! | new, expired, or released | [`Begin::Started`] ([`Prior::Fresh`]) | runs the attempts, then settles the [`Lease`] |
//! | recorded with other arguments | [`Begin::Mismatch`] | answers `idempotency_mismatch` |
//! | held by a running call | [`Begin::InFlight`] | answers `duplicate_in_flight` |
//! | held by a call whose lock expired (it crashed) | [`Begin::Started`] ([`Prior::LockExpired`]) | takes it over: runs again with the same key |
//! | recorded with an unknown effect | [`Begin::Started`] ([`Prior::UnknownEffect`]) | runs again with the same key, so downstream recognizes it |
//! | completed | [`Begin::Replay`] | answers the stored outcome, errors included |
//!
//! Which settlement a finished call gets is [`Disposition::of`]'s rule.

use std::error::Error as StdError;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use super::{Fingerprint, IdempotencyKey, StoredOutcome};
use crate::error::ToolError;
use crate::outcome::{ErrorKind, Failure, Outcome, Status};

/// How long a key is remembered after its call last changed it: 24 hours, Stripe's window.
pub const DEFAULT_KEY_TTL: Duration = Duration::from_secs(24 * 60 * 60);

/// A lock lifetime for a caller of [`IdempotencyStore::begin`] that does not know how long its
/// call may take: 90 seconds. Longer than any sensible per-call deadline, short enough that a
/// crashed replica's refund is retried within the conversation.
///
/// The registry does not use it: it locks each key for the call's whole deadline (every
/// attempt's timeout and every wait between them, plus the approval when the tool needs one)
/// and 5 seconds of slack, so a duplicate's `retry_after_ms` says when the running call must be
/// over, and a key whose call crashed is free again once that call would have ended.
pub const DEFAULT_LOCK_TTL: Duration = Duration::from_secs(90);

/// The future an [`IdempotencyStore`] method returns: boxed, so the trait is dyn-compatible and
/// a registry can hold any store as `Arc<dyn IdempotencyStore>`.
pub type StoreFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, StoreError>> + Send + 'a>>;

/// Remembers what each idempotency key came to.
///
/// A call [`begin`](Self::begin)s under its key and the [`Fingerprint`] of its arguments. When
/// it [`Begin::Started`], it holds a [`Lease`] until it settles with exactly one of
/// [`complete`](Self::complete) (store the outcome for replay),
/// [`record_unknown_effect`](Self::record_unknown_effect) (the action may or may not have
/// happened: the next call with this key goes downstream again, with the same key) or
/// [`release`](Self::release) (nothing to remember). [`settle`](Self::settle) picks the right
/// one with [`Disposition::of`].
///
/// Every settlement checks the lease's token: a call whose lock expired and was taken over gets
/// [`Settled::LeaseLost`] and changes nothing.
///
/// The methods return boxed futures ([`StoreFuture`]) rather than being `async fn`s: an `async
/// fn` in a trait is not dyn-compatible, and the registry needs `dyn IdempotencyStore` to let
/// the application choose the store at run time. The box costs one allocation per call, noise
/// beside a Redis round trip; a registry reaches its [`MemoryStore`](super::MemoryStore)
/// (given as it is or in an `Arc`) directly, without the box.
pub trait IdempotencyStore: Send + Sync + 'static {
    /// Starts a call under `key`, or says why it must not start.
    ///
    /// `lock_ttl` is how long the returned lease holds the key before another call may take it
    /// over; pass at least the call's whole deadline (every attempt and backoff) so a slow call
    /// is never run twice, and [`DEFAULT_LOCK_TTL`] when in doubt.
    fn begin<'a>(
        &'a self,
        key: &'a IdempotencyKey,
        fingerprint: &'a Fingerprint,
        lock_ttl: Duration,
    ) -> StoreFuture<'a, Begin>;

    /// Stores `outcome` under the lease's key for replay, and frees the key. The outcome is the
    /// store's to keep: an in-memory store holds it as it is, without a copy.
    fn complete<'a>(&'a self, lease: &'a Lease, outcome: StoredOutcome)
        -> StoreFuture<'a, Settled>;

    /// Records that the call ended with its effect unknown (it timed out after the request may
    /// have reached the dependency, say), and frees the key. The next call with this key
    /// [`Begin::Started`]s with [`Prior::UnknownEffect`], goes downstream again with the same
    /// key, and is never answered with a replayed success that did not happen. The fingerprint
    /// stays, so other arguments under the key are still a mismatch.
    fn record_unknown_effect<'a>(&'a self, lease: &'a Lease) -> StoreFuture<'a, Settled>;

    /// Frees the key and stores nothing: the call was rejected before it acted (validation,
    /// conflict, a failure that provably never started). The key returns to what it was before
    /// [`begin`](Self::begin): forgotten, or still marked with an unknown effect if an earlier
    /// call left one.
    fn release<'a>(&'a self, lease: &'a Lease) -> StoreFuture<'a, Settled>;

    /// Settles a finished call as [`Disposition::of`] says: complete, record an unknown effect,
    /// or release. `never_started` is the last error's
    /// [`ToolError::is_never_started`](crate::ToolError::is_never_started).
    fn settle<'a>(
        &'a self,
        lease: &'a Lease,
        outcome: &'a Outcome,
        never_started: bool,
    ) -> StoreFuture<'a, Settled> {
        match Disposition::of(outcome, never_started) {
            Disposition::Complete => self.complete(lease, StoredOutcome::from_outcome(outcome)),
            Disposition::UnknownEffect => self.record_unknown_effect(lease),
            Disposition::Release => self.release(lease),
        }
    }
}

impl<S: IdempotencyStore + ?Sized> IdempotencyStore for Arc<S> {
    fn begin<'a>(
        &'a self,
        key: &'a IdempotencyKey,
        fingerprint: &'a Fingerprint,
        lock_ttl: Duration,
    ) -> StoreFuture<'a, Begin> {
        (**self).begin(key, fingerprint, lock_ttl)
    }

    fn complete<'a>(
        &'a self,
        lease: &'a Lease,
        outcome: StoredOutcome,
    ) -> StoreFuture<'a, Settled> {
        (**self).complete(lease, outcome)
    }

    fn record_unknown_effect<'a>(&'a self, lease: &'a Lease) -> StoreFuture<'a, Settled> {
        (**self).record_unknown_effect(lease)
    }

    fn release<'a>(&'a self, lease: &'a Lease) -> StoreFuture<'a, Settled> {
        (**self).release(lease)
    }
}

/// What [`IdempotencyStore::begin`] decided.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Begin {
    /// The call holds the key: run it, then settle the lease.
    Started(Lease),
    /// The key completed earlier: answer its stored outcome, errors included, without running.
    Replay(StoredOutcome),
    /// Another call holds the key and its lock has not expired: `duplicate_in_flight`.
    InFlight {
        /// How long until that call's lock expires: in the registry, how long the running call
        /// can still take (what is left of its deadline) and a few seconds of slack.
        retry_after: Duration,
    },
    /// The key was used with other arguments: `idempotency_mismatch`.
    Mismatch,
}

impl Begin {
    /// The lease to run under, or the outcome to answer instead: the stored outcome of a replay,
    /// `duplicate_in_flight` (with `retry_after_ms`) or `idempotency_mismatch`. The outcome of a
    /// refusal reports 0 attempts (the tool body never ran); a replay reports the original
    /// call's attempts.
    pub fn into_lease(self, call_id: &str, tool: &Arc<str>) -> Result<Lease, Outcome> {
        let failure = match self {
            Begin::Started(lease) => return Ok(lease),
            Begin::Replay(stored) => return Err(stored.into_outcome(call_id, Arc::clone(tool))),
            Begin::InFlight { retry_after } => {
                let mut failure = Failure::new(
                    ErrorKind::DuplicateInFlight,
                    format!(
                        "the same `{tool}` action is already running under this idempotency key; \
                         do not start it again, wait for its result"
                    ),
                );
                failure.retry_after = Some(retry_after);
                failure
            }
            Begin::Mismatch => Failure::new(
                ErrorKind::IdempotencyMismatch,
                format!(
                    "this idempotency key was already used for `{tool}` with different \
                     arguments; the first action stands. Do not repeat it with changed arguments"
                ),
            ),
        };
        let mut outcome = Outcome::failed(call_id.to_owned(), Arc::clone(tool), failure);
        outcome.attempts = 0;
        Err(outcome)
    }
}

/// What happened to the key before this call started it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Prior {
    /// Nothing: the key is new (or expired, or was released).
    Fresh,
    /// An earlier call under this key ended with its effect unknown.
    UnknownEffect,
    /// An earlier call held the key and vanished (crashed, or ran past its lock): its effect is
    /// unknown too.
    LockExpired,
}

/// A running call's hold on its key: proof, checked by every settlement, that no other call
/// took it over. Cheap to clone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lease {
    key: IdempotencyKey,
    fingerprint: Fingerprint,
    token: u128,
    prior: Prior,
    unknown_effects: u32,
}

impl Lease {
    /// A lease as a store hands it out. `token` must be unique per [`begin`] among the callers
    /// that share the store (the Redis store uses random UUIDs).
    ///
    /// [`begin`]: IdempotencyStore::begin
    pub fn new(
        key: IdempotencyKey,
        fingerprint: Fingerprint,
        token: u128,
        prior: Prior,
        unknown_effects: u32,
    ) -> Lease {
        Lease {
            key,
            fingerprint,
            token,
            prior,
            unknown_effects,
        }
    }

    /// The key this lease holds; the one to send downstream.
    pub fn key(&self) -> &IdempotencyKey {
        &self.key
    }

    /// The fingerprint the key was begun with.
    pub fn fingerprint(&self) -> &Fingerprint {
        &self.fingerprint
    }

    /// The fencing token every settlement compares.
    pub fn token(&self) -> u128 {
        self.token
    }

    /// What happened to the key before: fresh, an unknown effect, or a crashed holder.
    pub fn prior(&self) -> Prior {
        self.prior
    }

    /// How many earlier calls under this key ended with their effect unknown (recorded as such
    /// or abandoned by a crash), so the story of a call can say "third time this key went
    /// downstream".
    pub fn unknown_effects(&self) -> u32 {
        self.unknown_effects
    }
}

/// What a settlement did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Settled {
    /// The store took the settlement.
    Recorded,
    /// The lease no longer holds the key (its lock expired and another call took the key over,
    /// or the key expired): nothing was changed. The outcome still goes to the model; the call
    /// that took over settles the key.
    LeaseLost,
}

/// Which settlement a finished call gets: the rule of what is stored for replay.
///
/// | outcome | disposition | why |
/// |---|---|---|
/// | `success`, `empty` | [`Complete`](Disposition::Complete) | the action happened: replay it |
/// | `not_found`, `bad_request`, `permission_denied`, `auth_expired`, `invalid_result` | [`Complete`](Disposition::Complete) | a definitive answer: replay it, errors included (Stripe) |
/// | a validation-seam failure, `conflict` | [`Release`](Disposition::Release) | nothing began, or another request was in the way: not stored (Stripe: "no idempotent result is saved") |
/// | `timeout`, `unavailable`, `rate_limited`, `tool_panicked` | [`UnknownEffect`](Disposition::UnknownEffect) | the request may have reached the dependency: go downstream again with the same key, never replay a success that did not happen |
/// | ... that [never started](crate::ToolError::never_started) | [`Release`](Disposition::Release) | provably nothing happened |
/// | `circuit_open`, `duplicate_in_flight`, `idempotency_mismatch`, `pending`, a degraded (fallback) result | [`Release`](Disposition::Release) | the tool itself did not act |
///
/// ```
/// use toolwright::idempotency::Disposition;
/// use toolwright::{ErrorKind, Status};
///
/// assert_eq!(Disposition::for_kind(Status::Success, None, false), Disposition::Complete);
/// assert_eq!(Disposition::for_kind(Status::Error, Some(ErrorKind::NotFound), false), Disposition::Complete);
/// assert_eq!(Disposition::for_kind(Status::Error, Some(ErrorKind::Conflict), false), Disposition::Release);
/// assert_eq!(Disposition::for_kind(Status::Error, Some(ErrorKind::Timeout), false), Disposition::UnknownEffect);
/// assert_eq!(Disposition::for_kind(Status::Error, Some(ErrorKind::Unavailable), true), Disposition::Release);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Disposition {
    /// Store the outcome; later calls with the key replay it.
    Complete,
    /// Record that the effect is unknown; the next call with the key runs again.
    UnknownEffect,
    /// Store nothing.
    Release,
}

impl Disposition {
    /// The disposition of a finished call. `never_started` is the last error's
    /// [`ToolError::is_never_started`](crate::ToolError::is_never_started) (`false` if unknown).
    pub fn of(outcome: &Outcome, never_started: bool) -> Disposition {
        if outcome.is_degraded() {
            return Disposition::Release;
        }
        Disposition::for_kind(outcome.status(), outcome.error_kind(), never_started)
    }

    /// The rule of [`Disposition::of`] on the bare facts.
    pub fn for_kind(status: Status, kind: Option<ErrorKind>, never_started: bool) -> Disposition {
        let kind = match (status, kind) {
            (Status::Success | Status::Empty, _) => return Disposition::Complete,
            (Status::Pending, _) => return Disposition::Release,
            (Status::Error, None) => return Disposition::UnknownEffect,
            (Status::Error, Some(kind)) => kind,
        };
        if kind.may_have_acted(never_started) {
            return Disposition::UnknownEffect;
        }
        match kind {
            ErrorKind::AuthExpired
            | ErrorKind::PermissionDenied
            | ErrorKind::NotFound
            | ErrorKind::BadRequest
            | ErrorKind::InvalidResult => Disposition::Complete,
            _ => Disposition::Release,
        }
    }

    /// Whether the outcome is stored for replay: the predicate "is this outcome replayable".
    pub fn is_stored(self) -> bool {
        self == Disposition::Complete
    }
}

/// An idempotency store could not answer (Redis unreachable, a record it cannot read).
///
/// A call whose [`begin`](IdempotencyStore::begin) fails must not run: without the store the
/// framework cannot tell a retry from a new action, so it fails closed. Converted into a
/// [`ToolError`] it is `unavailable` and [never started](ToolError::never_started).
#[derive(Debug)]
#[non_exhaustive]
pub enum StoreError {
    /// The store's backend failed or could not be reached.
    Backend(Box<dyn StdError + Send + Sync + 'static>),
    /// The store answered something this version cannot read.
    Corrupt(String),
}

impl StoreError {
    /// A backend failure.
    pub fn backend(error: impl StdError + Send + Sync + 'static) -> StoreError {
        StoreError::Backend(Box::new(error))
    }
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreError::Backend(e) => write!(f, "the idempotency store failed: {e}"),
            StoreError::Corrupt(what) => {
                write!(
                    f,
                    "the idempotency store answered something unreadable: {what}"
                )
            }
        }
    }
}

impl StdError for StoreError {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        match self {
            StoreError::Backend(e) => Some(e.as_ref()),
            StoreError::Corrupt(_) => None,
        }
    }
}

impl From<StoreError> for ToolError {
    fn from(error: StoreError) -> ToolError {
        ToolError::unavailable(
            "the action was not attempted: its idempotency record could not be checked; it may \
             work if tried later",
        )
        .never_started()
        .with_source(error)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_has_a_disposition_and_validation_is_never_stored() {
        for &kind in ErrorKind::ALL {
            let d = Disposition::for_kind(Status::Error, Some(kind), false);
            if kind.seam() == crate::Seam::Validation || kind == ErrorKind::Conflict {
                assert_eq!(d, Disposition::Release, "{kind}");
            }
            if kind.is_transient() {
                assert_eq!(d, Disposition::UnknownEffect, "{kind}");
                assert_eq!(
                    Disposition::for_kind(Status::Error, Some(kind), true),
                    Disposition::Release,
                    "{kind}"
                );
            }
        }
        assert!(Disposition::for_kind(Status::Empty, None, false).is_stored());
        assert!(!Disposition::for_kind(Status::Pending, None, false).is_stored());
    }

    #[test]
    fn refusals_become_outcomes_with_no_attempts() {
        let tool: Arc<str> = Arc::from("refund_order");
        let out = Begin::InFlight {
            retry_after: Duration::from_secs(3),
        }
        .into_lease("c1", &tool)
        .unwrap_err();
        assert_eq!(out.error_kind(), Some(ErrorKind::DuplicateInFlight));
        assert_eq!(out.retry_after(), Some(Duration::from_secs(3)));
        assert_eq!(out.attempts(), 0);
        assert_eq!(out.to_model_json()["retry_after_ms"], 3000);
        let out = Begin::Mismatch.into_lease("c1", &tool).unwrap_err();
        assert_eq!(out.error_kind(), Some(ErrorKind::IdempotencyMismatch));
        assert!(!out.retryable());
    }

    #[test]
    fn a_store_failure_fails_closed_as_never_started() {
        let e = ToolError::from(StoreError::Corrupt("x".into()));
        assert_eq!(e.kind(), ErrorKind::Unavailable);
        assert!(e.is_never_started());
    }

    #[test]
    fn a_definitive_answer_is_stored_and_replayed() {
        for kind in [
            ErrorKind::AuthExpired,
            ErrorKind::PermissionDenied,
            ErrorKind::NotFound,
            ErrorKind::BadRequest,
            ErrorKind::InvalidResult,
        ] {
            let d = Disposition::for_kind(Status::Error, Some(kind), false);
            assert_eq!(d, Disposition::Complete, "{kind}");
        }
    }

    #[test]
    fn a_store_error_names_what_failed_and_keeps_its_cause() {
        let cause = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "refused by host");
        let e = StoreError::backend(cause);
        assert_eq!(
            e.to_string(),
            "the idempotency store failed: refused by host"
        );
        assert_eq!(
            e.source().map(ToString::to_string).as_deref(),
            Some("refused by host")
        );
        let e = StoreError::Corrupt("begin answered None".into());
        assert_eq!(
            e.to_string(),
            "the idempotency store answered something unreadable: begin answered None"
        );
        assert!(e.source().is_none());
    }
}
