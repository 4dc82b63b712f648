//! `#[tool(requires_approval)]` through the real pipeline: no approver, a policy approver, and
//! the in-memory `ApprovalQueue` a person decides from; an approval binds the exact arguments.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use serde_json::json;
use toolwright::approval::{Approval, ApprovalQueue, ApprovalRequest};
use toolwright::prelude::*;

/// The wires one registry made: each test builds its own registry with its own counter, so tests
/// running in parallel never see each other's wires.
#[derive(Clone, Default)]
struct Wires(Arc<AtomicU32>);

impl Wires {
    fn count(&self) -> u32 {
        self.0.load(Ordering::SeqCst)
    }

    fn add(&self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// Wire money to an account.
#[tool(requires_approval, timeout_ms = 2000)]
async fn wire_money(
    key: IdempotencyKey,
    /// The account.
    #[arg(sensitive, length(min = 8, max = 34))]
    account: String,
    /// Amount in cents.
    #[arg(range(min = 1, max = 1000000))]
    amount_cents: u32,
    wires: State<Wires>,
) -> Result<String, ToolError> {
    wires.add();
    let _ = account;
    Ok(format!("wired {amount_cents} under {key}"))
}

fn registry() -> Registry {
    bank().0
}

/// A registry and the counter of the wires it makes.
fn bank() -> (Registry, Wires) {
    let wires = Wires::default();
    let registry = Registry::builder()
        .tool(WireMoney)
        .state(wires.clone())
        .build()
        .unwrap();
    (registry, wires)
}

fn wire(id: &str, cents: u32) -> ToolCall {
    ToolCall::new(
        id,
        "wire_money",
        format!(r#"{{"account":"DE89370400440532013000","amount_cents":{cents}}}"#),
    )
}

#[tokio::test]
async fn without_an_approver_the_call_is_refused_and_never_runs() {
    let (registry, wires) = bank();
    let outcome = registry.call(wire("call_1", 101)).await;
    assert_eq!(outcome.error_kind(), Some(ErrorKind::ApprovalDenied));
    assert_eq!(outcome.seam(), Some(Seam::Validation));
    assert!(!outcome.retryable());
    assert!(
        outcome
            .message()
            .unwrap()
            .contains("no one can approve it in this conversation"),
        "{:?}",
        outcome.message()
    );
    assert_eq!(wires.count(), 0);
}

#[tokio::test]
async fn an_approver_reads_the_arguments_as_the_tools_own_typed_args() {
    let policy = |request: &ApprovalRequest<'_>| match request.arguments_as::<WireMoneyArgs>() {
        Ok(args) if args.amount_cents < 10_000 && args.account.starts_with("DE") => {
            Approval::Approved
        }
        Ok(args) => Approval::Denied {
            reason: format!("{} cents need a second person", args.amount_cents),
        },
        Err(e) => Approval::Denied {
            reason: e.to_string(),
        },
    };
    let session = Session::new("conv-typed").with_approver(Arc::new(policy));
    let (registry, wires) = bank();

    let small = registry.call_in(&session, wire("call_1", 202)).await;
    assert_eq!(small.status(), Status::Success, "{}", small.to_model_json());
    let large = registry.call_in(&session, wire("call_2", 20_000)).await;
    assert_eq!(
        large.message(),
        Some("`wire_money` was not approved: 20000 cents need a second person. Do not retry it; tell the user")
    );
    assert_eq!(wires.count(), 1);
}

/// What a reviewer of wires reads: the amount only, in dollars.
#[derive(Debug, serde::Deserialize)]
struct Dollars {
    #[allow(dead_code)]
    amount_cents: String,
}

#[tokio::test]
async fn arguments_that_do_not_read_as_the_approvers_type_name_the_field() {
    let seen = Arc::new(std::sync::Mutex::new(None));
    let policy = {
        let seen = Arc::clone(&seen);
        move |request: &ApprovalRequest<'_>| {
            let read = request.arguments_as::<Dollars>();
            let reason = match &read {
                Ok(_) => "read".to_owned(),
                Err(e) => e.to_string(),
            };
            *seen.lock().unwrap() = Some(read.err().map(|e| e.path().to_owned()));
            Approval::Denied { reason }
        }
    };
    let session = Session::new("conv-wrong-type").with_approver(Arc::new(policy));
    let outcome = registry().call_in(&session, wire("call_1", 202)).await;
    assert_eq!(outcome.error_kind(), Some(ErrorKind::ApprovalDenied));
    let message = outcome.message().unwrap_or_default();
    assert!(
        message.contains("the arguments of `wire_money` do not read as"),
        "{message}"
    );
    assert!(
        message.contains("at `amount_cents`: invalid type: integer `202`, expected a string"),
        "{message}"
    );
    assert_eq!(
        seen.lock().unwrap().clone(),
        Some(Some("amount_cents".to_owned()))
    );
}

#[tokio::test]
async fn a_policy_approver_lets_small_wires_through_and_denies_the_rest() {
    let policy = |request: &ApprovalRequest<'_>| {
        let args: serde_json::Value = serde_json::from_str(request.arguments()).unwrap();
        if args["amount_cents"].as_u64() < Some(10_000) {
            Approval::Approved
        } else {
            Approval::Denied {
                reason: "wires of 100 dollars or more need a second person".into(),
            }
        }
    };
    let session = Session::new("conv-policy").with_approver(Arc::new(policy));
    let registry = registry();

