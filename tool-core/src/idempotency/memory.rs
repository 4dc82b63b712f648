//! [`MemoryStore`]: the embedded idempotency store, bounded in size and time, nothing to install.
//!
//! Built on `moka`, a concurrent cache: each key gets a slot, created by one insert that moka
//! coalesces among concurrent callers, and every state change then happens under that slot's
//! own mutex. So `begin` is atomic per key, no lock is shared between keys, and a call costs one
//! cache write (the slot) plus reads. moka bounds the slots by bytes with LRU eviction (a new
//! key is always admitted, which a frequency-based admission policy would not promise) and
//! reclaims a slot's memory once no record in it can be alive, without a sweeper of our own.
//!
//! The store's *logic* reads time from `tokio::time::Instant`, so tests run it on paused tokio
//! time; moka's own clock only decides when memory is reclaimed, and keeps a slot at least as
//! long as its record's logical lifetime.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use moka::ops::compute::Op;
use moka::policy::{EvictionPolicy, Expiry};
use moka::sync::Cache;
use tokio::time::Instant;

use super::store::{
    Begin, IdempotencyStore, Lease, Prior, Settled, StoreFuture, DEFAULT_KEY_TTL, DEFAULT_LOCK_TTL,
};
use super::{Fingerprint, IdempotencyKey, StoredOutcome};

/// The default memory budget of a [`MemoryStore`]: 64 MiB of records.
pub const DEFAULT_MAX_BYTES: u64 = 64 * 1024 * 1024;

/// Bytes reserved for a stored outcome when a key's slot is created, so most completions fit
/// without weighing the slot again (which costs a cache write).
const OUTCOME_RESERVE: usize = 256;

/// One key's place in the cache. The cache holds it from the first `begin` until it expires or
/// is evicted; every state change happens in place under its mutex, so a call pays one cache
/// write (creating the slot) and otherwise only cache reads.
struct Slot {
    /// What the weigher reports: the slot's bytes, reserve included.
    weight: AtomicU32,
    /// `None`: nothing is known about the key (new, or released).
    record: Mutex<Option<Record>>,
}

/// What a key came to.
struct Record {
    fingerprint: Fingerprint,
    /// When the key is forgotten (logical time: tokio's clock).
    expires_at: Instant,
    unknown_effects: u32,
    state: State,
}

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

impl Slot {
    fn lock(&self) -> MutexGuard<'_, Option<Record>> {
        // No code panics while holding the lock; a poisoned one still holds a whole record.
        self.record.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

fn base_weight(key: &IdempotencyKey) -> usize {
    std::mem::size_of::<Slot>() + std::mem::size_of::<Record>() + 96 + key.as_str().len()
}

fn clamp(bytes: usize) -> u32 {
    u32::try_from(bytes).unwrap_or(u32::MAX)
}

/// Keeps a slot in memory for as long as any record in it could still be alive: the key TTL
/// plus the longest lock TTL seen, counted from the slot's last use. Every state change follows
/// a read of the slot, so its logical expiry never outlives the slot.
struct KeepAlive {
    key_ttl: Duration,
    max_lock_ms: Arc<AtomicU64>,
}

impl KeepAlive {
    fn keep_for(&self) -> Duration {
        self.key_ttl + Duration::from_millis(self.max_lock_ms.load(Ordering::Relaxed))
    }
}

impl Expiry<IdempotencyKey, Arc<Slot>> for KeepAlive {
    fn expire_after_create(
        &self,
        _: &IdempotencyKey,
        _: &Arc<Slot>,
        _: std::time::Instant,
    ) -> Option<Duration> {
        Some(self.keep_for())
    }

    fn expire_after_read(
        &self,
        _: &IdempotencyKey,
        _: &Arc<Slot>,
        _: std::time::Instant,
        _: Option<Duration>,
        _: std::time::Instant,
    ) -> Option<Duration> {
        Some(self.keep_for())
    }

    fn expire_after_update(
        &self,
        _: &IdempotencyKey,
        _: &Arc<Slot>,
        _: std::time::Instant,
        _: Option<Duration>,
    ) -> Option<Duration> {
        Some(self.keep_for())
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
    slots: Cache<IdempotencyKey, Arc<Slot>, foldhash::quality::RandomState>,
    key_ttl: Duration,
    max_lock_ms: Arc<AtomicU64>,
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
        self.inner.slots.run_pending_tasks();
        self.inner.slots.entry_count()
    }

