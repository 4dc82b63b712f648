//! The order of the guard stages, as an attacker or a confused model would probe it: a call that
//! already ran is never put to a person again, a decision is one principal's, and a session
//! without a tool's scope learns nothing about its arguments.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use toolwright::approval::ApprovalQueue;
use toolwright::prelude::*;

/// Counts the wires of one test's registry (each test owns its counter).
struct Wires(Arc<AtomicU32>);

/// Wire money to an account.
#[tool(requires_approval, timeout_ms = 2000)]
async fn wire(
    wires: State<Wires>,
    key: IdempotencyKey,
    /// The account.
    account: String,
    /// Amount in cents.
    amount_cents: u32,
) -> Result<String, ToolError> {
    wires.0 .0.fetch_add(1, Ordering::SeqCst);
    Ok(format!("wired {amount_cents} to {account} under {key}"))
}

/// Delete old records.
#[tool(read_only, scopes = ["admin"])]
async fn purge(
    /// How many.
    #[arg(range(min = 1, max = 5))]
    count: u32,
) -> Result<u32, ToolError> {
    Ok(count)
}

fn registry() -> (Registry, Arc<AtomicU32>) {
    let wires = Arc::new(AtomicU32::new(0));
    let registry = Registry::builder()
        .tool(Wire)
        .tool(Purge)
        .state(Wires(Arc::clone(&wires)))
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    (registry, wires)
}

fn call(id: &str) -> ToolCall {
    ToolCall::new(
        id,
        "wire",
        r#"{"account":"DE89370400440532013000","amount_cents":500}"#,
    )
}

#[tokio::test]
async fn a_re_delivered_approved_call_is_replayed_never_asked_about_again() {
    let (registry, wires) = registry();
    let queue = Arc::new(ApprovalQueue::new());
    let session = Session::new("conv-1").with_approver(Arc::clone(&queue));

    let first = registry.call_in(&session, call("call_1")).await;
    assert_eq!(first.status(), Status::Pending);
    let ticket = queue.waiting()[0].ticket.clone();
    assert!(queue.approve(&ticket));

    let ran = registry.call_in(&session, call("call_1")).await;
    assert_eq!(ran.status(), Status::Success, "{}", ran.to_model_json());
    assert_eq!(wires.load(Ordering::SeqCst), 1);

    // The provider delivers the same call again: answered from the store, no new ticket that a
    // reviewer could deny after the money moved.
    let again = registry.call_in(&session, call("call_1")).await;
    assert_eq!(again.status(), Status::Success, "{}", again.to_model_json());
    assert!(again.is_replayed());
    assert!(queue.waiting().is_empty(), "{:?}", queue.waiting());
    assert_eq!(wires.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn an_approval_is_for_the_principal_who_asked() {
    let (registry, wires) = registry();
    let queue = Arc::new(ApprovalQueue::new());
    let alice = Session::new("conv-1")
        .with_principal("alice")
        .with_approver(Arc::clone(&queue));
    let mallory = Session::new("conv-1")
        .with_principal("mallory")
        .with_approver(Arc::clone(&queue));

    assert_eq!(
        registry.call_in(&alice, call("call_1")).await.status(),
        Status::Pending
    );
    let ticket = queue.waiting()[0].ticket.clone();
    assert!(queue.approve(&ticket));

    // Same conversation id, same arguments, another principal: not approved by alice's ticket.
    let theirs = registry.call_in(&mallory, call("call_2")).await;
    assert_eq!(
        theirs.status(),
        Status::Pending,
        "{}",
        theirs.to_model_json()
    );
    assert_eq!(wires.load(Ordering::SeqCst), 0);

    let hers = registry.call_in(&alice, call("call_1")).await;
    assert_eq!(hers.status(), Status::Success, "{}", hers.to_model_json());
    assert_eq!(wires.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_session_without_the_scope_learns_nothing_about_the_arguments() {
    let (registry, _) = registry();
    let session = Session::new("conv-1");
    let outcome = registry
        .call_in(
            &session,
            ToolCall::new("c1", "purge", r#"{"count":50,"extra":1}"#),
        )
        .await;
    assert_eq!(outcome.error_kind(), Some(ErrorKind::Unauthorized));
    let envelope = outcome.to_model_json();
    assert!(envelope.get("expected_schema").is_none(), "{envelope}");
    assert!(envelope.get("errors").is_none(), "{envelope}");
    assert_eq!(envelope["retryable"], false);

    // Nor that the tool exists: an unknown name lists only what this session may call.
    let unknown = registry
        .call_in(&session, ToolCall::new("c2", "purge_all", "{}"))
        .await;
    let listed = unknown.to_model_json()["available_tools"].clone();
    assert_eq!(listed, serde_json::json!(["wire"]));

    let admin = Session::new("conv-2").with_scopes(["admin"]);
    let refused = registry
        .call_in(&admin, ToolCall::new("c3", "purge", r#"{"count":50}"#))
        .await;
    assert_eq!(refused.error_kind(), Some(ErrorKind::SchemaMismatch));
}
