//! `#[tool(fallback = path)]` through the real pipeline, on paused tokio time: when the fallback
//! answers (the tool is unavailable and repeating it would do no harm), what the model reads
//! then, and what happens when the fallback fails or panics.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use toolwright::execute::{BreakerPolicy, RetryBudget};
use toolwright::prelude::*;
use toolwright::State;

/// How the live inventory service behaves.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Mode {
    Up,
    /// Answers 503.
    Down,
    /// Never answers.
    Hang,
    /// Refuses the connection: the request never left.
    Refused,
    /// The SKU does not exist.
    Missing,
}

struct Service {
    mode: Mutex<Mode>,
    live_calls: AtomicU32,
    fallback_calls: AtomicU32,
    /// The last snapshot of stock levels, the fallback's source.
    cache: HashMap<&'static str, u32>,
}

impl Service {
    fn new(mode: Mode) -> Arc<Service> {
        Arc::new(Service {
            mode: Mutex::new(mode),
            live_calls: AtomicU32::new(0),
            fallback_calls: AtomicU32::new(0),
            cache: HashMap::from([("SKU-1", 12), ("SKU-2", 0)]),
        })
    }

    fn set(&self, mode: Mode) {
        *self.mode.lock().unwrap() = mode;
    }

    async fn live(&self) -> Result<(), ToolError> {
        self.live_calls.fetch_add(1, Ordering::SeqCst);
        let mode = *self.mode.lock().unwrap();
        match mode {
            Mode::Up => Ok(()),
            Mode::Down => Err(ToolError::from_status(503, "the service answered 503")),
            Mode::Hang => {
                tokio::time::sleep(Duration::from_secs(3600)).await;
                Ok(())
            }
            Mode::Refused => Err(ToolError::unavailable("connection refused").never_started()),
            Mode::Missing => Err(ToolError::not_found("no such SKU")),
        }
    }

    fn lives(&self) -> u32 {
        self.live_calls.load(Ordering::SeqCst)
    }

    fn fallbacks(&self) -> u32 {
        self.fallback_calls.load(Ordering::SeqCst)
    }
}

/// A stock level and where it came from.
#[toolwright::data]
struct Stock {
    sku: String,
    units: u32,
    source: String,
}

/// Units in stock for a SKU.
#[tool(read_only, timeout_ms = 1000, fallback = cached_stock)]
async fn check_stock(
    /// The SKU.
    sku: String,
    service: State<Arc<Service>>,
) -> Result<Stock, ToolError> {
    service.live().await?;
    Ok(Stock {
        sku,
        units: 7,
        source: "live".into(),
    })
}

/// The fallback of `check_stock`: the last snapshot.
async fn cached_stock(sku: String, service: State<Arc<Service>>) -> Result<Stock, ToolError> {
    service.fallback_calls.fetch_add(1, Ordering::SeqCst);
    if sku == "SKU-PANIC" {
        panic!("the snapshot file is corrupt");
    }
    match service.cache.get(sku.as_str()) {
        Some(&units) => Ok(Stock {
            sku,
            units,
            source: "snapshot".into(),
        }),
        None => Err(ToolError::not_found(format!(
            "the snapshot has no figure for {sku}"
        ))),
    }
}

/// A receipt for a message.
#[toolwright::data]
struct Receipt {
    state: String,
}

/// Send the customer a message.
#[tool(timeout_ms = 1000, fallback = queue_message)]
async fn send_message(
    /// The message.
    text: String,
    service: State<Arc<Service>>,
) -> Result<Receipt, ToolError> {
    service.live().await?;
    let _ = text;
    Ok(Receipt {
        state: "sent".into(),
    })
}

/// The fallback of `send_message`: queue it for later delivery.
async fn queue_message(text: String, service: State<Arc<Service>>) -> Result<Receipt, ToolError> {
    service.fallback_calls.fetch_add(1, Ordering::SeqCst);
    let _ = text;
    Ok(Receipt {
        state: "queued".into(),
    })
}

fn registry(service: &Arc<Service>) -> Registry {
    Registry::builder()
        .tool(CheckStock)
        .tool(SendMessage)
        .state(Arc::clone(service))
        .breaker(BreakerPolicy::disabled())
        .retry_budget(RetryBudget::unlimited())
        .build()
        .unwrap()
}