    /// The approximate bytes the store holds, after applying pending evictions. Never above the
    /// budget given to [`MemoryStoreBuilder::max_bytes`].
    pub fn weighted_size(&self) -> u64 {
        self.inner.slots.run_pending_tasks();
        self.inner.slots.weighted_size()
    }

    /// The key's slot, created (one cache write, coalesced among concurrent callers) if absent.
    /// One lookup either way: the entry API reads an existing slot as `get` does (a read, which
    /// renews its keep-alive), and a non-idempotent call's key is almost always new, so looking
    /// it up with `get` first would cost every such call a second lookup for nothing.
    fn slot(&self, key: &IdempotencyKey) -> Arc<Slot> {
        self.inner
            .slots
            .entry_by_ref(key)
            .or_insert_with(|| {
                Arc::new(Slot {
                    weight: AtomicU32::new(clamp(base_weight(key) + OUTCOME_RESERVE)),
                    record: Mutex::new(None),
                })
            })
            .into_value()
    }

    fn begin_now(
        &self,
        key: &IdempotencyKey,
        fingerprint: &Fingerprint,
        lock_ttl: Duration,
    ) -> Begin {
        let lock_ms = u64::try_from(lock_ttl.as_millis()).unwrap_or(u64::MAX);
        if lock_ms > self.inner.max_lock_ms.load(Ordering::Relaxed) {
            self.inner.max_lock_ms.fetch_max(lock_ms, Ordering::Relaxed);
        }
        let slot = self.slot(key);
        let now = Instant::now();
        let mut record = slot.lock();
        let (before, unknown_effects) = match record.as_ref().filter(|r| r.expires_at > now) {
            None => (Prior::Fresh, 0),
            Some(r) if r.fingerprint != *fingerprint => return Begin::Mismatch,
            Some(r) => match &r.state {
                State::Done(outcome) => return Begin::Replay(StoredOutcome::clone(outcome)),
                State::Running { lock_until, .. } if *lock_until > now => {
                    return Begin::InFlight {
                        retry_after: *lock_until - now,
                    }
                }
                // The holder vanished: its effect is unknown.
                State::Running { .. } => (Prior::LockExpired, r.unknown_effects + 1),
                State::UnknownEffect => (Prior::UnknownEffect, r.unknown_effects),
            },
        };
        let token = u128::from(self.inner.next_token.fetch_add(1, Ordering::Relaxed));
        *record = Some(Record {
            fingerprint: *fingerprint,
            expires_at: now + self.inner.key_ttl.max(lock_ttl),
            unknown_effects,
            state: State::Running {
                token,
                lock_until: now + lock_ttl,
                before,
            },
        });
        Begin::Started(Lease::new(
            key.clone(),
            *fingerprint,
            token,
            before,
            unknown_effects,
        ))
    }

    /// Applies `settle` to the lease's record if the lease still holds its key; returns the
    /// slot when it did.
    fn settle_now(
        &self,
        lease: &Lease,
        settle: impl FnOnce(&mut Option<Record>, Instant),
    ) -> Option<Arc<Slot>> {
        let slot = self.inner.slots.get(lease.key())?;
        let now = Instant::now();
        let mut record = slot.lock();
        let holds = record.as_ref().is_some_and(|r| {
            r.expires_at > now
                && matches!(r.state, State::Running { token, .. } if token == lease.token())
        });
        if !holds {
            return None;
        }
        settle(&mut record, now);
        drop(record);
        Some(slot)
    }

