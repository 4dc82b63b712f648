//! What the in-memory idempotency store adds to a non-idempotent call through `registry.call`,
//! measured with the two sides interleaved: A (an idempotent twin, which never touches the
//! store), B (the same tool declared non-idempotent: fingerprint, key, begin, settle), A, B, ...
//! over many short rounds of N calls, so drift on a shared machine hits both sides alike. Every
//! call has its own call id, so B begins a fresh key each time (the cost of a first call, not of
//! a replay). Prints the median per-round ratio B/A and the median difference per call.
//!
//! `cargo bench --bench idempotency_interleaved` (optionally `-- ROUNDS N`; `-- profile N` runs
//! only N calls of B, `-- profile N twin` only N calls of A, each with a fresh call id, for a
//! profiler such as callgrind: one side per process, so the program's total at two values of N,
//! the difference, is that side's cost per call).

#[path = "common/median.rs"]
mod median;
use median::median;
use std::hint::black_box;
use std::time::Instant;

use serde::Serialize;
use toolwright::prelude::*;

#[derive(Serialize, schemars::JsonSchema)]
struct Refund {
    refund_id: String,
    amount_cents: u32,
}

/// Refund part of an order (not idempotent: every call goes through the store).
#[tool(idempotent = false, timeout_ms = 8000)]
async fn refund_order(
    key: IdempotencyKey,
    /// The order to refund.
    order_id: String,
    /// The amount, in cents.
    #[arg(range(min = 1, max = 50000))]
    amount_cents: u32,
) -> Result<Refund, ToolError> {
    Ok(Refund {
        refund_id: format!("re_{}_{}", order_id, key.as_str().len()),
        amount_cents,
    })
}

/// The same body, declared idempotent: the store is skipped.
#[tool(idempotent = true, timeout_ms = 8000)]
async fn refund_order_twin(
    key: IdempotencyKey,
    /// The order to refund.
    order_id: String,
    /// The amount, in cents.
    #[arg(range(min = 1, max = 50000))]
    amount_cents: u32,
) -> Result<Refund, ToolError> {
    Ok(Refund {
        refund_id: format!("re_{}_{}", order_id, key.as_str().len()),
        amount_cents,
    })
}

const ARGS: &str = r#"{"order_id":"A1","amount_cents":2500}"#;

/// Nanoseconds per call over `n` prebuilt calls, each with a fresh call id.
async fn side(registry: &Registry, tool: &str, n: usize, next: &mut u64) -> f64 {
    let calls: Vec<_> = (0..n)
        .map(|_| {
            *next += 1;
            ToolCall::new(format!("c{next}"), tool, ARGS)
        })
        .collect();
    let mut out = Vec::with_capacity(n);
    let start = Instant::now();
    for call in calls {
        out.push(registry.call(black_box(call)).await);
    }
    let ns = start.elapsed().as_nanos() as f64 / n as f64;
    assert!(out.iter().all(Outcome::is_ok));
    ns
}

/// Nanoseconds per run of `f` over `n` runs.
fn per_run(n: usize, mut f: impl FnMut(usize)) -> f64 {
    let start = Instant::now();
    for i in 0..n {
        f(i);
    }
    start.elapsed().as_nanos() as f64 / n as f64
}

