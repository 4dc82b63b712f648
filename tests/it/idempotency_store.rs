//! One conformance suite for every idempotency store: the same test functions run against the
//! in-memory store (on paused tokio time) and against a real `redis-server` on loopback.
//!
//! Time is the only thing the two harnesses do differently. The memory store reads tokio's
//! clock, so `advance` is `tokio::time::advance`. The Redis store keeps time only as key TTLs on
//! the server, so `advance` shortens every TTL of the test's keys by the same amount (deleting
//! the keys it runs out), which is what the server's clock would have done: no test sleeps.
//!
//! Outcomes to store come from a real registry running a real `#[tool]`.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use toolwright::idempotency::{
    Begin, Disposition, Fingerprint, IdempotencyStore, KeyMode, Lease, MemoryStore, Prior, Settled,
    StoredOutcome, DEFAULT_KEY_TTL, DEFAULT_LOCK_TTL,
};
use toolwright::prelude::*;

#[cfg(feature = "redis")]
use crate::support::redis_commands;
#[cfg(feature = "redis")]
use crate::support::redis_server;

#[derive(Serialize, schemars::JsonSchema)]
struct Refund {
    refund_id: String,
    amount: f64,
}

/// Refund part of an order. `answer` picks how the pretend payment service responds.
#[tool(timeout_ms = 1000, idempotent = false)]
async fn refund_order(
    key: IdempotencyKey,
    /// The order to refund.
    order_id: String,
    /// Amount in dollars.
    #[arg(range(min = 0.01, max = 500.0))]
    amount: f64,
    /// How the payment service answers: ok (default), not_found, conflict, timeout, refused.
    answer: Option<String>,
) -> Result<Refund, ToolError> {
    match answer.as_deref().unwrap_or("ok") {
        "not_found" => Err(ToolError::not_found(format!(
            "order {order_id} does not exist"
        ))),
        "conflict" => Err(ToolError::conflict("refund already in progress")),
        "timeout" => Err(ToolError::timeout("the payment service did not answer")),
        "refused" => Err(ToolError::unavailable("connection refused").never_started()),
        _ => Ok(Refund {
            refund_id: format!(
                "R-{}",
                &key.as_str()[key.as_str().len().saturating_sub(6)..]
            ),
            amount,
        }),
    }
}

/// A real outcome of the pipeline for `arguments`.
async fn outcome(arguments: &str) -> Outcome {
    let registry = Registry::builder().tool(RefundOrder).build().unwrap();
    registry
        .call(ToolCall::new("call_1", "refund_order", arguments))
        .await
}

async fn stored(arguments: &str) -> StoredOutcome {
    StoredOutcome::from_outcome(&outcome(arguments).await)
}

const ARGS: &str = r#"{"order_id":"A1","amount":5}"#;
const OTHER_ARGS: &str = r#"{"order_id":"A1","amount":50}"#;

fn call(call_id: &str, arguments: &str) -> (IdempotencyKey, Fingerprint) {
    let fp = Fingerprint::of("refund_order", arguments);
    let key = KeyMode::CallId.key("conv-7", "refund_order", call_id, &fp);
    (key, fp)
}

/// What differs between stores: the store, and how time passes for it.
trait Harness {
    type Store: IdempotencyStore + Clone;
    fn store(&self) -> Self::Store;
    fn advance(&self, by: Duration) -> impl Future<Output = ()>;
}

fn started(begin: Begin) -> Lease {
    match begin {
        Begin::Started(lease) => lease,
        other => panic!("expected Started, got {other:?}"),
    }
}

async fn begin<S: IdempotencyStore>(store: &S, key: &IdempotencyKey, fp: &Fingerprint) -> Begin {
    store.begin(key, fp, DEFAULT_LOCK_TTL).await.unwrap()
}

// ---------------------------------------------------------------------------------------------
// The suite
// ---------------------------------------------------------------------------------------------

