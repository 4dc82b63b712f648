//! Runs a store keeps ([`ConversationStore::create_run`] and the rest): a serialized agent run
//! under its id, and who holds it now.
//!
//! A run is held by one holder at a time, for a lease: the holder that claimed it is the only
//! one that may save it until the lease passes, so two replicas resuming the same run at once
//! cannot both run its pending calls. Saving releases the hold.
//!
//! A save the store refuses for its size ([`MAX_RUN_BYTES`]) leaves the run *outgrown* in the
//! same step: the body it held (an earlier turn's) is dropped and a claim answers
//! [`RunClaim::Outgrown`], so no replica continues the run from a point its holder went past.

use std::collections::HashMap;
use std::time::Duration;

use tokio::time::Instant;

#[cfg(doc)]
use super::ConversationStore;
use super::ConversationStoreError;

/// How long a kept run lives after it was last saved, by default: 7 days, as long as the
/// approval ticket it may wait on ([`DEFAULT_APPROVAL_TTL`](super::DEFAULT_APPROVAL_TTL)).
pub const DEFAULT_RUN_TTL: Duration = Duration::from_secs(7 * 24 * 60 * 60);

/// The most runs a [`MemoryConversationStore`](super::MemoryConversationStore) keeps. Past it,
/// the run that would expire first among those no one holds is forgotten to make room; when
/// every run is held, creating (or saving a forgotten) run is refused
/// ([`ConversationStoreError::Full`]) until one is saved or its hold passes.
pub const MAX_MEMORY_RUNS: usize = 10_000;

/// The largest serialized run a store takes: 16 MiB. A larger one is refused
/// ([`ConversationStoreError::TooLarge`]), and the run it would have replaced is outgrown
/// ([`RunClaim::Outgrown`]).
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
    /// Its holder went on past what the store keeps: a save of `bytes` was refused, over the
    /// store's `limit` ([`MAX_RUN_BYTES`]). The body saved before that is gone, so the run
    /// cannot be continued from an earlier point; nothing was claimed.
    Outgrown {
        /// The size of the save refused, in bytes.
        bytes: usize,
        /// The most the store takes, in bytes.
        limit: usize,
    },
}

/// The runs of a [`MemoryConversationStore`](super::MemoryConversationStore).
#[derive(Default)]
pub(crate) struct Runs {
    runs: HashMap<String, KeptRun>,
}

struct KeptRun {
    body: Body,
    holder: Option<(String, Instant)>,
    expires: Instant,
}

/// What a kept run holds: its last body, or the size of the save that outgrew the store.
enum Body {
    Kept(String),
    Outgrown(usize),
}

impl KeptRun {
    /// Whether someone other than `holder` holds it now.
    fn held_by_other(&self, holder: &str, now: Instant) -> bool {
        self.holder
            .as_ref()
            .is_some_and(|(who, until)| who != holder && *until > now)
    }
}

/// What the memory store answers when every one of its runs is held.
fn full() -> ConversationStoreError {
    ConversationStoreError::Full {
        what: "runs",
        limit: MAX_MEMORY_RUNS,
    }
}

