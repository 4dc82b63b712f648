//! The loop and the HTTP clients against a fake provider on loopback, in each provider's real
//! wire format. Every request the loop sends is captured and checked: Chat Completions requests
//! also against async-openai's request types. Real time (sockets and paused time do not mix): the
//! only waits are a 1 s Retry-After and 10 ms backoffs.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_openai::types::chat::CreateChatCompletionRequest;
use serde_json::{json, Value};
use toolwright::approval::ApprovalQueue;
use toolwright::execute::RetryPolicy;
use toolwright::prelude::*;
use toolwright_agent::http::{
    AnthropicMessages, GeminiGenerate, OpenAiChat, OpenAiResponses, ReceivedRequest, ScriptedReply,
    ScriptedServer,
};
use toolwright_agent::{Agent, AgentEvent, ChatModel, End, Message, Turn};

use crate::support::fake_provider::{chat, FakeProvider, Reply};

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

fn agent(model: impl ChatModel, counts: &Arc<Counts>) -> toolwright_agent::AgentBuilder {
    let registry = Registry::builder()
        .tool(Lookup)
        .tool(Refund)
        .state(Arc::clone(counts))
        .build()
        .unwrap();
    Agent::builder(model, registry)
        .system("You are a support agent.")
        .model_retry(RetryPolicy::new().base(Duration::from_millis(10)))
}

fn openai(server: &FakeProvider) -> OpenAiChat {
    OpenAiChat::new("fake-model")
        .base_url(format!("{}/v1", server.base))
        .api_key("test-key")
}

/// The body parses as the official request type (async-openai's), and survives the round trip
/// without losing a field.
fn is_chat_request(body: &Value) -> CreateChatCompletionRequest {
    let request: CreateChatCompletionRequest = serde_json::from_value(body.clone())
        .unwrap_or_else(|e| panic!("not a Chat Completions request: {e}\n{body:#}"));
    request
}

