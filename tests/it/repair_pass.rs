//! The repair pass through the real pipeline: at most one repair of arguments that fail on their
//! form, validated again; everything else gets the model's own failure back.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use toolwright::prelude::*;
use toolwright::repair::{parse_reply, Repair, RepairRequest, Repairer};

use crate::support::capture;

/// Search orders.
#[tool(read_only)]
async fn search_orders(
    /// Words to look for.
    query: String,
    /// How many.
    #[arg(range(min = 1, max = 20))]
    max_results: u32,
) -> Result<Vec<String>, ToolError> {
    Ok(vec![query; max_results as usize])
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

/// Send a message (not idempotent: the exactly-once path).
#[tool]
async fn send_message(to: String, copies: u32) -> Result<String, ToolError> {
    Ok(format!("{copies} to {to}"))
}

/// A repairer that turns numbers sent as strings into numbers, counting its calls.
fn unquote(calls: &Arc<AtomicU32>) -> impl Repairer {
    let calls = Arc::clone(calls);
    move |request: &RepairRequest<'_>| {
        calls.fetch_add(1, Ordering::SeqCst);
        let Ok(serde_json::Value::Object(mut args)) = serde_json::from_str(request.arguments())
        else {
            return Repair::Abort;
        };
        for value in args.values_mut() {
            if let Some(n) = value.as_str().and_then(|s| s.parse::<i64>().ok()) {
                *value = n.into();
            }
        }
        Repair::Arguments(serde_json::Value::Object(args).to_string())
    }
}

fn registry(repairer: impl Repairer) -> Registry {
    Registry::builder()
        .tool(SearchOrders)
        .tool(BookCallback)
        .tool(SendMessage)
        .repairer(repairer)
        .build()
        .unwrap()
}

fn search(args: &str) -> ToolCall {
    ToolCall::new("call_1", "search_orders", args)
}

