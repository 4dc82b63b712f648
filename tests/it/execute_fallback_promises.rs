//! The README's promises about fallbacks (`#[tool(fallback = path)]`) that
//! `tests/it/execute_fallback.rs` does not make, on paused tokio time:
//!
//! - a fallback that hangs is bounded by the tool's timeout, and the tool's failure stands;
//! - a tool that stays `rate_limited` falls back (a 429 proves the request was not acted on);
//! - a non-idempotent tool that takes an idempotency key: its fallback answers when no attempt
//!   may have acted (429, a refused connection, an open breaker), never after one that may have
//!   (a 503, a timeout), even though the key made the retries safe;
//! - a degraded outcome is never stored under the call's key: re-delivered in the same session,
//!   the call runs the tool (`tests/it/execute_fallback.rs` checks this through
//!   `registry.call`, whose every call has a scope of its own, so it would pass even if the
//!   outcome were stored);
//! - the `toolwright::call` event carries `degraded_by`.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use toolwright::execute::{BreakerPolicy, RetryBudget};
use toolwright::prelude::*;
use toolwright::State;

use crate::support::capture;

/// How the live service answers.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Live {
    Up,
    /// 429 with a Retry-After of 1 s.
    Throttled,
    /// 503: the request reached the service.
    Down,
    /// The connection was refused: the request never left.
    Refused,
    /// Never answers.
    Hang,
}

struct Service {
    live: Mutex<Live>,
    /// Whether the fallback hangs.
    fallback_hangs: bool,
    live_calls: AtomicU32,
    fallback_calls: AtomicU32,
    /// The keys the live service was sent.
    keys: Mutex<Vec<String>>,
}

impl Service {
    fn new(live: Live, fallback_hangs: bool) -> Arc<Service> {
        Arc::new(Service {
            live: Mutex::new(live),
            fallback_hangs,
            live_calls: AtomicU32::new(0),
            fallback_calls: AtomicU32::new(0),
            keys: Mutex::new(Vec::new()),
        })
    }

    async fn live(&self, key: Option<&IdempotencyKey>) -> Result<String, ToolError> {
        self.live_calls.fetch_add(1, Ordering::SeqCst);
        if let Some(key) = key {
            self.keys.lock().unwrap().push(key.as_str().to_owned());
        }
        let live = *self.live.lock().unwrap();
        match live {
            Live::Up => Ok("live".into()),
            Live::Throttled => Err(ToolError::rate_limited(
                "slow down",
                Some(Duration::from_secs(1)),
            )),
            Live::Down => Err(ToolError::from_status(503, "the service answered 503")),
            Live::Refused => Err(ToolError::unavailable("connection refused").never_started()),
            Live::Hang => std::future::pending().await,
        }
    }

    async fn fallback(&self) -> Result<String, ToolError> {
        self.fallback_calls.fetch_add(1, Ordering::SeqCst);
        if self.fallback_hangs {
            std::future::pending::<()>().await;
        }
        Ok("fallback".into())
    }

    fn counts(&self) -> (u32, u32) {
        (
            self.live_calls.load(Ordering::SeqCst),
            self.fallback_calls.load(Ordering::SeqCst),
        )
    }
}

/// A quote for a SKU (read-only, 1 s timeout).
#[tool(read_only, timeout_ms = 1000, fallback = cached_quote)]
async fn quote(sku: String, service: State<Arc<Service>>) -> Result<String, ToolError> {
    let _ = sku;
    service.live(None).await
}

async fn cached_quote(sku: String, service: State<Arc<Service>>) -> Result<String, ToolError> {
    let _ = sku;
    service.fallback().await
}

/// Refund an order (not idempotent; the key goes downstream, so retries are safe).
#[tool(idempotent = false, timeout_ms = 1000, fallback = queue_refund)]
async fn refund(
    key: IdempotencyKey,
    order_id: String,
    service: State<Arc<Service>>,
) -> Result<String, ToolError> {
    let _ = order_id;
    service.live(Some(&key)).await
}

async fn queue_refund(
    key: IdempotencyKey,
    order_id: String,
    service: State<Arc<Service>>,
) -> Result<String, ToolError> {
    let _ = (key, order_id);
    service.fallback().await
}

fn registry(service: &Arc<Service>) -> Registry {
    Registry::builder()
        .tool(Quote)
        .tool(Refund)
        .state(Arc::clone(service))
        .breaker(BreakerPolicy::disabled())
        .retry_budget(RetryBudget::unlimited())
        .build()
        .unwrap()
}