    let small = registry.call_in(&session, wire("call_1", 202)).await;
    assert_eq!(small.status(), Status::Success, "{}", small.to_model_json());

    let large = registry.call_in(&session, wire("call_2", 20_000)).await;
    assert_eq!(large.error_kind(), Some(ErrorKind::ApprovalDenied));
    assert_eq!(
        large.message(),
        Some("`wire_money` was not approved: wires of 100 dollars or more need a second person. Do not retry it; tell the user")
    );
}

#[tokio::test]
async fn a_queued_call_is_pending_until_a_person_approves_that_exact_call() {
    let queue = Arc::new(ApprovalQueue::new());
    let session = Session::new("conv-queue")
        .with_principal("agent:support")
        .with_approver(Arc::clone(&queue));
    let (registry, wires) = bank();

    let first = registry.call_in(&session, wire("call_1", 303)).await;
    assert_eq!(first.status(), Status::Pending);
    assert_eq!(first.attempts(), 0);
    let envelope = first.to_model_json();
    assert_eq!(envelope["status"], "pending");
    assert_eq!(envelope["data"], json!({"ticket": "approval-1"}));
    assert_eq!(
        envelope["message"],
        "`wire_money` is waiting for a person's approval; tell the user it is waiting and do not call it again"
    );
    assert_eq!(wires.count(), 0, "nothing ran");

    // The person sees the call, its sensitive account redacted.
    let waiting = queue.waiting();
    assert_eq!(waiting.len(), 1);
    assert_eq!(waiting[0].ticket, "approval-1");
    assert_eq!(waiting[0].tool, "wire_money");
    assert_eq!(waiting[0].principal.as_deref(), Some("agent:support"));
    assert_eq!(
        waiting[0].arguments,
        r#"{"account":"[redacted]","amount_cents":303}"#
    );

    // Asking again before the decision: still pending, same ticket.
    let again = registry.call_in(&session, wire("call_2", 303)).await;
    assert_eq!(again.to_model_json()["data"]["ticket"], "approval-1");

    // A different amount is a different call: approving one does not approve the other.
    let other = registry.call_in(&session, wire("call_3", 9_999)).await;
    assert_eq!(other.to_model_json()["data"]["ticket"], "approval-2");
    assert!(queue.approve("approval-1"));
    assert!(!queue.approve("approval-1"), "already decided");
    let swapped = registry.call_in(&session, wire("call_4", 9_999)).await;
    assert_eq!(swapped.status(), Status::Pending);

    // The approved call, proposed again (the application re-sends it), runs once.
    let approved = registry.call_in(&session, wire("call_5", 303)).await;
    assert_eq!(
        approved.status(),
        Status::Success,
        "{}",
        approved.to_model_json()
    );
    assert_eq!(wires.count(), 1);
    let once_more = registry.call_in(&session, wire("call_6", 303)).await;
    assert_eq!(
        once_more.status(),
        Status::Pending,
        "an approval is used once"
    );
    assert_eq!(wires.count(), 1);
}

