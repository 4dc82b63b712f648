//! An MCP session belongs to the principal who opened it: two real principals, Alice and Bob,
//! each with valid tokens of their own, against the streamable HTTP server on 127.0.0.1.
//! Every message Bob sends on Alice's session (a request, a notification, an answer to her
//! elicitation, a DELETE) is refused as if the session did not exist, and nothing reaches her
//! session.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use toolwright::prelude::*;
use toolwright_mcp::{Grant, HttpServer, McpServer};

use crate::common::{self, Counters};

/// Effects the tools of this file count.
#[derive(Default, Clone)]
struct Effects {
    payments: Arc<AtomicU64>,
    purges: Arc<AtomicU64>,
}

/// Pay an amount (not idempotent: each run is one more payment).
#[tool(timeout_ms = 2000, idempotent = false)]
async fn pay(key: IdempotencyKey, effects: State<Effects>, amount: f64) -> Result<f64, ToolError> {
    let _ = key;
    effects.payments.fetch_add(1, Ordering::SeqCst);
    Ok(amount)
}

/// Delete every order (administrators only).
#[tool(timeout_ms = 2000, idempotent = false, scopes = ["admin"])]
async fn admin_purge(effects: State<Effects>) -> Result<String, ToolError> {
    effects.purges.fetch_add(1, Ordering::SeqCst);
    Ok("purged".into())
}

struct Shop {
    counters: Counters,
    effects: Effects,
    /// While set, `authorize` rejects the token `alice-revocable`.
    revoked: Arc<AtomicBool>,
}

impl Shop {
    fn new() -> Self {
        Shop {
            counters: Counters::default(),
            effects: Effects::default(),
            revoked: Arc::default(),
        }
    }

    fn server(&self) -> McpServer {
        let registry = common::builder(self.counters.clone())
            .tool(Pay)
            .tool(AdminPurge)
            .state(self.effects.clone())
            .build()
            .expect("the registry builds");
        let revoked = Arc::clone(&self.revoked);
        McpServer::new(registry)
            .sse_keep_alive(Duration::from_millis(100))
            .authorize(move |token: &str| match token {
                "alice" => Some(Grant::new("alice").with_scopes(["refunds:write", "admin"])),
                "alice-narrow" => Some(Grant::new("alice")),
                "alice-revocable" if !revoked.load(Ordering::SeqCst) => {
                    Some(Grant::new("alice").with_scopes(["admin"]))
                }
                "bob" => Some(Grant::new("bob").with_scopes(["refunds:write", "admin"])),
                _ => None,
            })
    }

    async fn start(&self) -> HttpServer {
        bind(self.server()).await
    }
}

async fn bind(server: McpServer) -> HttpServer {
    server
        .bind_http("127.0.0.1:0")
        .await
        .expect("binds loopback")
}

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"raw","version":"0"}}}"#;
const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

/// Raw HTTP to one server: every request names its token and, after `initialize`, a session.
#[derive(Clone)]
struct Raw {
    http: reqwest::Client,
    url: String,
}

impl Raw {
    fn new(server: &HttpServer) -> Self {
        Raw {
            http: reqwest::Client::new(),
            url: server.url(),
        }
    }

    fn post(
        &self,
        token: &str,
        session: Option<&str>,
        body: impl Into<String>,
    ) -> reqwest::RequestBuilder {
        let mut request = self
            .http
            .post(&self.url)
            .bearer_auth(token)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-11-25")
            .body(body.into());
        if let Some(session) = session {
            request = request.header("mcp-session-id", session);
        }
        request
    }

    /// `initialize` then `notifications/initialized`: the new session's id.
    async fn open(&self, token: &str) -> String {
        let init = self
            .post(token, None, INITIALIZE)
            .send()
            .await
            .expect("initialize");
        assert_eq!(init.status(), 200, "initialize: {}", init.status());
        let session = init
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .expect("a session id")
            .to_owned();
        drop(init.text().await);
        let initialized = self
            .post(token, Some(&session), INITIALIZED)
            .send()
            .await
            .expect("initialized");
        assert_eq!(initialized.status(), 202);
        session
    }

