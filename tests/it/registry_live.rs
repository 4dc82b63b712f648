//! A registry that changes while it serves: tools added, replaced and removed with calls in
//! flight; none lost or misrouted, running calls of a removed tool finish, a tool that stays
//! keeps its breaker, a failed change applies nothing, subscribers hear of each change.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use toolwright::dynamic::DynamicTool;
use toolwright::execute::BreakerState;
use toolwright::prelude::*;
use toolwright::BuildError;

/// Double a number.
#[tool(read_only)]
async fn double(n: u64) -> Result<u64, ToolError> {
    tokio::task::yield_now().await;
    Ok(n * 2)
}

/// Take a while, then answer.
#[tool(read_only, timeout_ms = 60000)]
async fn slow(ms: u64) -> Result<u64, ToolError> {
    tokio::time::sleep(Duration::from_millis(ms)).await;
    Ok(ms)
}

/// Count how often it ran.
#[tool(read_only)]
async fn counted(runs: State<Arc<AtomicU32>>) -> Result<u32, ToolError> {
    Ok(runs.fetch_add(1, Ordering::SeqCst) + 1)
}

/// A runtime tool answering `answer`.
fn answering(name: &str, answer: &'static str) -> DynamicTool {
    DynamicTool::builder(name)
        .description("Answers a fixed word.")
        .input_schema(json!({"type": "object", "properties": {}}))
        .effect(toolwright::Effect::ReadOnly)
        .handler(move |_args, _ctx| async move { Ok(json!(answer)) })
        .build()
        .unwrap()
}

#[tokio::test]
async fn tools_are_added_replaced_and_removed_and_subscribers_are_told() {
    let registry = Registry::builder().tool(Double).build().unwrap();
    let mut changes = registry.subscribe();
    assert_eq!(registry.version(), 0);

    let version = registry
        .change(|c| c.dynamic_tool(answering("word", "first")))
        .unwrap();
    assert_eq!(version, 1);
    assert_eq!(registry.version(), 1);
    assert!(changes.has_changed().unwrap());
    assert_eq!(*changes.borrow_and_update(), 1);
    assert_eq!(registry.names(), ["double", "word"]);
    let outcome = registry.call(ToolCall::new("c1", "word", "{}")).await;
    assert_eq!(outcome.to_model_json()["data"], "first");

    // A replacement is a removal and an addition in one change.
    registry
        .change(|c| c.remove("word").dynamic_tool(answering("word", "second")))
        .unwrap();
    let outcome = registry.call(ToolCall::new("c2", "word", "{}")).await;
    assert_eq!(outcome.to_model_json()["data"], "second");

    registry.change(|c| c.remove("word")).unwrap();
    let outcome = registry.call(ToolCall::new("c3", "word", "{}")).await;
    assert_eq!(outcome.error_kind(), Some(ErrorKind::UnknownTool));
    assert_eq!(
        outcome.to_model_json()["available_tools"],
        json!(["double"])
    );
    assert_eq!(registry.specs().len(), 1);
    assert_eq!(*changes.borrow_and_update(), 3);
}

#[tokio::test]
async fn a_failed_change_applies_nothing() {
    let registry = Registry::builder().tool(Double).build().unwrap();
    let duplicate = registry.change(|c| c.dynamic_tool(answering("extra", "x")).tool(Double));
    assert_eq!(duplicate, Err(BuildError::DuplicateTool("double".into())));
    let unknown = registry.change(|c| c.dynamic_tool(answering("extra", "x")).remove("nope"));
    assert_eq!(
        unknown,
        Err(BuildError::UnknownTool {
            setting: "remove",
            name: "nope".into()
        })
    );
    let missing = registry.change(|c| c.tool(Counted));
    assert!(
        matches!(missing, Err(BuildError::MissingState { ref tool, .. }) if tool == "counted"),
        "{missing:?}"
    );
    assert_eq!(registry.names(), ["double"]);
    assert_eq!(registry.version(), 0);
}

