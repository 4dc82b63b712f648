//! The README's promises about side effects ("Side effects happen once"), each through
//! `registry.call_in` on paused tokio time with the scripted tools of `support/script.rs`:
//!
//! - a panic of a side-effecting tool leaves its effect *unknown*: the next delivery runs again
//!   under the same key (it is not replayed, and the key remembers its arguments);
//! - a cancelled call keeps its key locked: a re-delivery is `duplicate_in_flight` until the
//!   lock expires (the call's whole deadline and a few seconds of slack), then takes the key
//!   over; a call that runs longer than 90 s within its deadline is never taken over;
//! - `duplicate_in_flight`'s `retry_after_ms` is what is left of the running call's deadline;
//! - the `toolwright::idempotency` events say when a key is taken over.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use toolwright::execute::{BreakerPolicy, RetryBudget, SeededRandom};
use toolwright::prelude::*;
use toolwright::RegistryBuilder;

use crate::support::capture;
use crate::support::script::{Refund, Script, Step};

const REFUND: &str = r#"{"order_id":"A1"}"#;
const OTHER_REFUND: &str = r#"{"order_id":"B2"}"#;

fn builder(script: &Arc<Script>) -> RegistryBuilder {
    Registry::builder()
        .tool(Refund)
        .state(Arc::clone(script))
        .random(SeededRandom::new(7))
        .breaker(BreakerPolicy::disabled())
        .retry_budget(RetryBudget::unlimited())
}

fn refund(call_id: &str, arguments: &str) -> ToolCall {
    ToolCall::new(call_id, "refund", arguments)
}

fn keys(script: &Script) -> Vec<String> {
    script.seen().into_iter().map(|s| s.key).collect()
}

#[tokio::test(start_paused = true)]
async fn a_panicking_tool_with_side_effects_leaves_its_effect_unknown() {
    let script = Arc::new(Script::new([Step::Panic], Step::Answer));
    let registry = builder(&script).build().unwrap();
    let session = Session::new("conv-1");

    let first = registry.call_in(&session, refund("call_1", REFUND)).await;
    assert_eq!(first.error_kind(), Some(ErrorKind::ToolPanicked));
    assert_eq!(first.attempts(), 1, "a panic is not retried");

    // The panic may have come after the refund was made: the key keeps its arguments ...
    let (captured, guard) = capture::install();
    let changed = registry
        .call_in(&session, refund("call_1", OTHER_REFUND))
        .await;
    assert_eq!(
        changed.error_kind(),
        Some(ErrorKind::IdempotencyMismatch),
        "a released key would have run the other arguments"
    );
    // ... and the next delivery goes downstream again with the same key, never replayed.
    let second = registry.call_in(&session, refund("call_1", REFUND)).await;
    drop(guard);
    assert_eq!(second.status(), Status::Success, "{:?}", second.message());
    assert!(
        !second.is_replayed(),
        "a stored panic would have been replayed"
    );
    assert_eq!(script.entered(), 2);
    assert_eq!(
        keys(&script),
        ["conv-1:refund:call_1", "conv-1:refund:call_1"]
    );

    // The operator is told the key went downstream again with its effect unknown.
    let events = captured.of("toolwright::idempotency");
    let [event] = events.as_slice() else {
        panic!("one idempotency event: {events:?}")
    };
    assert_eq!(event.level, tracing::Level::INFO);
    assert_eq!(event.get("tool"), Some("refund"));
    assert_eq!(event.get("key"), Some("conv-1:refund:call_1"));
    assert_eq!(event.get("prior"), Some("UnknownEffect"));
    assert_eq!(event.get("unknown_effects"), Some("1"));

    // Now it finished: replayed.
    let third = registry.call_in(&session, refund("call_1", REFUND)).await;
    assert!(third.is_replayed());
    assert_eq!(script.entered(), 2);
}

/// Proposes `call_1` and gives up on it after `after` (the caller's future is dropped, as when
/// an agent is cancelled or a connection closes).
async fn cancelled(registry: &Registry, session: &Session, after: Duration) {
    let call = registry.call_in(session, refund("call_1", REFUND));
    assert!(
        tokio::time::timeout(after, call).await.is_err(),
        "the call was still running"
    );
}

