//! Issue 16, through the real pipeline: what an approver approved and what an idempotency key
//! covers are exactly the values the tool receives (a `null` that clears a field counts, a
//! `u128` is exact), and what the model is told never quotes a sensitive value back.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use toolwright::approval::ApprovalQueue;
use toolwright::prelude::*;

static PROFILE_UPDATES: AtomicU32 = AtomicU32::new(0);

/// Update a customer profile; a field set to null is cleared.
#[tool(requires_approval)]
async fn update_profile(
    /// The fields to set; null clears one.
    fields: HashMap<String, Option<String>>,
    /// How to apply the update.
    #[arg(default = Some("merge".to_string()))]
    mode: Option<String>,
    /// A note for the audit log.
    note: Option<String>,
) -> Result<String, ToolError> {
    PROFILE_UPDATES.fetch_add(1, Ordering::SeqCst);
    Ok(format!("{fields:?} {mode:?} {note:?}"))
}

/// Credit an account with an amount in the ledger's smallest unit.
#[tool(requires_approval)]
async fn credit_ledger(
    /// Amount in the smallest unit.
    amount: u128,
) -> Result<String, ToolError> {
    Ok(amount.to_string())
}

/// Set profile fields, once per call id.
#[tool(idempotent = false)]
async fn set_fields(
    key: IdempotencyKey,
    /// The fields to set; null clears one.
    fields: HashMap<String, Option<String>>,
    /// Amount in the smallest unit.
    amount: Option<u128>,
    /// A note for the audit log.
    note: Option<String>,
) -> Result<String, ToolError> {
    Ok(format!("{key} {fields:?} {amount:?} {note:?}"))
}

fn registry() -> Registry {
    Registry::builder()
        .tool(UpdateProfile)
        .tool(CreditLedger)
        .tool(SetFields)
        .build()
        .unwrap()
}

/// Has `arguments` approved for `tool` in a fresh session, then proposes `other`: is it let
/// through on the first approval?
async fn approved_covers(tool: &str, arguments: &str, other: &str) -> bool {
    let queue = Arc::new(ApprovalQueue::new());
    let session = Session::new("conv-approve").with_approver(Arc::clone(&queue));
    let registry = registry();
    let first = registry
        .call_in(&session, ToolCall::new("call_1", tool, arguments))
        .await;
    assert_eq!(first.status(), Status::Pending, "{}", first.to_model_json());
    let waiting = queue.waiting();
    assert!(queue.approve(&waiting[0].ticket));
    let second = registry
        .call_in(&session, ToolCall::new("call_2", tool, other))
        .await;
    match second.status() {
        Status::Success => true,
        Status::Pending => false,
        _ => panic!("{}", second.to_model_json()),
    }
}

#[tokio::test]
async fn approving_no_change_does_not_approve_clearing_fields() {
    let before = PROFILE_UPDATES.load(Ordering::SeqCst);
    assert!(
        !approved_covers(
            "update_profile",
            r#"{"fields":{}}"#,
            r#"{"fields":{"email":null,"phone":null,"address":null}}"#,
        )
        .await
    );
    assert_eq!(PROFILE_UPDATES.load(Ordering::SeqCst), before);
}

#[tokio::test]
async fn approving_the_default_does_not_approve_an_explicit_null() {
    assert!(
        !approved_covers(
            "update_profile",
            r#"{"fields":{}}"#,
            r#"{"fields":{},"mode":null}"#
        )
        .await
    );
}

#[tokio::test]
async fn an_approval_covers_the_same_values_however_written() {
    // `note: null` is `None` as much as no note; `mode` left out is its default.
    assert!(
        approved_covers(
            "update_profile",
            r#"{"fields":{"email":"a@b.c"}}"#,
            r#"{ "note": null, "mode": "merge", "fields": {"email": "a\u0040b.c"} }"#,
        )
        .await
    );
}

