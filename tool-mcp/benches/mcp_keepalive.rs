//! Calls per second over streamable HTTP with kept-alive connections, as real MCP clients
//! hold them: toolwright's `bind_http` beside a plain rmcp `StreamableHttpService` under
//! `axum::serve` (both with `TCP_NODELAY` on their accepted sockets).
//!
//! A load generator of its own (hyper's client connection: one kept-alive HTTP/1.1 connection
//! per client, each client calling back to back) drives each server for 1, 8 and 50 clients,
//! in both revisions (2025-11-25: each client opens a session first; 2026-07-28: stateless
//! requests carrying their version and capabilities in `_meta`), and two tools: one with no
//! I/O (the length of a text) and one with 1 ms of I/O (a tokio sleep first). rmcp's own
//! client, which `mcp_overhead` drives, opens a connection per call and cannot show what a
//! kept-alive connection costs.
//!
//! Each row starts both servers as fresh processes of this binary (`--serve ours` and
//! `--serve plain`), each with one tokio worker pinned to CPU 0 when `taskset` is present (the
//! generator pins itself to CPU 1), warms both up, then alternates timed windows between them,
//! the first rotating. Printed per row: each server's median calls/s and median of its windows'
//! p50 latencies, toolwright / rmcp as the median of the per-pair ratios, each server's peak
//! RSS (`VmHWM`), and failed calls.
//!
//! `cargo bench -p toolwright-mcp --bench mcp_keepalive` (optionally
//! `-- WINDOWS WINDOW_MS WARMUP_MS`: timed windows per server and row, and their lengths; 5,
//! 1000 and 1000 by default). Not run in CI, nor by `cargo test` (a `harness = false` bench).

use std::io::{BufRead, BufReader, Read as _};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::serve::ListenerExt;
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool as McpTool,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::{json, Value};
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

/// Wait a millisecond (a stand-in for a query), then return the length of a text.
#[tool(read_only, timeout_ms = 5000)]
async fn wait_echo(
    /// The text.
    text: String,
) -> Result<usize, ToolError> {
    tokio::time::sleep(Duration::from_millis(1)).await;
    Ok(text.len())
}

/// The same two tools the plain rmcp way: listed and answered by a `ServerHandler`, arguments
/// parsed by serde, the result as text and `structuredContent`.
#[derive(Clone)]
struct Plain {
    tools: Arc<Vec<McpTool>>,
}

impl Plain {
    fn new() -> Self {
        let schema = json!({
            "type": "object",
            "properties": {"text": {"type": "string"}},
            "required": ["text"],
        });
        let Value::Object(schema) = schema else {
            unreachable!("an object literal")
        };
        let tools = vec![
            McpTool::new("echo", "Return the length of a text.", schema.clone()),
            McpTool::new(
                "wait_echo",
                "Wait a millisecond, then return the length.",
                schema,
            ),
        ];
        Plain {
            tools: Arc::new(tools),
        }
    }
}

#[derive(serde::Deserialize)]
struct PlainArgs {
    text: String,
}

impl ServerHandler for Plain {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools.to_vec()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let arguments = Value::Object(request.arguments.unwrap_or_default());
        let args: PlainArgs = serde_json::from_value(arguments)
            .map_err(|e| ErrorData::invalid_params(e.to_string(), None))?;
        match request.name.as_ref() {
            "echo" => {}
            "wait_echo" => tokio::time::sleep(Duration::from_millis(1)).await,
            other => return Err(ErrorData::invalid_params(format!("no tool {other}"), None)),
        }
        let len = args.text.len();
        let mut result = CallToolResult::success(vec![ContentBlock::text(len.to_string())]);
        result.structured_content = Some(json!({ "len": len }));
        Ok(result.into())
    }
}

/// `--serve ours|plain`: serves on a free loopback port, prints `ADDR <addr>`, and runs until
/// its stdin closes.
fn serve(side: &str) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("runtime: {e}"));
    runtime.block_on(async {
        let addr = match side {
            "ours" => {
                let registry = Registry::builder()
                    .tool(Echo)
                    .tool(WaitEcho)
                    .build()
                    .unwrap_or_else(|e| panic!("{e}"));
                let server = McpServer::new(registry)
                    .bind_http("127.0.0.1:0")
                    .await
                    .unwrap_or_else(|e| panic!("bind: {e}"));
                let addr = server.local_addr();
                // Kept for the process's life.
                std::mem::forget(server);
                addr
            }
            "plain" => {
                let service: StreamableHttpService<Plain, LocalSessionManager> =
                    StreamableHttpService::new(
                        || Ok(Plain::new()),
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
                let listener = listener.tap_io(|tcp| {
                    let _ = tcp.set_nodelay(true);
                });
                tokio::spawn(async move { axum::serve(listener, router).await });
                addr
            }
            other => panic!("--serve {other}: ours or plain"),
        };
        println!("ADDR {addr}");
        // Until the generator closes stdin (or dies).
        tokio::task::spawn_blocking(|| {
            let _ = std::io::stdin().read_to_end(&mut Vec::new());
        })
        .await
        .unwrap_or_else(|e| panic!("stdin: {e}"));
    });
}

