//! The failure paths of each stage, one binary: the fixtures (one `#[tool]` per failure class
//! and one registry of them all) and the helpers, here at the root, and a module per stage
//! that `use super::*`s them. A binary of its own, because its fixtures are every `#[tool]` it
//! holds: `Registry::from_collected` collects exactly them
//! (`registry::from_collected_finds_every_tool_of_the_binary`).
//!
//! Run one stage's with `cargo test --all-features --test failure_paths <stage>::`.

mod execute;
mod guard;
mod outcome;
mod registry;
mod validate;

// Each failure-path module uses some of these imports and helpers, none uses all.
#[allow(unused_imports)]
use std::time::Duration;

#[allow(unused_imports)]
use serde::{Deserialize, Serialize};
#[allow(unused_imports)]
use serde_json::{json, Value};
#[allow(unused_imports)]
use toolwright::prelude::*;
#[allow(unused_imports)]
use toolwright::BuildError;

// ---------------------------------------------------------------------------------------------
// Fixtures
// ---------------------------------------------------------------------------------------------

#[derive(Serialize, schemars::JsonSchema)]
struct Booking {
    reference: String,
    seats: u32,
    cabin: Option<String>,
}

/// Book a flight from an airport.
#[tool(timeout_ms = 2000, idempotent = false)]
async fn book_flight(
    key: IdempotencyKey,
    /// Origin airport code.
    #[arg(pattern = "^[A-Z]{3}$")]
    from: String,
    /// Number of passengers.
    #[arg(range(min = 1, max = 9), default = 1)]
    passengers: u32,
    /// Cabin class.
    #[arg(one_of = ["economy", "business", "first"])]
    cabin: Option<String>,
    /// A note for the crew.
    #[arg(length(max = 300))]
    note: Option<String>,
) -> Result<Booking, ToolError> {
    let _ = note;
    Ok(Booking {
        reference: format!("{key}/{from}"),
        seats: passengers,
        cabin,
    })
}

#[derive(Serialize, schemars::JsonSchema)]
struct Order {
    id: String,
}

/// Search orders by free text.
#[tool(read_only)]
async fn search_orders(
    /// Words to look for.
    #[arg(length(min = 1, max = 300))]
    query: String,
    /// How many orders to return.
    #[arg(range(min = 1, max = 20), default = 5)]
    max_results: u32,
) -> Result<Vec<Order>, ToolError> {
    if query == "nothing" {
        return Ok(Vec::new());
    }
    Ok((0..max_results.min(3))
        .map(|i| Order {
            id: format!("{query}-{i}"),
        })
        .collect())
}

/// One leg of a trip.
#[derive(Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct Leg {
    /// Departure airport.
    from: String,
    /// Arrival airport.
    to: String,
}

/// Plan a trip over several legs.
#[tool(read_only)]
async fn plan_trip(
    /// The legs, in order.
    #[arg(length(min = 1, max = 4))]
    legs: Vec<Leg>,
) -> Result<usize, ToolError> {
    Ok(legs.len())
}

/// Start must not come after end.
fn start_before_end(args: &ScheduleArgs) -> Result<(), ToolError> {
    if args.start > args.end {
        return Err(ToolError::invalid(format!(
            "`start` ({}) must not be after `end` ({})",
            args.start, args.end
        )));
    }
    Ok(())
}

/// Schedule a maintenance window between two hours of the day.
#[tool(validate = start_before_end)]
async fn schedule(
    /// First hour.
    #[arg(range(max = 23))]
    start: u32,
    /// Last hour.
    #[arg(range(max = 23))]
    end: u32,
) -> Result<u32, ToolError> {
    Ok(end - start)
}

/// Always panics.
#[tool]
async fn explode() -> Result<String, ToolError> {
    panic!("the tool body is broken")
}

/// Waits, then panics.
#[tool(timeout_ms = 1000)]
async fn explode_later() -> Result<String, ToolError> {
    tokio::time::sleep(Duration::from_millis(10)).await;
    panic!("broken after waiting")
}

/// Answers after a delay.
#[tool(timeout_ms = 100, read_only)]
async fn slow(
    /// How long to take.
    delay_ms: u64,
) -> Result<String, ToolError> {
    tokio::time::sleep(Duration::from_millis(delay_ms)).await;
    Ok("done".into())
}

#[derive(Serialize, schemars::JsonSchema)]
struct Customer {
    name: String,
}

/// Find a customer by id.
#[tool(read_only)]
async fn find_customer(
    /// The customer's id.
    id: String,
) -> Result<Option<Customer>, ToolError> {
    Ok((id == "C1").then(|| Customer { name: "Ada".into() }))
}

/// Does nothing and says nothing.
#[tool]
async fn ping() -> Result<(), ToolError> {
    Ok(())
}

/// Fails the way a dependency answering `status` fails.
#[tool]
async fn call_dependency(
    /// The HTTP status the dependency answers.
    status: u16,
) -> Result<String, ToolError> {
    Err(ToolError::from_status(
        status,
        format!("the dependency answered {status}"),
    ))
}

/// Reports that the dependency throttles.
#[tool]
async fn throttled() -> Result<String, ToolError> {
    Err(ToolError::rate_limited(
        "the payments API is throttling",
        Some(Duration::from_millis(1500)),
    ))
}

