//! The dispatch ratio measured with the two sides interleaved: A (floor), B (`Registry::call`),
//! A, B, ... over several hundred rounds of N calls each, so drift on a shared machine (other
//! processes, frequency changes) hits both sides alike. Prints the median of the per-round
//! ratios B/A, and the median time of failing calls that report every violation.
//!
//! As in `benches/dispatch.rs`, the owned `ToolCall`s are built before a round's timer starts
//! (the floor's `&str` input exists before its timer too) and every output is dropped after it
//! stops; a third side also times `ToolCall::new` from borrowed text.
//!
//! A fourth side, the *structural floor*, is the floor plus what any type-erased dispatcher with
//! this pipeline's contract pays before doing anything of its own: the call's future boxed
//! behind `dyn Future` (tools of different types share one map), the owned call's name and
//! argument strings freed, and two clock reads (arrival, for the deadline; end, for `elapsed`).
//! `registry.call / structural` is what the pipeline itself costs beyond that.
//!
//! `cargo bench --bench dispatch_interleaved` (optionally `-- ROUNDS N`; `-- profile N` runs
//! only N successful registry calls and N floor calls, for a profiler such as callgrind;
//! `-- profile N rules` or `-- profile N shape` profiles the failing calls instead).

mod common;

#[path = "common/median.rs"]
mod median;
use median::median;
use std::future::Future;
use std::hint::black_box;
use std::pin::Pin;
use std::time::{Duration, Instant};

use toolwright::{Outcome, Registry};

/// A value of an already sorted slice.
fn percentile(sorted: &[f64], p: f64) -> f64 {
    let i = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[i]
}

/// Nanoseconds per call of the floor over `n` calls.
async fn floor(n: usize, out: &mut Vec<String>) -> f64 {
    out.clear();
    let start = Instant::now();
    for _ in 0..n {
        out.push(common::floor(black_box(common::VALID)).await);
    }
    let ns = start.elapsed().as_nanos() as f64 / n as f64;
    out.clear();
    ns
}

/// Nanoseconds per call of the structural floor over `n` owned calls: the floor run inside a
/// boxed `dyn Future` that reads the clock when it starts and when it ends, freeing the call's
/// name and argument text.
async fn structural(n: usize, out: &mut Vec<String>) -> f64 {
    out.clear();
    let calls: Vec<(String, String)> = (0..n)
        .map(|_| ("quote_shipping".to_owned(), common::VALID.to_owned()))
        .collect();
    let start = Instant::now();
    for (name, arguments) in calls {
        let call: Pin<Box<dyn Future<Output = String> + Send>> = Box::pin(async move {
            let started = tokio::time::Instant::now();
            let data = common::floor(black_box(&arguments)).await;
            drop(name);
            drop(arguments);
            black_box(started.elapsed());
            data
        });
        out.push(call.await);
    }
    let ns = start.elapsed().as_nanos() as f64 / n as f64;
    out.clear();
    ns
}

/// Nanoseconds per call of `registry.call` over `n` prebuilt calls of `text`.
async fn call(registry: &Registry, text: &str, n: usize, out: &mut Vec<Outcome>) -> f64 {
    out.clear();
    let calls: Vec<_> = (0..n).map(|_| common::tool_call(text)).collect();
    let start = Instant::now();
    for call in calls {
        out.push(registry.call(black_box(call)).await);
    }
    let ns = start.elapsed().as_nanos() as f64 / n as f64;
    out.clear();
    ns
}

/// Nanoseconds per call of `ToolCall::new` + `registry.call` over `n` calls.
async fn call_with_new(registry: &Registry, n: usize, out: &mut Vec<Outcome>) -> f64 {
    out.clear();
    let start = Instant::now();
    for _ in 0..n {
        out.push(common::through_registry(registry, black_box(common::VALID)).await);
    }
    let ns = start.elapsed().as_nanos() as f64 / n as f64;
    out.clear();
    ns
}

