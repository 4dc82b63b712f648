//! The model's recovery budget through the real pipeline: failures of the same kind in a row,
//! per tool and conversation, until the envelope says to stop.

use toolwright::conversation::RecoveryBudget;
use toolwright::prelude::*;

/// Search orders.
#[tool(read_only)]
async fn search_orders(
    /// How many.
    #[arg(range(min = 1, max = 20))]
    max_results: u32,
) -> Result<Vec<String>, ToolError> {
    Ok(vec!["A1".to_owned(); max_results as usize])
}

/// Book a callback.
#[tool(idempotent = true, validate = ordered)]
async fn book_callback(earliest: u8, latest: u8) -> Result<String, ToolError> {
    Ok(format!("{earliest}-{latest}"))
}

fn ordered(args: &BookCallbackArgs) -> Result<(), ToolError> {
    if args.earliest < args.latest {
        Ok(())
    } else {
        Err(ToolError::invalid("`earliest` must be before `latest`"))
    }
}

fn registry() -> Registry {
    Registry::builder()
        .tool(SearchOrders)
        .tool(BookCallback)
        .build()
        .unwrap()
}

fn search(n: i64) -> ToolCall {
    ToolCall::new("c", "search_orders", format!(r#"{{"max_results":{n}}}"#))
}

fn callback(earliest: u8, latest: u8) -> ToolCall {
    ToolCall::new(
        "c",
        "book_callback",
        format!(r#"{{"earliest":{earliest},"latest":{latest}}}"#),
    )
}

#[tokio::test]
async fn two_retries_after_a_schema_violation_then_stop() {
    let registry = registry();
    let session = Session::new("conv-1");
    let first = registry.call_in(&session, search(50)).await;
    let second = registry.call_in(&session, search(0)).await;
    let third = registry.call_in(&session, search(99)).await;
    assert!(first.retryable() && second.retryable());
    assert_eq!(third.error_kind(), Some(ErrorKind::SchemaMismatch));
    assert!(!third.retryable());
    assert_eq!(
        third.message(),
        Some("`max_results` must be at most 20, got 99. This is the 3rd failure of `search_orders` in a row with arguments that do not fit its schema: stop calling it for this and tell the user what went wrong")
    );
    assert_eq!(third.to_model_json()["retryable"], false);
}

#[tokio::test]
async fn a_success_starts_the_count_again() {
    let registry = registry();
    let session = Session::new("conv-2");
    registry.call_in(&session, search(50)).await;
    registry.call_in(&session, search(50)).await;
    assert_eq!(
        registry.call_in(&session, search(5)).await.status(),
        Status::Success
    );
    let again = registry.call_in(&session, search(50)).await;
    assert!(again.retryable(), "{:?}", again.message());
}

#[tokio::test]
async fn one_retry_after_a_broken_business_rule() {
    let registry = registry();
    let session = Session::new("conv-3");
    assert!(registry
        .call_in(&session, callback(17, 9))
        .await
        .retryable());
    let second = registry.call_in(&session, callback(18, 9)).await;
    assert_eq!(second.error_kind(), Some(ErrorKind::SemanticInvalid));
    assert!(!second.retryable());
    assert!(second
        .message()
        .unwrap()
        .contains("This is the 2nd failure of `book_callback` in a row with values that break its business rule"));
}

#[tokio::test]
async fn invented_tool_names_count_together() {
    let registry = registry();
    let session = Session::new("conv-4");
    let first = registry
        .call_in(&session, ToolCall::new("c", "serch_orders", "{}"))
        .await;
    assert!(first.retryable());
    let second = registry
        .call_in(&session, ToolCall::new("c", "find_orders", "{}"))
        .await;
    assert_eq!(second.error_kind(), Some(ErrorKind::UnknownTool));
    assert!(!second.retryable());
    assert!(second
        .message()
        .unwrap()
        .ends_with("This is the 2nd call in a row of a tool that does not exist: stop guessing names and tell the user what you cannot do"));
}

#[tokio::test]
async fn an_open_breaker_is_not_to_be_called_again_at_once() {
    let registry = registry();
    let session = Session::new("conv-5");
    registry.breaker("search_orders").unwrap().force_open();
    let outcome = registry.call_in(&session, search(5)).await;
    assert_eq!(outcome.error_kind(), Some(ErrorKind::CircuitOpen));
    assert!(!outcome.retryable());
    assert!(outcome.message().unwrap().ends_with(
        "Do not call `search_orders` again for this; tell the user it is unavailable right now"
    ));
}

#[tokio::test]
async fn tools_and_conversations_are_counted_apart() {
    let registry = registry();
    let a = Session::new("conv-6");
    let b = Session::new("conv-7");
    registry.call_in(&a, search(50)).await;
    registry.call_in(&a, search(50)).await;
    // Another tool in the same conversation, the same tool in another one: fresh counts.
    assert!(registry.call_in(&a, callback(17, 9)).await.retryable());
    assert!(registry.call_in(&b, search(50)).await.retryable());
    // The third schema failure of search_orders in conversation a.
    assert!(!registry.call_in(&a, search(50)).await.retryable());
}

#[tokio::test]
async fn calls_outside_a_conversation_and_unlimited_budgets_are_never_cut() {
    let registry = registry();
    for _ in 0..5 {
        assert!(registry.call(search(50)).await.retryable());
    }
    let unlimited = Registry::builder()
        .tool(SearchOrders)
        .recovery_budget(RecoveryBudget::unlimited())
        .build()
        .unwrap();
    let session = Session::new("conv-8");
    for _ in 0..5 {
        assert!(unlimited.call_in(&session, search(50)).await.retryable());
    }
    let strict = Registry::builder()
        .tool(SearchOrders)
        .recovery_budget(RecoveryBudget::new().schema_violations(0))
        .build()
        .unwrap();
    let once = strict.call_in(&Session::new("conv-9"), search(50)).await;
    assert!(!once.retryable());
    assert!(once
        .message()
        .unwrap()
        .ends_with("Do not call `search_orders` again for this; tell the user what went wrong"));
}
