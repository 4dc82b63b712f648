//! The circuit breaker's defaults as the README states them, through a registry that sets no
//! breaker policy at all: it opens when at least 50% of 10 or more attempts in a 30 s rolling
//! window failed, stays open 30 s, and doubles that after each failed probe up to 5 minutes.
//! (`tests/it/execute_breaker.rs` tests each transition under a policy of its own.) Paused tokio
//! time; one attempt per call, so each call is one verdict.

use std::sync::Arc;
use std::time::Duration;

use toolwright::execute::{BreakerState, RetryPolicy, SeededRandom};
use toolwright::prelude::*;

use crate::support::script::{call, Lookup, Script, Step};

fn registry(script: &Arc<Script>) -> Registry {
    Registry::builder()
        .tool(Lookup)
        .state(Arc::clone(script))
        .random(SeededRandom::new(7))
        .retry_policy(RetryPolicy::no_retries())
        .build()
        .unwrap()
}

/// Calls `lookup` once per step.
async fn calls(registry: &Registry, script: &Script, steps: &[Step]) {
    for step in steps {
        script.push(step.clone());
        registry.call(call("lookup", 0)).await;
    }
}

fn fails(n: usize) -> Vec<Step> {
    vec![Step::Fail(ErrorKind::Unavailable); n]
}

fn state(registry: &Registry) -> BreakerState {
    registry.breaker("lookup").unwrap().state()
}

#[tokio::test(start_paused = true)]
async fn nine_failures_are_too_few_to_judge_the_tenth_opens_it() {
    let script = Arc::new(Script::always(Step::Answer));
    let registry = registry(&script);
    calls(&registry, &script, &fails(9)).await;
    assert_eq!(
        state(&registry),
        BreakerState::Closed,
        "fewer than 10 calls"
    );
    calls(&registry, &script, &fails(1)).await;
    assert_eq!(state(&registry), BreakerState::Open);
}

#[tokio::test(start_paused = true)]
async fn half_of_ten_failing_opens_it_four_of_ten_does_not() {
    let script = Arc::new(Script::always(Step::Answer));
    let below = registry(&script);
    calls(&below, &script, &vec![Step::Answer; 6]).await;
    calls(&below, &script, &fails(4)).await;
    assert_eq!(state(&below), BreakerState::Closed, "40% of 10");

    let at = registry(&script);
    calls(&at, &script, &vec![Step::Answer; 5]).await;
    calls(&at, &script, &fails(5)).await;
    assert_eq!(state(&at), BreakerState::Open, "50% of 10");
}

#[tokio::test(start_paused = true)]
async fn the_window_is_30_s() {
    let script = Arc::new(Script::always(Step::Answer));
    // Nine failures 25 s ago still count.
    let recent = registry(&script);
    calls(&recent, &script, &fails(9)).await;
    tokio::time::advance(Duration::from_secs(25)).await;
    calls(&recent, &script, &fails(1)).await;
    assert_eq!(state(&recent), BreakerState::Open);

    // Nine failures 35 s ago have left the window.
    let old = registry(&script);
    calls(&old, &script, &fails(9)).await;
    tokio::time::advance(Duration::from_secs(35)).await;
    calls(&old, &script, &fails(1)).await;
    assert_eq!(state(&old), BreakerState::Closed);
}

#[tokio::test(start_paused = true)]
async fn it_stays_open_30_s_doubling_after_each_failed_probe_up_to_5_minutes() {
    let script = Arc::new(Script::always(Step::Answer));
    let registry = registry(&script);
    let breaker = registry.breaker("lookup").unwrap();
    calls(&registry, &script, &fails(10)).await;

    let refused = registry.call(call("lookup", 1)).await;
    assert_eq!(refused.error_kind(), Some(ErrorKind::CircuitOpen));
    assert_eq!(refused.retry_after(), Some(Duration::from_secs(30)));

    let mut cooldown = Duration::from_secs(30);
    for expected in [60, 120, 240, 300, 300] {
        // One second early: still open, and the tool does not run.
        tokio::time::advance(cooldown - Duration::from_secs(1)).await;
        let entered = script.entered();
        let early = registry.call(call("lookup", 2)).await;
        assert_eq!(early.error_kind(), Some(ErrorKind::CircuitOpen));
        assert_eq!(early.retry_after(), Some(Duration::from_secs(1)));
        assert_eq!(script.entered(), entered);

        // On time: one probe, which fails.
        tokio::time::advance(Duration::from_secs(1)).await;
        calls(&registry, &script, &fails(1)).await;
        assert_eq!(script.entered(), entered + 1);
        assert_eq!(breaker.state(), BreakerState::Open);
        cooldown = breaker.stats().retry_after.unwrap();
        assert_eq!(cooldown, Duration::from_secs(expected));
    }
}
