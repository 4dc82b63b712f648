//! The server the official MCP conformance suite (`@modelcontextprotocol/conformance`) tests:
//! the tools its server scenarios call, built with `#[tool]` and a runtime tool, served by
//! `McpServer` over streamable HTTP on loopback. `.ci/run` starts it and runs the suite's
//! scenarios against it.
//!
//! ```text
//! cargo run --example mcp_conformance --features mcp -- 127.0.0.1:3001
//! npx @modelcontextprotocol/conformance server --url http://127.0.0.1:3001/mcp
//! ```

use std::time::Duration;

use toolwright::content::Content;
use toolwright::mcp::McpServer;
use toolwright::prelude::*;
use toolwright::serde_json::json;
use toolwright::{DynamicTool, Effect};

/// A 1x1 red pixel.
const PNG: &[u8] = &[
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x02, 0x00, 0x00, 0x00, 0x90, 0x77, 0x53,
    0xde, 0x00, 0x00, 0x00, 0x0c, 0x49, 0x44, 0x41, 0x54, 0x08, 0xd7, 0x63, 0xf8, 0xcf, 0xc0, 0x00,
    0x00, 0x03, 0x01, 0x01, 0x00, 0x18, 0xdd, 0x8d, 0xb0, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4e,
    0x44, 0xae, 0x42, 0x60, 0x82,
];

/// A WAV file of one silent sample (8 kHz, 8-bit, mono).
const WAV: &[u8] = &[
    b'R', b'I', b'F', b'F', 37, 0, 0, 0, b'W', b'A', b'V', b'E', b'f', b'm', b't', b' ', 16, 0, 0,
    0, 1, 0, 1, 0, 0x40, 0x1f, 0, 0, 0x40, 0x1f, 0, 0, 1, 0, 8, 0, b'd', b'a', b't', b'a', 1, 0, 0,
    0, 0x80,
];

/// Answers with one text block.
#[tool(read_only)]
async fn test_simple_text() -> Result<Content, ToolError> {
    Ok(Content::new().text("This is a simple text response for testing."))
}

/// Answers with an image.
#[tool(read_only)]
async fn test_image_content() -> Result<Content, ToolError> {
    Ok(Content::new().image(PNG, "image/png"))
}

/// Answers with a sound.
#[tool(read_only)]
async fn test_audio_content() -> Result<Content, ToolError> {
    Ok(Content::new().audio(WAV, "audio/wav"))
}

/// Answers with an embedded resource.
#[tool(read_only)]
async fn test_embedded_resource() -> Result<Content, ToolError> {
    Ok(Content::new().resource_text(
        "test://embedded-resource",
        "text/plain",
        "This is an embedded resource content.",
    ))
}

/// Answers with text, an image and an embedded resource.
#[tool(read_only)]
async fn test_multiple_content_types() -> Result<Content, ToolError> {
    Ok(Content::new()
        .text("Multiple content types test:")
        .image(PNG, "image/png")
        .resource_text(
            "test://mixed-content-resource",
            "application/json",
            r#"{"test":"data","value":123}"#,
        ))
}

/// Always fails.
#[tool(read_only)]
async fn test_error_handling() -> Result<String, ToolError> {
    Err(ToolError::bad_request(
        "This tool intentionally returns an error for testing",
    ))
}

/// Reports progress 0, 50 and 100 of 100, 50 ms apart.
#[tool(read_only)]
async fn test_tool_with_progress(ctx: ToolContext) -> Result<String, ToolError> {
    for (i, done) in [0.0, 50.0, 100.0].into_iter().enumerate() {
        if i > 0 {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        ctx.progress(done, Some(100.0), format!("{done} of 100"));
    }
    Ok("Progress test completed".to_owned())
}

/// The schema the `json-schema-2020-12` scenario checks is listed as written.
fn json_schema_tool() -> DynamicTool {
    DynamicTool::builder("json_schema_2020_12_tool")
        .description("Tool with JSON Schema 2020-12 features")
        .input_schema(json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "$defs": {
                "address": {
                    "type": "object",
                    "properties": {"street": {"type": "string"}, "city": {"type": "string"}}
                }
            },
            "properties": {
                "name": {"type": "string"},
                "address": {"$ref": "#/$defs/address"}
            },
            "additionalProperties": false
        }))
        .handler(|args, _| async move { Ok(json!({ "received": args })) })
        .effect(Effect::ReadOnly)
        .build()
        .expect("the scenario's schema is a valid tool")
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:3001".to_owned());
    let registry = Registry::builder()
        .tool(TestSimpleText)
        .tool(TestImageContent)
        .tool(TestAudioContent)
        .tool(TestEmbeddedResource)
        .tool(TestMultipleContentTypes)
        .tool(TestErrorHandling)
        .tool(TestToolWithProgress)
        .dynamic_tool(json_schema_tool())
        .build()?;
    let server = McpServer::new(registry)
        .name("toolwright-conformance", env!("CARGO_PKG_VERSION"))
        .bind_http(addr.as_str())
        .await?;
    println!("listening on http://{}/mcp", server.local_addr());
    server.wait().await?;
    Ok(())
}