    /// Weighs a slot again after it took an outcome larger than its reserve, so the byte budget
    /// holds. Only if the cache still holds this very slot.
    fn reweigh(&self, key: &IdempotencyKey, slot: &Arc<Slot>, outcome: &StoredOutcome) {
        let needed = clamp(base_weight(key) + outcome.weight());
        if needed <= slot.weight.load(Ordering::Relaxed) {
            return;
        }
        slot.weight.store(needed, Ordering::Relaxed);
        self.inner
            .slots
            .entry_by_ref(key)
            .and_compute_with(|entry| match entry {
                Some(entry) if Arc::ptr_eq(entry.value(), slot) => Op::Put(Arc::clone(slot)),
                _ => Op::Nop,
            });
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
            .field("entries", &self.inner.slots.entry_count())
            .finish()
    }
}

fn settled(slot: Option<Arc<Slot>>) -> Settled {
    match slot {
        Some(_) => Settled::Recorded,
        None => Settled::LeaseLost,
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
        let slot = self.settle_now(lease, |record, now| {
            if let Some(r) = record {
                r.expires_at = now + key_ttl;
                r.state = State::Done(Arc::new(outcome.clone()));
            }
        });
        if let Some(slot) = &slot {
            self.reweigh(lease.key(), slot, outcome);
        }
        Box::pin(std::future::ready(Ok(settled(slot))))
    }

    fn record_unknown_effect<'a>(&'a self, lease: &'a Lease) -> StoreFuture<'a, Settled> {
        let key_ttl = self.inner.key_ttl;
        let slot = self.settle_now(lease, |record, now| {
            if let Some(r) = record {
                r.expires_at = now + key_ttl;
                r.unknown_effects += 1;
                r.state = State::UnknownEffect;
            }
        });
        Box::pin(std::future::ready(Ok(settled(slot))))
    }

    fn release<'a>(&'a self, lease: &'a Lease) -> StoreFuture<'a, Settled> {
        let key_ttl = self.inner.key_ttl;
        let slot = self.settle_now(lease, |record, now| {
            let fresh = matches!(
                record,
                Some(Record {
                    state: State::Running {
                        before: Prior::Fresh,
                        ..
                    },
                    ..
                })
            );
            if fresh {
                *record = None;
            } else if let Some(r) = record {
                // An earlier call's effect is still unknown: keep saying so.
                r.expires_at = now + key_ttl;
                r.state = State::UnknownEffect;
            }
        });
        Box::pin(std::future::ready(Ok(settled(slot))))
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
        let max_lock_ms = Arc::new(AtomicU64::new(
            u64::try_from(DEFAULT_LOCK_TTL.as_millis()).unwrap_or(u64::MAX),
        ));
        let slots = Cache::builder()
            .max_capacity(self.max_bytes)
            .weigher(|_: &IdempotencyKey, slot: &Arc<Slot>| slot.weight.load(Ordering::Relaxed))
            .eviction_policy(EvictionPolicy::lru())
            .expire_after(KeepAlive {
                key_ttl: self.key_ttl,
                max_lock_ms: Arc::clone(&max_lock_ms),
            })
            .build_with_hasher(foldhash::quality::RandomState::default());
        MemoryStore {
            inner: Arc::new(Inner {
                slots,
                key_ttl: self.key_ttl,
                max_lock_ms,
                next_token: AtomicU64::new(1),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECOND: Duration = Duration::from_secs(1);
    const MILLI: Duration = Duration::from_millis(1);

    fn call(call_id: &str) -> (IdempotencyKey, Fingerprint) {
        let fp = Fingerprint::of("refund_order", r#"{"order_id":"A1"}"#);
        (IdempotencyKey::derive("s", "refund_order", call_id), fp)
    }

    fn done(data: &str) -> StoredOutcome {
        StoredOutcome::from_json(&format!(
            r#"{{"status":"success","data":"{data}","attempts":1}}"#
        ))
        .unwrap()
    }

    async fn start(store: &MemoryStore, key: &IdempotencyKey, fp: &Fingerprint) -> Lease {
        match store.begin(key, fp, DEFAULT_LOCK_TTL).await.unwrap() {
            Begin::Started(lease) => lease,
            other => panic!("expected Started, got {other:?}"),
        }
    }

    /// A completed key of `store` still replays a millisecond before `ttl` and is forgotten at
    /// exactly `ttl`.
    async fn kept_for_exactly(store: MemoryStore, ttl: Duration) {
        assert_eq!(store.key_ttl(), ttl);
        let (key, fp) = call("call_1");
        let lease = start(&store, &key, &fp).await;
        store.complete(&lease, &done("R1")).await.unwrap();
        tokio::time::advance(ttl - MILLI).await;
        assert!(matches!(
            store.begin(&key, &fp, DEFAULT_LOCK_TTL).await.unwrap(),
            Begin::Replay(_)
        ));
        tokio::time::advance(MILLI).await;
        assert_eq!(start(&store, &key, &fp).await.prior(), Prior::Fresh);
    }

    #[tokio::test(start_paused = true)]
    async fn a_key_is_forgotten_exactly_when_its_ttl_ends() {
        kept_for_exactly(
            MemoryStore::builder().key_ttl(600 * SECOND).build(),
            600 * SECOND,
        )
        .await;
    }

    #[tokio::test(start_paused = true)]
    async fn the_default_store_keeps_a_key_for_a_day() {
        kept_for_exactly(MemoryStore::new(), 24 * 3600 * SECOND).await;
    }

    #[tokio::test(start_paused = true)]
    async fn a_lock_holds_until_exactly_its_ttl() {
        let store = MemoryStore::new();
        let (key, fp) = call("call_1");
        let lock = 10 * SECOND;
        let first = store.begin(&key, &fp, lock).await.unwrap();
        assert!(matches!(first, Begin::Started(_)));
        tokio::time::advance(lock - MILLI).await;
        assert_eq!(
            store.begin(&key, &fp, lock).await.unwrap(),
            Begin::InFlight { retry_after: MILLI }
        );
        tokio::time::advance(MILLI).await;
        let Begin::Started(second) = store.begin(&key, &fp, lock).await.unwrap() else {
            panic!("an expired lock is taken over")
        };
        assert_eq!(second.prior(), Prior::LockExpired);
        assert_eq!(second.unknown_effects(), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn a_call_its_key_outlived_records_nothing() {
        let store = MemoryStore::builder().key_ttl(10 * SECOND).build();
        let (key, fp) = call("call_1");
        let Begin::Started(lease) = store.begin(&key, &fp, 10 * SECOND).await.unwrap() else {
            panic!("a fresh key starts")
        };
        tokio::time::advance(10 * SECOND).await;
        assert_eq!(
            store.complete(&lease, &done("R1")).await.unwrap(),
            Settled::LeaseLost
        );
        assert_eq!(start(&store, &key, &fp).await.prior(), Prior::Fresh);
    }

    #[tokio::test(start_paused = true)]
    async fn a_lock_longer_than_the_key_ttl_keeps_the_key() {
        let store = MemoryStore::builder().key_ttl(10 * SECOND).build();
        let (key, fp) = call("call_1");
        let _lease = start(&store, &key, &fp).await;
        tokio::time::advance(DEFAULT_LOCK_TTL - SECOND).await;
        assert!(matches!(
            store.begin(&key, &fp, DEFAULT_LOCK_TTL).await.unwrap(),
            Begin::InFlight { .. }
        ));
    }

    #[tokio::test(start_paused = true)]
    async fn the_default_store_keeps_twenty_thousand_small_outcomes() {
        const KEYS: usize = 20_000;
        let store = MemoryStore::new();
        let outcome = done("R1");
        for i in 0..KEYS {
            let (key, fp) = call(&format!("call_{i}"));
            let lease = start(&store, &key, &fp).await;
            store.complete(&lease, &outcome).await.unwrap();
        }
        assert_eq!(store.entry_count(), KEYS as u64);
        assert!(store.weighted_size() <= DEFAULT_MAX_BYTES);
        for i in [0, KEYS / 2, KEYS - 1] {
            let (key, fp) = call(&format!("call_{i}"));
            let begin = store.begin(&key, &fp, DEFAULT_LOCK_TTL).await.unwrap();
            assert_eq!(begin, Begin::Replay(outcome.clone()), "call_{i}");
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_small_outcome_fits_in_the_room_its_key_was_given() {
        let store = MemoryStore::new();
        let (key, fp) = call("call_1");
        let lease = start(&store, &key, &fp).await;
        let running = store.weighted_size();
        store.complete(&lease, &done("R1")).await.unwrap();
        // No second cache write to weigh it again: the key already had room for it.
        assert_eq!(store.weighted_size(), running);
    }

    #[tokio::test(start_paused = true)]
    async fn a_key_weighs_its_text_and_its_outcome() {
        const KEY: usize = 10_000;
        const DATA: usize = 5_000;
        let store = MemoryStore::new();
        let (key, fp) = call(&"k".repeat(KEY));
        let lease = start(&store, &key, &fp).await;
        store
            .complete(&lease, &done(&"x".repeat(DATA)))
            .await
            .unwrap();
        // The key's text and the outcome's bytes, plus the record and the cache's bookkeeping
        // (a few hundred bytes).
        let size = store.weighted_size() as usize;
        // Never less than what the store holds for it: the key's text, the outcome's bytes, and
        // the slot, record and stored outcome themselves.
        let held = KEY
            + DATA
            + std::mem::size_of::<Slot>()
            + std::mem::size_of::<Record>()
            + std::mem::size_of::<StoredOutcome>();
        assert!(
            (held..KEY + DATA + 1024).contains(&size),
            "{size} bytes for a {KEY}-byte key and {DATA} bytes of outcome"
        );
        // Weighing it again kept it.
        assert!(matches!(
            store.begin(&key, &fp, DEFAULT_LOCK_TTL).await.unwrap(),
            Begin::Replay(_)
        ));
    }

    /// What the store asks of moka for each slot, read from the store's own keep-alive.
    fn keep_alive(store: &MemoryStore) -> [Option<Duration>; 3] {
        let keep = KeepAlive {
            key_ttl: store.inner.key_ttl,
            max_lock_ms: Arc::clone(&store.inner.max_lock_ms),
        };
        let (key, _) = call("call_1");
        let slot = store.slot(&key);
        let now = std::time::Instant::now();
        [
            keep.expire_after_create(&key, &slot, now),
            keep.expire_after_read(&key, &slot, now, None, now),
            keep.expire_after_update(&key, &slot, now, None),
        ]
    }

    #[tokio::test(start_paused = true)]
    async fn a_slot_is_kept_in_memory_for_the_key_ttl_plus_the_longest_lock_seen() {
        // moka reclaims a slot's memory on its own clock; the store's answers come from the
        // record's expiry. The slot must outlive every record it can hold: a completed key
        // (the key TTL after its last change) and a running call (its lock, which may be
        // longer than the key TTL).
        let store = MemoryStore::builder().key_ttl(3600 * SECOND).build();
        let floor = 3600 * SECOND + DEFAULT_LOCK_TTL;
        assert_eq!(keep_alive(&store), [Some(floor); 3]);
        let (key, fp) = call("call_2");
        let _ = store.begin(&key, &fp, 3 * 3600 * SECOND).await.unwrap();
        let longest = 4 * 3600 * SECOND;
        assert_eq!(keep_alive(&store), [Some(longest); 3]);
        // A shorter lock later does not shorten it: older slots may hold the longer one.
        let (key, fp) = call("call_3");
        let _ = store.begin(&key, &fp, SECOND).await.unwrap();
        assert_eq!(keep_alive(&store), [Some(longest); 3]);
    }

    #[tokio::test(start_paused = true)]
    async fn a_slot_evicted_before_it_is_weighed_again_is_not_put_back() {
        // A call completes with an outcome larger than its slot's reserve; between its
        // settlement and the weighing, the byte budget evicts the slot and another call of
        // the same key makes a new one. The weighing must not put the old slot back over it.
        let store = MemoryStore::new();
        let (key, fp) = call("call_1");
        let _ = start(&store, &key, &fp).await;
        let evicted = store.slot(&key);
        store.inner.slots.invalidate(&key);
        let lease = start(&store, &key, &fp).await;
        let current = store.slot(&key);
        assert!(!Arc::ptr_eq(&evicted, &current));
        store.reweigh(&key, &evicted, &done(&"x".repeat(5_000)));
        assert!(
            Arc::ptr_eq(&store.slot(&key), &current),
            "the cache still holds the new slot"
        );
        let big = done(&"y".repeat(5_000));
        assert_eq!(
            store.complete(&lease, &big).await.unwrap(),
            Settled::Recorded
        );
        assert_eq!(
            store.begin(&key, &fp, DEFAULT_LOCK_TTL).await.unwrap(),
            Begin::Replay(big)
        );
    }
}
