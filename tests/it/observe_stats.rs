//! `Registry::stats` through the real pipeline, on paused tokio time: every count equals what
//! the test made happen (first-attempt successes, a call retried then successful, a repaired
//! call, a model retry in a conversation, a fallback, an idempotent replay, a breaker opening),
//! the table renders, and the snapshot survives a serde round trip.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use toolwright::execute::{BreakerPolicy, RetryBudget};
use toolwright::observe::Stats;
use toolwright::prelude::*;
use toolwright::repair::DeterministicRepair;
use toolwright::State;

/// How many of the next calls of `lookup` fail with a 503 before it answers.
#[derive(Default)]
struct Faults {
    lookup_failures: AtomicU32,
}

/// Look an order up.
#[tool(read_only)]
async fn lookup(
    /// The order.
    order: String,
    faults: State<Arc<Faults>>,
) -> Result<String, ToolError> {
    let left = faults.lookup_failures.load(Ordering::SeqCst);
    if left > 0 {
        faults.lookup_failures.store(left - 1, Ordering::SeqCst);
        return Err(ToolError::from_status(
            503,
            "the order service answered 503",
        ));
    }
    Ok(order)
}

/// Search orders.
#[tool(read_only)]
async fn search(
    /// How many.
    #[arg(range(min = 1, max = 20))]
    max_results: u32,
) -> Result<Vec<String>, ToolError> {
    Ok(vec!["A1".to_owned(); max_results as usize])
}

/// Units in stock; the live service is down, the snapshot answers.
#[tool(read_only, retries = 0, fallback = cached_stock)]
async fn stock(
    /// The SKU.
    sku: String,
) -> Result<u32, ToolError> {
    let _ = sku;
    Err(ToolError::unavailable("the inventory service is down"))
}

async fn cached_stock(sku: String) -> Result<u32, ToolError> {
    let _ = sku;
    Ok(12)
}

/// Charge a card (side-effecting: its key makes a delivered-again call a replay).
#[tool]
async fn charge(
    /// Cents.
    amount: u32,
) -> Result<String, ToolError> {
    Ok(format!("charged {amount}"))
}

/// A dependency that is always down.
#[tool(read_only, retries = 0)]
async fn flaky() -> Result<String, ToolError> {
    Err(ToolError::unavailable("connection reset"))
}

fn registry(faults: &Arc<Faults>) -> Registry {
    Registry::builder()
        .tool(Lookup)
        .tool(Search)
        .tool(Stock)
        .tool(Charge)
        .tool(Flaky)
        .state(Arc::clone(faults))
        .retry_budget(RetryBudget::unlimited())
        .deterministic_repair(DeterministicRepair::default())
        .breaker_for("flaky", BreakerPolicy::new().min_calls(2).failure_rate(0.5))
        .build()
        .unwrap()
}

fn call(id: &str, tool: &str, args: &str) -> ToolCall {
    ToolCall::new(id, tool, args)
}

