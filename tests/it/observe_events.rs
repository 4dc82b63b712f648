//! The `tracing` events of the pipeline, captured from real calls: one per call and one per
//! attempt, the fields a trace needs, and the arguments never logged unless asked, then with the
//! sensitive fields redacted.

use capture::capture;
use toolwright::prelude::*;
use toolwright::ArgumentLog;

use crate::support::capture;

/// Charge a card.
#[tool(timeout_ms = 1000)]
async fn charge_card(
    key: IdempotencyKey,
    /// The card number.
    #[arg(sensitive, length(min = 12, max = 19))]
    card_number: String,
    /// Amount in cents.
    #[arg(range(min = 1, max = 100000))]
    amount_cents: u32,
) -> Result<String, ToolError> {
    let _ = card_number;
    if amount_cents == 666 {
        return Err(ToolError::from_status(503, "the card network answered 503"));
    }
    Ok(format!("charged {amount_cents} under {key}"))
}

/// Look up an order.
#[tool(read_only, timeout_ms = 1000)]
async fn get_order(order_id: String) -> Result<String, ToolError> {
    Err(ToolError::not_found(format!("no order {order_id}")))
}

const CARD: &str = "4111111111111111";

fn registry(mode: ArgumentLog) -> Registry {
    Registry::builder()
        .tool(ChargeCard)
        .tool(GetOrder)
        .log_arguments(mode)
        .build()
        .unwrap()
}

