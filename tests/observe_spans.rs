//! The call spans as an OpenTelemetry backend receives them: real calls exported through
//! `tracing-opentelemetry` into the OpenTelemetry SDK's in-memory exporter, then read back:
//! names, the GenAI attributes, parent and child links, the events inside, and no argument
//! value anywhere.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::OnceLock;
use std::time::Duration;

use opentelemetry::trace::{SpanId, TracerProvider as _};
use opentelemetry::Value;
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use toolwright::execute::{BreakerPolicy, RetryPolicy, SeededRandom};
use toolwright::prelude::*;
use toolwright::repair::DeterministicRepair;
use tracing::Instrument;
use tracing_subscriber::layer::SubscriberExt;

/// A value only the sensitive field carries.
const CARD: &str = "4111-SECRET-CARD";
/// A value only an ordinary argument carries.
const NOTE: &str = "note-ARGUMENT-VALUE";

/// Look a customer up.
#[tool(read_only)]
async fn lookup(
    /// The card on file.
    #[arg(sensitive)]
    card: String,
    /// A free-text note.
    note: String,
    /// How many records.
    #[arg(range(min = 1, max = 5))]
    count: u32,
) -> Result<String, ToolError> {
    Ok(format!(
        "{} records for {} ({})",
        count,
        card.len(),
        note.len()
    ))
}

/// Fails its first attempt of every call with a 503.
#[tool(read_only, timeout_ms = 1000)]
async fn flaky(
    attempts: State<AtomicU32>,
    /// Anything.
    item: String,
) -> Result<String, ToolError> {
    if attempts.fetch_add(1, Ordering::Relaxed).is_multiple_of(2) {
        return Err(ToolError::from_status(503, "the warehouse answered 503"));
    }
    Ok(item.len().to_string())
}

/// Always down.
#[tool(read_only)]
async fn down(
    /// Anything.
    item: String,
) -> Result<String, ToolError> {
    let _ = item;
    Err(ToolError::from_status(503, "the carrier answered 503"))
}

/// Panics, quoting its sensitive argument.
#[tool(read_only)]
async fn panicky(
    /// The card on file.
    #[arg(sensitive)]
    card: String,
) -> Result<String, ToolError> {
    panic!("cannot charge {card}");
}

/// The exporter every test reads, behind one process-wide subscriber. Global rather than
/// scoped: with scoped subscribers, a thread that reaches a callsite first with none installed
/// can leave it cached as uninteresting for every thread (tracing's interest cache).
fn exporter() -> &'static InMemorySpanExporter {
    static EXPORTER: OnceLock<InMemorySpanExporter> = OnceLock::new();
    EXPORTER.get_or_init(|| {
        let exporter = InMemorySpanExporter::default();
        let provider = SdkTracerProvider::builder()
            .with_simple_exporter(exporter.clone())
            .build();
        let tracer = provider.tracer("toolwright-spans-test");
        let subscriber =
            tracing_subscriber::registry().with(tracing_opentelemetry::layer().with_tracer(tracer));
        tracing::subscriber::set_global_default(subscriber)
            .unwrap_or_else(|e| panic!("a global subscriber was already set: {e}"));
        exporter
    })
}

fn registry() -> Registry {
    Registry::builder()
        .tool(Lookup)
        .tool(Flaky)
        .tool(Down)
        .tool(Panicky)
        .state(AtomicU32::new(0))
        .random(SeededRandom::new(7))
        .retry_policy(RetryPolicy::new().base(Duration::from_millis(10)))
        .deterministic_repair(DeterministicRepair::new())
        .breaker_for("down", BreakerPolicy::new().min_calls(1).failure_rate(1.0))
        .build()
        .unwrap_or_else(|e| panic!("{e}"))
}

/// The finished spans of the calls whose ids start with `prefix`, and every span of their
/// traces, each looked up by name.
fn spans_of(prefix: &str) -> Vec<SpanData> {
    let all = exporter()
        .get_finished_spans()
        .unwrap_or_else(|e| panic!("{e}"));
    let traces: Vec<_> = all
        .iter()
        .filter(|s| attr(s, "gen_ai.tool.call.id").is_some_and(|id| id.starts_with(prefix)))
        .map(|s| s.span_context.trace_id())
        .collect();
    all.into_iter()
        .filter(|s| traces.contains(&s.span_context.trace_id()))
        .collect()
}

fn attr(span: &SpanData, key: &str) -> Option<String> {
    span.attributes
        .iter()
        .find(|kv| kv.key.as_str() == key)
        .map(|kv| value(&kv.value))
}

fn value(v: &Value) -> String {
    match v {
        Value::String(s) => s.as_str().to_owned(),
        other => other.to_string(),
    }
}

