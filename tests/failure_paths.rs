//! Failure paths through the real pipeline (`Registry::call`), one fixture per class.
//!
//! Every test builds a registry from `#[tool]` functions and sends it the argument text a model
//! could send. Each failure is checked the way a model and an operator see it: the typed facts
//! (`error_kind`, `seam`, `retryable`) and the envelope (`error_type`, `message`, `errors[].path`),
//! and the message must name the field, what was expected and what came.

// `#[arg(validate = f)]` expands to a closure so that deref coercion applies (`fn(&str)` for a
// `String` argument); clippy reads it as user code. Reported for tool-macros to allow it there.
#![allow(clippy::redundant_closure)]

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use toolwright::prelude::*;
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
        // test (tests/exactness.rs covers the limit itself).
        .max_argument_bytes(4 << 20)
        .build()
        .expect("the fixture registry builds")
}

async fn call(tool: &str, arguments: &str) -> Outcome {
    registry()
        .call(ToolCall::new("call_1", tool, arguments))
        .await
}

/// Asserts the typed facts and the envelope agree on a failure, and returns the envelope.
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

fn paths(outcome: &Outcome) -> Vec<&str> {
    outcome
        .violations()
        .iter()
        .map(|v| v.path.as_str())
        .collect()
}

fn message(outcome: &Outcome) -> &str {
    outcome.message().unwrap_or_default()
}

