//! The attempt loop on paused tokio time, through the real pipeline (`registry.call`): which
//! failures are retried, how long the waits are, what the deadline and the budget cut short,
//! what a non-idempotent tool may repeat, and what the outcome tells about every attempt.

use std::sync::Arc;
use std::time::Duration;

use futures_util::future::join_all;
use toolwright::execute::{BreakerPolicy, BreakerState, RetryBudget, RetryPolicy, SeededRandom};
use toolwright::prelude::*;
use toolwright::{RegistryBuilder, RetryStop};

use crate::support::script::{call, Lookup, PatientLookup, Refund, Script, SendMessage, Step};

const MS: Duration = Duration::from_millis(1);

/// The tools of the script, with the breaker and the budget out of the way so each test sees
/// the rule it is about.
fn builder(script: &Arc<Script>) -> RegistryBuilder {
    Registry::builder()
        .tool(Lookup)
        .tool(PatientLookup)
        .tool(SendMessage)
        .tool(Refund)
        .state(Arc::clone(script))
        .random(SeededRandom::new(42))
        .breaker(BreakerPolicy::disabled())
        .retry_budget(RetryBudget::unlimited())
}

fn message(outcome: &Outcome) -> &str {
    outcome.message().unwrap_or_default()
}

#[tokio::test(start_paused = true)]
async fn transient_failures_are_retried_three_times_in_all_by_default() {
    for kind in [
        ErrorKind::Timeout,
        ErrorKind::RateLimited,
        ErrorKind::Unavailable,
    ] {
        let script = Arc::new(Script::always(Step::Fail(kind)));
        let registry = builder(&script).build().unwrap();
        let outcome = registry.call(call("lookup", 1)).await;
        assert_eq!(outcome.error_kind(), Some(kind));
        assert_eq!(outcome.attempts(), 3, "{kind}");
        assert_eq!(script.entered(), 3, "{kind}");
        assert_eq!(outcome.retry_stop(), Some(RetryStop::Attempts));
        let envelope = outcome.to_model_json();
        assert_eq!(envelope["attempts"], 3);
        assert_eq!(envelope["retryable"], true);
        assert!(
            message(&outcome).contains(&format!("failed 3 attempts: {kind}, {kind}, {kind}")),
            "{}",
            message(&outcome)
        );
    }
}

#[tokio::test(start_paused = true)]
async fn permanent_failures_are_never_retried() {
    for kind in [
        ErrorKind::NotFound,
        ErrorKind::BadRequest,
        ErrorKind::PermissionDenied,
        ErrorKind::AuthExpired,
        ErrorKind::Conflict,
        ErrorKind::InvalidResult,
    ] {
        let script = Arc::new(Script::always(Step::Fail(kind)));
        let registry = builder(&script).build().unwrap();
        let outcome = registry.call(call("lookup", 1)).await;
        assert_eq!(outcome.error_kind(), Some(kind));
        assert_eq!((outcome.attempts(), script.entered()), (1, 1), "{kind}");
        assert_eq!(outcome.retry_stop(), None);
        assert_eq!(message(&outcome), format!("scripted {kind}"));
        assert_eq!(outcome.elapsed(), Duration::ZERO, "no wait for {kind}");
        // The one attempt is told, with how it ended.
        let story = outcome.attempt_history();
        assert_eq!(story.len(), 1, "{kind}");
        assert_eq!((story[0].number(), story[0].error()), (1, Some(kind)));
    }
}

#[tokio::test(start_paused = true)]
async fn the_outcome_tells_the_story_of_every_attempt() {
    let script = Arc::new(Script::new(
        [
            Step::Hang,
            Step::RateLimited(Duration::from_secs(2)),
            Step::Answer,
        ],
        Step::Answer,
    ));
    let registry = builder(&script)
        .call_deadline(Duration::from_secs(60))
        .build()
        .unwrap();
    let outcome = registry.call(call("lookup", 1)).await;
    assert_eq!(outcome.status(), Status::Success);
    assert_eq!(outcome.data_as::<String>().as_deref(), Some("answer 3"));
    assert_eq!(outcome.to_model_json()["attempts"], 3);

    let story = outcome.attempt_history();
    let numbers: Vec<u32> = story.iter().map(|a| a.number()).collect();
    let errors: Vec<_> = story.iter().map(|a| a.error()).collect();
    assert_eq!(numbers, [1, 2, 3]);
    assert_eq!(
        errors,
        [Some(ErrorKind::Timeout), Some(ErrorKind::RateLimited), None]
    );
    assert_eq!(story[0].waited(), Duration::ZERO);
    assert_eq!(
        story[0].elapsed(),
        Duration::from_secs(1),
        "the tool's timeout"
    );
    assert!(story[1].waited() <= Duration::from_millis(250));
    assert_eq!(story[2].waited(), Duration::from_secs(2), "the Retry-After");
    assert_eq!(outcome.retry_stop(), None);
}

