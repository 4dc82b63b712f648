//! rmcp's own client and raw HTTP against the streamable HTTP server on 127.0.0.1, port 0.

use std::time::Duration;

use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::ServiceExt;
use serde_json::{json, Value};
use toolwright_mcp::{Grant, HttpServer, McpServer, ProtectedResource};

use crate::common::{self, call, envelope, registry, Client, Counters, Elicitor};

async fn start(counters: &Counters) -> HttpServer {
    McpServer::new(registry(counters.clone()))
        .authorize(|token: &str| match token {
            "support-token" => Some(Grant::new("agent:support").with_scopes(["refunds:write"])),
            "guest-token" => Some(Grant::new("agent:guest")),
            _ => None,
        })
        .protected_resource(
            ProtectedResource::new("http://127.0.0.1/mcp")
                .authorization_server("https://auth.example.com"),
        )
        .sse_keep_alive(Duration::from_millis(100))
        .bind_http("127.0.0.1:0")
        .await
        .expect("binds loopback")
}

async fn connect(server: &HttpServer, token: &str) -> Client {
    let config = StreamableHttpClientTransportConfig::with_uri(server.url()).auth_header(token);
    Elicitor::without_elicitation()
        .serve(StreamableHttpClientTransport::from_config(config))
        .await
        .expect("the client connects")
}

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}"#;

fn post(server: &HttpServer) -> reqwest::RequestBuilder {
    reqwest::Client::new()
        .post(server.url())
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(INITIALIZE)
}

#[tokio::test]
async fn a_client_lists_and_calls_tools_over_http() {
    let server = start(&Counters::default()).await;
    let client = connect(&server, "support-token").await;
    let tools = client.list_all_tools().await.expect("tools/list");
    assert_eq!(tools.len(), 6);
    let result = client
        .call_tool(call("get_order", json!({"order_id": "A9999"})))
        .await
        .expect("tools/call");
    assert_eq!(result.is_error, Some(true));
    assert_eq!(envelope(&result)["error_type"], "not_found");
    common::ping(&client).await.expect("ping");
}

#[tokio::test]
async fn a_token_without_the_scope_does_not_see_the_tool() {
    let server = start(&Counters::default()).await;
    let guest = connect(&server, "guest-token").await;
    let tools = guest.list_all_tools().await.expect("tools/list");
    assert!(tools.iter().all(|t| t.name != "refund_order"));
    assert_eq!(tools.len(), 5);
}

#[tokio::test]
async fn two_http_clients_have_separate_sessions() {
    let counters = Counters::default();
    let server = start(&counters).await;
    let first = connect(&server, "support-token").await;
    let second = connect(&server, "support-token").await;
    first
        .call_tool(call("search_orders", json!({"query": "ada"})))
        .await
        .expect("search");
    let theirs = second
        .call_tool(call(
            "refund_order",
            json!({"order_id": "A1001", "amount": 5.0}),
        ))
        .await
        .expect("tools/call");
    assert_eq!(envelope(&theirs)["error_type"], "ungrounded_identifier");
}

#[tokio::test]
async fn a_missing_or_rejected_token_is_401_with_the_metadata_challenge() {
    let server = start(&Counters::default()).await;
    let missing = post(&server).send().await.expect("answered");
    assert_eq!(missing.status(), 401);
    let challenge = missing
        .headers()
        .get("www-authenticate")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    assert!(
        challenge.contains(
            "resource_metadata=\"http://127.0.0.1/.well-known/oauth-protected-resource/mcp\""
        ),
        "{challenge}"
    );
    let rejected = post(&server)
        .bearer_auth("stolen")
        .send()
        .await
        .expect("answered");
    assert_eq!(rejected.status(), 401);
    let metadata: Value = reqwest::get(format!(
        "http://{}/.well-known/oauth-protected-resource/mcp",
        server.local_addr()
    ))
    .await
    .expect("metadata")
    .json()
    .await
    .expect("json");
    assert_eq!(metadata["resource"], "http://127.0.0.1/mcp");
    assert_eq!(
        metadata["authorization_servers"][0],
        "https://auth.example.com"
    );
}