#[tokio::test]
async fn a_tool_that_stays_keeps_its_breaker_and_a_replaced_one_starts_afresh() {
    let registry = Registry::builder().tool(Double).tool(Slow).build().unwrap();
    registry.breaker("double").unwrap().force_open();
    registry.breaker("slow").unwrap().force_open();
    registry
        .change(|c| {
            c.remove("slow")
                .tool(Slow)
                .dynamic_tool(answering("w", "x"))
        })
        .unwrap();
    assert_eq!(
        registry.breaker("double").unwrap().state(),
        BreakerState::ForcedOpen
    );
    assert_eq!(
        registry.breaker("slow").unwrap().state(),
        BreakerState::Closed
    );
    let outcome = registry
        .call(ToolCall::new("c1", "double", r#"{"n":2}"#))
        .await;
    assert_eq!(outcome.error_kind(), Some(ErrorKind::CircuitOpen));
}

#[tokio::test(start_paused = true)]
async fn a_removed_tool_s_running_calls_finish() {
    let registry = Registry::builder().tool(Slow).build().unwrap();
    let running = {
        let registry = registry.clone();
        tokio::spawn(async move {
            registry
                .call(ToolCall::new("c1", "slow", r#"{"ms":5000}"#))
                .await
        })
    };
    tokio::time::sleep(Duration::from_millis(10)).await;
    registry.change(|c| c.remove("slow")).unwrap();
    let late = registry
        .call(ToolCall::new("c2", "slow", r#"{"ms":1}"#))
        .await;
    assert_eq!(late.error_kind(), Some(ErrorKind::UnknownTool));
    let outcome = running.await.unwrap();
    assert_eq!(
        outcome.status(),
        Status::Success,
        "{}",
        outcome.to_model_string()
    );
    assert_eq!(outcome.to_model_json()["data"], 5000);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_calls_while_a_tool_is_added_and_removed_are_none_lost_nor_misrouted() {
    let runs = Arc::new(AtomicU32::new(0));
    let registry = Registry::builder()
        .tool(Double)
        .state(Arc::clone(&runs))
        .build()
        .unwrap();
    let churn = {
        let registry = registry.clone();
        tokio::spawn(async move {
            for round in 0..200 {
                if round % 2 == 0 {
                    registry.change(|c| c.tool(Counted)).unwrap();
                } else {
                    registry.change(|c| c.remove("counted")).unwrap();
                }
                tokio::task::yield_now().await;
            }
        })
    };
    let calls: Vec<_> = (0..1000u64)
        .map(|n| {
            let registry = registry.clone();
            tokio::spawn(async move {
                let (name, args) = if n % 2 == 0 {
                    ("double", format!(r#"{{"n":{n}}}"#))
                } else {
                    ("counted", "{}".to_owned())
                };
                let outcome = registry
                    .call(ToolCall::new(format!("c{n}"), name, args))
                    .await;
                (n, outcome)
            })
        })
        .collect();
    let mut counted_ran = 0;
    for call in calls {
        let (n, outcome) = call.await.expect("no call panics");
        assert_eq!(outcome.call_id(), format!("c{n}"));
        if n % 2 == 0 {
            assert_eq!(outcome.tool(), "double");
            assert_eq!(
                outcome.status(),
                Status::Success,
                "{}",
                outcome.to_model_string()
            );
            assert_eq!(outcome.to_model_json()["data"], n * 2, "call {n} misrouted");
        } else {
            assert_eq!(outcome.tool(), "counted");
            match outcome.status() {
                Status::Success => counted_ran += 1,
                _ => assert_eq!(outcome.error_kind(), Some(ErrorKind::UnknownTool)),
            }
        }
    }
    churn.await.unwrap();
    assert_eq!(
        runs.load(Ordering::SeqCst),
        counted_ran,
        "every run answered"
    );
    assert_eq!(registry.version(), 200);
    assert_eq!(registry.names(), ["double"]);
}