    /// One request in a session, its whole answer (the SSE body) as text.
    async fn call(&self, token: &str, session: &str, body: Value) -> (u16, String) {
        let answer = self
            .post(token, Some(session), body.to_string())
            .send()
            .await
            .expect("answered");
        let status = answer.status().as_u16();
        (status, answer.text().await.unwrap_or_default())
    }

    async fn status(&self, token: &str, session: &str, body: Value) -> u16 {
        self.call(token, session, body).await.0
    }

    async fn delete(&self, token: &str, session: &str) -> u16 {
        self.http
            .delete(&self.url)
            .bearer_auth(token)
            .header("mcp-session-id", session)
            .header("mcp-protocol-version", "2025-11-25")
            .send()
            .await
            .expect("answered")
            .status()
            .as_u16()
    }
}

fn tools_call(id: Value, name: &str, arguments: Value) -> Value {
    json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{"name":name,"arguments":arguments}})
}

fn tools_list(id: u64) -> Value {
    json!({"jsonrpc":"2.0","id":id,"method":"tools/list"})
}

/// The JSON-RPC messages of an SSE body.
fn messages(sse: &str) -> Vec<Value> {
    sse.lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .filter_map(|data| serde_json::from_str(data.trim()).ok())
        .collect()
}

/// The answer (result or error) to request `id` in an SSE or JSON body.
fn answer(body: &str, id: &Value) -> Value {
    let mut all = messages(body);
    if let Ok(single) = serde_json::from_str::<Value>(body) {
        all.push(single);
    }
    all.into_iter()
        .find(|m| &m["id"] == id && (m.get("result").is_some() || m.get("error").is_some()))
        .unwrap_or_else(|| panic!("no answer to {id} in {body}"))
}

/// Alice's refund waiting on her approval: the open SSE response of the call (dropping it
/// cancels the call) and the `elicitation/create` request it carries.
async fn waiting_refund(raw: &Raw, session: &str) -> (reqwest::Response, Value) {
    let (status, _) = raw
        .call(
            "alice",
            session,
            tools_call(json!(1), "search_orders", json!({"query": "ada"})),
        )
        .await;
    assert_eq!(status, 200);
    let mut call = raw
        .post(
            "alice",
            Some(session),
            tools_call(
                json!(2),
                "refund_order",
                json!({"order_id": "A1001", "amount": 5.0}),
            )
            .to_string(),
        )
        .send()
        .await
        .expect("tools/call");
    assert_eq!(call.status(), 200);
    let mut seen = String::new();
    loop {
        let chunk = tokio::time::timeout(Duration::from_secs(10), call.chunk())
            .await
            .expect("the elicitation arrives")
            .expect("the stream")
            .expect("the stream stays open");
        seen.push_str(&String::from_utf8_lossy(&chunk));
        if let Some(ask) = messages(&seen)
            .into_iter()
            .find(|m| m["method"] == "elicitation/create")
        {
            return (call, ask);
        }
    }
}

fn accept(id: &Value) -> Value {
    json!({"jsonrpc":"2.0","id":id,"result":{"action":"accept","content":{}}})
}

// ---- Every message on a session is its owner's --------------------------------------------

#[tokio::test]
async fn bob_cannot_answer_alices_elicitation_even_with_its_id() {
    let shop = Shop::new();
    let server = shop.start().await;
    let raw = Raw::new(&server);
    let alice = raw.open("alice").await;
    let (mut call, ask) = waiting_refund(&raw, &alice).await;
    let (bob, _) = raw.call("bob", &alice, accept(&ask["id"])).await;
    assert_eq!(bob, 404, "Bob's answer on Alice's session");
    for guess in [json!(0), json!(1), json!("0")] {
        let (status, _) = raw.call("bob", &alice, accept(&guess)).await;
        assert_eq!(status, 404);
    }
    // Alice's own answer still counts, once.
    let (mine, _) = raw.call("alice", &alice, accept(&ask["id"])).await;
    assert_eq!(mine, 202);
    let mut rest = String::new();
    while let Ok(Some(chunk)) = tokio::time::timeout(Duration::from_secs(10), call.chunk())
        .await
        .expect("the result arrives")
    {
        rest.push_str(&String::from_utf8_lossy(&chunk));
        if rest.contains(r#""id":2"#) {
            break;
        }
    }
    assert_eq!(Counters::get(&shop.counters.refunds), 1, "{rest}");
}

