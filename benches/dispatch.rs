//! Dispatch cost: a 3-argument idempotent tool through `Registry::call` against the floor
//! (`serde_json::from_str::<Args>` + a direct call + `serde_json::to_string` of the result), and
//! the cost of failing calls that report every violation.
//!
//! `cargo bench --bench dispatch`. Targets: success at most 1.5x the floor; a failing call that
//! reports all violations under 20 microseconds. `benches/dispatch_interleaved.rs` measures the
//! same ratio with the two sides alternated, which is steadier on a shared machine.
//!
//! `registry.call` takes an owned `ToolCall`, as a provider adapter produces it; the owned input
//! is built outside the timed routine (`iter_batched`), as the floor's `&str` input is. Outputs
//! are dropped outside the timing on both sides. `registry_call_with_toolcall_new` also times
//! building the `ToolCall` from borrowed text.

mod common;

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use toolwright::Status;

fn dispatch(c: &mut Criterion) {
    let rt = common::runtime();
    let registry = common::registry();

    // Sanity: the benched calls do what their names say.
    rt.block_on(async {
        let ok = common::through_registry(&registry, common::VALID).await;
        assert_eq!(ok.status(), Status::Success);
        assert_eq!(
            ok.data().map(|d| d.get().to_owned()),
            Some(common::floor(common::VALID).await)
        );
        let two = common::through_registry(&registry, common::TWO_RULE_VIOLATIONS).await;
        assert_eq!(two.violations().len(), 2);
        let shape = common::through_registry(&registry, common::SHAPE_FAILURE).await;
        assert_eq!(shape.violations().len(), 1);
        assert_eq!(shape.violations()[0].path, "/weight_grams");
    });

    let mut group = c.benchmark_group("dispatch");
    group.bench_function("floor", |b| {
        b.to_async(&rt).iter_batched(
            || (),
            |()| common::floor(black_box(common::VALID)),
            BatchSize::SmallInput,
        )
    });
    group.bench_function("registry_call", |b| {
        b.to_async(&rt).iter_batched(
            || common::tool_call(common::VALID),
            |call| registry.call(call),
            BatchSize::SmallInput,
        )
    });
    group.bench_function("registry_call_with_toolcall_new", |b| {
        b.to_async(&rt).iter_batched(
            || (),
            |()| common::through_registry(&registry, black_box(common::VALID)),
            BatchSize::SmallInput,
        )
    });
    group.bench_function("registry_call_and_envelope", |b| {
        b.to_async(&rt).iter_batched(
            || common::tool_call(common::VALID),
            |call| async { registry.call(call).await.to_model_string() },
            BatchSize::SmallInput,
        )
    });
    group.bench_function("failing_two_rule_violations", |b| {
        b.to_async(&rt).iter_batched(
            || common::tool_call(common::TWO_RULE_VIOLATIONS),
            |call| registry.call(call),
            BatchSize::SmallInput,
        )
    });
    group.bench_function("failing_shape_slow_path", |b| {
        b.to_async(&rt).iter_batched(
            || common::tool_call(common::SHAPE_FAILURE),
            |call| registry.call(call),
            BatchSize::SmallInput,
        )
    });
    group.bench_function("failing_two_rule_violations_and_envelope", |b| {
        b.to_async(&rt).iter_batched(
            || common::tool_call(common::TWO_RULE_VIOLATIONS),
            |call| async { registry.call(call).await.to_model_string() },
            BatchSize::SmallInput,
        )
    });
    group.finish();
}

criterion_group!(benches, dispatch);
criterion_main!(benches);
