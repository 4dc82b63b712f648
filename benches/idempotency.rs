//! What the idempotency store adds to a non-idempotent call.
//!
//! `cargo bench --bench idempotency --all-features`
//!
//! - `memory/*`: the in-memory store on the hot path: the fingerprint of typical arguments, the
//!   begin + settle pair a call pays, the whole per-call cost (fingerprint, key, begin, settle),
//!   a replay, and one full `registry.call` of a non-idempotent tool answered from the store (a
//!   re-delivered call id: the replay path through the pipeline). The added cost of the store on
//!   a first call through `registry.call` is `benches/idempotency_interleaved.rs`.
//! - `redis/*`: begin + complete against a local `redis-server` (started on loopback, as the
//!   tests do), and the round trips per call counted by the server (`INFO commandstats`).

#[path = "../tests/it/support/redis_server.rs"]
mod redis_server;

use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use criterion::Criterion;
use serde::Serialize;
use toolwright::idempotency::{
    Begin, Fingerprint, IdempotencyStore, KeyMode, MemoryStore, StoredOutcome, DEFAULT_LOCK_TTL,
};
use toolwright::prelude::*;

#[derive(Serialize, schemars::JsonSchema)]
struct Refund {
    refund_id: String,
    amount: f64,
}

/// Refund part of an order.
#[tool(timeout_ms = 8000, idempotent = false)]
async fn refund_order(
    key: IdempotencyKey,
    /// The order to refund.
    order_id: String,
    /// Amount in dollars.
    #[arg(range(min = 0.01, max = 500.0))]
    amount: f64,
    /// Why the customer wants a refund.
    reason: Option<String>,
) -> Result<Refund, ToolError> {
    let _ = (key, reason);
    Ok(Refund {
        refund_id: format!("R-{order_id}"),
        amount,
    })
}

const ARGS: &str = r#"{"order_id":"A-10442","amount":25.5,"reason":"The parcel arrived damaged and the customer sent photos."}"#;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

fn main() {
    let mut c = Criterion::default()
        .measurement_time(Duration::from_secs(3))
        .configure_from_args();
    memory(&mut c);
    redis(&mut c);
    c.final_summary();
}

fn memory(c: &mut Criterion) {
    let rt = runtime();
    let registry = Registry::builder().tool(RefundOrder).build().unwrap();
    let outcome = rt.block_on(registry.call(ToolCall::new("c0", "refund_order", ARGS)));
    assert_eq!(outcome.status(), Status::Success);
    let store = MemoryStore::new();
    let next = AtomicU64::new(0);
    // Measure the steady state of a long-running service: the store full to its byte budget,
    // every new key evicting the least recently used one (not the growth phase, where the map
    // is still resizing).
    let fp = Fingerprint::of("refund_order", ARGS);
    rt.block_on(async {
        for _ in 0..200_000 {
            let key = IdempotencyKey::new(format!(
                "conv-7:refund_order:c{}",
                next.fetch_add(1, Ordering::Relaxed)
            ));
            let Ok(Begin::Started(lease)) = store.begin(&key, &fp, DEFAULT_LOCK_TTL).await else {
                unreachable!("fresh keys start")
            };
            store.settle(&lease, &outcome, false).await.unwrap();
        }
    });
    eprintln!(
        "memory store prefilled: {} keys, {} bytes",
        store.entry_count(),
        store.weighted_size()
    );
    let mut group = c.benchmark_group("memory");

    group.bench_function("fingerprint", |b| {
        b.iter(|| Fingerprint::of(black_box("refund_order"), black_box(ARGS)))
    });

    group.bench_function("begin_settle", |b| {
        b.to_async(&rt).iter(|| {
            let key = IdempotencyKey::new(format!(
                "conv-7:refund_order:c{}",
                next.fetch_add(1, Ordering::Relaxed)
            ));
            let (store, fp, outcome) = (&store, &fp, &outcome);
            async move {
                let Ok(Begin::Started(lease)) = store.begin(&key, fp, DEFAULT_LOCK_TTL).await
                else {
                    unreachable!("fresh keys start")
                };
                store.settle(&lease, outcome, false).await.unwrap()
            }
        })
    });

    group.bench_function("per_call", |b| {
        b.to_async(&rt).iter(|| {
            let call_id = format!("c{}", next.fetch_add(1, Ordering::Relaxed));
            let (store, outcome) = (&store, &outcome);
            async move {
                let fp = Fingerprint::of("refund_order", black_box(ARGS));
                let key = KeyMode::CallId.key("conv-7", "refund_order", &call_id, &fp);
                let Ok(Begin::Started(lease)) = store.begin(&key, &fp, DEFAULT_LOCK_TTL).await
                else {
                    unreachable!("fresh keys start")
                };
                store.settle(&lease, outcome, false).await.unwrap()
            }
        })
    });

    let replayed = IdempotencyKey::new("conv-7:refund_order:replayed");
    rt.block_on(async {
        let Ok(Begin::Started(lease)) = store.begin(&replayed, &fp, DEFAULT_LOCK_TTL).await else {
            unreachable!()
        };
        store
            .complete(&lease, StoredOutcome::from_outcome(&outcome))
            .await
            .unwrap();
    });
    group.bench_function("replay", |b| {
        b.to_async(&rt).iter(|| async {
            match store.begin(&replayed, &fp, DEFAULT_LOCK_TTL).await {
                Ok(Begin::Replay(stored)) => stored,
                other => unreachable!("{other:?}"),
            }
        })
    });

    // The same call id every time: after the first, each call is a replay from the registry's
    // own memory store.
    group.bench_function("registry_call_replay", |b| {
        b.to_async(&rt)
            .iter(|| registry.call(ToolCall::new("c1", "refund_order", black_box(ARGS))))
    });
    group.finish();
}