fn quote_call() -> ToolCall {
    ToolCall::new("call_1", "quote", r#"{"sku":"SKU-1"}"#)
}

fn refund_call(id: &str) -> ToolCall {
    ToolCall::new(id, "refund", r#"{"order_id":"A1"}"#)
}

#[tokio::test(start_paused = true)]
async fn a_hanging_fallback_is_bounded_by_the_tools_timeout() {
    let service = Service::new(Live::Down, true);
    let registry = registry(&service);
    let started = tokio::time::Instant::now();
    let outcome = registry.call(quote_call()).await;
    let total = started.elapsed();

    assert_eq!(outcome.error_kind(), Some(ErrorKind::Unavailable));
    assert!(!outcome.is_degraded());
    assert_eq!(service.counts(), (3, 1));
    let message = outcome.message().unwrap();
    assert!(
        message.ends_with("Its fallback failed too: it did not answer within 1000 ms"),
        "{message}"
    );
    // The three live attempts failed at once; what remains is the backoff waits and the
    // fallback's one bounded second. Paused time: exact, but the history reports whole
    // milliseconds.
    let waits: Duration = outcome.attempt_history().iter().map(|a| a.waited()).sum();
    let fallback = total.checked_sub(waits).unwrap();
    assert!(
        fallback.abs_diff(Duration::from_secs(1)) <= Duration::from_millis(3),
        "{total:?} in all, {waits:?} of waits"
    );
}

#[tokio::test(start_paused = true)]
async fn a_tool_that_stays_rate_limited_falls_back() {
    let service = Service::new(Live::Throttled, false);
    let outcome = registry(&service).call(quote_call()).await;
    assert_eq!(outcome.degraded_by(), Some(ErrorKind::RateLimited));
    assert_eq!(outcome.to_model_json()["data"], "fallback");
    assert_eq!(outcome.to_model_json()["degraded"], true);
    // Each retry waited the Retry-After.
    let waits: Vec<Duration> = outcome
        .attempt_history()
        .iter()
        .map(|a| a.waited())
        .collect();
    assert_eq!(
        waits,
        [
            Duration::ZERO,
            Duration::from_secs(1),
            Duration::from_secs(1)
        ]
    );
    assert_eq!(service.counts(), (3, 1));
}

#[tokio::test(start_paused = true)]
async fn a_keyed_non_idempotent_tool_falls_back_only_when_no_attempt_may_have_acted() {
    // Throttled or refused: nothing happened downstream, the fallback may answer.
    for (live, by) in [
        (Live::Throttled, ErrorKind::RateLimited),
        (Live::Refused, ErrorKind::Unavailable),
    ] {
        let service = Service::new(live, false);
        let outcome = registry(&service).call(refund_call("call_1")).await;
        assert_eq!(outcome.degraded_by(), Some(by), "{live:?}");
        assert_eq!(outcome.to_model_json()["data"], "fallback");
        assert_eq!(service.counts(), (3, 1), "{live:?}");
    }

    // A 503 or a timeout: an attempt may have refunded. The key made the retries safe (each
    // went downstream under it), but queueing the refund as well could pay it twice.
    for (live, kind) in [
        (Live::Down, ErrorKind::Unavailable),
        (Live::Hang, ErrorKind::Timeout),
    ] {
        let service = Service::new(live, false);
        let outcome = registry(&service).call(refund_call("call_1")).await;
        assert_eq!(outcome.error_kind(), Some(kind), "{live:?}");
        assert!(!outcome.is_degraded());
        assert_eq!(
            service.counts(),
            (3, 0),
            "{live:?}: retried under its key, no fallback"
        );
        let keys = service.keys.lock().unwrap();
        assert!(keys.iter().all(|k| *k == keys[0]), "{keys:?}");
    }

    // An open breaker: the tool never ran.
    let service = Service::new(Live::Up, false);
    let registry = registry(&service);
    registry.breaker("refund").unwrap().force_open();
    let outcome = registry.call(refund_call("call_1")).await;
    assert_eq!(outcome.degraded_by(), Some(ErrorKind::CircuitOpen));
    assert_eq!(service.counts(), (0, 1));
}

#[tokio::test(start_paused = true)]
async fn a_degraded_outcome_is_not_replayed_to_a_re_delivery_in_the_same_session() {
    let service = Service::new(Live::Up, false);
    let registry = registry(&service);
    let session = Session::new("conv-9");
    registry.breaker("refund").unwrap().force_open();
    let first = registry.call_in(&session, refund_call("call_7")).await;
    assert_eq!(first.degraded_by(), Some(ErrorKind::CircuitOpen));

    registry.breaker("refund").unwrap().reset();
    let again = registry.call_in(&session, refund_call("call_7")).await;
    assert!(
        !again.is_replayed(),
        "a stored degraded outcome would be replayed"
    );
    assert!(!again.is_degraded());
    assert_eq!(again.to_model_json()["data"], "live");
    assert_eq!(service.counts(), (1, 1));
    assert_eq!(*service.keys.lock().unwrap(), ["conv-9:refund:call_7"]);

    // Now the tool itself answered: that outcome is stored and replayed.
    let third = registry.call_in(&session, refund_call("call_7")).await;
    assert!(third.is_replayed());
    assert_eq!(service.counts(), (1, 1));
}

#[tokio::test(start_paused = true)]
async fn the_call_event_names_the_failure_a_fallback_stood_in_for() {
    let service = Service::new(Live::Down, false);
    let registry = registry(&service);
    let (captured, guard) = capture::install();
    let outcome = registry.call(quote_call()).await;
    drop(guard);
    assert_eq!(outcome.degraded_by(), Some(ErrorKind::Unavailable));

    let calls = captured.of("toolwright::call");
    let [event] = calls.as_slice() else {
        panic!("one call event: {calls:?}")
    };
    assert_eq!(event.get("tool"), Some("quote"));
    assert_eq!(event.get("status"), Some("success"));
    assert_eq!(event.get("degraded_by"), Some("unavailable"));
    // The fallback is announced on `toolwright::execute`.
    let execute = captured.of("toolwright::execute");
    assert!(
        execute.iter().any(|e| e.get("message")
            == Some("the tool is unavailable; its fallback answered")
            && e.get("error_type") == Some("unavailable")),
        "{execute:?}"
    );
}
