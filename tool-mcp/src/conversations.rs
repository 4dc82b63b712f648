//! Conversations named by the client: the `_meta` key [`CONVERSATION_KEY`] picks which
//! conversation (grounded ids, recovery budgets, idempotency scope) a request belongs to, for
//! the principal that sent it. Without sessions (MCP 2026-07-28 serves every request on its
//! own) this is how a client keeps one conversation across requests.
//!
//! The table is bounded: at most so many conversations per principal (the least recently used
//! of that principal's is forgotten for a new one) and on the server (a new one past the cap is
//! refused while none is idle), and one unused for the idle timeout is forgotten. A forgotten
//! conversation kept in a [`ConversationStore`](toolwright_core::conversation::ConversationStore)
//! by the session factory continues from the store: its id is derived from the principal and
//! the key, the same on every replica.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::Duration;

use rmcp::ErrorData;
use serde_json::{json, Value};
use tokio::time::Instant;
use toolwright_core::Session;

/// The `_meta` field of a request that names its conversation: a string of 1 to
/// [`MAX_CONVERSATION_KEY_BYTES`] bytes, chosen by the client (a chat's id, a UUID). The same
/// key from the same principal is the same conversation on every request, over either revision.
///
/// Without [`McpServer::authorize`](crate::McpServer::authorize) every client is the same
/// anonymous principal, so the key alone tells conversations apart: use an unguessable one (a
/// random UUID), as anyone who knows it joins the conversation.
pub const CONVERSATION_KEY: &str = "dev.toolwright/conversation";

/// The `_meta` field of a `tools/call` that names the call itself, stable when the client
/// sends the request again (MCP 2026-07-28 re-issues a request whose stream broke under a new
/// JSON-RPC id): inside a named conversation, the same call id is the same call, so a
/// non-idempotent tool's effect happens once. At most [`MAX_CONVERSATION_KEY_BYTES`] bytes.
pub const CALL_KEY: &str = "dev.toolwright/call";

/// The longest conversation or call key accepted, in bytes.
pub const MAX_CONVERSATION_KEY_BYTES: usize = 128;

/// The caps of the table.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    pub(crate) max: usize,
    pub(crate) per_principal: usize,
    pub(crate) idle: Duration,
}

struct Entry {
    principal: Option<String>,
    session: Session,
    granted: Vec<String>,
    /// Whether the session's approver is the per-request eliciting one (replaced on each
    /// request by one that asks this request's client), not the session factory's own.
    elicits: bool,
    last_used: Instant,
}

/// The named conversations of one server.
pub(crate) struct Conversations {
    limits: Limits,
    table: Mutex<HashMap<String, Entry>>,
}

/// A conversation as [`Conversations::get_or_open`] returns it.
pub(crate) struct Named {
    pub(crate) session: Session,
    /// The scopes of the grant it was opened with.
    pub(crate) granted: Vec<String>,
    pub(crate) elicits: bool,
}

impl Conversations {
    pub(crate) fn new(limits: Limits) -> Self {
        Conversations {
            limits,
            table: Mutex::new(HashMap::new()),
        }
    }

    /// The conversation `key` of `principal`, opened with `open` (given the session id) if the
    /// table does not hold it.
    pub(crate) fn get_or_open(
        &self,
        principal: Option<&str>,
        key: &str,
        open: impl FnOnce(String) -> Named,
    ) -> Result<Named, ErrorData> {
        let id = session_id(principal, key);
        let now = Instant::now();
        let mut table = self.table.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(entry) = table.get_mut(&id) {
            entry.last_used = now;
            return Ok(Named {
                session: entry.session.clone(),
                granted: entry.granted.clone(),
                elicits: entry.elicits,
            });
        }
        let idle = self.limits.idle;
        table.retain(|_, entry| now.duration_since(entry.last_used) < idle);
        let theirs = table
            .values()
            .filter(|entry| entry.principal.as_deref() == principal)
            .count();
        if theirs >= self.limits.per_principal.max(1) {
            let oldest = table
                .iter()
                .filter(|(_, entry)| entry.principal.as_deref() == principal)
                .min_by_key(|(_, entry)| entry.last_used)
                .map(|(id, _)| id.clone());
            if let Some(oldest) = oldest {
                table.remove(&oldest);
            }
        } else if table.len() >= self.limits.max.max(1) {
            return Err(ErrorData::invalid_request(
                format!(
                    "this server holds its maximum of {} named conversations; retry later, or \
                     send no `{CONVERSATION_KEY}` for a conversation of this request alone",
                    self.limits.max
                ),
                Some(json!({"error_type": "unavailable", "retryable": true})),
            ));
        }
        let named = open(id.clone());
        table.insert(
            id,
            Entry {
                principal: principal.map(str::to_owned),
                session: named.session.clone(),
                granted: named.granted.clone(),
                elicits: named.elicits,
                last_used: now,
            },
        );
        Ok(named)
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.table
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }
}

/// The session id of a named conversation: the principal and the key, length-prefixed so no
/// two pairs share an id, the same on every replica.
fn session_id(principal: Option<&str>, key: &str) -> String {
    match principal {
        Some(principal) => format!("mcp-conversation-{}:{principal}:{key}", principal.len()),
        None => format!("mcp-conversation:{key}"),
    }
}

/// A new id, `{prefix}{process}-{n}`, for a conversation of one request or a call without a
/// stable id: unique in this process by a counter, and across processes and replicas by a
/// random prefix drawn once per process, so a request reads no randomness (a v4 UUID per
/// request was a `getrandom` system call each).
pub(crate) fn fresh_id(prefix: &str) -> String {
    static PROCESS: OnceLock<String> = OnceLock::new();
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let process = PROCESS.get_or_init(|| uuid::Uuid::new_v4().simple().to_string());
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    format!("{prefix}{process}-{n}")
}

