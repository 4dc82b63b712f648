//! Conformance fixtures: a tool set that exercises what trips providers up (nested structs,
//! documented and data-carrying enums, optional fields, lists of structs, maps, numeric and
//! length bounds), exported to every provider, run through the real pipeline, and formatted
//! back; plus provider responses the parsers read.
//!
//! The Rust tests of this crate deserialize the fixtures into `rmcp`'s and `async-openai`'s
//! types; `tests/conformance/check.py` validates the same fixtures (written by
//! `cargo run -p toolwright-conformance --example write_fixtures -- DIR`) against the pydantic
//! types of the official `openai`, `anthropic`, `google-genai` and `mcp` packages.

#![forbid(unsafe_code)]
#![deny(unreachable_pub)]

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use toolwright::prelude::*;
use toolwright::providers::{anthropic, gemini, mcp, openai, Export, Provider};

/// Product category.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Category {
    /// Books and magazines.
    Books,
    /// Phones, laptops and cables.
    Electronics,
    /// Everything for the garden.
    Garden,
}

/// Sort order (undocumented variants: a plain string enum).
#[allow(missing_docs)] // undocumented on purpose: what the providers see for a plain string enum
#[derive(Debug, Clone, Copy, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Sort {
    Relevance,
    PriceAsc,
    PriceDesc,
}

/// A product in the catalogue.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Product {
    /// Stock-keeping unit.
    pub sku: String,
    /// Display name.
    pub name: String,
    /// Price in euros.
    pub price: f64,
    /// Free-form tags.
    pub tags: Vec<String>,
}

/// Search the catalogue. Returns at most `max_results` products.
// The examples: Anthropic's `input_examples`, the other providers' description paragraph.
#[tool(
    timeout_ms = 2000,
    read_only,
    example = r#"{"query":"usb-c cable","max_results":5,"sort":"price_asc","in_stock":true}"#,
    example = r#"{"query":"desk lamp","min_price":20.0,"sort":"relevance","in_stock":false}"#
)]
pub async fn search_products(
    /// Words to look for.
    #[arg(length(min = 1, max = 200))]
    query: String,
    /// How many products to return.
    #[arg(range(min = 1, max = 50), default = 10)]
    max_results: u32,
    /// Lowest price, in euros.
    #[arg(range(min = 0.0, max = 100000.0))]
    min_price: Option<f64>,
    /// Restrict to one category.
    category: Option<Category>,
    /// Result order.
    sort: Sort,
    /// Only products in stock.
    in_stock: bool,
) -> Result<Vec<Product>, ToolError> {
    let _ = (min_price, category, sort, in_stock);
    if query == "nothing" {
        return Ok(Vec::new());
    }
    Ok((0..max_results.min(2))
        .map(|i| Product {
            sku: format!("SKU-{i:04}"),
            name: format!("{query} #{i}"),
            price: 9.5 + f64::from(i),
            tags: vec!["new".into()],
        })
        .collect())
}

/// A postal address.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Address {
    /// Street and number.
    pub street: String,
    /// City.
    pub city: String,
    /// Postal code, when the country has one.
    pub zip: Option<String>,
    /// ISO 3166-1 alpha-2 country code.
    pub country: String,
}

/// Who orders.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Customer {
    /// Full name.
    pub name: String,
    /// Where to send the confirmation.
    pub email: String,
    /// Where to ship.
    pub address: Address,
}

/// One order line.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Line {
    /// The product's SKU.
    pub sku: String,
    /// How many.
    pub quantity: u16,
    /// Wrap as a gift.
    pub gift_wrap: Option<bool>,
}

/// How the order is paid.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "method", rename_all = "snake_case", deny_unknown_fields)]
pub enum Payment {
    /// A card on file.
    Card {
        /// The card's last four digits.
        last4: String,
    },
    /// Pay on delivery.
    Invoice {
        /// Days until due.
        due_days: u8,
    },
}

/// A placed order.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct Order {
    /// The order's id.
    pub order_id: String,
    /// Total in euros.
    pub total: f64,
    /// Lines as placed.
    pub lines: usize,
}