#[tokio::test]
async fn a_foreign_origin_is_403_and_a_loopback_one_passes() {
    let server = start(&Counters::default()).await;
    let foreign = post(&server)
        .bearer_auth("support-token")
        .header("origin", "http://evil.example")
        .send()
        .await
        .expect("answered");
    assert_eq!(foreign.status(), 403);
    let local = post(&server)
        .bearer_auth("support-token")
        .header("origin", "http://localhost:6274")
        .send()
        .await
        .expect("answered");
    assert_eq!(local.status(), 200);
}

#[tokio::test]
async fn binding_beyond_loopback_needs_allow_remote() {
    let refused = McpServer::new(registry(Counters::default()))
        .bind_http("0.0.0.0:0")
        .await;
    assert!(matches!(
        refused,
        Err(toolwright_mcp::ServeError::NotLoopback(_))
    ));
}

#[tokio::test]
async fn a_dropped_http_connection_cancels_the_call() {
    let counters = Counters::default();
    let server = start(&counters).await;
    let session = session_id(&server).await;
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .build()
        .expect("client");
    let send = |body: &'static str| in_session(&http, &server, &session, body).send();
    drop(send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).await);
    let call = send(r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"slow_report","arguments":{"steps":200}}}"#)
        .await
        .expect("tools/call");
    assert!(call.status().is_success());
    while Counters::get(&counters.started) == 0 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    drop(call);
    drop(http);
    tokio::time::sleep(Duration::from_millis(600)).await;
    let steps = Counters::get(&counters.steps);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        Counters::get(&counters.steps),
        steps,
        "the tool kept running"
    );
    assert_eq!(Counters::get(&counters.finished), 0);
}

#[tokio::test]
async fn garbage_over_http_is_answered_and_the_server_stays_up() {
    let server = start(&Counters::default()).await;
    for body in [
        r#"{"jsonrpc":"2.0","id":1,"method":"initia"#.to_owned(),
        r#"{"jsonrpc":"2.0","id":"x","method":42}"#.to_owned(),
        format!(
            r#"{{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"{}"}}}}}}"#,
            "x".repeat(10 << 20)
        ),
    ] {
        let answer = reqwest::Client::new()
            .post(server.url())
            .bearer_auth("support-token")
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(body)
            .send()
            .await
            .expect("answered");
        assert!(answer.status().is_client_error(), "{}", answer.status());
    }
    let client = connect(&server, "support-token").await;
    common::ping(&client).await.expect("still serving");
}

/// A raw JSON-RPC POST in an existing MCP session.
fn in_session(
    http: &reqwest::Client,
    server: &HttpServer,
    session: &str,
    body: &'static str,
) -> reqwest::RequestBuilder {
    http.post(server.url())
        .bearer_auth("support-token")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-session-id", session)
        .header("mcp-protocol-version", "2025-11-25")
        .body(body)
}

/// A new MCP session's id, from a raw `initialize`.
async fn session_id(server: &HttpServer) -> String {
    let init = post(server)
        .bearer_auth("support-token")
        .send()
        .await
        .expect("initialize");
    init.headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .expect("a session id")
        .to_owned()
}

/// The raw SSE body of one `tools/call` in a fresh session.
async fn raw_call(server: &HttpServer, body: &'static str) -> String {
    let session = session_id(server).await;
    let http = reqwest::Client::new();
    let send = |body: &'static str| in_session(&http, server, &session, body).send();
    drop(send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).await);
    send(body)
        .await
        .expect("tools/call")
        .text()
        .await
        .expect("the response stream")
}

