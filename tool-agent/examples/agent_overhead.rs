//! What the loop costs: per step, over the model's round trip, and in memory per conversation.
//!
//! ```text
//! cargo run --release -p toolwright-agent --features http --example agent_overhead
//! ```
//!
//! 1. **Overhead per step.** A fake OpenAI-compatible server on loopback answers every request
//!    with one tool call until the conversation holds 19 results, then with text: a 20-step run.
//!    Interleaved, iteration by iteration: `Agent::run` with the `OpenAiChat` client, and a
//!    hand-written loop that sends the same requests with reqwest, parses them with
//!    `providers::openai` and calls `Registry::call_in` directly. The difference per step is
//!    what the loop adds (export, system prompt, transcript, events, retry bookkeeping, the
//!    concurrency machinery) on top of the round trip both pay.
//! 2. **Memory per conversation.** A counting allocator measures the live heap a finished
//!    20-step run keeps (its transcript, steps and outcomes) plus its session, with a model
//!    that records nothing.
//! 3. **The repeat check.** The same 20-step run with a model in process (no round trip), with
//!    [`RepeatedCalls`](toolwright_agent::RepeatedCalls) on (the default) and off, interleaved:
//!    the paired difference per step is what recognising a repeated call costs (a fingerprint
//!    of each call, a scan of the run's record).

// A counting global allocator measures the heap: `GlobalAlloc` is an unsafe trait.
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};
use std::time::{Duration, Instant};

use axum::extract::Json;
use axum::Router;
use serde_json::{json, Value};
use toolwright::prelude::*;
use toolwright::providers::{openai, Provider};
use toolwright_agent::http::OpenAiChat;
use toolwright_agent::{
    Agent, BoxFuture, ChatModel, End, Message, ModelError, ModelRequest, RepeatedCalls, Turn,
};
use toolwright_core::providers::Export;

struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_add(
            new_size as isize - layout.size() as isize,
            Ordering::Relaxed,
        );
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

const STEPS: usize = 20;
const ITERATIONS: usize = 200;

/// An order, as a support tool returns it.
#[toolwright::data(output)]
struct Order {
    id: String,
    customer: String,
    item: String,
    total: f64,
    status: &'static str,
}

/// Fetch one order by id.
#[tool(read_only, timeout_ms = 1000)]
async fn get_order(
    /// The order id.
    #[arg(pattern = "^A[0-9]{4}$")]
    order_id: String,
) -> Result<Order, ToolError> {
    Ok(Order {
        customer: "Ada Lovelace".into(),
        item: "mechanical keyboard".into(),
        total: 129.0,
        status: "delivered",
        id: order_id,
    })
}

/// How many tool results the conversation holds: the fake model's step counter.
fn results_in(messages: &[Value]) -> usize {
    messages.iter().filter(|m| m["role"] == "tool").count()
}

