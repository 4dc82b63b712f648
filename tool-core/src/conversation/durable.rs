//! One call of a session whose conversation lives in a [`ConversationStore`]: the stages read
//! and write an [`Overlay`], a memory of this call only, filled from the store before the call
//! (one round trip, only when the call has grounded arguments or needs approval) and written
//! back to it after (one round trip, only when the call left something to remember).
//!
//! The stages themselves stay synchronous and unchanged: a session without a store never
//! reaches this module.

use std::collections::HashSet;
use std::sync::{Mutex, PoisonError};

use super::memory::{ConversationMemory, FailureCategory};
use super::recovery::{self, RecoveryBudget};
use super::store::{CallRecord, ConversationStore, ConversationStoreError, Prepared};
use crate::outcome::{ErrorKind, Failure, Outcome};

/// What one call knows of its conversation and leaves in it.
#[derive(Default)]
pub(crate) struct Overlay {
    /// Probing: every id is taken as grounded, and each one asked is noted.
    probing: bool,
    asked: Mutex<Vec<(String, String)>>,
    known: HashSet<(String, String)>,
    turn: Mutex<CallRecord>,
}

impl Overlay {
    /// A memory that notes which ids the checks ask about, answering yes to each.
    pub(crate) fn probe() -> Overlay {
        Overlay {
            probing: true,
            ..Overlay::default()
        }
    }

    /// The ids asked while probing.
    pub(crate) fn asked(&self) -> Vec<(String, String)> {
        std::mem::take(&mut *self.asked.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// A memory that knows the ids of `asked` the store said are grounded.
    pub(crate) fn knowing(asked: Vec<(String, String)>, prepared: &Prepared) -> Overlay {
        let known = asked
            .into_iter()
            .zip(prepared.grounded.iter())
            .filter_map(|(pair, &grounded)| grounded.then_some(pair))
            .collect();
        Overlay {
            known,
            ..Overlay::default()
        }
    }

    fn turn(&self) -> std::sync::MutexGuard<'_, CallRecord> {
        self.turn.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl ConversationMemory for Overlay {
    fn record_ids(&self, kind: &str, ids: Vec<String>) {
        if !ids.is_empty() {
            self.turn().ids.push((kind.to_owned(), ids));
        }
    }

    fn is_grounded(&self, kind: &str, id: &str) -> bool {
        let pair = (kind.to_owned(), id.to_owned());
        if self.probing {
            self.asked
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(pair);
            return true;
        }
        self.known.contains(&pair)
    }

    /// Noted for the store, which counts it after the call; until then, nothing is past its
    /// budget.
    fn count_failure(&self, tool: &str, category: FailureCategory) -> u32 {
        self.turn().failures.push((tool.to_owned(), category));
        0
    }

    fn clear_failures(&self, tool: &str) -> bool {
        self.turn().cleared = Some(tool.to_owned());
        false
    }
}

/// `unavailable`: the conversation store could not be reached, so a call that needs it did not
/// run.
#[cold]
pub(crate) fn unreachable(tool: &str, error: &ConversationStoreError) -> Failure {
    tracing::warn!(target: "toolwright::conversation", tool, error = %error, "the conversation store is unreachable; the call was refused before it ran");
    Failure::new(
        ErrorKind::Unavailable,
        format!("`{tool}` did not run: the conversation's memory cannot be reached right now ({error}). Nothing was done; try again shortly"),
    )
}

/// Writes what the call left into the store and applies the counted failures to the model's
/// recovery budget. When the store cannot be reached, a read-only call whose result grounded
/// ids is answered `unavailable` instead (the model calls it again), so the model never holds
/// an id the conversation does not know; any other outcome stands (it ran) and the loss is
/// logged.
pub(crate) async fn write_back(
    store: &dyn ConversationStore,
    conversation: &str,
    overlay: &Overlay,
    budget: &RecoveryBudget,
    idempotent: bool,
    outcome: &mut Outcome,
) {
    let turn = std::mem::take(&mut *overlay.turn());
    if turn.is_empty() {
        return;
    }
    match store.record(conversation, &turn).await {
        Ok(recorded) => {
            if let Some(&count) = recorded.counts.first() {
                recovery::apply_counted(budget, count, outcome);
            }
        }
        Err(error) if idempotent && !turn.ids.is_empty() && outcome.is_ok() => {
            tracing::warn!(target: "toolwright::conversation", tool = outcome.tool(), error = %error, "the ids a call returned could not be remembered; the call is answered unavailable");
            let failure = Failure::new(ErrorKind::Unavailable, format!(
                "`{}` answered, but the ids it returned could not be remembered in this conversation ({error}); call it again shortly",
                outcome.tool()
            ));
            let mut replaced =
                Outcome::failed(outcome.call_id().to_owned(), outcome.tool.clone(), failure);
            replaced.attempts = outcome.attempts;
            replaced.elapsed = outcome.elapsed;
            *outcome = replaced;
        }
        Err(error) => {
            tracing::warn!(target: "toolwright::conversation", tool = outcome.tool(), error = %error, "the conversation store is unreachable; what this call left (ids, failure counts) is not remembered");
        }
    }
}