#[tokio::test(start_paused = true)]
async fn the_attempt_count_comes_from_the_tool_then_the_registry_policy() {
    let script = Arc::new(Script::always(Step::Fail(ErrorKind::Unavailable)));
    let registry = builder(&script)
        .retry_policy(RetryPolicy::new().max_attempts(2))
        .call_deadline(Duration::from_secs(600))
        .build()
        .unwrap();
    assert_eq!(registry.call(call("lookup", 1)).await.attempts(), 2);
    // `#[tool(retries = 5)]`: six attempts in all, whatever the registry says.
    assert_eq!(registry.call(call("patient_lookup", 2)).await.attempts(), 6);
    let none = builder(&script)
        .retry_policy(RetryPolicy::no_retries())
        .build()
        .unwrap();
    let outcome = none.call(call("lookup", 3)).await;
    assert_eq!(outcome.attempts(), 1);
    assert_eq!(outcome.retry_stop(), Some(RetryStop::Attempts));
}

#[tokio::test(start_paused = true)]
async fn every_retry_delay_is_within_its_jitter_bounds() {
    const CALLS: usize = 60;
    const ATTEMPTS: u32 = 8;
    let policy = RetryPolicy::new().max_attempts(ATTEMPTS);
    let script = Arc::new(Script::always(Step::Fail(ErrorKind::Unavailable)));
    let registry = builder(&script).retry_policy(policy).build().unwrap();

    let mut waits: Vec<Vec<Duration>> = vec![Vec::new(); ATTEMPTS as usize - 1];
    for n in 0..CALLS {
        let before = script.seen().len();
        let outcome = registry.call(call("lookup", n)).await;
        assert_eq!(outcome.attempts(), ATTEMPTS);
        let seen = &script.seen()[before..];
        for (i, record) in outcome.attempt_history().iter().enumerate().skip(1) {
            let ceiling = policy.ceiling(i as u32 - 1);
            assert!(
                record.waited() <= ceiling,
                "retry {i} waited {:?} > {ceiling:?}",
                record.waited()
            );
            // The attempts fail at once, so the gap between two starts is the wait itself,
            // rounded up to tokio's 1 ms timer resolution.
            let gap = seen[i].at - seen[i - 1].at;
            assert!(
                gap >= record.waited() && gap <= record.waited() + MS,
                "retry {i}: slept {gap:?} for a wait of {:?}",
                record.waited()
            );
            waits[i - 1].push(record.waited());
        }
    }
    // Full jitter spreads the waits over the whole interval: the mean sits near half the
    // ceiling (a fixed or equal-jitter schedule would sit at or above it).
    for (n, samples) in waits.iter().enumerate() {
        let ceiling = policy.ceiling(n as u32);
        let mean = samples.iter().sum::<Duration>() / samples.len() as u32;
        assert!(
            mean >= ceiling * 3 / 10 && mean <= ceiling * 7 / 10,
            "retry {n}: mean {mean:?} of ceiling {ceiling:?}"
        );
    }
}

#[tokio::test(start_paused = true)]
async fn retry_after_is_honoured() {
    let script = Arc::new(Script::new(
        [Step::RateLimited(Duration::from_secs(7))],
        Step::Answer,
    ));
    let registry = builder(&script)
        .call_deadline(Duration::from_secs(60))
        .build()
        .unwrap();
    let outcome = registry.call(call("lookup", 1)).await;
    assert_eq!(outcome.status(), Status::Success);
    assert_eq!(outcome.attempts(), 2);
    assert_eq!(
        outcome.attempt_history()[1].waited(),
        Duration::from_secs(7)
    );
    let seen = script.seen();
    let gap = seen[1].at - seen[0].at;
    assert!(gap >= Duration::from_secs(7) && gap <= Duration::from_secs(7) + MS);
}

