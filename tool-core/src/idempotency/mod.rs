//! Side effects happen once: idempotency keys threaded through every attempt, and the store that
//! remembers what each key came to.
//!
//! ```
//! use std::time::Duration;
//! use toolwright::idempotency::{
//!     Begin, Fingerprint, IdempotencyStore, KeyMode, MemoryStore, DEFAULT_LOCK_TTL,
//! };
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), toolwright::idempotency::StoreError> {
//! let store = MemoryStore::new();
//! let arguments = r#"{"order_id":"A1","amount":5}"#;
//! let fingerprint = Fingerprint::of("refund_order", arguments);
//! let key = KeyMode::CallId.key("conv-7", "refund_order", "call_1", &fingerprint);
//!
//! // The first proposal runs; a second delivery of it while the first runs is refused.
//! let Begin::Started(lease) = store.begin(&key, &fingerprint, DEFAULT_LOCK_TTL).await? else {
//!     unreachable!("a fresh key starts")
//! };
//! assert!(matches!(
//!     store.begin(&key, &fingerprint, DEFAULT_LOCK_TTL).await?,
//!     Begin::InFlight { .. }
//! ));
//! # let _ = lease;
//! # Ok(()) }
//! ```
//!
//! # The parts
//!
//! - [`IdempotencyKey`]: one key per logical action, derived once per call ([`KeyMode`] says
//!   how) and handed unchanged to every attempt, so a tool can send it downstream (for example
//!   as an `Idempotency-Key` header) and the receiving system can recognize a retry of the same
//!   intent.
//! - [`Fingerprint`]: a hash of the tool name and the canonical form of the arguments. The store
//!   keeps it beside the key, so the same key with other arguments is `idempotency_mismatch`.
//! - [`IdempotencyStore`]: what each key came to, with the semantics of Stripe's idempotent
//!   requests and the IETF `Idempotency-Key` draft: [`begin`](IdempotencyStore::begin) a call,
//!   then settle it with [`complete`](IdempotencyStore::complete),
//!   [`record_unknown_effect`](IdempotencyStore::record_unknown_effect) or
//!   [`release`](IdempotencyStore::release); [`Disposition`] is the rule that picks one.
//! - [`MemoryStore`], the embedded default (bounded in size and time, nothing to install), and
//!   `RedisStore` behind the `redis` feature, so several replicas share keys.
//!
//! # In the pipeline
//!
//! Every call of a tool that is neither idempotent nor read-only goes through the registry's
//! store ([`RegistryBuilder::idempotency_store`](crate::RegistryBuilder::idempotency_store),
//! default a [`MemoryStore`]); idempotent and read-only tools never touch it. After validation,
//! and before the circuit breaker is asked for a permit (so a replay or a refusal never spends
//! a half-open probe), the call's key is derived ([`KeyMode`]: the session's, else
//! [`RegistryBuilder::key_mode`](crate::RegistryBuilder::key_mode)) and begun:
//!
//! - completed earlier: the stored outcome is answered, errors included, marked
//!   [`Outcome::is_replayed`](crate::Outcome::is_replayed) (`"replayed": true`); the tool body
//!   does not run;
//! - running elsewhere: `duplicate_in_flight` with `retry_after_ms`, how long the running call
//!   can still take (the key is locked for the call's deadline, every attempt's timeout and
//!   every wait, plus its approval and 5 s of slack); used with other arguments:
//!   `idempotency_mismatch`;
//! - the store unreachable: `unavailable`, never started (fail closed); the tool's breaker does
//!   not count it;
//! - otherwise the attempts run, every one with the same key
//!   ([`Invocation::idempotency_key`](crate::Invocation::idempotency_key)), and the call settles
//!   once as [`Disposition`] says, with one refinement: if any attempt may have acted (a
//!   timeout, a 5xx, a panic, not proven never started), a call that ends refused (a
//!   `conflict`, an open breaker) records an unknown effect rather than forgetting it.
//!
//! A call whose future is dropped never settles: its lock expires when the call would have
//! ended at the latest, and the next call under the key takes it over as an unknown effect.

pub(crate) mod canonical;
mod fingerprint;
mod memory;
#[cfg(feature = "redis")]
mod redis_store;
mod store;
mod stored;

pub use fingerprint::Fingerprint;
pub use memory::{MemoryStore, MemoryStoreBuilder, DEFAULT_MAX_BYTES};
#[cfg(feature = "redis")]
#[cfg_attr(docsrs, doc(cfg(feature = "redis")))]
pub use redis_store::{RedisStore, RedisStoreBuilder};
pub use store::{
    Begin, Disposition, IdempotencyStore, Lease, Prior, Settled, StoreError, StoreFuture,
    DEFAULT_KEY_TTL, DEFAULT_LOCK_TTL,
};
pub use stored::StoredOutcome;

use std::fmt;
use std::sync::Arc;

/// The key of one logical action, stable across every attempt of a call.
///
/// The default derivation is the session's idempotency scope plus the model's call id, so the
/// same proposal delivered twice maps to the same key, and two sessions never share keys.
///
/// The parts are joined with `:`, and a `:` or `%` inside a part is percent-encoded, so the key
/// names its parts unambiguously: a call id cannot be crafted to reach into another scope.
///
/// ```
/// use toolwright::IdempotencyKey;
///
/// let key = IdempotencyKey::derive("session-42", "refund_order", "call_1");
/// assert_eq!(key.as_str(), "session-42:refund_order:call_1");
/// assert_eq!(key, IdempotencyKey::derive("session-42", "refund_order", "call_1"));
/// assert_ne!(
///     IdempotencyKey::derive("a:t:x", "t", "y"),
///     IdempotencyKey::derive("a", "t", "x:t:y"),
/// );
/// ```
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct IdempotencyKey(Arc<str>);

impl IdempotencyKey {
    /// Derives the key of a call from the session's scope, the tool name and the call id.
    pub fn derive(scope: &str, tool: &str, call_id: &str) -> Self {
        let mut s = String::with_capacity(scope.len() + tool.len() + call_id.len() + 2);
        push_part(&mut s, scope);
        s.push(':');
        push_part(&mut s, tool);
        s.push(':');
        push_part(&mut s, call_id);
        IdempotencyKey(Arc::from(s))
    }

    /// A key chosen by the application.
    pub fn new(key: impl Into<Arc<str>>) -> Self {
        IdempotencyKey(key.into())
    }

    /// The key text, ready for an `Idempotency-Key` header.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Appends one part of a key, `%` and `:` percent-encoded (RFC 3986 style), so that joining the
/// parts with `:` is reversible.
fn push_part(key: &mut String, part: &str) {
    if !part.contains([':', '%']) {
        key.push_str(part);
        return;
    }
    for c in part.chars() {
        match c {
            '%' => key.push_str("%25"),
            ':' => key.push_str("%3A"),
            c => key.push(c),
        }
    }
}

impl fmt::Debug for IdempotencyKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("IdempotencyKey").field(&&*self.0).finish()
    }
}

