//! The idempotency store in the pipeline, through `registry.call` on paused tokio time: what a
//! non-idempotent call replays, refuses, and takes downstream again, and with which key.
//!
//! The tools are the scripted ones of `support/script.rs`: each attempt takes the next step of
//! the script and records the idempotency key it saw, so a test can count how often the tool
//! body ran and check that every attempt carried the same key.

use std::sync::Arc;
use std::time::Duration;

use toolwright::execute::{BreakerPolicy, RetryBudget, SeededRandom};
use toolwright::idempotency::{
    Begin, Fingerprint, IdempotencyStore, KeyMode, Lease, Settled, StoreError, StoreFuture,
    StoredOutcome,
};
use toolwright::prelude::*;
use toolwright::RegistryBuilder;

use crate::support::script::{Lookup, Refund, Script, SendMessage, Step};

const REFUND: &str = r#"{"order_id":"A1"}"#;
const OTHER_REFUND: &str = r#"{"order_id":"B2"}"#;

fn builder(script: &Arc<Script>) -> RegistryBuilder {
    Registry::builder()
        .tool(Lookup)
        .tool(SendMessage)
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
async fn a_finished_call_delivered_again_is_replayed_without_running_the_tool() {
    let script = Arc::new(Script::always(Step::Answer));
    let registry = builder(&script).build().unwrap();
    let session = Session::new("conv-1");

    let first = registry.call_in(&session, refund("call_1", REFUND)).await;
    assert_eq!(first.status(), Status::Success);
    assert!(!first.is_replayed());
    assert!(first.to_model_json().get("replayed").is_none());

    let again = registry.call_in(&session, refund("call_1", REFUND)).await;
    assert_eq!(script.entered(), 1, "the tool body ran once");
    assert!(again.is_replayed());
    assert_eq!(again.call_id(), "call_1");
    assert_eq!(again.data().unwrap().get(), first.data().unwrap().get());
    let envelope = again.to_model_json();
    assert_eq!(envelope["replayed"], true);
    assert_eq!(envelope["status"], "success");
    assert_eq!(envelope["attempts"], 1);

    // Another conversation has its own keys: the same call id there is a new action.
    let elsewhere = registry
        .call_in(&Session::new("conv-2"), refund("call_1", REFUND))
        .await;
    assert!(!elsewhere.is_replayed());
    assert_eq!(script.entered(), 2);
}

#[tokio::test(start_paused = true)]
async fn a_stored_error_is_replayed_too() {
    let script = Arc::new(Script::new([Step::Fail(ErrorKind::NotFound)], Step::Answer));
    let registry = builder(&script).build().unwrap();

    let first = registry
        .call_in(&Session::new("anonymous"), refund("call_1", REFUND))
        .await;
    assert_eq!(first.error_kind(), Some(ErrorKind::NotFound));
    let again = registry
        .call_in(&Session::new("anonymous"), refund("call_1", REFUND))
        .await;
    assert_eq!(script.entered(), 1, "a definitive error is not asked again");
    assert!(again.is_replayed());
    assert_eq!(again.error_kind(), Some(ErrorKind::NotFound));
    assert_eq!(again.message(), first.message());
    let envelope = again.to_model_json();
    assert_eq!(envelope["error_type"], "not_found");
    assert_eq!(envelope["replayed"], true);
}

#[tokio::test(start_paused = true)]
async fn a_conflict_is_not_stored_and_the_next_delivery_runs() {
    let script = Arc::new(Script::new([Step::Fail(ErrorKind::Conflict)], Step::Answer));
    let registry = builder(&script).build().unwrap();

    let first = registry
        .call_in(&Session::new("anonymous"), refund("call_1", REFUND))
        .await;
    assert_eq!(first.error_kind(), Some(ErrorKind::Conflict));
    let again = registry
        .call_in(&Session::new("anonymous"), refund("call_1", REFUND))
        .await;
    assert_eq!(again.status(), Status::Success);
    assert!(!again.is_replayed());
    assert_eq!(script.entered(), 2);
}

#[tokio::test(start_paused = true)]
async fn a_concurrent_duplicate_is_refused_as_duplicate_in_flight() {
    let script = Arc::new(Script::always(Step::Slow(Duration::from_millis(500))));
    let registry = builder(&script).build().unwrap();

    let (one, two) = (Session::new("anonymous"), Session::new("anonymous"));
    let (first, second) = tokio::join!(
        registry.call_in(&one, refund("call_1", REFUND)),
        registry.call_in(&two, refund("call_1", REFUND)),
    );
    assert_eq!(first.status(), Status::Success);
    assert_eq!(second.error_kind(), Some(ErrorKind::DuplicateInFlight));
    assert_eq!(second.attempts(), 0, "the duplicate never ran");
    assert_eq!(script.entered(), 1);
    let envelope = second.to_model_json();
    assert_eq!(envelope["error_type"], "duplicate_in_flight");
    assert!(envelope["retry_after_ms"].as_u64().unwrap() > 0);

    // Once the first finished, the duplicate's next delivery replays it.
    let later = registry
        .call_in(&Session::new("anonymous"), refund("call_1", REFUND))
        .await;
    assert!(later.is_replayed());
    assert_eq!(script.entered(), 1);
}

#[tokio::test(start_paused = true)]
async fn the_same_call_id_with_other_arguments_is_an_idempotency_mismatch() {
    let script = Arc::new(Script::always(Step::Answer));
    let registry = builder(&script).build().unwrap();

    registry
        .call_in(&Session::new("anonymous"), refund("call_1", REFUND))
        .await;
    let changed = registry
        .call_in(&Session::new("anonymous"), refund("call_1", OTHER_REFUND))
        .await;
    assert_eq!(changed.error_kind(), Some(ErrorKind::IdempotencyMismatch));
    assert_eq!(changed.attempts(), 0);
    assert!(!changed.retryable());
    assert_eq!(script.entered(), 1);
    // Formatting is not a change: the canonical arguments are the same.
    let reformatted = registry
        .call_in(
            &Session::new("anonymous"),
            refund("call_1", r#"{ "order_id" : "A1" }"#),
        )
        .await;
    assert!(reformatted.is_replayed());
}

#[tokio::test(start_paused = true)]
async fn in_fingerprint_mode_other_arguments_are_another_action_never_a_mismatch() {
    // The key is derived from the arguments, so the same key with other arguments cannot
    // arise: a call with other arguments is a new action under its own key.
    let script = Arc::new(Script::always(Step::Answer));
    let registry = builder(&script)
        .key_mode(KeyMode::Fingerprint)
        .build()
        .unwrap();

    let first = registry
        .call_in(&Session::new("anonymous"), refund("call_1", REFUND))
        .await;
    let other = registry
        .call_in(&Session::new("anonymous"), refund("call_1", OTHER_REFUND))
        .await;
    assert_eq!(first.status(), Status::Success);
    assert_eq!(other.status(), Status::Success);
    assert!(!other.is_replayed());
    let keys = keys(&script);
    assert_eq!(keys.len(), 2);
    assert_ne!(keys[0], keys[1]);
    assert!(keys.iter().all(|k| k.contains(":refund:fp-")), "{keys:?}");
}

#[tokio::test(start_paused = true)]
async fn a_timeout_leaves_the_effect_unknown_and_the_next_call_goes_downstream_with_the_same_key() {
    // Three attempts that hang: the framework retries (the tool takes a key), then gives up.
    let script = Arc::new(Script::new(
        [Step::Hang, Step::Hang, Step::Hang],
        Step::Answer,
    ));
    let registry = builder(&script).build().unwrap();

    let first = registry
        .call_in(&Session::new("anonymous"), refund("call_1", REFUND))
        .await;
    assert_eq!(first.error_kind(), Some(ErrorKind::Timeout));
    assert_eq!(first.attempts(), 3);
    assert!(!first.is_replayed());

    // Not replayed as a failure, nor as a success that did not happen: it runs again.
    let second = registry
        .call_in(&Session::new("anonymous"), refund("call_1", REFUND))
        .await;
    assert_eq!(second.status(), Status::Success);
    assert!(!second.is_replayed());
    assert_eq!(script.entered(), 4);

    let keys = keys(&script);
    assert_eq!(keys.len(), 4);
    assert!(keys.iter().all(|k| *k == keys[0]), "{keys:?}");
    assert_eq!(keys[0], "anonymous:refund:call_1");

    // Now it finished: replayed.
    let third = registry
        .call_in(&Session::new("anonymous"), refund("call_1", REFUND))
        .await;
    assert!(third.is_replayed());
    assert_eq!(
        third.attempts(),
        1,
        "the attempts of the call that finished"
    );
    assert_eq!(script.entered(), 4);
}

#[tokio::test(start_paused = true)]
async fn a_conflict_after_a_timeout_keeps_the_effect_unknown() {
    // The first attempt may have acted; the retry was refused. The key must remember the
    // unknown effect (and its arguments): released, it would forget the first attempt.
    let script = Arc::new(Script::new(
        [Step::Hang, Step::Fail(ErrorKind::Conflict)],
        Step::Answer,
    ));
    let registry = builder(&script).build().unwrap();

    let first = registry
        .call_in(&Session::new("anonymous"), refund("call_1", REFUND))
        .await;
    assert_eq!(first.error_kind(), Some(ErrorKind::Conflict));
    assert_eq!(first.attempts(), 2);
    let changed = registry
        .call_in(&Session::new("anonymous"), refund("call_1", OTHER_REFUND))
        .await;
    assert_eq!(changed.error_kind(), Some(ErrorKind::IdempotencyMismatch));
    let same = registry
        .call_in(&Session::new("anonymous"), refund("call_1", REFUND))
        .await;
    assert_eq!(same.status(), Status::Success);
    assert_eq!(script.entered(), 3);
}

#[tokio::test(start_paused = true)]
async fn a_failure_that_never_started_is_released() {
    let script = Arc::new(Script::new([Step::NeverStarted], Step::Answer));
    let registry = builder(&script)
        .retry_policy(toolwright::execute::RetryPolicy::new().max_attempts(1))
        .build()
        .unwrap();

    let first = registry
        .call_in(&Session::new("anonymous"), refund("call_1", REFUND))
        .await;
    assert_eq!(first.error_kind(), Some(ErrorKind::Unavailable));
    // Released: the key is forgotten, so other arguments under it are no mismatch.
    let other = registry
        .call_in(&Session::new("anonymous"), refund("call_1", OTHER_REFUND))
        .await;
    assert_eq!(other.status(), Status::Success);
}

#[tokio::test(start_paused = true)]
async fn fingerprint_mode_maps_a_re_proposal_with_a_new_call_id_to_the_first_key() {
    let script = Arc::new(Script::new(
        [Step::Hang, Step::Hang, Step::Hang],
        Step::Answer,
    ));
    let registry = builder(&script).build().unwrap();
    let session = Session::new("conv-7").with_key_mode(KeyMode::Fingerprint);

    // The model's first proposal times out; it proposes the same refund again, new call id.
    let first = registry.call_in(&session, refund("call_1", REFUND)).await;
    assert_eq!(first.error_kind(), Some(ErrorKind::Timeout));
    let second = registry
        .call_in(&session, refund("call_2", r#"{ "order_id": "A1" }"#))
        .await;
    assert_eq!(second.status(), Status::Success);
    assert_eq!(second.call_id(), "call_2");
    let keys = keys(&script);
    assert_eq!(keys.len(), 4);
    assert!(keys.iter().all(|k| *k == keys[0]), "{keys:?}");
    let expected = KeyMode::Fingerprint.key(
        "conv-7",
        "refund",
        "call_1",
        &Fingerprint::of("refund", REFUND),
    );
    assert_eq!(keys[0], expected.as_str());

    // A third proposal replays the refund that finished.
    let third = registry.call_in(&session, refund("call_3", REFUND)).await;
    assert!(third.is_replayed());
    assert_eq!(third.call_id(), "call_3");
    assert_eq!(script.entered(), 4);

    // In the default call-id mode the re-proposal is a new action with its own key.
    let plain = Session::new("conv-8");
    registry.call_in(&plain, refund("call_1", REFUND)).await;
    let again = registry.call_in(&plain, refund("call_2", REFUND)).await;
    assert!(!again.is_replayed());
    assert_eq!(script.entered(), 6);
}

#[tokio::test(start_paused = true)]
async fn the_session_key_mode_overrides_the_registry() {
    let script = Arc::new(Script::always(Step::Answer));
    let registry = builder(&script)
        .key_mode(KeyMode::Fingerprint)
        .build()
        .unwrap();
    let session = Session::new("conv-9").with_key_mode(KeyMode::CallId);
    registry.call_in(&session, refund("call_1", REFUND)).await;
    let again = registry.call_in(&session, refund("call_2", REFUND)).await;
    assert!(!again.is_replayed());
    assert_eq!(keys(&script)[1], "conv-9:refund:call_2");
}

#[tokio::test(start_paused = true)]
async fn a_non_idempotent_tool_without_a_key_parameter_is_protected_too() {
    let script = Arc::new(Script::always(Step::Answer));
    let registry = builder(&script).build().unwrap();
    let call = || ToolCall::new("call_1", "send_message", r#"{"text":"hi"}"#);
    registry.call_in(&Session::new("anonymous"), call()).await;
    let again = registry.call_in(&Session::new("anonymous"), call()).await;
    assert!(again.is_replayed());
    assert_eq!(script.entered(), 1);
}

#[tokio::test(start_paused = true)]
async fn idempotent_tools_never_touch_the_store() {
    let script = Arc::new(Script::always(Step::Answer));
    let registry = builder(&script)
        .idempotency_store(Unreachable)
        .build()
        .unwrap();
    let call = || ToolCall::new("call_1", "lookup", r#"{"id":"r1"}"#);
    let first = registry.call_in(&Session::new("anonymous"), call()).await;
    let again = registry.call_in(&Session::new("anonymous"), call()).await;
    assert_eq!(
        (first.status(), again.status()),
        (Status::Success, Status::Success)
    );
    assert!(!again.is_replayed());
    assert_eq!(script.entered(), 2);
}

/// A store whose backend is down.
struct Unreachable;

impl IdempotencyStore for Unreachable {
    fn begin<'a>(
        &'a self,
        _: &'a IdempotencyKey,
        _: &'a Fingerprint,
        _: Duration,
    ) -> StoreFuture<'a, Begin> {
        Box::pin(async { Err(StoreError::Corrupt("backend down".into())) })
    }
    fn complete<'a>(&'a self, _: &'a Lease, _: StoredOutcome) -> StoreFuture<'a, Settled> {
        Box::pin(async { Err(StoreError::Corrupt("backend down".into())) })
    }
    fn record_unknown_effect<'a>(&'a self, _: &'a Lease) -> StoreFuture<'a, Settled> {
        Box::pin(async { Err(StoreError::Corrupt("backend down".into())) })
    }
    fn release<'a>(&'a self, _: &'a Lease) -> StoreFuture<'a, Settled> {
        Box::pin(async { Err(StoreError::Corrupt("backend down".into())) })
    }
}

#[tokio::test(start_paused = true)]
async fn a_store_failure_fails_closed_and_never_counts_against_the_breaker() {
    let script = Arc::new(Script::always(Step::Answer));
    let registry = builder(&script)
        .breaker(BreakerPolicy::new().min_calls(2))
        .idempotency_store(Unreachable)
        .build()
        .unwrap();
    for n in 0..20 {
        let outcome = registry
            .call_in(
                &Session::new("anonymous"),
                refund(&format!("call_{n}"), REFUND),
            )
            .await;
        assert_eq!(outcome.error_kind(), Some(ErrorKind::Unavailable));
        assert_eq!(outcome.attempts(), 0);
        assert!(outcome.retryable());
    }
    assert_eq!(script.entered(), 0, "nothing runs without its record");
    let breaker = registry.breaker("refund").unwrap();
    assert_eq!(breaker.state(), toolwright::execute::BreakerState::Closed);
    assert_eq!((breaker.stats().calls, breaker.stats().failures), (0, 0));
}

#[tokio::test(start_paused = true)]
async fn the_in_memory_store_answers_the_same_reached_directly_or_through_its_trait() {
    // Every way a call settles its key: stored and replayed, released after a conflict,
    // recorded as an unknown effect after a timeout, refused as a mismatch, and a duplicate
    // refused while the first call runs.
    let steps = || {
        Script::new(
            [
                Step::Answer,
                Step::Fail(ErrorKind::Conflict),
                Step::Answer,
                Step::Hang,
                Step::Hang,
                Step::Hang,
                Step::Answer,
                // The first delivery of `call_4` hangs while its duplicate arrives.
                Step::Hang,
                Step::Hang,
                Step::Hang,
            ],
            Step::Answer,
        )
    };
    let calls = [
        // Stored, then replayed.
        ("call_1", REFUND),
        ("call_1", REFUND),
        // Released after a conflict: other arguments under the key are a new action.
        ("call_2", REFUND),
        ("call_2", OTHER_REFUND),
        // An unknown effect after a timeout: other arguments are a mismatch, the same ones run.
        ("call_3", REFUND),
        ("call_3", OTHER_REFUND),
        ("call_3", REFUND),
        ("call_3", REFUND),
    ];
    let mut runs = Vec::new();
    for behind in [false, true] {
        let script = Arc::new(steps());
        let store = toolwright::MemoryStore::new();
        let registry = if behind {
            // Behind its trait alone, the registry cannot tell what the store is: every call
            // reaches it through the boxed futures a store of any kind answers with.
            let behind: Arc<dyn IdempotencyStore> = Arc::new(store);
            builder(&script).idempotency_store(behind)
        } else {
            builder(&script).idempotency_store(store)
        }
        .build()
        .unwrap();
        let session = Session::new("conv-1");
        let mut seen = Vec::new();
        for (id, arguments) in calls {
            let outcome = registry.call_in(&session, refund(id, arguments)).await;
            seen.push((
                outcome.status(),
                outcome.error_kind(),
                outcome.is_replayed(),
                outcome.attempts(),
            ));
        }
        // A duplicate while the first delivery of a new call still runs.
        let (first, duplicate) = tokio::join!(
            registry.call_in(&session, refund("call_4", REFUND)),
            registry.call_in(&session, refund("call_4", REFUND)),
        );
        seen.push((first.status(), first.error_kind(), false, first.attempts()));
        seen.push((duplicate.status(), duplicate.error_kind(), false, 0));
        runs.push((seen, script.entered(), keys(&script)));
    }
    let (direct, behind) = (&runs[0], &runs[1]);
    assert_eq!(direct, behind);
    // The scenario did what it says.
    let kinds: Vec<_> = direct.0.iter().map(|s| s.1).collect();
    use ErrorKind::{Conflict, DuplicateInFlight, IdempotencyMismatch, Timeout};
    assert_eq!(
        kinds,
        [
            None,
            None,
            Some(Conflict),
            None,
            Some(Timeout),
            Some(IdempotencyMismatch),
            None,
            None,
            Some(Timeout),
            Some(DuplicateInFlight),
        ]
    );
    let replayed: Vec<_> = direct.0.iter().map(|s| s.2).collect();
    assert_eq!(
        replayed,
        [false, true, false, false, false, false, false, true, false, false]
    );
}
