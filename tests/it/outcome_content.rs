//! A tool that returns `Content`: its blocks reach each provider's result format where the
//! format takes them, and what it cannot take is named, to the model in the envelope and to
//! the application in a `Carriage`, never dropped silently.

use toolwright::content::BlockKind;
use toolwright::prelude::*;
use toolwright::providers::{anthropic, gemini, mcp, openai, Carriage, Carried, Provider};
use toolwright::serde_json::{json, Value};
use toolwright::Content;

const PNG: &[u8] = &[0x89, b'P', b'N', b'G', 0x0d, 0x0a, 0x1a, 0x0a];

/// Draw the month's revenue chart, with a spoken summary and a link to the data.
#[tool(read_only, timeout_ms = 1000)]
async fn revenue_chart(
    /// The month, like `2025-07`.
    month: String,
) -> Result<Content, ToolError> {
    Ok(Content::new()
        .text(format!("Revenue for {month}: 41,200 EUR."))
        .image(PNG, "image/png")
        .audio(b"RIFF", "audio/wav")
        .resource_link(
            format!("https://example.com/revenue/{month}.csv"),
            "revenue.csv",
        )
        .data(json!({"total_eur": 41200})))
}

async fn outcome() -> Outcome {
    let registry = Registry::builder()
        .tool(RevenueChart)
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let outcome = registry
        .call(ToolCall::new(
            "c1",
            "revenue_chart",
            r#"{"month":"2025-07"}"#,
        ))
        .await;
    assert!(outcome.is_ok(), "{}", outcome.to_model_string());
    outcome
}

fn blocks_in_envelope(envelope: &Value) -> &Vec<Value> {
    envelope["data"]["content"]
        .as_array()
        .unwrap_or_else(|| panic!("no blocks in {envelope}"))
}

#[tokio::test]
async fn the_outcome_knows_its_blocks_and_the_output_schema_is_contents() {
    let outcome = outcome().await;
    let content = outcome.content().expect("a content result");
    assert_eq!(content.blocks().len(), 4);
    assert_eq!(content.json(), Some(&json!({"total_eur": 41200})));
    let registry = Registry::builder()
        .tool(RevenueChart)
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let schema = registry.specs()[0].output_schema();
    assert!(schema["properties"]["content"].is_object(), "{schema}");
    let validator = jsonschema::validator_for(schema).unwrap_or_else(|e| panic!("{e}"));
    let data: Value = outcome.data_as().expect("data");
    assert!(
        validator.is_valid(&data),
        "the data matches the output schema"
    );
}