#[tokio::test]
async fn progress_goes_out_only_for_a_call_with_a_progress_token_and_before_its_result() {
    let server = start(&Counters::default()).await;
    let with = raw_call(
        &server,
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"slow_report","arguments":{"steps":4},"_meta":{"progressToken":"report-1"}}}"#,
    )
    .await;
    let first = with.find("notifications/progress").expect(&with);
    let result = with.find(r#""id":2"#).expect(&with);
    assert!(first < result, "progress before the result: {with}");
    assert!(with.contains(r#""progressToken":"report-1""#), "{with}");
    assert!(
        with.contains(r#""message":"step 4""#),
        "the last report: {with}"
    );

    let without = raw_call(
        &server,
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"slow_report","arguments":{"steps":4}}}"#,
    )
    .await;
    assert!(without.contains(r#""id":2"#), "{without}");
    assert!(!without.contains("notifications/progress"), "{without}");
}

/// One kept-alive HTTP/1.1 connection to `server`, as an MCP client holds one: every request
/// goes over this one socket.
struct KeptAlive {
    sender: hyper::client::conn::http1::SendRequest<axum::body::Body>,
    host: String,
}

impl KeptAlive {
    async fn open(server: &HttpServer) -> Self {
        let stream = tokio::net::TcpStream::connect(server.local_addr())
            .await
            .expect("connects");
        // As HTTP clients set it (reqwest, hyper-util's pool): the client's own writes go out
        // at once, so any wait is the server's.
        stream.set_nodelay(true).expect("TCP_NODELAY");
        let (sender, connection) =
            hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
                .await
                .expect("the HTTP/1.1 handshake");
        tokio::spawn(connection);
        KeptAlive {
            sender,
            host: server.local_addr().to_string(),
        }
    }

    /// POSTs `body` with `headers` and reads the whole response: its session id and body.
    async fn post(&mut self, headers: &[(&str, &str)], body: Value) -> (Option<String>, String) {
        let mut request = http::Request::post("/mcp")
            .header("host", &self.host)
            .header("authorization", "Bearer support-token")
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream");
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let request = request
            .body(axum::body::Body::from(body.to_string()))
            .expect("a request");
        self.sender
            .ready()
            .await
            .expect("the connection is still open");
        let response = self.sender.send_request(request).await.expect("answered");
        let session = response
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let body = axum::body::to_bytes(axum::body::Body::new(response.into_body()), 1 << 20)
            .await
            .expect("the whole body");
        (session, String::from_utf8_lossy(&body).into_owned())
    }
}

/// The fastest of `calls` sequential `tools/call`s of `echo`, each `request(i)`.
async fn fastest_call(
    connection: &mut KeptAlive,
    headers: &[(&str, &str)],
    calls: u64,
    request: impl Fn(u64) -> Value,
) -> Duration {
    let mut times = Vec::new();
    for i in 0..calls {
        let started = std::time::Instant::now();
        let (_, body) = connection.post(headers, request(i)).await;
        times.push(started.elapsed());
        assert!(body.contains(r#""status":"success""#), "{body}");
    }
    times.into_iter().min().expect("at least one call")
}

fn echo_call(id: u64, meta: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
        "name": "echo", "arguments": {"text": "hello"}, "_meta": meta,
    }})
}

/// Sequential calls on one kept-alive connection, in a 2025-11-25 session and as 2026-07-28
/// requests, answer in well under the 40 ms a delayed acknowledgement costs (with Nagle's
/// algorithm on the server's socket, every response's streamed body waited for it, the first
/// call's too). The fastest of the calls is checked: the stall is in every call, while a
/// loaded machine slows some calls and not all.
#[tokio::test]
async fn sequential_calls_on_one_kept_alive_connection_do_not_wait_for_delayed_acks() {
    const CALLS: u64 = 15;
    let bound = Duration::from_millis(30);
    let server = start(&Counters::default()).await;
    let mut connection = KeptAlive::open(&server).await;

    let initialize = json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}});
    let (session, _) = connection
        .post(&[("mcp-protocol-version", "2025-11-25")], initialize)
        .await;
    let session = session.expect("a session id");
    let in_session = [
        ("mcp-protocol-version", "2025-11-25"),
        ("mcp-session-id", session.as_str()),
    ];
    let initialized = json!({"jsonrpc":"2.0","method":"notifications/initialized"});
    connection.post(&in_session, initialized).await;
    let sessions = fastest_call(&mut connection, &in_session, CALLS, |i| {
        echo_call(i + 1, json!({}))
    })
    .await;

    let stateless = [
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/call"),
        ("mcp-name", "echo"),
    ];
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"},
    });
    let requests = fastest_call(&mut connection, &stateless, CALLS, |i| {
        echo_call(i + 1, meta.clone())
    })
    .await;

    assert!(
        sessions < bound && requests < bound,
        "the fastest call took {sessions:?} in a 2025-11-25 session and {requests:?} as a \
         2026-07-28 request, over one kept-alive connection (at most {bound:?} expected)"
    );
}
