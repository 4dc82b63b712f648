//! Single-use tokens a store marks used ([`ConversationStore::redeem`]): an approval that runs
//! one call, wherever the call arrives.
//!
//! A token is marked used in one atomic step that also refuses it when it was used already, so
//! two replicas that receive the same approved request at once run it once between them. Each
//! principal has its own bound on tokens used and not yet expired, so one principal that
//! approves its own calls as fast as it can fills its own share and no one else's.

use std::collections::HashMap;
use std::time::Duration;

use tokio::time::Instant;

#[cfg(doc)]
use super::ConversationStore;

/// The most unexpired used tokens a [`MemoryConversationStore`](super::MemoryConversationStore)
/// remembers, all principals together: 65,536. Past it a new token is refused
/// ([`Redeemed::Full`]) rather than an old one forgotten, which would let it run again.
pub const MAX_MEMORY_REDEMPTIONS: usize = 65_536;

/// The longest a token stays used in memory: a century, for a TTL longer than the clock reaches.
const FOREVER: Duration = Duration::from_secs(100 * 365 * 24 * 60 * 60);

/// The answer to [`ConversationStore::redeem`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Redeemed {
    /// Marked used now, by this call: what it approves may run.
    Now,
    /// Used already (and not yet expired): it approves nothing more.
    AlreadyUsed,
    /// The principal has as many unexpired tokens marked as it may (or, in memory, the store
    /// has [`MAX_MEMORY_REDEMPTIONS`]): refused, retry once some expire.
    Full,
}

/// The used tokens of a [`MemoryConversationStore`](super::MemoryConversationStore), by
/// principal.
#[derive(Default)]
pub(crate) struct Redemptions {
    by_principal: HashMap<Option<String>, HashMap<String, Instant>>,
    total: usize,
}

impl Redemptions {
    /// Marks `token` of `principal` used until `ttl` from now, unless it is used already or the
    /// principal (or the table) is full.
    pub(crate) fn redeem(
        &mut self,
        principal: Option<&str>,
        token: &str,
        ttl: Duration,
        max_per_principal: usize,
    ) -> Redeemed {
        let now = Instant::now();
        let key = principal.map(str::to_owned);
        let used = self.by_principal.get(&key);
        if used
            .and_then(|used| used.get(token))
            .is_some_and(|until| *until > now)
        {
            return Redeemed::AlreadyUsed;
        }
        let own = used.map_or(0, HashMap::len);
        if own >= max_per_principal {
            self.sweep_one(&key, now);
        }
        if self.total >= MAX_MEMORY_REDEMPTIONS {
            self.sweep_all(now);
        }
        let own = self.by_principal.get(&key).map_or(0, HashMap::len);
        if own >= max_per_principal || self.total >= MAX_MEMORY_REDEMPTIONS {
            return Redeemed::Full;
        }
        // A TTL past the clock's range is a century; past even that, refused (never a token
        // that expires at once).
        let Some(until) = now.checked_add(ttl.min(FOREVER)) else {
            return Redeemed::Full;
        };
        let used = self.by_principal.entry(key).or_default();
        if used.insert(token.to_owned(), until).is_none() {
            self.total += 1;
        }
        Redeemed::Now
    }

    /// Forgets `principal`'s expired tokens.
    fn sweep_one(&mut self, principal: &Option<String>, now: Instant) {
        if let Some(used) = self.by_principal.get_mut(principal) {
            let before = used.len();
            used.retain(|_, until| *until > now);
            self.total -= before - used.len();
            if used.is_empty() {
                self.by_principal.remove(principal);
            }
        }
    }

    /// Forgets every expired token.
    fn sweep_all(&mut self, now: Instant) {
        let principals: Vec<Option<String>> = self.by_principal.keys().cloned().collect();
        for principal in principals {
            self.sweep_one(&principal, now);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_token_is_used_once_until_it_expires() {
        let mut table = Redemptions::default();
        let ttl = Duration::from_secs(10);
        assert_eq!(table.redeem(Some("a"), "t", ttl, 4), Redeemed::Now);
        assert_eq!(table.redeem(Some("a"), "t", ttl, 4), Redeemed::AlreadyUsed);
        tokio::time::advance(ttl).await;
        assert_eq!(table.redeem(Some("a"), "t", ttl, 4), Redeemed::Now);
    }

    #[tokio::test(start_paused = true)]
    async fn a_principal_past_its_share_is_refused_and_others_are_not() {
        let mut table = Redemptions::default();
        let ttl = Duration::from_secs(10);
        for n in 0..3 {
            assert_eq!(
                table.redeem(Some("eve"), &format!("e{n}"), ttl, 3),
                Redeemed::Now
            );
        }
        assert_eq!(table.redeem(Some("eve"), "e3", ttl, 3), Redeemed::Full);
        assert_eq!(table.redeem(Some("ada"), "a0", ttl, 3), Redeemed::Now);
        assert_eq!(table.redeem(None, "n0", ttl, 3), Redeemed::Now);
        tokio::time::advance(ttl).await;
        assert_eq!(table.redeem(Some("eve"), "e3", ttl, 3), Redeemed::Now);
        assert_eq!(
            table.total, 3,
            "the expired were forgotten: {}",
            table.total
        );
    }
}