/// The store's work for one call, piece by piece, in interleaved rounds: the fingerprint, the
/// key, and `begin` + `complete` of a fresh key on a `MemoryStore` (one that stays small, and
/// the store as the call path sees it, holding every key so far).
fn parts(registry: &Registry, rounds: usize) {
    use toolwright::idempotency::{
        Begin, Fingerprint, IdempotencyStore, KeyMode, MemoryStore, StoredOutcome, DEFAULT_LOCK_TTL,
    };
    let n = 200;
    let spec = registry.spec("refund_order").unwrap();
    let fingerprint = Fingerprint::for_tool(spec, ARGS);
    let outcome = StoredOutcome::from_json(
        r#"{"status":"success","data":{"refund_id":"re_A1_20","amount_cents":2500},"attempts":1}"#,
    )
    .unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let growing = MemoryStore::new();
    let mut next = 0u64;
    let settle = |store: &MemoryStore, next: &mut u64| {
        *next += 1;
        let key = KeyMode::CallId.key("", "refund_order", &format!("c{next}"), &fingerprint);
        rt.block_on(async {
            let Ok(Begin::Started(lease)) = store.begin(&key, &fingerprint, DEFAULT_LOCK_TTL).await
            else {
                panic!("a fresh key starts");
            };
            store.complete(&lease, outcome.clone()).await.unwrap();
        });
    };
    let mut columns: [Vec<f64>; 4] = Default::default();
    for round in 0..rounds {
        let small = MemoryStore::new();
        let ids: Vec<String> = (0..n).map(|i| format!("c{round}_{i}")).collect();
        columns[0].push(per_run(n, |_| {
            black_box(Fingerprint::for_tool(spec, black_box(ARGS)));
        }));
        columns[1].push(per_run(n, |i| {
            black_box(KeyMode::CallId.key("", "refund_order", &ids[i], &fingerprint));
        }));
        columns[2].push(per_run(n, |_| settle(&small, &mut next)));
        columns[3].push(per_run(n, |_| settle(&growing, &mut next)));
    }
    let m = |c: &mut Vec<f64>| median(c);
    println!(
        "idempotency parts: {rounds} rounds x {n}; fingerprint {:.0} ns, key {:.0} ns, \
         begin+complete on a small store {:.0} ns, on the growing store {:.0} ns \
         ({} keys at the end; key text included in both)",
        m(&mut columns[0]),
        m(&mut columns[1]),
        m(&mut columns[2]),
        m(&mut columns[3]),
        growing.entry_count(),
    );
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let rounds = args
        .iter()
        .position(|a| a == "ROUNDS")
        .and_then(|i| args.get(i + 1))
        .and_then(|n| n.parse().ok())
        .unwrap_or(1_000);
    let n = 200;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let registry = Registry::builder()
        .tool(RefundOrder)
        .tool(RefundOrderTwin)
        .build()
        .unwrap();

    // `-- parts`: each piece of the store's work on its own, interleaved.
    if args.iter().any(|a| a == "parts") {
        parts(&registry, rounds);
        return;
    }

    // `-- profile N [twin]`: N calls of one side and nothing else.
    if let Some(i) = args.iter().position(|a| a == "profile") {
        let n: u64 = args
            .get(i + 1)
            .and_then(|n| n.parse().ok())
            .unwrap_or(10_000);
        let tool = if args.iter().any(|a| a == "twin") {
            "refund_order_twin"
        } else {
            "refund_order"
        };
        rt.block_on(async {
            for id in 0..n {
                let call = ToolCall::new(format!("c{id}"), tool, ARGS);
                let outcome = registry.call(black_box(call)).await;
                assert!(outcome.is_ok());
                black_box(outcome);
            }
        });
        return;
    }

    rt.block_on(async {
        let mut next = 0;
        // Warm up both sides (and the store's cache).
        for _ in 0..20 {
            side(&registry, "refund_order_twin", n, &mut next).await;
            side(&registry, "refund_order", n, &mut next).await;
        }
        let (mut a, mut b, mut ratios, mut diffs) = (vec![], vec![], vec![], vec![]);
        for _ in 0..rounds {
            let twin = side(&registry, "refund_order_twin", n, &mut next).await;
            let stored = side(&registry, "refund_order", n, &mut next).await;
            a.push(twin);
            b.push(stored);
            ratios.push(stored / twin);
            diffs.push(stored - twin);
        }
        println!(
            "idempotency_interleaved: {rounds} rounds x {n} calls; idempotent twin {:.0} ns/call, \
             non-idempotent with MemoryStore {:.0} ns/call; median ratio {:.2}, median added \
             cost {:.0} ns/call ({} keys in the store at the end)",
            median(&mut a),
            median(&mut b),
            median(&mut ratios),
            median(&mut diffs),
            next,
        );
    });
}