/// Place an order for a customer.
#[tool(timeout_ms = 5000, idempotent = false)]
pub async fn create_order(
    key: IdempotencyKey,
    /// Who orders, and where to ship.
    customer: Customer,
    /// What to order.
    #[arg(length(min = 1, max = 20))]
    lines: Vec<Line>,
    /// How to pay.
    payment: Payment,
    /// Delivery priority, -5 (whenever) to 5 (express).
    #[arg(range(min = -5, max = 5))]
    priority: i8,
) -> Result<Order, ToolError> {
    let _ = (customer, payment, priority);
    Ok(Order {
        order_id: format!("O-{key}"),
        total: 12.5,
        lines: lines.len(),
    })
}

/// Why stock changed (an externally tagged enum: unit and data variants).
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Reason {
    /// Counted again.
    Recount,
    /// Broken in the warehouse.
    Damaged {
        /// What happened.
        note: String,
    },
    /// Moved to another site.
    Transfer {
        /// The receiving site.
        to_site: String,
    },
}

/// Adjust a product's stock level.
#[tool(idempotent = true)]
pub async fn adjust_stock(
    /// The product's SKU.
    #[arg(pattern = "^SKU-[0-9]{4}$")]
    sku: String,
    /// Units to add (negative to remove).
    #[arg(range(min = -1000, max = 1000))]
    delta: i32,
    /// Why.
    reason: Reason,
) -> Result<i64, ToolError> {
    let _ = (sku, reason);
    Ok(100 + i64::from(delta))
}

/// Label a product with free-form key/value pairs (maps: not every provider can express them).
#[tool(idempotent = true)]
pub async fn set_labels(
    /// The product's SKU.
    sku: String,
    /// Label name to value.
    labels: BTreeMap<String, String>,
    /// Per-warehouse reorder thresholds.
    thresholds: BTreeMap<String, u32>,
) -> Result<BTreeMap<String, String>, ToolError> {
    let _ = (sku, thresholds);
    Ok(labels)
}

/// Check the supplier's stock (the supplier is down in these fixtures).
#[tool(read_only)]
pub async fn supplier_stock(
    /// The product's SKU.
    sku: String,
) -> Result<u32, ToolError> {
    let _ = sku;
    Err(ToolError::unavailable("the supplier's API answered 503")
        .with_retry_after(Duration::from_secs(30)))
}

/// Draw a product's sales chart, with a spoken summary and a link to the data: a result of
/// content blocks (text, image, audio, resource link) next to JSON data.
#[tool(read_only, timeout_ms = 1000)]
async fn sales_chart(
    /// The product's SKU.
    sku: String,
) -> Result<toolwright::Content, ToolError> {
    // A 1x1 PNG.
    const PNG: &[u8] = &[
        0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44,
        0x52, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1f,
        0x15, 0xc4, 0x89, 0x00, 0x00, 0x00, 0x0a, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9c, 0x63, 0x00,
        0x01, 0x00, 0x00, 0x05, 0x00, 0x01, 0x0d, 0x0a, 0x2d, 0xb4, 0x00, 0x00, 0x00, 0x00, 0x49,
        0x45, 0x4e, 0x44, 0xae, 0x42, 0x60, 0x82,
    ];
    Ok(toolwright::Content::new()
        .text(format!("Sales of {sku}, last 12 months."))
        .image(PNG, "image/png")
        .audio(b"RIFF\0\0\0\0WAVE", "audio/wav")
        .resource_link(format!("https://example.com/sales/{sku}.csv"), "sales.csv")
        .resource_text(
            format!("file:///sales/{sku}.csv"),
            "text/csv",
            "month,units\n1,100\n",
        )
        .resource_blob(
            format!("file:///sales/{sku}.pdf"),
            "application/pdf",
            b"%PDF-1.7",
        )
        .data(json!({"units": 1200})))
}

/// The fixture tool set.
pub fn registry() -> Registry {
    Registry::builder()
        .tool(SearchProducts)
        .tool(CreateOrder)
        .tool(AdjustStock)
        .tool(SetLabels)
        .tool(SupplierStock)
        .tool(SalesChart)
        .build()
        .expect("the fixture tools have distinct names and need no state")
}

/// Three of the fixture tools, two of them deferred: the registry gains its search tool.
pub fn deferred_registry() -> Registry {
    Registry::builder()
        .tool(SearchProducts)
        .tool(CreateOrder)
        .tool(SupplierStock)
        .deferred(["create_order", "supplier_stock"])
        .build()
        .expect("the deferred fixture registry builds")
}

