//! Failure paths of the outcome through the real pipeline (`Registry::call`): what success
//! looks like for empty results, what is kept and what is shown.
//!
//! Every test builds a registry from `#[tool]` functions and sends it the argument text a model
//! could send. Each failure is checked the way a model and an operator see it: the typed facts
//! (`error_kind`, `seam`, `retryable`) and the envelope (`error_type`, `message`, `errors[].path`),
//! and the message must name the field, what was expected and what came.

// `#[arg(validate = f)]` expands to a closure so that deref coercion applies (`fn(&str)` for a
// `String` argument); clippy reads it as user code. Reported for tool-macros to allow it there.
#![allow(clippy::redundant_closure)]

// The fixtures (one `#[tool]` per failure class) and the helpers every failure-path module
// shares, at the binary's root.
use super::*;

// ---------------------------------------------------------------------------------------------
// Interpretation
// ---------------------------------------------------------------------------------------------

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