#[tokio::test]
async fn parallel_calls_with_malformed_arguments_and_an_unknown_tool_reach_the_model_as_results() {
    let server = FakeProvider::start([
        Reply::json(chat::calls(vec![
            chat::call("call_a", "lookup", r#"{"order_id":"A1"}"#),
            chat::call("call_b", "lookup", r#"{"order_id": "A2""#),
            chat::call("call_c", "lookup_order", r#"{"order_id":"A3"}"#),
        ])),
        Reply::json(chat::text("A1 was delivered; I could not read the others.")),
    ])
    .await;
    let counts = Arc::new(Counts::default());
    let agent = agent(openai(&server), &counts).build().unwrap();
    let run = agent
        .run(
            &Session::new("w1"),
            vec![Message::user("Where are A1, A2, A3?")],
        )
        .await;

    assert!(matches!(run.end(), End::Final(_)), "{:?}", run.end());
    assert_eq!(run.usage().input_tokens, 320);
    let kinds: Vec<Option<ErrorKind>> = run.steps()[0]
        .outcomes
        .iter()
        .map(|o| o.error_kind())
        .collect();
    assert_eq!(
        kinds,
        [
            None,
            Some(ErrorKind::InvalidJson),
            Some(ErrorKind::UnknownTool)
        ]
    );

    let sent = server.received();
    assert_eq!(sent.len(), 2);
    assert_eq!(sent[0].path, "/v1/chat/completions");
    assert_eq!(sent[0].headers["authorization"], "Bearer test-key");
    for request in &sent {
        is_chat_request(&request.body);
    }
    let first = &sent[0].body;
    assert_eq!(first["model"], "fake-model");
    assert_eq!(first["messages"][0]["role"], "system");
    assert!(first["messages"][0]["content"]
        .as_str()
        .unwrap()
        .contains("error_type"));
    assert_eq!(first["tools"][0]["function"]["strict"], true);
    let messages = sent[1].body["messages"].as_array().unwrap();
    let roles: Vec<&str> = messages
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        roles,
        ["system", "user", "assistant", "tool", "tool", "tool"]
    );
    // The model's malformed argument text goes back exactly as it came.
    assert_eq!(
        messages[2]["tool_calls"][1]["function"]["arguments"],
        r#"{"order_id": "A2""#
    );
    let ids: Vec<&str> = messages[3..]
        .iter()
        .map(|m| m["tool_call_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["call_a", "call_b", "call_c"]);
    let unknown: Value = serde_json::from_str(messages[5]["content"].as_str().unwrap()).unwrap();
    assert_eq!(unknown["error_type"], "unknown_tool");
    assert_eq!(unknown["available_tools"], json!(["lookup", "refund"]));
}

#[tokio::test]
async fn a_429_with_retry_after_is_waited_out_then_the_turn_succeeds() {
    let server = FakeProvider::start([
        Reply::status(
            429,
            json!({"error": {"message": "Rate limit reached", "type": "requests"}}),
        )
        .header("retry-after", "1"),
        Reply::json(chat::text("Hello.")),
    ])
    .await;
    let counts = Arc::new(Counts::default());
    let retries = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&retries);
    let agent = agent(openai(&server), &counts)
        .on_event(move |e| {
            if let AgentEvent::ModelRetry { error, wait } = e {
                seen.lock()
                    .unwrap()
                    .push((error.kind(), *wait, error.message().to_owned()));
            }
        })
        .build()
        .unwrap();
    let started = Instant::now();
    let run = agent
        .run(&Session::new("w2"), vec![Message::user("hi")])
        .await;
    assert!(
        matches!(run.end(), End::Final(t) if t == "Hello."),
        "{:?}",
        run.end()
    );
    assert!(started.elapsed() >= Duration::from_secs(1));
    assert_eq!(run.steps()[0].model_attempts, 2);
    let retries = retries.lock().unwrap();
    assert_eq!(retries.len(), 1);
    assert_eq!(
        (retries[0].0, retries[0].1),
        (ErrorKind::RateLimited, Duration::from_secs(1))
    );
    assert!(
        retries[0].2.contains("Rate limit reached"),
        "{}",
        retries[0].2
    );
}

#[tokio::test]
async fn a_500_twice_is_retried_and_the_third_request_answers() {
    let down = || {
        Reply::status(
            500,
            json!({"error": {"message": "The server had an error"}}),
        )
    };
    let server = FakeProvider::start([down(), down(), Reply::json(chat::text("Back."))]).await;
    let counts = Arc::new(Counts::default());
    let agent = agent(openai(&server), &counts).build().unwrap();
    let run = agent
        .run(&Session::new("w3"), vec![Message::user("hi")])
        .await;
    assert!(
        matches!(run.end(), End::Final(t) if t == "Back."),
        "{:?}",
        run.end()
    );
    assert_eq!(run.steps()[0].model_attempts, 3);
    assert_eq!(server.received().len(), 3);

    // A third 500 is one too many for the default three attempts.
    let server =
        FakeProvider::start([down(), down(), down(), Reply::json(chat::text("never"))]).await;
    let agent = self::agent(openai(&server), &counts).build().unwrap();
    let run = agent
        .run(&Session::new("w3b"), vec![Message::user("hi")])
        .await;
    match run.end() {
        End::ModelError(e) => {
            assert_eq!((e.kind(), e.attempts()), (ErrorKind::Unavailable, 3));
            assert!(e.message().contains("HTTP 500"), "{}", e.message());
        }
        other => panic!("expected a model error, got {other:?}"),
    }
}

#[tokio::test]
async fn a_400_is_not_retried_and_carries_the_providers_message() {
    let server = FakeProvider::start([
        Reply::status(
            400,
            json!({"error": {"message": "Invalid schema for function 'lookup'"}}),
        ),
        Reply::json(chat::text("never")),
    ])
    .await;
    let counts = Arc::new(Counts::default());
    let agent = agent(openai(&server), &counts).build().unwrap();
    let run = agent
        .run(&Session::new("w4"), vec![Message::user("hi")])
        .await;
    match run.end() {
        End::ModelError(e) => {
            assert_eq!((e.kind(), e.attempts()), (ErrorKind::BadRequest, 1));
            assert!(
                e.message().contains("Invalid schema for function"),
                "{}",
                e.message()
            );
        }
        other => panic!("expected a model error, got {other:?}"),
    }
    assert_eq!(server.remaining(), 1);
}

#[tokio::test]
async fn a_refused_connection_is_unavailable() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    drop(listener);
    let counts = Arc::new(Counts::default());
    let model = OpenAiChat::new("m").base_url(format!("http://{address}/v1"));
    let agent = agent(model, &counts).build().unwrap();
    let run = agent
        .run(&Session::new("w5"), vec![Message::user("hi")])
        .await;
    match run.end() {
        End::ModelError(e) => assert_eq!((e.kind(), e.attempts()), (ErrorKind::Unavailable, 3)),
        other => panic!("expected a model error, got {other:?}"),
    }
}

fn streamed_call_turn() -> Vec<String> {
    vec![
        chat::chunk(json!({"role": "assistant", "content": "Let me look"}), None),
        chat::chunk(json!({"content": " that up."}), None),
        chat::chunk(
            json!({"tool_calls": [{"index": 0, "id": "call_s1", "type": "function",
                                            "function": {"name": "lookup", "arguments": ""}}]}),
            None,
        ),
        chat::chunk(
            json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"order"}}]}),
            None,
        ),
        chat::chunk(
            json!({"tool_calls": [{"index": 1, "id": "call_s2", "type": "function",
                                            "function": {"name": "lookup", "arguments": "{\"order_id\":"}}]}),
            None,
        ),
        chat::chunk(
            json!({"tool_calls": [{"index": 0, "function": {"arguments": "_id\":\"A1\"}"}}]}),
            None,
        ),
        chat::chunk(
            json!({"tool_calls": [{"index": 1, "function": {"arguments": "\"A2\"}"}}]}),
            None,
        ),
        chat::chunk(json!({}), Some("tool_calls")),
        chat::usage_chunk(90, 40),
        "[DONE]".to_owned(),
    ]
}

