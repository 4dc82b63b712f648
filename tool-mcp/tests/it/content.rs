//! A tool that returns `Content`, served to rmcp's own client: the result's `content` is its
//! blocks, typed by rmcp as image, audio and resource-link blocks, and `structuredContent` is
//! the envelope.

use rmcp::model::{ContentBlock, ResourceContents};
use serde_json::json;
use toolwright::prelude::*;
use toolwright::Content;
use toolwright_mcp::McpServer;

use crate::common::{call, duplex, Elicitor};

/// Draw a chart of the month, with a sound and a link to the data.
#[tool(read_only, timeout_ms = 1000)]
async fn chart(
    /// The month.
    month: String,
) -> Result<Content, ToolError> {
    Ok(Content::new()
        .text(format!("Chart for {month}."))
        .image(&[0x89, b'P', b'N', b'G'], "image/png")
        .audio(b"RIFF", "audio/wav")
        .resource_link("https://example.com/data.csv", "data.csv"))
}

#[tokio::test]
async fn a_content_result_reaches_the_client_as_typed_blocks() {
    let registry = Registry::builder()
        .tool(Chart)
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let client = duplex(McpServer::new(registry), Elicitor::without_elicitation()).await;
    let result = client
        .call_tool(call("chart", json!({"month": "2025-07"})))
        .await
        .expect("tools/call");
    assert_eq!(result.is_error, Some(false));
    let blocks = &result.content;
    assert_eq!(blocks.len(), 4, "{blocks:?}");
    assert!(matches!(&blocks[0], ContentBlock::Text(t) if t.text == "Chart for 2025-07."));
    assert!(
        matches!(&blocks[1], ContentBlock::Image(i) if i.mime_type == "image/png" && i.data == "iVBORw==")
    );
    assert!(matches!(&blocks[2], ContentBlock::Audio(a) if a.mime_type == "audio/wav"));
    assert!(
        matches!(&blocks[3], ContentBlock::ResourceLink(r) if r.uri == "https://example.com/data.csv")
    );
    let envelope = result.structured_content.expect("structuredContent");
    assert_eq!(envelope["status"], "success");
    assert_eq!(envelope["data"]["content"][1]["type"], "image");
}

/// Export the month's figures as files.
#[tool(read_only, timeout_ms = 1000)]
async fn export_month(
    /// The month.
    month: String,
) -> Result<Content, ToolError> {
    Ok(Content::new()
        .resource_text(
            format!("file:///reports/{month}.csv"),
            "text/csv",
            "day,units\n1,12\n",
        )
        .resource_blob(
            format!("file:///reports/{month}.pdf"),
            "application/pdf",
            b"%PDF-1.7",
        ))
}

#[tokio::test]
async fn embedded_resources_reach_the_client_with_their_text_and_bytes() {
    let registry = Registry::builder()
        .tool(ExportMonth)
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let client = duplex(McpServer::new(registry), Elicitor::without_elicitation()).await;
    let result = client
        .call_tool(call("export_month", json!({"month": "2025-07"})))
        .await
        .expect("tools/call");
    assert_eq!(result.is_error, Some(false));
    let blocks = &result.content;
    assert_eq!(blocks.len(), 2, "{blocks:?}");
    let ContentBlock::Resource(text) = &blocks[0] else {
        panic!("an embedded resource: {:?}", blocks[0]);
    };
    assert!(matches!(
        &text.resource,
        ResourceContents::TextResourceContents { uri, mime_type, text, .. }
            if uri == "file:///reports/2025-07.csv"
                && mime_type.as_deref() == Some("text/csv")
                && text == "day,units\n1,12\n"
    ));
    let ContentBlock::Resource(blob) = &blocks[1] else {
        panic!("an embedded resource: {:?}", blocks[1]);
    };
    assert!(matches!(
        &blob.resource,
        ResourceContents::BlobResourceContents { uri, blob, .. }
            if uri == "file:///reports/2025-07.pdf" && blob == "JVBERi0xLjc="
    ));
}