#[tokio::test]
async fn approving_one_u128_amount_does_not_approve_a_neighbour() {
    assert!(
        !approved_covers(
            "credit_ledger",
            r#"{"amount":100000000000000000000000000000}"#,
            r#"{"amount":100000000000000000000000009999}"#,
        )
        .await
    );
    assert!(
        approved_covers(
            "credit_ledger",
            r#"{"amount":100000000000000000000000000000}"#,
            r#"{"amount": 100000000000000000000000000000 }"#,
        )
        .await
    );
}

/// Runs `first` and then `second` under one call id of `set_fields`: the second's error kind
/// (`None`: replayed).
async fn same_call_id(first: &str, second: &str) -> Option<ErrorKind> {
    let session = Session::new("conv-idem");
    let registry = registry();
    let one = registry
        .call_in(&session, ToolCall::new("call_1", "set_fields", first))
        .await;
    assert_eq!(one.status(), Status::Success, "{}", one.to_model_json());
    let two = registry
        .call_in(&session, ToolCall::new("call_1", "set_fields", second))
        .await;
    assert!(
        two.error_kind().is_some() || two.is_replayed(),
        "{}",
        two.to_model_json()
    );
    two.error_kind()
}

#[tokio::test]
async fn an_added_null_map_value_under_the_same_call_id_is_a_mismatch() {
    assert_eq!(
        same_call_id(r#"{"fields":{}}"#, r#"{"fields":{"phone":null}}"#).await,
        Some(ErrorKind::IdempotencyMismatch)
    );
    assert_eq!(
        same_call_id(r#"{"fields":{}}"#, r#"{"fields":{},"note":null}"#).await,
        None,
        "an Option left out or null is the same call"
    );
}

#[tokio::test]
async fn another_u128_under_the_same_call_id_is_a_mismatch() {
    assert_eq!(
        same_call_id(
            r#"{"fields":{},"amount":100000000000000000000000000000}"#,
            r#"{"fields":{},"amount":100000000000000000000000009999}"#,
        )
        .await,
        Some(ErrorKind::IdempotencyMismatch)
    );
}

/// Pay an order by card.
#[tool(idempotent = true)]
async fn pay_by_card(
    /// The card number.
    #[arg(sensitive, pattern = "^[0-9]{16}$")]
    card_number: String,
    /// The card's security code.
    #[arg(sensitive, one_of = ["000", "999"])]
    cvv: String,
    /// The account to charge.
    #[arg(sensitive, grounded = "account")]
    account_id: String,
    /// The order.
    order_id: String,
) -> Result<String, ToolError> {
    let _ = (card_number, cvv, account_id);
    Ok(order_id)
}

/// The envelope of one `pay_by_card` call, as the model reads it.
async fn pay(arguments: &str) -> String {
    let registry = Registry::builder().tool(PayByCard).build().unwrap();
    let outcome = registry
        .call(ToolCall::new("call_1", "pay_by_card", arguments))
        .await;
    assert_eq!(outcome.status(), Status::Error);
    outcome.to_model_json().to_string()
}

#[tokio::test]
async fn a_sensitive_value_that_breaks_its_rules_is_never_quoted_back() {
    let envelope = pay(
        r#"{"card_number":"4111 1111 1111 1111","cvv":"7319","account_id":"acct_93817","order_id":"A1"}"#,
    )
    .await;
    for secret in ["4111", "7319", "acct_93817"] {
        assert!(!envelope.contains(secret), "{secret} in {envelope}");
    }
    assert!(envelope.contains("a string of 19 characters"), "{envelope}");
    assert!(envelope.contains("card_number"), "{envelope}");
    assert!(
        envelope.contains("^[0-9]{16}$"),
        "the expectation stays: {envelope}"
    );
}

#[tokio::test]
async fn an_ungrounded_sensitive_id_is_not_quoted_back() {
    let envelope =
        pay(r#"{"card_number":"4111111111111111","cvv":"000","account_id":"acct_93817","order_id":"A1"}"#)
            .await;
    assert!(envelope.contains("ungrounded_identifier"), "{envelope}");
    assert!(!envelope.contains("acct_93817"), "{envelope}");
    assert!(envelope.contains("account_id"), "{envelope}");
}

#[tokio::test]
async fn a_sensitive_value_of_the_wrong_type_is_not_quoted_back() {
    let envelope =
        pay(r#"{"card_number":4111111111111111,"cvv":"000","account_id":"x","order_id":"A1"}"#)
            .await;
    assert!(envelope.contains("schema_mismatch"), "{envelope}");
    assert!(!envelope.contains("4111"), "{envelope}");
    assert!(envelope.contains("an integer"), "{envelope}");
}

/// Reserve seats.
#[tool(idempotent = true)]
async fn reserve(
    /// Seats.
    b: Option<u32>,
    /// A 64-bit counter.
    c: Option<u64>,
    /// An offset.
    d: Option<i8>,
    /// Floors, at least 1 (declared).
    #[arg(range(min = 1))]
    floors: Option<u16>,
) -> Result<String, ToolError> {
    Ok(format!("{b:?} {c:?} {d:?} {floors:?}"))
}

/// The message and the one violation of a `reserve` call that fails.
async fn reserve_fails(arguments: &str) -> (String, toolwright::serde_json::Value) {
    let registry = Registry::builder().tool(Reserve).build().unwrap();
    let outcome = registry
        .call(ToolCall::new("call_1", "reserve", arguments))
        .await;
    let envelope = outcome.to_model_json();
    assert_eq!(envelope["error_type"], "schema_mismatch", "{envelope}");
    assert_eq!(
        envelope["errors"].as_array().map(Vec::len),
        Some(1),
        "{envelope}"
    );
    (
        envelope["message"].as_str().unwrap().to_owned(),
        envelope["errors"][0].clone(),
    )
}

#[tokio::test]
async fn an_integer_too_large_for_its_type_is_out_of_range_not_badly_written() {
    let (message, error) = reserve_fails(r#"{"b":4294967296}"#).await;
    assert_eq!(
        message,
        "`b` is out of range for a 32-bit unsigned integer (0 to 4294967295), got 4294967296"
    );
    assert_eq!(error["rule"], "range");
    assert_eq!(error["expected"], "an integer from 0 to 4294967295");

    let (message, _) = reserve_fails(r#"{"d":-129}"#).await;
    assert_eq!(
        message,
        "`d` is out of range for an 8-bit signed integer (-128 to 127), got -129"
    );
    // Beyond 64 bits serde_json reads a float; the message still quotes what was written.
    let (message, _) = reserve_fails(r#"{"c":18446744073709551616}"#).await;
    assert_eq!(
        message,
        "`c` is out of range for a 64-bit unsigned integer (0 to 18446744073709551615), got 18446744073709551616"
    );
    let (message, _) = reserve_fails(r#"{"c":-1}"#).await;
    assert!(
        message.contains("out of range") || message.contains("at least 0"),
        "{message}"
    );
}

#[tokio::test]
async fn minus_zero_for_an_integer_is_explained() {
    let (message, error) = reserve_fails(r#"{"b":-0}"#).await;
    assert_eq!(message, "`b`: -0 is not accepted for an integer; write 0");
    assert_eq!(error["got"], "-0");
    // A float-written integer keeps its own advice.
    let (message, _) = reserve_fails(r#"{"b":5.0}"#).await;
    assert!(
        message.contains("without a decimal point or exponent"),
        "{message}"
    );
}

#[test]
fn bounded_integer_types_carry_their_range_in_the_schema() {
    let registry = Registry::builder().tool(Reserve).build().unwrap();
    let schema = registry.spec("reserve").unwrap().input_schema();
    let b = &schema["properties"]["b"];
    assert_eq!(
        (b["minimum"].as_u64(), b["maximum"].as_u64()),
        (Some(0), Some(4_294_967_295))
    );
    let d = &schema["properties"]["d"];
    assert_eq!(
        (d["minimum"].as_i64(), d["maximum"].as_i64()),
        (Some(-128), Some(127))
    );
    // A declared bound stricter than the type's is kept.
    let floors = &schema["properties"]["floors"];
    assert_eq!(
        (floors["minimum"].as_u64(), floors["maximum"].as_u64()),
        (Some(1), Some(65_535))
    );
    // 64-bit bounds are not written: providers read numbers as doubles, which round them.
    assert!(schema["properties"]["c"].get("maximum").is_none());
}

/// `set_fields` arguments of exactly `len` bytes.
fn arguments_of_length(len: usize) -> String {
    let frame = r#"{"fields":{},"note":""}"#;
    let pad = "x".repeat(len - frame.len());
    format!(r#"{{"fields":{{}},"note":"{pad}"}}"#)
}

#[tokio::test]
async fn arguments_over_the_size_limit_are_refused_before_parsing() {
    let registry = registry();
    let limit = toolwright::validate::DEFAULT_MAX_ARGUMENT_BYTES;
    let at_limit = registry
        .call(ToolCall::new(
            "call_1",
            "set_fields",
            arguments_of_length(limit),
        ))
        .await;
    assert_eq!(
        at_limit.status(),
        Status::Success,
        "{}",
        at_limit.message().unwrap_or("")
    );

    // One byte more, and also broken JSON: refused on its size alone.
    let mut over = arguments_of_length(limit + 1);
    over.push_str(",oops");
    let outcome = registry
        .call(ToolCall::new("call_2", "set_fields", over.clone()))
        .await;
    assert_eq!(outcome.error_kind(), Some(ErrorKind::BadRequest));
    let envelope = outcome.to_model_json();
    assert_eq!(envelope["retryable"], true);
    let expected = format!(
        "the arguments are {} bytes long, more than the 1048576 bytes this tool accepts",
        over.len()
    );
    assert!(
        envelope["message"].as_str().unwrap().starts_with(&expected),
        "{envelope}"
    );
}

#[tokio::test]
async fn the_size_limit_is_configurable() {
    let registry = Registry::builder()
        .tool(SetFields)
        .max_argument_bytes(64)
        .build()
        .unwrap();
    let fits = registry
        .call(ToolCall::new(
            "call_1",
            "set_fields",
            arguments_of_length(64),
        ))
        .await;
    assert_eq!(fits.status(), Status::Success);
    let refused = registry
        .call(ToolCall::new(
            "call_2",
            "set_fields",
            arguments_of_length(65),
        ))
        .await;
    assert_eq!(refused.error_kind(), Some(ErrorKind::BadRequest));
    assert!(refused
        .message()
        .unwrap()
        .contains("65 bytes long, more than the 64 bytes"));
}

#[tokio::test]
async fn arguments_written_as_an_array_are_the_wrong_type_not_read_by_position() {
    // The schema says object. The registry refuses an array before reading it...
    let registry = Registry::builder().tool(Reserve).build().unwrap();
    let outcome = registry
        .call(ToolCall::new("call_1", "reserve", "[1, 2, 3, 4]"))
        .await;
    let envelope = outcome.to_model_json();
    assert_eq!(envelope["error_type"], "schema_mismatch", "{envelope}");
    assert_eq!(
        envelope["message"],
        "the arguments must be a JSON object, got an array of 4 items"
    );
    // ...and the arguments struct, read directly (a test, a replay), refuses it too rather
    // than taking the values in the parameters' order.
    let direct = toolwright::serde_json::from_str::<ReserveArgs>("[1, 2, 3, 4]");
    assert_eq!(
        direct.map(|_| ()).map_err(|e| e.to_string()),
        Err("invalid type: sequence, expected struct ReserveArgs at line 1 column 0".to_string())
    );
    let object = toolwright::serde_json::from_str::<ReserveArgs>(r#"{"b": 1, "floors": 2}"#);
    let object = object.map(|args| (args.b, args.c, args.floors));
    assert_eq!(
        object.map_err(|e| e.to_string()),
        Ok((Some(1), None, Some(2)))
    );
}