#[tokio::test]
async fn a_streamed_turn_is_assembled_from_deltas_and_a_truncated_stream_is_retried() {
    let full = streamed_call_turn();
    // Cut off mid-arguments: no finish_reason, no [DONE].
    let truncated = full[..4].to_vec();
    let server = FakeProvider::start([
        Reply::sse(&truncated),
        Reply::sse(&full),
        Reply::sse(&[
            chat::chunk(json!({"role": "assistant", "content": "Both "}), None),
            chat::chunk(json!({"content": "were delivered."}), None),
            chat::chunk(json!({}), Some("stop")),
            "[DONE]".to_owned(),
        ]),
    ])
    .await;
    let counts = Arc::new(Counts::default());
    let events = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&events);
    let agent = agent(openai(&server).streaming(true), &counts)
        .on_event(move |e| {
            let line = match e {
                AgentEvent::TextDelta(t) => format!("text {t}"),
                AgentEvent::ToolCallStarted { id, name } => format!("call {id} {name}"),
                AgentEvent::ToolOutcome { outcome: o, .. } => {
                    format!("outcome {} {}", o.call_id(), o.status())
                }
                AgentEvent::ModelRetry { error, .. } => format!("retry {}", error.kind()),
                AgentEvent::StepFinished { step } => format!("step {step}"),
                _ => "other".to_owned(),
            };
            seen.lock().unwrap().push(line);
        })
        .build()
        .unwrap();
    let run = agent
        .run(&Session::new("w6"), vec![Message::user("A1 and A2?")])
        .await;

    assert!(
        matches!(run.end(), End::Final(t) if t == "Both were delivered."),
        "{:?}",
        run.end()
    );
    let step = &run.steps()[0];
    assert_eq!(step.model_attempts, 2, "the truncated stream was retried");
    assert_eq!(step.calls[0].arguments(), r#"{"order_id":"A1"}"#);
    assert_eq!(step.calls[1].arguments(), r#"{"order_id":"A2"}"#);
    assert_eq!(step.text.as_deref(), Some("Let me look that up."));
    assert!(step.outcomes.iter().all(|o| o.is_ok()));
    assert_eq!(step.usage.map(|u| u.output_tokens), Some(40));
    assert_eq!(counts.lookups.load(Ordering::SeqCst), 2);

    let events = events.lock().unwrap();
    let retry = events
        .iter()
        .position(|e| e == "retry unavailable")
        .expect("a retry event");
    let after: Vec<&str> = events[retry + 1..].iter().map(String::as_str).collect();
    assert_eq!(
        after,
        [
            "text Let me look",
            "text  that up.",
            "call call_s1 lookup",
            "call call_s2 lookup",
            "outcome call_s1 success",
            "outcome call_s2 success",
            "step 1",
            "text Both ",
            "text were delivered.",
            "step 2",
        ]
    );
    let sent = server.received();
    assert_eq!(sent[0].body["stream"], true);
    assert_eq!(sent[0].body["stream_options"]["include_usage"], true);
    for request in &sent {
        is_chat_request(&request.body);
    }
}

/// The events a listener sees, one line each.
fn event_log(events: &Arc<Mutex<Vec<String>>>) -> impl Fn(&AgentEvent<'_>) + Send + Sync {
    let seen = Arc::clone(events);
    move |e| {
        let line = match e {
            AgentEvent::TextDelta(t) => format!("text {t}"),
            AgentEvent::ToolCallStarted { id, name } => format!("call {id} {name}"),
            AgentEvent::ToolOutcome { outcome: o, .. } => {
                format!("outcome {} {}", o.call_id(), o.status())
            }
            AgentEvent::ModelRetry { error, .. } => format!("retry {}", error.kind()),
            AgentEvent::StepFinished { step } => format!("step {step}"),
            _ => "other".to_owned(),
        };
        seen.lock().unwrap().push(line);
    }
}

/// A client that does not stream reports nothing as it reads; the loop reports each call as
/// started (once, before it runs) and the answer's text whole, as a streaming client would.
#[tokio::test]
async fn a_client_that_does_not_stream_still_reports_each_call_started_and_its_text() {
    let server = FakeProvider::start([
        Reply::json(chat::calls(vec![
            chat::call("call_a", "lookup", r#"{"order_id":"A1"}"#),
            chat::call("call_b", "lookup", r#"{"order_id":"A2"}"#),
        ])),
        Reply::json(chat::text("Both were delivered.")),
    ])
    .await;
    let counts = Arc::new(Counts::default());
    let events = Arc::new(Mutex::new(Vec::new()));
    let agent = agent(openai(&server), &counts)
        .on_event(event_log(&events))
        .build()
        .unwrap();
    let run = agent
        .run(&Session::new("w7"), vec![Message::user("A1 and A2?")])
        .await;
    assert_eq!(
        run.final_text(),
        Some("Both were delivered."),
        "{:?}",
        run.end()
    );
    assert_eq!(
        *events.lock().unwrap(),
        [
            "call call_a lookup",
            "call call_b lookup",
            "outcome call_a success",
            "outcome call_b success",
            "step 1",
            "text Both were delivered.",
            "step 2",
        ]
    );
}

#[tokio::test]
async fn a_turn_that_needs_approval_pauses_and_resumes_over_the_wire() {
    let server = FakeProvider::start([
        Reply::json(chat::calls(vec![
            chat::call("call_1", "lookup", r#"{"order_id":"A1"}"#),
            chat::call("call_2", "refund", r#"{"order_id":"A1","amount":20}"#),
        ])),
        Reply::json(chat::text("Refunded $20.")),
    ])
    .await;
    let counts = Arc::new(Counts::default());
    let agent = agent(openai(&server), &counts).build().unwrap();
    let queue = Arc::new(ApprovalQueue::new());
    let session = Session::new("w7").with_approver(Arc::clone(&queue));
    let run = agent
        .run(&session, vec![Message::user("Refund A1 $20")])
        .await;
    let End::Pending { ticket } = run.end().clone() else {
        panic!("expected pending, got {:?}", run.end());
    };
    assert_eq!(
        server.received().len(),
        1,
        "nothing is sent while a call waits"
    );
    queue.approve(&ticket);
    let run = agent.resume(&session, run).await;
    assert!(
        matches!(run.end(), End::Final(t) if t == "Refunded $20."),
        "{:?}",
        run.end()
    );
    assert_eq!(counts.lookups.load(Ordering::SeqCst), 1);
    assert_eq!(counts.refunds.load(Ordering::SeqCst), 1);
    let sent = server.received();
    is_chat_request(&sent[1].body);
    let messages = sent[1].body["messages"].as_array().unwrap();
    let tool_ids: Vec<&str> = messages
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["tool_call_id"].as_str().unwrap())
        .collect();
    assert_eq!(tool_ids, ["call_1", "call_2"]);
}

#[tokio::test]
async fn anthropic_messages_round_trip() {
    let server = FakeProvider::start([
        Reply::json(json!({
            "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-fake",
            "content": [
                {"type": "text", "text": "Looking."},
                {"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": {"order_id": "A1"}},
                {"type": "tool_use", "id": "toolu_2", "name": "lookup", "input": {"order": "A2"}}
            ],
            "stop_reason": "tool_use", "stop_sequence": null,
            "usage": {"input_tokens": 50, "output_tokens": 20}
        })),
        Reply::json(json!({
            "id": "msg_2", "type": "message", "role": "assistant", "model": "claude-fake",
            "content": [{"type": "text", "text": "A1 was delivered."}],
            "stop_reason": "end_turn", "stop_sequence": null,
            "usage": {"input_tokens": 80, "output_tokens": 6}
        })),
    ])
    .await;
    let counts = Arc::new(Counts::default());
    let model = AnthropicMessages::new("claude-fake")
        .base_url(&server.base)
        .api_key("k");
    let agent = agent(model, &counts).build().unwrap();
    let run = agent
        .run(&Session::new("w8"), vec![Message::user("A1?")])
        .await;
    assert!(
        matches!(run.end(), End::Final(t) if t == "A1 was delivered."),
        "{:?}",
        run.end()
    );
    assert_eq!(run.usage().total(), 156);

    let sent = server.received();
    assert_eq!(sent[0].path, "/v1/messages");
    assert_eq!(sent[0].headers["x-api-key"], "k");
    assert_eq!(sent[0].headers["anthropic-version"], "2023-06-01");
    let first = &sent[0].body;
    assert!(first["system"]
        .as_str()
        .unwrap()
        .starts_with("You are a support agent."));
    assert_eq!(first["tools"][0]["input_schema"]["type"], "object");
    let messages = sent[1].body["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 3);
    assert_eq!(
        messages[1]["content"][1]["type"], "tool_use",
        "the assistant turn is replayed as it came"
    );
    let results = messages[2]["content"].as_array().unwrap();
    assert_eq!(messages[2]["role"], "user");
    assert_eq!(results[0]["tool_use_id"], "toolu_1");
    assert_eq!(results[0]["is_error"], false);
    assert_eq!(results[1]["tool_use_id"], "toolu_2");
    assert_eq!(
        results[1]["is_error"], true,
        "the unknown argument is an error result"
    );
}

#[tokio::test]
async fn openai_responses_round_trip() {
    let server = FakeProvider::start([
        Reply::json(json!({
            "id": "resp_1", "object": "response", "created_at": 1, "model": "fake", "status": "completed",
            "output": [{"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "lookup",
                        "arguments": "{\"order_id\":\"A1\"}", "status": "completed"}],
            "usage": {"input_tokens": 40, "output_tokens": 9, "total_tokens": 49}
        })),
        Reply::json(json!({
            "id": "resp_2", "object": "response", "created_at": 2, "model": "fake", "status": "completed",
            "output": [{"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
                        "content": [{"type": "output_text", "text": "Delivered.", "annotations": []}]}],
            "usage": {"input_tokens": 60, "output_tokens": 3, "total_tokens": 63}
        })),
    ])
    .await;
    let counts = Arc::new(Counts::default());
    let model = OpenAiResponses::new("fake")
        .base_url(format!("{}/v1", server.base))
        .api_key("k");
    let agent = agent(model, &counts).build().unwrap();
    let run = agent
        .run(&Session::new("w9"), vec![Message::user("A1?")])
        .await;
    assert!(
        matches!(run.end(), End::Final(t) if t == "Delivered."),
        "{:?}",
        run.end()
    );
    let sent = server.received();
    assert_eq!(sent[0].path, "/v1/responses");
    assert!(sent[0].body["instructions"]
        .as_str()
        .unwrap()
        .contains("error_type"));
    assert_eq!(sent[0].body["tools"][0]["type"], "function");
    let input = sent[1].body["input"].as_array().unwrap();
    assert_eq!(input[1]["type"], "function_call");
    assert_eq!(input[2]["type"], "function_call_output");
    assert_eq!(input[2]["call_id"], "call_1");
}

#[tokio::test]
async fn gemini_generate_content_round_trip() {
    let server = FakeProvider::start([
        Reply::json(json!({
            "candidates": [{"content": {"role": "model", "parts": [
                {"functionCall": {"name": "lookup", "args": {"order_id": "A1"}}, "thoughtSignature": "c2ln"}
            ]}, "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": 30, "candidatesTokenCount": 5, "totalTokenCount": 35}
        })),
        Reply::json(json!({
            "candidates": [{"content": {"role": "model", "parts": [{"text": "Delivered."}]},
                            "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": 45, "candidatesTokenCount": 2, "totalTokenCount": 47}
        })),
    ])
    .await;
    let counts = Arc::new(Counts::default());
    let model = GeminiGenerate::new("gemini-fake")
        .base_url(format!("{}/v1beta", server.base))
        .api_key("k");
    let agent = agent(model, &counts).build().unwrap();
    let run = agent
        .run(&Session::new("w10"), vec![Message::user("A1?")])
        .await;
    assert!(
        matches!(run.end(), End::Final(t) if t == "Delivered."),
        "{:?}",
        run.end()
    );
    let sent = server.received();
    assert_eq!(sent[0].path, "/v1beta/models/gemini-fake:generateContent");
    assert_eq!(sent[0].headers["x-goog-api-key"], "k");
    assert!(sent[0].body["systemInstruction"]["parts"][0]["text"]
        .as_str()
        .unwrap()
        .contains("error_type"));
    assert_eq!(
        sent[0].body["tools"][0]["functionDeclarations"][0]["parameters"]["type"],
        "OBJECT"
    );
    let contents = sent[1].body["contents"].as_array().unwrap();
    assert_eq!(
        contents[1]["parts"][0]["thoughtSignature"], "c2ln",
        "the signature is sent back"
    );
    assert_eq!(contents[2]["role"], "user");
    assert_eq!(
        contents[2]["parts"][0]["functionResponse"]["name"],
        "lookup"
    );
    assert!(
        contents[2]["parts"][0]["functionResponse"]
            .get("id")
            .is_none(),
        "no minted id leaks"
    );
}

#[tokio::test]
async fn a_stream_that_sends_each_call_whole_without_index_or_id_is_read() {
    // As some OpenAI-compatible servers stream: each call in one delta, no `index`, no `id`.
    let server = FakeProvider::start([
        Reply::sse(&[
            chat::chunk(json!({"role": "assistant", "tool_calls": [
                {"type": "function", "function": {"name": "lookup", "arguments": "{\"order_id\":\"A1\"}"}},
                {"type": "function", "function": {"name": "lookup", "arguments": "{\"order_id\":\"A2\"}"}}
            ]}), None),
            chat::chunk(json!({}), Some("tool_calls")),
            "[DONE]".to_owned(),
        ]),
        Reply::sse(&[
            chat::chunk(json!({"content": "Both delivered."}), Some("stop")),
            "[DONE]".to_owned(),
        ]),
    ])
    .await;
    let counts = Arc::new(Counts::default());
    let agent = agent(openai(&server).streaming(true), &counts)
        .build()
        .unwrap();
    let run = agent
        .run(&Session::new("w11"), vec![Message::user("A1, A2?")])
        .await;
    assert!(
        matches!(run.end(), End::Final(t) if t == "Both delivered."),
        "{:?}",
        run.end()
    );
    let ids: Vec<&str> = run.steps()[0].calls.iter().map(|c| c.id()).collect();
    assert_eq!(ids, ["call_0", "call_1"]);
    assert!(run.steps()[0].outcomes.iter().all(|o| o.is_ok()));
    is_chat_request(&server.received()[1].body);
}

// ---- The public scripted server: turns in each provider's wire format ----------------------

/// A call of `lookup`, then the answer: the script every client below plays.
fn scripted_turns() -> Vec<ScriptedReply> {
    vec![
        Turn::calls([ToolCall::new("call_a", "lookup", r#"{"order_id":"A1"}"#)])
            .with_usage(50, 10)
            .into(),
        Turn::text("A1 was delivered.").with_usage(80, 6).into(),
    ]
}

/// Runs the agent with `model` against `server`'s script; checks the run; the requests sent.
async fn plays_the_script(
    model: impl ChatModel,
    server: &ScriptedServer,
    events: Option<Arc<Mutex<Vec<String>>>>,
) -> Vec<ReceivedRequest> {
    let counts = Arc::new(Counts::default());
    let mut builder = agent(model, &counts);
    if let Some(events) = events {
        builder = builder.on_event(move |e| {
            let line = match e {
                AgentEvent::TextDelta(t) => format!("text {t}"),
                AgentEvent::ToolCallStarted { id, name } => format!("call {id} {name}"),
                _ => return,
            };
            events.lock().unwrap().push(line);
        });
    }
    let run = builder
        .build()
        .unwrap()
        .run(&Session::new("scripted"), vec![Message::user("A1?")])
        .await;
    assert!(
        matches!(run.end(), End::Final(t) if t == "A1 was delivered."),
        "{:?}",
        run.end()
    );
    assert_eq!(run.steps()[0].calls[0].id(), "call_a");
    assert!(run.steps()[0].outcomes[0].is_ok());
    assert_eq!(counts.lookups.load(Ordering::SeqCst), 1);
    assert_eq!(run.usage().total(), 146);
    assert_eq!(server.remaining(), 0);
    let sent = server.received();
    assert_eq!(sent.len(), 2);
    sent
}

#[tokio::test]
async fn the_scripted_server_speaks_chat_completions_whole_and_streamed() {
    let server = ScriptedServer::start(scripted_turns()).await.unwrap();
    let model = OpenAiChat::new("gpt-test")
        .base_url(server.url())
        .api_key("k");
    let sent = plays_the_script(model, &server, None).await;
    assert_eq!(sent[0].path, "/chat/completions");
    assert_eq!(sent[0].headers["authorization"], "Bearer k");
    assert_eq!(sent[0].body["tools"][0]["function"]["name"], "lookup");
    let messages = sent[1].body["messages"].as_array().unwrap();
    let last = messages.last().unwrap();
    assert_eq!(last["role"], "tool");
    assert_eq!(last["tool_call_id"], "call_a");
    for request in &sent {
        is_chat_request(&request.body);
    }

    let streamed = ScriptedServer::start(scripted_turns()).await.unwrap();
    let model = OpenAiChat::new("gpt-test")
        .base_url(streamed.url())
        .streaming(true);
    let events = Arc::new(Mutex::new(Vec::new()));
    let sent = plays_the_script(model, &streamed, Some(Arc::clone(&events))).await;
    assert_eq!(sent[0].body["stream"], true);
    assert_eq!(
        *events.lock().unwrap(),
        [
            "call call_a lookup",
            "text A1 ",
            "text was ",
            "text delivered."
        ]
    );
}

#[tokio::test]
async fn the_scripted_server_speaks_responses_anthropic_and_gemini() {
    let server = ScriptedServer::start(scripted_turns()).await.unwrap();
    let model = OpenAiResponses::new("gpt-test").base_url(server.url());
    let sent = plays_the_script(model, &server, None).await;
    assert_eq!(sent[0].path, "/responses");
    let input = sent[1].body["input"].as_array().unwrap();
    assert_eq!(input[1]["type"], "function_call");
    assert_eq!(input[2]["call_id"], "call_a");

    let server = ScriptedServer::start(scripted_turns()).await.unwrap();
    let model = AnthropicMessages::new("claude-test")
        .base_url(server.url())
        .api_key("k");
    let sent = plays_the_script(model, &server, None).await;
    assert_eq!(sent[0].path, "/v1/messages");
    assert_eq!(sent[0].headers["x-api-key"], "k");
    assert_eq!(
        sent[1].body["messages"][2]["content"][0]["tool_use_id"],
        "call_a"
    );

    let server = ScriptedServer::start(scripted_turns()).await.unwrap();
    let model = GeminiGenerate::new("gemini-test")
        .base_url(server.url())
        .api_key("k");
    let sent = plays_the_script(model, &server, None).await;
    assert_eq!(sent[0].path, "/models/gemini-test:generateContent");
    let response = &sent[1].body["contents"][2]["parts"][0]["functionResponse"];
    assert_eq!(response["name"], "lookup");
}

#[tokio::test]
async fn the_scripted_server_answers_provider_errors_and_says_when_its_script_is_used_up() {
    let server = ScriptedServer::start([
        ScriptedReply::error(429, "slow down").header("retry-after", "1"),
        Turn::text("Fine.").into(),
        ScriptedReply::error(400, "`model` is not a model we serve"),
    ])
    .await
    .unwrap();
    let model = OpenAiChat::new("gpt-test").base_url(server.url());
    let agent = agent(model, &Arc::new(Counts::default())).build().unwrap();
    let started = Instant::now();
    let run = agent
        .run(&Session::new("e1"), vec![Message::user("Hi")])
        .await;
    assert!(
        matches!(run.end(), End::Final(t) if t == "Fine."),
        "{:?}",
        run.end()
    );
    assert!(
        started.elapsed() >= Duration::from_millis(900),
        "Retry-After waited out"
    );

    let refused = agent
        .run(&Session::new("e2"), vec![Message::user("Hi")])
        .await;
    let End::ModelError(e) = refused.end() else {
        panic!("{:?}", refused.end());
    };
    assert_eq!((e.kind(), e.attempts()), (ErrorKind::BadRequest, 1));
    assert!(
        e.message().contains("is not a model we serve"),
        "{}",
        e.message()
    );

    let used_up = agent
        .run(&Session::new("e3"), vec![Message::user("Hi")])
        .await;
    let End::ModelError(e) = used_up.end() else {
        panic!("{:?}", used_up.end());
    };
    assert_eq!(e.kind(), ErrorKind::BadRequest);
    assert!(e.message().contains("script is used up"), "{}", e.message());
    assert_eq!(server.received().len(), 4);
}
