//! A tool's progress reports through the registry: they reach the handle its caller attached,
//! rate-limited, the last one before the outcome; without a handle the call runs the same.
//! On paused tokio time, so the interval is exact and no test waits on the wall clock.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use toolwright::prelude::*;
use toolwright::progress::{Progress, ProgressHandle};
use toolwright::ToolContext;

/// Import rows, reporting after each one.
#[tool(read_only, timeout_ms = 60000)]
async fn import_rows(
    ctx: ToolContext,
    /// How many rows to import.
    rows: u32,
    /// Milliseconds each row takes.
    row_ms: u64,
) -> Result<u32, ToolError> {
    for row in 1..=rows {
        tokio::time::sleep(Duration::from_millis(row_ms)).await;
        ctx.progress(f64::from(row), Some(f64::from(rows)), format!("row {row}"));
    }
    Ok(rows)
}

fn recording() -> (ProgressHandle, Arc<Mutex<Vec<Progress>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&seen);
    let handle = ProgressHandle::new(move |p: Progress| {
        sink.lock().unwrap_or_else(PoisonError::into_inner).push(p);
    });
    (handle, seen)
}

fn registry() -> Registry {
    Registry::builder()
        .tool(ImportRows)
        .build()
        .unwrap_or_else(|e| panic!("{e}"))
}

#[tokio::test(start_paused = true)]
async fn a_tight_loop_of_reports_reaches_the_sink_rate_limited_and_ends_with_the_last() {
    let (handle, seen) = recording();
    let call =
        ToolCall::new("c1", "import_rows", r#"{"rows":1000,"row_ms":0}"#).with_progress(handle);
    let outcome = registry().call(call).await;
    assert!(outcome.is_ok(), "{}", outcome.to_model_string());
    let seen = seen.lock().unwrap_or_else(PoisonError::into_inner).clone();
    // The first report, then (the call ending within the interval) the last one, delivered
    // before the outcome came back.
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert_eq!(seen[0].done, 1.0);
    assert_eq!(seen[1].done, 1000.0);
    assert_eq!(seen[1].total, Some(1000.0));
    assert_eq!(seen[1].message.as_deref(), Some("row 1000"));
}

#[tokio::test(start_paused = true)]
async fn a_slow_tool_has_every_report_delivered() {
    let (handle, seen) = recording();
    let call =
        ToolCall::new("c1", "import_rows", r#"{"rows":5,"row_ms":250}"#).with_progress(handle);
    let outcome = registry().call(call).await;
    assert!(outcome.is_ok(), "{}", outcome.to_model_string());
    let dones: Vec<f64> = seen
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .iter()
        .map(|p| p.done)
        .collect();
    assert_eq!(dones, vec![1.0, 2.0, 3.0, 4.0, 5.0]);
}

#[tokio::test(start_paused = true)]
async fn a_call_without_a_handle_reports_to_no_one_and_succeeds() {
    let call = ToolCall::new("c1", "import_rows", r#"{"rows":3,"row_ms":1}"#);
    assert!(call.progress().is_none());
    let outcome = registry().call(call).await;
    assert_eq!(outcome.data_as::<u32>(), Some(3));
}