#[tokio::test]
async fn elicitation_ids_are_unguessable_and_answered_once() {
    let shop = Shop::new();
    let server = shop.start().await;
    let raw = Raw::new(&server);
    let alice = raw.open("alice").await;
    let (call, ask) = waiting_refund(&raw, &alice).await;
    let id = ask["id"].clone();
    let text = id.as_str().unwrap_or_default();
    assert!(
        text.len() >= 32,
        "a server-to-client request id of 128 random bits: {id}"
    );
    // A guessed id (what a sequential counter would have used) is not delivered: the call
    // still waits, and nothing ran.
    for guess in [json!(0), json!(1)] {
        raw.call("alice", &alice, accept(&guess)).await;
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(Counters::get(&shop.counters.refunds), 0);
    drop(call);
}

#[tokio::test]
async fn bob_cannot_cancel_alices_call() {
    let shop = Shop::new();
    let server = shop.start().await;
    let raw = Raw::new(&server);
    let alice = raw.open("alice").await;
    let running = {
        let raw = raw.clone();
        let alice = alice.clone();
        tokio::spawn(async move {
            raw.call(
                "alice",
                &alice,
                tools_call(json!(10), "slow_report", json!({"steps": 10})),
            )
            .await
        })
    };
    while Counters::get(&shop.counters.started) == 0 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let cancel =
        json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":10}});
    assert_eq!(raw.status("bob", &alice, cancel).await, 404);
    let (status, body) = running.await.expect("the call task");
    assert_eq!(status, 200);
    assert_eq!(
        answer(&body, &json!(10))["result"]["isError"],
        false,
        "{body}"
    );
    assert_eq!(Counters::get(&shop.counters.finished), 1);
}

#[tokio::test]
async fn bob_cannot_delete_alices_session() {
    let shop = Shop::new();
    let server = shop.start().await;
    let raw = Raw::new(&server);
    let alice = raw.open("alice").await;
    assert_eq!(raw.delete("bob", &alice).await, 404);
    assert_eq!(
        raw.status("alice", &alice, tools_list(3)).await,
        200,
        "her session lives"
    );
    assert_eq!(raw.delete("alice", &alice).await, 202, "she may end it");
    assert_eq!(raw.status("alice", &alice, tools_list(4)).await, 404);
}

#[tokio::test]
async fn bob_cannot_send_requests_or_notifications_on_alices_session() {
    let shop = Shop::new();
    let server = shop.start().await;
    let raw = Raw::new(&server);
    let alice = raw.open("alice").await;
    let bobs = raw.open("bob").await;
    let pay = tools_call(json!(5), "pay", json!({"amount": 3.0}));
    assert_eq!(raw.status("bob", &alice, pay.clone()).await, 404);
    assert_eq!(raw.status("bob", &alice, tools_list(6)).await, 404);
    let progress = json!({"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":1}});
    assert_eq!(raw.status("bob", &alice, progress).await, 404);
    assert_eq!(
        raw.status(
            "bob",
            &alice,
            json!({"jsonrpc":"2.0","method":"notifications/initialized"})
        )
        .await,
        404
    );
    // An unknown session and a session of another principal look the same to a prober.
    let (other, other_body) = raw.call("bob", &alice, tools_list(7)).await;
    let (unknown, unknown_body) = raw
        .call("bob", "00000000-0000-4000-8000-000000000000", tools_list(7))
        .await;
    assert_eq!((other, other_body), (unknown, unknown_body));
    assert_eq!(Counters::get(&shop.effects.payments), 0);
    // Bob's own session works.
    assert_eq!(raw.status("bob", &bobs, pay).await, 200);
    assert_eq!(Counters::get(&shop.effects.payments), 1);
}

