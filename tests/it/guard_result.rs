//! Guard rails on what a tool answers: the result size cap and an application's ResultGuard
//! (redact a field, refuse a result), applied before the envelope, the logs and the idempotency
//! store see the result.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use serde_json::{json, Value};
use toolwright::guard::output::ResultCheck;
use toolwright::prelude::*;

/// A customer record.
#[tool(read_only)]
async fn get_customer(id: String) -> Result<Value, ToolError> {
    Ok(json!({"id": id, "name": "Ada", "email": "ada@example.com"}))
}

/// Many rows.
#[tool(read_only)]
async fn dump(rows: u32) -> Result<Vec<String>, ToolError> {
    Ok((0..rows).map(|i| format!("row {i:05}")).collect())
}

/// Charge a card, once.
#[tool(idempotent = false)]
async fn charge(runs: State<Arc<AtomicU32>>, amount: u32) -> Result<Value, ToolError> {
    runs.fetch_add(1, Ordering::SeqCst);
    Ok(json!({"amount": amount, "card": "4111111111111111"}))
}

fn redact_email(check: &ResultCheck<'_>) -> Result<Option<Value>, ToolError> {
    if !check.text().contains("email") && !check.text().contains("card") {
        return Ok(None);
    }
    let mut value = check.value()?;
    for field in ["email", "card"] {
        if let Some(v) = value.get_mut(field) {
            *v = json!("[redacted]");
        }
    }
    Ok(Some(value))
}

#[tokio::test]
async fn a_result_over_the_cap_is_invalid_result_that_the_model_may_retry_narrower() {
    let registry = Registry::builder()
        .tool(Dump)
        .max_result_bytes(1000)
        .build()
        .unwrap();
    let small = registry
        .call(ToolCall::new("c1", "dump", r#"{"rows":10}"#))
        .await;
    assert_eq!(small.status(), Status::Success);
    let big = registry
        .call(ToolCall::new("c2", "dump", r#"{"rows":1000}"#))
        .await;
    assert_eq!(big.error_kind(), Some(ErrorKind::InvalidResult));
    assert!(big.to_model_json()["retryable"].as_bool().unwrap());
    let message = big.to_model_json()["message"].as_str().unwrap().to_owned();
    assert!(
        message.contains("over this registry's limit of 1000 bytes"),
        "{message}"
    );
    assert!(!big.to_model_string().contains("row 00999"));
}

#[tokio::test]
async fn a_guard_redacts_fields_before_the_model_and_the_idempotency_store_see_them() {
    let runs = Arc::new(AtomicU32::new(0));
    let registry = Registry::builder()
        .tool(GetCustomer)
        .tool(Charge)
        .state(Arc::clone(&runs))
        .result_guard(redact_email)
        .build()
        .unwrap();
    let customer = registry
        .call(ToolCall::new("c1", "get_customer", r#"{"id":"C1"}"#))
        .await;
    assert_eq!(
        customer.to_model_json()["data"],
        json!({"id": "C1", "name": "Ada", "email": "[redacted]"})
    );
    let session = Session::new("conv-1");
    let charge = || ToolCall::new("k1", "charge", r#"{"amount":5}"#);
    let first = registry.call_in(&session, charge()).await;
    let replay = registry.call_in(&session, charge()).await;
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    for outcome in [&first, &replay] {
        assert!(
            !outcome.to_model_string().contains("4111111111111111"),
            "{}",
            outcome.to_model_string()
        );
    }
}

#[tokio::test]
async fn a_guard_can_refuse_a_result_with_its_own_kind() {
    let registry = Registry::builder()
        .tool(GetCustomer)
        .result_guard(|check: &ResultCheck<'_>| {
            if check.session().principal().is_none() && check.tool().name() == "get_customer" {
                return Err(ToolError::permission_denied(
                    "customer records need a signed-in user",
                ));
            }
            Ok(None)
        })
        .build()
        .unwrap();
    let anonymous = registry
        .call(ToolCall::new("c1", "get_customer", r#"{"id":"C1"}"#))
        .await;
    assert_eq!(anonymous.error_kind(), Some(ErrorKind::PermissionDenied));
    assert!(!anonymous.to_model_string().contains("ada@example.com"));
    let signed_in = registry
        .call_in(
            &Session::new("c").with_principal("user:ada"),
            ToolCall::new("c2", "get_customer", r#"{"id":"C1"}"#),
        )
        .await;
    assert_eq!(signed_in.status(), Status::Success);
}

// ---------------------------------------------------------------------------------------------
// The call guard: after validation, before anything runs

#[tokio::test]
async fn a_call_guard_refuses_valid_calls_before_the_tool_runs_and_sees_only_valid_ones() {
    let runs = Arc::new(AtomicU32::new(0));
    let seen = Arc::new(AtomicU32::new(0));
    let counter = Arc::clone(&seen);
    let registry = Registry::builder()
        .tool(Charge)
        .state(Arc::clone(&runs))
        .call_guard(move |call: &toolwright::guard::policy::CallCheck<'_>| {
            counter.fetch_add(1, Ordering::SeqCst);
            let amount: Value = serde_json::from_str(call.arguments()).unwrap();
            if amount["amount"].as_u64() > Some(100) && call.session().principal().is_none() {
                return Err(ToolError::unauthorized(
                    "charges over 100 need a signed-in user; tell the user",
                ));
            }
            Ok(())
        })
        .build()
        .unwrap();
    let invalid = registry
        .call(ToolCall::new("k0", "charge", r#"{"amount":"lots"}"#))
        .await;
    assert_eq!(invalid.error_kind(), Some(ErrorKind::SchemaMismatch));
    assert_eq!(
        seen.load(Ordering::SeqCst),
        0,
        "the guard sees valid calls only"
    );
    let refused = registry
        .call_in(
            &Session::new("c1"),
            ToolCall::new("k1", "charge", r#"{"amount":500}"#),
        )
        .await;
    assert_eq!(refused.error_kind(), Some(ErrorKind::Unauthorized));
    assert!(refused.to_model_string().contains("signed-in user"));
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    let allowed = registry
        .call_in(
            &Session::new("c1"),
            ToolCall::new("k2", "charge", r#"{"amount":5}"#),
        )
        .await;
    assert_eq!(allowed.status(), Status::Success);
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    assert_eq!(seen.load(Ordering::SeqCst), 2);
}