/// Runs the scenario and returns the registry.
async fn scenario() -> Registry {
    let faults = Arc::new(Faults::default());
    let registry = registry(&faults);
    let conversation = Session::new("conv-1");

    // Three plain successes.
    for i in 0..3 {
        let outcome = registry
            .call(call(&format!("l{i}"), "lookup", r#"{"order":"A1"}"#))
            .await;
        assert_eq!(outcome.status(), Status::Success);
    }
    // One 503, retried after a backoff (paused time), then a success.
    faults.lookup_failures.store(1, Ordering::SeqCst);
    let retried = registry
        .call(call("l3", "lookup", r#"{"order":"A1"}"#))
        .await;
    assert_eq!(retried.status(), Status::Success);
    assert_eq!(retried.attempts(), 2);

    // A number sent as a string: the deterministic rules repair it.
    let repaired = registry
        .call(call("s1", "search", r#"{"max_results":"3"}"#))
        .await;
    assert!(repaired.is_repaired(), "{}", repaired.to_model_string());
    // In a conversation: out of range, then the model calls again and gets through.
    let refused = registry
        .call_in(&conversation, call("s2", "search", r#"{"max_results":50}"#))
        .await;
    assert_eq!(refused.error_kind(), Some(ErrorKind::SchemaMismatch));
    let again = registry
        .call_in(&conversation, call("s3", "search", r#"{"max_results":5}"#))
        .await;
    assert_eq!(again.status(), Status::Success);

    // The live service is down: the fallback answers.
    let degraded = registry
        .call(call("k1", "stock", r#"{"sku":"SKU-1"}"#))
        .await;
    assert!(degraded.is_degraded(), "{}", degraded.to_model_string());

    // The same charge delivered twice in one conversation: the second is a replay.
    let first = registry
        .call_in(&conversation, call("pay_1", "charge", r#"{"amount":500}"#))
        .await;
    assert_eq!(first.status(), Status::Success);
    let replay = registry
        .call_in(&conversation, call("pay_1", "charge", r#"{"amount":500}"#))
        .await;
    assert!(replay.is_replayed());

    // Two failures open the breaker of `flaky`; the third call is refused by it.
    for i in 0..3 {
        registry.call(call(&format!("f{i}"), "flaky", "{}")).await;
    }
    // An invented name.
    registry.call(call("u1", "lookup_order", "{}")).await;
    registry
}

#[tokio::test(start_paused = true)]
async fn the_stats_are_what_happened() {
    let stats = scenario().await.stats();
    let names: Vec<&str> = stats.tools.iter().map(|t| t.tool.as_str()).collect();
    assert_eq!(names, ["charge", "flaky", "lookup", "search", "stock"]);
    assert_eq!(stats.unknown_tool_calls, 1);

    let lookup = stats.tool("lookup").unwrap();
    assert_eq!(lookup.calls, 4);
    assert_eq!(lookup.by_status.success, 4);
    assert_eq!(lookup.first_attempt_successes, 3);
    assert_eq!(lookup.recovered_after_retry, 1);
    assert_eq!(lookup.retries, 1);
    assert_eq!(lookup.retries_refused_by_budget, 0);
    assert_eq!(lookup.recovery_required, 0);
    assert!(lookup.by_error_type.is_empty());
    assert_eq!(lookup.latency.count, 4);

    let search = stats.tool("search").unwrap();
    assert_eq!(search.calls, 3);
    assert_eq!(search.by_status.success, 2);
    assert_eq!(search.by_status.error, 1);
    assert_eq!(search.by_error_type.get("schema_mismatch"), Some(&1));
    assert_eq!(search.by_error_type.len(), 1);
    assert_eq!(search.repaired, 1);
    assert_eq!(search.repaired_by.get("number_from_string"), Some(&1));
    assert_eq!(search.model_retried, 1);
    // Both successes needed help: one a repair, one a second try by the model.
    assert_eq!(search.recovery_required, 2);
    assert_eq!(search.recovery_required_rate, 1.0);
    assert_eq!(search.first_attempt_successes, 1);

    let stock = stats.tool("stock").unwrap();
    assert_eq!(stock.calls, 1);
    assert_eq!(stock.degraded, 1);
    assert_eq!(stock.first_attempt_successes, 0);

    let charge = stats.tool("charge").unwrap();
    assert_eq!(charge.calls, 2);
    assert_eq!(charge.by_status.success, 2);
    assert_eq!(charge.replayed, 1);
    assert_eq!(charge.first_attempt_successes, 1);

    let flaky = stats.tool("flaky").unwrap();
    assert_eq!(flaky.calls, 3);
    assert_eq!(flaky.by_status.error, 3);
    assert_eq!(flaky.by_error_type.get("unavailable"), Some(&2));
    assert_eq!(flaky.by_error_type.get("circuit_open"), Some(&1));
    let breaker = flaky.breaker.as_ref().unwrap();
    assert_eq!(breaker.state, "open");
    assert_eq!(breaker.openings, 1);
    assert_eq!(flaky.recovery_required_rate, 0.0);
}

#[tokio::test(start_paused = true)]
async fn the_table_renders_every_tool() {
    let stats = scenario().await.stats();
    let table = stats.to_string();
    println!("{table}");
    let lines: Vec<&str> = table.lines().collect();
    assert!(lines[0].starts_with("tool"), "{table}");
    for name in ["charge", "flaky", "lookup", "search", "stock"] {
        assert!(
            lines.iter().any(|l| l.starts_with(name)),
            "no row for {name}:\n{table}"
        );
    }
    assert!(
        table.contains("flaky errors: circuit_open 1, unavailable 2"),
        "{table}"
    );
    assert!(table.contains("open/1"), "{table}");
    assert!(table.contains("unknown tool calls: 1"), "{table}");
}

#[tokio::test(start_paused = true)]
async fn the_snapshot_survives_a_serde_round_trip() {
    let stats = scenario().await.stats();
    let json = serde_json::to_string(&stats).unwrap();
    let back: Stats = serde_json::from_str(&json).unwrap();
    assert_eq!(back, stats);
    let value: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(value["tools"][3]["tool"], "search");
    assert_eq!(value["tools"][3]["recovery_required_rate"], 1.0);
}

/// Calls outside a conversation never count as model retries: a failure then a success of the
/// same tool is two independent calls.
#[tokio::test(start_paused = true)]
async fn without_a_conversation_a_success_is_not_a_model_retry() {
    let registry = registry(&Arc::new(Faults::default()));
    registry
        .call(call("s1", "search", r#"{"max_results":50}"#))
        .await;
    registry
        .call(call("s2", "search", r#"{"max_results":5}"#))
        .await;
    let stats = registry.stats();
    let search = stats.tool("search").unwrap();
    assert_eq!(search.model_retried, 0);
    assert_eq!(search.recovery_required_rate, 0.0);
    assert_eq!(search.first_attempt_successes, 1);
}

/// With the `metrics` feature, every call reaches the `metrics` facade, labelled by tool.
#[cfg(feature = "metrics")]
mod metrics_export {
    use std::collections::HashMap;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::{Arc, Mutex};

    use metrics::{
        Counter, CounterFn, Gauge, Histogram, HistogramFn, Key, KeyName, Metadata, Recorder,
        SharedString, Unit,
    };

    use super::*;

    /// Counters by name and labels; histograms by name and tool, the number of records.
    #[derive(Default)]
    struct Seen {
        counters: Mutex<HashMap<String, Arc<Count>>>,
    }

    #[derive(Default)]
    struct Count(AtomicU64);

    impl CounterFn for Count {
        fn increment(&self, value: u64) {
            self.0.fetch_add(value, Ordering::SeqCst);
        }
        fn absolute(&self, value: u64) {
            self.0.store(value, Ordering::SeqCst);
        }
    }

    impl HistogramFn for Count {
        fn record(&self, _: f64) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn describe(key: &Key) -> String {
        let mut labels: Vec<String> = key
            .labels()
            .map(|l| format!("{}={}", l.key(), l.value()))
            .collect();
        labels.sort();
        format!("{}{{{}}}", key.name(), labels.join(","))
    }

    impl Seen {
        fn handle(&self, key: &Key) -> Arc<Count> {
            let mut counters = self.counters.lock().unwrap();
            Arc::clone(counters.entry(describe(key)).or_default())
        }

        fn get(&self, name: &str) -> u64 {
            let counters = self.counters.lock().unwrap();
            counters.get(name).map_or(0, |c| c.0.load(Ordering::SeqCst))
        }
    }

    impl Recorder for Seen {
        fn describe_counter(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
        fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
        fn describe_histogram(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
        fn register_counter(&self, key: &Key, _: &Metadata<'_>) -> Counter {
            Counter::from_arc(self.handle(key))
        }
        fn register_gauge(&self, _: &Key, _: &Metadata<'_>) -> Gauge {
            Gauge::noop()
        }
        fn register_histogram(&self, key: &Key, _: &Metadata<'_>) -> Histogram {
            Histogram::from_arc(self.handle(key))
        }
    }

    #[test]
    fn every_call_reaches_the_facade() {
        let seen = Seen::default();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .start_paused(true)
            .build()
            .unwrap();
        metrics::with_local_recorder(&seen, || {
            runtime.block_on(async {
                let registry = registry(&Arc::new(Faults::default()));
                for i in 0..2 {
                    registry
                        .call(call(&format!("l{i}"), "lookup", r#"{"order":"A1"}"#))
                        .await;
                }
                registry
                    .call(call("s1", "search", r#"{"max_results":50}"#))
                    .await;
                registry
                    .call(call("s2", "search", r#"{"max_results":"3"}"#))
                    .await;
            })
        });
        assert_eq!(
            seen.get("toolwright_calls_total{status=success,tool=lookup}"),
            2
        );
        assert_eq!(
            seen.get("toolwright_calls_total{status=error,tool=search}"),
            1
        );
        assert_eq!(
            seen.get("toolwright_calls_total{status=success,tool=search}"),
            1
        );
        assert_eq!(
            seen.get("toolwright_errors_total{error_type=schema_mismatch,tool=search}"),
            1
        );
        assert_eq!(seen.get("toolwright_repaired_total{tool=search}"), 1);
        assert_eq!(
            seen.get("toolwright_recovery_required_total{tool=search}"),
            1
        );
        assert_eq!(seen.get("toolwright_call_duration_seconds{tool=lookup}"), 2);
        assert_eq!(seen.get("toolwright_call_duration_seconds{tool=search}"), 2);
    }
}
