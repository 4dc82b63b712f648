//! Failure paths of execution through the real pipeline (`Registry::call`): panics contained,
//! a timeout cancelled, every status class of a tool body, a rate limit's retry-after.
//!
//! Every test builds a registry from `#[tool]` functions and sends it the argument text a model
//! could send. Each failure is checked the way a model and an operator see it: the typed facts
//! (`error_kind`, `seam`, `retryable`) and the envelope (`error_type`, `message`, `errors[].path`),
//! and the message must name the field, what was expected and what came.

// `#[arg(validate = f)]` expands to a closure so that deref coercion applies (`fn(&str)` for a
// `String` argument); clippy reads it as user code. Reported for tool-macros to allow it there.
#![allow(clippy::redundant_closure)]

// The fixtures (one `#[tool]` per failure class) and the helpers every failure-path module
// shares, at the binary's root.
use super::*;

// ---------------------------------------------------------------------------------------------
// Execution
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn a_panicking_tool_is_contained_and_the_registry_keeps_serving() {
    let registry = registry();
    let outcome = registry.call(ToolCall::new("c1", "explode", "{}")).await;
    let envelope = assert_failure(&outcome, ErrorKind::ToolPanicked, false);
    assert_eq!(outcome.seam(), Some(Seam::Execution));
    assert!(
        !message(&outcome).contains("the tool body is broken"),
        "the panic text is for logs, not the model: {envelope}"
    );
    for i in 0..3 {
        let next = registry
            .call(ToolCall::new(format!("c{i}"), "ping", "{}"))
            .await;
        assert_eq!(next.status(), Status::Success);
    }
    let again = registry.call(ToolCall::new("c9", "explode", "{}")).await;
    assert_eq!(again.error_kind(), Some(ErrorKind::ToolPanicked));
}

#[tokio::test(start_paused = true)]
async fn a_panic_after_waiting_is_contained_too() {
    let registry = registry();
    let outcome = registry
        .call(ToolCall::new("c1", "explode_later", "{}"))
        .await;
    assert_failure(&outcome, ErrorKind::ToolPanicked, false);
    let next = registry.call(ToolCall::new("c2", "ping", "{}")).await;
    assert_eq!(next.status(), Status::Success);
}

/// A hand-written tool whose `invoke` panics before it returns a future.
struct PanicsEarly;

impl Tool for PanicsEarly {
    type Args = serde_json::Value;
    type Output = String;
    const META: toolwright::ToolMeta =
        toolwright::ToolMeta::new("panics_early", "Fails while building its future.").read_only();

    #[allow(unreachable_code)]
    fn invoke(
        &self,
        _: serde_json::Value,
        _: &toolwright::Invocation<'_>,
    ) -> impl std::future::Future<Output = Result<String, ToolError>> + Send {
        panic!("broken before the first poll");
        async { Ok(String::new()) }
    }
}

#[tokio::test]
async fn a_panic_while_a_tool_builds_its_future_is_contained_too() {
    let registry = Registry::builder().tool(PanicsEarly).build().unwrap();
    let outcome = registry
        .call(ToolCall::new("c1", "panics_early", "{}"))
        .await;
    assert_failure(&outcome, ErrorKind::ToolPanicked, false);
    let again = registry
        .call(ToolCall::new("c2", "panics_early", "{}"))
        .await;
    assert_eq!(again.error_kind(), Some(ErrorKind::ToolPanicked));
}

#[tokio::test(start_paused = true)]
async fn a_tool_past_its_timeout_is_cancelled_with_timeout() {
    let registry = registry();
    let started = tokio::time::Instant::now();
    let outcome = registry
        .call(ToolCall::new("c1", "slow", r#"{"delay_ms":5000}"#))
        .await;
    let envelope = assert_failure(&outcome, ErrorKind::Timeout, true);
    assert!(message(&outcome).contains("100 ms"), "{envelope}");
    // `slow` is read-only, so the framework retried the timeout: 3 attempts of 100 ms each.
    assert_eq!(outcome.attempts(), 3);
    let waits: Duration = outcome.attempt_history().iter().map(|a| a.waited()).sum();
    for attempt in outcome.attempt_history() {
        assert_eq!(attempt.elapsed(), Duration::from_millis(100));
    }
    assert_eq!(started.elapsed(), outcome.elapsed());
    let slept = outcome.elapsed() - Duration::from_millis(300);
    assert!(
        slept >= waits && slept <= waits + Duration::from_millis(2),
        "{slept:?} vs {waits:?}"
    );

    let outcome = registry
        .call(ToolCall::new("c2", "slow", r#"{"delay_ms":99}"#))
        .await;
    assert_eq!(outcome.status(), Status::Success);
    assert_eq!(outcome.data().map(|d| d.get()), Some(r#""done""#));
}

#[tokio::test(start_paused = true)]
async fn every_status_class_from_a_tool_body_reaches_the_envelope() {
    // `call_dependency` is not idempotent and takes no key: a transient failure that may have
    // done something (408, 5xx) is not repeated and says so (`retryable: false`); a 429 refused
    // the request outright, so it is retried (3 attempts) and stays retryable.
    let cases = [
        (400, ErrorKind::BadRequest, false, 1),
        (401, ErrorKind::AuthExpired, false, 1),
        (403, ErrorKind::PermissionDenied, false, 1),
        (404, ErrorKind::NotFound, false, 1),
        (408, ErrorKind::Timeout, false, 1),
        (409, ErrorKind::Conflict, false, 1),
        (410, ErrorKind::NotFound, false, 1),
        (422, ErrorKind::BadRequest, false, 1),
        (429, ErrorKind::RateLimited, true, 3),
        (500, ErrorKind::Unavailable, false, 1),
        (503, ErrorKind::Unavailable, false, 1),
        (200, ErrorKind::InvalidResult, false, 1),
    ];
    let registry = registry();
    for (status, kind, retryable, attempts) in cases {
        // One call id per case: the tool is not idempotent, so the same id with other
        // arguments would be an `idempotency_mismatch`.
        let outcome = registry
            .call(ToolCall::new(
                format!("c{status}"),
                "call_dependency",
                format!(r#"{{"status":{status}}}"#),
            ))
            .await;
        let envelope = assert_failure(&outcome, kind, retryable);
        assert!(
            message(&outcome).starts_with(&format!("the dependency answered {status}")),
            "{envelope}"
        );
        assert_eq!(
            message(&outcome).contains("not idempotent"),
            kind.is_transient() && kind != ErrorKind::RateLimited,
            "{envelope}"
        );
        assert_eq!(outcome.attempts(), attempts, "{envelope}");
        assert!(envelope.get("errors").is_none(), "{envelope}");
        assert!(envelope.get("expected_schema").is_none(), "{envelope}");
    }
}

#[tokio::test(start_paused = true)]
async fn rate_limited_with_retry_after_gives_retry_after_ms() {
    let outcome = call("throttled", "{}").await;
    let envelope = assert_failure(&outcome, ErrorKind::RateLimited, true);
    assert_eq!(outcome.retry_after(), Some(Duration::from_millis(1500)));
    assert_eq!(envelope["retry_after_ms"], 1500);
    // Retried after exactly the Retry-After each time, then reported.
    let waits: Vec<Duration> = outcome
        .attempt_history()
        .iter()
        .map(|a| a.waited())
        .collect();
    assert_eq!(
        waits,
        [
            Duration::ZERO,
            Duration::from_millis(1500),
            Duration::from_millis(1500)
        ]
    );
}
