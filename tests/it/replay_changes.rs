//! Recorded calls replayed against a changed registry: what the change would have told the model.

use toolwright::prelude::*;
use toolwright::repair::{Repair, RepairRequest};
use toolwright::replay::{replay, Recorder};

mod v1 {
    use toolwright::prelude::*;

    /// Search orders.
    #[tool(name = "search_orders", read_only, grounds(order = "id"))]
    pub async fn search(
        /// How many.
        #[arg(range(min = 1, max = 20))]
        max_results: u32,
    ) -> Result<Vec<serde_json::Value>, ToolError> {
        Ok((1..=max_results.min(2))
            .map(|n| serde_json::json!({ "id": format!("A100{n}") }))
            .collect())
    }

    /// Cancel an order.
    #[tool(idempotent = true)]
    pub async fn cancel_order(
        /// The order.
        #[arg(grounded = "order")]
        order_id: String,
    ) -> Result<String, ToolError> {
        Ok(format!("cancelled {order_id}"))
    }
}

mod v2 {
    use toolwright::prelude::*;

    /// Search orders (now at most 10 at a time).
    #[tool(name = "search_orders", read_only, grounds(order = "id"))]
    pub async fn search(
        /// How many.
        #[arg(range(min = 1, max = 10))]
        max_results: u32,
    ) -> Result<Vec<serde_json::Value>, ToolError> {
        Ok((1..=max_results.min(2))
            .map(|n| serde_json::json!({ "id": format!("A100{n}") }))
            .collect())
    }
}

fn v1_registry() -> Registry {
    Registry::builder()
        .tool(v1::Search)
        .tool(v1::CancelOrder)
        .build()
        .unwrap()
}

/// A conversation on v1: searches, a cancel of a found order, a malformed call.
async fn recording() -> String {
    let registry = v1_registry();
    let recorder = Recorder::new(Vec::new());
    let session = Session::new("conv-1");
    let calls = [
        ToolCall::new("c1", "search_orders", r#"{"max_results":15}"#),
        ToolCall::new("c2", "cancel_order", r#"{"order_id":"A1001"}"#),
        ToolCall::new("c3", "search_orders", r#"{"max_results":"3"}"#),
        ToolCall::new("c4", "cancel_order", r#"{"order_id":"A9999"}"#),
    ];
    for call in calls {
        let outcome = registry.call_in(&session, call.clone()).await;
        recorder.record(&session, &call, &outcome);
    }
    String::from_utf8(recorder.into_inner()).unwrap()
}

#[tokio::test]
async fn the_same_registry_changes_nothing_and_conversations_are_kept() {
    let lines = recording().await;
    assert_eq!(lines.lines().count(), 4);
    let report = replay(&v1_registry(), lines.lines()).await;
    // c2 passes only because c1 grounded A1001 in the same replayed conversation.
    assert_eq!(
        report.to_string(),
        "4 calls: pass 2/4 · repaired 0 · hard-fail 2 · changed 0 · unreadable 0"
    );
}

#[tokio::test]
async fn a_tighter_rule_shows_which_calls_it_would_have_refused() {
    let lines = recording().await;
    let v2 = Registry::builder()
        .tool(v2::Search)
        .tool(v1::CancelOrder)
        .build()
        .unwrap();
    let report = replay(&v2, lines.lines()).await;
    let changed: Vec<(&str, &serde_json::Value, &serde_json::Value)> = report
        .changed
        .iter()
        .map(|c| {
            (
                c.recorded.call.id(),
                &c.recorded.envelope["status"],
                &c.now["error_type"],
            )
        })
        .collect();
    // The search of 15 now fails, so A1001 is never grounded and the cancel fails too.
    assert_eq!(
        changed,
        [
            (
                "c1",
                &serde_json::json!("success"),
                &serde_json::json!("schema_mismatch")
            ),
            (
                "c2",
                &serde_json::json!("success"),
                &serde_json::json!("ungrounded_identifier")
            ),
        ]
    );
    assert_eq!(report.passed, 0);
}

#[tokio::test]
async fn a_repairer_shows_how_many_failures_it_would_have_saved() {
    let lines = recording().await;
    let with_repair = Registry::builder()
        .tool(v1::Search)
        .tool(v1::CancelOrder)
        .repairer(|request: &RepairRequest<'_>| {
            Repair::Arguments(request.arguments().replace("\"3\"", "3"))
        })
        .build()
        .unwrap();
    let report = replay(&with_repair, lines.lines()).await;
    assert_eq!(report.repaired, 1);
    assert_eq!(report.passed, 3);
    assert_eq!(report.changed.len(), 1);
    assert_eq!(report.changed[0].recorded.call.id(), "c3");
}

#[tokio::test]
async fn lines_that_are_not_recorded_calls_are_counted_not_fatal() {
    let lines = format!("{}\nnot json\n{{\"session\":1}}\n\n", recording().await);
    let report = replay(&v1_registry(), lines.lines()).await;
    assert_eq!((report.calls, report.unreadable), (4, 2));
}

/// Pay with a card.
#[tool(idempotent = true)]
async fn pay(
    /// The card number.
    #[arg(sensitive, pattern = "^[0-9]{16}$")]
    card_number: String,
    /// Amount in cents.
    amount_cents: u32,
) -> Result<String, ToolError> {
    let _ = card_number;
    Ok(format!("paid {amount_cents}"))
}

async fn record_payment(recorder: &Recorder<Vec<u8>>, registry: &Registry) {
    let session = Session::new("conv-pay");
    let calls = [
        ToolCall::new(
            "p1",
            "pay",
            r#"{"card_number":"4111111111111111","amount_cents":500}"#,
        ),
        ToolCall::new(
            "p2",
            "pay",
            r#"{"card_number":"4111-1111","amount_cents":500,"note":"x"}"#,
        ),
    ];
    for call in calls {
        let outcome = registry.call_in(&session, call.clone()).await;
        recorder.record(&session, &call, &outcome);
    }
}

#[tokio::test]
async fn a_redacting_recorder_never_writes_a_sensitive_value() {
    let registry = Registry::builder().tool(Pay).build().unwrap();

    let redacting = Recorder::redacting(&registry, Vec::new());
    record_payment(&redacting, &registry).await;
    let lines = String::from_utf8(redacting.into_inner()).unwrap();
    assert!(!lines.contains("4111"), "{lines}");
    assert_eq!(lines.matches("[redacted]").count(), 2, "{lines}");
    // Everything else is kept as sent: the amount, the undeclared key and its value.
    assert!(lines.contains(r#"\"amount_cents\":500"#), "{lines}");
    assert!(lines.contains(r#"\"note\":\"x\""#), "{lines}");

    // A plain recorder keeps the arguments as sent (and says so in its docs).
    let raw = Recorder::new(Vec::new());
    record_payment(&raw, &registry).await;
    let raw_lines = String::from_utf8(raw.into_inner()).unwrap();
    assert!(raw_lines.contains("4111111111111111"), "{raw_lines}");
}
