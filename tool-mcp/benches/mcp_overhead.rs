//! What MCP serving costs per call, and how many calls per second streamable HTTP serves.
//!
//! One tool (`echo`: the length of a short text), seven sides, interleaved round by round so
//! drift on a shared machine hits every side alike (each transport's sides take turns at going
//! first, so none always meets the transport's code cold):
//!
//! - `registry.call`: in process, no protocol (the floor);
//! - toolwright over stdio framing (an in-process pipe, what a child process's stdio is) and
//!   over streamable HTTP on 127.0.0.1, each driven by rmcp's client;
//! - the same tool served by a plain rmcp `ServerHandler` (no toolwright), over the same two
//!   transports, driven by the same client;
//! - that plain server answering with toolwright's envelope (as text and as
//!   `structuredContent`) instead of its own short answer, over the same two transports: what
//!   the longer answer alone costs rmcp's server and client.
//!
//! Prints the median per-call time of each side, MCP's overhead over `registry.call`, and
//! toolwright's cost over plain rmcp. Then calls per second over streamable HTTP with 1, 2 and
//! 8 clients (each its own session) calling back to back: for each count, the clients of the
//! three servers connect once, then short windows alternate (toolwright's, plain rmcp's, the
//! enveloped one's, the first rotating), and each side's figure is the median of its windows. (rmcp's client does
//! not reuse a connection from one call to the next here: every HTTP call opens a TCP
//! connection of its own, on every side.)
//!
//! `cargo bench -p toolwright-mcp --bench mcp_overhead` (optionally
//! `-- ROUNDS CALLS WINDOWS WINDOW_MS`: per-call rounds, calls per round, throughput windows
//! per side and count, and each window's length; 30 100 8 500 by default).
//!
//! `-- --only SIDE N` (SIDE one of `ours-stdio`, `plain-stdio`, `ours-http`, `plain-http`)
//! connects that side alone, prints one answer, warms it up, makes N calls and exits, for an
//! instruction count (`valgrind --tool=callgrind`): the difference of two runs with different
//! N is the cost of that many calls, client and server, without the setup. The enveloped
//! server's sides are `plain-envelope-stdio` and `plain-envelope-http`.
//!
//! `-- --stack` takes toolwright's per-call time over streamable HTTP apart, five servers
//! interleaved round by round, the first rotating: toolwright; the plain rmcp server; the plain handler served by
//! toolwright's HTTP stack (its listener, guard and session table, no pipeline); a plain handler
//! that answers through `registry.call` (the pipeline without toolwright's MCP handler); and
//! the same calling `registry.call` twice per request (what the call costs once its code and
//! data are in the caches).
//!
//! Not run in CI, nor by `cargo test` (a `harness = false` bench).

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::serve::ListenerExt;
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
    /// Answer with the envelope toolwright answers (`--only plain-envelope-*`), so that what
    /// the larger answer costs rmcp (both ends) is told apart from what toolwright adds.
    envelope: bool,
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
            envelope: false,
        }
    }

    fn with_envelope() -> Self {
        PlainEcho {
            envelope: true,
            ..PlainEcho::new()
        }
    }
}

/// What both plain handlers offer: tools, nothing else.
fn tools_only() -> ServerConfig {
    ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
}

#[derive(serde::Deserialize)]
struct PlainArgs {
    text: String,
}

impl ServerHandler for PlainEcho {
    fn get_info(&self) -> ServerConfig {
        tools_only()
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
        if self.envelope {
            let envelope = json!({"status": "success", "data": len, "attempts": 1});
            let mut result =
                CallToolResult::success(vec![ContentBlock::text(envelope.to_string())]);
            result.structured_content = Some(envelope);
            return Ok(result.into());
        }
        let mut result = CallToolResult::success(vec![ContentBlock::text(len.to_string())]);
        result.structured_content = Some(json!({ "len": len }));
        Ok(result.into())
    }
}

/// A plain rmcp handler that answers through `registry.call`, rendered as toolwright's handler
/// renders an outcome: the pipeline's cost over HTTP without toolwright's MCP handler
/// (`--stack`). With `twice`, each request calls the registry a second time first.
#[derive(Clone)]
struct RegistryEcho {
    registry: Registry,
    twice: bool,
}