/// A server process of this binary, and its address.
struct Server {
    child: Child,
    addr: String,
}

impl Server {
    fn start(side: &str) -> Self {
        let exe = std::env::current_exe().unwrap_or_else(|e| panic!("exe: {e}"));
        let mut command = if has_taskset() {
            let mut command = Command::new("taskset");
            command.args(["-c", "0"]).arg(exe);
            command
        } else {
            Command::new(exe)
        };
        let mut child = command
            .args(["--serve", side])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("spawn: {e}"));
        let stdout = child.stdout.take().unwrap_or_else(|| panic!("stdout"));
        let mut line = String::new();
        BufReader::new(stdout)
            .read_line(&mut line)
            .unwrap_or_else(|e| panic!("read: {e}"));
        let addr = line
            .trim()
            .strip_prefix("ADDR ")
            .unwrap_or_else(|| panic!("the server said {line:?}"))
            .to_owned();
        Server { child, addr }
    }

    /// Peak resident set size so far, in KiB (`VmHWM` of /proc/PID/status).
    fn peak_rss_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .unwrap_or_default();
        status
            .lines()
            .find_map(|line| line.strip_prefix("VmHWM:"))
            .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or(0)
    }

    fn stop(mut self) {
        drop(self.child.stdin.take());
        let _ = self.child.wait();
    }
}

fn has_taskset() -> bool {
    Command::new("taskset")
        .arg("-V")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Revision {
    Sessions,
    Stateless,
}

impl Revision {
    fn name(self) -> &'static str {
        match self {
            Revision::Sessions => "2025-11-25",
            Revision::Stateless => "2026-07-28",
        }
    }
}

/// One client: one kept-alive HTTP/1.1 connection, and its session in 2025-11-25.
struct Client {
    sender: SendRequest<Body>,
    host: String,
    revision: Revision,
    session: Option<String>,
    tool: &'static str,
    next_id: u64,
}

impl Client {
    async fn connect(addr: &str, revision: Revision, tool: &'static str) -> Self {
        let stream = tokio::net::TcpStream::connect(addr)
            .await
            .unwrap_or_else(|e| panic!("connect: {e}"));
        let _ = stream.set_nodelay(true);
        let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .unwrap_or_else(|e| panic!("handshake: {e}"));
        tokio::spawn(connection);
        let mut client = Client {
            sender,
            host: addr.to_owned(),
            revision,
            session: None,
            tool,
            next_id: 1,
        };
        if revision == Revision::Sessions {
            let initialize = json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"load","version":"0"}}});
            let (session, _) = client
                .post(initialize.to_string())
                .await
                .unwrap_or_else(|e| panic!("initialize: {e}"));
            client.session = Some(session.unwrap_or_else(|| panic!("no session id")));
            let initialized = json!({"jsonrpc":"2.0","method":"notifications/initialized"});
            client
                .post(initialized.to_string())
                .await
                .unwrap_or_else(|e| panic!("initialized: {e}"));
        }
        client
    }

    /// POSTs `body`; the session id the answer names and the whole answer.
    async fn post(&mut self, body: String) -> Result<(Option<String>, axum::body::Bytes), String> {
        let mut request = http::Request::post("/mcp")
            .header("host", &self.host)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", self.revision.name());
        if let Some(session) = &self.session {
            request = request.header("mcp-session-id", session);
        }
        if self.revision == Revision::Stateless {
            request = request
                .header("mcp-method", "tools/call")
                .header("mcp-name", self.tool);
        }
        let request = request.body(Body::from(body)).map_err(|e| e.to_string())?;
        self.sender.ready().await.map_err(|e| e.to_string())?;
        let response = self
            .sender
            .send_request(request)
            .await
            .map_err(|e| e.to_string())?;
        if !response.status().is_success() {
            return Err(format!("HTTP {}", response.status()));
        }
        let session = response
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let body = axum::body::to_bytes(Body::new(response.into_body()), 1 << 20)
            .await
            .map_err(|e| e.to_string())?;
        Ok((session, body))
    }

    /// One `tools/call`; whether it succeeded.
    async fn call(&mut self) -> bool {
        let id = self.next_id;
        self.next_id += 1;
        let meta = match self.revision {
            Revision::Sessions => json!({}),
            Revision::Stateless => json!({
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/clientInfo": {"name": "load", "version": "0"},
            }),
        };
        let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
            "name": self.tool, "arguments": {"text": "hello, world"}, "_meta": meta,
        }});
        match self.post(body.to_string()).await {
            // A result, not an error, and not a failed call's envelope.
            Ok((_, answer)) => {
                let answer = String::from_utf8_lossy(&answer);
                answer.contains("\"result\"") && !answer.contains("\"isError\":true")
            }
            Err(_) => false,
        }
    }
}

/// What one window measured.
struct Window {
    calls_per_s: f64,
    p50: Duration,
    failed: u64,
}