async fn a_completed_key_replays_its_outcome(h: impl Harness) {
    let store = h.store();
    let (key, fp) = call("call_1", ARGS);
    let lease = started(begin(&store, &key, &fp).await);
    assert_eq!(lease.prior(), Prior::Fresh);
    assert_eq!(lease.key(), &key);
    let success = stored(ARGS).await;
    assert_eq!(success.status(), Status::Success);
    assert_eq!(
        store.complete(&lease, success.clone()).await.unwrap(),
        Settled::Recorded
    );

    let Begin::Replay(replayed) = begin(&store, &key, &fp).await else {
        panic!("a completed key must replay")
    };
    assert_eq!(replayed, success);
    let outcome = replayed.into_outcome("call_1", "refund_order");
    assert_eq!(outcome.status(), Status::Success);
    assert!(outcome.data().unwrap().get().contains("\"amount\":5"));

    // Settling twice is refused: the lease ended with the first settlement.
    assert_eq!(
        store.complete(&lease, success.clone()).await.unwrap(),
        Settled::LeaseLost
    );
}

async fn errors_are_replayed_too(h: impl Harness) {
    let store = h.store();
    let arguments = r#"{"order_id":"Z9","amount":5,"answer":"not_found"}"#;
    let (key, fp) = call("call_1", arguments);
    let lease = started(begin(&store, &key, &fp).await);
    let failed = outcome(arguments).await;
    assert_eq!(failed.error_kind(), Some(ErrorKind::NotFound));
    assert_eq!(
        store.settle(&lease, &failed, false).await.unwrap(),
        Settled::Recorded
    );

    let Begin::Replay(replayed) = begin(&store, &key, &fp).await else {
        panic!("a stored error must replay")
    };
    let replay = replayed.into_outcome("call_1", "refund_order");
    assert_eq!(replay.error_kind(), Some(ErrorKind::NotFound));
    assert_eq!(replay.message(), Some("order Z9 does not exist"));
    assert!(replay.is_replayed());
    let mut envelope = failed.to_model_json();
    envelope["replayed"] = true.into();
    assert_eq!(replay.to_model_json(), envelope);
}

