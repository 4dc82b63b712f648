//! Failure paths of authorization through the real pipeline (`Registry::call`): a missing
//! scope and an `authorize` rule that refuses.
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
// Authorization
// ---------------------------------------------------------------------------------------------

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
