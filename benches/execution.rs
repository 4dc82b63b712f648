//! What the execution seam costs, and whether it scales.
//!
//! - `success_path/guarded` vs `success_path/unguarded`: one call of a trivial tool through the
//!   whole pipeline with the timeout, the breaker, the retry loop, the budget and the attempt
//!   history active (the defaults), and with all of them off. Target: at most 100 ns apart.
//! - `throughput/workers/1` vs `throughput/workers/2`: 1,000 tasks each making 40 calls of one
//!   tool on a multi-thread runtime. Target: 2 workers reach at least 1.6x the throughput of 1
//!   (nothing on the hot path is a global lock).
//!
//! After criterion's groups, the same comparisons run interleaved in one process (A, B, A, B,
//! over hundreds of rounds) and the medians are printed, which is steadier than two separate
//! criterion runs on a shared machine:
//!
//! ```text
//! cargo bench --bench execution
//! cargo bench --bench execution -- --interleaved-only   # just the interleaved medians
//! ```

#[path = "common/median.rs"]
mod median;
use median::median;
use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{criterion_group, BenchmarkId, Criterion, Throughput};
use tokio::sync::Semaphore;
use toolwright::prelude::*;

/// Echo a number back.
#[tool(read_only, timeout_ms = 2000)]
async fn echo(n: u32) -> Result<u32, ToolError> {
    Ok(n)
}

fn guarded() -> Registry {
    Registry::builder().tool(Echo).build().unwrap()
}

fn unguarded() -> Registry {
    Registry::builder()
        .tool(Echo)
        .unguarded_for_benchmarks()
        .build()
        .unwrap()
}

fn current_thread() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap()
}

fn multi_thread(workers: usize) -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_time()
        .build()
        .unwrap()
}