#[tokio::test]
async fn a_denied_ticket_answers_the_next_proposal_with_the_reason() {
    let queue = Arc::new(ApprovalQueue::new());
    let session = Session::new("conv-deny").with_approver(Arc::clone(&queue));
    let registry = registry();
    let pending = registry.call_in(&session, wire("call_1", 404)).await;
    let ticket = pending.to_model_json()["data"]["ticket"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(queue.deny(&ticket, "the account is not on the customer's file"));
    let denied = registry.call_in(&session, wire("call_2", 404)).await;
    assert_eq!(denied.error_kind(), Some(ErrorKind::ApprovalDenied));
    assert!(denied
        .message()
        .unwrap()
        .contains("the account is not on the customer's file"));
    assert!(queue.waiting().is_empty());
}

#[tokio::test]
async fn approvals_do_not_cross_conversations() {
    let queue = Arc::new(ApprovalQueue::new());
    let registry = registry();
    let a = Session::new("conv-a").with_approver(Arc::clone(&queue));
    let b = Session::new("conv-b").with_approver(Arc::clone(&queue));
    registry.call_in(&a, wire("call_1", 505)).await;
    assert!(queue.approve("approval-1"));
    let in_b = registry.call_in(&b, wire("call_1", 505)).await;
    assert_eq!(in_b.status(), Status::Pending);
    let in_a = registry.call_in(&a, wire("call_1", 505)).await;
    assert_eq!(in_a.status(), Status::Success);
}

#[tokio::test]
async fn malformed_arguments_are_refused_before_anyone_is_asked() {
    let asked = Arc::new(AtomicU32::new(0));
    let counter = Arc::clone(&asked);
    let session = Session::new("conv-v").with_approver(Arc::new(move |_: &ApprovalRequest<'_>| {
        counter.fetch_add(1, Ordering::SeqCst);
        Approval::Approved
    }));
    let outcome = registry().call_in(&session, wire("call_1", 0)).await;
    assert_eq!(outcome.error_kind(), Some(ErrorKind::SchemaMismatch));
    assert_eq!(asked.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn a_panicking_approver_refuses_the_call_and_the_registry_keeps_serving() {
    let session = Session::new("conv-p").with_approver(Arc::new(|_: &ApprovalRequest<'_>| {
        panic!("the approvals database is down")
    }));
    let registry = registry();
    let outcome = registry.call_in(&session, wire("call_1", 606)).await;
    assert_eq!(outcome.error_kind(), Some(ErrorKind::ApprovalDenied));
    assert!(outcome.message().unwrap().contains("internal error"));
    let fine = Session::new("conv-q")
        .with_approver(Arc::new(|_: &ApprovalRequest<'_>| Approval::Approved));
    assert_eq!(
        registry.call_in(&fine, wire("call_2", 607)).await.status(),
        Status::Success
    );
}

#[test]
fn the_spec_says_the_tool_requires_approval() {
    assert!(registry().spec("wire_money").unwrap().requires_approval());
}

#[tokio::test]
async fn the_approver_sees_who_asks_for_which_exact_call() {
    use std::sync::Mutex;
    use toolwright::idempotency::Fingerprint;

    /// What the approver saw of one request, owned.
    #[derive(Debug, Clone, PartialEq)]
    struct Seen {
        conversation: String,
        principal: Option<String>,
        scopes: Vec<String>,
        tool: String,
        call_id: String,
        arguments: String,
        redacted: String,
        fingerprint: Fingerprint,
        debug: String,
    }
    let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
    let log = Arc::clone(&seen);
    let session = Session::new("conv-seen")
        .with_principal("agent:support")
        .with_scopes(["payments:write", "orders:read"])
        .with_approver(Arc::new(move |request: &ApprovalRequest<'_>| {
            log.lock().unwrap().push(Seen {
                conversation: request.conversation().to_owned(),
                principal: request.principal().map(str::to_owned),
                scopes: request.scopes().to_vec(),
                tool: request.tool().to_owned(),
                call_id: request.call_id().to_owned(),
                arguments: request.arguments().to_owned(),
                redacted: request.redacted_arguments().to_owned(),
                fingerprint: *request.fingerprint(),
                debug: format!("{request:?}"),
            });
            Approval::Approved
        }));
    let registry = registry();
    for call in [
        wire("call_1", 707),
        wire("call_2", 707),
        wire("call_3", 708),
    ] {
        let outcome = registry.call_in(&session, call).await;
        assert_eq!(
            outcome.status(),
            Status::Success,
            "{}",
            outcome.to_model_json()
        );
    }
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 3);
    let first = &seen[0];
    assert_eq!(first.conversation, "conv-seen");
    assert_eq!(first.principal.as_deref(), Some("agent:support"));
    assert_eq!(first.scopes, ["payments:write", "orders:read"]);
    assert_eq!(first.tool, "wire_money");
    assert_eq!(first.call_id, "call_1");
    assert_eq!(
        first.arguments,
        r#"{"account":"DE89370400440532013000","amount_cents":707}"#
    );
    assert_eq!(
        first.redacted,
        r#"{"account":"[redacted]","amount_cents":707}"#
    );
    // A person reading a log of the request never sees the sensitive account.
    assert!(
        !first.debug.contains("DE89370400440532013000"),
        "{}",
        first.debug
    );
    // The fingerprint binds the tool and the arguments, not the call id.
    assert_eq!(
        first.fingerprint,
        Fingerprint::of("wire_money", &first.arguments)
    );
    assert_eq!(seen[1].call_id, "call_2");
    assert_eq!(seen[1].fingerprint, first.fingerprint);
    assert_ne!(seen[2].fingerprint, first.fingerprint);

    // Without a principal the approver is told so.
    let anonymous =
        Session::new("conv-anon").with_approver(Arc::new(|request: &ApprovalRequest<'_>| {
            assert_eq!(request.principal(), None);
            assert!(request.scopes().is_empty());
            Approval::Approved
        }));
    let outcome = registry.call_in(&anonymous, wire("call_4", 709)).await;
    assert_eq!(outcome.status(), Status::Success);
}