/// One fixture: what it is (`kind`, which the checkers map to official types), the tool it is
/// about if any, and the JSON.
#[derive(Debug, Clone, Serialize)]
pub struct Fixture {
    /// What the JSON is, for example `openai.chat.tools` or `mcp.call_tool_result`.
    pub kind: &'static str,
    /// A unique name within the kind.
    pub name: String,
    /// The tool the fixture is about, if any.
    pub tool: Option<String>,
    /// The JSON itself.
    pub value: Value,
}

impl Fixture {
    fn new(kind: &'static str, name: impl Into<String>, tool: Option<&str>, value: Value) -> Self {
        Fixture {
            kind,
            name: name.into(),
            tool: tool.map(str::to_owned),
            value,
        }
    }

    /// The file name the fixture is written under.
    pub fn file_name(&self) -> String {
        format!("{}__{}.json", self.kind, self.name)
    }
}

/// Every export target, with the kind its `tools` value is checked as and the tools it is
/// expected to refuse (so the coverage cannot shrink silently).
pub fn targets() -> Vec<(&'static str, Export, &'static str, &'static [&'static str])> {
    const MAPS: &[&str] = &["set_labels"];
    vec![
        (
            "openai_strict",
            Provider::OpenAi.into(),
            "openai.chat.tools",
            MAPS,
        ),
        (
            "openai_loose",
            Provider::OpenAi.strict(false),
            "openai.chat.tools",
            &[],
        ),
        (
            "responses_strict",
            Provider::OpenAiResponses.into(),
            "openai.responses.tools",
            MAPS,
        ),
        (
            "responses_loose",
            Provider::OpenAiResponses.strict(false),
            "openai.responses.tools",
            &[],
        ),
        (
            "anthropic",
            Provider::Anthropic.into(),
            "anthropic.tools",
            &[],
        ),
        (
            "anthropic_strict",
            Provider::Anthropic.strict(true),
            "anthropic.tools",
            MAPS,
        ),
        ("gemini", Provider::Gemini.into(), "gemini.tools", MAPS),
        (
            "gemini_json",
            Provider::GeminiJsonSchema.into(),
            "gemini.tools",
            &[],
        ),
        ("mcp", Provider::Mcp.into(), "mcp.tools", &[]),
    ]
}