async fn one_call(registry: &Registry) -> Outcome {
    registry
        .call(ToolCall::new("call_1", "echo", r#"{"n":7}"#))
        .await
}

fn success_path(c: &mut Criterion) {
    let rt = current_thread();
    let mut group = c.benchmark_group("success_path");
    for (name, registry) in [("guarded", guarded()), ("unguarded", unguarded())] {
        let outcome = rt.block_on(one_call(&registry));
        assert_eq!(outcome.status(), Status::Success);
        group.bench_function(name, |b| {
            b.to_async(&rt)
                .iter(|| async { black_box(one_call(&registry).await) })
        });
    }
    group.finish();
}

const TASKS: usize = 1000;
const CALLS_PER_TASK: usize = 40;

/// 1,000 tasks, 40 calls each, all to one tool; returns the wall time from the moment they are
/// released. The tasks are spawned (and parked on a gate) before the clock starts, so the
/// figure is calls, not spawns.
fn storm(rt: &tokio::runtime::Runtime, registry: &Registry) -> Duration {
    let registry = registry.clone();
    rt.block_on(async move {
        let gate = Arc::new(Semaphore::new(0));
        let tasks: Vec<_> = (0..TASKS)
            .map(|t| {
                let (registry, gate) = (registry.clone(), Arc::clone(&gate));
                tokio::spawn(async move {
                    drop(gate.acquire().await);
                    let mut ok = 0;
                    for n in 0..CALLS_PER_TASK {
                        let args = format!(r#"{{"n":{}}}"#, t * CALLS_PER_TASK + n);
                        let outcome = registry.call(ToolCall::new("c", "echo", args)).await;
                        ok += usize::from(outcome.is_ok());
                    }
                    ok
                })
            })
            .collect();
        tokio::task::yield_now().await;
        let start = Instant::now();
        gate.add_permits(TASKS);
        let mut ok = 0;
        for task in tasks {
            ok += task.await.unwrap();
        }
        let elapsed = start.elapsed();
        assert_eq!(ok, TASKS * CALLS_PER_TASK);
        elapsed
    })
}

fn throughput(c: &mut Criterion) {
    let registry = guarded();
    let mut group = c.benchmark_group("throughput");
    group.throughput(Throughput::Elements((TASKS * CALLS_PER_TASK) as u64));
    group.sample_size(20);
    group.measurement_time(Duration::from_secs(5));
    for workers in [1, 2] {
        let rt = multi_thread(workers);
        group.bench_with_input(BenchmarkId::new("workers", workers), &workers, |b, _| {
            b.iter_custom(|iters| (0..iters).map(|_| storm(&rt, &registry)).sum())
        });
    }
    group.finish();
}

/// A, B, A, B ...: the success path's overhead and the scaling ratio as medians over rounds.
fn interleaved() {
    const ROUNDS: usize = 400;
    const CALLS: usize = 2000;
    let rt = current_thread();
    let (a, b) = (guarded(), unguarded());
    let per_call = |registry: &Registry| {
        rt.block_on(async {
            let start = Instant::now();
            for _ in 0..CALLS {
                black_box(one_call(registry).await);
            }
            start.elapsed().as_nanos() as f64 / CALLS as f64
        })
    };
    for _ in 0..50 {
        per_call(&a);
        per_call(&b);
    }
    let (mut diffs, mut ratios, mut guarded_ns, mut bare_ns) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for round in 0..ROUNDS {
        let (ta, tb) = if round % 2 == 0 {
            let ta = per_call(&a);
            (ta, per_call(&b))
        } else {
            let tb = per_call(&b);
            (per_call(&a), tb)
        };
        diffs.push(ta - tb);
        ratios.push(ta / tb);
        guarded_ns.push(ta);
        bare_ns.push(tb);
    }
    println!(
        "interleaved success path over {ROUNDS} rounds of {CALLS} calls: guarded {:.0} ns, unguarded {:.0} ns, \
         overhead median {:.1} ns (ratio {:.3})",
        median(&mut guarded_ns),
        median(&mut bare_ns),
        median(&mut diffs),
        median(&mut ratios)
    );

    const STORMS: usize = 30;
    let (one, two) = (multi_thread(1), multi_thread(2));
    let calls = (TASKS * CALLS_PER_TASK) as f64;
    let windowless = Registry::builder()
        .tool(Echo)
        .breaker(toolwright::execute::BreakerPolicy::disabled())
        .retry_budget(toolwright::execute::RetryBudget::unlimited())
        .build()
        .unwrap();
    for (name, registry) in [
        ("guarded", guarded()),
        ("guarded, no breaker or budget", windowless),
        ("unguarded", unguarded()),
    ] {
        storm(&one, &registry);
        storm(&two, &registry);
        let mut speedups = Vec::new();
        let (mut one_rate, mut two_rate) = (Vec::new(), Vec::new());
        for round in 0..STORMS {
            let (t1, t2) = if round % 2 == 0 {
                let t1 = storm(&one, &registry);
                (t1, storm(&two, &registry))
            } else {
                let t2 = storm(&two, &registry);
                (storm(&one, &registry), t2)
            };
            speedups.push(t1.as_secs_f64() / t2.as_secs_f64());
            one_rate.push(calls / t1.as_secs_f64());
            two_rate.push(calls / t2.as_secs_f64());
        }
        println!(
            "interleaved throughput ({name}) over {STORMS} rounds of {TASKS} tasks x {CALLS_PER_TASK} calls: \
             1 worker {:.0} calls/s, 2 workers {:.0} calls/s, speedup median {:.2}x",
            median(&mut one_rate),
            median(&mut two_rate),
            median(&mut speedups)
        );
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    targets = success_path, throughput
}

fn main() {
    let interleaved_only = std::env::args().any(|a| a == "--interleaved-only");
    if !interleaved_only {
        benches();
        Criterion::default().configure_from_args().final_summary();
    }
    // `cargo test --benches` runs this binary in test mode: skip the long measurement there.
    if !std::env::args().any(|a| a == "--test" || a == "--list") {
        interleaved();
    }
}
