//! The HTTP clients' side of a bounded run, against the scripted provider on loopback: a stream
//! that stalls (no first event, a pause between events, one that never ends) is a `timeout`
//! the loop retries, and every client reads its provider's token counts whole (cached and
//! reasoning tokens included). Real time, as in `wire.rs`: sockets and paused time do not mix,
//! so the timeouts here are a few hundred milliseconds.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use toolwright::prelude::*;
use toolwright_agent::http::{
    AnthropicMessages, GeminiGenerate, OpenAiChat, OpenAiResponses, ScriptedReply,
};
use toolwright_agent::{
    Agent, AgentEvent, ChatModel, End, Events, Message, ModelError, ModelRequest, Turn, Usage,
};

use crate::support::fake_provider::{chat, FakeProvider, Reply};

/// A guard far above every timeout under test: a client without them would hang here.
const HANG: Duration = Duration::from_secs(10);

fn streaming(server: &FakeProvider) -> OpenAiChat {
    OpenAiChat::new("fake-model")
        .base_url(format!("{}/v1", server.base))
        .api_key("test-key")
        .streaming(true)
}

/// One request straight to the client, as the loop makes it.
async fn complete(model: &impl ChatModel) -> Result<Turn, ModelError> {
    let events = Events::none();
    let messages = [Message::user("hi")];
    let tools = Value::Array(Vec::new());
    let request = ModelRequest {
        system: "",
        messages: &messages,
        tools: &tools,
        events: &events,
    };
    tokio::time::timeout(HANG, model.complete(request))
        .await
        .expect("the client gave up on its own, within its timeouts")
}

fn sse_stalled(events: &[String]) -> ScriptedReply {
    let body: String = events.iter().map(|e| format!("data: {e}\n\n")).collect();
    ScriptedReply::raw(200, "text/event-stream", body).stall()
}

#[tokio::test]
async fn a_stream_whose_first_event_never_comes_is_a_timeout() {
    let server = FakeProvider::start([sse_stalled(&[])]).await;
    let model = streaming(&server).first_chunk_timeout(Duration::from_millis(200));
    let started = Instant::now();
    let error = complete(&model).await.unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Timeout, "{error}");
    assert!(
        error.message().contains("no answer within 0.2 s"),
        "{error}"
    );
    assert!(started.elapsed() < Duration::from_secs(2));
}

#[tokio::test]
async fn headers_that_never_come_count_against_the_first_chunk_timeout() {
    let late = ScriptedReply::from(Turn::text("late")).delay(Duration::from_secs(5));
    let server = FakeProvider::start([late]).await;
    let model = streaming(&server).first_chunk_timeout(Duration::from_millis(200));
    let started = Instant::now();
    let error = complete(&model).await.unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Timeout, "{error}");
    assert!(started.elapsed() < Duration::from_secs(2));
}

#[tokio::test]
async fn a_stream_that_stops_between_events_is_a_timeout() {
    let server = FakeProvider::start([sse_stalled(&[
        chat::chunk(json!({"role": "assistant", "content": ""}), None),
        chat::chunk(json!({"content": "Your order"}), None),
    ])])
    .await;
    let model = streaming(&server)
        .first_chunk_timeout(Duration::from_secs(5))
        .chunk_timeout(Duration::from_millis(200));
    let error = complete(&model).await.unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Timeout, "{error}");
    assert!(error.message().contains("stalled"), "{error}");
}

#[tokio::test]
async fn a_stream_that_trickles_past_its_total_is_a_timeout() {
    let words = "one two three four five six seven eight nine ten eleven twelve thirteen fourteen";
    let slow = ScriptedReply::from(Turn::text(words)).pace(Duration::from_millis(60));
    let server = FakeProvider::start([slow]).await;
    let model = streaming(&server)
        .chunk_timeout(Duration::from_millis(400))
        .stream_timeout(Duration::from_millis(500));
    let error = complete(&model).await.unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Timeout, "{error}");
    assert!(
        error.message().contains("did not end within 0.5 s"),
        "{error}"
    );
}

#[tokio::test]
async fn a_paced_stream_within_its_timeouts_is_read_whole() {
    let paced = ScriptedReply::from(Turn::text("slow but steady").with_usage(30, 4))
        .pace(Duration::from_millis(50));
    let server = FakeProvider::start([paced]).await;
    let model = streaming(&server).chunk_timeout(Duration::from_millis(400));
    let turn = complete(&model).await.unwrap();
    assert_eq!(turn.text.as_deref(), Some("slow but steady"));
    assert_eq!(
        turn.usage,
        Some(Usage {
            input_tokens: 30,
            output_tokens: 4
        })
    );
    let sent = server.received();
    assert_eq!(sent[0].body["stream_options"]["include_usage"], true);
}