fn whole_cents(amount: &f64) -> Result<(), String> {
    if (amount * 100.0).fract().abs() > 1e-9 {
        return Err(format!("must be a whole number of cents, got {amount}"));
    }
    Ok(())
}

/// Refund an amount in dollars.
#[tool]
async fn refund(
    /// Amount in dollars.
    #[arg(range(min = 0.01, max = 500.0), validate = whole_cents)]
    amount: f64,
    /// Why.
    reason: Option<String>,
) -> Result<String, ToolError> {
    Ok(format!(
        "refunded {amount} ({})",
        reason.unwrap_or_default()
    ))
}

/// Reset everything. Administrators only.
#[tool(scopes = ["admin"])]
async fn admin_reset() -> Result<String, ToolError> {
    Ok("reset".into())
}

fn only_owner(args: &DeleteOrderArgs, session: &Session) -> Result<(), String> {
    if session.principal() == Some(args.owner.as_str()) {
        Ok(())
    } else {
        Err(format!("only `{}` may delete this order", args.owner))
    }
}

/// Delete one of your orders.
#[tool(authorize = only_owner)]
async fn delete_order(
    /// Who owns the order.
    owner: String,
) -> Result<String, ToolError> {
    Ok(format!("deleted order of {owner}"))
}

/// Shared state for `count_rows`.
struct Db {
    rows: u32,
}

/// Count the rows of the database.
#[tool(read_only)]
async fn count_rows(db: State<Db>) -> Result<u32, ToolError> {
    Ok(db.rows)
}

#[derive(Serialize, schemars::JsonSchema)]
struct CallView {
    key: String,
    context_key: String,
    call_id: String,
    tool: String,
    session: String,
    attempt: u32,
}

/// Say what the tool body can see of the call.
#[tool]
async fn whoami(ctx: ToolContext, key: IdempotencyKey) -> Result<CallView, ToolError> {
    Ok(CallView {
        key: key.to_string(),
        context_key: ctx.idempotency_key().to_string(),
        call_id: ctx.call_id().to_owned(),
        tool: ctx.tool().to_owned(),
        session: ctx.session().id().to_owned(),
        attempt: ctx.attempt(),
    })
}

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

#[allow(dead_code)]
fn registry() -> Registry {
    Registry::builder()
        .tool(BookFlight)
        .tool(SearchOrders)
        .tool(PlanTrip)
        .tool(Schedule)
        .tool(Explode)
        .tool(ExplodeLater)
        .tool(Slow)
        .tool(FindCustomer)
        .tool(Ping)
        .tool(CallDependency)
        .tool(Throttled)
        .tool(Refund)
        .tool(AdminReset)
        .tool(DeleteOrder)
        .tool(CountRows)
        .tool(Whoami)
        .state(Db { rows: 42 })
        // Above the 1 MiB default, so the megabyte cases below reach the failure path they
        // test (tests/it/guard_exactness.rs covers the limit itself).
        .max_argument_bytes(4 << 20)
        .build()
        .expect("the fixture registry builds")
}

#[allow(dead_code)]
async fn call(tool: &str, arguments: &str) -> Outcome {
    registry()
        .call(ToolCall::new("call_1", tool, arguments))
        .await
}

/// Asserts the typed facts and the envelope agree on a failure, and returns the envelope.
#[allow(dead_code)]
#[track_caller]
fn assert_failure(outcome: &Outcome, kind: ErrorKind, retryable: bool) -> Value {
    let envelope = outcome.to_model_json();
    assert_eq!(outcome.status(), Status::Error, "{envelope}");
    assert_eq!(outcome.error_kind(), Some(kind), "{envelope}");
    assert_eq!(outcome.seam(), Some(kind.seam()), "{envelope}");
    assert_eq!(outcome.retryable(), retryable, "{envelope}");
    assert_eq!(envelope["status"], "error");
    assert_eq!(envelope["error_type"], kind.as_str(), "{envelope}");
    assert_eq!(envelope["seam"], kind.seam().as_str(), "{envelope}");
    assert_eq!(envelope["retryable"], retryable, "{envelope}");
    assert_eq!(
        envelope["message"].as_str(),
        outcome.message(),
        "the envelope carries the outcome's message"
    );
    assert!(outcome.data().is_none());
    envelope
}

/// Asserts a validation failure and returns the envelope.
#[allow(dead_code)]
#[track_caller]
fn assert_rejected(outcome: &Outcome, kind: ErrorKind) -> Value {
    assert_eq!(kind.seam(), Seam::Validation);
    let envelope = assert_failure(outcome, kind, kind.model_retryable());
    assert_eq!(
        outcome.attempts(),
        1,
        "validation failures count one attempt"
    );
    assert!(
        outcome.raw_arguments().is_some(),
        "a rejected call keeps its argument text for debugging"
    );
    envelope
}

#[allow(dead_code)]
fn paths(outcome: &Outcome) -> Vec<&str> {
    outcome
        .violations()
        .iter()
        .map(|v| v.path.as_str())
        .collect()
}

#[allow(dead_code)]
fn message(outcome: &Outcome) -> &str {
    outcome.message().unwrap_or_default()
}

/// Every violation's sentence, in order, one per line: what a model reads in `errors` when a
/// call broke several rules (the failure's message then only says where).
#[allow(dead_code)]
fn sentences(outcome: &Outcome) -> String {
    outcome
        .violations()
        .iter()
        .map(|v| v.message.as_str())
        .collect::<Vec<_>>()
        .join("\n")
}