#[tokio::test]
async fn running_one_approved_call_leaves_the_other_tickets_waiting() {
    let queue = Arc::new(ApprovalQueue::new());
    let session = Session::new("conv-two").with_approver(Arc::clone(&queue));
    let (registry, wires) = bank();
    registry.call_in(&session, wire("call_1", 801)).await;
    registry.call_in(&session, wire("call_2", 802)).await;
    let tickets: Vec<String> = queue.waiting().into_iter().map(|w| w.ticket).collect();
    assert_eq!(tickets, ["approval-1", "approval-2"], "oldest first");

    assert!(queue.approve("approval-1"));
    let first = registry.call_in(&session, wire("call_3", 801)).await;
    assert_eq!(first.status(), Status::Success);
    assert!(!queue.approve("approval-1"), "used: the ticket is done");

    // The other call is still waiting and can still be decided.
    assert_eq!(queue.waiting().len(), 1);
    assert!(queue.deny("approval-2", "over the daily limit"));
    assert!(!queue.deny("approval-2", "twice"), "already decided");
    assert!(!queue.approve("approval-9"), "never issued");
    let second = registry.call_in(&session, wire("call_4", 802)).await;
    assert_eq!(second.error_kind(), Some(ErrorKind::ApprovalDenied));
    assert_eq!(wires.count(), 1);
}