#[tokio::test]
async fn the_loop_retries_a_stalled_stream_within_the_run() {
    let server = FakeProvider::start([
        sse_stalled(&[chat::chunk(
            json!({"role": "assistant", "content": ""}),
            None,
        )]),
        Turn::text("A1 was delivered.").into(),
    ])
    .await;
    let model = streaming(&server).chunk_timeout(Duration::from_millis(200));
    let retries = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&retries);
    let agent = Agent::builder(model, Registry::builder().build().unwrap())
        .model_retry(toolwright::execute::RetryPolicy::new().base(Duration::from_millis(10)))
        .on_event(move |event| {
            if let AgentEvent::ModelRetry { error, .. } = event {
                seen.lock().unwrap().push(error.kind());
            }
        })
        .build()
        .unwrap();
    let run = tokio::time::timeout(
        HANG,
        agent.run(&Session::new("s1"), vec![Message::user("A1?")]),
    )
    .await
    .unwrap();
    assert!(
        matches!(run.end(), End::Final(t) if t == "A1 was delivered."),
        "{:?}",
        run.end()
    );
    assert_eq!(run.steps()[0].model_attempts, 2);
    assert_eq!(*retries.lock().unwrap(), [ErrorKind::Timeout]);
}

// Usage fields, as each provider writes them.

#[tokio::test]
async fn anthropic_cache_tokens_count_as_input() {
    let server = FakeProvider::start([Reply::json(json!({
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude",
        "content": [{"type": "text", "text": "hi"}],
        "stop_reason": "end_turn", "stop_sequence": null,
        "usage": {"input_tokens": 10, "cache_creation_input_tokens": 200,
                  "cache_read_input_tokens": 3000, "output_tokens": 7}
    }))])
    .await;
    let model = AnthropicMessages::new("claude")
        .base_url(&server.base)
        .api_key("k");
    let turn = complete(&model).await.unwrap();
    assert_eq!(
        turn.usage,
        Some(Usage {
            input_tokens: 3210,
            output_tokens: 7
        })
    );
}

#[tokio::test]
async fn gemini_thinking_and_tool_prompt_tokens_count_and_a_missing_candidates_count_is_zero() {
    let server = FakeProvider::start([Reply::json(json!({
        "candidates": [{"content": {"role": "model", "parts": [{"text": "hi"}]},
                        "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": 100, "toolUsePromptTokenCount": 5,
                          "thoughtsTokenCount": 50, "totalTokenCount": 155}
    }))])
    .await;
    let model = GeminiGenerate::new("gemini")
        .base_url(&server.base)
        .api_key("k");
    let turn = complete(&model).await.unwrap();
    assert_eq!(
        turn.usage,
        Some(Usage {
            input_tokens: 105,
            output_tokens: 50
        })
    );
}

#[tokio::test]
async fn responses_and_chat_usage_are_read() {
    let server = FakeProvider::start([
        Turn::text("a").with_usage(11, 3).into(),
        Reply::json(chat::text("b")),
    ])
    .await;
    let responses = OpenAiResponses::new("m")
        .base_url(&server.base)
        .api_key("k");
    let turn = complete(&responses).await.unwrap();
    assert_eq!(turn.usage.map(|u| u.total()), Some(14));
    let chat = OpenAiChat::new("m").base_url(&server.base).api_key("k");
    let turn = complete(&chat).await.unwrap();
    assert_eq!(
        turn.usage.map(|u| (u.input_tokens, u.output_tokens)),
        Some((200, 12))
    );
}

/// The loop adds every answer's tokens, and a token limit reads them from the wire.
#[tokio::test]
async fn a_token_limit_reads_the_provider_s_counts() {
    let server = FakeProvider::start([Reply::json(json!({
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude",
        "content": [{"type": "text", "text": "a long answer"}],
        "stop_reason": "end_turn", "stop_sequence": null,
        "usage": {"input_tokens": 10, "cache_read_input_tokens": 5000, "output_tokens": 7}
    }))])
    .await;
    let model = AnthropicMessages::new("claude")
        .base_url(&server.base)
        .api_key("k");
    let agent = Agent::builder(model, Registry::builder().build().unwrap())
        .usage_limits(toolwright_agent::UsageLimits::new().max_input_tokens(4000))
        .build()
        .unwrap();
    let run = agent
        .run(&Session::new("u1"), vec![Message::user("hi")])
        .await;
    assert!(
        matches!(
            run.end(),
            End::UsageLimit {
                limit: toolwright_agent::Limit::InputTokens,
                used: 5010,
                allowed: 4000,
                ..
            }
        ),
        "{:?}",
        run.end()
    );
}