fn stock(sku: &str) -> ToolCall {
    ToolCall::new("call_1", "check_stock", format!(r#"{{"sku":"{sku}"}}"#))
}

fn message(id: &str) -> ToolCall {
    ToolCall::new(
        id,
        "send_message",
        r#"{"text":"Your refund is on its way."}"#,
    )
}

#[tokio::test(start_paused = true)]
async fn an_unavailable_tool_answers_from_its_fallback_marked_degraded() {
    let service = Service::new(Mode::Down);
    let outcome = registry(&service).call(stock("SKU-1")).await;

    assert_eq!(outcome.status(), Status::Success);
    assert!(outcome.is_degraded());
    assert_eq!(outcome.degraded_by(), Some(ErrorKind::Unavailable));
    assert_eq!(outcome.error_kind(), None);
    // The tool's own attempts ran first (3 by default), then the fallback once.
    assert_eq!(
        (outcome.attempts(), service.lives(), service.fallbacks()),
        (3, 3, 1)
    );
    let envelope = outcome.to_model_json();
    assert_eq!(envelope["status"], "success");
    assert_eq!(envelope["degraded"], true);
    assert_eq!(envelope["source"], "fallback");
    assert_eq!(envelope["data"]["source"], "snapshot");
    assert_eq!(envelope["data"]["units"], 12);
    assert_eq!(
        envelope["message"],
        "`check_stock` is unavailable right now; this answer comes from its fallback and may be stale or incomplete: say so"
    );
    assert!(envelope.get("error_type").is_none());
}

#[tokio::test(start_paused = true)]
async fn a_timed_out_tool_falls_back() {
    let service = Service::new(Mode::Hang);
    let outcome = registry(&service).call(stock("SKU-2")).await;
    assert_eq!(outcome.degraded_by(), Some(ErrorKind::Timeout));
    assert_eq!(outcome.data_as::<serde_json::Value>().unwrap()["units"], 0);
    assert_eq!((service.lives(), service.fallbacks()), (3, 1));
}

#[tokio::test(start_paused = true)]
async fn an_open_breaker_falls_back_without_calling_the_tool() {
    let service = Service::new(Mode::Up);
    let registry = registry(&service);
    registry.breaker("check_stock").unwrap().force_open();

    let outcome = registry.call(stock("SKU-1")).await;
    assert_eq!(outcome.degraded_by(), Some(ErrorKind::CircuitOpen));
    assert_eq!(outcome.attempts(), 0);
    assert_eq!((service.lives(), service.fallbacks()), (0, 1));

    registry.breaker("check_stock").unwrap().reset();
    let outcome = registry.call(stock("SKU-1")).await;
    assert!(!outcome.is_degraded());
    assert_eq!(
        outcome.data_as::<serde_json::Value>().unwrap()["source"],
        "live"
    );
    assert!(outcome.to_model_json().get("degraded").is_none());
}

#[tokio::test(start_paused = true)]
async fn a_definitive_answer_is_never_replaced_by_the_fallback() {
    let service = Service::new(Mode::Missing);
    let outcome = registry(&service).call(stock("SKU-1")).await;
    assert_eq!(outcome.error_kind(), Some(ErrorKind::NotFound));
    assert!(!outcome.is_degraded());
    assert_eq!(service.fallbacks(), 0);
}

#[tokio::test(start_paused = true)]
async fn a_failing_fallback_leaves_the_tools_failure_and_says_why() {
    let service = Service::new(Mode::Down);
    let outcome = registry(&service).call(stock("SKU-9")).await;
    assert_eq!(outcome.error_kind(), Some(ErrorKind::Unavailable));
    assert!(!outcome.is_degraded());
    let text = outcome.message().unwrap();
    assert!(text.starts_with("the service answered 503"), "{text}");
    assert!(
        text.ends_with("Its fallback failed too: the snapshot has no figure for SKU-9"),
        "{text}"
    );
    assert_eq!(service.fallbacks(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_panicking_fallback_is_contained() {
    let service = Service::new(Mode::Down);
    let registry = registry(&service);
    let outcome = registry.call(stock("SKU-PANIC")).await;
    assert_eq!(outcome.error_kind(), Some(ErrorKind::Unavailable));
    let text = outcome.message().unwrap();
    assert!(
        text.ends_with("Its fallback failed too: it failed with an internal error"),
        "{text}"
    );
    // The registry keeps serving.
    service.set(Mode::Up);
    assert_eq!(
        registry.call(stock("SKU-1")).await.status(),
        Status::Success
    );
}

#[tokio::test(start_paused = true)]
async fn a_tool_that_may_have_acted_does_not_fall_back() {
    // `send_message` is not idempotent: its timed-out attempt may have sent the message, so
    // queueing it as well could send it twice.
    let service = Service::new(Mode::Hang);
    let outcome = registry(&service).call(message("call_1")).await;
    assert_eq!(outcome.error_kind(), Some(ErrorKind::Timeout));
    assert!(!outcome.is_degraded());
    assert_eq!((service.lives(), service.fallbacks()), (1, 0));
}

#[tokio::test(start_paused = true)]
async fn a_tool_whose_requests_never_left_falls_back() {
    let service = Service::new(Mode::Refused);
    let outcome = registry(&service).call(message("call_1")).await;
    assert_eq!(outcome.degraded_by(), Some(ErrorKind::Unavailable));
    assert_eq!(
        outcome.data_as::<serde_json::Value>().unwrap()["state"],
        "queued"
    );
    assert_eq!((service.lives(), service.fallbacks()), (3, 1));
}

#[tokio::test(start_paused = true)]
async fn a_degraded_outcome_is_not_replayed_under_its_idempotency_key() {
    let service = Service::new(Mode::Up);
    let registry = registry(&service);
    registry.breaker("send_message").unwrap().force_open();
    let first = registry.call(message("call_7")).await;
    assert_eq!(first.degraded_by(), Some(ErrorKind::CircuitOpen));

    // The same call again (same id, same key): the tool itself never acted, so it runs now.
    registry.breaker("send_message").unwrap().reset();
    let again = registry.call(message("call_7")).await;
    assert!(!again.is_replayed());
    assert!(!again.is_degraded());
    assert_eq!(
        again.data_as::<serde_json::Value>().unwrap()["state"],
        "sent"
    );
    assert_eq!((service.lives(), service.fallbacks()), (1, 1));
}

#[test]
fn the_spec_says_which_tools_have_a_fallback() {
    let service = Service::new(Mode::Up);
    let registry = registry(&service);
    assert!(registry.spec("check_stock").unwrap().has_fallback());
    let plain = Registry::builder().build().unwrap();
    assert!(plain.spec("check_stock").is_none());
}