fn outgrown(bytes: usize) -> ConversationStoreError {
    ConversationStoreError::TooLarge {
        what: "a run",
        bytes,
        limit: MAX_RUN_BYTES,
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
    /// among those no one holds. [`ConversationStoreError::Full`] when every run is held.
    fn make_room(&mut self, now: Instant) -> Result<(), ConversationStoreError> {
        if self.runs.len() < MAX_MEMORY_RUNS {
            return Ok(());
        }
        self.runs.retain(|_, r| r.expires > now);
        if self.runs.len() < MAX_MEMORY_RUNS {
            return Ok(());
        }
        let oldest = self
            .runs
            .iter()
            .filter(|(_, r)| r.holder.as_ref().is_none_or(|(_, until)| *until <= now))
            .min_by_key(|(_, r)| r.expires)
            .map(|(id, _)| id.clone());
        match oldest {
            Some(id) => {
                self.runs.remove(&id);
                Ok(())
            }
            None => Err(full()),
        }
    }

    pub(crate) fn create(
        &mut self,
        run: &str,
        holder: &str,
        body: &str,
        lease: Duration,
        ttl: Duration,
    ) -> Result<bool, ConversationStoreError> {
        let now = Instant::now();
        if self.live(run, now).is_some() {
            return Ok(false);
        }
        self.make_room(now)?;
        self.runs.insert(
            run.to_owned(),
            KeptRun {
                body: Body::Kept(body.to_owned()),
                holder: Some((holder.to_owned(), now + lease)),
                expires: now + ttl.max(lease),
            },
        );
        Ok(true)
    }

    pub(crate) fn claim(&mut self, run: &str, holder: &str, lease: Duration) -> RunClaim {
        let now = Instant::now();
        let Some(kept) = self.live(run, now) else {
            return RunClaim::Unknown;
        };
        let body = match &kept.body {
            Body::Kept(body) => body.clone(),
            Body::Outgrown(bytes) => {
                return RunClaim::Outgrown {
                    bytes: *bytes,
                    limit: MAX_RUN_BYTES,
                }
            }
        };
        if kept.held_by_other(holder, now) {
            return RunClaim::Busy;
        }
        kept.holder = Some((holder.to_owned(), now + lease));
        kept.expires = kept.expires.max(now + lease);
        RunClaim::Claimed(body)
    }

    /// Saves `body`, or, when it is over [`MAX_RUN_BYTES`], leaves the run outgrown and
    /// answers [`ConversationStoreError::TooLarge`]; `Ok(false)` and nothing written when
    /// another holds it.
    pub(crate) fn save(
        &mut self,
        run: &str,
        holder: &str,
        body: &str,
        ttl: Duration,
        hold: Option<Duration>,
    ) -> Result<bool, ConversationStoreError> {
        let now = Instant::now();
        if body.len() > MAX_RUN_BYTES {
            return self.outgrow(run, holder, body.len(), ttl, now);
        }
        let held = hold.map(|lease| (holder.to_owned(), now + lease));
        let expires = now + ttl.max(hold.unwrap_or_default());
        match self.live(run, now) {
            Some(kept) if kept.held_by_other(holder, now) => Ok(false),
            Some(kept) => {
                kept.body = Body::Kept(body.to_owned());
                kept.holder = held;
                kept.expires = expires;
                Ok(true)
            }
            None => {
                self.make_room(now)?;
                self.runs.insert(
                    run.to_owned(),
                    KeptRun {
                        body: Body::Kept(body.to_owned()),
                        holder: held,
                        expires,
                    },
                );
                Ok(true)
            }
        }
    }

    /// A save of `bytes` refused for its size: unless another holds the run, what it held is
    /// dropped and the run is outgrown for `ttl`, its hold left as it was.
    fn outgrow(
        &mut self,
        run: &str,
        holder: &str,
        bytes: usize,
        ttl: Duration,
        now: Instant,
    ) -> Result<bool, ConversationStoreError> {
        match self.live(run, now) {
            Some(kept) if kept.held_by_other(holder, now) => return Ok(false),
            Some(kept) => {
                kept.body = Body::Outgrown(bytes);
                kept.expires = now + ttl;
            }
            // Nothing to continue from; a run forgotten for room stays forgotten.
            None => {
                if self.make_room(now).is_ok() {
                    self.runs.insert(
                        run.to_owned(),
                        KeptRun {
                            body: Body::Outgrown(bytes),
                            holder: None,
                            expires: now + ttl,
                        },
                    );
                }
            }
        }
        Err(outgrown(bytes))
    }

    /// The run's body; [`ConversationStoreError::TooLarge`] when it outgrew the store.
    pub(crate) fn load(&mut self, run: &str) -> Result<Option<String>, ConversationStoreError> {
        match self.live(run, Instant::now()).map(|kept| &kept.body) {
            None => Ok(None),
            Some(Body::Kept(body)) => Ok(Some(body.clone())),
            Some(Body::Outgrown(bytes)) => Err(outgrown(*bytes)),
        }
    }
}