#[tokio::test(start_paused = true)]
async fn a_retry_after_beyond_the_deadline_is_reported_not_waited_for() {
    let script = Arc::new(Script::always(Step::RateLimited(Duration::from_secs(60))));
    // lookup: 1 s timeout, 3 attempts: a default deadline of 3.75 s.
    let registry = builder(&script).build().unwrap();
    let outcome = registry.call(call("lookup", 1)).await;
    assert_eq!(outcome.error_kind(), Some(ErrorKind::RateLimited));
    assert_eq!(outcome.attempts(), 1);
    assert_eq!(outcome.retry_stop(), Some(RetryStop::Deadline));
    assert_eq!(outcome.elapsed(), Duration::ZERO, "it did not sleep");
    let envelope = outcome.to_model_json();
    assert_eq!(envelope["retry_after_ms"], 60_000, "the model is told when");
    assert!(
        message(&outcome).contains("deadline"),
        "{}",
        message(&outcome)
    );
}

#[tokio::test(start_paused = true)]
async fn the_deadline_cuts_retries_short() {
    let deadline = Duration::from_millis(2500);
    let script = Arc::new(Script::always(Step::Hang));
    let registry = builder(&script)
        .call_deadline(deadline)
        .retry_policy(RetryPolicy::new().max_attempts(10))
        .build()
        .unwrap();
    let outcome = registry.call(call("lookup", 1)).await;
    assert_eq!(outcome.error_kind(), Some(ErrorKind::Timeout));
    assert_eq!(outcome.retry_stop(), Some(RetryStop::Deadline));
    assert!(outcome.attempts() < 10, "{} attempts", outcome.attempts());
    assert!(outcome.elapsed() <= deadline, "{:?}", outcome.elapsed());

    let seen = script.seen();
    let call_deadline = seen[0].deadline;
    for s in &seen {
        assert_eq!(s.deadline, call_deadline, "one deadline for every attempt");
        assert!(s.attempt_deadline <= call_deadline);
        assert_eq!(
            s.attempt_deadline,
            (s.at + Duration::from_secs(1)).min(call_deadline)
        );
    }
    assert_eq!(seen[0].remaining, deadline);
}

#[tokio::test(start_paused = true)]
async fn the_tool_body_reads_its_attempt_number_and_remaining_deadline() {
    let script = Arc::new(Script::new(
        [
            Step::Fail(ErrorKind::Unavailable),
            Step::Fail(ErrorKind::Timeout),
        ],
        Step::Answer,
    ));
    let registry = builder(&script)
        .call_deadline(Duration::from_secs(10))
        .build()
        .unwrap();
    let outcome = registry.call(call("lookup", 1)).await;
    assert_eq!(outcome.status(), Status::Success);
    let seen = script.seen();
    assert_eq!(
        seen.iter().map(|s| s.attempt).collect::<Vec<_>>(),
        [1, 2, 3]
    );
    for s in &seen {
        assert_eq!(s.remaining, s.deadline - s.at);
    }
    assert_eq!(seen[0].remaining, Duration::from_secs(10));
    assert!(seen[2].remaining <= seen[1].remaining && seen[1].remaining <= seen[0].remaining);
}

#[tokio::test(start_paused = true)]
async fn the_budget_holds_retries_to_its_ratio_when_the_dependency_always_fails() {
    const CALLS: u32 = 500;
    let script = Arc::new(Script::always(Step::Fail(ErrorKind::Unavailable)));
    let registry = builder(&script)
        .retry_budget(RetryBudget::new(0.2).min_per_second(0))
        .build()
        .unwrap();
    let outcomes = join_all((0..CALLS as usize).map(|n| registry.call(call("lookup", n)))).await;

    let retries = script.entered() - CALLS;
    // Without the budget this load would have made 2 retries per call (1,000).
    assert!(retries <= CALLS / 5, "{retries} retries for {CALLS} calls");
    assert!(
        retries >= CALLS / 5 - 5,
        "the budget was not used: {retries}"
    );
    let stopped: Vec<&Outcome> = outcomes
        .iter()
        .filter(|o| o.retry_stop() == Some(RetryStop::Budget))
        .collect();
    assert!(stopped.len() >= (CALLS - CALLS / 5) as usize);
    for outcome in stopped {
        assert_eq!(outcome.error_kind(), Some(ErrorKind::Unavailable));
        assert!(
            message(outcome).contains("retry budget"),
            "{}",
            message(outcome)
        );
    }
}