impl fmt::Display for IdempotencyKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl AsRef<str> for IdempotencyKey {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

/// How a call's [`IdempotencyKey`] is derived: which proposals count as "the same action".
///
/// | mode | same key when | right for |
/// |---|---|---|
/// | [`CallId`](KeyMode::CallId) (default) | the provider delivers the same proposal (same call id) again | every tool: a re-delivered or replayed tool call never acts twice |
/// | [`Fingerprint`](KeyMode::Fingerprint) | the model proposes the same tool with the same arguments again in the session | actions that are never legitimately repeated with identical arguments, such as a refund of one order for one amount |
///
/// **Call id** is the safe default. Providers and agent loops re-deliver a proposal after a
/// crash, a reconnect or a replayed transcript with the same call id, and those must not act
/// twice. But a model that saw a `timeout` and proposes the refund again gets a *new* call id,
/// so under this mode the second proposal is a new action: safe only when the downstream system
/// itself recognizes the duplicate, or when the model is told not to retry.
///
/// **Fingerprint** maps a re-proposal of the same arguments within the idempotency scope to the
/// same key, so the retried refund goes downstream with the key of the first one (and is
/// recognized there), or replays the stored result if the first one finished. It is wrong for
/// tools where repeating identical arguments is a new intent (send another "hello", add one more
/// item): within the key lifetime (24 h by default) the second one would be swallowed as a
/// replay. Narrow the [idempotency scope](crate::Session::with_idempotency_scope) to bound that.
///
/// ```
/// use toolwright::idempotency::{Fingerprint, KeyMode};
///
/// let first = Fingerprint::of("refund_order", r#"{"order_id":"A1","amount":5}"#);
/// let again = Fingerprint::of("refund_order", r#"{ "amount": 5.0, "order_id": "A1" }"#);
///
/// // The model re-proposed the refund under a new call id: only the fingerprint mode sees it.
/// assert_ne!(
///     KeyMode::CallId.key("conv-7", "refund_order", "call_1", &first),
///     KeyMode::CallId.key("conv-7", "refund_order", "call_2", &again),
/// );
/// assert_eq!(
///     KeyMode::Fingerprint.key("conv-7", "refund_order", "call_1", &first),
///     KeyMode::Fingerprint.key("conv-7", "refund_order", "call_2", &again),
/// );
/// ```
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum KeyMode {
    /// `scope:tool:call_id`: the same proposal delivered twice is one action.
    #[default]
    CallId,
    /// `scope:tool:fp-<sha256 hex>`: the same tool and canonical arguments within one
    /// idempotency scope are one action, whatever the call id.
    Fingerprint,
}

impl KeyMode {
    /// The key of one call in this mode. `fingerprint` must be
    /// [`Fingerprint::of`] the call's tool name and argument text; the call-id mode ignores it.
    pub fn key(
        self,
        scope: &str,
        tool: &str,
        call_id: &str,
        fingerprint: &Fingerprint,
    ) -> IdempotencyKey {
        match self {
            KeyMode::CallId => IdempotencyKey::derive(scope, tool, call_id),
            KeyMode::Fingerprint => {
                IdempotencyKey::derive(scope, tool, &format!("fp-{fingerprint}"))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_view_of_a_key_is_the_header_text() {
        let key = IdempotencyKey::derive("conv-7", "refund_order", "call_1");
        assert_eq!(key.as_str(), "conv-7:refund_order:call_1");
        assert_eq!(key.to_string(), "conv-7:refund_order:call_1");
        assert_eq!(AsRef::<str>::as_ref(&key), "conv-7:refund_order:call_1");
        assert_eq!(
            IdempotencyKey::new("chosen-by-the-app").as_str(),
            "chosen-by-the-app"
        );
    }

    #[test]
    fn a_colon_or_percent_in_a_part_is_encoded_so_no_call_reaches_into_another_scope() {
        assert_eq!(
            IdempotencyKey::derive("a:b", "t", "50%").as_str(),
            "a%3Ab:t:50%25"
        );
        // Without the encoding both would be `a:t:x:t:y`.
        assert_ne!(
            IdempotencyKey::derive("a:t:x", "t", "y"),
            IdempotencyKey::derive("a", "t", "x:t:y")
        );
        // An encoded text in a part stays apart from the character it encodes.
        assert_ne!(
            IdempotencyKey::derive("s", "t", "a%3Ab"),
            IdempotencyKey::derive("s", "t", "a:b")
        );
    }

    #[test]
    fn the_fingerprint_mode_keys_a_call_by_its_arguments_not_its_id() {
        let fp = Fingerprint::of("refund_order", r#"{"order_id":"A1"}"#);
        assert_eq!(
            KeyMode::CallId
                .key("s", "refund_order", "call_1", &fp)
                .as_str(),
            "s:refund_order:call_1"
        );
        assert_eq!(
            KeyMode::Fingerprint
                .key("s", "refund_order", "call_1", &fp)
                .as_str(),
            format!("s:refund_order:fp-{fp}")
        );
    }
}
