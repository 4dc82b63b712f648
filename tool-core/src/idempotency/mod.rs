//! Idempotency keys: one key per logical action, the same on every attempt of it.
//!
//! A tool that declares an [`IdempotencyKey`] parameter receives a key derived once per call
//! and passed unchanged to every attempt, so it can send it downstream (for example as an
//! `Idempotency-Key` header) and the receiving system can recognize a retry of the same intent.

use std::fmt;
use std::sync::Arc;

/// The key of one logical action, stable across every attempt of a call.
///
/// The default derivation is the session's idempotency scope plus the model's call id, so the
/// same proposal delivered twice maps to the same key, and two sessions never share keys.
///
/// ```
/// use toolwright_core::IdempotencyKey;
///
/// let key = IdempotencyKey::derive("session-42", "refund_order", "call_1");
/// assert_eq!(key.as_str(), "session-42:refund_order:call_1");
/// assert_eq!(key, IdempotencyKey::derive("session-42", "refund_order", "call_1"));
/// ```
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct IdempotencyKey(Arc<str>);

impl IdempotencyKey {
    /// Derives the key of a call from the session's scope, the tool name and the call id.
    pub fn derive(scope: &str, tool: &str, call_id: &str) -> Self {
        let mut s = String::with_capacity(scope.len() + tool.len() + call_id.len() + 2);
        s.push_str(scope);
        s.push(':');
        s.push_str(tool);
        s.push(':');
        s.push_str(call_id);
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