#[tokio::test]
async fn bob_cannot_open_alices_standalone_stream() {
    let shop = Shop::new();
    let server = shop.start().await;
    let raw = Raw::new(&server);
    let alice = raw.open("alice").await;
    let get = raw
        .http
        .get(&raw.url)
        .bearer_auth("bob")
        .header("accept", "text/event-stream")
        .header("mcp-session-id", &alice)
        .header("mcp-protocol-version", "2025-11-25")
        .send()
        .await
        .expect("answered");
    assert_eq!(get.status(), 404);
}

// ---- Scopes come from each request's credential --------------------------------------------

fn listed(body: &str) -> Vec<String> {
    answer(body, &json!(8))["result"]["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .filter_map(|t| t["name"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn a_narrower_token_on_an_open_session_gets_the_narrower_tools() {
    let shop = Shop::new();
    let server = shop.start().await;
    let raw = Raw::new(&server);
    let session = raw.open("alice").await;
    let (_, wide) = raw.call("alice", &session, tools_list(8)).await;
    assert!(listed(&wide).contains(&"admin_purge".to_owned()), "{wide}");
    let (_, narrow) = raw.call("alice-narrow", &session, tools_list(8)).await;
    assert!(
        !listed(&narrow).contains(&"admin_purge".to_owned()),
        "{narrow}"
    );
    let (status, purge) = raw
        .call(
            "alice-narrow",
            &session,
            tools_call(json!(9), "admin_purge", json!({})),
        )
        .await;
    assert_eq!(status, 200);
    // Not listed for the narrow token, and refused when called anyway: `unauthorized`, as in
    // process, naming the scope it lacks.
    let refused = &answer(&purge, &json!(9))["result"];
    assert_eq!(refused["isError"], true, "{purge}");
    assert_eq!(
        refused["structuredContent"]["error_type"], "unauthorized",
        "{purge}"
    );
    assert!(
        refused["structuredContent"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("`admin`")),
        "{purge}"
    );
    assert_eq!(
        Counters::get(&shop.effects.purges),
        0,
        "the narrow token purged"
    );
    // The wider token on the same session may again.
    let (_, again) = raw
        .call(
            "alice",
            &session,
            tools_call(json!(11), "admin_purge", json!({})),
        )
        .await;
    assert_eq!(
        answer(&again, &json!(11))["result"]["isError"],
        false,
        "{again}"
    );
    assert_eq!(Counters::get(&shop.effects.purges), 1);
}

#[tokio::test]
async fn a_token_authorize_now_rejects_is_401_on_an_open_session() {
    let shop = Shop::new();
    let server = shop.start().await;
    let raw = Raw::new(&server);
    let session = raw.open("alice-revocable").await;
    assert_eq!(
        raw.status("alice-revocable", &session, tools_list(8)).await,
        200
    );
    shop.revoked.store(true, Ordering::SeqCst);
    let refused = raw
        .post(
            "alice-revocable",
            Some(&session),
            tools_call(json!(12), "admin_purge", json!({})).to_string(),
        )
        .send()
        .await
        .expect("answered");
    assert_eq!(refused.status(), 401);
    assert!(refused.headers().contains_key("www-authenticate"));
    assert_eq!(Counters::get(&shop.effects.purges), 0);
}

// ---- JSON-RPC ids keep their type ----------------------------------------------------------

#[tokio::test]
async fn ids_41_and_string_41_are_two_calls_and_a_retry_replays() {
    let shop = Shop::new();
    let server = shop.start().await;
    let raw = Raw::new(&server);
    let session = raw.open("alice").await;
    let (_, first) = raw
        .call(
            "alice",
            &session,
            tools_call(json!(41), "pay", json!({"amount": 5.0})),
        )
        .await;
    assert_eq!(
        answer(&first, &json!(41))["result"]["isError"],
        false,
        "{first}"
    );
    let (_, second) = raw
        .call(
            "alice",
            &session,
            tools_call(json!("41"), "pay", json!({"amount": 7.0})),
        )
        .await;
    assert_eq!(
        answer(&second, &json!("41"))["result"]["isError"],
        false,
        "{second}"
    );
    assert_eq!(
        Counters::get(&shop.effects.payments),
        2,
        "two ids, two payments"
    );
    // The same id and arguments again: replayed, not paid again.
    let (_, retry) = raw
        .call(
            "alice",
            &session,
            tools_call(json!(41), "pay", json!({"amount": 5.0})),
        )
        .await;
    assert_eq!(
        answer(&retry, &json!(41))["result"]["isError"],
        false,
        "{retry}"
    );
    assert_eq!(
        Counters::get(&shop.effects.payments),
        2,
        "the retry ran again"
    );
}

// ---- Arguments that are not an object ------------------------------------------------------

#[tokio::test]
async fn arguments_that_are_not_an_object_are_invalid_params_naming_arguments() {
    let shop = Shop::new();
    let server = shop.start().await;
    let raw = Raw::new(&server);
    let session = raw.open("alice").await;
    for (id, arguments, came) in [
        (21, json!(5), "a number"),
        (22, json!("x"), "a string"),
        (23, json!([1, 2]), "an array"),
    ] {
        let (_, body) = raw
            .call("alice", &session, tools_call(json!(id), "echo", arguments))
            .await;
        let error = &answer(&body, &json!(id))["error"];
        assert_eq!(error["code"], -32602, "{body}");
        let message = error["message"].as_str().unwrap_or_default();
        assert!(message.contains("`arguments`"), "{message}");
        assert!(message.contains("an object"), "{message}");
        assert!(message.contains(came), "{message}");
    }
}

// ---- Bounded sessions ----------------------------------------------------------------------

#[tokio::test]
async fn sessions_past_the_default_cap_are_503_with_retry_after() {
    let shop = Shop::new();
    let server = McpServer::new(common::registry(shop.counters.clone()))
        .bind_http("127.0.0.1:0")
        .await
        .expect("binds");
    let http = reqwest::Client::new();
    let init = || {
        http.post(server.url())
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(INITIALIZE)
            .send()
    };
    for n in 0..1000 {
        let opened = init().await.expect("initialize");
        assert_eq!(opened.status(), 200, "session {n}");
        drop(opened.text().await);
    }
    let refused = init().await.expect("answered");
    assert_eq!(refused.status(), 503);
    assert!(refused.headers().contains_key("retry-after"));
}

fn anonymous_initialize(http: &reqwest::Client, url: &str) -> reqwest::RequestBuilder {
    http.post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(INITIALIZE)
}

#[tokio::test]
async fn a_configured_session_cap_refuses_until_a_session_ends() {
    let shop = Shop::new();
    let server = bind(shop.server().max_sessions(3)).await;
    let raw = Raw::new(&server);
    let alice = raw.open("alice").await;
    raw.open("alice").await;
    raw.open("bob").await;
    let refused = raw
        .post("bob", None, INITIALIZE)
        .send()
        .await
        .expect("answered");
    assert_eq!(refused.status(), 503);
    assert!(refused.headers().contains_key("retry-after"));
    let message = refused.text().await.unwrap_or_default();
    assert!(message.contains("maximum of 3 MCP sessions"), "{message}");
    assert_eq!(raw.delete("alice", &alice).await, 202);
    raw.open("bob").await;
}

#[tokio::test]
async fn one_principal_cannot_take_every_session() {
    let shop = Shop::new();
    let server = bind(shop.server().max_sessions_per_principal(2)).await;
    let raw = Raw::new(&server);
    raw.open("alice").await;
    raw.open("alice-narrow").await;
    let refused = raw
        .post("alice", None, INITIALIZE)
        .send()
        .await
        .expect("answered");
    assert_eq!(refused.status(), 503);
    assert!(refused.headers().contains_key("retry-after"));
    let message = refused.text().await.unwrap_or_default();
    assert!(
        message.contains("'alice' holds its maximum of 2"),
        "{message}"
    );
    raw.open("bob").await;
}

#[tokio::test]
async fn an_idle_session_ends_and_a_running_call_keeps_its_session() {
    let shop = Shop::new();
    let server = bind(
        shop.server()
            .session_idle_timeout(Duration::from_millis(300)),
    )
    .await;
    let raw = Raw::new(&server);
    let busy = raw.open("alice").await;
    let idle = raw.open("alice").await;
    // 20 steps of 50 ms: longer than the idle timeout, with nothing else on the session.
    let (status, body) = raw
        .call(
            "alice",
            &busy,
            tools_call(json!(30), "slow_report", json!({"steps": 20})),
        )
        .await;
    assert_eq!(status, 200);
    assert_eq!(
        answer(&body, &json!(30))["result"]["isError"],
        false,
        "{body}"
    );
    let mut ended = false;
    for _ in 0..100 {
        if raw.status("bob", &idle, tools_list(31)).await == 404
            && raw.status("alice", &idle, tools_list(31)).await == 404
        {
            ended = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(ended, "the idle session still answers");
}

#[tokio::test]
async fn an_idle_session_gives_its_place_back() {
    let shop = Shop::new();
    let server = bind(
        shop.server()
            .max_sessions(1)
            .session_idle_timeout(Duration::from_millis(200)),
    )
    .await;
    let raw = Raw::new(&server);
    raw.open("alice").await;
    let mut opened = false;
    for _ in 0..100 {
        let init = raw
            .post("bob", None, INITIALIZE)
            .send()
            .await
            .expect("answered");
        if init.status() == 200 {
            opened = true;
            break;
        }
        assert_eq!(init.status(), 503);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(opened, "the idle session kept its place");
}

// ---- Bounded connections -------------------------------------------------------------------

mod tcp {
    use std::time::Duration;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpStream;

    pub async fn connect(server: &toolwright_mcp::HttpServer) -> TcpStream {
        TcpStream::connect(server.local_addr())
            .await
            .expect("connects")
    }

    /// Everything the server sends until it closes the connection (bounded, so a server that
    /// never closes fails the test instead of hanging it).
    pub async fn read_to_close(stream: &mut TcpStream) -> Result<String, &'static str> {
        let mut all = Vec::new();
        let mut buf = [0u8; 4096];
        loop {
            match tokio::time::timeout(Duration::from_secs(20), stream.read(&mut buf)).await {
                Err(_) => return Err("still open after 20 s"),
                Ok(Ok(0)) | Ok(Err(_)) => return Ok(String::from_utf8_lossy(&all).into_owned()),
                Ok(Ok(n)) => all.extend_from_slice(&buf[..n]),
            }
        }
    }

    pub async fn send(stream: &mut TcpStream, bytes: &str) {
        stream.write_all(bytes.as_bytes()).await.expect("writes");
    }
}

#[tokio::test]
async fn a_body_that_never_arrives_closes_the_connection() {
    let shop = Shop::new();
    let server = bind(shop.server().body_read_timeout(Duration::from_millis(300))).await;
    let mut stream = tcp::connect(&server).await;
    let port = server.local_addr().port();
    tcp::send(
        &mut stream,
        &format!(
            "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer alice\r\n\
             Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
             Content-Length: 100000\r\n\r\n{{"
        ),
    )
    .await;
    let answer = tcp::read_to_close(&mut stream).await.expect("closed");
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
}

#[tokio::test]
async fn headers_that_never_end_close_the_connection() {
    let shop = Shop::new();
    let server = bind(
        shop.server()
            .header_read_timeout(Duration::from_millis(300)),
    )
    .await;
    let mut stream = tcp::connect(&server).await;
    tcp::send(&mut stream, "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n").await;
    tcp::read_to_close(&mut stream).await.expect("closed");
}

#[tokio::test]
async fn a_connection_past_the_cap_is_503_with_retry_after() {
    let shop = Shop::new();
    let server = bind(shop.server().max_connections(2)).await;
    let first = tcp::connect(&server).await;
    let second = tcp::connect(&server).await;
    let raw = Raw::new(&server);
    // The listener takes connections in order: the two above hold both places.
    tokio::time::sleep(Duration::from_millis(100)).await;
    let refused = raw
        .post("alice", None, INITIALIZE)
        .send()
        .await
        .expect("answered");
    assert_eq!(refused.status(), 503);
    assert_eq!(
        refused
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok()),
        Some("1")
    );
    drop((first, second));
    let mut opened = false;
    for _ in 0..50 {
        if raw
            .post("alice", None, INITIALIZE)
            .send()
            .await
            .ok()
            .map(|r| r.status())
            == Some(reqwest::StatusCode::OK)
        {
            opened = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(opened, "a freed connection place is used again");
}

// ---- What held, and must keep holding ------------------------------------------------------

#[tokio::test]
async fn rebinding_hosts_and_foreign_origins_are_refused() {
    let shop = Shop::new();
    let server = shop.start().await;
    let raw = Raw::new(&server);
    for host in [
        "evil.example",
        "localhost.evil.example",
        "2130706433",
        "[::ffff:127.0.0.1]",
    ] {
        let refused = raw
            .post("alice", None, INITIALIZE)
            .header("host", host)
            .send()
            .await
            .expect("answered");
        assert_eq!(refused.status(), 403, "Host: {host}");
    }
    for origin in [
        "null",
        "http://evil.example",
        "http://2130706433",
        "http://[::ffff:127.0.0.1]",
        "http://localhost.evil.example",
    ] {
        let refused = raw
            .post("alice", None, INITIALIZE)
            .header("origin", origin)
            .send()
            .await
            .expect("answered");
        assert_eq!(refused.status(), 403, "Origin: {origin}");
    }
}

#[tokio::test]
async fn missing_wrong_and_basic_credentials_are_401_with_a_challenge() {
    let shop = Shop::new();
    let server = shop.start().await;
    let http = reqwest::Client::new();
    for authorization in [
        None,
        Some("Bearer stolen"),
        Some("Basic YWxpY2U6c2VjcmV0"),
        Some("alice"),
    ] {
        let mut request = anonymous_initialize(&http, &server.url());
        if let Some(value) = authorization {
            request = request.header("authorization", value);
        }
        let refused = request.send().await.expect("answered");
        assert_eq!(refused.status(), 401, "{authorization:?}");
        assert!(
            refused.headers().contains_key("www-authenticate"),
            "{authorization:?}"
        );
    }
}

#[tokio::test]
async fn deep_bodies_and_batches_are_refused_and_the_server_stays_up() {
    let shop = Shop::new();
    let server = shop.start().await;
    let raw = Raw::new(&server);
    let session = raw.open("alice").await;
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    let deep_object = format!(
        r#"{{"jsonrpc":"2.0","id":40,"method":"tools/call","params":{{"name":"echo","arguments":{{"text":{}1{}}}}}}}"#,
        "[".repeat(100_000),
        "]".repeat(100_000)
    );
    let batch = format!("[{},{}]", tools_list(41), tools_list(42));
    for body in [deep, deep_object, batch] {
        let status = raw
            .post("alice", Some(&session), body)
            .send()
            .await
            .expect("answered")
            .status();
        assert!(status.is_client_error(), "{status}");
    }
    assert_eq!(raw.status("alice", &session, tools_list(43)).await, 200);
}

#[tokio::test]
async fn arguments_of_15_mib_are_refused_naming_the_limit() {
    let shop = Shop::new();
    let server = shop.start().await;
    let raw = Raw::new(&server);
    let session = raw.open("alice").await;
    let huge = tools_call(json!(50), "echo", json!({"text": "x".repeat(15 << 20)}));
    let (status, body) = raw.call("alice", &session, huge).await;
    assert_eq!(status, 200);
    let error = &answer(&body, &json!(50))["error"];
    assert_eq!(error["code"], -32602);
    assert!(
        error["message"]
            .as_str()
            .is_some_and(|m| m.contains("limit of 1048576 bytes")),
        "{error}"
    );
}