fn call_span<'a>(spans: &'a [SpanData], id: &str) -> &'a SpanData {
    spans
        .iter()
        .find(|s| attr(s, "gen_ai.tool.call.id").as_deref() == Some(id))
        .unwrap_or_else(|| panic!("no span for call {id} in {spans:#?}"))
}

/// The names of a span's events with one attribute of each, e.g. `attempt/result`.
fn event_attr(span: &SpanData, event: &str, key: &str) -> Vec<String> {
    span.events
        .iter()
        .filter(|e| e.name == event)
        .filter_map(|e| {
            e.attributes
                .iter()
                .find(|kv| kv.key.as_str() == key)
                .map(|kv| value(&kv.value))
        })
        .collect()
}

#[tokio::test]
async fn a_call_is_an_execute_tool_span_with_the_gen_ai_attributes_inside_its_parent() {
    exporter();
    let registry = registry();
    let session = Session::new("conv-span-1");
    let turn = tracing::info_span!("chat", gen_ai.operation.name = "chat");
    let call = ToolCall::new(
        "span1-ok",
        "lookup",
        format!(r#"{{"card":"{CARD}","note":"{NOTE}","count":2}}"#),
    );
    // The span current where the call is made is its parent.
    let outcome = async { registry.call_in(&session, call).await }
        .instrument(turn)
        .await;
    assert_eq!(outcome.status(), Status::Success);

    let spans = spans_of("span1-");
    let call = call_span(&spans, "span1-ok");
    assert_eq!(call.name, "execute_tool lookup");
    assert_eq!(call.span_kind, opentelemetry::trace::SpanKind::Internal);
    for (key, expected) in [
        ("gen_ai.operation.name", "execute_tool"),
        ("gen_ai.tool.name", "lookup"),
        ("gen_ai.tool.call.id", "span1-ok"),
        ("gen_ai.tool.type", "function"),
        ("gen_ai.conversation.id", "conv-span-1"),
        ("toolwright.status", "success"),
        ("toolwright.attempts", "1"),
    ] {
        assert_eq!(attr(call, key).as_deref(), Some(expected), "{key}");
    }
    assert_eq!(attr(call, "error.type"), None);
    assert_eq!(call.status, opentelemetry::trace::Status::Unset);

    // The model's turn is the call's parent, in the same trace.
    let chat = spans
        .iter()
        .find(|s| s.name == "chat")
        .unwrap_or_else(|| panic!("no chat span in {spans:#?}"));
    assert_eq!(call.parent_span_id, chat.span_context.span_id());
    assert_eq!(chat.parent_span_id, SpanId::INVALID);
    // The attempt and the call itself are events inside the span.
    assert_eq!(event_attr(call, "attempt", "attempt"), ["1"]);
    assert_eq!(event_attr(call, "attempt", "result"), ["success"]);
    assert_eq!(event_attr(call, "tool call", "status"), ["success"]);
}

#[tokio::test(start_paused = true)]
async fn a_retried_call_carries_each_attempt_as_an_event_with_its_classification() {
    exporter();
    let registry = registry();
    let outcome = registry
        .call(ToolCall::new("span2-retry", "flaky", r#"{"item":"desk"}"#))
        .await;
    assert_eq!(outcome.status(), Status::Success);
    assert_eq!(outcome.attempts(), 2);

    let spans = spans_of("span2-");
    let call = call_span(&spans, "span2-retry");
    assert_eq!(call.name, "execute_tool flaky");
    assert_eq!(attr(call, "toolwright.attempts").as_deref(), Some("2"));
    // No conversation, no conversation id.
    assert_eq!(attr(call, "gen_ai.conversation.id"), None);
    assert_eq!(event_attr(call, "attempt", "attempt"), ["1", "2"]);
    assert_eq!(
        event_attr(call, "attempt", "result"),
        ["unavailable", "success"]
    );
    let waited = event_attr(call, "attempt", "waited_ms");
    assert_eq!(waited.len(), 2);
    assert_eq!(waited[0], "0");
    assert_ne!(waited[1], "0", "the retry waited its backoff");
    assert_eq!(event_attr(call, "attempt", "elapsed_ms").len(), 2);
    // The retry was scheduled inside the span, as it happened.
    assert_eq!(
        event_attr(call, "attempt failed; retrying", "error_type"),
        ["unavailable"]
    );
}

#[tokio::test(start_paused = true)]
async fn failures_set_error_type_and_breaker_transitions_and_repairs_are_events_inside() {
    exporter();
    let registry = registry();
    // A number sent as a string: the deterministic repair fixes it.
    let repaired = registry
        .call(ToolCall::new(
            "span3-repair",
            "lookup",
            format!(r#"{{"card":"{CARD}","note":"{NOTE}","count":"2"}}"#),
        ))
        .await;
    assert_eq!(repaired.status(), Status::Success);
    // Out of range: schema_mismatch, arguments quoted nowhere.
    let invalid = registry
        .call(ToolCall::new(
            "span3-invalid",
            "lookup",
            format!(r#"{{"card":"{CARD}","note":"{NOTE}","count":50}}"#),
        ))
        .await;
    assert_eq!(invalid.error_kind(), Some(ErrorKind::SchemaMismatch));
    // Down: the breaker opens on the first failed attempt.
    let down = registry
        .call(ToolCall::new("span3-down", "down", r#"{"item":"parcel"}"#))
        .await;
    assert_eq!(down.status(), Status::Error);
    let panicked = registry
        .call(ToolCall::new(
            "span3-panic",
            "panicky",
            format!(r#"{{"card":"{CARD}"}}"#),
        ))
        .await;
    assert_eq!(panicked.error_kind(), Some(ErrorKind::ToolPanicked));
    let unknown = registry
        .call(ToolCall::new(
            "span3-unknown",
            "lookup_customer",
            format!(r#"{{"card":"{CARD}"}}"#),
        ))
        .await;
    assert_eq!(unknown.error_kind(), Some(ErrorKind::UnknownTool));

    let spans = spans_of("span3-");
    let span = call_span(&spans, "span3-repair");
    assert_eq!(
        event_attr(span, "malformed arguments; repair pass", "result"),
        ["repaired"]
    );
    assert_eq!(attr(span, "error.type"), None);

    let span = call_span(&spans, "span3-invalid");
    assert_eq!(attr(span, "error.type").as_deref(), Some("schema_mismatch"));
    assert_eq!(attr(span, "toolwright.seam").as_deref(), Some("validation"));
    assert!(
        matches!(span.status, opentelemetry::trace::Status::Error { .. }),
        "{:?}",
        span.status
    );

    let span = call_span(&spans, "span3-down");
    let kind = down.error_kind().map(|k| k.as_str().to_owned());
    assert_eq!(attr(span, "error.type"), kind);
    assert_eq!(attr(span, "toolwright.seam").as_deref(), Some("execution"));
    assert_eq!(
        event_attr(
            span,
            "circuit breaker opened: failure rate crossed the threshold",
            "to"
        ),
        ["open"],
        "{:#?}",
        span.events
    );

    let span = call_span(&spans, "span3-panic");
    assert_eq!(attr(span, "error.type").as_deref(), Some("tool_panicked"));
    assert!(span
        .events
        .iter()
        .any(|e| e.name == "tool panicked; the panic was contained"));

    let span = call_span(&spans, "span3-unknown");
    assert_eq!(span.name, "execute_tool lookup_customer");
    assert_eq!(attr(span, "error.type").as_deref(), Some("unknown_tool"));

    // Nothing the model sent as a value reaches the backend: not the sensitive card (not even
    // through the panic's message), not the ordinary note.
    let everything = format!("{spans:?}");
    assert!(!everything.contains(CARD), "{everything}");
    assert!(!everything.contains("SECRET"), "{everything}");
    assert!(!everything.contains(NOTE), "{everything}");
}

#[tokio::test]
async fn in_the_agent_loop_each_call_is_a_child_of_the_run_beside_the_model_turns() {
    use toolwright::agent::{Agent, Message, ScriptedModel, Turn};
    exporter();
    let model = ScriptedModel::new([
        Turn::calls([ToolCall::new(
            "span5-call",
            "lookup",
            format!(r#"{{"card":"{CARD}","note":"{NOTE}","count":1}}"#),
        )]),
        Turn::text("Found it."),
    ]);
    let agent = Agent::builder(model, registry())
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let session = Session::new("conv-span-5");
    let run = agent.run(&session, vec![Message::user("find me")]).await;
    assert_eq!(run.outcomes().count(), 1);

    let spans = spans_of("span5-");
    let call = call_span(&spans, "span5-call");
    let agent_span = spans
        .iter()
        .find(|s| s.name == "invoke_agent")
        .unwrap_or_else(|| panic!("no invoke_agent span in {spans:#?}"));
    assert_eq!(call.parent_span_id, agent_span.span_context.span_id());
    assert_eq!(
        attr(agent_span, "gen_ai.conversation.id").as_deref(),
        Some("conv-span-5")
    );
    let chats: Vec<_> = spans.iter().filter(|s| s.name == "chat").collect();
    assert_eq!(chats.len(), 2, "one per model turn");
    for chat in chats {
        assert_eq!(chat.parent_span_id, agent_span.span_context.span_id());
        assert_eq!(attr(chat, "gen_ai.operation.name").as_deref(), Some("chat"));
    }
    let everything = format!("{spans:?}");
    assert!(!everything.contains(CARD) && !everything.contains(NOTE));
}
