//! Places under caps a store holds ([`ConversationStore::hold_slot`]): a count that several
//! replicas must agree on, such as the tasks working for one principal, decided where they all
//! look.
//!
//! A place is held under every one of its caps in one atomic step that also refuses it when a
//! cap is reached, so two replicas admitting calls at once never pass a cap between them. A
//! place lives for a lease by the store's clock and is renewed by holding it again: the places
//! of a replica that stopped are given back when their leases pass.

use std::collections::HashMap;
use std::time::Duration;

use tokio::time::Instant;

#[cfg(doc)]
use super::ConversationStore;

/// One cap a place is held under: the scope counted (say, a principal's tasks) and the most
/// places held in it at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SlotCap<'a> {
    /// What is counted: places held under one scope count against each other, whoever holds
    /// them.
    pub scope: &'a str,
    /// The most places held in `scope` at once.
    pub most: usize,
}

/// The answer to [`ConversationStore::hold_slot`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SlotHold {
    /// The place is held (or was, and is renewed) under every cap.
    Held,
    /// Refused, and nothing held: the cap at this index of the ones asked for has `held`
    /// places held already, as many as it allows.
    Full {
        /// Which cap, as an index into the caps asked for.
        cap: usize,
        /// How many places it holds.
        held: usize,
    },
}

/// The longest a place is held in memory: a century, for a lease longer than the clock reaches.
const FOREVER: Duration = Duration::from_secs(100 * 365 * 24 * 60 * 60);

/// The places of a [`MemoryConversationStore`](super::MemoryConversationStore), by scope. Every
/// scope's places are bounded by its cap; a scope with none left is forgotten.
#[derive(Default)]
pub(crate) struct Slots {
    by_scope: HashMap<String, HashMap<String, Instant>>,
}

impl Slots {
    /// Holds `slot` under every cap until `lease` from now, unless one of them is full.
    pub(crate) fn hold(&mut self, caps: &[SlotCap<'_>], slot: &str, lease: Duration) -> SlotHold {
        let now = Instant::now();
        for (i, cap) in caps.iter().enumerate() {
            let Some(held) = self.by_scope.get_mut(cap.scope) else {
                if cap.most == 0 {
                    return SlotHold::Full { cap: i, held: 0 };
                }
                continue;
            };
            held.retain(|_, until| *until > now);
            if !held.contains_key(slot) && held.len() >= cap.most {
                return SlotHold::Full {
                    cap: i,
                    held: held.len(),
                };
            }
        }
        let until = now
            .checked_add(lease.min(FOREVER))
            .unwrap_or_else(|| now + Duration::from_secs(24 * 60 * 60));
        for cap in caps {
            self.by_scope
                .entry(cap.scope.to_owned())
                .or_default()
                .insert(slot.to_owned(), until);
        }
        SlotHold::Held
    }

    /// Gives `slot` back under every one of `scopes`.
    pub(crate) fn release(&mut self, scopes: &[&str], slot: &str) {
        for scope in scopes {
            if let Some(held) = self.by_scope.get_mut(*scope) {
                held.remove(slot);
                if held.is_empty() {
                    self.by_scope.remove(*scope);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caps<'a>(principal: &'a str, most: usize) -> [SlotCap<'a>; 2] {
        [
            SlotCap {
                scope: principal,
                most,
            },
            SlotCap {
                scope: "server",
                most: 3,
            },
        ]
    }

    #[tokio::test(start_paused = true)]
    async fn a_cap_refuses_a_new_place_and_renews_a_held_one() {
        let mut slots = Slots::default();
        let lease = Duration::from_secs(10);
        assert_eq!(slots.hold(&caps("alice", 2), "a1", lease), SlotHold::Held);
        assert_eq!(slots.hold(&caps("alice", 2), "a2", lease), SlotHold::Held);
        assert_eq!(
            slots.hold(&caps("alice", 2), "a3", lease),
            SlotHold::Full { cap: 0, held: 2 }
        );
        // Held already: renewed, not refused.
        assert_eq!(slots.hold(&caps("alice", 2), "a1", lease), SlotHold::Held);
        assert_eq!(slots.hold(&caps("bob", 2), "b1", lease), SlotHold::Held);
        // The server's cap counts everyone's places.
        assert_eq!(
            slots.hold(&caps("bob", 2), "b2", lease),
            SlotHold::Full { cap: 1, held: 3 }
        );
        // A refused hold held nothing: bob still has one place.
        assert_eq!(slots.by_scope["bob"].len(), 1);
        slots.release(&["alice", "server"], "a2");
        assert_eq!(slots.hold(&caps("bob", 2), "b2", lease), SlotHold::Held);
    }

    #[tokio::test(start_paused = true)]
    async fn a_place_not_renewed_is_given_back_when_its_lease_passes() {
        let mut slots = Slots::default();
        let lease = Duration::from_secs(10);
        assert_eq!(slots.hold(&caps("alice", 1), "a1", lease), SlotHold::Held);
        tokio::time::advance(Duration::from_secs(9)).await;
        assert_eq!(
            slots.hold(&caps("alice", 1), "a2", lease),
            SlotHold::Full { cap: 0, held: 1 }
        );
        tokio::time::advance(Duration::from_secs(2)).await;
        assert_eq!(slots.hold(&caps("alice", 1), "a2", lease), SlotHold::Held);
        slots.release(&["alice", "server"], "a2");
        assert!(
            slots.by_scope.is_empty(),
            "a scope with no places is forgotten"
        );
    }
}
