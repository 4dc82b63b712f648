//! The spans of a few tool calls sent to an OpenTelemetry collector over OTLP/HTTP: one
//! `execute_tool {tool}` span per call with the `gen_ai.*` attributes, inside a `chat` span
//! that stands for the model's turn, the attempts, retries and breaker transitions as events.
//!
//! ```text
//! OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318 cargo run --example otlp --features otlp
//! ```
//!
//! Without `OTEL_EXPORTER_OTLP_ENDPOINT` it says so and exits 0. Any collector that takes
//! OTLP/HTTP works (the OpenTelemetry Collector, Jaeger, Grafana Tempo, ...).

use std::sync::atomic::{AtomicU32, Ordering};

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::trace::SdkTracerProvider;
use opentelemetry_sdk::Resource;
use toolwright::prelude::*;
use tracing::Instrument;
use tracing_subscriber::layer::SubscriberExt;

/// Search orders by customer name.
#[tool(read_only, timeout_ms = 1000)]
async fn search_orders(
    /// Words to look for in the customer name.
    #[arg(length(min = 1, max = 100))]
    query: String,
) -> Result<Vec<String>, ToolError> {
    Ok(vec![format!("A1001 ({} chars searched)", query.len())])
}

/// Check stock; the warehouse drops every other request with a 503.
#[tool(read_only, timeout_ms = 1000)]
async fn check_stock(
    calls: State<AtomicU32>,
    /// The item.
    item: String,
) -> Result<u32, ToolError> {
    if calls.fetch_add(1, Ordering::Relaxed).is_multiple_of(2) {
        return Err(ToolError::from_status(503, "the warehouse answered 503"));
    }
    Ok(if item.contains("desk") { 2 } else { 40 })
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let Ok(endpoint) = std::env::var("OTEL_EXPORTER_OTLP_ENDPOINT") else {
        println!(
            "OTEL_EXPORTER_OTLP_ENDPOINT is not set: nothing to send to. Point it at a collector's \
             OTLP/HTTP port, e.g. OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318"
        );
        return Ok(());
    };
    // The exporter reads the endpoint from the environment; its blocking HTTP client runs on a
    // thread of its own, so it is built (and shut down) outside the async runtime.
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .build()?;
    let provider = SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(
            Resource::builder()
                .with_service_name("toolwright-otlp-example")
                .build(),
        )
        .build();
    let tracer = provider.tracer("toolwright");
    let subscriber =
        tracing_subscriber::registry().with(tracing_opentelemetry::layer().with_tracer(tracer));
    tracing::subscriber::set_global_default(subscriber)?;

    let registry = Registry::builder()
        .tool(SearchOrders)
        .tool(CheckStock)
        .state(AtomicU32::new(0))
        .build()?;
    let session = Session::new("conv-otlp");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()?;
    runtime.block_on(async {
        let turn = tracing::info_span!("chat", gen_ai.operation.name = "chat");
        async {
            for call in [
                ToolCall::new("call_1", "search_orders", r#"{"query":"ada"}"#),
                ToolCall::new("call_2", "check_stock", r#"{"item":"standing desk"}"#),
                ToolCall::new("call_3", "search_orders", r#"{"query":""}"#),
            ] {
                let outcome = registry.call_in(&session, call).await;
                println!(
                    "{} {}: {} ({} attempts)",
                    outcome.call_id(),
                    outcome.tool(),
                    outcome
                        .error_kind()
                        .map_or_else(|| outcome.status().to_string(), |k| k.to_string()),
                    outcome.attempts()
                );
            }
        }
        .instrument(turn)
        .await;
    });
    drop(runtime);
    provider.shutdown()?;
    println!("spans sent to {endpoint}");
    Ok(())
}
