//! [`MemoryStore`]: the embedded idempotency store, bounded in size and time, nothing to install.
//!
//! Built on `moka`: a concurrent map with a per-key compute lock (so `begin` is atomic for one
//! key without any lock shared between keys), LRU eviction by weight (so the store never holds
//! more than its byte budget, and a new key is always admitted, which a frequency-based
//! admission policy would not promise), and per-entry expiry (so memory is reclaimed when a key
//! expires, without a sweeper of our own).
//!
//! The store's *logic* reads time from `tokio::time::Instant`, so tests run it on paused tokio
//! time; moka's own clock only decides when memory is reclaimed, which can never make an expired
//! key look alive.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use moka::ops::compute::Op;
use moka::policy::{EvictionPolicy, Expiry};
use moka::sync::Cache;
use tokio::time::Instant;

use super::store::{Begin, IdempotencyStore, Lease, Prior, Settled, StoreFuture, DEFAULT_KEY_TTL};
use super::{Fingerprint, IdempotencyKey, StoredOutcome};

/// The default memory budget of a [`MemoryStore`]: 64 MiB of records.
pub const DEFAULT_MAX_BYTES: u64 = 64 * 1024 * 1024;

/// What a key came to, as the memory store keeps it.
#[derive(Clone)]
struct Record {
    fingerprint: Fingerprint,
    /// When the key is forgotten (logical time).
    expires_at: Instant,
    /// How long moka keeps the entry (its own clock), counted from the last write.
    keep_for: Duration,
    unknown_effects: u32,
    state: State,
}

#[derive(Clone)]
enum State {
    Running {
        token: u128,
        lock_until: Instant,
        /// What the key was before this call began, restored by `release`.
        before: Prior,
    },
    UnknownEffect,
    Done(Arc<StoredOutcome>),
}

impl Record {
    fn weight(&self, key: &IdempotencyKey) -> u32 {
        let outcome = match &self.state {
            State::Done(outcome) => outcome.weight(),
            _ => 0,
        };
        let bytes = std::mem::size_of::<Record>() + 64 + key.as_str().len() + outcome;
        u32::try_from(bytes).unwrap_or(u32::MAX)
    }
}

struct KeepFor;

impl Expiry<IdempotencyKey, Record> for KeepFor {
    fn expire_after_create(
        &self,
        _: &IdempotencyKey,
        record: &Record,
        _: std::time::Instant,
    ) -> Option<Duration> {
        Some(record.keep_for)
    }

    fn expire_after_update(
        &self,
        _: &IdempotencyKey,
        record: &Record,
        _: std::time::Instant,
        _: Option<Duration>,
    ) -> Option<Duration> {
        Some(record.keep_for)
    }
}

/// The in-memory [`IdempotencyStore`]: one process, bounded in size (LRU by bytes, 64 MiB by
/// default) and time (keys expire after 24 h by default).
///
/// Use it for a single replica, and in tests. Several replicas must share a store (the `redis`
/// feature's `RedisStore`), or a retried refund that lands on another replica is a new action.
///
/// When the byte budget is reached the least recently used keys are forgotten early: a retry of
/// one of those then goes downstream again with the same key, where the dependency's own
/// idempotency is the last line of defense. Size the budget so that never happens within a
/// retry window.
///
/// ```
/// use std::time::Duration;
/// use toolwright_core::idempotency::MemoryStore;
///
/// let store = MemoryStore::builder()
///     .max_bytes(8 * 1024 * 1024)
///     .key_ttl(Duration::from_secs(3600))
///     .build();
/// # let _ = store;
/// ```
#[derive(Clone)]
pub struct MemoryStore {
    inner: Arc<Inner>,
}

struct Inner {
    records: Cache<IdempotencyKey, Record>,
    key_ttl: Duration,
    next_token: AtomicU64,
}

impl MemoryStore {
    /// A store with the defaults: 64 MiB, keys kept 24 h.
    pub fn new() -> MemoryStore {
        MemoryStore::builder().build()
    }

    /// A builder to change the defaults.
    pub fn builder() -> MemoryStoreBuilder {
        MemoryStoreBuilder {
            max_bytes: DEFAULT_MAX_BYTES,
            key_ttl: DEFAULT_KEY_TTL,
        }
    }

    /// How long a key is remembered after its last change.
    pub fn key_ttl(&self) -> Duration {
        self.inner.key_ttl
    }

    /// How many keys the store holds, after applying pending evictions (not free: for tests and
    /// stats, not for the hot path).
    pub fn entry_count(&self) -> u64 {
        self.inner.records.run_pending_tasks();
        self.inner.records.entry_count()
    }

    /// The approximate bytes the store holds, after applying pending evictions. Never above the
    /// budget given to [`MemoryStoreBuilder::max_bytes`].
    pub fn weighted_size(&self) -> u64 {
        self.inner.records.run_pending_tasks();
        self.inner.records.weighted_size()
    }

    fn token(&self) -> u128 {
        u128::from(self.inner.next_token.fetch_add(1, Ordering::Relaxed))
    }

