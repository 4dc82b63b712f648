//! [`MemoryStore`]: the embedded idempotency store, bounded in size and time, nothing to install.
//!
//! Sixteen shards, each a mutex over a linked hash map (`hashlink`) in least-recently-used
//! order. A key's shard comes from its hash, computed once per operation and reused for the
//! lookup. Every operation on a key happens under its shard's mutex, so `begin` is atomic per
//! key, and calls of different keys rarely meet on a lock. A call costs one map insert (its
//! `begin`) and one lookup (its settlement); nothing runs in the background.
//!
//! Bounded by bytes: every record weighs its key, its bookkeeping and its stored outcome, and
//! a write that takes the store over its budget evicts least recently used keys until it is
//! back within it: of its own shard first, then of the others. Bounded in time, lazily: a key
//! past its expiry is never answered, and its memory goes when it is next looked up, when it
//! reaches the front of its shard (each write drops a few expired keys from there), or under
//! byte pressure.
//!
//! The store reads time from `tokio::time::Instant`, so tests run it on paused tokio time.

use std::hash::BuildHasher;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use hashlink::linked_hash_map::RawEntryMut;
use hashlink::LinkedHashMap;
use tokio::time::Instant;

use super::store::{Begin, IdempotencyStore, Lease, Prior, Settled, StoreFuture, DEFAULT_KEY_TTL};
use super::{Fingerprint, IdempotencyKey, StoredOutcome};

/// The default memory budget of a [`MemoryStore`]: 64 MiB of records.
pub const DEFAULT_MAX_BYTES: u64 = 64 * 1024 * 1024;

/// Shards of the key space: enough that the workers of a busy runtime rarely wait on one
/// another, few enough that the cross-shard eviction walk stays short.
const SHARDS: usize = 16;

/// Expired keys a write drops from the front of its shard, at most: memory comes back as new
/// keys arrive, at a bounded cost per call.
const REAP_PER_WRITE: usize = 4;

/// Bytes of a record beyond its key text and outcome: the map's node (links, hash, the key's
/// `Arc` header) and allocator rounding, rounded up.
const NODE_OVERHEAD: usize = 96;

type Hasher = foldhash::quality::RandomState;

/// A key's record and what it weighs.
struct Entry {
    record: Record,
    /// What this entry adds to the store's bytes.
    weight: u64,
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
    Done(StoredOutcome),
}

impl Record {
    fn weight(&self, key: &IdempotencyKey) -> u64 {
        let outcome = match &self.state {
            // The outcome itself is inline in the entry, already counted by its size.
            State::Done(outcome) => outcome.heap_bytes(),
            State::Running { .. } | State::UnknownEffect => 0,
        };
        let bytes = std::mem::size_of::<Entry>() + NODE_OVERHEAD + key.as_str().len() + outcome;
        u64::try_from(bytes).unwrap_or(u64::MAX)
    }

    /// Whether `lease` still holds this record's key at `now`.
    fn held_by(&self, lease: &Lease, now: Instant) -> bool {
        self.expires_at > now
            && matches!(self.state, State::Running { token, .. } if token == lease.token())
    }
}

/// One shard: its keys, least recently used first.
struct Shard {
    entries: LinkedHashMap<IdempotencyKey, Entry, Hasher>,
}

