//! A run bounded as a call is: usage limits (requests, tool calls, tokens, cost) and repeated
//! calls, against a scripted model and the real registry pipeline on paused tokio time; kept
//! runs keep both across a crash and a resume, and a corrupt count read back never panics.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use toolwright::conversation::{ConversationStore, MemoryConversationStore};
use toolwright::prelude::*;
use toolwright_agent::{
    Agent, AgentEvent, End, Limit, Message, ModelError, Prices, RepeatedCalls, RunError,
    ScriptedModel, Turn, UsageLimits,
};

#[derive(Default)]
struct Counts {
    lookups: AtomicU32,
    notes: AtomicU32,
    fetches: AtomicU32,
}

/// Look an order up by id.
#[tool(read_only)]
async fn lookup(counts: State<Arc<Counts>>, order_id: String) -> Result<String, ToolError> {
    counts.lookups.fetch_add(1, Ordering::SeqCst);
    Ok(format!("order {order_id}: delivered"))
}

/// Add a note to an order (changes the order: not read-only, no idempotency key).
#[tool]
async fn add_note(
    counts: State<Arc<Counts>>,
    order_id: String,
    note: String,
) -> Result<String, ToolError> {
    counts.notes.fetch_add(1, Ordering::SeqCst);
    Ok(format!("noted on {order_id}: {note}"))
}

/// Fetch an invoice; the invoice store knows none.
#[tool(read_only)]
async fn fetch_invoice(
    counts: State<Arc<Counts>>,
    invoice_id: String,
) -> Result<String, ToolError> {
    counts.fetches.fetch_add(1, Ordering::SeqCst);
    Err(ToolError::not_found(format!("no invoice {invoice_id}")))
}

/// Wait a while, then answer.
#[tool(read_only, timeout_ms = 600000)]
async fn slow_report() -> Result<String, ToolError> {
    tokio::time::sleep(Duration::from_secs(300)).await;
    Ok("report".into())
}

fn registry(counts: &Arc<Counts>) -> Registry {
    Registry::builder()
        .tool(Lookup)
        .tool(AddNote)
        .tool(FetchInvoice)
        .tool(SlowReport)
        .state(Arc::clone(counts))
        .build()
        .expect("the test registry builds")
}