#[tokio::test(start_paused = true)]
async fn a_non_idempotent_tool_without_a_key_is_not_retried_after_a_timeout() {
    let script = Arc::new(Script::always(Step::Hang));
    let registry = builder(&script).build().unwrap();
    let outcome = registry.call(call("send_message", 1)).await;
    assert_eq!(outcome.error_kind(), Some(ErrorKind::Timeout));
    assert_eq!((outcome.attempts(), script.entered()), (1, 1));
    assert_eq!(outcome.retry_stop(), Some(RetryStop::NotIdempotent));
    assert_eq!(outcome.elapsed(), Duration::from_secs(1));
    let envelope = outcome.to_model_json();
    assert_eq!(
        envelope["retryable"], false,
        "calling again could send twice"
    );
    assert!(message(&outcome).contains("not idempotent"));
    assert!(message(&outcome).contains("may already have taken effect"));
}

#[tokio::test(start_paused = true)]
async fn a_non_idempotent_tool_is_retried_when_the_request_never_started() {
    let script = Arc::new(Script::new([Step::NeverStarted], Step::Answer));
    let registry = builder(&script).build().unwrap();
    let outcome = registry.call(call("send_message", 1)).await;
    assert_eq!(outcome.status(), Status::Success);
    assert_eq!(outcome.attempts(), 2);

    // A throttled request was refused before any work was done: repeated too.
    let script = Arc::new(Script::new([Step::RateLimited(MS * 10)], Step::Answer));
    let registry = builder(&script).build().unwrap();
    let outcome = registry.call(call("send_message", 1)).await;
    assert_eq!(outcome.status(), Status::Success);
    assert_eq!(outcome.attempts(), 2);

    let script = Arc::new(Script::always(Step::Fail(ErrorKind::Unavailable)));
    let registry = builder(&script).build().unwrap();
    let outcome = registry.call(call("send_message", 1)).await;
    assert_eq!(
        outcome.attempts(),
        1,
        "an unavailable that may have started is not repeated"
    );
    assert_eq!(outcome.retry_stop(), Some(RetryStop::NotIdempotent));
}

#[tokio::test(start_paused = true)]
async fn a_non_idempotent_tool_with_a_key_is_retried_with_the_same_key_every_attempt() {
    let script = Arc::new(Script::new([Step::Hang, Step::Hang], Step::Answer));
    let registry = builder(&script)
        .call_deadline(Duration::from_secs(60))
        .build()
        .unwrap();
    let session = Session::new("conv-9");
    let outcome = registry.call_in(&session, call("refund", 1)).await;
    assert_eq!(outcome.status(), Status::Success);
    assert_eq!(outcome.attempts(), 3);
    let keys: Vec<String> = script.seen().into_iter().map(|s| s.key).collect();
    assert_eq!(keys, ["conv-9:refund:call_1"; 3]);
}

#[tokio::test(start_paused = true)]
async fn a_panicking_tool_is_contained_and_counts_as_a_breaker_failure() {
    let script = Arc::new(Script::always(Step::Panic));
    let registry = builder(&script)
        .breaker(BreakerPolicy::new().min_calls(2))
        .build()
        .unwrap();
    let breaker = registry.breaker("lookup").unwrap();
    let first = registry.call(call("lookup", 1)).await;
    assert_eq!(first.error_kind(), Some(ErrorKind::ToolPanicked));
    assert_eq!(first.attempts(), 1, "a panic is not retried");
    assert_eq!(breaker.state(), BreakerState::Closed);
    assert_eq!(breaker.stats().failures, 1);

    registry.call(call("lookup", 2)).await;
    assert_eq!(breaker.state(), BreakerState::Open);
    let third = registry.call(call("lookup", 3)).await;
    assert_eq!(third.error_kind(), Some(ErrorKind::CircuitOpen));
    assert_eq!(
        script.entered(),
        2,
        "the open breaker kept the body from running"
    );
    assert_eq!(third.to_model_json()["retry_after_ms"], 30_000);

    // The registry kept serving, and the other tools have breakers of their own.
    script.push(Step::Answer);
    let other = registry.call(call("send_message", 4)).await;
    assert_eq!(other.status(), Status::Success);
}

