//! The [`ConversationMemory`] trait and its in-memory implementation.

use std::collections::{HashMap, HashSet, VecDeque};
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, PoisonError};

/// How many ids of one kind an [`InMemoryConversation`] remembers; beyond it the oldest is
/// forgotten.
pub const MAX_IDS_PER_KIND: usize = 10_000;

/// What a grounded argument is checked against: the identifiers known in one conversation.
/// A [`Session`](crate::Session) is one.
pub trait Grounding {
    /// Whether `id` is a known identifier of `kind`.
    fn is_grounded(&self, kind: &str, id: &str) -> bool;
}

/// A category of model failure with a recovery budget of its own
/// ([`RecoveryBudget`](crate::conversation::RecoveryBudget)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FailureCategory {
    /// `invalid_json`, `unknown_argument`, `schema_mismatch`.
    Schema,
    /// `unknown_tool`: counted together for every invented name.
    UnknownTool,
    /// `semantic_invalid`.
    Semantic,
    /// `circuit_open`.
    CircuitOpen,
}

/// What one conversation remembers between its calls. Implementations are shared by every
/// clone of the [`Session`](crate::Session) that holds them and must be safe to call from
/// concurrent calls of the conversation.
///
/// The registry calls it on the call path: [`is_grounded`](Self::is_grounded) while it
/// validates an argument declared `#[arg(grounded = "kind")]`, [`record_ids`](Self::record_ids)
/// after a tool that declares `#[tool(grounds(..))]` succeeded, and the failure counts for the
/// model's recovery budget after every call.
pub trait ConversationMemory: Send + Sync + 'static {
    /// Remembers `ids` as known identifiers of `kind`.
    fn record_ids(&self, kind: &str, ids: Vec<String>);

    /// Whether `id` is a known identifier of `kind` in this conversation.
    fn is_grounded(&self, kind: &str, id: &str) -> bool;

    /// Counts one more failure of `tool` in `category`, in a row, and returns the count.
    /// Unknown tool names are all counted under the empty name `""`.
    fn count_failure(&self, tool: &str, category: FailureCategory) -> u32;

    /// A call of `tool` succeeded: its failures in a row are forgotten, and so are those of
    /// unknown tool names (the model is back on track). Returns whether failures of `tool`
    /// itself were counted, so [`Registry::stats`](crate::Registry::stats) can count the
    /// success as a model retry (a memory that cannot tell returns `false`).
    fn clear_failures(&self, tool: &str) -> bool;
}

/// The default [`ConversationMemory`]: this process's memory, at most [`MAX_IDS_PER_KIND`]
/// ids per kind (the oldest forgotten first).
#[derive(Default)]
pub struct InMemoryConversation {
    ids: Mutex<HashMap<String, Ids>>,
    failures: Mutex<HashMap<(String, FailureCategory), u32>>,
    /// Whether `failures` may hold anything: a success with nothing to forget takes no lock.
    any_failures: AtomicBool,
}

#[derive(Default)]
struct Ids {
    known: HashSet<String>,
    order: VecDeque<String>,
}

impl InMemoryConversation {
    /// An empty memory.
    pub fn new() -> Self {
        InMemoryConversation::default()
    }
}

impl ConversationMemory for InMemoryConversation {
    fn record_ids(&self, kind: &str, ids: Vec<String>) {
        let mut kinds = self.ids.lock().unwrap_or_else(PoisonError::into_inner);
        let entry = kinds.entry(kind.to_owned()).or_default();
        for id in ids {
            if entry.known.insert(id.clone()) {
                entry.order.push_back(id);
                if entry.order.len() > MAX_IDS_PER_KIND {
                    if let Some(oldest) = entry.order.pop_front() {
                        entry.known.remove(&oldest);
                    }
                }
            }
        }
    }

    fn is_grounded(&self, kind: &str, id: &str) -> bool {
        let kinds = self.ids.lock().unwrap_or_else(PoisonError::into_inner);
        kinds.get(kind).is_some_and(|ids| ids.known.contains(id))
    }

    fn count_failure(&self, tool: &str, category: FailureCategory) -> u32 {
        let mut failures = self.failures.lock().unwrap_or_else(PoisonError::into_inner);
        let count = failures.entry((tool.to_owned(), category)).or_insert(0);
        *count = count.saturating_add(1);
        self.any_failures.store(true, Ordering::Release);
        *count
    }

    fn clear_failures(&self, tool: &str) -> bool {
        if !self.any_failures.load(Ordering::Acquire) {
            return false;
        }
        let mut failures = self.failures.lock().unwrap_or_else(PoisonError::into_inner);
        let had = failures.keys().any(|(name, _)| name == tool);
        failures.retain(|(name, _), _| name != tool && !name.is_empty());
        self.any_failures
            .store(!failures.is_empty(), Ordering::Release);
        had
    }
}

impl fmt::Debug for InMemoryConversation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kinds = self.ids.lock().unwrap_or_else(PoisonError::into_inner);
        let counts: HashMap<&str, usize> = kinds
            .iter()
            .map(|(k, v)| (k.as_str(), v.known.len()))
            .collect();
        f.debug_struct("InMemoryConversation")
            .field("ids", &counts)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_conversation_forgets_the_oldest_ids_beyond_its_limit() {
        let memory = InMemoryConversation::new();
        memory.record_ids(
            "order",
            (0..=MAX_IDS_PER_KIND).map(|i| i.to_string()).collect(),
        );
        assert!(!memory.is_grounded("order", "0"));
        assert!(memory.is_grounded("order", "1"));
        assert!(memory.is_grounded("order", &MAX_IDS_PER_KIND.to_string()));
        assert!(!memory.is_grounded("customer", "1"));
    }

    #[test]
    fn a_success_forgets_the_tools_failures_and_invented_names_only() {
        let memory = InMemoryConversation::new();
        assert_eq!(memory.count_failure("a", FailureCategory::Schema), 1);
        assert_eq!(memory.count_failure("a", FailureCategory::Schema), 2);
        assert_eq!(memory.count_failure("b", FailureCategory::Schema), 1);
        assert_eq!(memory.count_failure("", FailureCategory::UnknownTool), 1);
        memory.clear_failures("a");
        assert_eq!(memory.count_failure("a", FailureCategory::Schema), 1);
        assert_eq!(memory.count_failure("b", FailureCategory::Schema), 2);
        assert_eq!(memory.count_failure("", FailureCategory::UnknownTool), 1);
    }
}