/// Every client calling back to back for `length`.
async fn window(clients: Vec<Client>, length: Duration) -> (Vec<Client>, Window) {
    let start = Instant::now();
    let deadline = start + length;
    let tasks: Vec<_> = clients
        .into_iter()
        .map(|mut client| {
            tokio::spawn(async move {
                let mut latencies = Vec::new();
                let mut failed = 0;
                while Instant::now() < deadline {
                    let call = Instant::now();
                    if client.call().await {
                        latencies.push(call.elapsed());
                    } else {
                        failed += 1;
                    }
                }
                (client, latencies, failed)
            })
        })
        .collect();
    let mut clients = Vec::new();
    let mut latencies = Vec::new();
    let mut failed = 0;
    for task in tasks {
        let (client, mut l, f) = task.await.unwrap_or_else(|e| panic!("client: {e}"));
        clients.push(client);
        latencies.append(&mut l);
        failed += f;
    }
    let elapsed = start.elapsed().as_secs_f64();
    latencies.sort();
    let p50 = latencies
        .get(latencies.len() / 2)
        .copied()
        .unwrap_or_default();
    let window = Window {
        calls_per_s: latencies.len() as f64 / elapsed,
        p50,
        failed,
    };
    (clients, window)
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(f64::NAN)
}

/// One row: fresh servers, `clients` clients each, warm-up, alternating windows.
async fn row(
    clients: usize,
    revision: Revision,
    tool: &'static str,
    windows: usize,
    window_length: Duration,
    warmup: Duration,
) {
    let servers = [Server::start("ours"), Server::start("plain")];
    let mut sides = Vec::new();
    for server in &servers {
        let mut connected = Vec::with_capacity(clients);
        for _ in 0..clients {
            connected.push(Client::connect(&server.addr, revision, tool).await);
        }
        sides.push(Some(connected));
    }
    for side in &mut sides {
        let connected = side.take().unwrap_or_default();
        let (connected, _) = window(connected, warmup).await;
        *side = Some(connected);
    }
    let mut rates: [Vec<f64>; 2] = Default::default();
    let mut p50s: [Vec<f64>; 2] = Default::default();
    let mut failed = [0u64; 2];
    let mut ratios = Vec::new();
    for w in 0..windows {
        let mut round = [0.0; 2];
        for turn in 0..2 {
            let i = (w + turn) % 2;
            let connected = sides[i].take().unwrap_or_default();
            let (connected, measured) = window(connected, window_length).await;
            sides[i] = Some(connected);
            round[i] = measured.calls_per_s;
            rates[i].push(measured.calls_per_s);
            p50s[i].push(measured.p50.as_secs_f64() * 1e6);
            failed[i] += measured.failed;
        }
        ratios.push(round[0] / round[1]);
    }
    let rss = servers.each_ref().map(|s| s.peak_rss_kib() as f64 / 1024.0);
    drop(sides);
    for server in servers {
        server.stop();
    }
    let [ours, plain] = rates.map(|mut v| median(&mut v));
    let [ours_p50, plain_p50] = p50s.map(|mut v| median(&mut v));
    let ratio = median(&mut ratios);
    let io = if tool == "echo" { "no I/O" } else { "1 ms I/O" };
    println!(
        "{io:<8} {:<10} {clients:>3} clients: toolwright {ours:>7.0}/s p50 {ours_p50:>7.0} us, \
         rmcp {plain:>7.0}/s p50 {plain_p50:>7.0} us, toolwright / rmcp {ratio:.2}x; \
         peak RSS {:.1} / {:.1} MiB ({:+.1}); failed {} / {}",
        revision.name(),
        rss[0],
        rss[1],
        rss[0] - rss[1],
        failed[0],
        failed[1],
    );
}

fn main() {
    let raw: Vec<String> = std::env::args().skip(1).collect();
    if let Some(at) = raw.iter().position(|a| a == "--serve") {
        serve(raw.get(at + 1).map_or("", String::as_str));
        return;
    }
    let args: Vec<u64> = raw.iter().filter_map(|a| a.parse().ok()).collect();
    let windows = args.first().copied().unwrap_or(5).max(1) as usize;
    let window_length = Duration::from_millis(args.get(1).copied().unwrap_or(1000));
    let warmup = Duration::from_millis(args.get(2).copied().unwrap_or(1000));
    if has_taskset() {
        let _ = Command::new("taskset")
            .args(["-cp", "1", &std::process::id().to_string()])
            .stdout(Stdio::null())
            .status();
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("runtime: {e}"));
    println!(
        "kept-alive HTTP/1.1, {windows} windows of {} ms per server and row after {} ms of \
         warm-up, alternating (medians; the ratio is the median of the pairs' ratios)",
        window_length.as_millis(),
        warmup.as_millis()
    );
    runtime.block_on(async {
        for tool in ["wait_echo", "echo"] {
            for revision in [Revision::Sessions, Revision::Stateless] {
                for clients in [1, 8, 50] {
                    row(clients, revision, tool, windows, window_length, warmup).await;
                }
            }
        }
    });
}