async fn refused_as_in_flight(registry: &Registry, session: &Session) -> Duration {
    let outcome = registry.call_in(session, refund("call_1", REFUND)).await;
    assert_eq!(
        outcome.error_kind(),
        Some(ErrorKind::DuplicateInFlight),
        "{:?}",
        outcome.message()
    );
    assert_eq!(outcome.attempts(), 0);
    outcome
        .retry_after()
        .expect("duplicate_in_flight says when to come back")
}

/// How long `refund` (1 s per attempt, 3 attempts) may run in all.
fn refund_deadline() -> Duration {
    toolwright::execute::RetryPolicy::new().deadline_for(Duration::from_secs(1), 3)
}

#[tokio::test(start_paused = true)]
async fn a_cancelled_call_holds_its_key_until_it_would_have_ended_then_the_next_call_takes_it_over()
{
    let script = Arc::new(Script::new([Step::Hang], Step::Answer));
    let registry = builder(&script).build().unwrap();
    let session = Session::new("conv-1");

    cancelled(&registry, &session, Duration::from_millis(500)).await;
    assert_eq!(script.entered(), 1);

    // Re-delivered at once: the cancelled call may still be acting somewhere. The lock lasts
    // the call's deadline (3.75 s) and 5 s of slack.
    let lock = refund_deadline() + Duration::from_secs(5);
    let retry_after = refused_as_in_flight(&registry, &session).await;
    assert_eq!(retry_after, lock - Duration::from_millis(500));
    tokio::time::advance(lock - Duration::from_secs(2)).await;
    refused_as_in_flight(&registry, &session).await;
    assert_eq!(script.entered(), 1);

    // Past the lock the next delivery takes the key over, and says so.
    tokio::time::advance(Duration::from_secs(2)).await;
    let (captured, guard) = capture::install();
    let taken_over = registry.call_in(&session, refund("call_1", REFUND)).await;
    drop(guard);
    assert_eq!(taken_over.status(), Status::Success);
    assert!(!taken_over.is_replayed());
    assert_eq!(script.entered(), 2);
    assert_eq!(
        keys(&script),
        ["conv-1:refund:call_1", "conv-1:refund:call_1"]
    );
    let events = captured.of("toolwright::idempotency");
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0].get("prior"), Some("LockExpired"));
    assert_eq!(events[0].get("unknown_effects"), Some("1"));
}

#[tokio::test(start_paused = true)]
async fn with_a_deadline_of_200_s_a_cancelled_call_holds_its_key_for_the_deadline() {
    let script = Arc::new(Script::new([Step::Hang], Step::Answer));
    let registry = builder(&script)
        .call_deadline(Duration::from_secs(200))
        .build()
        .unwrap();
    let session = Session::new("conv-1");

    cancelled(&registry, &session, Duration::from_millis(500)).await;
    // Past 90 s, still locked: the call could still be running within its deadline.
    tokio::time::advance(Duration::from_secs(100)).await;
    refused_as_in_flight(&registry, &session).await;
    tokio::time::advance(Duration::from_secs(99)).await; // 199.5 s after the call began
    refused_as_in_flight(&registry, &session).await;
    assert_eq!(script.entered(), 1);

    // Well past the deadline (and the few seconds of slack around it): taken over.
    tokio::time::advance(Duration::from_secs(10)).await;
    let taken_over = registry.call_in(&session, refund("call_1", REFUND)).await;
    assert_eq!(taken_over.status(), Status::Success);
    assert!(!taken_over.is_replayed());
    assert_eq!(script.entered(), 2);
}

/// How many times the slow refund's body ran (per test: each test builds its own).
#[derive(Default)]
struct Runs(AtomicU32);

