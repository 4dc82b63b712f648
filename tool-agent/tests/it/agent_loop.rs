//! The loop against a scripted model and the real registry pipeline, on paused tokio time.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use toolwright::approval::ApprovalQueue;
use toolwright::prelude::*;
use toolwright::ERROR_CONTRACT;
use toolwright_agent::{
    AbortReason, Agent, AgentEvent, End, Message, ModelError, ScriptedModel, Turn,
};

/// How many times each tool body ran, per test (no global counters).
#[derive(Default)]
struct Counts {
    lookups: AtomicU32,
    refunds: AtomicU32,
}

/// Look an order up by id.
#[tool(read_only)]
async fn lookup(counts: State<Arc<Counts>>, order_id: String) -> Result<String, ToolError> {
    counts.lookups.fetch_add(1, Ordering::SeqCst);
    Ok(format!("order {order_id}: delivered"))
}

/// Wait `ms` milliseconds, then answer with the number.
#[tool(read_only, timeout_ms = 60000)]
async fn slow(ms: u64) -> Result<u64, ToolError> {
    tokio::time::sleep(Duration::from_millis(ms)).await;
    Ok(ms)
}

/// Refund an order; a person approves each refund.
#[tool(idempotent = true, requires_approval)]
async fn refund(
    counts: State<Arc<Counts>>,
    order_id: String,
    amount: f64,
) -> Result<String, ToolError> {
    counts.refunds.fetch_add(1, Ordering::SeqCst);
    Ok(format!("refunded {amount} on {order_id}"))
}

fn registry(counts: Arc<Counts>) -> Registry {
    Registry::builder()
        .tool(Lookup)
        .tool(Slow)
        .tool(Refund)
        .state(counts)
        .build()
        .expect("the test registry builds")
}

fn call(id: &str, name: &str, args: &str) -> ToolCall {
    ToolCall::new(id, name, args)
}

fn agent(model: &Arc<ScriptedModel>, counts: &Arc<Counts>) -> toolwright_agent::AgentBuilder {
    Agent::builder(Arc::clone(model), registry(Arc::clone(counts)))
}

fn results_of(message: &Message) -> Vec<(String, String)> {
    match message {
        Message::ToolResults(outcomes) => outcomes
            .iter()
            .map(|o| (o.call_id().to_owned(), o.status().to_string()))
            .collect(),
        other => panic!("expected tool results, got {other:?}"),
    }
}