// ---------------------------------------------------------------------------------------------
// Shape: the text is not an object of the right fields
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn text_that_is_not_json_is_invalid_json() {
    let outcome = call("book_flight", r#"{"from": "SFO", "passengers": 2"#).await;
    let envelope = assert_rejected(&outcome, ErrorKind::InvalidJson);
    assert!(message(&outcome).contains("not valid JSON"), "{envelope}");
    assert_eq!(paths(&outcome), [""]);
    assert!(
        envelope["expected_schema"].is_object(),
        "the model gets the schema to rebuild its call: {envelope}"
    );
}

#[tokio::test]
async fn an_empty_string_is_invalid_json_and_says_what_to_send() {
    let outcome = call("book_flight", "").await;
    let envelope = assert_rejected(&outcome, ErrorKind::InvalidJson);
    assert!(message(&outcome).contains("empty"), "{envelope}");
    assert!(message(&outcome).contains("JSON object"), "{envelope}");
    // Whitespace is as empty as nothing.
    let outcome = call("book_flight", "  \n ").await;
    assert_rejected(&outcome, ErrorKind::InvalidJson);
    assert!(message(&outcome).contains("empty"));
}

#[tokio::test]
async fn null_is_a_schema_mismatch_at_the_root() {
    let outcome = call("book_flight", "null").await;
    let envelope = assert_rejected(&outcome, ErrorKind::SchemaMismatch);
    assert_eq!(paths(&outcome), [""]);
    assert_eq!(
        message(&outcome),
        "the arguments must be a JSON object, got null"
    );
    assert_eq!(envelope["errors"][0]["got"], "null");
}

#[tokio::test]
async fn an_array_instead_of_an_object_is_a_schema_mismatch_at_the_root() {
    let outcome = call("book_flight", r#"[{"from":"SFO"}]"#).await;
    let envelope = assert_rejected(&outcome, ErrorKind::SchemaMismatch);
    assert_eq!(paths(&outcome), [""]);
    assert_eq!(
        message(&outcome),
        "the arguments must be a JSON object, got an array of 1 item"
    );
    assert_eq!(envelope["errors"][0]["expected"], "an object");
}

#[tokio::test]
async fn positional_arguments_in_an_array_are_not_read_as_fields() {
    // serde would fill a struct from an array by position; the schema promises an object.
    for arguments in [r#"["SFO",2,null,null]"#, " []", "[]"] {
        let outcome = call("book_flight", arguments).await;
        assert_rejected(&outcome, ErrorKind::SchemaMismatch);
        assert_eq!(paths(&outcome), [""], "{arguments}");
        assert!(message(&outcome).starts_with("the arguments must be a JSON object, got an array"));
    }
    let outcome = call("ping", "[]").await;
    assert_rejected(&outcome, ErrorKind::SchemaMismatch);
    let outcome = call("ping", " {} ").await;
    assert_eq!(outcome.status(), Status::Success);
}

#[tokio::test]
async fn a_field_given_twice_is_named() {
    let outcome = call("book_flight", r#"{"from":"SFO","from":"LAX"}"#).await;
    let envelope = assert_rejected(&outcome, ErrorKind::SchemaMismatch);
    assert_eq!(paths(&outcome), ["/from"]);
    assert_eq!(
        message(&outcome),
        "`from` is given more than once; send each argument once"
    );
    assert_eq!(envelope["errors"][0]["rule"], "duplicate");

    let outcome = call(
        "plan_trip",
        r#"{"legs":[{"from":"SFO","to":"LAX","to":"JFK"}]}"#,
    )
    .await;
    assert_rejected(&outcome, ErrorKind::SchemaMismatch);
    assert_eq!(paths(&outcome), ["/legs/0/to"]);
}

#[tokio::test]
async fn an_integer_written_as_a_float_says_how_to_write_it() {
    // JSON Schema counts 2.0 as an integer, serde does not: the message says what to send.
    let outcome = call("book_flight", r#"{"from":"SFO","passengers":2.0}"#).await;
    let envelope = assert_rejected(&outcome, ErrorKind::SchemaMismatch);
    assert_eq!(paths(&outcome), ["/passengers"]);
    assert_eq!(
        message(&outcome),
        "`passengers`: expected an integer written without a decimal point or exponent, got number 2.0"
    );
    assert_eq!(envelope["errors"][0]["got"], "number 2.0");

    let outcome = call("slow", r#"{"delay_ms":18446744073709551616}"#).await;
    assert_rejected(&outcome, ErrorKind::SchemaMismatch);
    assert_eq!(paths(&outcome), ["/delay_ms"]);
    assert!(
        message(&outcome).contains(
            "out of range for a 64-bit unsigned integer (0 to 18446744073709551615), got 18446744073709551616"
        ),
        "{}",
        message(&outcome)
    );
}

#[tokio::test]
async fn a_missing_required_field_is_named() {
    let outcome = call("book_flight", r#"{"passengers":2}"#).await;
    let envelope = assert_rejected(&outcome, ErrorKind::SchemaMismatch);
    assert_eq!(paths(&outcome), ["/from"]);
    assert_eq!(message(&outcome), "`from` is required but missing");
    assert_eq!(envelope["errors"][0]["rule"], "required");
    assert!(envelope["errors"][0].get("got").is_none(), "{envelope}");
}

#[tokio::test]
async fn a_wrong_type_names_the_field_the_expected_type_and_what_came() {
    let outcome = call("book_flight", r#"{"from":"SFO","passengers":"2"}"#).await;
    let envelope = assert_rejected(&outcome, ErrorKind::SchemaMismatch);
    assert_eq!(paths(&outcome), ["/passengers"]);
    assert_eq!(
        message(&outcome),
        "`passengers`: expected an integer, got string \"2\""
    );
    let error = &envelope["errors"][0];
    assert_eq!(error["path"], "/passengers");
    assert_eq!(error["rule"], "type");
    assert_eq!(error["expected"], "an integer");
    assert_eq!(error["got"], "string \"2\"");
}

#[tokio::test]
async fn a_value_out_of_range_names_the_bound_and_the_value() {
    let outcome = call("book_flight", r#"{"from":"SFO","passengers":50}"#).await;
    let envelope = assert_rejected(&outcome, ErrorKind::SchemaMismatch);
    assert_eq!(paths(&outcome), ["/passengers"]);
    assert_eq!(message(&outcome), "`passengers` must be at most 9, got 50");
    assert_eq!(envelope["errors"][0]["rule"], "range");
    assert_eq!(envelope["errors"][0]["expected"], "at most 9");
    assert_eq!(envelope["errors"][0]["got"], "50");

    // Below the bound, and below what the Rust type can hold: the schema reports it the same way.
    let outcome = call("book_flight", r#"{"from":"SFO","passengers":-1}"#).await;
    assert_rejected(&outcome, ErrorKind::SchemaMismatch);
    assert_eq!(paths(&outcome), ["/passengers"]);
    assert_eq!(message(&outcome), "`passengers` must be at least 1, got -1");

    let outcome = call("refund", r#"{"amount":0}"#).await;
    assert_rejected(&outcome, ErrorKind::SchemaMismatch);
    assert_eq!(message(&outcome), "`amount` must be at least 0.01, got 0");
}

#[tokio::test]
async fn a_value_too_long_names_the_limit_and_the_length() {
    let note = "n".repeat(301);
    let outcome = call(
        "book_flight",
        &json!({"from": "SFO", "note": note}).to_string(),
    )
    .await;
    let envelope = assert_rejected(&outcome, ErrorKind::SchemaMismatch);
    assert_eq!(paths(&outcome), ["/note"]);
    assert_eq!(
        message(&outcome),
        "`note` must be at most 300 characters long, got 301 characters"
    );
    assert_eq!(envelope["errors"][0]["rule"], "length");

    let outcome = call("search_orders", r#"{"query":""}"#).await;
    assert_rejected(&outcome, ErrorKind::SchemaMismatch);
    assert_eq!(
        message(&outcome),
        "`query` must be non-empty, got 0 characters"
    );
}

#[tokio::test]
async fn a_pattern_mismatch_shows_the_pattern_and_the_value() {
    let outcome = call("book_flight", r#"{"from":"sfo"}"#).await;
    let envelope = assert_rejected(&outcome, ErrorKind::SchemaMismatch);
    assert_eq!(paths(&outcome), ["/from"]);
    assert_eq!(
        message(&outcome),
        "`from` must be a string matching `^[A-Z]{3}$`, got \"sfo\""
    );
    assert_eq!(envelope["errors"][0]["rule"], "pattern");
}

#[tokio::test]
async fn a_value_not_in_one_of_lists_the_options() {
    let outcome = call("book_flight", r#"{"from":"SFO","cabin":"premium"}"#).await;
    let envelope = assert_rejected(&outcome, ErrorKind::SchemaMismatch);
    assert_eq!(paths(&outcome), ["/cabin"]);
    assert_eq!(
        message(&outcome),
        "`cabin` must be one of \"economy\", \"business\", \"first\", got \"premium\""
    );
    assert_eq!(envelope["errors"][0]["rule"], "one_of");
}

#[tokio::test]
async fn two_violations_in_one_call_are_both_reported_each_with_its_path() {
    let outcome = call("search_orders", r#"{"query":"","max_results":50}"#).await;
    let envelope = assert_rejected(&outcome, ErrorKind::SchemaMismatch);
    assert_eq!(paths(&outcome), ["/query", "/max_results"]);
    let errors = envelope["errors"].as_array().expect("errors");
    assert_eq!(errors.len(), 2);
    assert!(message(&outcome).starts_with("2 problems with the arguments"));
    assert!(message(&outcome).contains("`query` must be non-empty"));
    assert!(message(&outcome).contains("`max_results` must be at most 20, got 50"));

    // Shape failures are collected too: two wrong types, found by the slow path.
    let outcome = call("schedule", r#"{"start":"9","end":true}"#).await;
    assert_rejected(&outcome, ErrorKind::SchemaMismatch);
    let mut found = paths(&outcome);
    found.sort_unstable();
    assert_eq!(found, ["/end", "/start"]);
    assert!(message(&outcome).contains("`start`: expected an integer, got string \"9\""));
    assert!(message(&outcome).contains("`end`: expected an integer, got boolean true"));
}

#[tokio::test]
async fn an_unknown_argument_is_named_and_the_valid_ones_listed() {
    let outcome = call("book_flight", r#"{"from":"SFO","seat":"12A"}"#).await;
    let envelope = assert_rejected(&outcome, ErrorKind::UnknownArgument);
    assert_eq!(paths(&outcome), ["/seat"]);
    assert_eq!(
        message(&outcome),
        "unknown argument `seat`; valid arguments are `cabin`, `from`, `note`, `passengers`"
    );
    assert_eq!(envelope["errors"][0]["got"], "`seat`");
}

#[tokio::test]
async fn an_unknown_argument_with_another_problem_is_a_schema_mismatch_listing_both() {
    let outcome = call(
        "book_flight",
        r#"{"from":"SFO","passengers":"2","seat":"1"}"#,
    )
    .await;
    assert_rejected(&outcome, ErrorKind::SchemaMismatch);
    let mut found = paths(&outcome);
    found.sort_unstable();
    assert_eq!(found, ["/passengers", "/seat"]);
}

#[tokio::test]
async fn a_nested_error_inside_a_list_of_structs_has_its_full_path() {
    let outcome = call(
        "plan_trip",
        r#"{"legs":[{"from":7,"to":"LAX"},{"from":"LAX"}]}"#,
    )
    .await;
    let envelope = assert_rejected(&outcome, ErrorKind::SchemaMismatch);
    let mut found = paths(&outcome);
    found.sort_unstable();
    assert_eq!(found, ["/legs/0/from", "/legs/1/to"]);
    assert!(
        message(&outcome).contains("`legs[0].from`: expected a string, got number 7"),
        "{envelope}"
    );
    assert!(
        message(&outcome).contains("`legs[1].to` is required but missing"),
        "{envelope}"
    );

    let outcome = call("plan_trip", r#"{"legs":[]}"#).await;
    assert_rejected(&outcome, ErrorKind::SchemaMismatch);
    assert_eq!(message(&outcome), "`legs` must be non-empty, got 0 items");
}

#[tokio::test]
async fn a_list_too_long_and_a_missing_field_are_both_reported_on_the_shape_path() {
    // The missing `to` fails the typed parse, so the slow path reports the list length too.
    let leg = r#"{"from":"SFO","to":"LAX"}"#;
    let text = format!(r#"{{"legs":[{leg},{leg},{leg},{leg},{{"from":"JFK"}}]}}"#);
    let outcome = call("plan_trip", &text).await;
    assert_rejected(&outcome, ErrorKind::SchemaMismatch);
    let messages: Vec<&str> = outcome
        .violations()
        .iter()
        .map(|v| v.message.as_str())
        .collect();
    assert!(
        messages.contains(&"`legs` must be at most 4 items long, got 5 items"),
        "{messages:?}"
    );
    assert!(
        messages.contains(&"`legs[4].to` is required but missing"),
        "{messages:?}"
    );
}

// ---------------------------------------------------------------------------------------------
// Lookup, semantics, authorization
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn an_unknown_tool_lists_the_available_tools_sorted_and_never_routes_a_near_miss() {
    let registry = registry();
    let outcome = registry
        .call(ToolCall::new(
            "call_1",
            "search_order",
            r#"{"query":"late"}"#,
        ))
        .await;
    let envelope = assert_failure(&outcome, ErrorKind::UnknownTool, true);
    assert_eq!(
        outcome.tool(),
        "search_order",
        "not routed to search_orders"
    );
    assert_eq!(outcome.attempts(), 0, "no tool ran");
    assert!(outcome.data().is_none());
    assert_eq!(
        message(&outcome),
        "'search_order' is not an available tool; call one of available_tools instead"
    );
    let available: Vec<&str> = envelope["available_tools"]
        .as_array()
        .expect("available_tools")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let mut sorted = available.clone();
    sorted.sort_unstable();
    assert_eq!(available, sorted);
    // Only the tools this (anonymous) session may call: none that needs a scope.
    let visible: Vec<&str> = registry
        .specs()
        .iter()
        .filter(|s| s.scopes().is_empty())
        .map(|s| s.name())
        .collect();
    assert!(
        visible.len() < registry.specs().len(),
        "some tool needs a scope"
    );
    assert_eq!(available, visible);
    assert!(available.contains(&"search_orders"));
    assert_eq!(outcome.raw_arguments(), Some(r#"{"query":"late"}"#));
}

#[tokio::test]
async fn a_broken_business_rule_is_semantic_invalid() {
    let outcome = call("schedule", r#"{"start":18,"end":9}"#).await;
    let envelope = assert_rejected(&outcome, ErrorKind::SemanticInvalid);
    assert_eq!(
        message(&outcome),
        "`start` (18) must not be after `end` (9)",
        "{envelope}"
    );
    // The semantic rule runs only once the fields are valid.
    let outcome = call("schedule", r#"{"start":30,"end":9}"#).await;
    assert_rejected(&outcome, ErrorKind::SchemaMismatch);
    let outcome = call("schedule", r#"{"start":9,"end":18}"#).await;
    assert_eq!(outcome.status(), Status::Success);
}

#[tokio::test]
async fn a_custom_field_check_reports_its_message_with_the_field() {
    let outcome = call("refund", r#"{"amount":10.005}"#).await;
    let envelope = assert_rejected(&outcome, ErrorKind::SchemaMismatch);
    assert_eq!(paths(&outcome), ["/amount"]);
    assert_eq!(
        message(&outcome),
        "`amount`: must be a whole number of cents, got 10.005"
    );
    assert_eq!(envelope["errors"][0]["rule"], "custom");
    let outcome = call("refund", r#"{"amount":10.25}"#).await;
    assert_eq!(outcome.status(), Status::Success);
}

#[tokio::test]
async fn a_session_without_the_scope_is_unauthorized() {
    let registry = registry();
    let session = Session::new("conv-1").with_scopes(["orders:read"]);
    let outcome = registry
        .call_in(&session, ToolCall::new("c1", "admin_reset", "{}"))
        .await;
    assert_rejected(&outcome, ErrorKind::Unauthorized);
    assert!(!outcome.retryable());
    assert!(message(&outcome).contains("`admin`"), "names the scope");

    let admin = Session::new("conv-2").with_scopes(["admin"]);
    let outcome = registry
        .call_in(&admin, ToolCall::new("c2", "admin_reset", "{}"))
        .await;
    assert_eq!(outcome.status(), Status::Success);
}

#[tokio::test]
async fn an_authorize_rule_that_refuses_is_unauthorized() {
    let registry = registry();
    let bob = Session::new("conv-1").with_principal("bob");
    let outcome = registry
        .call_in(
            &bob,
            ToolCall::new("c1", "delete_order", r#"{"owner":"alice"}"#),
        )
        .await;
    assert_rejected(&outcome, ErrorKind::Unauthorized);
    assert_eq!(message(&outcome), "only `alice` may delete this order");

    let alice = Session::new("conv-2").with_principal("alice");
    let outcome = registry
        .call_in(
            &alice,
            ToolCall::new("c2", "delete_order", r#"{"owner":"alice"}"#),
        )
        .await;
    assert_eq!(outcome.status(), Status::Success);
}

// ---------------------------------------------------------------------------------------------
// Hostile sizes
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn ten_thousand_levels_of_nesting_are_classified_without_overflowing_the_stack() {
    let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
    let outcome = call("book_flight", &deep).await;
    let envelope = assert_rejected(&outcome, ErrorKind::InvalidJson);
    assert!(
        message(&outcome).contains("nested too deeply"),
        "{envelope}"
    );

    // Deep nesting inside a field, past the typed parse's first error.
    let deep_field = format!(
        r#"{{"from":{}1{}}}"#,
        r#"{"a":"#.repeat(10_000),
        "}".repeat(10_000)
    );
    let outcome = call("book_flight", &deep_field).await;
    assert_rejected(&outcome, ErrorKind::InvalidJson);
    assert!(message(&outcome).contains("nested too deeply"));

    // And inside a field whose type accepts structure.
    let deep_legs = format!(r#"{{"legs":{}{}}}"#, "[".repeat(10_000), "]".repeat(10_000));
    let outcome = call("plan_trip", &deep_legs).await;
    assert_eq!(outcome.seam(), Some(Seam::Validation));
    assert!(outcome.to_model_string().len() < 8_192);
}

#[tokio::test]
async fn a_megabyte_string_is_classified_and_never_echoed_back() {
    let huge = "x".repeat(1 << 20);
    let cases = [
        // Too long for its field.
        (
            "search_orders",
            json!({ "query": huge }),
            "/query",
            ErrorKind::SchemaMismatch,
        ),
        // Breaks a pattern.
        (
            "book_flight",
            json!({ "from": huge }),
            "/from",
            ErrorKind::SchemaMismatch,
        ),
        // The wrong type.
        (
            "book_flight",
            json!({ "from": "SFO", "passengers": huge }),
            "/passengers",
            ErrorKind::SchemaMismatch,
        ),
        // Not one of the options.
        (
            "book_flight",
            json!({ "from": "SFO", "cabin": huge }),
            "/cabin",
            ErrorKind::SchemaMismatch,
        ),
    ];
    for (tool, arguments, path, kind) in cases {
        let outcome = call(tool, &arguments.to_string()).await;
        assert_rejected(&outcome, kind);
        assert_eq!(paths(&outcome), [path]);
        let envelope = outcome.to_model_string();
        assert!(
            envelope.len() < 4_096,
            "{tool} {path}: the envelope is {} bytes",
            envelope.len()
        );
        assert!(
            envelope.contains("1048576 characters"),
            "says how long it was: {envelope}"
        );
    }
}

#[tokio::test]
async fn a_megabyte_field_name_or_tool_name_is_never_echoed_back() {
    let huge = "k".repeat(1 << 20);
    let mut arguments = serde_json::Map::new();
    arguments.insert("from".into(), json!("SFO"));
    arguments.insert(huge.clone(), json!(1));
    let outcome = call("book_flight", &Value::Object(arguments).to_string()).await;
    assert_rejected(&outcome, ErrorKind::UnknownArgument);
    let envelope = outcome.to_model_string();
    assert!(envelope.len() < 4_096, "{} bytes", envelope.len());
    assert!(message(&outcome).contains("valid arguments are `cabin`"));

    let outcome = registry().call(ToolCall::new("c", huge, "{}")).await;
    assert_failure(&outcome, ErrorKind::UnknownTool, true);
    assert!(outcome.to_model_string().len() < 4_096);
}

#[tokio::test]
async fn a_megabyte_of_broken_json_is_not_echoed_back() {
    let broken = format!(r#"{{"from":"{}"#, "x".repeat(1 << 20));
    let outcome = call("book_flight", &broken).await;
    assert_rejected(&outcome, ErrorKind::InvalidJson);
    assert!(outcome.to_model_string().len() < 4_096);
}

// ---------------------------------------------------------------------------------------------
// Execution and interpretation
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn a_panicking_tool_is_contained_and_the_registry_keeps_serving() {
    let registry = registry();
    let outcome = registry.call(ToolCall::new("c1", "explode", "{}")).await;
    let envelope = assert_failure(&outcome, ErrorKind::ToolPanicked, false);
    assert_eq!(outcome.seam(), Some(Seam::Execution));
    assert!(
        !message(&outcome).contains("the tool body is broken"),
        "the panic text is for logs, not the model: {envelope}"
    );
    for i in 0..3 {
        let next = registry
            .call(ToolCall::new(format!("c{i}"), "ping", "{}"))
            .await;
        assert_eq!(next.status(), Status::Success);
    }
    let again = registry.call(ToolCall::new("c9", "explode", "{}")).await;
    assert_eq!(again.error_kind(), Some(ErrorKind::ToolPanicked));
}

#[tokio::test(start_paused = true)]
async fn a_panic_after_waiting_is_contained_too() {
    let registry = registry();
    let outcome = registry
        .call(ToolCall::new("c1", "explode_later", "{}"))
        .await;
    assert_failure(&outcome, ErrorKind::ToolPanicked, false);
    let next = registry.call(ToolCall::new("c2", "ping", "{}")).await;
    assert_eq!(next.status(), Status::Success);
}

/// A hand-written tool whose `invoke` panics before it returns a future.
struct PanicsEarly;

impl Tool for PanicsEarly {
    type Args = serde_json::Value;
    type Output = String;
    const META: toolwright::ToolMeta =
        toolwright::ToolMeta::new("panics_early", "Fails while building its future.").read_only();

    #[allow(unreachable_code)]
    fn invoke(
        &self,
        _: serde_json::Value,
        _: &toolwright::Invocation<'_>,
    ) -> impl std::future::Future<Output = Result<String, ToolError>> + Send {
        panic!("broken before the first poll");
        async { Ok(String::new()) }
    }
}

#[tokio::test]
async fn a_panic_while_a_tool_builds_its_future_is_contained_too() {
    let registry = Registry::builder().tool(PanicsEarly).build().unwrap();
    let outcome = registry
        .call(ToolCall::new("c1", "panics_early", "{}"))
        .await;
    assert_failure(&outcome, ErrorKind::ToolPanicked, false);
    let again = registry
        .call(ToolCall::new("c2", "panics_early", "{}"))
        .await;
    assert_eq!(again.error_kind(), Some(ErrorKind::ToolPanicked));
}

#[tokio::test(start_paused = true)]
async fn a_tool_past_its_timeout_is_cancelled_with_timeout() {
    let registry = registry();
    let started = tokio::time::Instant::now();
    let outcome = registry
        .call(ToolCall::new("c1", "slow", r#"{"delay_ms":5000}"#))
        .await;
    let envelope = assert_failure(&outcome, ErrorKind::Timeout, true);
    assert!(message(&outcome).contains("100 ms"), "{envelope}");
    // `slow` is read-only, so the framework retried the timeout: 3 attempts of 100 ms each.
    assert_eq!(outcome.attempts(), 3);
    let waits: Duration = outcome.attempt_history().iter().map(|a| a.waited()).sum();
    for attempt in outcome.attempt_history() {
        assert_eq!(attempt.elapsed(), Duration::from_millis(100));
    }
    assert_eq!(started.elapsed(), outcome.elapsed());
    let slept = outcome.elapsed() - Duration::from_millis(300);
    assert!(
        slept >= waits && slept <= waits + Duration::from_millis(2),
        "{slept:?} vs {waits:?}"
    );

    let outcome = registry
        .call(ToolCall::new("c2", "slow", r#"{"delay_ms":99}"#))
        .await;
    assert_eq!(outcome.status(), Status::Success);
    assert_eq!(outcome.data().map(|d| d.get()), Some(r#""done""#));
}

#[tokio::test]
async fn empty_lists_and_none_are_empty_but_unit_is_success() {
    let outcome = call("search_orders", r#"{"query":"nothing"}"#).await;
    assert_eq!(outcome.status(), Status::Empty);
    assert!(outcome.is_ok());
    let envelope = outcome.to_model_json();
    assert_eq!(envelope["status"], "empty");
    assert_eq!(envelope["data"], json!([]));
    assert!(envelope.get("error_type").is_none());

    let outcome = call("find_customer", r#"{"id":"C404"}"#).await;
    assert_eq!(outcome.status(), Status::Empty);
    assert_eq!(outcome.to_model_json()["status"], "empty");

    let outcome = call("find_customer", r#"{"id":"C1"}"#).await;
    assert_eq!(outcome.status(), Status::Success);
    assert_eq!(outcome.to_model_json()["data"], json!({"name": "Ada"}));

    let outcome = call("ping", "{}").await;
    assert_eq!(outcome.status(), Status::Success);
    assert_eq!(outcome.to_model_json()["status"], "success");

    let outcome = call("search_orders", r#"{"query":"late"}"#).await;
    assert_eq!(outcome.status(), Status::Success);
    assert_eq!(
        outcome.to_model_json(),
        json!({"status": "success", "data": [{"id": "late-0"}, {"id": "late-1"}, {"id": "late-2"}], "attempts": 1})
    );
}

#[tokio::test(start_paused = true)]
async fn every_status_class_from_a_tool_body_reaches_the_envelope() {
    // `call_dependency` is not idempotent and takes no key: a transient failure that may have
    // done something (408, 5xx) is not repeated and says so (`retryable: false`); a 429 refused
    // the request outright, so it is retried (3 attempts) and stays retryable.
    let cases = [
        (400, ErrorKind::BadRequest, false, 1),
        (401, ErrorKind::AuthExpired, false, 1),
        (403, ErrorKind::PermissionDenied, false, 1),
        (404, ErrorKind::NotFound, false, 1),
        (408, ErrorKind::Timeout, false, 1),
        (409, ErrorKind::Conflict, false, 1),
        (410, ErrorKind::NotFound, false, 1),
        (422, ErrorKind::BadRequest, false, 1),
        (429, ErrorKind::RateLimited, true, 3),
        (500, ErrorKind::Unavailable, false, 1),
        (503, ErrorKind::Unavailable, false, 1),
        (200, ErrorKind::InvalidResult, false, 1),
    ];
    let registry = registry();
    for (status, kind, retryable, attempts) in cases {
        // One call id per case: the tool is not idempotent, so the same id with other
        // arguments would be an `idempotency_mismatch`.
        let outcome = registry
            .call(ToolCall::new(
                format!("c{status}"),
                "call_dependency",
                format!(r#"{{"status":{status}}}"#),
            ))
            .await;
        let envelope = assert_failure(&outcome, kind, retryable);
        assert!(
            message(&outcome).starts_with(&format!("the dependency answered {status}")),
            "{envelope}"
        );
        assert_eq!(
            message(&outcome).contains("not idempotent"),
            kind.is_transient() && kind != ErrorKind::RateLimited,
            "{envelope}"
        );
        assert_eq!(outcome.attempts(), attempts, "{envelope}");
        assert!(envelope.get("errors").is_none(), "{envelope}");
        assert!(envelope.get("expected_schema").is_none(), "{envelope}");
    }
}

#[tokio::test(start_paused = true)]
async fn rate_limited_with_retry_after_gives_retry_after_ms() {
    let outcome = call("throttled", "{}").await;
    let envelope = assert_failure(&outcome, ErrorKind::RateLimited, true);
    assert_eq!(outcome.retry_after(), Some(Duration::from_millis(1500)));
    assert_eq!(envelope["retry_after_ms"], 1500);
    // Retried after exactly the Retry-After each time, then reported.
    let waits: Vec<Duration> = outcome
        .attempt_history()
        .iter()
        .map(|a| a.waited())
        .collect();
    assert_eq!(
        waits,
        [
            Duration::ZERO,
            Duration::from_millis(1500),
            Duration::from_millis(1500)
        ]
    );
}

// ---------------------------------------------------------------------------------------------
// What is kept, what is shown
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn raw_arguments_are_kept_on_failure_and_dropped_on_success() {
    let bad = r#"{"from":"SFO","passengers":"2"}"#;
    let outcome = call("book_flight", bad).await;
    assert_eq!(outcome.raw_arguments(), Some(bad));

    let failing_body = r#"{"status":404}"#;
    let outcome = call("call_dependency", failing_body).await;
    assert_eq!(outcome.raw_arguments(), Some(failing_body));

    let outcome = call("book_flight", r#"{"from":"SFO"}"#).await;
    assert_eq!(outcome.status(), Status::Success);
    assert_eq!(outcome.raw_arguments(), None);
}

#[tokio::test]
async fn the_envelope_never_contains_the_raw_argument_text() {
    let calls = [
        (
            "book_flight",
            r#"{"from":"sfo","passengers":50,"note":"call me"}"#,
        ),
        ("book_flight", r#"{"from":"SFO","passengers":"2"}"#),
        ("book_flight", r#"{"from":"SFO","seat":"12A"}"#),
        ("book_flight", r#"{"from": "SFO", "passengers": 2"#),
        ("book_flight", r#"{"from": "SFO" "passengers": 2}"#),
        ("schedule", r#"{"start":18,"end":9}"#),
        ("call_dependency", r#"{"status":503}"#),
        ("no_such_tool", r#"{"secret":"hunter2"}"#),
    ];
    for (tool, arguments) in calls {
        let outcome = call(tool, arguments).await;
        assert_eq!(outcome.status(), Status::Error);
        assert_eq!(outcome.raw_arguments(), Some(arguments));
        let envelope = outcome.to_model_string();
        assert!(
            !envelope.contains(arguments),
            "{tool}: the envelope echoes the arguments: {envelope}"
        );
        let escaped = serde_json::to_string(arguments).expect("a string serializes");
        assert!(
            !envelope.contains(escaped.trim_matches('"')),
            "{tool}: the envelope echoes the escaped arguments: {envelope}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Defaults, options, injection
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn a_default_is_applied_when_the_field_is_missing() {
    let outcome = call("book_flight", r#"{"from":"SFO"}"#).await;
    assert_eq!(outcome.to_model_json()["data"]["seats"], 1);
    let outcome = call("search_orders", r#"{"query":"late"}"#).await;
    assert_eq!(
        outcome.to_model_json()["data"].as_array().map(Vec::len),
        Some(3),
        "max_results defaulted to 5, capped at 3 by the tool"
    );
    let outcome = call("search_orders", r#"{"query":"late","max_results":1}"#).await;
    assert_eq!(
        outcome.to_model_json()["data"].as_array().map(Vec::len),
        Some(1)
    );
}

#[tokio::test]
async fn an_option_may_be_omitted_or_null() {
    for arguments in [
        r#"{"from":"SFO"}"#,
        r#"{"from":"SFO","cabin":null}"#,
        r#"{"from":"SFO","cabin":null,"note":null}"#,
    ] {
        let outcome = call("book_flight", arguments).await;
        assert_eq!(outcome.status(), Status::Success, "{arguments}");
        assert_eq!(outcome.to_model_json()["data"]["cabin"], Value::Null);
    }
    let outcome = call("book_flight", r#"{"from":"SFO","cabin":"first"}"#).await;
    assert_eq!(outcome.to_model_json()["data"]["cabin"], "first");
}

#[tokio::test]
async fn state_is_injected_and_a_missing_state_stops_the_build() {
    let outcome = call("count_rows", "{}").await;
    assert_eq!(outcome.to_model_json()["data"], 42);

    let err = Registry::builder()
        .tool(CountRows)
        .build()
        .expect_err("no Db given");
    assert!(
        matches!(&err, BuildError::MissingState { tool, state } if tool == "count_rows" && state.ends_with("Db")),
        "{err:?}"
    );
    assert!(err.to_string().contains(".state("), "{err}");
}

#[tokio::test]
async fn duplicate_tool_names_stop_the_build() {
    let err = Registry::builder()
        .tool(Ping)
        .tool(SearchOrders)
        .tool(Ping)
        .build()
        .expect_err("two tools named ping");
    assert_eq!(err, BuildError::DuplicateTool("ping".into()));
}

#[tokio::test]
async fn context_and_idempotency_key_are_injected_with_one_derivation() {
    let registry = registry();
    let session = Session::new("conv-7").with_idempotency_scope("tenant-3");
    let outcome = registry
        .call_in(&session, ToolCall::new("call_42", "whoami", "{}"))
        .await;
    assert_eq!(
        outcome.to_model_json()["data"],
        json!({
            "key": "tenant-3:whoami:call_42",
            "context_key": "tenant-3:whoami:call_42",
            "call_id": "call_42",
            "tool": "whoami",
            "session": "conv-7",
            "attempt": 1,
        })
    );
    assert_eq!(
        IdempotencyKey::derive("tenant-3", "whoami", "call_42").as_str(),
        "tenant-3:whoami:call_42"
    );

    // The same proposal delivered twice maps to the same key; another call id does not.
    let again = registry
        .call_in(&session, ToolCall::new("call_42", "whoami", "{}"))
        .await;
    assert_eq!(
        again.to_model_json()["data"]["key"],
        "tenant-3:whoami:call_42"
    );
    let other = registry
        .call_in(&session, ToolCall::new("call_43", "whoami", "{}"))
        .await;
    assert_eq!(
        other.to_model_json()["data"]["key"],
        "tenant-3:whoami:call_43"
    );

    // A non-idempotent tool with a key parameter gets it too; outside a conversation, in a
    // scope of the call's own.
    let outcome = registry
        .call(ToolCall::new("call_9", "book_flight", r#"{"from":"SFO"}"#))
        .await;
    let reference = outcome.to_model_json()["data"]["reference"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let scope = reference
        .strip_prefix("anonymous.")
        .and_then(|rest| rest.strip_suffix(":book_flight:call_9/SFO"))
        .unwrap_or_else(|| panic!("{reference}"));
    assert_eq!(scope.len(), 32, "{reference}");
}

#[tokio::test]
async fn from_collected_finds_every_tool_of_the_binary() {
    // `count_rows` needs state, so the plain collection refuses to build...
    assert!(matches!(
        Registry::from_collected(),
        Err(BuildError::MissingState { .. })
    ));
    // ...and the collecting builder takes it.
    let collected = Registry::collected()
        .state(Db { rows: 1 })
        .build()
        .expect("every collected tool builds");
    assert_eq!(collected.names(), registry().names());
    let outcome = collected
        .call(ToolCall::new("c1", "count_rows", "{}"))
        .await;
    assert_eq!(outcome.to_model_json()["data"], 1);
}

// ---------------------------------------------------------------------------------------------
// Many malformed inputs
// ---------------------------------------------------------------------------------------------

/// SplitMix64: a small deterministic generator, so a failing input can be replayed by seed.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

const VALID: &str =
    r#"{"from":"SFO","passengers":2,"cabin":"business","note":"aisle, \"please\" é"}"#;

/// Swaps for a JSON value: another type, an edge value, or structure.
const VALUES: &[&str] = &[
    "null",
    "true",
    "0",
    "-1",
    "1.5",
    "1e400",
    "18446744073709551616",
    "\"\"",
    "\"2\"",
    "[]",
    "[1,2]",
    "{}",
    r#"{"a":1}"#,
    "\"\\ud800\"",
    "\"SFO\"",
    "NaN",
];

const NOISE: &[&str] = &[
    "{", "}", "[", "]", ",", ":", "\"", "\\", " ", "\u{0}", "é", "🙂", "\\u", "/*", "nul", "1",
];

fn mutate(rng: &mut SplitMix64, text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let at = rng.below(chars.len() + 1);
    let (head, tail): (String, String) =
        (chars[..at].iter().collect(), chars[at..].iter().collect());
    match rng.below(7) {
        // Truncation.
        0 => head,
        // A character flipped to another.
        1 => {
            let mut out = head;
            out.push_str(rng.pick::<&str>(NOISE));
            out.extend(tail.chars().skip(1));
            out
        }
        // Noise inserted.
        2 => format!("{head}{}{tail}", rng.pick(NOISE)),
        // A character deleted.
        3 => format!("{head}{}", tail.chars().skip(1).collect::<String>()),
        // A value swapped for another type or an edge value.
        4 => {
            let mut value: Value = serde_json::from_str(VALID).expect("valid");
            let field = *rng.pick(&["from", "passengers", "cabin", "note", "seat"]);
            let swapped = rng.pick(VALUES);
            let mut out = serde_json::to_string(&value).expect("serializes");
            if let Ok(v) = serde_json::from_str::<Value>(swapped) {
                value[field] = v;
                out = serde_json::to_string(&value).expect("serializes");
            } else {
                // Not JSON on its own (NaN, lone surrogates): splice the text in.
                out = out.replacen("2", swapped, 1);
            }
            out
        }
        // A field dropped or duplicated.
        5 => {
            let key = *rng.pick(&[
                "\"from\":\"SFO\",",
                "\"passengers\":2,",
                "\"cabin\":\"business\",",
            ]);
            if rng.below(2) == 0 {
                text.replacen(key, "", 1)
            } else {
                text.replacen(key, &format!("{key}{key}"), 1)
            }
        }
        // Wrapped in something that is not the object.
        _ => format!(
            "{}{text}{}",
            rng.pick(&["[", "\"", "{\"a\":", ""]),
            rng.pick(&["]", "\"", "}", ""])
        ),
    }
}

#[tokio::test]
async fn thousands_of_malformed_inputs_are_classified_at_the_validation_seam() {
    let registry = registry();
    let mut rng = SplitMix64(0x7001_5EED);
    let mut kinds = std::collections::BTreeMap::<&str, usize>::new();
    for round in 0..3_000 {
        // Stack one to three mutations, so the inputs drift far from the valid text.
        let mut text = VALID.to_owned();
        for _ in 0..=rng.below(3) {
            text = mutate(&mut rng, &text);
        }
        let outcome = registry
            .call(ToolCall::new(
                format!("c{round}"),
                "book_flight",
                text.clone(),
            ))
            .await;
        let envelope = outcome.to_model_string();
        let reparsed: Value = serde_json::from_str(&envelope).expect("the envelope is JSON");
        match outcome.status() {
            Status::Success => {
                assert!(outcome.error_kind().is_none());
                assert!(
                    text.trim_start().starts_with('{'),
                    "round {round}: only an object is read as arguments: {text:?}"
                );
                assert_eq!(reparsed["status"], "success");
                *kinds.entry("success").or_default() += 1;
            }
            Status::Error => {
                let kind = outcome.error_kind().expect("an error has a kind");
                assert_eq!(
                    kind.seam(),
                    Seam::Validation,
                    "round {round}: {text:?} -> {envelope}"
                );
                assert!(matches!(
                    kind,
                    ErrorKind::InvalidJson | ErrorKind::SchemaMismatch | ErrorKind::UnknownArgument
                ));
                assert!(
                    !outcome.violations().is_empty(),
                    "round {round}: every rejection lists its problems: {text:?} -> {envelope}"
                );
                for v in outcome.violations() {
                    assert!(!v.message.is_empty());
                    assert!(v.path.is_empty() || v.path.starts_with('/'), "{v:?}");
                }
                assert_eq!(reparsed["error_type"], kind.as_str());
                assert_eq!(outcome.raw_arguments(), Some(text.as_str()));
                *kinds.entry(kind.as_str()).or_default() += 1;
            }
            other => panic!("round {round}: unexpected status {other}: {text:?}"),
        }
    }
    // The generator reaches every validation class, not only one of them.
    for kind in [
        "success",
        "invalid_json",
        "schema_mismatch",
        "unknown_argument",
    ] {
        assert!(kinds.get(kind).copied().unwrap_or(0) > 10, "{kinds:?}");
    }
}
