//! The circuit breaker, one test per transition (after resilience4j's
//! `CircuitBreakerStateMachineTest`), through the real pipeline on paused tokio time; the
//! many-threads probe test drives an injected clock instead, because tokio's clock cannot be
//! paused on a multi-threaded runtime.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::join_all;
use tokio::time::Instant;
use toolwright::execute::{
    BreakerPolicy, BreakerState, Clock, RetryBudget, RetryPolicy, SeededRandom, Sleep,
};
use toolwright::prelude::*;
use toolwright::RegistryBuilder;

use crate::support::capture;
use crate::support::script::{call, Lookup, Script, SendMessage, Step};

const COOLDOWN: Duration = Duration::from_secs(30);

/// One attempt per call, so each call is one verdict for the breaker: opens at 50% of at least
/// 4 calls in a 10 s window, 30 s cooldown.
fn policy() -> BreakerPolicy {
    BreakerPolicy::new()
        .min_calls(4)
        .failure_rate(0.5)
        .window(Duration::from_secs(10), 10)
        .cooldown(COOLDOWN)
}

fn builder(script: &Arc<Script>) -> RegistryBuilder {
    Registry::builder()
        .tool(Lookup)
        .tool(SendMessage)
        .state(Arc::clone(script))
        .random(SeededRandom::new(7))
        .retry_policy(RetryPolicy::no_retries())
        .retry_budget(RetryBudget::unlimited())
        .breaker(policy())
}

/// Four failures: the breaker of `lookup` opens.
async fn trip(registry: &Registry, script: &Script) {
    for n in 0..4 {
        script.push(Step::Fail(ErrorKind::Unavailable));
        registry.call(call("lookup", n)).await;
    }
    assert_eq!(
        registry.breaker("lookup").unwrap().state(),
        BreakerState::Open
    );
}

#[tokio::test(start_paused = true)]
async fn stays_closed_below_min_calls_even_when_every_call_fails() {
    let script = Arc::new(Script::always(Step::Fail(ErrorKind::Unavailable)));
    let registry = builder(&script).build().unwrap();
    for n in 0..3 {
        registry.call(call("lookup", n)).await;
    }
    let stats = registry.breaker("lookup").unwrap().stats();
    assert_eq!(stats.state, BreakerState::Closed);
    assert_eq!((stats.calls, stats.failures), (3, 3));
}

#[tokio::test(start_paused = true)]
async fn opens_when_failure_rate_crosses_threshold_after_min_calls() {
    let script = Arc::new(Script::new(
        [
            Step::Answer,
            Step::Answer,
            Step::Fail(ErrorKind::Timeout),
            Step::Fail(ErrorKind::Unavailable),
        ],
        Step::Answer,
    ));
    let registry = builder(&script).build().unwrap();
    let breaker = registry.breaker("lookup").unwrap();
    for n in 0..3 {
        registry.call(call("lookup", n)).await;
    }
    assert_eq!(
        breaker.state(),
        BreakerState::Closed,
        "1 failure in 3 calls"
    );
    registry.call(call("lookup", 3)).await;
    assert_eq!(breaker.state(), BreakerState::Open, "2 failures in 4 calls");
    assert_eq!(breaker.stats().retry_after, Some(COOLDOWN));
}

#[tokio::test(start_paused = true)]
async fn stays_closed_while_failure_rate_is_below_threshold() {
    let script = Arc::new(Script::always(Step::Answer));
    let registry = builder(&script).build().unwrap();
    for n in 0..30 {
        if n % 3 == 2 {
            script.push(Step::Fail(ErrorKind::Unavailable));
        }
        registry.call(call("lookup", n)).await;
    }
    let stats = registry.breaker("lookup").unwrap().stats();
    assert_eq!(stats.state, BreakerState::Closed);
    assert_eq!((stats.calls, stats.failures), (30, 10));
}

