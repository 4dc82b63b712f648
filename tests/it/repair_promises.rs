//! The README's repair-pass promises that `tests/it/repair_pass.rs` does not make:
//!
//! - provenance (`ungrounded_identifier`) and authorization (`unauthorized`, by a rule or by
//!   missing scopes) are never repaired, even by a repairer that would turn the call into one
//!   that passes;
//! - every repair pass is logged on `toolwright::repair` with the tool, the call id, the error
//!   type and its result, including a repairer that gives up (`abort`), panics, or does not
//!   answer in time.
//!
//! Events are captured with a subscriber scoped to the test's thread.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use toolwright::prelude::*;
use toolwright::repair::{Repair, RepairRequest, Repairer};

use crate::support::capture;

/// Refund an order the conversation has seen, within the session's limit.
#[tool(idempotent = true, authorize = within_limit)]
async fn refund(
    /// The order.
    #[arg(grounded = "order")]
    order_id: String,
    /// Cents.
    amount: u32,
) -> Result<String, ToolError> {
    Ok(format!("refunded {amount} on {order_id}"))
}

fn within_limit(args: &RefundArgs, _: &Session) -> Result<(), ToolError> {
    if args.amount <= 1000 {
        Ok(())
    } else {
        Err(ToolError::permission_denied(
            "refunds above 10.00 need a supervisor",
        ))
    }
}

/// Close an account (needs the `admin` scope).
#[tool(idempotent = true, scopes = ["admin"])]
async fn close_account(account: String) -> Result<String, ToolError> {
    Ok(format!("closed {account}"))
}

/// A repairer that "fixes" any call into one that would pass (a grounded id, a small amount,
/// the right account), counting how often it was asked.
fn fixer(asked: &Arc<AtomicU32>) -> impl Repairer {
    let asked = Arc::clone(asked);
    move |request: &RepairRequest<'_>| {
        asked.fetch_add(1, Ordering::SeqCst);
        Repair::Arguments(match request.tool() {
            "refund" => r#"{"order_id":"A1","amount":5}"#.into(),
            _ => r#"{"account":"ACC-1"}"#.into(),
        })
    }
}

fn registry(repairer: impl Repairer) -> Registry {
    Registry::builder()
        .tool(Refund)
        .tool(CloseAccount)
        .repairer(repairer)
        .build()
        .unwrap()
}

fn grounded_session() -> Session {
    let session = Session::new("conv-1");
    session.ground("order", "A1");
    session
}

#[tokio::test]
async fn an_ungrounded_id_is_never_repaired() {
    let asked = Arc::new(AtomicU32::new(0));
    let registry = registry(fixer(&asked));
    let outcome = registry
        .call_in(
            &grounded_session(),
            ToolCall::new("c1", "refund", r#"{"order_id":"A9","amount":5}"#),
        )
        .await;
    assert_eq!(outcome.error_kind(), Some(ErrorKind::UngroundedIdentifier));
    assert!(!outcome.is_repaired());
    assert_eq!(asked.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn an_authorization_failure_is_never_repaired() {
    let asked = Arc::new(AtomicU32::new(0));
    let registry = registry(fixer(&asked));
    // Refused by the tool's rule.
    let outcome = registry
        .call_in(
            &grounded_session(),
            ToolCall::new("c1", "refund", r#"{"order_id":"A1","amount":5000}"#),
        )
        .await;
    assert_eq!(outcome.error_kind(), Some(ErrorKind::Unauthorized));
    // Refused for a missing scope, with arguments that also fail on their form.
    let outcome = registry
        .call_in(
            &grounded_session(),
            ToolCall::new("c2", "close_account", r#"{"account":7}"#),
        )
        .await;
    assert_eq!(outcome.error_kind(), Some(ErrorKind::Unauthorized));
    assert_eq!(asked.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn a_form_error_is_repaired_but_the_repaired_call_is_still_checked_for_provenance() {
    // The control for the two tests above: the same repairer is asked for a form error, and
    // what it answers passes every guard again (here: a grounded id).
    let asked = Arc::new(AtomicU32::new(0));
    let registry = registry(fixer(&asked));
    let outcome = registry
        .call_in(
            &grounded_session(),
            ToolCall::new("c1", "refund", r#"{"order_id":"A1","amount":"5"}"#),
        )
        .await;
    assert_eq!(outcome.status(), Status::Success, "{:?}", outcome.message());
    assert!(outcome.is_repaired());
    assert_eq!(asked.load(Ordering::SeqCst), 1);
}

/// A repairer that never answers.
struct Stuck;

impl Repairer for Stuck {
    fn repair<'a>(
        &'a self,
        _: &'a RepairRequest<'a>,
    ) -> Pin<Box<dyn Future<Output = Repair> + Send + 'a>> {
        Box::pin(std::future::pending())
    }
}

/// Sends `refund` arguments with an amount as text, and returns the repair events.
async fn one_repair_pass(registry: Registry) -> Vec<capture::Event> {
    let (captured, guard) = capture::install();
    let outcome = registry
        .call_in(
            &grounded_session(),
            ToolCall::new("call_9", "refund", r#"{"order_id":"A1","amount":"5"}"#),
        )
        .await;
    drop(guard);
    assert_eq!(outcome.error_kind(), Some(ErrorKind::SchemaMismatch));
    assert!(!outcome.is_repaired());
    captured.of("toolwright::repair")
}

fn assert_logged(events: &[capture::Event], result: &str) {
    let [event] = events else {
        panic!("one repair event: {events:?}")
    };
    assert_eq!(event.get("tool"), Some("refund"));
    assert_eq!(event.get("call_id"), Some("call_9"));
    assert_eq!(event.get("error_type"), Some("schema_mismatch"));
    assert_eq!(event.get("result"), Some(result));
}

#[tokio::test]
async fn a_repairer_that_gives_up_is_logged_as_abort() {
    let events = one_repair_pass(registry(|_: &RepairRequest<'_>| Repair::Abort)).await;
    assert_logged(&events, "abort");
}

#[tokio::test]
async fn a_repairer_that_panics_is_logged_as_such() {
    let events = one_repair_pass(registry(|_: &RepairRequest<'_>| -> Repair {
        panic!("the repair model is down")
    }))
    .await;
    assert_logged(&events, "the repairer panicked");
}

#[tokio::test(start_paused = true)]
async fn a_repairer_that_does_not_answer_in_time_is_logged_as_such() {
    let started = tokio::time::Instant::now();
    let events = one_repair_pass(
        Registry::builder()
            .tool(Refund)
            .repairer(Stuck)
            .build()
            .unwrap(),
    )
    .await;
    assert_logged(&events, "the repairer did not answer in time");
    // The default bound: 10 s.
    assert_eq!(started.elapsed(), Duration::from_secs(10));
}
