//! The README's guard promises that `tests/it/guard_provenance.rs` and
//! `tests/it/guard_approval.rs` do not make:
//!
//! - `#[arg(grounded = "...")]` on an `Option`: left out, it passes; given, the id must be one
//!   the conversation was given;
//! - an approver that awaits a person inside `review`: the person sees the redacted call, the
//!   call runs once approved, the wait never counts against the tool's timeout, and it is
//!   bounded by `approval_timeout` (5 minutes by default), after which the call is refused and
//!   never runs.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};
use toolwright::approval::{Approval, ApprovalRequest, Approver};
use toolwright::prelude::*;

/// The calls one registry's tools ran (per test: each test builds its own registry).
#[derive(Clone, Default)]
struct Runs(Arc<AtomicU32>);

impl Runs {
    fn add(&self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
    fn count(&self) -> u32 {
        self.0.load(Ordering::SeqCst)
    }
}

/// Resend an invoice, to the order's own customer or to a named contact.
#[tool(idempotent = true)]
async fn resend_invoice(
    /// The order.
    #[arg(grounded = "order")]
    order_id: String,
    /// A contact of the customer's, when not the customer.
    #[arg(grounded = "contact")]
    contact_id: Option<String>,
    runs: State<Runs>,
) -> Result<String, ToolError> {
    runs.add();
    Ok(format!(
        "{order_id} -> {}",
        contact_id.as_deref().unwrap_or("customer")
    ))
}

fn invoice(arguments: &str) -> ToolCall {
    ToolCall::new("call_1", "resend_invoice", arguments)
}

#[tokio::test]
async fn a_grounded_option_may_be_left_out_but_a_given_id_must_be_grounded() {
    let runs = Runs::default();
    let registry = Registry::builder()
        .tool(ResendInvoice)
        .state(runs.clone())
        .build()
        .unwrap();
    let session = Session::new("conv-1");
    session.ground("order", "A1");
    session.ground("contact", "K7");

    for left_out in [
        r#"{"order_id":"A1"}"#,
        r#"{"order_id":"A1","contact_id":null}"#,
    ] {
        let outcome = registry.call_in(&session, invoice(left_out)).await;
        assert_eq!(
            outcome.to_model_json()["data"],
            "A1 -> customer",
            "{left_out}"
        );
    }
    let outcome = registry
        .call_in(&session, invoice(r#"{"order_id":"A1","contact_id":"K7"}"#))
        .await;
    assert_eq!(outcome.to_model_json()["data"], "A1 -> K7");
    assert_eq!(runs.count(), 3);

    // An invented contact, or an order id given where a contact is meant: refused, not run.
    for invented in ["K9", "A1"] {
        let outcome = registry
            .call_in(
                &session,
                invoice(&format!(r#"{{"order_id":"A1","contact_id":"{invented}"}}"#)),
            )
            .await;
        assert_eq!(
            outcome.error_kind(),
            Some(ErrorKind::UngroundedIdentifier),
            "{invented}"
        );
        let envelope = outcome.to_model_json();
        assert_eq!(envelope["errors"][0]["path"], "/contact_id", "{envelope}");
    }
    assert_eq!(runs.count(), 3);
}

/// Wire money (needs a person's approval; 2 s timeout).
#[tool(requires_approval, timeout_ms = 2000)]
async fn wire_money(
    key: IdempotencyKey,
    /// The account.
    #[arg(sensitive)]
    account: String,
    /// Amount in cents.
    amount_cents: u32,
    runs: State<Runs>,
) -> Result<String, ToolError> {
    runs.add();
    let _ = account;
    Ok(format!("wired {amount_cents} under {key}"))
}

const ACCOUNT: &str = "DE89370400440532013000";

/// What a person is shown, and where their answer goes.
struct Question {
    tool: String,
    redacted: String,
    answer: oneshot::Sender<Approval>,
}

/// An approver that asks a person and awaits the answer.
struct Person {
    ask: mpsc::UnboundedSender<Question>,
}

impl Approver for Person {
    fn review<'a>(
        &'a self,
        request: &'a ApprovalRequest<'a>,
    ) -> Pin<Box<dyn Future<Output = Approval> + Send + 'a>> {
        Box::pin(async move {
            let (answer, decision) = oneshot::channel();
            let question = Question {
                tool: request.tool().to_owned(),
                redacted: request.redacted_arguments().to_owned(),
                answer,
            };
            if self.ask.send(question).is_err() {
                return Approval::Denied {
                    reason: "no one is there to ask".into(),
                };
            }
            decision.await.unwrap_or(Approval::Denied {
                reason: "the person went away".into(),
            })
        })
    }
}

fn bank() -> (Registry, Runs, Session, mpsc::UnboundedReceiver<Question>) {
    let runs = Runs::default();
    let registry = Registry::builder()
        .tool(WireMoney)
        .state(runs.clone())
        .build()
        .unwrap();
    let (ask, questions) = mpsc::unbounded_channel();
    let session = Session::new("conv-1").with_approver(Arc::new(Person { ask }));
    (registry, runs, session, questions)
}

fn wire() -> ToolCall {
    ToolCall::new(
        "call_1",
        "wire_money",
        format!(r#"{{"account":"{ACCOUNT}","amount_cents":500}}"#),
    )
}

#[tokio::test(start_paused = true)]
async fn an_async_approver_awaits_a_person_and_the_wait_is_not_the_tools_time() {
    let (registry, runs, session, mut questions) = bank();
    // The person reads the question, thinks for four minutes (the tool's timeout is 2 s), and
    // approves.
    let person = tokio::spawn(async move {
        let question = questions.recv().await.expect("asked");
        tokio::time::sleep(Duration::from_secs(240)).await;
        let _ = question.answer.send(Approval::Approved);
        (question.tool, question.redacted)
    });
    let outcome = registry.call_in(&session, wire()).await;
    assert_eq!(outcome.status(), Status::Success, "{:?}", outcome.message());
    assert_eq!(runs.count(), 1);

    let (tool, redacted) = person.await.unwrap();
    assert_eq!(tool, "wire_money");
    assert!(!redacted.contains(ACCOUNT), "{redacted}");
    assert!(redacted.contains("500"), "{redacted}");
}

#[tokio::test(start_paused = true)]
async fn an_approver_that_never_answers_is_bounded_by_the_approval_timeout() {
    let (registry, runs, session, mut questions) = bank();
    // The person reads the question and never answers (keeps the channel open).
    let person = tokio::spawn(async move {
        let question = questions.recv().await.expect("asked");
        let _unanswered = question.answer;
        std::future::pending::<()>().await;
    });
    let started = tokio::time::Instant::now();
    let outcome = registry.call_in(&session, wire()).await;
    assert_eq!(
        started.elapsed(),
        Duration::from_secs(300),
        "5 minutes by default"
    );
    assert_eq!(outcome.error_kind(), Some(ErrorKind::ApprovalDenied));
    assert!(
        outcome
            .message()
            .unwrap()
            .contains("no decision came within 300 s"),
        "{:?}",
        outcome.message()
    );
    assert_eq!(runs.count(), 0);
    person.abort();
}