#[cfg(not(feature = "redis"))]
fn redis(_: &mut Criterion) {
    eprintln!("redis benches skipped: run with --features redis (or --all-features)");
}

#[cfg(feature = "redis")]
fn redis(c: &mut Criterion) {
    use toolwright::idempotency::RedisStore;
    use toolwright::redis;

    let Some(server) = redis_server::RedisServer::start() else {
        return;
    };
    let rt = runtime();
    let registry = Registry::builder().tool(RefundOrder).build().unwrap();
    let outcome = rt.block_on(registry.call(ToolCall::new("c0", "refund_order", ARGS)));
    let store = rt
        .block_on(RedisStore::connect(&server.url()))
        .expect("connect");
    let mut raw = rt
        .block_on(
            redis::Client::open(server.url())
                .unwrap()
                .get_multiplexed_async_connection(),
        )
        .expect("connect");
    let client_round_trips = |raw: &mut redis::aio::MultiplexedConnection| -> u64 {
        let info: String = rt
            .block_on(redis::cmd("INFO").arg("commandstats").query_async(raw))
            .unwrap();
        ["evalsha", "eval", "script|load"]
            .iter()
            .map(|name| {
                let prefix = format!("cmdstat_{name}:calls=");
                info.lines()
                    .find_map(|l| l.strip_prefix(&prefix))
                    .and_then(|rest| rest.split(',').next())
                    .and_then(|n| n.parse::<u64>().ok())
                    .unwrap_or(0)
            })
            .sum()
    };
    let fp = Fingerprint::of("refund_order", ARGS);
    let next = AtomicU64::new(0);
    let one_call = || {
        let key = IdempotencyKey::new(format!(
            "conv-7:refund_order:c{}",
            next.fetch_add(1, Ordering::Relaxed)
        ));
        let (store, fp, outcome) = (&store, &fp, &outcome);
        async move {
            let Ok(Begin::Started(lease)) = store.begin(&key, fp, DEFAULT_LOCK_TTL).await else {
                unreachable!("fresh keys start")
            };
            store.settle(&lease, outcome, false).await.unwrap()
        }
    };

    // Round trips, counted by the server.
    const CALLS: u64 = 1_000;
    let before = client_round_trips(&mut raw);
    rt.block_on(async {
        for _ in 0..CALLS {
            one_call().await;
        }
    });
    let after = client_round_trips(&mut raw);
    eprintln!(
        "redis: {} round trips for {CALLS} successful calls = {:.2} per call (begin + complete)",
        after - before,
        (after - before) as f64 / CALLS as f64
    );

    let mut group = c.benchmark_group("redis");
    group.bench_function("begin_settle", |b| b.to_async(&rt).iter(one_call));
    group.finish();
    drop(server);
}