async fn other_arguments_under_one_key_are_a_mismatch(h: impl Harness) {
    let store = h.store();
    let (key, fp) = call("call_1", ARGS);
    let (_, other) = call("call_1", OTHER_ARGS);
    let (_, same_differently_written) = call("call_1", r#"{ "amount": 5.0, "order_id": "A1" }"#);

    let lease = started(begin(&store, &key, &fp).await);
    // While in flight, the arguments are checked first.
    assert_eq!(begin(&store, &key, &other).await, Begin::Mismatch);
    assert!(matches!(
        begin(&store, &key, &same_differently_written).await,
        Begin::InFlight { .. }
    ));
    store.complete(&lease, stored(ARGS).await).await.unwrap();
    // After completion too; the same arguments written differently still replay.
    assert_eq!(begin(&store, &key, &other).await, Begin::Mismatch);
    assert!(matches!(
        begin(&store, &key, &same_differently_written).await,
        Begin::Replay(_)
    ));
}

/// How long before the lock's expiry the in-flight check runs.
const LOCK_MARGIN: Duration = Duration::from_secs(30);

async fn a_running_key_is_in_flight_until_its_lock_expires(h: impl Harness) {
    let store = h.store();
    let (key, fp) = call("call_1", ARGS);
    let first = started(store.begin(&key, &fp, DEFAULT_LOCK_TTL).await.unwrap());

    // 30 s before the lock expires. Redis counts TTLs on its own (real) clock, so the margin is
    // wide: a loaded machine may take seconds between `advance` and `begin`.
    h.advance(DEFAULT_LOCK_TTL - LOCK_MARGIN).await;
    let Begin::InFlight { retry_after } = begin(&store, &key, &fp).await else {
        panic!("the lock still holds")
    };
    assert!(
        retry_after > LOCK_MARGIN / 2 && retry_after <= LOCK_MARGIN,
        "{retry_after:?}"
    );

    // The holder crashed: past the lock TTL another call takes the key over, and its effect is
    // counted as unknown.
    h.advance(LOCK_MARGIN + Duration::from_secs(1)).await;
    let second = started(begin(&store, &key, &fp).await);
    assert_eq!(second.prior(), Prior::LockExpired);
    assert_eq!(second.unknown_effects(), 1);
    assert_ne!(second.token(), first.token());

    // The old holder wakes up: its settlement is fenced off and changes nothing.
    let late = stored(r#"{"order_id":"A1","amount":5,"answer":"not_found"}"#).await;
    assert_eq!(
        store.complete(&first, late.clone()).await.unwrap(),
        Settled::LeaseLost
    );
    assert_eq!(store.release(&first).await.unwrap(), Settled::LeaseLost);
    let success = stored(ARGS).await;
    assert_eq!(
        store.complete(&second, success.clone()).await.unwrap(),
        Settled::Recorded
    );
    assert_eq!(begin(&store, &key, &fp).await, Begin::Replay(success));
}

async fn keys_expire_after_their_ttl(h: impl Harness) {
    let store = h.store();
    let (key, fp) = call("call_1", ARGS);
    let lease = started(begin(&store, &key, &fp).await);
    store.complete(&lease, stored(ARGS).await).await.unwrap();

    // A minute before the key expires (a wide margin: Redis's own clock keeps running).
    h.advance(DEFAULT_KEY_TTL - Duration::from_secs(60)).await;
    assert!(matches!(begin(&store, &key, &fp).await, Begin::Replay(_)));
    h.advance(Duration::from_secs(61)).await;
    // Forgotten: even other arguments start afresh.
    let (_, other) = call("call_1", OTHER_ARGS);
    let lease = started(begin(&store, &key, &other).await);
    assert_eq!(lease.prior(), Prior::Fresh);
}

async fn an_unknown_effect_goes_downstream_again_with_the_same_key(h: impl Harness) {
    let store = h.store();
    let arguments = r#"{"order_id":"A1","amount":5,"answer":"timeout"}"#;
    let (key, fp) = call("call_1", arguments);
    let first = started(begin(&store, &key, &fp).await);
    let timed_out = outcome(arguments).await;
    assert_eq!(timed_out.error_kind(), Some(ErrorKind::Timeout));
    assert_eq!(
        Disposition::of(&timed_out, false),
        Disposition::UnknownEffect
    );
    assert_eq!(
        store.settle(&first, &timed_out, false).await.unwrap(),
        Settled::Recorded
    );

    // Not replayed as an outcome: the next call starts again, under the same key, knowing why.
    let second = started(begin(&store, &key, &fp).await);
    assert_eq!(second.prior(), Prior::UnknownEffect);
    assert_eq!(second.unknown_effects(), 1);
    assert_eq!(second.key(), first.key());
    // Other arguments under it are still refused: the first action may have happened.
    let (_, other) = call("call_1", OTHER_ARGS);
    assert_eq!(begin(&store, &key, &other).await, Begin::Mismatch);

    // It times out again, then a third call confirms.
    store.record_unknown_effect(&second).await.unwrap();
    let third = started(begin(&store, &key, &fp).await);
    assert_eq!(third.unknown_effects(), 2);
    let confirmed = stored(ARGS).await;
    store.complete(&third, confirmed.clone()).await.unwrap();
    assert_eq!(begin(&store, &key, &fp).await, Begin::Replay(confirmed));
}

async fn release_forgets_a_fresh_key_but_keeps_an_unknown_effect(h: impl Harness) {
    let store = h.store();
    let (key, fp) = call("call_1", ARGS);
    let (_, other) = call("call_1", OTHER_ARGS);
    let lease = started(begin(&store, &key, &fp).await);
    assert_eq!(store.release(&lease).await.unwrap(), Settled::Recorded);
    // Forgotten entirely: nothing began, so other arguments are no mismatch.
    let lease = started(begin(&store, &key, &other).await);
    assert_eq!(lease.prior(), Prior::Fresh);

    // Once an effect is unknown, a released call leaves the key as it found it.
    store.record_unknown_effect(&lease).await.unwrap();
    let lease = started(begin(&store, &key, &other).await);
    store.release(&lease).await.unwrap();
    let lease = started(begin(&store, &key, &other).await);
    assert_eq!(lease.prior(), Prior::UnknownEffect);
    assert_eq!(begin(&store, &key, &fp).await, Begin::Mismatch);
}

async fn validation_failures_and_conflicts_are_not_stored(h: impl Harness) {
    let store = h.store();
    for (arguments, kind) in [
        (
            r#"{"order_id":"A1","amount":900}"#,
            ErrorKind::SchemaMismatch,
        ),
        (r#"{"order_id":"A1"}"#, ErrorKind::SchemaMismatch),
        (
            r#"{"order_id":"A1","amount":5,"answer":"conflict"}"#,
            ErrorKind::Conflict,
        ),
    ] {
        let (key, fp) = call("call_9", arguments);
        let lease = started(begin(&store, &key, &fp).await);
        let rejected = outcome(arguments).await;
        assert_eq!(rejected.error_kind(), Some(kind), "{arguments}");
        assert!(!Disposition::of(&rejected, false).is_stored());
        store.settle(&lease, &rejected, false).await.unwrap();
        let again = started(begin(&store, &key, &fp).await);
        assert_eq!(again.prior(), Prior::Fresh, "{arguments}");
        store.release(&again).await.unwrap();
    }

    // A failure that provably never started is not stored either.
    let arguments = r#"{"order_id":"A1","amount":5,"answer":"refused"}"#;
    let (key, fp) = call("call_10", arguments);
    let lease = started(begin(&store, &key, &fp).await);
    let refused = outcome(arguments).await;
    assert_eq!(refused.error_kind(), Some(ErrorKind::Unavailable));
    store.settle(&lease, &refused, true).await.unwrap();
    assert_eq!(
        started(begin(&store, &key, &fp).await).prior(),
        Prior::Fresh
    );
}

async fn concurrent_begins_admit_exactly_one(h: impl Harness) {
    const CALLERS: usize = 64;
    let store = h.store();
    let barrier = Arc::new(tokio::sync::Barrier::new(CALLERS));
    let mut tasks = Vec::with_capacity(CALLERS);
    for _ in 0..CALLERS {
        let store = store.clone();
        let barrier = Arc::clone(&barrier);
        tasks.push(tokio::spawn(async move {
            let (key, fp) = call("call_1", ARGS);
            barrier.wait().await;
            store.begin(&key, &fp, DEFAULT_LOCK_TTL).await.unwrap()
        }));
    }
    let mut leases = Vec::new();
    let mut in_flight = 0;
    for task in tasks {
        match task.await.unwrap() {
            Begin::Started(lease) => leases.push(lease),
            Begin::InFlight { .. } => in_flight += 1,
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(leases.len(), 1, "exactly one caller may start");
    assert_eq!(in_flight, CALLERS - 1);
}

// ---------------------------------------------------------------------------------------------
// The in-memory store
// ---------------------------------------------------------------------------------------------

struct Memory(MemoryStore);

impl Harness for Memory {
    type Store = MemoryStore;
    fn store(&self) -> MemoryStore {
        self.0.clone()
    }
    async fn advance(&self, by: Duration) {
        tokio::time::advance(by).await;
    }
}

fn memory() -> Memory {
    Memory(MemoryStore::new())
}

macro_rules! memory_suite {
    ($($name:ident),* $(,)?) => {
        mod memory {
            $(
                #[tokio::test(start_paused = true)]
                async fn $name() {
                    super::$name(super::memory()).await;
                }
            )*
        }
    };
}

memory_suite!(
    a_completed_key_replays_its_outcome,
    errors_are_replayed_too,
    other_arguments_under_one_key_are_a_mismatch,
    a_running_key_is_in_flight_until_its_lock_expires,
    keys_expire_after_their_ttl,
    an_unknown_effect_goes_downstream_again_with_the_same_key,
    release_forgets_a_fresh_key_but_keeps_an_unknown_effect,
    validation_failures_and_conflicts_are_not_stored,
);

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn memory_concurrent_begins_admit_exactly_one() {
    for _ in 0..20 {
        concurrent_begins_admit_exactly_one(memory()).await;
    }
}

#[tokio::test(start_paused = true)]
async fn memory_store_stays_within_its_byte_budget() {
    const BUDGET: u64 = 64 * 1024;
    let store = MemoryStore::builder().max_bytes(BUDGET).build();
    let success = stored(ARGS).await;
    let mut first_keys = Vec::new();
    for i in 0..5_000 {
        let (key, fp) = call(&format!("call_{i}"), ARGS);
        let lease = started(begin(&store, &key, &fp).await);
        store.complete(&lease, success.clone()).await.unwrap();
        if i < 10 {
            first_keys.push((key, fp));
        }
    }
    let size = store.weighted_size();
    assert!(size <= BUDGET, "{size} bytes held, budget {BUDGET}");
    let count = store.entry_count();
    assert!(count > 50 && count < 5_000, "{count} entries");
    // The least recently used keys went first; the newest is still replayed.
    for (key, fp) in &first_keys {
        assert!(matches!(begin(&store, key, fp).await, Begin::Started(_)));
    }
    let (key, fp) = call("call_4999", ARGS);
    assert!(matches!(begin(&store, &key, &fp).await, Begin::Replay(_)));
}

#[tokio::test(start_paused = true)]
async fn memory_store_counts_large_outcomes_against_its_budget() {
    const BUDGET: u64 = 64 * 1024;
    let store = MemoryStore::builder().max_bytes(BUDGET).build();
    let big = StoredOutcome::from_json(&format!(
        r#"{{"status":"success","data":"{}","attempts":1}}"#,
        "x".repeat(4096)
    ))
    .unwrap();
    for i in 0..200 {
        let (key, fp) = call(&format!("call_{i}"), ARGS);
        let lease = started(begin(&store, &key, &fp).await);
        store.complete(&lease, big.clone()).await.unwrap();
    }
    let size = store.weighted_size();
    assert!(size <= BUDGET, "{size} bytes held, budget {BUDGET}");
    let count = store.entry_count();
    assert!(
        count <= BUDGET / 4096,
        "{count} outcomes of 4 KiB held in a {BUDGET}-byte budget"
    );
    let (key, fp) = call("call_199", ARGS);
    assert_eq!(begin(&store, &key, &fp).await, Begin::Replay(big));
}

#[tokio::test]
async fn a_store_is_usable_as_a_trait_object() {
    let store: Arc<dyn IdempotencyStore> = Arc::new(MemoryStore::new());
    let (key, fp) = call("call_1", ARGS);
    let lease = started(store.begin(&key, &fp, DEFAULT_LOCK_TTL).await.unwrap());
    let done = outcome(ARGS).await;
    store.settle(&lease, &done, false).await.unwrap();
    let tool: Arc<str> = Arc::from("refund_order");
    let replay = store
        .begin(&key, &fp, DEFAULT_LOCK_TTL)
        .await
        .unwrap()
        .into_lease("call_1", &tool)
        .unwrap_err();
    let mut envelope = done.to_model_json();
    envelope["replayed"] = true.into();
    assert_eq!(replay.to_model_json(), envelope);
}

#[tokio::test]
async fn the_fingerprint_mode_maps_a_re_proposal_to_the_first_key() {
    let store = MemoryStore::new();
    let session = Session::new("conv-7").with_key_mode(KeyMode::Fingerprint);
    let mode = session.key_mode().unwrap_or_default();
    let key_of = |call_id: &str, arguments: &str| {
        let fp = Fingerprint::of("refund_order", arguments);
        (
            mode.key(
                session.idempotency_scope().unwrap_or("conv-7"),
                "refund_order",
                call_id,
                &fp,
            ),
            fp,
        )
    };
    let (key, fp) = key_of("call_1", ARGS);
    let lease = started(begin(&store, &key, &fp).await);
    store
        .settle(&lease, &outcome(ARGS).await, false)
        .await
        .unwrap();
    // After a timeout the model proposes the refund again, new call id, keys reordered.
    // (`Fingerprint::of` has no schema, so a `null` would count: `Fingerprint::for_tool` knows
    // where serde erases one.)
    let (again, fp2) = key_of("call_2", r#"{ "amount":5.0, "order_id":"A1" }"#);
    assert_eq!(again, key);
    assert!(matches!(
        begin(&store, &again, &fp2).await,
        Begin::Replay(_)
    ));
    // A different refund is a different key.
    let (other, _) = key_of("call_3", OTHER_ARGS);
    assert_ne!(other, key);
}

// ---------------------------------------------------------------------------------------------
// The Redis store, against a real redis-server on loopback
// ---------------------------------------------------------------------------------------------

#[cfg(feature = "redis")]
mod redis_harness {
    use std::time::Duration;

    use toolwright::idempotency::RedisStore;
    use toolwright::redis::{self, aio::MultiplexedConnection};

    use super::redis_server::RedisServer;
    use super::Harness;

    pub struct Redis {
        pub store: RedisStore,
        pub raw: MultiplexedConnection,
        pub server: RedisServer,
    }

    impl Redis {
        pub async fn start() -> Option<Redis> {
            let server = RedisServer::start()?;
            let store = RedisStore::builder()
                .prefix("test:idem:")
                .connect(&server.url())
                .await
                .expect("connect the store");
            let raw = redis::Client::open(server.url())
                .unwrap()
                .get_multiplexed_async_connection()
                .await
                .expect("connect");
            Some(Redis { store, raw, server })
        }

        /// Commands this server has run on behalf of clients, by name (`INFO commandstats`).
        pub async fn command_calls(&self, name: &str) -> u64 {
            super::redis_commands::command_calls(&self.raw, name).await
        }
    }

    impl Redis {
        /// Every command a store client can send (`EVALSHA`, `EVAL`, `SCRIPT LOAD`). Commands a
        /// script runs are counted under their own names, not these.
        pub async fn client_round_trips(&self) -> u64 {
            self.command_calls("evalsha").await
                + self.command_calls("eval").await
                + self.command_calls("script|load").await
        }
    }

    impl Harness for Redis {
        type Store = RedisStore;
        fn store(&self) -> RedisStore {
            self.store.clone()
        }
        async fn advance(&self, by: Duration) {
            super::redis_commands::advance(&self.raw, self.store.prefix(), by).await;
        }
    }
}

#[cfg(feature = "redis")]
macro_rules! redis_suite {
    ($($name:ident),* $(,)?) => {
        mod redis {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    let Some(harness) = super::redis_harness::Redis::start().await else { return };
                    super::$name(harness).await;
                }
            )*
        }
    };
}

#[cfg(feature = "redis")]
redis_suite!(
    a_completed_key_replays_its_outcome,
    errors_are_replayed_too,
    other_arguments_under_one_key_are_a_mismatch,
    a_running_key_is_in_flight_until_its_lock_expires,
    keys_expire_after_their_ttl,
    an_unknown_effect_goes_downstream_again_with_the_same_key,
    release_forgets_a_fresh_key_but_keeps_an_unknown_effect,
    validation_failures_and_conflicts_are_not_stored,
    concurrent_begins_admit_exactly_one,
);

#[cfg(feature = "redis")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_a_successful_call_costs_two_round_trips() {
    let Some(h) = redis_harness::Redis::start().await else {
        return;
    };
    let store = h.store();
    let success = stored(ARGS).await;
    let before = h.client_round_trips().await;
    const CALLS: u64 = 100;
    for i in 0..CALLS {
        let (key, fp) = call(&format!("call_{i}"), ARGS);
        let lease = started(begin(&store, &key, &fp).await);
        store.complete(&lease, success.clone()).await.unwrap();
    }
    let after = h.client_round_trips().await;
    assert_eq!(
        after - before,
        2 * CALLS,
        "two round trips per successful call"
    );
}

#[cfg(feature = "redis")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_a_record_lives_its_key_ttl_on_the_server_and_its_lock_goes_when_settled() {
    use toolwright::redis::AsyncCommands;

    let Some(h) = redis_harness::Redis::start().await else {
        return;
    };
    let ttl = Duration::from_secs(600);
    let store = toolwright::idempotency::RedisStore::builder()
        .prefix("ttl:")
        .key_ttl(ttl)
        .connect(&h.server.url())
        .await
        .unwrap();
    assert_eq!(store.key_ttl(), ttl);
    assert_eq!(store.prefix(), "ttl:");
    let (key, fp) = call("call_1", ARGS);
    let record = format!("ttl:{{{}}}", key.as_str());
    let lock = format!("{record}:lock");
    let mut raw = h.raw.clone();
    let lease = started(begin(&store, &key, &fp).await);
    // While the call runs: the lock for the lock TTL, the record for the longer of the two.
    let lock_ms: i64 = raw.pttl(&lock).await.unwrap();
    assert!(lock_ms > 0 && lock_ms <= 90_000, "{lock_ms}");
    store.complete(&lease, stored(ARGS).await).await.unwrap();
    let exists: bool = raw.exists(&lock).await.unwrap();
    assert!(!exists, "the lock is deleted when the call settles");
    // A minute of margin: the server's clock runs on a loaded machine.
    let record_ms: i64 = raw.pttl(&record).await.unwrap();
    assert!(
        (540_000..=600_000).contains(&record_ms),
        "{record_ms} ms left of a 600 s key TTL"
    );
}

#[cfg(feature = "redis")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_two_replicas_share_one_key() {
    let Some(h) = redis_harness::Redis::start().await else {
        return;
    };
    let replica_a = h.store();
    let replica_b = toolwright::idempotency::RedisStore::builder()
        .prefix(replica_a.prefix())
        .connect(&h.server.url())
        .await
        .unwrap();
    let (key, fp) = call("call_1", ARGS);
    let lease = started(begin(&replica_a, &key, &fp).await);
    assert!(matches!(
        begin(&replica_b, &key, &fp).await,
        Begin::InFlight { .. }
    ));
    let success = stored(ARGS).await;
    replica_a.complete(&lease, success.clone()).await.unwrap();
    assert_eq!(begin(&replica_b, &key, &fp).await, Begin::Replay(success));
}

#[cfg(feature = "redis")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_an_unreachable_store_fails_closed() {
    use toolwright::idempotency::{RedisStore, StoreError};
    use toolwright::redis::aio::ConnectionManagerConfig;

    let Some(server) = redis_server::RedisServer::start() else {
        return;
    };
    let store = RedisStore::builder()
        .connection_config(
            ConnectionManagerConfig::new()
                .set_number_of_retries(1)
                .set_connection_timeout(Some(Duration::from_millis(300)))
                .set_response_timeout(Some(Duration::from_millis(300))),
        )
        .connect(&server.url())
        .await
        .unwrap();
    drop(server); // the Redis host goes away

    let (key, fp) = call("call_1", ARGS);
    let error = store
        .begin(&key, &fp, DEFAULT_LOCK_TTL)
        .await
        .expect_err("no Redis, no begin");
    assert!(matches!(error, StoreError::Backend(_)), "{error}");
    // The pipeline must not run the tool: the error says the action never started.
    let error = ToolError::from(error);
    assert_eq!(error.kind(), ErrorKind::Unavailable);
    assert!(error.is_never_started());
}

#[cfg(not(feature = "redis"))]
#[test]
fn redis_tests_need_the_redis_feature() {
    if redis_server::required() {
        panic!(
            "{}=1 but the `redis` feature is off: run `cargo test --workspace --all-features`",
            redis_server::REQUIRE
        );
    }
    eprintln!("the `redis` feature is off: the Redis idempotency tests are not built");
}