#[tokio::test(start_paused = true)]
async fn failures_leave_the_window_as_time_passes() {
    let script = Arc::new(Script::always(Step::Fail(ErrorKind::Unavailable)));
    let registry = builder(&script).build().unwrap();
    for n in 0..3 {
        registry.call(call("lookup", n)).await;
    }
    tokio::time::advance(Duration::from_secs(11)).await;
    registry.call(call("lookup", 4)).await;
    let stats = registry.breaker("lookup").unwrap().stats();
    assert_eq!(stats.state, BreakerState::Closed);
    assert_eq!(stats.calls, 1, "the first three left the 10 s window");
}

#[tokio::test(start_paused = true)]
async fn fails_fast_with_circuit_open_and_retry_after_while_open() {
    let script = Arc::new(Script::always(Step::Answer));
    let registry = builder(&script).build().unwrap();
    trip(&registry, &script).await;
    tokio::time::advance(Duration::from_secs(10)).await;

    let entered = script.entered();
    let outcome = registry.call(call("lookup", 9)).await;
    assert_eq!(script.entered(), entered, "the tool body did not run");
    assert_eq!(outcome.error_kind(), Some(ErrorKind::CircuitOpen));
    assert_eq!(outcome.attempts(), 0);
    assert_eq!(outcome.retry_after(), Some(Duration::from_secs(20)));
    let envelope = outcome.to_model_json();
    assert_eq!(envelope["error_type"], "circuit_open");
    assert_eq!(envelope["seam"], "execution");
    assert_eq!(envelope["retryable"], true);
    assert_eq!(envelope["retry_after_ms"], 20_000);
    assert!(envelope["message"]
        .as_str()
        .unwrap()
        .contains("try again in 20000 ms"));
    // Breakers are per tool: send_message still runs.
    assert_eq!(
        registry.call(call("send_message", 10)).await.status(),
        Status::Success
    );
}

#[tokio::test(start_paused = true)]
async fn admits_a_probe_once_the_cooldown_is_over() {
    let script = Arc::new(Script::always(Step::Answer));
    let registry = builder(&script).build().unwrap();
    let breaker = registry.breaker("lookup").unwrap();
    trip(&registry, &script).await;
    tokio::time::advance(COOLDOWN).await;
    assert_eq!(breaker.state(), BreakerState::Open, "until a call comes");

    script.push(Step::Slow(Duration::from_secs(1)));
    let entered = script.entered();
    let probe = tokio::spawn({
        let registry = registry.clone();
        async move { registry.call(call("lookup", 10)).await }
    });
    while script.entered() == entered {
        tokio::task::yield_now().await;
    }
    assert_eq!(breaker.state(), BreakerState::HalfOpen);
    let outcome = probe.await.unwrap();
    assert_eq!(outcome.status(), Status::Success);
}

#[tokio::test(start_paused = true)]
async fn closes_when_the_probe_succeeds() {
    let script = Arc::new(Script::always(Step::Answer));
    let registry = builder(&script).build().unwrap();
    let breaker = registry.breaker("lookup").unwrap();
    trip(&registry, &script).await;
    tokio::time::advance(COOLDOWN).await;

    assert_eq!(
        registry.call(call("lookup", 10)).await.status(),
        Status::Success
    );
    let stats = breaker.stats();
    assert_eq!(stats.state, BreakerState::Closed);
    assert_eq!((stats.calls, stats.failures), (0, 0), "a fresh window");
}

#[tokio::test(start_paused = true)]
async fn reopens_with_a_longer_cooldown_when_the_probe_fails() {
    let script = Arc::new(Script::always(Step::Answer));
    let registry = builder(&script).build().unwrap();
    let breaker = registry.breaker("lookup").unwrap();
    trip(&registry, &script).await;

    let mut cooldown = COOLDOWN;
    for expected in [60, 120, 240] {
        tokio::time::advance(cooldown).await;
        script.push(Step::Fail(ErrorKind::Timeout));
        let probe = registry.call(call("lookup", 10)).await;
        assert_eq!(probe.error_kind(), Some(ErrorKind::Timeout));
        assert_eq!(breaker.state(), BreakerState::Open);
        cooldown = breaker.stats().retry_after.unwrap();
        assert_eq!(cooldown, Duration::from_secs(expected));
    }
    tokio::time::advance(cooldown).await;
    registry.call(call("lookup", 11)).await;
    assert_eq!(breaker.state(), BreakerState::Closed);

    // Closing forgets the growth: the next opening waits the base cooldown again.
    trip(&registry, &script).await;
    assert_eq!(breaker.stats().retry_after, Some(COOLDOWN));
}