/// The in-memory [`IdempotencyStore`]: one process, bounded in size (least recently used keys
/// go first, 64 MiB by default) and time (keys expire after 24 h by default).
///
/// Use it for a single replica, and in tests. Several replicas must share a store (the `redis`
/// feature's `RedisStore`), or a retried refund that lands on another replica is a new action.
///
/// When the byte budget is reached the least recently used keys are forgotten early: a retry of
/// one of those then goes downstream again with the same key, where the dependency's own
/// idempotency is the last line of defense. Size the budget so that never happens within a
/// retry window. An outcome larger than the whole budget is not kept.
///
/// ```
/// use std::time::Duration;
/// use toolwright::idempotency::MemoryStore;
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
    shards: Box<[Mutex<Shard>]>,
    hasher: Hasher,
    /// The records' bytes, all shards together. Changed only under a shard's lock.
    bytes: AtomicU64,
    max_bytes: u64,
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

    /// How many keys the store remembers. Drops every expired key first, so it walks the whole
    /// store: for tests and stats, not for the hot path.
    pub fn entry_count(&self) -> u64 {
        self.reap_all();
        let keys: usize = (0..SHARDS).map(|i| self.inner.shard(i).entries.len()).sum();
        u64::try_from(keys).unwrap_or(u64::MAX)
    }

    /// The approximate bytes the store holds, after dropping every expired key (walks the
    /// whole store). Never above the budget given to [`MemoryStoreBuilder::max_bytes`] once a
    /// write has returned.
    pub fn weighted_size(&self) -> u64 {
        self.reap_all();
        self.inner.bytes.load(Ordering::Relaxed)
    }

    fn reap_all(&self) {
        let now = Instant::now();
        for i in 0..SHARDS {
            let mut shard = self.inner.shard(i);
            let mut freed = 0;
            shard.entries.retain(|_, entry| {
                let alive = entry.record.expires_at > now;
                if !alive {
                    freed += entry.weight;
                }
                alive
            });
            self.inner.bytes.fetch_sub(freed, Ordering::Relaxed);
        }
    }

    /// [`IdempotencyStore::begin`], answered at once: the store never waits, so the call's
    /// pipeline calls this directly and spares the boxed future.
    pub(crate) fn begin_now(
        &self,
        key: &IdempotencyKey,
        fingerprint: &Fingerprint,
        lock_ttl: Duration,
    ) -> Begin {
        let inner = &*self.inner;
        let hash = inner.hasher.hash_one(key);
        let index = shard_of(hash);
        let mut shard = inner.shard(index);
        let now = Instant::now();
        let slot = shard
            .entries
            .raw_entry_mut()
            .from_key_hashed_nocheck(hash, key);
        let (before, unknown_effects) = match &slot {
            RawEntryMut::Occupied(entry) => {
                let record = &entry.get().record;
                match &record.state {
                    _ if record.expires_at <= now => (Prior::Fresh, 0),
                    _ if record.fingerprint != *fingerprint => {
                        return touched(slot, Begin::Mismatch)
                    }
                    State::Done(outcome) => {
                        let replay = Begin::Replay(StoredOutcome::clone(outcome));
                        return touched(slot, replay);
                    }
                    State::Running { lock_until, .. } if *lock_until > now => {
                        let retry_after = *lock_until - now;
                        return touched(slot, Begin::InFlight { retry_after });
                    }
                    // The holder vanished: its effect is unknown.
                    State::Running { .. } => (Prior::LockExpired, record.unknown_effects + 1),
                    State::UnknownEffect => (Prior::UnknownEffect, record.unknown_effects),
                }
            }
            RawEntryMut::Vacant(_) => (Prior::Fresh, 0),
        };
        // The key's hash rides in the token's high half, so settling the lease finds the key
        // without hashing it again; the low half, a counter, keeps every token unique.
        let token =
            u128::from(hash) << 64 | u128::from(inner.next_token.fetch_add(1, Ordering::Relaxed));
        let record = Record {
            fingerprint: *fingerprint,
            expires_at: now + inner.key_ttl.max(lock_ttl),
            unknown_effects,
            state: State::Running {
                token,
                lock_until: now + lock_ttl,
                before,
            },
        };
        let weight = record.weight(key);
        let entry = Entry { record, weight };
        let old = match slot {
            RawEntryMut::Occupied(mut occupied) => {
                occupied.to_back();
                std::mem::replace(occupied.get_mut(), entry).weight
            }
            RawEntryMut::Vacant(vacant) => {
                vacant.insert_hashed_nocheck(hash, key.clone(), entry);
                0
            }
        };
        inner.reweigh(old, weight);
        inner.reap_front(&mut shard, now);
        inner.evict(index, shard, key);
        Begin::Started(Lease::new(
            key.clone(),
            *fingerprint,
            token,
            before,
            unknown_effects,
        ))
    }

    /// Applies `settle` to the lease's record if the lease still holds its key; the key is
    /// forgotten when `settle` answers `false`.
    fn settle_now(
        &self,
        lease: &Lease,
        settle: impl FnOnce(&mut Record, Instant) -> bool,
    ) -> Settled {
        let inner = &*self.inner;
        let key = lease.key();
        // The hash `begin_now` put in the token; a lease this store did not hand out finds no
        // record under it (the lookup compares keys too) and is lost, as it should be.
        let hash = (lease.token() >> 64) as u64;
        let index = shard_of(hash);
        let mut shard = inner.shard(index);
        let now = Instant::now();
        let RawEntryMut::Occupied(mut occupied) = shard
            .entries
            .raw_entry_mut()
            .from_key_hashed_nocheck(hash, key)
        else {
            return Settled::LeaseLost;
        };
        let entry = occupied.get_mut();
        if !entry.record.held_by(lease, now) {
            return Settled::LeaseLost;
        }
        if !settle(&mut entry.record, now) {
            let gone = occupied.remove();
            inner.reweigh(gone.weight, 0);
            return Settled::Recorded;
        }
        let new = entry.record.weight(key);
        let old = std::mem::replace(&mut entry.weight, new);
        occupied.to_back();
        inner.reweigh(old, new);
        inner.evict(index, shard, key);
        Settled::Recorded
    }
}