#[tokio::test]
async fn mcp_gets_every_block_as_it_is() {
    let result = mcp::call_tool_result(&outcome().await);
    let types: Vec<&str> = result["content"]
        .as_array()
        .map(|c| c.iter().filter_map(|b| b["type"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(types, ["text", "image", "audio", "resource_link"]);
    assert_eq!(result["content"][1]["mimeType"], "image/png");
    assert_eq!(result["structuredContent"]["status"], "success");
    assert_eq!(result["isError"], false);
}

#[tokio::test]
async fn anthropic_gets_the_image_as_an_image_block_and_is_told_the_audio_was_not_sent() {
    let outcome = outcome().await;
    let result = anthropic::tool_result(&outcome);
    let content = result["content"].as_array().expect("a list of blocks");
    assert_eq!(content.len(), 2, "{result}");
    assert_eq!(content[1]["type"], "image");
    assert_eq!(content[1]["source"]["media_type"], "image/png");
    assert_eq!(content[1]["source"]["data"], "iVBORw0KGgo=");
    let envelope: Value =
        toolwright::serde_json::from_str(content[0]["text"].as_str().unwrap_or_default())
            .expect("the envelope");
    let blocks = blocks_in_envelope(&envelope);
    assert_eq!(blocks[1]["attached"], true);
    assert!(blocks[1].get("data").is_none(), "no base64 in the text");
    assert!(blocks[2]["not_carried"]
        .as_str()
        .is_some_and(|why| why.contains("Anthropic") && why.contains("audio")));
    let carriage = Carriage::of_outcome(&outcome, Provider::Anthropic);
    assert_eq!(
        carriage.not_carried().collect::<Vec<_>>(),
        [BlockKind::Audio]
    );
    assert_eq!(
        carriage.blocks()[3],
        (BlockKind::ResourceLink, Carried::AsText)
    );
}

#[tokio::test]
async fn openai_responses_gets_an_input_image_part() {
    let result = openai::function_call_output(&outcome().await);
    let output = result["output"].as_array().expect("content parts");
    assert_eq!(output[0]["type"], "input_text");
    assert_eq!(output[1]["type"], "input_image");
    assert_eq!(output[1]["image_url"], "data:image/png;base64,iVBORw0KGgo=");
    assert_eq!(output.len(), 2);
}

#[tokio::test]
async fn openai_chat_carries_text_only_and_says_so() {
    let outcome = outcome().await;
    let message = openai::tool_message(&outcome);
    let envelope: Value =
        toolwright::serde_json::from_str(message["content"].as_str().unwrap_or_default())
            .expect("the envelope");
    let blocks = blocks_in_envelope(&envelope);
    assert!(blocks[1]["not_carried"].is_string());
    assert!(blocks[2]["not_carried"].is_string());
    assert_eq!(blocks[3]["uri"], "https://example.com/revenue/2025-07.csv");
    let carriage = Carriage::of_outcome(&outcome, Provider::OpenAi);
    assert_eq!(
        carriage.not_carried().collect::<Vec<_>>(),
        [BlockKind::Image, BlockKind::Audio]
    );
}

#[tokio::test]
async fn gemini_gets_the_image_as_an_inline_data_part() {
    let response = gemini::function_response(&outcome().await);
    let parts = response["functionResponse"]["parts"]
        .as_array()
        .expect("parts");
    assert_eq!(parts.len(), 1);
    assert_eq!(parts[0]["inlineData"]["mimeType"], "image/png");
    let envelope = &response["functionResponse"]["response"]["output"];
    assert_eq!(blocks_in_envelope(envelope)[1]["attached"], true);
}

#[tokio::test]
async fn an_ordinary_tool_has_no_content_and_a_complete_carriage() {
    let registry = Registry::builder()
        .tool(RevenueChart)
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let failed = registry
        .call(ToolCall::new("c1", "revenue_chart", r#"{"month":5}"#))
        .await;
    assert!(failed.content().is_none());
    assert!(Carriage::of_outcome(&failed, Provider::OpenAi).is_complete());
    assert_eq!(
        anthropic::tool_result(&failed)["content"]
            .as_str()
            .map(|_| ()),
        Some(())
    );
}

/// Export a report as files.
#[tool(read_only)]
async fn export_report(
    /// The report.
    name: String,
) -> Result<Content, ToolError> {
    Ok(Content::new()
        .resource_text(format!("file:///{name}.csv"), "text/csv", "a,b\n1,2\n")
        .resource_blob(
            format!("file:///{name}.pdf"),
            "application/pdf",
            b"%PDF-1.7",
        ))
}

#[tokio::test]
async fn an_embedded_text_resource_reaches_every_provider_and_its_bytes_only_mcp() {
    let registry = Registry::builder().tool(ExportReport).build().unwrap();
    let outcome = registry
        .call(ToolCall::new("c1", "export_report", r#"{"name":"q3"}"#))
        .await;
    assert_eq!(outcome.status(), Status::Success);

    let mcp = mcp::call_tool_result(&outcome);
    assert_eq!(mcp["content"][0]["type"], "resource");
    assert_eq!(mcp["content"][0]["resource"]["text"], "a,b\n1,2\n");
    assert_eq!(mcp["content"][1]["resource"]["blob"], "JVBERi0xLjc=");

    let result = anthropic::tool_result(&outcome);
    let text = result["content"][0]["text"].as_str().unwrap_or_default();
    let envelope: Value = toolwright::serde_json::from_str(text).expect("the envelope");
    let blocks = blocks_in_envelope(&envelope);
    assert_eq!(blocks[0]["resource"]["text"], "a,b\n1,2\n");
    assert!(
        blocks[1]["resource"].get("blob").is_none(),
        "no base64 in the text"
    );
    assert!(blocks[1]["resource"]["not_carried"]
        .as_str()
        .is_some_and(|why| why.contains("Anthropic") && why.contains("application/pdf")));
    let carriage = Carriage::of_outcome(&outcome, Provider::Anthropic);
    assert_eq!(
        carriage.blocks(),
        [
            (BlockKind::Resource, Carried::AsText),
            (BlockKind::Resource, Carried::NotCarried)
        ]
    );
}
