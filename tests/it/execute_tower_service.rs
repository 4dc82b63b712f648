//! A registry behind tower's layers: the `tower` feature's `Service<ToolCall>` implementations
//! compose with a concurrency limit, load shedding and an application's own middleware, and
//! every failure still arrives as an outcome.
#![cfg(feature = "tower")]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use toolwright::prelude::*;
use tower::{service_fn, Service, ServiceBuilder, ServiceExt};

/// What one test's tool runs record: how many run at once, at most.
#[derive(Default)]
struct Counters {
    now: AtomicUsize,
    max: AtomicUsize,
    runs: AtomicUsize,
}

/// The tool's handle on its test's counters.
struct Gauge(Arc<Counters>);

/// Wait a while, counting how many waits overlap.
#[tool(read_only)]
async fn wait(gauge: State<Gauge>, millis: u64) -> Result<u64, ToolError> {
    let Gauge(counters) = &*gauge.0;
    let now = counters.now.fetch_add(1, Ordering::SeqCst) + 1;
    counters.max.fetch_max(now, Ordering::SeqCst);
    counters.runs.fetch_add(1, Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(millis)).await;
    counters.now.fetch_sub(1, Ordering::SeqCst);
    Ok(millis)
}

fn registry(counters: &Arc<Counters>) -> Registry {
    Registry::builder()
        .tool(Wait)
        .state(Gauge(Arc::clone(counters)))
        .build()
        .unwrap()
}

fn call(i: usize, millis: u64) -> ToolCall {
    ToolCall::new(format!("c{i}"), "wait", format!(r#"{{"millis":{millis}}}"#))
}

#[tokio::test(start_paused = true)]
async fn a_concurrency_limit_in_front_of_the_registry_bounds_the_runs() {
    let gauge = Arc::new(Counters::default());
    let service = ServiceBuilder::new()
        .concurrency_limit(3)
        .service(registry(&gauge));
    let calls = (0..20).map(|i| service.clone().oneshot(call(i, 100)));
    let outcomes = futures_util::future::join_all(calls).await;
    for outcome in &outcomes {
        let outcome = outcome.as_ref().unwrap();
        assert_eq!(outcome.status(), Status::Success, "{outcome:?}");
    }
    assert_eq!(gauge.runs.load(Ordering::SeqCst), 20);
    assert_eq!(
        gauge.max.load(Ordering::SeqCst),
        3,
        "the limit is what bounds them"
    );
}

#[tokio::test(start_paused = true)]
async fn load_shedding_refuses_what_the_limit_cannot_take_and_runs_nothing_for_it() {
    let gauge = Arc::new(Counters::default());
    let mut service = ServiceBuilder::new()
        .load_shed()
        .concurrency_limit(1)
        .service(registry(&gauge));
    let first = service.ready().await.unwrap().call(call(0, 100));
    // The one permit is taken: the next call is shed at once, not queued.
    let shed = service.ready().await.unwrap().call(call(1, 100)).await;
    assert!(shed.is_err(), "shed");
    let outcome = first.await.unwrap();
    assert_eq!(outcome.status(), Status::Success);
    assert_eq!(gauge.runs.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_session_bound_service_runs_in_its_conversation_and_failures_are_outcomes() {
    let gauge = Arc::new(Counters::default());
    let registry = registry(&gauge);
    let session = Session::new("conv-7").with_principal("user:ada");
    let mut service = registry.service_in(session);
    assert_eq!(service.session().id(), "conv-7");
    // Bad arguments: an outcome with the envelope, not a service error.
    let outcome = service
        .ready()
        .await
        .unwrap()
        .call(ToolCall::new("c1", "wait", r#"{"millis":"soon"}"#))
        .await
        .unwrap();
    assert_eq!(outcome.error_kind(), Some(ErrorKind::SchemaMismatch));
    let unknown = service
        .ready()
        .await
        .unwrap()
        .call(ToolCall::new("c2", "sleep", "{}"))
        .await
        .unwrap();
    assert_eq!(unknown.error_kind(), Some(ErrorKind::UnknownTool));
    assert_eq!(gauge.runs.load(Ordering::SeqCst), 0, "nothing ran");
}

#[tokio::test]
async fn an_applications_own_middleware_sees_every_call_and_outcome() {
    let gauge = Arc::new(Counters::default());
    let inner = registry(&gauge);
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = Arc::clone(&seen);
    // A layer written as a plain async fn: rewrites the call id, records the outcome's status.
    let service = service_fn(move |call: ToolCall| {
        let (inner, log) = (inner.clone(), Arc::clone(&log));
        async move {
            let call = ToolCall::new(
                format!("tenant-a/{}", call.id()),
                call.name(),
                call.arguments(),
            );
            let outcome = inner.oneshot(call).await?;
            log.lock()
                .unwrap()
                .push((outcome.call_id().to_owned(), outcome.status()));
            Ok::<_, std::convert::Infallible>(outcome)
        }
    });
    let outcome = service.oneshot(call(1, 1)).await.unwrap();
    assert_eq!(outcome.call_id(), "tenant-a/c1");
    assert_eq!(
        *seen.lock().unwrap(),
        [("tenant-a/c1".to_owned(), Status::Success)]
    );
}