impl Runs {
    fn add(&self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
    fn count(&self) -> u32 {
        self.0.load(Ordering::SeqCst)
    }
}

/// Refund through a payment service that takes two minutes to answer.
#[tool(idempotent = false, timeout_ms = 150000)]
async fn slow_refund(
    key: IdempotencyKey,
    runs: State<Arc<Runs>>,
    order_id: String,
) -> Result<String, ToolError> {
    runs.add();
    tokio::time::sleep(Duration::from_secs(120)).await;
    Ok(format!("refunded {order_id} under {}", key.as_str()))
}

#[tokio::test(start_paused = true)]
async fn a_call_that_runs_longer_than_90_s_is_never_taken_over() {
    let runs = Arc::new(Runs::default());
    let registry = Registry::builder()
        .tool(SlowRefund)
        .state(Arc::clone(&runs))
        .build()
        .unwrap();
    let session = Session::new("conv-1");
    let call = || ToolCall::new("call_1", "slow_refund", REFUND);

    let first = tokio::spawn({
        let (registry, session) = (registry.clone(), session.clone());
        async move { registry.call_in(&session, call()).await }
    });
    // 100 s in, the first call is still running: its re-delivery is refused, not let in.
    tokio::time::sleep(Duration::from_secs(100)).await;
    let duplicate = registry.call_in(&session, call()).await;
    assert_eq!(duplicate.error_kind(), Some(ErrorKind::DuplicateInFlight));
    assert_eq!(runs.count(), 1);

    let first = first.await.unwrap();
    assert_eq!(first.status(), Status::Success, "{:?}", first.message());
    // Its outcome was recorded (its lease was never lost): the next delivery is a replay.
    let again = registry.call_in(&session, call()).await;
    assert!(again.is_replayed());
    assert_eq!(runs.count(), 1);
}

/// Lend a book: a payment for the deposit, 5 s per attempt, 3 attempts.
#[tool(idempotent = false, retries = 2, timeout_ms = 5000)]
async fn lend(
    key: IdempotencyKey,
    ctx: ToolContext,
    script: State<Arc<Script>>,
    order_id: String,
) -> Result<String, ToolError> {
    let _ = (key, order_id);
    script.run(&ctx).await
}

/// How long `lend` may run in all: its three attempts' timeouts and the waits between them.
fn lend_deadline() -> Duration {
    toolwright::execute::RetryPolicy::new().deadline_for(Duration::from_secs(5), 3)
}

#[tokio::test(start_paused = true)]
async fn duplicate_in_flight_says_how_long_the_running_call_can_still_take() {
    let script = Arc::new(Script::always(Step::Hang));
    let registry = Registry::builder()
        .tool(Lend)
        .state(Arc::clone(&script))
        .random(SeededRandom::new(7))
        .breaker(BreakerPolicy::disabled())
        .retry_budget(RetryBudget::unlimited())
        .build()
        .unwrap();
    let session = Session::new("conv-1");
    let call = || ToolCall::new("call_1", "lend", REFUND);
    let first = tokio::spawn({
        let (registry, session) = (registry.clone(), session.clone());
        async move { registry.call_in(&session, call()).await }
    });
    tokio::time::sleep(Duration::from_secs(1)).await;

    let duplicate = registry.call_in(&session, call()).await;
    assert_eq!(duplicate.error_kind(), Some(ErrorKind::DuplicateInFlight));
    let retry_after = duplicate.retry_after().expect("retry_after_ms");
    // What is left of the first call's deadline (15.75 s), with a few seconds of slack for the
    // store's own round trips; not the store's 90 s default lock.
    let left = lend_deadline() - Duration::from_secs(1);
    assert!(
        retry_after >= left && retry_after <= left + Duration::from_secs(5),
        "{retry_after:?}, {left:?} left of the running call"
    );
    assert_eq!(
        duplicate.to_model_json()["retry_after_ms"],
        u64::try_from(retry_after.as_millis()).unwrap()
    );

    // Coming back after `retry_after_ms` finds the first call over (every attempt timed out,
    // its effect unknown): the delivery runs again under the same key.
    tokio::time::sleep(retry_after).await;
    let first = first.await.unwrap();
    assert_eq!(first.error_kind(), Some(ErrorKind::Timeout));
    assert_eq!(script.entered(), 3);
    let again = tokio::spawn({
        let (registry, session) = (registry.clone(), session.clone());
        async move { registry.call_in(&session, call()).await }
    });
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(script.entered(), 4, "the key was free: the body ran again");
    again.abort();
}