#[tokio::test(start_paused = true)]
async fn only_one_probe_is_admitted_in_half_open() {
    let script = Arc::new(Script::always(Step::Answer));
    let registry = builder(&script).build().unwrap();
    trip(&registry, &script).await;
    tokio::time::advance(COOLDOWN).await;

    script.push(Step::Slow(Duration::from_secs(1)));
    let entered = script.entered();
    let outcomes = join_all((0..1000).map(|n| registry.call(call("lookup", n)))).await;
    assert_eq!(script.entered() - entered, 1, "exactly one body ran");
    let ok = outcomes.iter().filter(|o| o.is_ok()).count();
    let refused: Vec<&Outcome> = outcomes
        .iter()
        .filter(|o| o.error_kind() == Some(ErrorKind::CircuitOpen))
        .collect();
    assert_eq!((ok, refused.len()), (1, 999));
    assert!(refused[0].message().unwrap().contains("being tested"));
    // Turned away while the probe runs: come back once it has answered (the tool's timeout).
    assert_eq!(refused[0].retry_after(), Some(Duration::from_secs(1)));
    assert_eq!(
        registry.breaker("lookup").unwrap().state(),
        BreakerState::Closed
    );
}

#[tokio::test(start_paused = true)]
async fn admits_exactly_n_probes_and_closes_when_all_succeed() {
    let script = Arc::new(Script::always(Step::Answer));
    let registry = builder(&script)
        .breaker_for("lookup", policy().probes(3))
        .build()
        .unwrap();
    let breaker = registry.breaker("lookup").unwrap();
    trip(&registry, &script).await;
    tokio::time::advance(COOLDOWN).await;

    for _ in 0..3 {
        script.push(Step::Gated);
    }
    let entered = script.entered();
    let calls: Vec<_> = (0..100)
        .map(|n| {
            let registry = registry.clone();
            tokio::spawn(async move { registry.call(call("lookup", n)).await })
        })
        .collect();
    while script.entered() - entered < 3 {
        tokio::task::yield_now().await;
    }
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
    assert_eq!(script.entered() - entered, 3);
    script.gate.add_permits(2);
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
    assert_eq!(
        breaker.state(),
        BreakerState::HalfOpen,
        "two of three probes succeeded"
    );
    script.gate.add_permits(1);
    let outcomes = join_all(calls).await;
    assert_eq!(
        outcomes
            .iter()
            .filter(|o| o.as_ref().unwrap().is_ok())
            .count(),
        3
    );
    assert_eq!(breaker.state(), BreakerState::Closed);
}

#[tokio::test(start_paused = true)]
async fn a_cancelled_probe_returns_its_permit() {
    let script = Arc::new(Script::always(Step::Answer));
    let registry = builder(&script).build().unwrap();
    let breaker = registry.breaker("lookup").unwrap();
    trip(&registry, &script).await;
    tokio::time::advance(COOLDOWN).await;

    script.push(Step::Hang);
    let entered = script.entered();
    let probe = tokio::spawn({
        let registry = registry.clone();
        async move { registry.call(call("lookup", 10)).await }
    });
    while script.entered() == entered {
        tokio::task::yield_now().await;
    }
    let busy = registry.call(call("lookup", 11)).await;
    assert_eq!(
        busy.error_kind(),
        Some(ErrorKind::CircuitOpen),
        "the permit is taken"
    );

    probe.abort();
    assert!(probe.await.unwrap_err().is_cancelled());
    assert_eq!(
        breaker.state(),
        BreakerState::HalfOpen,
        "a cancellation is no verdict"
    );

    let next = registry.call(call("lookup", 12)).await;
    assert_eq!(next.status(), Status::Success, "the permit came back");
    assert_eq!(breaker.state(), BreakerState::Closed);
}