fn completion(results: usize) -> Value {
    if results + 1 < STEPS {
        let id = format!("call_{results}");
        let arguments = format!(r#"{{"order_id":"A{:04}"}}"#, 1000 + results);
        json!({"id": "c", "object": "chat.completion", "created": 1, "model": "fake",
               "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant",
                 "content": null, "tool_calls": [{"id": id, "type": "function",
                 "function": {"name": "get_order", "arguments": arguments}}]}}],
               "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}})
    } else {
        json!({"id": "c", "object": "chat.completion", "created": 1, "model": "fake",
               "choices": [{"index": 0, "finish_reason": "stop",
                 "message": {"role": "assistant", "content": "All orders were delivered."}}],
               "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}})
    }
}

async fn fake_provider() -> String {
    let app = Router::new().fallback(|Json(body): Json<Value>| async move {
        let messages = body["messages"].as_array().cloned().unwrap_or_default();
        Json(completion(results_in(&messages)))
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{address}/v1")
}

/// The baseline: the same requests by hand, the registry called directly.
async fn by_hand(
    client: &reqwest::Client,
    base: &str,
    registry: &Registry,
    tools: &Value,
) -> usize {
    let session = Session::new("by-hand");
    let mut messages = vec![
        json!({"role": "system", "content": toolwright::ERROR_CONTRACT}),
        json!({"role": "user", "content": "Check my orders"}),
    ];
    for step in 1.. {
        let body = json!({"model": "fake", "messages": messages, "tools": tools});
        let answer: Value = client
            .post(format!("{base}/chat/completions"))
            .json(&body)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let calls = openai::parse_calls(&answer).unwrap();
        let message = answer["choices"][0]["message"].clone();
        messages.push(message);
        if calls.is_empty() {
            return step;
        }
        for call in calls {
            let outcome = registry.call_in(&session, call).await;
            messages.push(openai::tool_message(&outcome));
        }
    }
    unreachable!()
}

/// A model for the memory measure: the same turns as the fake server, recording nothing.
struct Steps;

impl ChatModel for Steps {
    fn export(&self) -> Export {
        Export::new(Provider::OpenAi)
    }

    fn complete<'a>(
        &'a self,
        request: ModelRequest<'a>,
    ) -> BoxFuture<'a, Result<Turn, ModelError>> {
        let results: usize = request
            .messages
            .iter()
            .map(|m| match m {
                Message::ToolResults(r) => r.len(),
                _ => 0,
            })
            .sum();
        let turn = completion(results);
        let calls = openai::parse_calls(&turn).unwrap_or_default();
        Box::pin(async move {
            Ok(if calls.is_empty() {
                Turn::text("All orders were delivered.").with_usage(100, 10)
            } else {
                Turn::calls(calls).with_usage(100, 10)
            })
        })
    }
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let registry = Registry::builder().tool(GetOrder).build().unwrap();
    let base = fake_provider().await;
    let agent = Agent::builder(
        OpenAiChat::new("fake").base_url(&base).strict(true),
        registry.clone(),
    )
    .max_steps(STEPS)
    .build()
    .unwrap();
    let tools = agent.tools().clone();
    let client = reqwest::Client::new();

    // Warm up both paths (connections, lazy statics).
    for _ in 0..3 {
        let run = agent
            .run(
                &Session::new("warm"),
                vec![Message::user("Check my orders")],
            )
            .await;
        assert!(matches!(run.end(), End::Final(_)), "{:?}", run.end());
        assert_eq!(by_hand(&client, &base, &registry, &tools).await, STEPS);
    }

    let (mut looped, mut direct, mut diffs) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..ITERATIONS {
        let session = Session::new(format!("run-{i}"));
        let started = Instant::now();
        let run = agent
            .run(&session, vec![Message::user("Check my orders")])
            .await;
        let a = started.elapsed() / STEPS as u32;
        assert_eq!(run.steps().len(), STEPS);
        let started = Instant::now();
        assert_eq!(by_hand(&client, &base, &registry, &tools).await, STEPS);
        let b = started.elapsed() / STEPS as u32;
        looped.push(a);
        direct.push(b);
        diffs.push(a.as_secs_f64() - b.as_secs_f64());
    }
    let (a, b) = (median(looped), median(direct));
    diffs.sort_by(f64::total_cmp);
    let paired = diffs[diffs.len() / 2];
    println!("{STEPS}-step conversation against a fake OpenAI-compatible server on loopback, {ITERATIONS} interleaved iterations, medians:");
    println!(
        "  Agent::run                      {:>8.1} µs per step",
        a.as_secs_f64() * 1e6
    );
    println!(
        "  by hand (reqwest + call_in)     {:>8.1} µs per step",
        b.as_secs_f64() * 1e6
    );
    println!(
        "  loop overhead                   {:>8.1} µs per step (median of paired differences; {:+.1}% of the by-hand step)",
        paired * 1e6,
        paired / b.as_secs_f64() * 100.0
    );

    // The repeat check: on and off, interleaved, with the model in process.
    let checked = Agent::builder(Steps, registry.clone())
        .max_steps(STEPS)
        .build()
        .unwrap();
    let unchecked = Agent::builder(Steps, registry.clone())
        .max_steps(STEPS)
        .repeated_calls(RepeatedCalls::off())
        .build()
        .unwrap();
    let mut repeat_diffs = Vec::new();
    let mut per_step = Vec::new();
    for i in 0..ITERATIONS * 5 {
        let timed = |agent: &Agent| {
            let agent = agent.clone();
            let session = Session::new(format!("repeat-{i}"));
            async move {
                let started = Instant::now();
                let run = agent
                    .run(&session, vec![Message::user("Check my orders")])
                    .await;
                assert_eq!(run.steps().len(), STEPS);
                started.elapsed().as_secs_f64() / STEPS as f64
            }
        };
        let (on, off) = if i % 2 == 0 {
            let on = timed(&checked).await;
            (on, timed(&unchecked).await)
        } else {
            let off = timed(&unchecked).await;
            (timed(&checked).await, off)
        };
        repeat_diffs.push(on - off);
        per_step.push(off);
    }
    repeat_diffs.sort_by(f64::total_cmp);
    per_step.sort_by(f64::total_cmp);
    println!(
        "repeat check, {} interleaved pairs, model in process: {:+.2} µs per step (median of paired differences; the step without it {:.1} µs)",
        repeat_diffs.len(),
        repeat_diffs[repeat_diffs.len() / 2] * 1e6,
        per_step[per_step.len() / 2] * 1e6
    );

    // Memory: live heap kept by a finished 20-step run and its session.
    let memory_agent = Agent::builder(Steps, registry)
        .max_steps(STEPS)
        .build()
        .unwrap();
    let warm = memory_agent
        .run(
            &Session::new("warm"),
            vec![Message::user("Check my orders")],
        )
        .await;
    drop(warm);
    let mut kept = Vec::new();
    let before = LIVE.load(Ordering::Relaxed);
    for i in 0..10 {
        let session = Session::new(format!("mem-{i}"));
        let run = memory_agent
            .run(&session, vec![Message::user("Check my orders")])
            .await;
        assert_eq!(run.steps().len(), STEPS);
        kept.push((session, run));
    }
    let after = LIVE.load(Ordering::Relaxed);
    let per = (after - before) as f64 / kept.len() as f64;
    let transcript = kept[0].1.transcript_bytes();
    println!(
        "memory per finished {STEPS}-step conversation (run + session), live heap: {:.1} KiB",
        per / 1024.0
    );
    println!(
        "  of which the transcript (messages, arguments, envelopes): {:.1} KiB",
        transcript as f64 / 1024.0
    );
}