#[tokio::test(start_paused = true)]
async fn a_call_then_an_answer_ends_final_with_transcript_outcomes_and_usage() {
    let counts = Arc::new(Counts::default());
    let model = Arc::new(ScriptedModel::new([
        Turn::calls([call("c1", "lookup", r#"{"order_id":"A1"}"#)]).with_usage(100, 10),
        Turn::text("A1 was delivered.").with_usage(150, 8),
    ]));
    let agent = agent(&model, &counts).system("You help.").build().unwrap();
    let run = agent
        .run(&Session::new("t1"), vec![Message::user("Where is A1?")])
        .await;

    assert!(matches!(run.end(), End::Final(t) if t == "A1 was delivered."));
    assert_eq!(run.final_text(), Some("A1 was delivered."));
    assert_eq!(run.steps().len(), 2);
    assert_eq!(run.steps()[0].outcomes.len(), 1);
    assert_eq!(run.steps()[0].outcomes[0].status(), Status::Success);
    assert_eq!(run.usage().input_tokens, 250);
    assert_eq!(run.usage().output_tokens, 18);
    // user, assistant (call), results, assistant (answer)
    assert_eq!(run.transcript().len(), 4);
    assert_eq!(
        results_of(&run.transcript()[2]),
        [("c1".into(), "success".into())]
    );

    let sent = model.requests();
    assert_eq!(sent.len(), 2);
    assert!(sent[0].system.starts_with("You help."));
    assert!(sent[0].system.ends_with(ERROR_CONTRACT));
    assert_eq!(sent[0].messages.len(), 1);
    assert_eq!(
        sent[1].messages.len(),
        3,
        "the second request carries the call's result"
    );
    let names: Vec<&str> = sent[0]
        .tools
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["lookup", "refund", "slow"]);
}

#[tokio::test(start_paused = true)]
async fn the_error_contract_can_be_left_out_and_is_the_whole_prompt_by_default() {
    let counts = Arc::new(Counts::default());
    let model = Arc::new(ScriptedModel::new([Turn::text("hi")]));
    let default = agent(&model, &counts).build().unwrap();
    assert_eq!(default.system_prompt(), ERROR_CONTRACT);
    let bare = agent(&model, &counts)
        .system("Only this.")
        .without_error_contract()
        .build()
        .unwrap();
    assert_eq!(bare.system_prompt(), "Only this.");
}

#[tokio::test(start_paused = true)]
async fn parallel_calls_run_at_once_and_answer_in_call_order() {
    let counts = Arc::new(Counts::default());
    let turn = Turn::calls([
        call("c1", "slow", r#"{"ms":3000}"#),
        call("c2", "slow", r#"{"ms":1000}"#),
        call("c3", "slow", r#"{"ms":2000}"#),
    ]);
    let model = Arc::new(ScriptedModel::new([turn.clone(), Turn::text("done")]));
    let finished = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&finished);
    let agent = agent(&model, &counts)
        .on_event(move |e| {
            if let AgentEvent::ToolOutcome { outcome: o, .. } = e {
                seen.lock().unwrap().push(o.call_id().to_owned());
            }
        })
        .build()
        .unwrap();
    let run = agent
        .run(&Session::new("t2"), vec![Message::user("go")])
        .await;

    assert!(matches!(run.end(), End::Final(_)));
    // All three at once: the turn takes as long as the slowest call, not the sum.
    let tool_time = run.steps()[0].tool_time;
    assert!(
        tool_time >= Duration::from_secs(3) && tool_time < Duration::from_secs(4),
        "{tool_time:?}"
    );
    // Results go back in the order of the calls, whatever order they finished in.
    let ids: Vec<String> = results_of(&run.transcript()[2])
        .into_iter()
        .map(|(id, _)| id)
        .collect();
    assert_eq!(ids, ["c1", "c2", "c3"]);
    assert_eq!(finished.lock().unwrap().len(), 3);

    // Bound 1: one after the other.
    let model = Arc::new(ScriptedModel::new([turn, Turn::text("done")]));
    let agent = self::agent(&model, &counts)
        .tool_concurrency(1)
        .build()
        .unwrap();
    let run = agent
        .run(&Session::new("t2b"), vec![Message::user("go")])
        .await;
    let tool_time = run.steps()[0].tool_time;
    assert!(tool_time >= Duration::from_secs(6), "{tool_time:?}");
    let ids: Vec<String> = results_of(&run.transcript()[2])
        .into_iter()
        .map(|(id, _)| id)
        .collect();
    assert_eq!(ids, ["c1", "c2", "c3"]);
}

#[tokio::test(start_paused = true)]
async fn an_unknown_tool_and_malformed_arguments_go_back_to_the_model_as_results() {
    let counts = Arc::new(Counts::default());
    let model = Arc::new(ScriptedModel::new([
        Turn::calls([
            call("c1", "lookup_order", r#"{"order_id":"A1"}"#),
            call("c2", "lookup", r#"{"order_id":"A1""#),
        ]),
        Turn::calls([call("c3", "lookup", r#"{"order_id":"A1"}"#)]),
        Turn::text("Found it."),
    ]));
    let agent = agent(&model, &counts).build().unwrap();
    let run = agent
        .run(&Session::new("t3"), vec![Message::user("A1?")])
        .await;

    assert!(matches!(run.end(), End::Final(_)), "{:?}", run.end());
    let kinds: Vec<Option<ErrorKind>> = run.steps()[0]
        .outcomes
        .iter()
        .map(|o| o.error_kind())
        .collect();
    assert_eq!(
        kinds,
        [Some(ErrorKind::UnknownTool), Some(ErrorKind::InvalidJson)]
    );
    let sent = model.requests();
    let Message::ToolResults(results) = &sent[1].messages[2] else {
        panic!("the second request carries the failed calls' results");
    };
    let envelope = results[0].to_model_json();
    assert_eq!(envelope["error_type"], "unknown_tool");
    assert_eq!(envelope["available_tools"][0], "lookup");
    assert_eq!(counts.lookups.load(Ordering::SeqCst), 1);
}

#[tokio::test(start_paused = true)]
async fn a_model_repeating_a_broken_call_is_aborted_by_the_recovery_budget_not_the_step_cap() {
    let counts = Arc::new(Counts::default());
    let broken = Turn::calls([call("c", "lookup", r#"{"order":"A1"}"#)]);
    let model = Arc::new(ScriptedModel::new(vec![broken; 10]));
    let agent = agent(&model, &counts).max_steps(10).build().unwrap();
    let run = agent
        .run(&Session::new("t4"), vec![Message::user("A1?")])
        .await;

    // Schema violations get 2 retries: the 3rd failure's envelope says stop, the 4th call ends it.
    match run.end() {
        End::Aborted(AbortReason::RecoveryExhausted { tool, kind }) => {
            assert_eq!(tool, "lookup");
            assert_eq!(*kind, ErrorKind::SchemaMismatch);
        }
        other => panic!("expected an abort, got {other:?}"),
    }
    assert_eq!(run.steps().len(), 4);
    let third = &run.steps()[2].outcomes[0];
    assert!(!third.retryable());
    assert!(third.message().unwrap().contains("stop calling it"));
    assert_eq!(counts.lookups.load(Ordering::SeqCst), 0);
}

#[tokio::test(start_paused = true)]
async fn a_model_that_keeps_calling_good_tools_stops_at_the_step_cap() {
    let counts = Arc::new(Counts::default());
    let turn = Turn::calls([call("c", "lookup", r#"{"order_id":"A1"}"#)]);
    let model = Arc::new(ScriptedModel::new(vec![turn; 5]));
    let agent = agent(&model, &counts).max_steps(3).build().unwrap();
    let run = agent
        .run(&Session::new("t5"), vec![Message::user("A1?")])
        .await;
    assert!(matches!(run.end(), End::StepLimit));
    assert_eq!(run.steps().len(), 3);
    assert_eq!(model.requests().len(), 3);
    assert_eq!(counts.lookups.load(Ordering::SeqCst), 3);
}

#[tokio::test(start_paused = true)]
async fn a_call_waiting_for_approval_pauses_the_run_and_resume_runs_only_what_waited() {
    let counts = Arc::new(Counts::default());
    let model = Arc::new(ScriptedModel::new([
        Turn::calls([
            call("c1", "lookup", r#"{"order_id":"A1"}"#),
            call("c2", "refund", r#"{"order_id":"A1","amount":5}"#),
        ]),
        Turn::text("Refunded."),
    ]));
    let agent = agent(&model, &counts).build().unwrap();
    let queue = Arc::new(ApprovalQueue::new());
    let session = Session::new("t6").with_approver(Arc::clone(&queue));
    let run = agent.run(&session, vec![Message::user("refund A1")]).await;

    let End::Pending { ticket } = run.end().clone() else {
        panic!("expected a pending run, got {:?}", run.end());
    };
    assert_eq!(queue.waiting()[0].ticket, ticket);
    assert_eq!(counts.lookups.load(Ordering::SeqCst), 1);
    assert_eq!(counts.refunds.load(Ordering::SeqCst), 0);
    assert_eq!(model.requests().len(), 1);
    // Nothing half-answered went into the transcript: user + assistant only.
    assert_eq!(run.transcript().len(), 2);

    assert!(queue.approve(&ticket));
    let run = agent.resume(&session, run).await;
    assert!(
        matches!(run.end(), End::Final(t) if t == "Refunded."),
        "{:?}",
        run.end()
    );
    assert_eq!(
        counts.lookups.load(Ordering::SeqCst),
        1,
        "the lookup is not repeated"
    );
    assert_eq!(counts.refunds.load(Ordering::SeqCst), 1);
    let sent = model.requests();
    assert_eq!(sent.len(), 2);
    assert_eq!(
        results_of(&sent[1].messages[2]),
        [
            ("c1".into(), "success".into()),
            ("c2".into(), "success".into())
        ]
    );
    // The step shows the pending outcome and the one after the decision.
    let statuses: Vec<Status> = run.steps()[0].outcomes.iter().map(|o| o.status()).collect();
    assert_eq!(
        statuses,
        [Status::Success, Status::Pending, Status::Success]
    );
}

#[tokio::test(start_paused = true)]
async fn a_rate_limited_model_request_waits_out_its_retry_after_and_succeeds() {
    let counts = Arc::new(Counts::default());
    let model = Arc::new(
        ScriptedModel::new([])
            .then_fail(
                ModelError::new(ErrorKind::RateLimited, "slow down")
                    .with_retry_after(Duration::from_secs(7)),
            )
            .then(Turn::text("ok")),
    );
    let agent = agent(&model, &counts).build().unwrap();
    let started = tokio::time::Instant::now();
    let run = agent
        .run(&Session::new("t7"), vec![Message::user("hi")])
        .await;
    assert!(matches!(run.end(), End::Final(_)));
    assert_eq!(run.steps()[0].model_attempts, 2);
    assert!(started.elapsed() >= Duration::from_secs(7));
}

#[tokio::test(start_paused = true)]
async fn a_model_request_that_cannot_succeed_is_not_retried_and_ends_the_run() {
    let counts = Arc::new(Counts::default());
    let model = Arc::new(
        ScriptedModel::new([])
            .then_fail(ModelError::new(ErrorKind::AuthExpired, "bad key"))
            .then(Turn::text("never")),
    );
    let agent = agent(&model, &counts).build().unwrap();
    let run = agent
        .run(&Session::new("t8"), vec![Message::user("hi")])
        .await;
    match run.end() {
        End::ModelError(e) => {
            assert_eq!(e.kind(), ErrorKind::AuthExpired);
            assert_eq!(e.attempts(), 1);
        }
        other => panic!("expected a model error, got {other:?}"),
    }
    assert_eq!(model.remaining(), 1);
}

#[tokio::test(start_paused = true)]
async fn unavailable_past_the_attempt_cap_is_a_model_error_with_its_attempts() {
    let counts = Arc::new(Counts::default());
    let down = || ModelError::new(ErrorKind::Unavailable, "HTTP 500");
    let model = Arc::new(
        ScriptedModel::new([])
            .then_fail(down())
            .then_fail(down())
            .then_fail(down())
            .then(Turn::text("too late")),
    );
    let agent = agent(&model, &counts).build().unwrap();
    let run = agent
        .run(&Session::new("t9"), vec![Message::user("hi")])
        .await;
    match run.end() {
        End::ModelError(e) => assert_eq!((e.kind(), e.attempts()), (ErrorKind::Unavailable, 3)),
        other => panic!("expected a model error, got {other:?}"),
    }
}

#[tokio::test(start_paused = true)]
async fn a_run_past_its_deadline_is_aborted() {
    let counts = Arc::new(Counts::default());
    let model = Arc::new(
        ScriptedModel::new([
            Turn::calls([call("c1", "slow", r#"{"ms":50000}"#)]),
            Turn::text("late"),
        ])
        .latency(Duration::from_secs(1)),
    );
    let agent = agent(&model, &counts)
        .deadline(Duration::from_secs(20))
        .build()
        .unwrap();
    let started = tokio::time::Instant::now();
    let run = agent
        .run(&Session::new("t10"), vec![Message::user("hi")])
        .await;
    assert!(
        matches!(run.end(), End::Aborted(AbortReason::Deadline)),
        "{:?}",
        run.end()
    );
    let elapsed = started.elapsed();
    assert!(
        elapsed >= Duration::from_secs(20) && elapsed < Duration::from_secs(25),
        "{elapsed:?}"
    );
}

/// A turn of 10,000 calls: the first `max_calls_per_turn` run, every other one is answered
/// `rate_limited` without running, its message telling the model to split the work.
#[tokio::test(start_paused = true)]
async fn calls_past_the_per_turn_cap_do_not_run_and_tell_the_model_to_split_the_work() {
    let counts = Arc::new(Counts::default());
    // Distinct calls: identical ones would meet the repeat threshold first.
    let calls: Vec<ToolCall> = (0..10_000)
        .map(|i| {
            let arguments = format!(r#"{{"order_id":"A{i}"}}"#);
            call(&format!("c{i}"), "lookup", &arguments)
        })
        .collect();
    let model = Arc::new(ScriptedModel::new([Turn::calls(calls), Turn::text("done")]));
    let capped = agent(&model, &counts).build().unwrap();
    let run = capped
        .run(&Session::new("s"), vec![Message::user("go")])
        .await;
    assert!(matches!(run.end(), End::Final(_)), "{:?}", run.end());
    assert_eq!(
        counts.lookups.load(Ordering::SeqCst),
        toolwright_agent::DEFAULT_MAX_CALLS_PER_TURN as u32
    );
    let results = run
        .transcript()
        .iter()
        .find_map(|m| match m {
            Message::ToolResults(outcomes) => Some(outcomes),
            _ => None,
        })
        .unwrap();
    assert_eq!(results.len(), 10_000);
    assert!(results[..64].iter().all(Outcome::is_ok));
    let refused = &results[64];
    assert_eq!(refused.call_id(), "c64");
    assert_eq!(refused.error_kind(), Some(ErrorKind::RateLimited));
    let message = refused.message().unwrap();
    assert!(message.contains("64"), "{message}");
    assert!(message.contains("did not run"), "{message}");
    assert!(results[64..]
        .iter()
        .all(|o| o.error_kind() == Some(ErrorKind::RateLimited)));

    // The cap is the builder's.
    let counts = Arc::new(Counts::default());
    let model = Arc::new(ScriptedModel::new([
        Turn::calls((0..5).map(|i| call(&format!("c{i}"), "lookup", r#"{"order_id":"A1"}"#))),
        Turn::text("done"),
    ]));
    let two = agent(&model, &counts)
        .max_calls_per_turn(2)
        .build()
        .unwrap();
    two.run(&Session::new("s"), vec![Message::user("go")]).await;
    assert_eq!(counts.lookups.load(Ordering::SeqCst), 2);
}

/// Held: a model that sends 50 MiB of arguments gets a `bad_request` naming the limit, the tool
/// does not run, the run goes on, and what the next request carries back stays small (the
/// arguments are not echoed).
#[tokio::test(start_paused = true)]
async fn fifty_mebibytes_of_arguments_are_refused_and_not_sent_back() {
    let counts = Arc::new(Counts::default());
    let huge = format!(r#"{{"order_id":"{}"}}"#, "A".repeat(50 << 20));
    let model = Arc::new(ScriptedModel::new([
        Turn::calls([call("c1", "lookup", &huge)]),
        Turn::text("I will ask for less."),
    ]));
    let agent = agent(&model, &counts).build().unwrap();
    let run = agent
        .run(&Session::new("huge"), vec![Message::user("go")])
        .await;
    assert!(matches!(run.end(), End::Final(_)), "{:?}", run.end());
    let outcome = &run.steps()[0].outcomes[0];
    assert_eq!(outcome.error_kind(), Some(ErrorKind::BadRequest));
    assert!(
        outcome.to_model_string().contains("bytes"),
        "{}",
        outcome.to_model_string()
    );
    assert!(outcome.to_model_string().len() < 64 << 10);
    assert_eq!(counts.lookups.load(Ordering::SeqCst), 0);
}

/// 1,000 generated tools, every one deferred, and `lookup` always shown: the model is sent two
/// tools, searches, and calls the tool it found in its next turn.
#[tokio::test(start_paused = true)]
async fn a_model_shown_two_of_a_thousand_tools_finds_a_deferred_one_and_calls_it() {
    use serde_json::json;
    use toolwright::dynamic::DynamicTool;

    const VERBS: [&str; 20] = [
        "list", "create", "cancel", "update", "archive", "restore", "count", "export", "assign",
        "close", "reopen", "rename", "tag", "schedule", "refund", "approve", "reject", "merge",
        "split", "delete",
    ];
    const NOUNS: [&str; 50] = [
        "order",
        "invoice",
        "customer",
        "ticket",
        "shipment",
        "subscription",
        "product",
        "warehouse",
        "supplier",
        "contract",
        "payment",
        "coupon",
        "review",
        "return",
        "employee",
        "meeting",
        "project",
        "repository",
        "incident",
        "alert",
        "dashboard",
        "report",
        "budget",
        "campaign",
        "lead",
        "account",
        "device",
        "license",
        "policy",
        "document",
        "folder",
        "task",
        "sprint",
        "release",
        "build",
        "deployment",
        "cluster",
        "database",
        "backup",
        "certificate",
        "domain",
        "mailbox",
        "calendar",
        "room",
        "vehicle",
        "route",
        "flight",
        "booking",
        "patient",
        "invoice_line",
    ];
    let ran = Arc::new(Mutex::new(Vec::<String>::new()));
    let mut builder = Registry::builder()
        .tool(Lookup)
        .state(Arc::new(Counts::default()));
    let mut deferred = Vec::new();
    for verb in VERBS {
        for noun in NOUNS {
            let name = format!("{verb}_{noun}");
            let ran = Arc::clone(&ran);
            let me = name.clone();
            let tool = DynamicTool::builder(name.clone())
                .description(format!("{verb} a {noun} of the organisation, by its id."))
                .input_schema(json!({
                    "type": "object",
                    "properties": {"id": {"type": "string", "description": format!("The {noun}'s id.")}},
                    "required": ["id"],
                }))
                .handler(move |_args, _ctx| {
                    ran.lock().unwrap().push(me.clone());
                    async { Ok(json!("done")) }
                })
                .build()
                .unwrap();
            builder = builder.dynamic_tool(tool);
            deferred.push(name);
        }
    }
    let registry = builder.deferred(deferred).build().unwrap();
    assert_eq!(registry.names().len(), 1_002);

    let model = Arc::new(ScriptedModel::new([
        Turn::calls([call(
            "c1",
            "search_tools",
            r#"{"query":"cancel a subscription","limit":3}"#,
        )]),
        Turn::calls([call("c2", "cancel_subscription", r#"{"id":"S-1"}"#)]),
        Turn::text("Cancelled."),
    ]));
    let agent = Agent::builder(Arc::clone(&model), registry)
        .build()
        .unwrap();
    let run = agent
        .run(
            &Session::new("t-search"),
            vec![Message::user("Cancel my subscription S-1.")],
        )
        .await;
    assert!(
        matches!(run.end(), End::Final(t) if t == "Cancelled."),
        "{:?}",
        run.end()
    );

    let sent = model.requests();
    let names = |i: usize| -> Vec<String> {
        sent[i]
            .tools
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(names(0), ["lookup", "search_tools"]);
    let found: serde_json::Value = run.steps()[0].outcomes[0].data_as().unwrap();
    let found: Vec<&str> = found["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(found.len(), 3);
    assert_eq!(found[0], "cancel_subscription");
    let mut expected: Vec<String> = ["lookup", "search_tools"]
        .iter()
        .chain(&found)
        .map(|s| (*s).to_owned())
        .collect();
    expected.sort();
    assert_eq!(
        names(1),
        expected,
        "the found tools are shown from the next turn"
    );
    assert_eq!(run.steps()[1].outcomes[0].status(), Status::Success);
    assert_eq!(*ran.lock().unwrap(), ["cancel_subscription"]);
}

/// A model whose provider searches deferred tools itself: it is sent every tool, the deferred
/// ones marked `defer_loading`, with the provider's search tool in place of the registry's, and
/// calls a deferred tool directly.
#[tokio::test(start_paused = true)]
async fn a_provider_that_searches_itself_is_sent_deferred_tools_marked_and_may_call_them() {
    use toolwright::providers::{Export, Provider};

    let counts = Arc::new(Counts::default());
    let registry = Registry::builder()
        .tool(Lookup)
        .tool(Slow)
        .deferred(["slow"])
        .state(Arc::clone(&counts))
        .build()
        .unwrap();
    let model = Arc::new(
        ScriptedModel::new([
            Turn::calls([call("c1", "slow", r#"{"ms":5}"#)]),
            Turn::text("done"),
        ])
        .export_for(Export::new(Provider::Anthropic).native_tool_search(true)),
    );
    let agent = Agent::builder(Arc::clone(&model), registry)
        .build()
        .unwrap();
    let run = agent
        .run(&Session::new("t-native"), vec![Message::user("wait a bit")])
        .await;
    assert!(matches!(run.end(), End::Final(_)), "{:?}", run.end());
    assert_eq!(run.steps()[0].outcomes[0].status(), Status::Success);

    let tools = model.requests()[0].tools.clone();
    let tools = tools.as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["lookup", "slow", "tool_search_tool_bm25"]);
    assert_eq!(tools[1]["defer_loading"], true);
    assert!(tools[0].get("defer_loading").is_none());
    assert_eq!(tools[2]["type"], "tool_search_tool_bm25_20251119");
}