fn lookup_call(id: &str, order: &str) -> ToolCall {
    ToolCall::new(id, "lookup", format!(r#"{{"order_id":"{order}"}}"#))
}

/// A model that never stops calling: a lookup of another order each turn.
fn endless_lookups(turns: usize, usage: (u64, u64)) -> Arc<ScriptedModel> {
    Arc::new(ScriptedModel::new((0..turns).map(|i| {
        Turn::calls([lookup_call(&format!("c{i}"), &format!("A{i}"))]).with_usage(usage.0, usage.1)
    })))
}

fn agent(model: &Arc<ScriptedModel>, counts: &Arc<Counts>) -> toolwright_agent::AgentBuilder {
    Agent::builder(Arc::clone(model), registry(counts)).max_steps(50)
}

fn limit_of(end: &End) -> (Limit, u64, u64) {
    match end {
        End::UsageLimit {
            limit,
            used,
            allowed,
        } => (*limit, *used, *allowed),
        other => panic!("expected a usage limit, got {other:?}"),
    }
}

// Usage limits.

#[tokio::test(start_paused = true)]
async fn a_request_limit_ends_the_run_before_the_request_that_would_pass_it() {
    let counts = Arc::new(Counts::default());
    let model = endless_lookups(20, (10, 5));
    let agent = agent(&model, &counts)
        .usage_limits(UsageLimits::new().max_requests(3))
        .build()
        .unwrap();
    let run = agent
        .run(&Session::new("b1"), vec![Message::user("go")])
        .await;

    assert_eq!(limit_of(run.end()), (Limit::Requests, 4, 3));
    assert_eq!(model.requests().len(), 3, "the 4th request was never sent");
    assert_eq!(run.model_requests(), 3);
    assert_eq!(counts.lookups.load(Ordering::SeqCst), 3);
}

#[tokio::test(start_paused = true)]
async fn retried_requests_count_against_the_request_limit() {
    let counts = Arc::new(Counts::default());
    let model = Arc::new(
        ScriptedModel::new([])
            .then_fail(ModelError::new(ErrorKind::Unavailable, "503"))
            .then_fail(ModelError::new(ErrorKind::Unavailable, "503"))
            .then(Turn::text("late")),
    );
    let retries = Arc::new(AtomicU32::new(0));
    let seen = Arc::clone(&retries);
    let agent = agent(&model, &counts)
        .usage_limits(UsageLimits::new().max_requests(2))
        .on_event(move |event| {
            if matches!(event, AgentEvent::ModelRetry { .. }) {
                seen.fetch_add(1, Ordering::SeqCst);
            }
        })
        .build()
        .unwrap();
    let run = agent
        .run(&Session::new("b2"), vec![Message::user("go")])
        .await;
    assert_eq!(limit_of(run.end()), (Limit::Requests, 3, 2));
    assert_eq!(model.requests().len(), 2);
    // The retry the limit refused was neither announced nor waited for.
    assert_eq!(retries.load(Ordering::SeqCst), 1);
}

#[tokio::test(start_paused = true)]
async fn a_tool_call_limit_runs_none_of_the_calls_of_the_turn_that_would_pass_it() {
    let counts = Arc::new(Counts::default());
    let two = |i: usize| {
        Turn::calls([
            lookup_call(&format!("a{i}"), &format!("A{i}")),
            lookup_call(&format!("b{i}"), &format!("B{i}")),
        ])
    };
    let model = Arc::new(ScriptedModel::new((0..5).map(two)));
    let agent = agent(&model, &counts)
        .usage_limits(UsageLimits::new().max_tool_calls(3))
        .build()
        .unwrap();
    let run = agent
        .run(&Session::new("b3"), vec![Message::user("go")])
        .await;

    assert_eq!(limit_of(run.end()), (Limit::ToolCalls, 4, 3));
    assert_eq!(counts.lookups.load(Ordering::SeqCst), 2);
    assert_eq!(run.tool_calls(), 2);
    // No call of turn 2 ran; each is answered, so the transcript pairs every call with a result.
    let refused = &run.steps()[1].outcomes;
    assert_eq!(refused.len(), 2);
    for outcome in refused {
        assert_eq!(outcome.error_kind(), Some(ErrorKind::RateLimited));
        assert!(!outcome.retryable());
        assert_eq!(outcome.attempts(), 0);
        assert!(outcome
            .message()
            .unwrap()
            .contains("the run reached its limit of 3 tool_calls"));
    }
    assert!(matches!(run.transcript().last(), Some(Message::ToolResults(r)) if r.len() == 2));
}

#[tokio::test(start_paused = true)]
async fn an_output_token_limit_ends_the_run_after_the_answer_that_passed_it() {
    let counts = Arc::new(Counts::default());
    let model = endless_lookups(20, (100, 40));
    let agent = agent(&model, &counts)
        .usage_limits(UsageLimits::new().max_output_tokens(100))
        .build()
        .unwrap();
    let run = agent
        .run(&Session::new("b4"), vec![Message::user("go")])
        .await;

    assert_eq!(limit_of(run.end()), (Limit::OutputTokens, 120, 100));
    assert_eq!(model.requests().len(), 3);
    // The third answer passed it: its call did not run, and is answered so.
    assert_eq!(counts.lookups.load(Ordering::SeqCst), 2);
    let third = &run.steps()[2].outcomes[0];
    assert_eq!(third.error_kind(), Some(ErrorKind::RateLimited));
    assert!(third.message().unwrap().contains("100 output_tokens"));
    assert!(matches!(run.transcript().last(), Some(Message::ToolResults(r)) if r.len() == 1));
    assert_eq!(run.usage().output_tokens, 120);
}

#[tokio::test(start_paused = true)]
async fn input_and_total_token_limits_end_the_run_too() {
    for (limits, expected) in [
        (
            UsageLimits::new().max_input_tokens(250),
            (Limit::InputTokens, 300, 250),
        ),
        (
            UsageLimits::new().max_total_tokens(400),
            (Limit::TotalTokens, 420, 400),
        ),
    ] {
        let counts = Arc::new(Counts::default());
        let model = endless_lookups(20, (100, 40));
        let agent = agent(&model, &counts).usage_limits(limits).build().unwrap();
        let run = agent
            .run(&Session::new("b5"), vec![Message::user("go")])
            .await;
        assert_eq!(limit_of(run.end()), expected);
    }
}

#[tokio::test(start_paused = true)]
async fn a_cost_limit_prices_the_tokens_and_ends_the_run_after_the_answer_that_passed_it() {
    let counts = Arc::new(Counts::default());
    // 1000 in at $2/M and 1000 out at $8/M: $0.01 a turn.
    let model = endless_lookups(20, (1000, 1000));
    let limits = UsageLimits::new().max_cost(0.025, Prices::per_million_tokens(2.0, 8.0));
    let agent = agent(&model, &counts).usage_limits(limits).build().unwrap();
    let run = agent
        .run(&Session::new("b6"), vec![Message::user("go")])
        .await;
    // In millionths of a dollar.
    assert_eq!(limit_of(run.end()), (Limit::Cost, 30_000, 25_000));
    assert_eq!(model.requests().len(), 3);
}

#[tokio::test(start_paused = true)]
async fn a_usage_limit_end_serializes_with_its_limit_named() {
    let counts = Arc::new(Counts::default());
    let model = endless_lookups(5, (1, 1));
    let agent = agent(&model, &counts)
        .usage_limits(UsageLimits::new().max_requests(1))
        .build()
        .unwrap();
    let run = agent
        .run(&Session::new("b7"), vec![Message::user("go")])
        .await;
    let text = serde_json::to_value(&run).unwrap();
    assert_eq!(text["end"]["end"], "usage_limit");
    assert_eq!(text["end"]["detail"]["limit"], "requests");
    assert_eq!(text["requests"], 1);
    let back: toolwright_agent::Run = serde_json::from_value(text).unwrap();
    assert_eq!(back.model_requests(), 1);
    assert_eq!(back.tool_calls(), 1);
}

// Repeated calls.

#[tokio::test(start_paused = true)]
async fn a_model_repeating_a_read_only_call_forever_gets_the_earlier_answer_without_running_it() {
    let counts = Arc::new(Counts::default());
    // The same call written four ways: one fingerprint.
    let texts = [
        r#"{"order_id":"A1"}"#,
        r#"{ "order_id": "A1" }"#,
        "{\"order_id\":\"\\u00411\"}",
        r#"{"order_id":"A1"}"#,
    ];
    let model = Arc::new(ScriptedModel::new((0..8).map(|i| {
        Turn::calls([ToolCall::new(format!("c{i}"), "lookup", texts[i % 4])])
    })));
    let agent = agent(&model, &counts).max_steps(8).build().unwrap();
    let run = agent
        .run(&Session::new("r1"), vec![Message::user("A1?")])
        .await;

    assert!(matches!(run.end(), End::StepLimit), "{:?}", run.end());
    assert_eq!(
        counts.lookups.load(Ordering::SeqCst),
        3,
        "the tool ran 3 times, not 8"
    );
    let fourth = &run.steps()[3].outcomes[0];
    assert_eq!(fourth.call_id(), "c3");
    assert!(fourth.is_ok() && fourth.is_replayed());
    assert_eq!(fourth.data_as::<String>().unwrap(), "order A1: delivered");
    let envelope = fourth.to_model_json();
    assert_eq!(envelope["replayed"], true);
    assert_eq!(envelope["data"], "order A1: delivered");
    assert_eq!(run.tool_calls(), 3);
}

#[tokio::test(start_paused = true)]
async fn identical_calls_in_one_turn_count_together_against_the_threshold() {
    let counts = Arc::new(Counts::default());
    let burst = Turn::calls((0..5).map(|i| lookup_call(&format!("c{i}"), "A1")));
    let model = Arc::new(ScriptedModel::new([burst, Turn::text("done")]));
    let agent = agent(&model, &counts).build().unwrap();
    let run = agent
        .run(&Session::new("burst"), vec![Message::user("A1?")])
        .await;
    assert!(matches!(run.end(), End::Final(_)), "{:?}", run.end());
    assert_eq!(counts.lookups.load(Ordering::SeqCst), 3, "3 of the 5 ran");
    let outcomes = &run.steps()[0].outcomes;
    assert_eq!(outcomes.len(), 5);
    let refused: Vec<&str> = outcomes
        .iter()
        .filter(|o| o.error_kind() == Some(ErrorKind::Conflict))
        .map(|o| o.call_id())
        .collect();
    assert_eq!(
        refused,
        ["c3", "c4"],
        "the calls past the threshold, in call order"
    );
}

#[tokio::test(start_paused = true)]
async fn a_repeated_call_that_changes_something_is_refused_as_a_conflict_past_the_threshold() {
    let counts = Arc::new(Counts::default());
    let note = |i: usize| {
        Turn::calls([ToolCall::new(
            format!("n{i}"),
            "add_note",
            r#"{"order_id":"A1","note":"call back"}"#,
        )])
    };
    let model = Arc::new(ScriptedModel::new((0..5).map(note)));
    let agent = agent(&model, &counts)
        .max_steps(5)
        .repeated_calls(RepeatedCalls::new().max_identical(2))
        .build()
        .unwrap();
    let run = agent
        .run(&Session::new("r2"), vec![Message::user("note it")])
        .await;

    assert_eq!(counts.notes.load(Ordering::SeqCst), 2);
    let third = &run.steps()[2].outcomes[0];
    assert_eq!(third.error_kind(), Some(ErrorKind::Conflict));
    assert!(!third.retryable());
    assert!(third.message().unwrap().contains("already ran 2 times"));
    assert_eq!(third.attempts(), 0);
}

#[tokio::test(start_paused = true)]
async fn a_call_that_keeps_failing_is_not_run_a_third_time_and_keeps_its_error_type() {
    let counts = Arc::new(Counts::default());
    let fetch = |i: usize| {
        Turn::calls([ToolCall::new(
            format!("f{i}"),
            "fetch_invoice",
            r#"{"invoice_id":"I-9"}"#,
        )])
    };
    let model = Arc::new(ScriptedModel::new((0..6).map(fetch)));
    let agent = agent(&model, &counts).max_steps(6).build().unwrap();
    let run = agent
        .run(&Session::new("r3"), vec![Message::user("I-9?")])
        .await;

    assert_eq!(
        counts.fetches.load(Ordering::SeqCst),
        2,
        "2 failures, then no more runs"
    );
    let third = &run.steps()[2].outcomes[0];
    assert_eq!(third.error_kind(), Some(ErrorKind::NotFound));
    assert!(!third.retryable());
    assert!(third.message().unwrap().contains("failed 2 times in a row"));
    assert_eq!(third.attempts(), 0);
}

#[tokio::test(start_paused = true)]
async fn repeats_run_every_time_when_turned_off() {
    let counts = Arc::new(Counts::default());
    let model = Arc::new(ScriptedModel::new(
        (0..6).map(|i| Turn::calls([lookup_call(&format!("c{i}"), "A1")])),
    ));
    let agent = agent(&model, &counts)
        .max_steps(6)
        .repeated_calls(RepeatedCalls::off())
        .build()
        .unwrap();
    agent
        .run(&Session::new("r4"), vec![Message::user("A1?")])
        .await;
    assert_eq!(counts.lookups.load(Ordering::SeqCst), 6);
}

// Kept runs: the counts survive a crash.

/// A replica dies during a slow call after three identical lookups; another resumes the run.
/// It goes on counting requests from the stored count, and the fourth identical lookup is
/// answered from the stored record, not run. Without the stored counts, B would make 5
/// requests and run the lookup again.
#[tokio::test(start_paused = true)]
async fn a_kept_run_resumed_after_a_crash_keeps_its_counts_and_its_repeat_record() {
    let store: Arc<dyn ConversationStore> = Arc::new(MemoryConversationStore::new());
    let counts = Arc::new(Counts::default());
    let session = || Session::new("k1").with_store(Arc::clone(&store));
    let limits = UsageLimits::new().max_requests(5);
    let mut turns: Vec<Turn> = (0..3)
        .map(|i| Turn::calls([lookup_call(&format!("c{i}"), "A1")]))
        .collect();
    turns.push(Turn::calls([ToolCall::new("s", "slow_report", "{}")]));
    let a = Agent::builder(ScriptedModel::new(turns), registry(&counts))
        .deadline(Duration::from_secs(600))
        .usage_limits(limits)
        .build()
        .unwrap();
    let on_a = session();
    let drive = a.run_kept(&on_a, "run-k", vec![Message::user("A1?")]);
    assert!(tokio::time::timeout(Duration::from_secs(60), drive)
        .await
        .is_err());
    assert_eq!(counts.lookups.load(Ordering::SeqCst), 3);

    let b_model = Arc::new(ScriptedModel::new(
        (3..10).map(|i| Turn::calls([lookup_call(&format!("c{i}"), "A1")])),
    ));
    let b = Agent::builder(Arc::clone(&b_model), registry(&counts))
        .deadline(Duration::from_secs(600))
        .usage_limits(limits)
        .build()
        .unwrap();
    tokio::time::advance(Duration::from_secs(600) + toolwright_agent::RUN_LEASE_MARGIN).await;
    let run = b.resume_kept(&session(), "run-k").await.unwrap();

    // A's last save counted 3 requests (the 4th turn was cut off with the crash, and is made
    // again): B may make 2 more, not 5.
    assert_eq!(limit_of(run.end()), (Limit::Requests, 6, 5));
    assert_eq!(b_model.requests().len(), 2);
    assert_eq!(
        counts.lookups.load(Ordering::SeqCst),
        3,
        "the 4th lookup came from the record"
    );
    assert!(run.steps().last().unwrap().outcomes[0].is_replayed());
}

/// Edits the run kept under `id` as JSON and saves it back (no one holds it).
async fn edit_kept(store: &Arc<dyn ConversationStore>, id: &str, edit: impl FnOnce(&mut Value)) {
    let body = store.load_run(id).await.unwrap().unwrap();
    let mut kept: Value = serde_json::from_str(&body).unwrap();
    edit(&mut kept);
    assert!(store
        .save_run(
            id,
            "editor",
            &kept.to_string(),
            Duration::from_secs(3600),
            None
        )
        .await
        .unwrap());
}

#[tokio::test(start_paused = true)]
async fn a_corrupt_stored_count_is_unreadable_or_saturates_never_a_panic() {
    let store: Arc<dyn ConversationStore> = Arc::new(MemoryConversationStore::new());
    let counts = Arc::new(Counts::default());
    let session = Session::new("k2").with_store(Arc::clone(&store));
    let build = |steps: usize| {
        Agent::builder(endless_lookups(5, (10, 10)), registry(&counts))
            .usage_limits(UsageLimits::new().max_requests(100).max_tool_calls(100))
            .max_steps(steps)
            .build()
            .unwrap()
    };
    build(2)
        .run_kept(&session, "run-c", vec![Message::user("go")])
        .await
        .unwrap();

    for corrupt in [
        Value::from(-1),
        Value::from(1.5),
        Value::from("many"),
        serde_json::json!(1e30),
    ] {
        let corrupt = corrupt.clone();
        edit_kept(&store, "run-c", |kept| {
            kept["state"] = "running".into();
            kept["run"]["requests"] = corrupt;
        })
        .await;
        let resumed = build(50).resume_kept(&session, "run-c").await;
        assert!(
            matches!(&resumed, Err(RunError::Unreadable { error, .. }) if error.contains("requests") || error.contains("invalid")),
            "{resumed:?}"
        );
    }

    // The largest count reads back, and the next request saturates into the limit.
    edit_kept(&store, "run-c", |kept| {
        kept["state"] = "running".into();
        kept["run"]["requests"] = Value::from(u64::MAX);
        kept["run"]["tool_calls"] = Value::from(u64::MAX);
        kept["run"]["usage"]["output_tokens"] = Value::from(u64::MAX);
    })
    .await;
    let run = build(50).resume_kept(&session, "run-c").await.unwrap();
    assert_eq!(limit_of(run.end()), (Limit::Requests, u64::MAX, 100));
}