/// `answer`, after marking the key just used.
fn touched(slot: RawEntryMut<'_, IdempotencyKey, Entry, Hasher>, answer: Begin) -> Begin {
    if let RawEntryMut::Occupied(mut occupied) = slot {
        occupied.to_back();
    }
    answer
}

fn shard_of(hash: u64) -> usize {
    // Bits the map inside the shard does not use: it places a key by the low bits and tags it
    // with the top seven. Taking the shard from the top bits made every key of a shard share
    // part of its tag, and a lookup compare keys eight times as often.
    (hash >> 32) as usize % SHARDS
}

impl Inner {
    fn shard(&self, index: usize) -> MutexGuard<'_, Shard> {
        // No code panics while holding a shard's lock; a poisoned one still holds whole records.
        self.shards[index]
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Accounts for an entry whose weight went from `old` to `new` (under its shard's lock).
    fn reweigh(&self, old: u64, new: u64) {
        if new >= old {
            self.bytes.fetch_add(new - old, Ordering::Relaxed);
        } else {
            self.bytes.fetch_sub(old - new, Ordering::Relaxed);
        }
    }

    /// Drops a few expired keys from the front of `shard`, the least recently used.
    fn reap_front(&self, shard: &mut Shard, now: Instant) {
        for _ in 0..REAP_PER_WRITE {
            match shard.entries.front() {
                Some((_, entry)) if entry.record.expires_at <= now => {}
                _ => return,
            }
            if let Some((_, entry)) = shard.entries.pop_front() {
                self.bytes.fetch_sub(entry.weight, Ordering::Relaxed);
            }
        }
    }

    /// Brings the store back within its budget after a write to `key` in shard `index`: the
    /// least recently used keys of that shard go first, then those of the other shards (each
    /// skipped while another call holds it, so two evicting calls never wait on each other),
    /// and `key` itself last.
    fn evict(&self, index: usize, mut shard: MutexGuard<'_, Shard>, key: &IdempotencyKey) {
        let over = |inner: &Inner| inner.bytes.load(Ordering::Relaxed) > inner.max_bytes;
        while over(self) && shard.entries.len() > 1 {
            self.pop_front(&mut shard);
        }
        if !over(self) {
            return;
        }
        for other in (1..SHARDS).map(|step| (index + step) % SHARDS) {
            let Ok(mut other) = self.shards[other].try_lock() else {
                continue;
            };
            while over(self) && self.pop_front(&mut other) {}
            if !over(self) {
                return;
            }
        }
        if let Some(entry) = shard.entries.remove(key) {
            self.bytes.fetch_sub(entry.weight, Ordering::Relaxed);
        }
    }

    /// Forgets the least recently used key of `shard`; whether there was one.
    fn pop_front(&self, shard: &mut Shard) -> bool {
        let Some((_, entry)) = shard.entries.pop_front() else {
            return false;
        };
        self.bytes.fetch_sub(entry.weight, Ordering::Relaxed);
        true
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
            .field("max_bytes", &self.inner.max_bytes)
            .field("bytes", &self.inner.bytes.load(Ordering::Relaxed))
            .finish()
    }
}

impl MemoryStore {
    /// [`IdempotencyStore::complete`], answered at once.
    pub(crate) fn complete_now(&self, lease: &Lease, outcome: StoredOutcome) -> Settled {
        let key_ttl = self.inner.key_ttl;
        self.settle_now(lease, |record, now| {
            record.expires_at = now + key_ttl;
            record.state = State::Done(outcome);
            true
        })
    }