#[tokio::test(start_paused = true)]
async fn a_successful_attempt_is_timed_to_its_answer() {
    let script = Arc::new(Script::new(
        [Step::Slow(Duration::from_millis(300))],
        Step::Answer,
    ));
    let registry = builder(&script).build().unwrap();
    let slow = registry.call(call("lookup", 1)).await;
    assert_eq!(slow.status(), Status::Success);
    assert_eq!(
        slow.attempt_history()[0].elapsed(),
        Duration::from_millis(300)
    );
    assert_eq!(slow.elapsed(), Duration::from_millis(300));
    let quick = registry.call(call("lookup", 2)).await;
    assert_eq!(quick.attempt_history()[0].elapsed(), Duration::ZERO);
    assert_eq!(quick.attempt_history()[0].error(), None);
}

/// Fails with `unavailable` on its first attempt; then works (on the thread, without ever
/// returning `Pending`) for a few milliseconds of real time and answers.
#[tool(read_only, timeout_ms = 1000)]
async fn busy_lookup(ctx: ToolContext, id: String) -> Result<String, ToolError> {
    if ctx.attempt() == 1 && id == "flaky" {
        return Err(ToolError::unavailable("the first attempt finds it down"));
    }
    std::thread::sleep(Duration::from_millis(3));
    Ok(id)
}

// Real time: an attempt that answers on its first poll is timed by the registry's own clock
// reads, which paused time would make zero.
#[tokio::test]
async fn attempts_that_never_waited_are_timed_too() {
    let registry = Registry::builder()
        .tool(BusyLookup)
        .retry_policy(RetryPolicy::new().base(MS))
        .breaker(BreakerPolicy::disabled())
        .build()
        .unwrap();

    // One attempt that answered: one record, timed like the call itself.
    let once = registry
        .call(ToolCall::new("c1", "busy_lookup", r#"{"id":"steady"}"#))
        .await;
    assert_eq!(once.status(), Status::Success);
    let story = once.attempt_history();
    assert_eq!(story.len(), 1);
    assert_eq!((story[0].number(), story[0].error()), (1, None));
    assert_eq!(story[0].elapsed(), once.elapsed());

    // A retried call: the attempt that answered is timed to its answer.
    let retried = registry
        .call(ToolCall::new("c2", "busy_lookup", r#"{"id":"flaky"}"#))
        .await;
    assert_eq!(
        retried.status(),
        Status::Success,
        "{}",
        retried.to_model_json()
    );
    let story = retried.attempt_history();
    assert_eq!(story.len(), 2);
    assert_eq!(story[0].error(), Some(ErrorKind::Unavailable));
    assert!(story[1].elapsed() >= 3 * MS, "{:?}", story[1].elapsed());
    assert!(story[1].elapsed() <= retried.elapsed());
}

#[tokio::test(start_paused = true)]
async fn the_benchmarks_unguarded_mode_runs_the_body_with_no_timeout() {
    // `lookup` times out after 1 s; this attempt takes 5.
    let script = Arc::new(Script::always(Step::Slow(Duration::from_secs(5))));
    let guarded = builder(&script).build().unwrap();
    let outcome = guarded.call(call("lookup", 1)).await;
    assert_eq!(outcome.error_kind(), Some(ErrorKind::Timeout));
    let bare = builder(&script).unguarded_for_benchmarks().build().unwrap();
    let outcome = bare.call(call("lookup", 2)).await;
    assert_eq!(
        outcome.status(),
        Status::Success,
        "{}",
        outcome.to_model_json()
    );
    assert_eq!(outcome.elapsed(), Duration::from_secs(5));
}