    fn begin_now(
        &self,
        key: &IdempotencyKey,
        fingerprint: &Fingerprint,
        lock_ttl: Duration,
    ) -> Begin {
        let now = Instant::now();
        let key_ttl = self.inner.key_ttl;
        let token = self.token();
        let mut answer = Begin::Mismatch;
        self.inner
            .records
            .entry_by_ref(key)
            .and_compute_with(|entry| {
                let current = entry.map(|e| e.into_value()).filter(|r| r.expires_at > now);
                let (before, unknown_effects) = match &current {
                    None => (Prior::Fresh, 0),
                    Some(r) if r.fingerprint != *fingerprint => return Op::Nop,
                    Some(r) => match &r.state {
                        State::Done(outcome) => {
                            answer = Begin::Replay(StoredOutcome::clone(outcome));
                            return Op::Nop;
                        }
                        State::Running { lock_until, .. } if *lock_until > now => {
                            answer = Begin::InFlight {
                                retry_after: *lock_until - now,
                            };
                            return Op::Nop;
                        }
                        // The holder vanished: its effect is unknown.
                        State::Running { .. } => (Prior::LockExpired, r.unknown_effects + 1),
                        State::UnknownEffect => (Prior::UnknownEffect, r.unknown_effects),
                    },
                };
                answer = Begin::Started(Lease::new(
                    key.clone(),
                    *fingerprint,
                    token,
                    before,
                    unknown_effects,
                ));
                Op::Put(Record {
                    fingerprint: *fingerprint,
                    expires_at: now + key_ttl.max(lock_ttl),
                    keep_for: key_ttl.max(lock_ttl),
                    unknown_effects,
                    state: State::Running {
                        token,
                        lock_until: now + lock_ttl,
                        before,
                    },
                })
            });
        answer
    }

    /// Applies a settlement if the lease still holds its key.
    fn settle_now(&self, lease: &Lease, settle: impl FnOnce(Record) -> Op<Record>) -> Settled {
        let now = Instant::now();
        let mut settled = Settled::LeaseLost;
        self.inner
            .records
            .entry_by_ref(lease.key())
            .and_compute_with(|entry| {
                let record = match entry.map(|e| e.into_value()) {
                    Some(r) if r.expires_at > now => r,
                    _ => return Op::Nop,
                };
                match record.state {
                    State::Running { token, .. } if token == lease.token() => {
                        settled = Settled::Recorded;
                        settle(record)
                    }
                    _ => Op::Nop,
                }
            });
        settled
    }
}

impl Default for MemoryStore {
    fn default() -> Self {
        MemoryStore::new()
    }
}

impl std::fmt::Debug for MemoryStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryStore")
            .field("key_ttl", &self.inner.key_ttl)
            .field("entries", &self.inner.records.entry_count())
            .finish()
    }
}

impl IdempotencyStore for MemoryStore {
    fn begin<'a>(
        &'a self,
        key: &'a IdempotencyKey,
        fingerprint: &'a Fingerprint,
        lock_ttl: Duration,
    ) -> StoreFuture<'a, Begin> {
        let answer = self.begin_now(key, fingerprint, lock_ttl);
        Box::pin(std::future::ready(Ok(answer)))
    }

    fn complete<'a>(
        &'a self,
        lease: &'a Lease,
        outcome: &'a StoredOutcome,
    ) -> StoreFuture<'a, Settled> {
        let key_ttl = self.inner.key_ttl;
        let now = Instant::now();
        let settled = self.settle_now(lease, |record| {
            Op::Put(Record {
                expires_at: now + key_ttl,
                keep_for: key_ttl,
                state: State::Done(Arc::new(outcome.clone())),
                ..record
            })
        });
        Box::pin(std::future::ready(Ok(settled)))
    }

    fn record_unknown_effect<'a>(&'a self, lease: &'a Lease) -> StoreFuture<'a, Settled> {
        let key_ttl = self.inner.key_ttl;
        let now = Instant::now();
        let settled = self.settle_now(lease, |record| {
            Op::Put(Record {
                expires_at: now + key_ttl,
                keep_for: key_ttl,
                unknown_effects: record.unknown_effects + 1,
                state: State::UnknownEffect,
                ..record
            })
        });
        Box::pin(std::future::ready(Ok(settled)))
    }

    fn release<'a>(&'a self, lease: &'a Lease) -> StoreFuture<'a, Settled> {
        let key_ttl = self.inner.key_ttl;
        let now = Instant::now();
        let settled = self.settle_now(lease, |record| match record.state {
            State::Running {
                before: Prior::Fresh,
                ..
            } => Op::Remove,
            // An earlier call's effect is still unknown: keep saying so.
            _ => Op::Put(Record {
                expires_at: now + key_ttl,
                keep_for: key_ttl,
                state: State::UnknownEffect,
                ..record
            }),
        });
        Box::pin(std::future::ready(Ok(settled)))
    }
}

/// Builds a [`MemoryStore`].
#[derive(Debug, Clone)]
pub struct MemoryStoreBuilder {
    max_bytes: u64,
    key_ttl: Duration,
}

impl MemoryStoreBuilder {
    /// The memory budget in bytes (approximate: key, record and stored outcome). Default 64 MiB.
    pub fn max_bytes(mut self, max_bytes: u64) -> Self {
        self.max_bytes = max_bytes;
        self
    }

    /// How long a key is remembered after its last change. Default 24 h.
    pub fn key_ttl(mut self, key_ttl: Duration) -> Self {
        self.key_ttl = key_ttl;
        self
    }

    /// Builds the store.
    pub fn build(self) -> MemoryStore {
        let records = Cache::builder()
            .max_capacity(self.max_bytes)
            .weigher(|key: &IdempotencyKey, record: &Record| record.weight(key))
            .eviction_policy(EvictionPolicy::lru())
            .expire_after(KeepFor)
            .build();
        MemoryStore {
            inner: Arc::new(Inner {
                records,
                key_ttl: self.key_ttl,
                next_token: AtomicU64::new(1),
            }),
        }
    }
}
