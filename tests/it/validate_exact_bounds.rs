//! Integer bounds are exact, end to end: a bound above 2^53 is not rounded to the nearest
//! `f64`, an integer value is compared with it as an integer, and the message quotes the value
//! as the integer it is. Through the real pipeline (`Registry::call`).

use serde_json::{json, Value};
use toolwright::prelude::*;

/// Store a counter.
#[tool(read_only)]
async fn store(
    /// A count capped at 2^53.
    #[arg(range(max = 9007199254740992))]
    capped: Option<u64>,
    /// Any count but the largest.
    #[arg(range(max = 18446744073709551614))]
    big: Option<u64>,
    /// A signed count with a bound below -2^53.
    #[arg(range(min = -9007199254740992))]
    low: Option<i64>,
) -> Result<String, ToolError> {
    Ok(format!("{capped:?} {big:?} {low:?}"))
}

async fn call(arguments: Value) -> Outcome {
    let registry = Registry::builder().tool(Store).build().expect("builds");
    registry
        .call(ToolCall::new("c1", "store", arguments.to_string()))
        .await
}

#[track_caller]
fn assert_rejected_with(outcome: &Outcome, message: &str) {
    assert_eq!(
        outcome.status(),
        Status::Error,
        "{}",
        outcome.to_model_json()
    );
    assert_eq!(outcome.error_kind(), Some(ErrorKind::SchemaMismatch));
    assert_eq!(outcome.message(), Some(message));
}

#[tokio::test]
async fn one_above_a_bound_of_two_to_the_53_is_rejected() {
    let outcome = call(json!({"capped": 9_007_199_254_740_993u64})).await;
    assert_rejected_with(
        &outcome,
        "`capped` must be at most 9007199254740992, got 9007199254740993",
    );
    let outcome = call(json!({"capped": 9_007_199_254_740_992u64})).await;
    assert_eq!(
        outcome.status(),
        Status::Success,
        "{}",
        outcome.to_model_json()
    );
}

#[tokio::test]
async fn u64_max_is_quoted_exactly() {
    let outcome = call(json!({"big": u64::MAX})).await;
    assert_rejected_with(
        &outcome,
        "`big` must be at most 18446744073709551614, got 18446744073709551615",
    );
    let outcome = call(json!({"big": u64::MAX - 1})).await;
    assert_eq!(
        outcome.status(),
        Status::Success,
        "{}",
        outcome.to_model_json()
    );
}

#[tokio::test]
async fn one_below_a_bound_of_minus_two_to_the_53_is_rejected() {
    let outcome = call(json!({"low": -9_007_199_254_740_993i64})).await;
    assert_rejected_with(
        &outcome,
        "`low` must be at least -9007199254740992, got -9007199254740993",
    );
}

#[test]
fn the_schema_writes_the_exact_integer() {
    let registry = Registry::builder().tool(Store).build().expect("builds");
    let schema = registry.spec("store").expect("registered").input_schema();
    let props = &schema["properties"];
    assert_eq!(props["capped"]["maximum"], json!(9_007_199_254_740_992u64));
    assert_eq!(
        props["big"]["maximum"],
        json!(18_446_744_073_709_551_614u64)
    );
    assert_eq!(props["low"]["minimum"], json!(-9_007_199_254_740_992i64));
}

/// Take the widest bounds there are.
#[tool(read_only)]
async fn extremes(
    /// Any `i64`.
    #[arg(range(min = -9223372036854775808, max = 9223372036854775807))]
    signed: i64,
    /// Any `u64`.
    #[arg(range(min = 0, max = 18446744073709551615))]
    unsigned: u64,
) -> Result<String, ToolError> {
    Ok(format!("{signed} {unsigned}"))
}

#[tokio::test]
async fn the_widest_bounds_hold_the_extreme_values() {
    let registry = Registry::builder().tool(Extremes).build().expect("builds");
    let arguments = json!({"signed": i64::MIN, "unsigned": u64::MAX});
    let outcome = registry
        .call(ToolCall::new("c1", "extremes", arguments.to_string()))
        .await;
    assert_eq!(
        outcome.status(),
        Status::Success,
        "{}",
        outcome.to_model_json()
    );
    let schema = registry
        .spec("extremes")
        .expect("registered")
        .input_schema();
    let props = &schema["properties"];
    assert_eq!(props["signed"]["minimum"], json!(i64::MIN));
    assert_eq!(props["unsigned"]["maximum"], json!(u64::MAX));
}