#[tokio::test(start_paused = true)]
async fn client_errors_never_count_as_failures() {
    let script = Arc::new(Script::always(Step::Answer));
    let registry = builder(&script).build().unwrap();
    for (n, kind) in [
        ErrorKind::NotFound,
        ErrorKind::Conflict,
        ErrorKind::BadRequest,
        ErrorKind::PermissionDenied,
        ErrorKind::AuthExpired,
    ]
    .into_iter()
    .cycle()
    .take(20)
    .enumerate()
    {
        script.push(Step::Fail(kind));
        assert_eq!(
            registry.call(call("lookup", n)).await.error_kind(),
            Some(kind)
        );
    }
    let stats = registry.breaker("lookup").unwrap().stats();
    assert_eq!(stats.state, BreakerState::Closed);
    assert_eq!((stats.calls, stats.failures), (0, 0));
}

#[tokio::test(start_paused = true)]
async fn validation_failures_never_reach_the_breaker() {
    let script = Arc::new(Script::always(Step::Answer));
    let registry = builder(&script).build().unwrap();
    for (n, args) in ["{", r#"{"id":5}"#, r#"{"id":"a","x":1}"#, "[]"]
        .iter()
        .cycle()
        .take(20)
        .enumerate()
    {
        let outcome = registry
            .call(ToolCall::new(format!("c{n}"), "lookup", *args))
            .await;
        assert_eq!(outcome.seam(), Some(Seam::Validation));
    }
    let stats = registry.breaker("lookup").unwrap().stats();
    assert_eq!((stats.state, stats.calls), (BreakerState::Closed, 0));
}

#[tokio::test(start_paused = true)]
async fn cancelled_calls_count_neither_as_success_nor_failure() {
    let script = Arc::new(Script::always(Step::Hang));
    let registry = builder(&script).build().unwrap();
    for n in 0..10 {
        // The caller gives up after 100 ms, before the tool's 1 s timeout.
        let gave_up =
            tokio::time::timeout(Duration::from_millis(100), registry.call(call("lookup", n)))
                .await;
        assert!(gave_up.is_err());
    }
    assert_eq!(script.entered(), 10);
    let stats = registry.breaker("lookup").unwrap().stats();
    assert_eq!((stats.state, stats.calls), (BreakerState::Closed, 0));
}

#[tokio::test(start_paused = true)]
async fn force_open_fails_every_call_until_reset() {
    let script = Arc::new(Script::always(Step::Answer));
    let registry = builder(&script).build().unwrap();
    let breaker = registry.breaker("lookup").unwrap();
    breaker.force_open();
    assert_eq!(breaker.state(), BreakerState::ForcedOpen);

    tokio::time::advance(Duration::from_secs(3600)).await;
    let outcome = registry.call(call("lookup", 1)).await;
    assert_eq!(outcome.error_kind(), Some(ErrorKind::CircuitOpen));
    let envelope = outcome.to_model_json();
    assert_eq!(envelope["retryable"], false);
    assert!(
        envelope.get("retry_after_ms").is_none(),
        "no one knows when"
    );
    assert_eq!(script.entered(), 0);
    // Refused before its first attempt: nothing ran, so no retrying was stopped.
    assert_eq!(outcome.attempts(), 0);
    assert_eq!(outcome.retry_stop(), None);

    breaker.reset();
    assert_eq!(breaker.state(), BreakerState::Closed);
    assert!(registry.call(call("lookup", 2)).await.is_ok());
}

#[tokio::test(start_paused = true)]
async fn reset_closes_an_open_breaker_and_forgets_its_window() {
    let script = Arc::new(Script::always(Step::Answer));
    let registry = builder(&script).build().unwrap();
    let breaker = registry.breaker("lookup").unwrap();
    trip(&registry, &script).await;
    breaker.reset();
    let stats = breaker.stats();
    assert_eq!(
        (stats.state, stats.calls, stats.failures),
        (BreakerState::Closed, 0, 0)
    );
    assert!(registry.call(call("lookup", 1)).await.is_ok());
}

#[tokio::test(start_paused = true)]
async fn the_handle_names_its_tool_and_policy_and_counts_the_openings() {
    let script = Arc::new(Script::always(Step::Answer));
    let strict = policy().min_calls(2).failure_rate(0.25);
    let registry = builder(&script)
        .breaker_for("send_message", strict)
        .build()
        .unwrap();
    let breaker = registry.breaker("lookup").unwrap();
    let other = registry.breaker("send_message").unwrap();
    // What a dashboard shows beside each breaker.
    assert_eq!((breaker.tool(), other.tool()), ("lookup", "send_message"));
    assert_eq!((*breaker.policy(), *other.policy()), (policy(), strict));

    assert_eq!(breaker.openings(), 0);
    trip(&registry, &script).await;
    assert_eq!(breaker.openings(), 1);
    // A failed probe opens it again: counted; a forced opening is not, nor another tool's.
    tokio::time::advance(COOLDOWN).await;
    script.push(Step::Fail(ErrorKind::Timeout));
    registry.call(call("lookup", 10)).await;
    assert_eq!(breaker.state(), BreakerState::Open);
    assert_eq!(breaker.openings(), 2);
    breaker.force_open();
    assert_eq!((breaker.openings(), other.openings()), (2, 0));
}

#[tokio::test(start_paused = true)]
async fn opening_between_attempts_stops_the_retries() {
    let script = Arc::new(Script::always(Step::Fail(ErrorKind::Unavailable)));
    let registry = builder(&script)
        .retry_policy(RetryPolicy::new())
        .breaker(policy().min_calls(2))
        .build()
        .unwrap();
    let outcome = registry.call(call("lookup", 1)).await;
    assert_eq!(outcome.error_kind(), Some(ErrorKind::CircuitOpen));
    assert_eq!(outcome.attempts(), 2, "the third attempt was refused");
    assert_eq!(
        outcome.retry_stop(),
        Some(toolwright::RetryStop::CircuitOpen)
    );
    let history: Vec<_> = outcome
        .attempt_history()
        .iter()
        .map(|a| a.error())
        .collect();
    assert_eq!(history, [Some(ErrorKind::Unavailable); 2]);
    assert!(outcome
        .message()
        .unwrap()
        .contains("last attempt failed (unavailable)"));
    assert!(outcome.retry_after().is_some());
}

#[tokio::test(start_paused = true)]
async fn transitions_are_emitted_as_tracing_events() {
    let script = Arc::new(Script::always(Step::Answer));
    let registry = builder(&script).build().unwrap();
    let breaker = registry.breaker("lookup").unwrap();
    let seen = capture::capture(async {
        trip(&registry, &script).await;
        tokio::time::advance(COOLDOWN).await;
        script.push(Step::Fail(ErrorKind::Timeout));
        registry.call(call("lookup", 1)).await;
        tokio::time::advance(COOLDOWN * 2).await;
        registry.call(call("lookup", 2)).await;
        breaker.force_open();
        breaker.reset();
    })
    .await;

    let transitions: Vec<String> = seen
        .of("toolwright::breaker")
        .iter()
        .filter_map(|e| Some(format!("{} -> {}", e.get("from")?, e.get("to")?)))
        .collect();
    assert_eq!(
        transitions,
        [
            "closed -> open",
            "open -> half_open",
            "half_open -> open",
            "open -> half_open",
            "half_open -> closed",
            "closed -> forced_open",
            "forced_open -> closed",
        ]
    );
}

/// A clock moved by hand, usable from any number of worker threads.
#[derive(Clone)]
struct ManualClock(Arc<ManualInner>);

struct ManualInner {
    base: Instant,
    offset_nanos: AtomicU64,
    tick: tokio::sync::Notify,
}

impl ManualClock {
    fn new() -> Self {
        ManualClock(Arc::new(ManualInner {
            base: Instant::now(),
            offset_nanos: AtomicU64::new(0),
            tick: tokio::sync::Notify::new(),
        }))
    }

    fn advance(&self, by: Duration) {
        self.0
            .offset_nanos
            .fetch_add(by.as_nanos() as u64, Ordering::SeqCst);
        self.0.tick.notify_waiters();
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Instant {
        self.0.base + Duration::from_nanos(self.0.offset_nanos.load(Ordering::SeqCst))
    }

    fn sleep_until(&self, deadline: Instant) -> Sleep {
        let clock = self.clone();
        let sleep: Pin<Box<dyn Future<Output = ()> + Send>> = Box::pin(async move {
            loop {
                let tick = clock.0.tick.notified();
                tokio::pin!(tick);
                tick.as_mut().enable();
                if clock.now() >= deadline {
                    return;
                }
                tick.await;
            }
        });
        sleep
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_one_probe_is_admitted_in_half_open_across_worker_threads() {
    let clock = ManualClock::new();
    let script = Arc::new(Script::always(Step::Answer));
    let registry = builder(&script).clock(clock.clone()).build().unwrap();
    let breaker = registry.breaker("lookup").unwrap();
    trip(&registry, &script).await;
    clock.advance(COOLDOWN);

    script.push(Step::Gated);
    let entered = script.entered();
    let refused = Arc::new(AtomicU32::new(0));
    let calls: Vec<_> = (0..1000)
        .map(|n| {
            let (registry, refused) = (registry.clone(), Arc::clone(&refused));
            tokio::spawn(async move {
                let outcome = registry.call(call("lookup", n)).await;
                if outcome.error_kind() == Some(ErrorKind::CircuitOpen) {
                    refused.fetch_add(1, Ordering::SeqCst);
                }
                outcome
            })
        })
        .collect();
    // Every caller has either been refused or is inside the body (held at the gate).
    let settled = async {
        while refused.load(Ordering::SeqCst) + (script.entered() - entered) < 1000 {
            tokio::task::yield_now().await;
        }
    };
    tokio::time::timeout(Duration::from_secs(60), settled)
        .await
        .expect("every caller settles");
    assert_eq!(
        script.entered() - entered,
        1,
        "exactly one probe across threads"
    );
    assert_eq!(refused.load(Ordering::SeqCst), 999);

    script.gate.add_permits(1000);
    let outcomes = join_all(calls).await;
    assert_eq!(
        outcomes
            .iter()
            .filter(|o| o.as_ref().unwrap().is_ok())
            .count(),
        1
    );
    assert_eq!(breaker.state(), BreakerState::Closed);
}

#[test]
fn a_breaker_policy_for_an_unknown_tool_is_a_build_error() {
    let script = Arc::new(Script::always(Step::Answer));
    let built = builder(&script).breaker_for("lokup", policy()).build();
    assert_eq!(
        built.err(),
        Some(toolwright::BuildError::UnknownBreakerTool("lokup".into()))
    );
}

/// Answers after 20 s.
#[tool(read_only, timeout_ms = 60000)]
async fn slow_report() -> Result<String, ToolError> {
    tokio::time::sleep(Duration::from_secs(20)).await;
    Ok("report".into())
}

#[tokio::test(start_paused = true)]
async fn a_slow_success_counts_in_the_window_when_it_answers() {
    let registry = Registry::builder()
        .tool(SlowReport)
        .breaker(BreakerPolicy::new().window(Duration::from_secs(30), 10))
        .build()
        .unwrap();
    let outcome = registry
        .call(ToolCall::new("c1", "slow_report", "{}"))
        .await;
    assert!(outcome.is_ok(), "{}", outcome.to_model_json());
    // 45 s after the call began, 25 s after it answered: the answer is in the 30 s window, the
    // call's start is not.
    tokio::time::advance(Duration::from_secs(25)).await;
    let stats = registry.breaker("slow_report").unwrap().stats();
    assert_eq!((stats.calls, stats.failures), (1, 0));
}
