//! Runs a store keeps ([`ConversationStore::create_run`] and the rest): a serialized agent run
//! under its id, and who holds it now.
//!
//! A run is held by one holder at a time, for a lease: the holder that claimed it is the only
//! one that may save it until the lease passes, so two replicas resuming the same run at once
//! cannot both run its pending calls. Saving releases the hold.

use std::collections::HashMap;
use std::time::Duration;

use tokio::time::Instant;

#[cfg(doc)]
use super::ConversationStore;

/// How long a kept run lives after it was last saved, by default: 7 days, as long as the
/// approval ticket it may wait on ([`DEFAULT_APPROVAL_TTL`](super::DEFAULT_APPROVAL_TTL)).
pub const DEFAULT_RUN_TTL: Duration = Duration::from_secs(7 * 24 * 60 * 60);

/// The most runs a [`MemoryConversationStore`](super::MemoryConversationStore) keeps: past it,
/// the run that would expire first and that no one holds is forgotten.
pub const MAX_MEMORY_RUNS: usize = 10_000;

/// The largest serialized run a store takes: 16 MiB. A larger one is refused
/// ([`ConversationStoreError::TooLarge`](super::ConversationStoreError::TooLarge)).
pub const MAX_RUN_BYTES: usize = 16 * 1024 * 1024;

/// The answer to [`ConversationStore::claim_run`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RunClaim {
    /// The run is the claimant's until its lease passes or it saves the run: the body last
    /// saved (or created with).
    Claimed(String),
    /// Another holder claimed it and its lease has not passed.
    Busy,
    /// No such run: never created, or expired.
    Unknown,
}

/// The runs of a [`MemoryConversationStore`](super::MemoryConversationStore).
#[derive(Default)]
pub(crate) struct Runs {
    runs: HashMap<String, KeptRun>,
}

struct KeptRun {
    body: String,
    holder: Option<(String, Instant)>,
    expires: Instant,
}

impl KeptRun {
    /// Whether someone other than `holder` holds it now.
    fn held_by_other(&self, holder: &str, now: Instant) -> bool {
        self.holder
            .as_ref()
            .is_some_and(|(who, until)| who != holder && *until > now)
    }
}

impl Runs {
    fn live(&mut self, run: &str, now: Instant) -> Option<&mut KeptRun> {
        if self.runs.get(run).is_some_and(|r| r.expires <= now) {
            self.runs.remove(run);
        }
        self.runs.get_mut(run)
    }

    /// Makes room for one more run: the expired first, then the one that expires soonest
    /// among those no one holds.
    fn make_room(&mut self, now: Instant) {
        if self.runs.len() < MAX_MEMORY_RUNS {
            return;
        }
        self.runs.retain(|_, r| r.expires > now);
        if self.runs.len() < MAX_MEMORY_RUNS {
            return;
        }
        let oldest = self
            .runs
            .iter()
            .filter(|(_, r)| r.holder.as_ref().is_none_or(|(_, until)| *until <= now))
            .min_by_key(|(_, r)| r.expires)
            .map(|(id, _)| id.clone());
        if let Some(id) = oldest {
            self.runs.remove(&id);
        }
    }

    pub(crate) fn create(
        &mut self,
        run: &str,
        holder: &str,
        body: &str,
        lease: Duration,
        ttl: Duration,
    ) -> bool {
        let now = Instant::now();
        if self.live(run, now).is_some() {
            return false;
        }
        self.make_room(now);
        self.runs.insert(
            run.to_owned(),
            KeptRun {
                body: body.to_owned(),
                holder: Some((holder.to_owned(), now + lease)),
                expires: now + ttl.max(lease),
            },
        );
        true
    }

    pub(crate) fn claim(&mut self, run: &str, holder: &str, lease: Duration) -> RunClaim {
        let now = Instant::now();
        let Some(kept) = self.live(run, now) else {
            return RunClaim::Unknown;
        };
        if kept.held_by_other(holder, now) {
            return RunClaim::Busy;
        }
        kept.holder = Some((holder.to_owned(), now + lease));
        kept.expires = kept.expires.max(now + lease);
        RunClaim::Claimed(kept.body.clone())
    }

    pub(crate) fn save(
        &mut self,
        run: &str,
        holder: &str,
        body: &str,
        ttl: Duration,
        hold: Option<Duration>,
    ) -> bool {
        let now = Instant::now();
        let held = hold.map(|lease| (holder.to_owned(), now + lease));
        let expires = now + ttl.max(hold.unwrap_or_default());
        match self.live(run, now) {
            Some(kept) if kept.held_by_other(holder, now) => false,
            Some(kept) => {
                kept.body.clear();
                kept.body.push_str(body);
                kept.holder = held;
                kept.expires = expires;
                true
            }
            None => {
                self.make_room(now);
                self.runs.insert(
                    run.to_owned(),
                    KeptRun {
                        body: body.to_owned(),
                        holder: held,
                        expires,
                    },
                );
                true
            }
        }
    }

    pub(crate) fn load(&mut self, run: &str) -> Option<String> {
        self.live(run, Instant::now()).map(|kept| kept.body.clone())
    }
}