/// The calls whose outcomes are formatted for every provider: a success, an empty result,
/// every validation failure class the model usually causes, and an execution failure with a
/// Retry-After.
fn calls() -> Vec<ToolCall> {
    vec![
        ToolCall::new("call_chart", "sales_chart", r#"{"sku":"SKU-0001"}"#),
        ToolCall::new(
            "call_ok",
            "search_products",
            r#"{"query":"lamp","sort":"relevance","in_stock":true}"#,
        ),
        ToolCall::new(
            "call_empty",
            "search_products",
            r#"{"query":"nothing","sort":"price_asc","in_stock":false}"#,
        ),
        ToolCall::new(
            "call_order",
            "create_order",
            r#"{"customer":{"name":"Ada","email":"ada@example.com","address":{"street":"1 Main St","city":"Paris","zip":null,"country":"FR"}},"lines":[{"sku":"SKU-0001","quantity":2,"gift_wrap":null}],"payment":{"method":"card","last4":"4242"},"priority":0}"#,
        ),
        ToolCall::new(
            "call_stock",
            "adjust_stock",
            r#"{"sku":"SKU-0001","delta":-3,"reason":{"damaged":{"note":"dropped"}}}"#,
        ),
        ToolCall::new(
            "call_labels",
            "set_labels",
            r#"{"sku":"SKU-0001","labels":{"colour":"red"},"thresholds":{"paris":4}}"#,
        ),
        ToolCall::new(
            "call_bounds",
            "search_products",
            r#"{"query":"","max_results":500,"sort":"cheapest","in_stock":true}"#,
        ),
        ToolCall::new("call_json", "search_products", r#"{"query":"lamp","#),
        ToolCall::new("call_unknown", "search_prodcuts", r#"{"query":"lamp"}"#),
        ToolCall::new(
            "call_extra",
            "adjust_stock",
            r#"{"sku":"SKU-0001","delta":1,"reason":"recount","why":"x"}"#,
        ),
        ToolCall::new("call_down", "supplier_stock", r#"{"sku":"SKU-0001"}"#),
    ]
}

/// Provider responses carrying calls to the fixture tools, as each provider sends them.
fn responses() -> Vec<Fixture> {
    vec![
        Fixture::new(
            "openai.chat.completion",
            "two_calls",
            None,
            json!({
                "id": "chatcmpl-1", "object": "chat.completion", "created": 1_767_000_000, "model": "gpt-5",
                "choices": [{"index": 0, "finish_reason": "tool_calls", "logprobs": null, "message": {
                    "role": "assistant", "content": null, "refusal": null,
                    "tool_calls": [
                        {"id": "call_1", "type": "function", "function": {"name": "search_products", "arguments": "{\"query\":\"lamp\",\"max_results\":3,\"min_price\":null,\"category\":\"garden\",\"sort\":\"price_asc\",\"in_stock\":true}"}},
                        {"id": "call_2", "type": "function", "function": {"name": "supplier_stock", "arguments": "{\"sku\":\"SKU-0001\"}"}}
                    ]
                }}]
            }),
        ),
        Fixture::new(
            "openai.responses.output",
            "reasoning_then_call",
            None,
            json!([
                {"type": "reasoning", "id": "rs_1", "summary": []},
                {"type": "function_call", "id": "fc_1", "call_id": "call_7", "name": "adjust_stock",
                 "arguments": "{\"sku\":\"SKU-0002\",\"delta\":5,\"reason\":\"recount\"}", "status": "completed"}
            ]),
        ),
        Fixture::new(
            "anthropic.message",
            "text_and_two_tool_uses",
            None,
            json!({
                "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
                "stop_reason": "tool_use", "stop_sequence": null,
                "usage": {"input_tokens": 10, "output_tokens": 20},
                "content": [
                    {"type": "text", "text": "Checking stock and labelling."},
                    {"type": "tool_use", "id": "toolu_1", "name": "set_labels", "input": {"sku": "SKU-0001", "labels": {"colour": "red"}, "thresholds": {}}},
                    {"type": "tool_use", "id": "toolu_2", "name": "adjust_stock", "input": {"sku": "SKU-0001", "delta": 2, "reason": {"transfer": {"to_site": "lyon"}}}}
                ]
            }),
        ),
        Fixture::new(
            "gemini.response",
            "signed_parallel_calls",
            None,
            json!({
                "candidates": [{"index": 0, "finishReason": "STOP", "content": {"role": "model", "parts": [
                    {"functionCall": {"id": "fc-1", "name": "search_products", "args": {"query": "lamp", "sort": "relevance", "in_stock": true}}, "thoughtSignature": "c2lnbmF0dXJlLTE="},
                    {"functionCall": {"name": "supplier_stock", "args": {"sku": "SKU-0003"}}}
                ]}}],
                "modelVersion": "gemini-3-pro",
                "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15}
            }),
        ),
        Fixture::new(
            "mcp.call_tool_request",
            "create_order",
            None,
            json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
                "name": "create_order",
                "arguments": {"customer": {"name": "Ada", "email": "ada@example.com", "address": {"street": "1 Main St", "city": "Paris", "country": "FR"}},
                              "lines": [{"sku": "SKU-0001", "quantity": 1}], "payment": {"method": "invoice", "due_days": 30}, "priority": 2}
            }}),
        ),
    ]
}

/// Every fixture: the exports, the formatted outcomes, the provider responses and the calls
/// parsed from them (run through the pipeline and answered).
pub fn fixtures() -> Vec<Fixture> {
    let registry = registry();
    let mut out = Vec::new();

    for (name, export, kind, refused) in targets() {
        let mut exportable = Vec::new();
        let mut refusals = Vec::new();
        for spec in registry.specs() {
            match export.tool(spec) {
                Ok(_) => exportable.push(spec),
                Err(_) => refusals.push(spec.name()),
            }
        }
        assert_eq!(refusals, refused, "{name}: unexpected refusals");
        let tools = export.tools(exportable).expect("each tool exported alone");
        out.push(Fixture::new(kind, name, None, tools));
    }

    // Deferred tools: the registry's own search tool (what a session is shown before it
    // searched), and the providers' native searches with `defer_loading`.
    let deferred = deferred_registry();
    let before_search = toolwright::Session::new("fixtures");
    for (kind, name, export) in [
        (
            "anthropic.tools",
            "anthropic_deferred",
            Export::new(Provider::Anthropic),
        ),
        (
            "openai.responses.tools",
            "responses_deferred_strict",
            Export::new(Provider::OpenAiResponses),
        ),
        (
            "openai.chat.tools",
            "openai_deferred_strict",
            Export::new(Provider::OpenAi),
        ),
        ("mcp.tools", "mcp_deferred", Export::new(Provider::Mcp)),
    ] {
        let tools = deferred
            .export_for(&before_search, export)
            .expect("the search tool exports everywhere");
        out.push(Fixture::new(kind, name, None, tools));
    }
    for (kind, name, provider) in [
        (
            "anthropic.tools_native_search",
            "anthropic",
            Provider::Anthropic,
        ),
        (
            "openai.responses.tools_native_search",
            "responses",
            Provider::OpenAiResponses,
        ),
    ] {
        let export = Export::new(provider).native_tool_search(true);
        let tools = deferred.export(export).expect("a native search exports");
        out.push(Fixture::new(kind, name, None, tools));
    }
    for provider in [Provider::OpenAi, Provider::Gemini, Provider::Mcp] {
        let refused = deferred.export(Export::new(provider).native_tool_search(true));
        assert!(refused.is_err(), "{provider} has no native tool search");
    }

    // Paused time: the pipeline's retries and Retry-After waits (`supplier_stock` fails with a
    // 30 s Retry-After) pass instantly, so the fixtures show real retry envelopes without
    // waiting for them.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("a current-thread runtime");
    let mut outcomes: Vec<Outcome> = calls()
        .into_iter()
        .map(|call| runtime.block_on(registry.call(call)))
        .collect();

    // The provider responses, parsed by the adapters and answered through the pipeline.
    let responses = responses();
    for response in &responses {
        let calls: Vec<ToolCall> = match response.kind {
            "openai.chat.completion" => openai::parse_calls(&response.value).expect("parses"),
            "openai.responses.output" => {
                openai::parse_response_calls(&response.value).expect("parses")
            }
            "anthropic.message" => anthropic::parse_calls(&response.value).expect("parses"),
            "gemini.response" => {
                let calls = gemini::parse_calls(&response.value).expect("parses");
                out.push(Fixture::new(
                    "gemini.content",
                    format!("{}_replayed", response.name),
                    None,
                    gemini::model_content(&calls),
                ));
                calls
                    .into_iter()
                    .map(gemini::GeminiCall::into_call)
                    .collect()
            }
            "mcp.call_tool_request" => vec![mcp::parse_request(&response.value).expect("parses")],
            other => unreachable!("no parser for {other}"),
        };
        assert!(!calls.is_empty(), "{}: no calls parsed", response.name);
        for call in calls {
            outcomes.push(runtime.block_on(registry.call(call)));
        }
    }
    out.extend(responses);

    for (i, outcome) in outcomes.iter().enumerate() {
        let name = format!("{i:02}_{}", outcome.tool());
        let tool = Some(outcome.tool());
        out.push(Fixture::new(
            "openai.chat.tool_message",
            &name,
            tool,
            openai::tool_message(outcome),
        ));
        out.push(Fixture::new(
            "openai.responses.function_call_output",
            &name,
            tool,
            openai::function_call_output(outcome),
        ));
        out.push(Fixture::new(
            "anthropic.tool_result",
            &name,
            tool,
            anthropic::tool_result(outcome),
        ));
        out.push(Fixture::new(
            "gemini.function_response",
            &name,
            tool,
            gemini::function_response(outcome),
        ));
        out.push(Fixture::new(
            "mcp.call_tool_result",
            &name,
            tool,
            mcp::call_tool_result(outcome),
        ));
    }
    out.push(Fixture::new(
        "anthropic.user_message",
        "all_results",
        None,
        anthropic::user_message(&outcomes),
    ));
    out.push(Fixture::new(
        "gemini.content",
        "all_responses",
        None,
        gemini::user_content(&outcomes),
    ));
    out.extend(runtime.block_on(agent_requests()));
    out
}

/// The agent's model clients' request bodies for a conversation of two tool turns (a success,
/// an empty result, malformed arguments, an unknown tool, a schema violation) and a final
/// answer, for every provider: what the loop would send on its third request.
pub async fn agent_requests() -> Vec<Fixture> {
    use toolwright_agent::http::{AnthropicMessages, GeminiGenerate, OpenAiChat, OpenAiResponses};
    use toolwright_agent::{Agent, ChatModel, Events, Message, ModelRequest, ScriptedModel, Turn};

    // Every tool each provider can express (maps are refused by the strict dialects).
    let registry = || {
        Registry::builder()
            .tool(SearchProducts)
            .tool(CreateOrder)
            .tool(AdjustStock)
            .tool(SupplierStock)
            .build()
            .expect("the fixture tools build")
    };
    let script = || {
        ScriptedModel::new([
            Turn::calls([
                ToolCall::new(
                    "call_1",
                    "search_products",
                    r#"{"query":"lamp","sort":"relevance","in_stock":true}"#,
                ),
                ToolCall::new("call_2", "search_products", r#"{"query":"lamp""#),
                ToolCall::new("call_3", "search_catalogue", r#"{"query":"lamp"}"#),
            ]),
            Turn {
                text: Some("Let me check stock.".into()),
                ..Turn::calls([
                    ToolCall::new(
                        "call_4",
                        "adjust_stock",
                        r#"{"sku":"SKU-0001","delta":"3"}"#,
                    ),
                    ToolCall::new(
                        "call_5",
                        "search_products",
                        r#"{"query":"nothing","sort":"price_asc","in_stock":false}"#,
                    ),
                ])
            },
            Turn::text("I found one lamp."),
        ])
    };
    type Body = Box<dyn Fn(&ModelRequest<'_>) -> Value>;
    let clients: Vec<(&'static str, &str, Body, Export)> = vec![
        (
            "openai.chat.request",
            "openai",
            Box::new({
                let c = OpenAiChat::new("gpt-4.1-mini");
                move |r: &ModelRequest<'_>| c.request_body(r)
            }),
            OpenAiChat::new("x").export(),
        ),
        (
            "openai.chat.request",
            "openai_streaming",
            Box::new({
                let c = OpenAiChat::new("gpt-4.1-mini")
                    .streaming(true)
                    .max_tokens(512);
                move |r: &ModelRequest<'_>| c.request_body(r)
            }),
            OpenAiChat::new("x").export(),
        ),
        (
            "openai.responses.request",
            "responses",
            Box::new({
                let c = OpenAiResponses::new("gpt-4.1-mini");
                move |r: &ModelRequest<'_>| c.request_body(r)
            }),
            OpenAiResponses::new("x").export(),
        ),
        (
            "anthropic.request",
            "anthropic",
            Box::new({
                let c = AnthropicMessages::new("claude-sonnet-4-5");
                move |r: &ModelRequest<'_>| c.request_body(r)
            }),
            AnthropicMessages::new("x").export(),
        ),
        (
            "gemini.request",
            "gemini",
            Box::new({
                let c = GeminiGenerate::new("gemini-2.5-flash");
                move |r: &ModelRequest<'_>| c.request_body(r)
            }),
            GeminiGenerate::new("x").export(),
        ),
    ];
    // The provider searching deferred tools itself: `create_order` and `supplier_stock`
    // deferred, `defer_loading` on them and the provider's search tool in `tools`.
    let natively: Vec<(&'static str, &str, Body, Export)> = vec![
        (
            "openai.responses.request",
            "responses_native_search",
            Box::new({
                let c = OpenAiResponses::new("gpt-5.4").native_tool_search(true);
                move |r: &ModelRequest<'_>| c.request_body(r)
            }),
            OpenAiResponses::new("x").native_tool_search(true).export(),
        ),
        (
            "anthropic.request",
            "anthropic_native_search",
            Box::new({
                let c = AnthropicMessages::new("claude-sonnet-4-5").native_tool_search(true);
                move |r: &ModelRequest<'_>| c.request_body(r)
            }),
            AnthropicMessages::new("x")
                .native_tool_search(true)
                .export(),
        ),
    ];
    let deferred = || {
        Registry::builder()
            .tool(SearchProducts)
            .tool(CreateOrder)
            .tool(AdjustStock)
            .tool(SupplierStock)
            .deferred(["create_order", "supplier_stock"])
            .build()
            .expect("the fixture tools build")
    };
    let mut out = Vec::new();
    let runs = clients
        .into_iter()
        .map(|client| (client, registry()))
        .chain(natively.into_iter().map(|client| (client, deferred())));
    for ((kind, name, body, export), registry) in runs {
        let agent = Agent::builder(script().export_for(export.clone()), registry)
            .system("You are a shop assistant.")
            .build()
            .expect("the tools export");
        let session = Session::new(format!("conformance-{name}"));
        let run = agent
            .run(&session, vec![Message::user("Find me a lamp")])
            .await;
        let request = ModelRequest {
            system: agent.system_prompt(),
            messages: run.transcript(),
            tools: agent.tools(),
            events: &Events::none(),
        };
        out.push(Fixture::new(kind, name, None, body(&request)));
    }
    out
}
