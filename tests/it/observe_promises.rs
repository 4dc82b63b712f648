//! The README's "What is logged" promise for a contained panic: one `ERROR` event on target
//! `toolwright::execute` with the tool and the panic's message, and no value of an
//! `#[arg(sensitive)]` field in any event of the call, whether the arguments are logged
//! (redacted) or not, and even when the panic's own message quotes the value. Captured with a
//! subscriber scoped to the test's thread.

use toolwright::prelude::*;
use toolwright::ArgumentLog;

use crate::support::capture;

const CARD: &str = "4111111111111111";

/// Charge a card (its client is broken: every call panics).
#[tool(timeout_ms = 1000)]
async fn charge_card(
    key: IdempotencyKey,
    ctx: ToolContext,
    /// The card number.
    #[arg(sensitive)]
    card_number: String,
    /// Amount in cents.
    amount_cents: u32,
) -> Result<String, ToolError> {
    let _ = key;
    if amount_cents == 1 || (amount_cents == 2 && ctx.attempt() > 1) {
        // A careless panic that quotes the argument.
        panic!("the card network rejected card {card_number}");
    }
    if amount_cents == 2 {
        return Err(ToolError::from_status(503, "the card network answered 503"));
    }
    panic!("the card network client is not configured")
}

fn charge(id: &str, cents: u32) -> ToolCall {
    ToolCall::new(
        id,
        "charge_card",
        format!(r#"{{"card_number":"{CARD}","amount_cents":{cents}}}"#),
    )
}

async fn panicking_call(log: ArgumentLog, cents: u32) -> (Outcome, capture::Capture) {
    let registry = Registry::builder()
        .tool(ChargeCard)
        .log_arguments(log)
        .build()
        .unwrap();
    let (captured, guard) = capture::install();
    let outcome = registry
        .call_in(&Session::new("conv-1"), charge("call_1", cents))
        .await;
    drop(guard);
    (outcome, captured)
}

#[tokio::test]
async fn a_contained_panic_is_one_error_event_on_toolwright_execute() {
    for log in [ArgumentLog::Off, ArgumentLog::Redacted] {
        let (outcome, captured) = panicking_call(log, 500).await;
        assert_eq!(outcome.error_kind(), Some(ErrorKind::ToolPanicked));

        let panics: Vec<_> = captured
            .of("toolwright::execute")
            .into_iter()
            .filter(|e| e.level == tracing::Level::ERROR)
            .collect();
        let [event] = panics.as_slice() else {
            panic!("one ERROR event: {panics:?}")
        };
        assert_eq!(event.get("tool"), Some("charge_card"));
        assert_eq!(
            event.get("panic"),
            Some("the card network client is not configured")
        );
        // The call's own event files it too.
        let calls = captured.of("toolwright::call");
        assert_eq!(calls.len(), 1);
        assert_eq!(calls[0].get("error_type"), Some("tool_panicked"));

        let everything = captured.everything();
        assert!(!everything.contains(CARD), "{log:?}: {everything}");
    }
}

#[tokio::test]
async fn a_panic_message_that_quotes_a_sensitive_value_is_not_logged_with_it() {
    // 1: the first attempt panics; 2: a 503, then the retry panics.
    for (log, cents) in [
        (ArgumentLog::Off, 1),
        (ArgumentLog::Redacted, 1),
        (ArgumentLog::Off, 2),
    ] {
        let (outcome, captured) = panicking_call(log, cents).await;
        assert_eq!(outcome.error_kind(), Some(ErrorKind::ToolPanicked));
        assert!(!outcome.to_model_string().contains(CARD));

        let everything = captured.everything();
        assert!(!everything.contains(CARD), "{log:?}, {cents}: {everything}");
        assert_eq!(outcome.attempts(), cents);
        // The rest of the message is still there for whoever reads the log.
        let panics = captured.of("toolwright::execute");
        assert!(
            panics.iter().any(|e| e
                .get("panic")
                .is_some_and(|p| p.contains("the card network rejected card"))),
            "{panics:?}"
        );
    }
}
