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

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    if values.len().is_multiple_of(2) {
        (values[mid - 1] + values[mid]) / 2.0
    } else {
        values[mid]
    }
}

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
