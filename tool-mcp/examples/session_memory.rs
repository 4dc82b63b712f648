//! Measures what streamable-HTTP sessions cost in memory: the resident set size (Linux
//! `/proc/self/statm`) per idle session, and after 10,000 more attempted sessions with the
//! session cap on (each refused with 503 before anything is allocated for it).
//!
//! ```text
//! cargo run -p toolwright-mcp --example session_memory [--release]
//! ```
//!
//! The server and its client share this process; the client is one keep-alive connection,
//! warmed up before the first figure.

use std::time::{Duration, Instant};

use toolwright::prelude::*;
use toolwright::Registry;
use toolwright_mcp::McpServer;

/// Echo a text back.
#[tool(timeout_ms = 1000, read_only)]
async fn echo(text: String) -> Result<String, ToolError> {
    Ok(text)
}

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"measure","version":"0"}}}"#;

/// Resident set size in KiB.
fn rss_kib() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    pages * 4
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let cap = 1_000;
    let registry = Registry::builder().tool(Echo).build()?;
    let server = McpServer::new(registry)
        .max_sessions(cap)
        .bind_http("127.0.0.1:0")
        .await?;
    let http = reqwest::Client::new();
    let initialize = || {
        http.post(server.url())
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(INITIALIZE)
            .send()
    };
    // Warm-up: open and end 100 sessions, so the allocator and the client's pool are settled.
    for _ in 0..100 {
        let opened = initialize().await?;
        let id = opened
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        drop(opened.text().await);
        http.delete(server.url())
            .header("mcp-session-id", id)
            .send()
            .await?;
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let before = rss_kib();
    let mut opened = 0;
    for _ in 0..cap {
        let answer = initialize().await?;
        if answer.status() == 200 {
            opened += 1;
        }
        drop(answer.text().await);
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let full = rss_kib();
    let started = Instant::now();
    let mut refused = 0;
    for _ in 0..10_000 {
        let answer = initialize().await?;
        if answer.status() == 503 {
            refused += 1;
        }
        drop(answer.text().await);
    }
    let elapsed = started.elapsed();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let after = rss_kib();
    println!("RSS before: {before} KiB");
    println!(
        "{opened} idle sessions: RSS {full} KiB, +{} KiB, {:.1} KiB a session",
        full.saturating_sub(before),
        full.saturating_sub(before) as f64 / f64::from(opened.max(1))
    );
    println!(
        "10,000 more attempts ({refused} refused with 503, {:.1} s): RSS {after} KiB ({:+} KiB)",
        elapsed.as_secs_f64(),
        after as i64 - full as i64
    );
    server.shutdown().await?;
    Ok(())
}