#[tokio::test]
async fn a_number_sent_as_text_is_repaired_once_and_the_call_runs() {
    let calls = Arc::new(AtomicU32::new(0));
    let registry = registry(unquote(&calls));
    let outcome = registry
        .call_in(
            &Session::new("anonymous"),
            search(r#"{"query":"ada","max_results":"2"}"#),
        )
        .await;
    assert_eq!(
        outcome.status(),
        Status::Success,
        "{}",
        outcome.to_model_json()
    );
    assert!(outcome.is_repaired());
    let envelope = outcome.to_model_json();
    assert_eq!(envelope["repaired"], true);
    assert_eq!(envelope["data"], serde_json::json!(["ada", "ada"]));
    assert_eq!(calls.load(Ordering::SeqCst), 1);

    // Valid arguments never meet the repairer.
    let fine = registry
        .call_in(
            &Session::new("anonymous"),
            search(r#"{"query":"ada","max_results":1}"#),
        )
        .await;
    assert!(!fine.is_repaired());
    assert!(fine.to_model_json().get("repaired").is_none());
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn repaired_arguments_that_still_fail_give_the_model_its_own_failure() {
    let calls = Arc::new(AtomicU32::new(0));
    let registry = registry(unquote(&calls));
    // "50" becomes 50, which is still out of range: the model hears about "50", once.
    let outcome = registry
        .call_in(
            &Session::new("anonymous"),
            search(r#"{"query":"ada","max_results":"50"}"#),
        )
        .await;
    assert_eq!(outcome.error_kind(), Some(ErrorKind::SchemaMismatch));
    assert!(!outcome.is_repaired());
    assert_eq!(
        outcome.message(),
        Some("`max_results`: expected an integer, got string \"50\"")
    );
    assert_eq!(calls.load(Ordering::SeqCst), 1, "one repair, never two");
}

#[tokio::test]
async fn a_repairer_that_gives_up_or_panics_leaves_the_original_failure() {
    let aborting = registry(|_: &RepairRequest<'_>| Repair::Abort);
    let outcome = aborting.call(search(r#"{"query":"ada""#)).await;
    assert_eq!(outcome.error_kind(), Some(ErrorKind::InvalidJson));

    let panicking =
        registry(|_: &RepairRequest<'_>| -> Repair { panic!("the repair model is down") });
    let outcome = panicking
        .call_in(
            &Session::new("anonymous"),
            search(r#"{"query":"ada","max_results":2,"extra":1}"#),
        )
        .await;
    assert_eq!(outcome.error_kind(), Some(ErrorKind::UnknownArgument));
    let fine = panicking
        .call_in(
            &Session::new("anonymous"),
            search(r#"{"query":"ada","max_results":1}"#),
        )
        .await;
    assert_eq!(fine.status(), Status::Success, "the registry keeps serving");
}

/// A repairer that never answers.
struct Stuck;

impl Repairer for Stuck {
    fn repair<'a>(
        &'a self,
        _: &'a RepairRequest<'a>,
    ) -> Pin<Box<dyn Future<Output = Repair> + Send + 'a>> {
        Box::pin(async {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            Repair::Abort
        })
    }
}

#[tokio::test(start_paused = true)]
async fn a_repairer_is_bounded_by_its_timeout() {
    let registry = Registry::builder()
        .tool(SearchOrders)
        .repairer(Stuck)
        .repair_timeout(Duration::from_secs(2))
        .build()
        .unwrap();
    let started = tokio::time::Instant::now();
    let outcome = registry
        .call_in(
            &Session::new("anonymous"),
            search(r#"{"query":"ada","max_results":"2"}"#),
        )
        .await;
    assert_eq!(outcome.error_kind(), Some(ErrorKind::SchemaMismatch));
    assert_eq!(started.elapsed(), Duration::from_secs(2));
}

#[tokio::test]
async fn business_rules_are_not_a_matter_of_form_and_are_never_repaired() {
    let calls = Arc::new(AtomicU32::new(0));
    let registry = registry(unquote(&calls));
    let outcome = registry
        .call_in(
            &Session::new("anonymous"),
            ToolCall::new("call_1", "book_callback", r#"{"earliest":17,"latest":9}"#),
        )
        .await;
    assert_eq!(outcome.error_kind(), Some(ErrorKind::SemanticInvalid));
    assert_eq!(calls.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn a_tool_with_side_effects_runs_once_with_the_repaired_arguments() {
    let calls = Arc::new(AtomicU32::new(0));
    let registry = registry(unquote(&calls));
    let call = || ToolCall::new("call_9", "send_message", r#"{"to":"ada","copies":"2"}"#);
    let first = registry.call_in(&Session::new("anonymous"), call()).await;
    assert!(first.is_repaired());
    assert_eq!(first.to_model_json()["data"], "2 to ada");
    // The same proposal again: the idempotency store answers.
    let again = registry.call_in(&Session::new("anonymous"), call()).await;
    assert!(again.is_replayed());
}

#[tokio::test(flavor = "current_thread")]
async fn every_malformed_call_is_logged_recovered_or_not() {
    let calls = Arc::new(AtomicU32::new(0));
    let registry = registry(unquote(&calls));
    let seen = capture::capture(async {
        registry
            .call_in(
                &Session::new("anonymous"),
                search(r#"{"query":"ada","max_results":"2"}"#),
            )
            .await;
        registry
            .call_in(
                &Session::new("anonymous"),
                search(r#"{"query":"ada","max_results":"50"}"#),
            )
            .await;
    })
    .await;
    let results: Vec<_> = seen
        .of("toolwright::repair")
        .iter()
        .map(|e| e.get("result").unwrap_or_default().to_owned())
        .collect();
    assert_eq!(results, ["repaired", "still invalid"]);
}

#[test]
fn the_prompt_carries_the_tool_the_error_and_the_schema() {
    let seen = Arc::new(std::sync::Mutex::new(String::new()));
    let sink = Arc::clone(&seen);
    let registry = registry(move |request: &RepairRequest<'_>| {
        *sink.lock().unwrap() = request.prompt();
        Repair::Abort
    });
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
        .block_on(registry.call_in(
            &Session::new("anonymous"),
            search(r#"{"query":"ada","max_results":"2"}"#),
        ));
    let prompt = seen.lock().unwrap().clone();
    assert!(prompt.starts_with("Your previous call to `search_orders` was rejected:\n\n  `max_results`: expected an integer, got string \"2\""), "{prompt}");
    assert!(
        prompt.contains(r#""max_results""#) && prompt.contains(r#""minimum":1"#),
        "{prompt}"
    );
    assert!(prompt.ends_with(r#"If the call cannot be repaired, return {"abort": true}."#));
    assert_eq!(
        parse_reply(r#"{"query":"ada","max_results":2}"#),
        Repair::Arguments(r#"{"query":"ada","max_results":2}"#.into())
    );
}