    /// [`IdempotencyStore::record_unknown_effect`], answered at once.
    pub(crate) fn record_unknown_effect_now(&self, lease: &Lease) -> Settled {
        let key_ttl = self.inner.key_ttl;
        self.settle_now(lease, |record, now| {
            record.expires_at = now + key_ttl;
            record.unknown_effects += 1;
            record.state = State::UnknownEffect;
            true
        })
    }

    /// [`IdempotencyStore::release`], answered at once.
    pub(crate) fn release_now(&self, lease: &Lease) -> Settled {
        let key_ttl = self.inner.key_ttl;
        self.settle_now(lease, |record, now| {
            if let State::Running {
                before: Prior::Fresh,
                ..
            } = record.state
            {
                return false;
            }
            // An earlier call's effect is still unknown: keep saying so.
            record.expires_at = now + key_ttl;
            record.state = State::UnknownEffect;
            true
        })
    }
}

impl IdempotencyStore for MemoryStore {
    fn begin<'a>(
        &'a self,
        key: &'a IdempotencyKey,
        fingerprint: &'a Fingerprint,
        lock_ttl: Duration,
    ) -> StoreFuture<'a, Begin> {
        Box::pin(std::future::ready(Ok(self.begin_now(
            key,
            fingerprint,
            lock_ttl,
        ))))
    }

    fn complete<'a>(
        &'a self,
        lease: &'a Lease,
        outcome: StoredOutcome,
    ) -> StoreFuture<'a, Settled> {
        Box::pin(std::future::ready(Ok(self.complete_now(lease, outcome))))
    }

    fn record_unknown_effect<'a>(&'a self, lease: &'a Lease) -> StoreFuture<'a, Settled> {
        Box::pin(std::future::ready(
            Ok(self.record_unknown_effect_now(lease)),
        ))
    }

    fn release<'a>(&'a self, lease: &'a Lease) -> StoreFuture<'a, Settled> {
        Box::pin(std::future::ready(Ok(self.release_now(lease))))
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
        let hasher = Hasher::default();
        let shards = (0..SHARDS)
            .map(|_| {
                Mutex::new(Shard {
                    entries: LinkedHashMap::with_hasher(hasher.clone()),
                })
            })
            .collect();
        MemoryStore {
            inner: Arc::new(Inner {
                shards,
                hasher,
                bytes: AtomicU64::new(0),
                max_bytes: self.max_bytes,
                key_ttl: self.key_ttl,
                next_token: AtomicU64::new(1),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::idempotency::store::DEFAULT_LOCK_TTL;

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

    /// The bytes the store accounts for, without reaping anything.
    fn bytes(store: &MemoryStore) -> u64 {
        store.inner.bytes.load(Ordering::Relaxed)
    }

    /// What a completed key of `call_id` with `data` weighs.
    fn weight_of(call_id: &str, data: &str) -> u64 {
        let (key, fingerprint) = call(call_id);
        let record = Record {
            fingerprint,
            expires_at: Instant::now(),
            unknown_effects: 0,
            state: State::Done(done(data)),
        };
        record.weight(&key)
    }

    /// `count` call ids whose keys share one shard of `store`.
    fn same_shard(store: &MemoryStore, count: usize) -> Vec<String> {
        let first = shard_of(store.inner.hasher.hash_one(call("call_0").0));
        in_shard(store, first, "call", count)
    }

    /// `count` call ids, `{prefix}_{n}`, whose keys fall in shard `index` of `store`.
    fn in_shard(store: &MemoryStore, index: usize, prefix: &str, count: usize) -> Vec<String> {
        let shard = |id: &str| shard_of(store.inner.hasher.hash_one(call(id).0));
        let ids: Vec<String> = (0..100_000)
            .map(|i| format!("{prefix}_{i}"))
            .filter(|id| shard(id) == index)
            .take(count)
            .collect();
        assert_eq!(ids.len(), count, "keys spread over the shards");
        ids
    }

    /// A completed key of `store` still replays a millisecond before `ttl` and is forgotten at
    /// exactly `ttl`.
    async fn kept_for_exactly(store: MemoryStore, ttl: Duration) {
        assert_eq!(store.key_ttl(), ttl);
        let (key, fp) = call("call_1");
        let lease = start(&store, &key, &fp).await;
        store.complete(&lease, done("R1")).await.unwrap();
        tokio::time::advance(ttl - MILLI).await;
        assert!(matches!(
            store.begin(&key, &fp, DEFAULT_LOCK_TTL).await.unwrap(),
            Begin::Replay(_)
        ));
        tokio::time::advance(MILLI).await;
        assert_eq!(start(&store, &key, &fp).await.prior(), Prior::Fresh);
    }

    #[tokio::test(start_paused = true)]
    async fn a_lease_settles_only_the_record_of_the_store_that_handed_it_out() {
        let (key, fp) = call("call_1");
        let (ours, theirs) = (MemoryStore::new(), MemoryStore::new());
        let lease = start(&ours, &key, &fp).await;
        // The other store holds the same key under a lease of its own.
        let their_lease = start(&theirs, &key, &fp).await;
        assert_ne!(lease.token(), their_lease.token());
        assert_eq!(
            theirs.complete(&lease, done("R1")).await.unwrap(),
            Settled::LeaseLost
        );
        assert!(matches!(
            theirs.begin(&key, &fp, DEFAULT_LOCK_TTL).await.unwrap(),
            Begin::InFlight { .. }
        ));
        // A lease of this store with a token it never handed out is lost too.
        let forged = Lease::new(key.clone(), fp, lease.token() ^ 1, Prior::Fresh, 0);
        assert_eq!(
            ours.complete(&forged, done("R1")).await.unwrap(),
            Settled::LeaseLost
        );
        // Its own lease settles its record, once.
        assert_eq!(
            ours.complete(&lease, done("R1")).await.unwrap(),
            Settled::Recorded
        );
        assert!(matches!(
            ours.begin(&key, &fp, DEFAULT_LOCK_TTL).await.unwrap(),
            Begin::Replay(_)
        ));
        // Two keys begun one after the other have tokens of their own.
        let (other, other_fp) = call("call_2");
        let next = start(&ours, &other, &other_fp).await;
        assert_ne!(next.token(), lease.token());
        assert_eq!(ours.release(&next).await.unwrap(), Settled::Recorded);
        assert_eq!(start(&ours, &other, &other_fp).await.prior(), Prior::Fresh);
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
            store.complete(&lease, done("R1")).await.unwrap(),
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
            store.complete(&lease, outcome.clone()).await.unwrap();
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
    async fn a_key_weighs_its_text_and_its_outcome() {
        const KEY: usize = 10_000;
        const DATA: usize = 5_000;
        let store = MemoryStore::new();
        let (key, fp) = call(&"k".repeat(KEY));
        let lease = start(&store, &key, &fp).await;
        store
            .complete(&lease, done(&"x".repeat(DATA)))
            .await
            .unwrap();
        // Never less than what the store holds for it (the key's text, the outcome's bytes, the
        // entry and the stored outcome themselves), and at most a few hundred bytes more.
        let size = store.weighted_size() as usize;
        let held = KEY + DATA + std::mem::size_of::<Entry>() + std::mem::size_of::<StoredOutcome>();
        assert!(
            (held..KEY + DATA + 1024).contains(&size),
            "{size} bytes for a {KEY}-byte key and {DATA} bytes of outcome"
        );
        assert!(matches!(
            store.begin(&key, &fp, DEFAULT_LOCK_TTL).await.unwrap(),
            Begin::Replay(_)
        ));
    }

    #[tokio::test(start_paused = true)]
    async fn every_settlement_keeps_the_byte_count_exact() {
        let store = MemoryStore::new();
        let (key, fp) = call("call_1");
        let lease = start(&store, &key, &fp).await;
        let running = bytes(&store);
        assert!(running > 0);
        store.complete(&lease, done("R1")).await.unwrap();
        assert_eq!(bytes(&store), weight_of("call_1", "R1"));
        // Released and unknown keys weigh what a running one does; a fresh release frees all.
        let (other, fp2) = call("call_2");
        let lease = start(&store, &other, &fp2).await;
        store.record_unknown_effect(&lease).await.unwrap();
        assert_eq!(bytes(&store), weight_of("call_1", "R1") + running);
        let lease = start(&store, &other, &fp2).await;
        store.release(&lease).await.unwrap();
        assert_eq!(bytes(&store), weight_of("call_1", "R1") + running);
        let (third, fp3) = call("call_3");
        let lease = start(&store, &third, &fp3).await;
        store.release(&lease).await.unwrap();
        assert_eq!(bytes(&store), weight_of("call_1", "R1") + running);
        // A lost lease changes nothing.
        assert_eq!(
            store.complete(&lease, done("R3")).await.unwrap(),
            Settled::LeaseLost
        );
        assert_eq!(bytes(&store), weight_of("call_1", "R1") + running);
    }

    #[tokio::test(start_paused = true)]
    async fn the_least_recently_used_key_of_a_shard_goes_first() {
        let data = "x".repeat(1_000);
        let one = weight_of("call_0", &data);
        // Room for three completed keys of this size, not four.
        let store = MemoryStore::builder().max_bytes(3 * one + one / 2).build();
        let ids = same_shard(&store, 4);
        for id in &ids[..3] {
            let (key, fp) = call(id);
            let lease = start(&store, &key, &fp).await;
            store.complete(&lease, done(&data)).await.unwrap();
        }
        // The oldest is used again, so the second is now the least recently used.
        let (oldest, fp) = call(&ids[0]);
        assert!(matches!(
            store.begin(&oldest, &fp, DEFAULT_LOCK_TTL).await.unwrap(),
            Begin::Replay(_)
        ));
        let (newest, fp) = call(&ids[3]);
        let lease = start(&store, &newest, &fp).await;
        store.complete(&lease, done(&data)).await.unwrap();
        assert!(bytes(&store) <= 3 * one + one / 2);
        for (id, kept) in ids.iter().zip([true, false, true, true]) {
            let (key, fp) = call(id);
            let begin = store.begin(&key, &fp, DEFAULT_LOCK_TTL).await.unwrap();
            assert_eq!(matches!(begin, Begin::Replay(_)), kept, "{id}: {begin:?}");
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_settlement_uses_its_key() {
        let data = "x".repeat(1_000);
        let one = weight_of("call_0", &data);
        let store = MemoryStore::builder().max_bytes(3 * one + one / 2).build();
        let ids = same_shard(&store, 4);
        let keys: Vec<_> = ids.iter().map(|id| call(id)).collect();
        // The first key begins first and completes last: it was used after the second.
        let first = start(&store, &keys[0].0, &keys[0].1).await;
        for (key, fp) in &keys[1..3] {
            let lease = start(&store, key, fp).await;
            store.complete(&lease, done(&data)).await.unwrap();
        }
        store.complete(&first, done(&data)).await.unwrap();
        let lease = start(&store, &keys[3].0, &keys[3].1).await;
        store.complete(&lease, done(&data)).await.unwrap();
        for ((key, fp), kept) in keys.iter().zip([true, false, true, true]) {
            let begin = store.begin(key, fp, DEFAULT_LOCK_TTL).await.unwrap();
            assert_eq!(
                matches!(begin, Begin::Replay(_)),
                kept,
                "{key:?}: {begin:?}"
            );
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_shard_short_of_room_takes_it_from_the_others() {
        let data = "x".repeat(1_000);
        let one = weight_of("call_0", &data);
        let store = MemoryStore::builder().max_bytes(2 * one + one / 2).build();
        // Two keys in shard 3 fill the store; a key of shard 4 then needs room. Shard 3 is
        // the last one the walk from shard 4 visits, so every other shard is looked at first.
        let ids = in_shard(&store, 3, "call", 2);
        let elsewhere = in_shard(&store, 4, "other", 1).remove(0);
        for id in ids.iter().chain([&elsewhere]) {
            let (key, fp) = call(id);
            let lease = start(&store, &key, &fp).await;
            store.complete(&lease, done(&data)).await.unwrap();
        }
        assert!(bytes(&store) <= 2 * one + one / 2);
        let (key, fp) = call(&elsewhere);
        assert!(
            matches!(
                store.begin(&key, &fp, DEFAULT_LOCK_TTL).await.unwrap(),
                Begin::Replay(_)
            ),
            "the newest key is kept; an older one of the full shard went"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn an_outcome_larger_than_the_budget_is_not_kept() {
        let store = MemoryStore::builder().max_bytes(4_096).build();
        let (key, fp) = call("call_1");
        let lease = start(&store, &key, &fp).await;
        store
            .complete(&lease, done(&"x".repeat(10_000)))
            .await
            .unwrap();
        assert!(bytes(&store) <= 4_096);
        assert_eq!(start(&store, &key, &fp).await.prior(), Prior::Fresh);
    }

    #[tokio::test(start_paused = true)]
    async fn the_budget_holds_after_every_write() {
        let budget = 64 * 1024;
        let store = MemoryStore::builder().max_bytes(budget).build();
        for i in 0..2_000 {
            let (key, fp) = call(&format!("call_{i}"));
            let lease = start(&store, &key, &fp).await;
            assert!(bytes(&store) <= budget, "after begin {i}");
            store
                .complete(&lease, done(&"x".repeat(i % 3_000)))
                .await
                .unwrap();
            assert!(bytes(&store) <= budget, "after complete {i}");
        }
        assert!(store.entry_count() > 10);
    }

    #[tokio::test(start_paused = true)]
    async fn expired_keys_go_as_new_keys_arrive() {
        let store = MemoryStore::builder().key_ttl(10 * SECOND).build();
        let outcome = done("R1");
        let settle = |ids: std::ops::Range<usize>| {
            let store = store.clone();
            let outcome = outcome.clone();
            async move {
                for i in ids {
                    let (key, fp) = call(&format!("call_{i}"));
                    let lease = start(&store, &key, &fp).await;
                    store.complete(&lease, outcome.clone()).await.unwrap();
                }
            }
        };
        settle(0..100).await;
        tokio::time::advance(10 * SECOND).await;
        // No sweep: a thousand new keys, each write dropping a few expired ones from its shard.
        settle(100..1_100).await;
        let live: u64 = (100..1_100)
            .map(|i| weight_of(&format!("call_{i}"), "R1"))
            .sum();
        assert_eq!(bytes(&store), live, "every expired key's memory came back");
    }

    #[tokio::test(start_paused = true)]
    async fn the_counts_leave_out_keys_that_expired_exactly_now() {
        let store = MemoryStore::builder().key_ttl(10 * SECOND).build();
        for i in 0..10 {
            let (key, fp) = call(&format!("call_{i}"));
            let lease = start(&store, &key, &fp).await;
            store.complete(&lease, done("R1")).await.unwrap();
        }
        tokio::time::advance(10 * SECOND - MILLI).await;
        assert_eq!(store.entry_count(), 10);
        tokio::time::advance(MILLI).await;
        assert_eq!(store.entry_count(), 0);
        assert_eq!(store.weighted_size(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn a_key_begun_with_other_arguments_is_a_mismatch() {
        let store = MemoryStore::new();
        let (key, fp) = call("call_1");
        let lease = start(&store, &key, &fp).await;
        let other = Fingerprint::of("refund_order", r#"{"order_id":"B2"}"#);
        assert_eq!(
            store.begin(&key, &other, DEFAULT_LOCK_TTL).await.unwrap(),
            Begin::Mismatch
        );
        store.complete(&lease, done("R1")).await.unwrap();
        assert_eq!(
            store.begin(&key, &other, DEFAULT_LOCK_TTL).await.unwrap(),
            Begin::Mismatch
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_key_begun_again_after_it_expired_weighs_only_its_new_record() {
        let store = MemoryStore::builder().key_ttl(10 * SECOND).build();
        let (key, fp) = call("call_1");
        let lease = start(&store, &key, &fp).await;
        let running = bytes(&store);
        store
            .complete(&lease, done(&"x".repeat(5_000)))
            .await
            .unwrap();
        tokio::time::advance(10 * SECOND).await;
        let _lease = start(&store, &key, &fp).await;
        assert_eq!(bytes(&store), running);
    }

    #[tokio::test(start_paused = true)]
    async fn a_store_exactly_at_its_budget_keeps_everything() {
        let data = "x".repeat(1_000);
        let ids = ["call_1", "call_2"];
        let budget: u64 = ids.iter().map(|id| weight_of(id, &data)).sum();
        let store = MemoryStore::builder().max_bytes(budget).build();
        for id in &ids {
            let (key, fp) = call(id);
            let lease = start(&store, &key, &fp).await;
            store.complete(&lease, done(&data)).await.unwrap();
        }
        assert_eq!(bytes(&store), budget);
        for id in &ids {
            let (key, fp) = call(id);
            let begin = store.begin(&key, &fp, DEFAULT_LOCK_TTL).await.unwrap();
            assert!(matches!(begin, Begin::Replay(_)), "{id}: {begin:?}");
        }
    }

    #[test]
    fn concurrent_begins_of_one_key_start_one_call() {
        let store = MemoryStore::new();
        let (key, fp) = call("call_1");
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        let _time = runtime.enter();
        let started = std::thread::scope(|scope| {
            let tasks: Vec<_> = (0..8)
                .map(|_| scope.spawn(|| store.begin_now(&key, &fp, DEFAULT_LOCK_TTL)))
                .collect();
            tasks
                .into_iter()
                .map(|t| t.join().unwrap())
                .filter(|b| matches!(b, Begin::Started(_)))
                .count()
        });
        assert_eq!(started, 1);
    }
}