impl ServerHandler for RegistryEcho {
    fn get_info(&self) -> ServerConfig {
        tools_only()
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let arguments = serde_json::to_string(&request.arguments)
            .map_err(|e| ErrorData::invalid_params(e.to_string(), None))?;
        let id = serde_json::to_string(&context.id).unwrap_or_default();
        if self.twice {
            let first = ToolCall::new(id.clone(), request.name.clone(), arguments.clone());
            std::hint::black_box(self.registry.call(first).await);
        }
        let outcome = self
            .registry
            .call(ToolCall::new(id, request.name, arguments))
            .await;
        let mut result =
            CallToolResult::success(vec![ContentBlock::text(outcome.to_model_string())]);
        result.structured_content = Some(outcome.to_model_json());
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
    plain_handler_over_pipe(PlainEcho::new()).await
}

async fn plain_handler_over_pipe(handler: PlainEcho) -> Client {
    let (server_io, client_io) = tokio::io::duplex(1 << 20);
    tokio::spawn(async move {
        if let Ok(running) = handler.serve(tokio::io::split(server_io)).await {
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
    plain_handler_http(PlainEcho::new).await
}

async fn plain_handler_http(handler: fn() -> PlainEcho) -> String {
    let service: StreamableHttpService<PlainEcho, LocalSessionManager> = StreamableHttpService::new(
        move || Ok(handler()),
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
    // TCP_NODELAY, as `bind_http` sets it.
    let listener = listener.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
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

/// The clients of one throughput measurement, connected once and reused by every window.
async fn connect(url: &str, clients: usize) -> Vec<Client> {
    let mut connected = Vec::with_capacity(clients);
    for _ in 0..clients {
        connected.push(http_client(url).await);
    }
    connected
}

/// Calls per second of `clients` calling back to back, each in a task of its own, for
/// `window`.
async fn window(clients: &[Client], window: Duration) -> f64 {
    let start = Instant::now();
    let deadline = start + window;
    let mut tasks = Vec::with_capacity(clients.len());
    for client in clients {
        let peer = client.peer().clone();
        tasks.push(tokio::spawn(async move {
            let mut calls = 0u64;
            while Instant::now() < deadline {
                if peer.call_tool(params()).await.is_ok() {
                    calls += 1;
                }
            }
            calls
        }));
    }
    let mut total = 0;
    for task in tasks {
        total += task.await.unwrap_or(0);
    }
    total as f64 / start.elapsed().as_secs_f64()
}

async fn disconnect(clients: Vec<Client>) {
    for client in clients {
        let _ = client.cancel().await;
    }
}

/// `--only SIDE N`: `N` calls of one side, nothing else measured.
async fn only(side: &str, calls: usize) {
    let registry = registry();
    let mut ours = None;
    let client = match side {
        "ours-stdio" => ours_over_pipe(registry).await,
        "plain-stdio" => plain_over_pipe().await,
        "ours-http" => {
            let server = McpServer::new(registry)
                .bind_http("127.0.0.1:0")
                .await
                .unwrap_or_else(|e| panic!("bind: {e}"));
            let client = http_client(&server.url()).await;
            ours = Some(server);
            client
        }
        "plain-http" => http_client(&plain_http().await).await,
        "plain-envelope-stdio" => plain_handler_over_pipe(PlainEcho::with_envelope()).await,
        "plain-envelope-http" => {
            http_client(&plain_handler_http(PlainEcho::with_envelope).await).await
        }
        other => panic!(
            "--only {other}: one of ours-stdio, plain-stdio, ours-http, plain-http, \
             plain-envelope-stdio, plain-envelope-http"
        ),
    };
    let answer = client
        .call_tool(params())
        .await
        .unwrap_or_else(|e| panic!("call: {e}"));
    println!(
        "{side} answers {}",
        serde_json::to_string(&answer).unwrap_or_default()
    );
    mcp_round(&client, 20).await;
    let per_call = mcp_round(&client, calls).await;
    println!("{side}: {calls} calls, {:.1} us/call", per_call / 1e3);
    let _ = client.cancel().await;
    if let Some(server) = ours {
        let _ = server.shutdown().await;
    }
}

/// toolwright's server with another handler in place of its own.
async fn ours_with<H: ServerHandler>(
    registry: &Registry,
    handler: impl Fn() -> H + Send + Sync + 'static,
) -> toolwright_mcp::HttpServer {
    McpServer::new(registry.clone())
        .with_handler(move |_tools| handler())
        .bind_http("127.0.0.1:0")
        .await
        .unwrap_or_else(|e| panic!("bind: {e}"))
}

/// `--stack`: toolwright's per-call time over HTTP taken apart (see the module's doc).
async fn stack(rounds: usize, calls: usize) {
    let registry = registry();
    let ours = McpServer::new(registry.clone())
        .bind_http("127.0.0.1:0")
        .await
        .unwrap_or_else(|e| panic!("bind: {e}"));
    let plain_in_ours = ours_with(&registry, PlainEcho::new).await;
    let (once, twice) = (registry.clone(), registry.clone());
    let through_registry = ours_with(&registry, move || RegistryEcho {
        registry: once.clone(),
        twice: false,
    })
    .await;
    let through_registry_twice = ours_with(&registry, move || RegistryEcho {
        registry: twice.clone(),
        twice: true,
    })
    .await;
    let clients = [
        http_client(&ours.url()).await,
        http_client(&plain_http().await).await,
        http_client(&plain_in_ours.url()).await,
        http_client(&through_registry.url()).await,
        http_client(&through_registry_twice.url()).await,
    ];
    for client in &clients {
        mcp_round(client, calls).await;
    }
    let mut sides: [Vec<f64>; 5] = Default::default();
    for round in 0..rounds {
        // The first server of a round rotates, as in the main run.
        for turn in 0..clients.len() {
            let i = (round + turn) % clients.len();
            sides[i].push(mcp_round(&clients[i], calls).await);
        }
    }
    let [ours_ns, plain, plain_in_ours_ns, once_ns, twice_ns] =
        sides.map(|mut v| median(&mut v) / 1e3);
    println!(
        "streamable HTTP per call, {rounds} rounds x {calls} calls per side, interleaved (medians)"
    );
    println!("  toolwright                                   {ours_ns:>8.1} us");
    println!("  plain rmcp                                   {plain:>8.1} us");
    println!("  plain handler, toolwright's HTTP stack       {plain_in_ours_ns:>8.1} us");
    println!("  registry.call in a plain handler, same stack {once_ns:>8.1} us");
    println!("  the same, registry.call twice per request    {twice_ns:>8.1} us");
    for client in clients {
        let _ = client.cancel().await;
    }
    for server in [
        ours,
        plain_in_ours,
        through_registry,
        through_registry_twice,
    ] {
        let _ = server.shutdown().await;
    }
}

fn main() {
    let raw: Vec<String> = std::env::args().skip(1).collect();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("runtime: {e}"));
    if let Some(at) = raw.iter().position(|a| a == "--only") {
        let side = raw.get(at + 1).map_or("", String::as_str);
        let calls = raw.get(at + 2).and_then(|n| n.parse().ok()).unwrap_or(1000);
        runtime.block_on(only(side, calls));
        return;
    }
    let args: Vec<usize> = raw.iter().filter_map(|a| a.parse().ok()).collect();
    let rounds = args.first().copied().unwrap_or(30);
    let calls = args.get(1).copied().unwrap_or(100);
    if raw.iter().any(|a| a == "--stack") {
        runtime.block_on(stack(rounds, calls));
        return;
    }
    let windows = args.get(2).copied().unwrap_or(8).max(1);
    let window_length = Duration::from_millis(args.get(3).copied().unwrap_or(500) as u64);
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
        let enveloped_url = plain_handler_http(PlainEcho::with_envelope).await;
        let enveloped_pipe = plain_handler_over_pipe(PlainEcho::with_envelope()).await;
        let ours_http = http_client(&ours_url).await;
        let plain_http_client = http_client(&plain_url).await;
        let enveloped_http = http_client(&enveloped_url).await;
        let clients = [
            &ours_pipe,
            &plain_pipe,
            &enveloped_pipe,
            &ours_http,
            &plain_http_client,
            &enveloped_http,
        ];

        // Warm up every side.
        registry_round(&registry, calls).await;
        for client in clients {
            mcp_round(client, calls).await;
        }

        // registry.call, then per transport: toolwright, plain rmcp, plain rmcp answering
        // with toolwright's envelope.
        let mut sides: [Vec<f64>; 7] = Default::default();
        // Per transport, the same round's toolwright / plain, enveloped / plain and
        // toolwright / enveloped (what toolwright adds beyond the answer it sends).
        let mut ratios: [Vec<f64>; 6] = Default::default();
        for round in 0..rounds {
            sides[0].push(registry_round(&registry, calls).await);
            // Each transport's three sides in turn, the first of them rotating from round to
            // round: the side that runs first after a change of transport meets its shared
            // code (rmcp's client and server, the transport's) cold.
            for transport in 0..2 {
                for turn in 0..3 {
                    let i = transport * 3 + (round + turn) % 3;
                    sides[i + 1].push(mcp_round(clients[i], calls).await);
                }
            }
            for transport in 0..2 {
                let [ours, plain, enveloped] = [1, 2, 3].map(|k| sides[transport * 3 + k][round]);
                ratios[transport * 3].push(ours / plain);
                ratios[transport * 3 + 1].push(enveloped / plain);
                ratios[transport * 3 + 2].push(ours / enveloped);
            }
        }
        let [floor, pipe, plain_pipe_ns, enveloped_pipe_ns, http, plain_http_ns, enveloped_http_ns] =
            sides.map(|mut v| median(&mut v));
        let [pipe_ratio, pipe_envelope, pipe_own, http_ratio, http_envelope, http_own] =
            ratios.map(|mut v| median(&mut v));
        println!(
            "MCP overhead: {rounds} rounds x {calls} calls per side, interleaved (medians; the \
             ratio is the median of the rounds' ratios)"
        );
        println!("  registry.call (in process)           {:>10.1} us/call", floor / 1e3);
        for (transport, [ours, plain, enveloped], [ratio, envelope, own]) in [
            (
                "stdio framing",
                [pipe, plain_pipe_ns, enveloped_pipe_ns],
                [pipe_ratio, pipe_envelope, pipe_own],
            ),
            (
                "streamable HTTP",
                [http, plain_http_ns, enveloped_http_ns],
                [http_ratio, http_envelope, http_own],
            ),
        ] {
            println!(
                "  toolwright MCP, {transport:<16}     {:>10.1} us/call  (+{:.1} us over registry.call)",
                ours / 1e3,
                (ours - floor) / 1e3
            );
            println!(
                "  plain rmcp,    {transport:<16}     {:>10.1} us/call  (toolwright / rmcp {ratio:.2})",
                plain / 1e3,
            );
            println!(
                "  plain rmcp + the envelope, {transport:<16} {:>6.1} us/call  (/ plain rmcp {envelope:.2}; toolwright / this {own:.2})",
                enveloped / 1e3,
            );
        }
        for client in [ours_pipe, plain_pipe, enveloped_pipe, ours_http, plain_http_client, enveloped_http] {
            let _ = client.cancel().await;
        }

        println!(
            "HTTP calls/s, back to back: {windows} windows of {} ms per side, alternating (medians; \
             the ratio is the median of the rounds' ratios); the third server is plain rmcp \
             answering with toolwright's envelope",
            window_length.as_millis()
        );
        for clients in [1, 2, 8] {
            let sides = [
                connect(&ours_url, clients).await,
                connect(&plain_url, clients).await,
                connect(&enveloped_url, clients).await,
            ];
            // Warm up every side.
            for side in &sides {
                window(side, window_length / 4).await;
            }
            let mut rates: [Vec<f64>; 3] = Default::default();
            let mut ratios: [Vec<f64>; 2] = Default::default();
            for w in 0..windows {
                let mut round = [0.0; 3];
                for turn in 0..3 {
                    let i = (w + turn) % 3;
                    round[i] = window(&sides[i], window_length).await;
                    rates[i].push(round[i]);
                }
                ratios[0].push(round[0] / round[1]);
                ratios[1].push(round[2] / round[1]);
            }
            let [ours_rate, plain_rate, enveloped_rate] = rates.map(|mut v| median(&mut v));
            let [ratio, envelope] = ratios.map(|mut v| median(&mut v));
            println!(
                "  {clients} client(s): toolwright {ours_rate:>8.0} calls/s, plain rmcp {plain_rate:>8.0} calls/s  (toolwright / rmcp {ratio:.2}); plain rmcp + the envelope {enveloped_rate:>8.0} calls/s (/ plain rmcp {envelope:.2})"
            );
            for side in sides {
                disconnect(side).await;
            }
        }
        let _ = ours.shutdown().await;
    });
}
