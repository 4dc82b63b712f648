//! A reliable front on any MCP server: its tools, served over MCP again, with toolwright's
//! pipeline in between (validation with every violation, timeouts, classified retries, the
//! breaker, idempotency keys for tools not marked idempotent, the envelope).
//!
//! ```text
//! cargo run --example mcp_proxy --features mcp-proxy -- <command> [args..]
//! cargo run --example mcp_proxy --features mcp-proxy -- --timeout-ms 5000 npx -y @modelcontextprotocol/server-everything
//! cargo run --example mcp_proxy --features mcp-proxy -- --http 127.0.0.1:8090 <command> [args..]
//! cargo run --example mcp_proxy --features mcp-proxy -- --upstream-url http://127.0.0.1:8080/mcp
//! ```
//!
//! It starts `<command>` (or connects to `--upstream-url`), lists its tools, prints to stderr
//! which it proxies and which it cannot (a schema that is not JSON Schema, a name a provider
//! refuses), and serves the rest over stdio (or streamable HTTP with `--http`).

use std::time::Duration;

use toolwright::mcp::proxy::Upstream;
use toolwright::mcp::McpServer;
use toolwright::Registry;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let mut take = |flag: &str| -> Option<String> {
        let at = args.iter().position(|a| a == flag)?;
        let value = args.get(at + 1).cloned();
        args.drain(at..(at + 2).min(args.len()));
        value
    };
    let http = take("--http");
    let url = take("--upstream-url");
    let timeout = take("--timeout-ms")
        .map(|ms| ms.parse::<u64>().map(Duration::from_millis))
        .transpose()?;
    let upstream = match (url, args.split_first()) {
        (Some(url), _) => Upstream::connect_http(&url).await?,
        (None, Some((program, rest))) => {
            let mut command = tokio::process::Command::new(program);
            command.args(rest);
            Upstream::spawn(command).await?
        }
        (None, None) => {
            eprintln!("usage: mcp_proxy [--http ADDR] [--timeout-ms N] (--upstream-url URL | <command> [args..])");
            std::process::exit(2);
        }
    };
    let upstream = match timeout {
        Some(timeout) => upstream.timeout(timeout),
        None => upstream,
    };
    let proxied = upstream.tools();
    for (name, why) in &proxied.refused {
        eprintln!("mcp_proxy: not proxied: {name}: {why}");
    }
    let names: Vec<String> = proxied.tools.iter().map(|t| t.name().to_owned()).collect();
    eprintln!("mcp_proxy: proxying {}", names.join(", "));
    let registry = proxied
        .tools
        .into_iter()
        .fold(Registry::builder(), |builder, tool| {
            builder.dynamic_tool(tool)
        })
        .build()?;
    let server = McpServer::new(registry).name("toolwright-proxy", env!("CARGO_PKG_VERSION"));
    match http {
        None => server.serve_stdio().await?,
        Some(addr) => {
            let running = server.bind_http(addr.as_str()).await?;
            eprintln!("mcp_proxy: serving MCP at {}", running.url());
            running.wait().await?;
        }
    }
    Ok(())
}