fn main() {
    // `cargo bench` passes `--bench`; positional numbers override the defaults.
    let numbers: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();

    let rt = common::runtime();
    let registry = common::registry();

    // `-- profile N`: N successful registry calls and N floor calls, for a profiler such as
    // callgrind (compare the inclusive cost of `through_registry` and `floor`).
    if std::env::args().any(|a| a == "profile") {
        let n = numbers.first().copied().unwrap_or(100_000);
        // `-- profile N rules` / `-- profile N shape`: the failing calls instead.
        let text = if std::env::args().any(|a| a == "rules") {
            common::TWO_RULE_VIOLATIONS
        } else if std::env::args().any(|a| a == "shape") {
            common::SHAPE_FAILURE
        } else {
            common::VALID
        };
        rt.block_on(async {
            for _ in 0..n {
                black_box(common::through_registry(&registry, black_box(text)).await);
                black_box(common::floor(black_box(common::VALID)).await);
            }
        });
        return;
    }

    // Many short rounds: at ~200 calls a side a round takes well under a scheduler slice, so on
    // a shared machine most rounds run unpreempted and the median ignores the rest.
    let rounds = numbers.first().copied().unwrap_or(2_000);
    let n = numbers.get(1).copied().unwrap_or(200);

    rt.block_on(async {
        let mut strings = Vec::with_capacity(n);
        let mut outcomes = Vec::with_capacity(n);

        // Warm up: caches, the lazily compiled shape validator, the allocator.
        let warm = Instant::now();
        while warm.elapsed() < Duration::from_millis(500) {
            floor(n, &mut strings).await;
            call(&registry, common::VALID, n, &mut outcomes).await;
            call(
                &registry,
                common::TWO_RULE_VIOLATIONS,
                n / 10,
                &mut outcomes,
            )
            .await;
            call(&registry, common::SHAPE_FAILURE, n / 10, &mut outcomes).await;
        }

        let mut floors = Vec::with_capacity(rounds);
        let mut calls = Vec::with_capacity(rounds);
        let mut ratios = Vec::with_capacity(rounds);
        let mut ratios_with_new = Vec::with_capacity(rounds);
        let mut structurals = Vec::with_capacity(rounds);
        let mut ratios_structural = Vec::with_capacity(rounds);
        let mut rules = Vec::with_capacity(rounds);
        let mut shapes = Vec::with_capacity(rounds);
        for round in 0..rounds {
            // Alternate which side goes first, so neither always runs on a warmer cache.
            let (a, b) = if round % 2 == 0 {
                let a = floor(n, &mut strings).await;
                let b = call(&registry, common::VALID, n, &mut outcomes).await;
                (a, b)
            } else {
                let b = call(&registry, common::VALID, n, &mut outcomes).await;
                let a = floor(n, &mut strings).await;
                (a, b)
            };
            let c = call_with_new(&registry, n, &mut outcomes).await;
            let d = structural(n, &mut strings).await;
            structurals.push(d);
            ratios_structural.push(b / d);
            floors.push(a);
            calls.push(b);
            ratios.push(b / a);
            ratios_with_new.push(c / a);
            let m = (n / 10).max(1);
            rules.push(call(&registry, common::TWO_RULE_VIOLATIONS, m, &mut outcomes).await);
            shapes.push(call(&registry, common::SHAPE_FAILURE, m, &mut outcomes).await);
        }

        let ratio = median(&mut ratios);
        let ratio_with_new = median(&mut ratios_with_new);
        let ratio_structural = median(&mut ratios_structural);
        let rule_median = median(&mut rules);
        let shape_median = median(&mut shapes);
        println!("interleaved dispatch: {rounds} rounds x {n} calls per side");
        println!(
            "  floor                         median {:>8.1} ns/call",
            median(&mut floors)
        );
        println!(
            "  registry.call                 median {:>8.1} ns/call",
            median(&mut calls)
        );
        println!(
            "  ratio registry.call / floor   median {ratio:.3}  (p10 {:.3}, p90 {:.3})",
            percentile(&ratios, 0.10),
            percentile(&ratios, 0.90)
        );
        println!(
            "  ratio incl. ToolCall::new     median {ratio_with_new:.3}  (p10 {:.3}, p90 {:.3})",
            percentile(&ratios_with_new, 0.10),
            percentile(&ratios_with_new, 0.90)
        );
        println!(
            "  structural floor              median {:>8.1} ns/call",
            median(&mut structurals)
        );
        println!(
            "  ratio registry.call / struct. median {ratio_structural:.3}  (p10 {:.3}, p90 {:.3})",
            percentile(&ratios_structural, 0.10),
            percentile(&ratios_structural, 0.90)
        );
        println!(
            "  failing, 2 rule violations    median {rule_median:>8.1} ns/call (p90 {:.1})",
            percentile(&rules, 0.90)
        );
        println!(
            "  failing, shape (slow path)    median {shape_median:>8.1} ns/call (p90 {:.1})",
            percentile(&shapes, 0.90)
        );
        println!(
            "  targets: ratio <= 1.5 {}; failing < 20 us {}",
            if ratio <= 1.5 { "met" } else { "NOT met" },
            if rule_median.max(shape_median) < 20_000.0 {
                "met"
            } else {
                "NOT met"
            }
        );
    });
}
