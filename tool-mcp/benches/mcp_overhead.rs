//! What MCP serving costs per call, and how many calls per second HTTP serves.
//!
//! One tool (`echo`: the length of a short text), five sides, interleaved round by round so
//! drift on a shared machine hits every side alike:
//!
//! - `registry.call`: in process, no protocol (the floor);
//! - toolwright over stdio framing (an in-process pipe, what a child process's stdio is) and
//!   over streamable HTTP on 127.0.0.1, each driven by rmcp's client;
//! - the same tool served by a plain rmcp `ServerHandler` (no toolwright), over the same two
//!   transports, driven by the same client.
//!
//! Prints the median per-call time of each side, MCP's overhead over `registry.call`, and
//! toolwright's cost over plain rmcp; then calls per second over HTTP with one and two clients
//! calling back to back.
//!
//! `cargo bench -p toolwright-mcp --bench mcp_overhead` (optionally `-- ROUNDS CALLS`).
//! Not run in CI.

use std::sync::Arc;
use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool as McpTool,
};
use rmcp::service::{RequestContext, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{
    StreamableHttpClientTransport, StreamableHttpServerConfig, StreamableHttpService,
};
use rmcp::{ErrorData, RoleClient, RoleServer, ServerHandler, ServiceExt};
use serde_json::{json, Map, Value};
use toolwright::prelude::*;
use toolwright_mcp::McpServer;

/// Return the length of a text.
#[tool(read_only, timeout_ms = 5000)]
async fn echo(
    /// The text.
    text: String,
) -> Result<usize, ToolError> {
    Ok(text.len())
}

fn registry() -> Registry {
    Registry::builder()
        .tool(Echo)
        .build()
        .unwrap_or_else(|e| panic!("{e}"))
}

/// The same tool the plain rmcp way: a `ServerHandler` that lists it and answers it, with
/// its arguments parsed by serde and the result as text and `structuredContent`.
#[derive(Clone)]
struct PlainEcho {
    tool: Arc<McpTool>,
}

impl PlainEcho {
    fn new() -> Self {
        let schema = json!({
            "type": "object",
            "properties": {"text": {"type": "string"}},
            "required": ["text"],
        });
        let Value::Object(schema) = schema else {
            unreachable!("an object literal")
        };
        PlainEcho {
            tool: Arc::new(McpTool::new("echo", "Return the length of a text.", schema)),
        }
    }
}

#[derive(serde::Deserialize)]
struct PlainArgs {
    text: String,
}

impl ServerHandler for PlainEcho {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(vec![(*self.tool).clone()]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let arguments = Value::Object(request.arguments.unwrap_or_default());
        let args: PlainArgs = serde_json::from_value(arguments)
            .map_err(|e| ErrorData::invalid_params(e.to_string(), None))?;
        let len = args.text.len();
        let mut result = CallToolResult::success(vec![ContentBlock::text(len.to_string())]);
        result.structured_content = Some(json!({ "len": len }));
        Ok(result.into())
    }
}

type Client = RunningService<RoleClient, ()>;

/// rmcp's client on one end of an in-process pipe (stdio's framing); the other end is the
/// server's.
async fn pipe_client(client_io: tokio::io::DuplexStream) -> Client {
    ().serve(tokio::io::split(client_io))
        .await
        .unwrap_or_else(|e| panic!("client: {e}"))
}

/// toolwright's server over a pipe.
async fn ours_over_pipe(registry: Registry) -> Client {
    let (server_io, client_io) = tokio::io::duplex(1 << 20);
    tokio::spawn(McpServer::new(registry).serve(tokio::io::split(server_io)));
    pipe_client(client_io).await
}

/// The plain rmcp server over a pipe.
async fn plain_over_pipe() -> Client {
    let (server_io, client_io) = tokio::io::duplex(1 << 20);
    tokio::spawn(async move {
        if let Ok(running) = PlainEcho::new().serve(tokio::io::split(server_io)).await {
            let _ = running.waiting().await;
        }
    });
    pipe_client(client_io).await
}

async fn http_client(url: &str) -> Client {
    let config = StreamableHttpClientTransportConfig::with_uri(url.to_owned());
    ().serve(StreamableHttpClientTransport::from_config(config))
        .await
        .unwrap_or_else(|e| panic!("client: {e}"))
}

/// The plain rmcp server on streamable HTTP, as rmcp's examples serve it (axum).
async fn plain_http() -> String {
    let service: StreamableHttpService<PlainEcho, LocalSessionManager> = StreamableHttpService::new(
        || Ok(PlainEcho::new()),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default(),
    );
    let router = axum::Router::new().nest_service("/mcp", service);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap_or_else(|e| panic!("bind: {e}"));
    let addr = listener
        .local_addr()
        .unwrap_or_else(|e| panic!("addr: {e}"));
    tokio::spawn(async move { axum::serve(listener, router).await });
    format!("http://{addr}/mcp")
}

fn params() -> CallToolRequestParams {
    let mut arguments = Map::new();
    arguments.insert("text".into(), Value::from("hello, world"));
    CallToolRequestParams::new("echo").with_arguments(arguments)
}

/// Nanoseconds per call of `calls` calls through an MCP client.
async fn mcp_round(client: &Client, calls: usize) -> f64 {
    let start = Instant::now();
    for _ in 0..calls {
        let result = client
            .call_tool(params())
            .await
            .unwrap_or_else(|e| panic!("call: {e}"));
        std::hint::black_box(result);
    }
    start.elapsed().as_nanos() as f64 / calls as f64
}

async fn registry_round(registry: &Registry, calls: usize) -> f64 {
    let start = Instant::now();
    for i in 0..calls {
        let outcome = registry
            .call(ToolCall::new(
                format!("c{i}"),
                "echo",
                r#"{"text":"hello, world"}"#,
            ))
            .await;
        std::hint::black_box(outcome);
    }
    start.elapsed().as_nanos() as f64 / calls as f64
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// Calls per second of `clients` clients calling back to back for `window`.
async fn throughput(url: &str, clients: usize, window: Duration) -> f64 {
    let mut connected = Vec::new();
    for _ in 0..clients {
        connected.push(http_client(url).await);
    }
    let deadline = Instant::now() + window;
    let start = Instant::now();
    let mut tasks = Vec::new();
    for client in connected {
        tasks.push(tokio::spawn(async move {
            let mut calls = 0u64;
            while Instant::now() < deadline {
                if client.call_tool(params()).await.is_ok() {
                    calls += 1;
                }
            }
            let _ = client.cancel().await;
            calls
        }));
    }
    let mut total = 0;
    for task in tasks {
        total += task.await.unwrap_or(0);
    }
    total as f64 / start.elapsed().as_secs_f64()
}

fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let rounds = args.first().copied().unwrap_or(30);
    let calls = args.get(1).copied().unwrap_or(100);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("runtime: {e}"));
    runtime.block_on(async move {
        let registry = registry();
        let ours_pipe = ours_over_pipe(registry.clone()).await;
        let plain_pipe = plain_over_pipe().await;
        let ours = McpServer::new(registry.clone())
            .bind_http("127.0.0.1:0")
            .await
            .unwrap_or_else(|e| panic!("bind: {e}"));
        let ours_url = ours.url();
        let plain_url = plain_http().await;
        let ours_http = http_client(&ours_url).await;
        let plain_http_client = http_client(&plain_url).await;

        // Warm up every side.
        registry_round(&registry, calls).await;
        for client in [&ours_pipe, &plain_pipe, &ours_http, &plain_http_client] {
            mcp_round(client, calls).await;
        }

        let mut sides: [Vec<f64>; 5] = Default::default();
        for _ in 0..rounds {
            sides[0].push(registry_round(&registry, calls).await);
            sides[1].push(mcp_round(&ours_pipe, calls).await);
            sides[2].push(mcp_round(&plain_pipe, calls).await);
            sides[3].push(mcp_round(&ours_http, calls).await);
            sides[4].push(mcp_round(&plain_http_client, calls).await);
        }
        let [floor, pipe, plain_pipe_ns, http, plain_http_ns] = sides.map(|mut v| median(&mut v));
        println!("MCP overhead: {rounds} rounds x {calls} calls per side, interleaved (medians)");
        println!("  registry.call (in process)        {:>10.1} us/call", floor / 1e3);
        println!(
            "  toolwright MCP, stdio framing     {:>10.1} us/call  (+{:.1} us over registry.call)",
            pipe / 1e3,
            (pipe - floor) / 1e3
        );
        println!(
            "  plain rmcp,    stdio framing     {:>10.1} us/call  (toolwright / rmcp {:.2})",
            plain_pipe_ns / 1e3,
            pipe / plain_pipe_ns
        );
        println!(
            "  toolwright MCP, streamable HTTP   {:>10.1} us/call  (+{:.1} us over registry.call)",
            http / 1e3,
            (http - floor) / 1e3
        );
        println!(
            "  plain rmcp,    streamable HTTP   {:>10.1} us/call  (toolwright / rmcp {:.2})",
            plain_http_ns / 1e3,
            http / plain_http_ns
        );

        let window = Duration::from_secs(3);
        for clients in [1, 2] {
            let ours = throughput(&ours_url, clients, window).await;
            let plain = throughput(&plain_url, clients, window).await;
            println!(
                "  HTTP, {clients} client(s) back to back: toolwright {ours:>8.0} calls/s, plain rmcp {plain:>8.0} calls/s"
            );
        }
        let _ = ours.shutdown().await;
    });
}