fn charge(id: &str, card: &str, cents: u32) -> ToolCall {
    ToolCall::new(
        id,
        "charge_card",
        format!(r#"{{"card_number":"{card}","amount_cents":{cents}}}"#),
    )
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_successful_call_is_one_debug_event_with_its_attempt() {
    let registry = registry(ArgumentLog::Off);
    let seen = capture(async {
        registry
            .call_in(&Session::new("anonymous"), charge("call_1", CARD, 500))
            .await;
    })
    .await;

    let calls = seen.of("toolwright::call");
    assert_eq!(calls.len(), 1, "{calls:?}");
    let call = &calls[0];
    assert_eq!(call.level, tracing::Level::DEBUG);
    assert_eq!(call.get("tool"), Some("charge_card"));
    assert_eq!(call.get("call_id"), Some("call_1"));
    assert_eq!(call.get("status"), Some("success"));
    assert_eq!(call.get("attempts"), Some("1"));
    assert_eq!(
        call.get("idempotency_key"),
        Some("anonymous:charge_card:call_1")
    );
    assert_eq!(call.get("error_type"), None);
    assert!(call.get("elapsed_ms").is_some());

    let attempts = seen.of("toolwright::attempt");
    assert_eq!(attempts.len(), 1, "{attempts:?}");
    assert_eq!(attempts[0].get("attempt"), Some("1"));
    assert_eq!(attempts[0].get("result"), Some("success"));
    assert_eq!(attempts[0].get("call_id"), Some("call_1"));
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_failed_call_is_an_info_event_with_its_classification_and_every_attempt() {
    let registry = registry(ArgumentLog::Off);
    let seen = capture(async {
        registry
            .call_in(&Session::new("anonymous"), charge("call_2", CARD, 666))
            .await;
    })
    .await;

    let call = &seen.of("toolwright::call")[0];
    assert_eq!(call.level, tracing::Level::INFO);
    assert_eq!(call.get("status"), Some("error"));
    assert_eq!(call.get("error_type"), Some("unavailable"));
    assert_eq!(call.get("seam"), Some("execution"));
    // Not idempotent, but it takes a key: the 503 is retried under the same key.
    assert_eq!(call.get("attempts"), Some("3"));
    assert_eq!(call.get("retry_stop"), Some("attempts"));
    let results: Vec<_> = seen
        .of("toolwright::attempt")
        .iter()
        .map(|a| {
            (
                a.get("attempt").unwrap_or_default().to_owned(),
                a.get("result").unwrap_or_default().to_owned(),
                a.get("idempotency_key").unwrap_or_default().to_owned(),
            )
        })
        .collect();
    let key = "anonymous:charge_card:call_2".to_owned();
    assert_eq!(
        results,
        [
            ("1".to_owned(), "unavailable".to_owned(), key.clone()),
            ("2".to_owned(), "unavailable".to_owned(), key.clone()),
            ("3".to_owned(), "unavailable".to_owned(), key),
        ]
    );
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn arguments_are_never_logged_by_default() {
    let registry = registry(ArgumentLog::Off);
    let seen = capture(async {
        registry
            .call_in(&Session::new("anonymous"), charge("call_3", CARD, 666))
            .await;
        // A validation failure and an unknown tool, with the card number in the text.
        registry
            .call_in(&Session::new("anonymous"), charge("call_4", CARD, 0))
            .await;
        let text = format!(r#"{{"card_number":"{CARD}"}}"#);
        registry
            .call_in(
                &Session::new("anonymous"),
                ToolCall::new("call_5", "charge_crad", text),
            )
            .await;
    })
    .await;

    assert_eq!(seen.of("toolwright::call").len(), 3);
    let everything = seen.everything();
    assert!(!everything.contains(CARD), "{everything}");
    assert!(!everything.contains("arguments"), "{everything}");
    let unknown = &seen.of("toolwright::call")[2];
    assert_eq!(unknown.get("error_type"), Some("unknown_tool"));
    assert_eq!(unknown.get("tool"), Some("charge_crad"));
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn redacted_arguments_hide_sensitive_fields_and_show_the_rest() {
    let registry = registry(ArgumentLog::Redacted);
    let seen = capture(async {
        // A field-rule failure: the card is too short, the amount out of range.
        registry
            .call_in(&Session::new("anonymous"), charge("call_6", "4111", 0))
            .await;
        // Text that is not JSON is described, not shown.
        registry
            .call_in(
                &Session::new("anonymous"),
                ToolCall::new(
                    "call_7",
                    "charge_card",
                    format!(r#"{{"card_number":"{CARD}""#),
                ),
            )
            .await;
        // A success carries no arguments even then.
        registry
            .call_in(&Session::new("anonymous"), charge("call_8", CARD, 500))
            .await;
    })
    .await;

    let calls = seen.of("toolwright::call");
    assert_eq!(calls[0].get("error_type"), Some("schema_mismatch"));
    assert_eq!(
        calls[0].get("arguments"),
        Some(r#"{"card_number":"[redacted]","amount_cents":0}"#)
    );
    assert_eq!(calls[1].get("error_type"), Some("invalid_json"));
    assert_eq!(
        calls[1].get("arguments"),
        Some("<not a JSON object, 33 bytes>")
    );
    assert_eq!(calls[2].get("status"), Some("success"));
    assert_eq!(calls[2].get("arguments"), None);
    let everything = seen.everything();
    assert!(!everything.contains("4111"), "{everything}");
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_replayed_call_says_so_and_reports_no_attempt_of_its_own() {
    let registry = registry(ArgumentLog::Off);
    registry
        .call_in(&Session::new("anonymous"), charge("call_9", CARD, 500))
        .await;
    let seen = capture(async {
        registry
            .call_in(&Session::new("anonymous"), charge("call_9", CARD, 500))
            .await;
    })
    .await;
    let call = &seen.of("toolwright::call")[0];
    assert_eq!(call.get("replayed"), Some("true"));
    assert!(seen.of("toolwright::attempt").is_empty());
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_definitive_failure_has_one_attempt() {
    let registry = registry(ArgumentLog::Off);
    let seen = capture(async {
        registry
            .call_in(
                &Session::new("anonymous"),
                ToolCall::new("call_10", "get_order", r#"{"order_id":"A9"}"#),
            )
            .await;
    })
    .await;
    let call = &seen.of("toolwright::call")[0];
    assert_eq!(call.get("error_type"), Some("not_found"));
    assert_eq!(call.get("idempotency_key"), None);
    assert_eq!(seen.of("toolwright::attempt").len(), 1);
}