/// The string under `field` in a request's `_meta`, checked: `Ok(None)` when absent, `-32602`
/// naming the field when it is not a string of 1 to [`MAX_CONVERSATION_KEY_BYTES`] bytes.
pub(crate) fn key_in<'a>(
    metas: impl IntoIterator<Item = &'a serde_json::Map<String, Value>>,
    field: &str,
) -> Result<Option<&'a str>, ErrorData> {
    let Some(value) = metas.into_iter().find_map(|meta| meta.get(field)) else {
        return Ok(None);
    };
    let invalid = |got: String| {
        ErrorData::invalid_params(
            format!(
                "`_meta.{field}` must be a string of 1 to {MAX_CONVERSATION_KEY_BYTES} bytes, got {got}"
            ),
            Some(json!({
                "error_type": "schema_mismatch",
                "path": format!("/params/_meta/{field}"),
                "expected": format!("a string of 1 to {MAX_CONVERSATION_KEY_BYTES} bytes"),
                "got": got,
            })),
        )
    };
    match value {
        Value::String(key) if !key.is_empty() && key.len() <= MAX_CONVERSATION_KEY_BYTES => {
            Ok(Some(key))
        }
        Value::String(key) if key.is_empty() => Err(invalid("an empty string".to_owned())),
        Value::String(key) => Err(invalid(format!("a string of {} bytes", key.len()))),
        Value::Null => Err(invalid("null".to_owned())),
        Value::Bool(_) => Err(invalid("a boolean".to_owned())),
        Value::Number(n) => Err(invalid(format!("a number ({n})"))),
        Value::Array(_) => Err(invalid("an array".to_owned())),
        Value::Object(_) => Err(invalid("an object".to_owned())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(max: usize, per_principal: usize) -> Limits {
        Limits {
            max,
            per_principal,
            idle: Duration::from_secs(60),
        }
    }

    fn open(id: String) -> Named {
        Named {
            session: Session::new(id),
            granted: Vec::new(),
            elicits: true,
        }
    }

    #[tokio::test(start_paused = true)]
    async fn the_same_key_of_the_same_principal_is_one_conversation() {
        let conversations = Conversations::new(limits(10, 10));
        let a = conversations
            .get_or_open(Some("alice"), "chat-1", open)
            .unwrap();
        a.session.ground("order", "A-1");
        let again = conversations
            .get_or_open(Some("alice"), "chat-1", open)
            .unwrap();
        assert!(again.session.is_grounded("order", "A-1"));
        let bob = conversations
            .get_or_open(Some("bob"), "chat-1", open)
            .unwrap();
        assert!(!bob.session.is_grounded("order", "A-1"));
        assert_ne!(bob.session.id(), a.session.id());
        // A principal whose name holds the separator does not meet another's key.
        let tricky = conversations
            .get_or_open(Some("alice:chat"), "1", open)
            .unwrap();
        assert_ne!(tricky.session.id(), a.session.id());
    }

    #[tokio::test(start_paused = true)]
    async fn a_principal_past_its_cap_forgets_its_least_recently_used() {
        let conversations = Conversations::new(limits(10, 2));
        let first = conversations.get_or_open(Some("alice"), "1", open).unwrap();
        first.session.ground("order", "A-1");
        tokio::time::advance(Duration::from_secs(1)).await;
        conversations.get_or_open(Some("alice"), "2", open).unwrap();
        tokio::time::advance(Duration::from_secs(1)).await;
        conversations.get_or_open(Some("alice"), "3", open).unwrap();
        assert_eq!(conversations.len(), 2);
        let reopened = conversations.get_or_open(Some("alice"), "1", open).unwrap();
        assert!(!reopened.session.is_grounded("order", "A-1"));
    }

    #[tokio::test(start_paused = true)]
    async fn a_full_server_refuses_until_a_conversation_is_idle() {
        let conversations = Conversations::new(limits(2, 2));
        conversations.get_or_open(Some("alice"), "1", open).unwrap();
        conversations.get_or_open(Some("bob"), "1", open).unwrap();
        let refused = conversations
            .get_or_open(Some("carol"), "1", open)
            .err()
            .expect("the server is full");
        assert!(
            refused.message.contains("maximum of 2"),
            "{}",
            refused.message
        );
        tokio::time::advance(Duration::from_secs(61)).await;
        conversations.get_or_open(Some("carol"), "1", open).unwrap();
        assert_eq!(conversations.len(), 1);
    }

    #[test]
    fn a_key_that_is_not_a_short_string_names_the_field() {
        let meta = |value: Value| {
            let mut map = serde_json::Map::new();
            map.insert(CONVERSATION_KEY.to_owned(), value);
            map
        };
        let ok = meta(json!("chat-1"));
        assert_eq!(key_in([&ok], CONVERSATION_KEY).unwrap(), Some("chat-1"));
        for (value, got) in [
            (json!(7), "a number (7)"),
            (json!(""), "an empty string"),
            (json!("x".repeat(129)), "a string of 129 bytes"),
        ] {
            let meta = meta(value);
            let error = key_in([&meta], CONVERSATION_KEY).err().unwrap();
            assert!(
                error.message.contains(CONVERSATION_KEY),
                "{}",
                error.message
            );
            assert!(error.message.ends_with(got), "{}", error.message);
        }
        assert_eq!(key_in([], CONVERSATION_KEY).unwrap(), None);
    }
}
