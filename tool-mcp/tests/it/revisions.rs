//! MCP 2026-07-28 beside 2025-11-25, over streamable HTTP on 127.0.0.1, as raw HTTP: a
//! 2026-07-28 request carries its version and capabilities in `_meta` and opens no session;
//! its conversation is the one it names (`dev.toolwright/conversation`) for its principal, or
//! its own. A 2025-11-25 session keeps its own conversation beside them.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use toolwright::ask::Reply;
use toolwright::conversation::MemoryConversationStore;
use toolwright::prelude::*;
use toolwright_mcp::{Grant, HttpServer, McpServer, CALL_KEY, CONVERSATION_KEY};

/// Find an order by its customer's name: the order id it returns is grounded.
#[tool(read_only, grounds(order = "id"))]
async fn find_order(customer: String) -> Result<Value, ToolError> {
    Ok(json!({"id": format!("ORD-{}", customer.len()), "customer": customer}))
}

/// Cancel an order found in this conversation.
#[tool(idempotent = false)]
async fn cancel_order(
    key: IdempotencyKey,
    #[arg(grounded = "order")] order_id: String,
) -> Result<String, ToolError> {
    let _ = key;
    Ok(format!("cancelled {order_id}"))
}

/// Pay an amount (not idempotent: each run is one more payment).
#[tool(idempotent = false)]
async fn pay(
    key: IdempotencyKey,
    payments: State<Payments>,
    amount: f64,
) -> Result<f64, ToolError> {
    let _ = key;
    payments.0 .0.fetch_add(1, Ordering::SeqCst);
    Ok(amount)
}

/// Delete an account (a person approves).
#[tool(idempotent = false, requires_approval)]
async fn delete_account(key: IdempotencyKey, account: String) -> Result<String, ToolError> {
    let _ = key;
    Ok(format!("deleted {account}"))
}

#[derive(Clone, Default)]
struct Payments(Arc<AtomicU64>);

/// Where an order goes, asked of the user while the tool runs.
#[toolwright::data(input)]
struct Destination {
    /// The street and number.
    street: String,
    /// The city.
    city: String,
}

/// How the parcel travels.
#[toolwright::data(input)]
struct Speed {
    /// `express` or `standard`.
    speed: String,
}

/// Ship an order: asks where, then how fast, then ships (once).
#[tool(idempotent = false)]
async fn ship_order(
    key: IdempotencyKey,
    ctx: ToolContext,
    payments: State<Payments>,
    order: String,
) -> Result<String, ToolError> {
    let _ = key;
    let Reply::Accepted(to) = ctx
        .ask::<Destination>(format!("Where should {order} go?"))
        .await?
    else {
        return Err(ToolError::bad_request("the user did not say where"));
    };
    let speed = match ctx.ask::<Speed>("How fast?").await? {
        Reply::Accepted(speed) => speed.speed,
        Reply::Declined | Reply::Dismissed => "standard".to_owned(),
    };
    payments.0 .0.fetch_add(1, Ordering::SeqCst);
    Ok(format!("{order} to {}, {} ({speed})", to.street, to.city))
}

/// Wire a refund (a person approves), after asking for the reason.
#[tool(idempotent = false, requires_approval)]
async fn wire_refund(
    key: IdempotencyKey,
    ctx: ToolContext,
    amount: f64,
) -> Result<String, ToolError> {
    let _ = key;
    let Reply::Accepted(speed) = ctx.ask::<Speed>("Which transfer speed?").await? else {
        return Err(ToolError::bad_request("no speed"));
    };
    Ok(format!("refunded {amount} ({})", speed.speed))
}

fn registry(payments: &Payments) -> Registry {
    Registry::builder()
        .tool(FindOrder)
        .tool(CancelOrder)
        .tool(Pay)
        .tool(DeleteAccount)
        .tool(ShipOrder)
        .tool(WireRefund)
        .state(payments.clone())
        .build()
        .expect("the registry builds")
}

async fn start(registry: Registry) -> HttpServer {
    bind(McpServer::new(registry)).await
}

async fn bind(server: McpServer) -> HttpServer {
    server
        .sse_keep_alive(Duration::from_millis(100))
        .authorize(|token: &str| match token {
            "alice" => Some(Grant::new("alice")),
            "bob" => Some(Grant::new("bob")),
            "carol" => Some(Grant::new("carol")),
            _ => None,
        })
        .bind_http("127.0.0.1:0")
        .await
        .expect("binds loopback")
}

/// Raw HTTP of both revisions to one server.
struct Client {
    http: reqwest::Client,
    url: String,
}

impl Client {
    fn new(server: &HttpServer) -> Self {
        Client {
            http: reqwest::Client::new(),
            url: server.url(),
        }
    }

    /// A 2026-07-28 request: the revision's `_meta` and headers, plus `meta`.
    fn request_2026(
        &self,
        token: &str,
        id: Value,
        method: &str,
        params: Value,
        meta: Value,
    ) -> reqwest::RequestBuilder {
        let mut params = params;
        let mut all = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
            "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"},
        });
        if let Value::Object(extra) = meta {
            all.as_object_mut().expect("an object").extend(extra);
        }
        params["_meta"] = all;
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let mut request = self
            .http
            .post(&self.url)
            .bearer_auth(token)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", method);
        // The header names the tool of `tools/call`, the task of `tasks/*`.
        if let Some(name) = body["params"]["name"]
            .as_str()
            .or(body["params"]["taskId"].as_str())
        {
            request = request.header("mcp-name", name);
        }
        request.body(body.to_string())
    }

    /// A 2026-07-28 `tools/call`, its answer.
    async fn call_2026(
        &self,
        token: &str,
        id: u64,
        name: &str,
        arguments: Value,
        meta: Value,
    ) -> Value {
        let params = json!({"name": name, "arguments": arguments});
        let response = self
            .request_2026(token, json!(id), "tools/call", params, meta)
            .send()
            .await
            .expect("answered");
        assert!(
            response.headers().get("mcp-session-id").is_none(),
            "a 2026-07-28 request opens no session"
        );
        let body = response.text().await.expect("a body");
        answer(&body, &json!(id))
    }

    /// A 2025-11-25 session: `initialize`, then `notifications/initialized`; its id.
    async fn open_2025(&self, token: &str) -> String {
        let init = json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}});
        let response = self
            .post_2025(token, None, init)
            .send()
            .await
            .expect("initialize");
        let session = response
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .expect("a session id")
            .to_owned();
        drop(response.text().await);
        let initialized = json!({"jsonrpc":"2.0","method":"notifications/initialized"});
        let status = self
            .post_2025(token, Some(&session), initialized)
            .send()
            .await
            .expect("initialized")
            .status();
        assert_eq!(status, 202);
        session
    }

    fn post_2025(
        &self,
        token: &str,
        session: Option<&str>,
        body: Value,
    ) -> reqwest::RequestBuilder {
        let mut request = self
            .http
            .post(&self.url)
            .bearer_auth(token)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-11-25")
            .body(body.to_string());
        if let Some(session) = session {
            request = request.header("mcp-session-id", session);
        }
        request
    }

    /// A `tools/call` in a 2025-11-25 session, its answer.
    async fn call_2025(
        &self,
        token: &str,
        session: &str,
        id: u64,
        name: &str,
        arguments: Value,
    ) -> Value {
        let body = json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{"name":name,"arguments":arguments}});
        let response = self
            .post_2025(token, Some(session), body)
            .send()
            .await
            .expect("answered");
        answer(&response.text().await.expect("a body"), &json!(id))
    }
}

/// The JSON-RPC messages of an SSE or JSON body.
fn messages(body: &str) -> Vec<Value> {
    let mut all: Vec<Value> = body
        .lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .filter_map(|data| serde_json::from_str(data.trim()).ok())
        .collect();
    if let Ok(single) = serde_json::from_str::<Value>(body) {
        all.push(single);
    }
    all
}

/// The answer (result or error) to request `id`.
fn answer(body: &str, id: &Value) -> Value {
    messages(body)
        .into_iter()
        .find(|m| &m["id"] == id && (m.get("result").is_some() || m.get("error").is_some()))
        .unwrap_or_else(|| panic!("no answer to {id} in {body}"))
}

fn in_conversation(key: &str) -> Value {
    json!({ CONVERSATION_KEY: key })
}

fn envelope(answer: &Value) -> &Value {
    &answer["result"]["structuredContent"]
}

#[tokio::test]
async fn a_2026_result_says_its_type_and_a_2025_result_does_not() {
    let server = start(registry(&Payments::default())).await;
    let client = Client::new(&server);
    let answer = client
        .call_2026(
            "alice",
            1,
            "find_order",
            json!({"customer": "ada"}),
            json!({}),
        )
        .await;
    assert_eq!(answer["result"]["resultType"], "complete", "{answer}");
    assert_eq!(envelope(&answer)["status"], "success", "{answer}");

    let session = client.open_2025("alice").await;
    let answer = client
        .call_2025(
            "alice",
            &session,
            1,
            "find_order",
            json!({"customer": "ada"}),
        )
        .await;
    assert!(answer["result"].get("resultType").is_none(), "{answer}");
    assert_eq!(envelope(&answer)["status"], "success", "{answer}");
}

#[tokio::test]
async fn a_named_conversation_spans_requests_for_its_principal_only() {
    let server = start(registry(&Payments::default())).await;
    let client = Client::new(&server);
    let found = client
        .call_2026(
            "alice",
            1,
            "find_order",
            json!({"customer": "ada"}),
            in_conversation("chat-1"),
        )
        .await;
    let id = envelope(&found)["data"]["id"]
        .as_str()
        .expect("an order id")
        .to_owned();

    // The next request of the same conversation may use the id its tool returned.
    let cancelled = client
        .call_2026(
            "alice",
            2,
            "cancel_order",
            json!({"order_id": id}),
            in_conversation("chat-1"),
        )
        .await;
    assert_eq!(envelope(&cancelled)["status"], "success", "{cancelled}");

    // A request that names no conversation is one of its own; another conversation, or
    // another principal's conversation of the same name, never saw the id.
    for (token, meta) in [
        ("alice", json!({})),
        ("alice", in_conversation("chat-2")),
        ("bob", in_conversation("chat-1")),
    ] {
        let refused = client
            .call_2026(
                token,
                3,
                "cancel_order",
                json!({"order_id": id}),
                meta.clone(),
            )
            .await;
        assert_eq!(
            envelope(&refused)["status"],
            "error",
            "{token} {meta}: {refused}"
        );
        assert_eq!(
            envelope(&refused)["error_type"],
            "ungrounded_identifier",
            "{token} {meta}: {refused}"
        );
    }
}

#[tokio::test]
async fn a_named_conversation_continues_on_another_replica_through_the_store() {
    let store = Arc::new(MemoryConversationStore::new());
    let replica = |store: Arc<MemoryConversationStore>| {
        McpServer::new(registry(&Payments::default()))
            .session_factory(move |session| session.with_store(store.clone()))
    };
    let a = bind(replica(Arc::clone(&store))).await;
    let b = bind(replica(Arc::clone(&store))).await;
    let found = Client::new(&a)
        .call_2026(
            "alice",
            1,
            "find_order",
            json!({"customer": "ada"}),
            in_conversation("chat-1"),
        )
        .await;
    let id = envelope(&found)["data"]["id"]
        .as_str()
        .expect("an order id")
        .to_owned();
    let cancelled = Client::new(&b)
        .call_2026(
            "alice",
            1,
            "cancel_order",
            json!({"order_id": id}),
            in_conversation("chat-1"),
        )
        .await;
    assert_eq!(envelope(&cancelled)["status"], "success", "{cancelled}");
}

#[tokio::test]
async fn a_2025_session_and_2026_requests_hold_separate_conversations() {
    let server = start(registry(&Payments::default())).await;
    let client = Client::new(&server);
    let session = client.open_2025("alice").await;
    let found = client
        .call_2025(
            "alice",
            &session,
            1,
            "find_order",
            json!({"customer": "grace"}),
        )
        .await;
    let id = envelope(&found)["data"]["id"]
        .as_str()
        .expect("an order id")
        .to_owned();

    let elsewhere = client
        .call_2026(
            "alice",
            1,
            "cancel_order",
            json!({"order_id": id}),
            in_conversation("chat-1"),
        )
        .await;
    assert_eq!(
        envelope(&elsewhere)["error_type"],
        "ungrounded_identifier",
        "{elsewhere}"
    );

    // The session's own conversation still holds it.
    let cancelled = client
        .call_2025(
            "alice",
            &session,
            2,
            "cancel_order",
            json!({"order_id": id}),
        )
        .await;
    assert_eq!(envelope(&cancelled)["status"], "success", "{cancelled}");
}

#[tokio::test]
async fn a_call_sent_again_under_its_call_key_runs_once() {
    let payments = Payments::default();
    let server = start(registry(&payments)).await;
    let client = Client::new(&server);
    let meta = json!({ CONVERSATION_KEY: "chat-1", CALL_KEY: "pay-1" });
    // The stream broke; the client sends the request again under a new JSON-RPC id.
    let first = client
        .call_2026("alice", 1, "pay", json!({"amount": 5.0}), meta.clone())
        .await;
    let again = client
        .call_2026("alice", 2, "pay", json!({"amount": 5.0}), meta)
        .await;
    assert_eq!(envelope(&first)["status"], "success", "{first}");
    assert_eq!(
        envelope(&again)["data"],
        envelope(&first)["data"],
        "{again}"
    );
    assert_eq!(payments.0.load(Ordering::SeqCst), 1, "one payment");

    // JSON-RPC ids are not a named conversation's identity: two clients of one conversation
    // may both send id 7, and both calls run.
    for _ in 0..2 {
        let paid = client
            .call_2026(
                "alice",
                7,
                "pay",
                json!({"amount": 1.0}),
                in_conversation("chat-1"),
            )
            .await;
        assert_eq!(envelope(&paid)["status"], "success", "{paid}");
    }
    assert_eq!(payments.0.load(Ordering::SeqCst), 3);
}

#[tokio::test]
async fn a_conversation_key_that_is_not_a_short_string_is_invalid_params_naming_it() {
    let server = start(registry(&Payments::default())).await;
    let client = Client::new(&server);
    for (key, got) in [
        (json!(42), "a number (42)"),
        (json!("x".repeat(200)), "a string of 200 bytes"),
    ] {
        let answer = client
            .call_2026(
                "alice",
                1,
                "find_order",
                json!({"customer": "ada"}),
                json!({ CONVERSATION_KEY: key }),
            )
            .await;
        assert_eq!(answer["error"]["code"], -32602, "{answer}");
        let message = answer["error"]["message"].as_str().unwrap_or_default();
        assert!(
            message.contains(CONVERSATION_KEY) && message.ends_with(got),
            "{message}"
        );
    }
}

/// A 2026-07-28 `tools/call` with `extra` params (`requestState`, `inputResponses`), its
/// whole body.
async fn call_with(
    client: &Client,
    token: &str,
    name: &str,
    arguments: Value,
    extra: Value,
    meta: Value,
) -> String {
    let mut params = json!({"name": name, "arguments": arguments});
    if let Value::Object(extra) = extra {
        params.as_object_mut().expect("an object").extend(extra);
    }
    client
        .request_2026(token, json!(1), "tools/call", params, meta)
        .send()
        .await
        .expect("answered")
        .text()
        .await
        .expect("a body")
}

/// A state the server did not seal for this call: `-32602` naming `requestState`, the tool not
/// run.
fn forged(answer: &Value, what: &str) {
    assert_eq!(answer["error"]["code"], -32602, "{what}: {answer}");
    let message = answer["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("requestState")
            && message.contains("not sealed by this server for this call"),
        "{what}: {message}"
    );
}

/// No request of the server's own on a 2026-07-28 stream (that revision has none).
fn only_notifications(body: &str) {
    let requests: Vec<Value> = messages(body)
        .into_iter()
        .filter(|m| {
            m.get("method")
                .and_then(Value::as_str)
                .is_some_and(|method| !method.starts_with("notifications/"))
        })
        .collect();
    assert!(
        requests.is_empty(),
        "a server request on a 2026-07-28 stream: {body}"
    );
}

#[tokio::test]
async fn approval_over_2026_is_an_input_required_result_answered_once() {
    let server = start(registry(&Payments::default())).await;
    let client = Client::new(&server);
    let body = call_with(
        &client,
        "alice",
        "delete_account",
        json!({"account": "a1"}),
        json!({}),
        json!({}),
    )
    .await;
    only_notifications(&body);
    let asked = answer(&body, &json!(1));
    let result = &asked["result"];
    assert_eq!(result["resultType"], "input_required", "{asked}");
    let question = &result["inputRequests"]["toolwright_approval"];
    assert_eq!(question["method"], "elicitation/create", "{asked}");
    let message = question["params"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("delete_account"), "{message}");
    let state = result["requestState"]
        .as_str()
        .expect("a request state")
        .to_owned();

    // The user accepts: the client sends the call again with the answer and the state.
    let accepted = json!({
        "requestState": state,
        "inputResponses": {"toolwright_approval": {"action": "accept"}},
    });
    let body = call_with(
        &client,
        "alice",
        "delete_account",
        json!({"account": "a1"}),
        accepted.clone(),
        json!({}),
    )
    .await;
    let ran = answer(&body, &json!(1));
    assert_eq!(envelope(&ran)["status"], "success", "{ran}");
    assert_eq!(envelope(&ran)["data"], "deleted a1", "{ran}");

    // The same answer again approves nothing more: it is the same call, and gets the same
    // answer, replayed, without running.
    let body = call_with(
        &client,
        "alice",
        "delete_account",
        json!({"account": "a1"}),
        accepted,
        json!({}),
    )
    .await;
    let again = answer(&body, &json!(1));
    assert_eq!(envelope(&again)["data"], "deleted a1", "{again}");
    assert_eq!(envelope(&again)["replayed"], true, "{again}");
}

#[tokio::test]
async fn a_sealed_approval_state_cannot_be_forged_moved_or_declined_into_a_run() {
    let payments = Payments::default();
    let server = start(registry(&payments)).await;
    let client = Client::new(&server);
    let asked = answer(
        &call_with(
            &client,
            "alice",
            "delete_account",
            json!({"account": "a1"}),
            json!({}),
            json!({}),
        )
        .await,
        &json!(1),
    );
    let state = asked["result"]["requestState"]
        .as_str()
        .expect("a state")
        .to_owned();
    let accept = |state: &str| json!({"requestState": state, "inputResponses": {"toolwright_approval": {"action": "accept"}}});
    let mut tampered = state.clone();
    let last = tampered.pop().expect("not empty");
    tampered.push(if last == 'A' { 'B' } else { 'A' });
    for (token, state, what) in [
        ("alice", tampered.as_str(), "altered"),
        ("bob", state.as_str(), "another principal"),
        ("alice", "forged", "forged"),
    ] {
        let body = call_with(
            &client,
            token,
            "delete_account",
            json!({"account": "a1"}),
            accept(state),
            json!({}),
        )
        .await;
        forged(&answer(&body, &json!(1)), what);
    }
    // Nor for other arguments.
    let body = call_with(
        &client,
        "alice",
        "delete_account",
        json!({"account": "a2"}),
        accept(&state),
        json!({}),
    )
    .await;
    forged(&answer(&body, &json!(1)), "other arguments");
    let body = call_with(
        &client,
        "alice",
        "delete_account",
        json!({"account": "a1"}),
        accept(&state),
        json!({}),
    )
    .await;
    assert_eq!(
        envelope(&answer(&body, &json!(1)))["status"],
        "success",
        "the real state still works once"
    );

    let asked = answer(
        &call_with(
            &client,
            "alice",
            "delete_account",
            json!({"account": "a1"}),
            json!({}),
            json!({}),
        )
        .await,
        &json!(1),
    );
    let state = asked["result"]["requestState"]
        .as_str()
        .expect("a state")
        .to_owned();
    let declined = json!({"requestState": state, "inputResponses": {"toolwright_approval": {"action": "decline"}}});
    let body = call_with(
        &client,
        "alice",
        "delete_account",
        json!({"account": "a1"}),
        declined,
        json!({}),
    )
    .await;
    let refused = answer(&body, &json!(1));
    assert_eq!(
        envelope(&refused)["error_type"],
        "approval_denied",
        "{refused}"
    );
    assert!(
        envelope(&refused)["message"]
            .as_str()
            .unwrap_or_default()
            .contains("declined"),
        "{refused}"
    );
}

#[tokio::test]
async fn a_2026_client_that_cannot_answer_a_form_is_refused_unasked() {
    let server = start(registry(&Payments::default())).await;
    let client = Client::new(&server);
    let no_forms = json!({"io.modelcontextprotocol/clientCapabilities": {}});
    let body = call_with(
        &client,
        "alice",
        "delete_account",
        json!({"account": "a1"}),
        json!({}),
        no_forms,
    )
    .await;
    only_notifications(&body);
    let refused = answer(&body, &json!(1));
    assert_eq!(
        envelope(&refused)["error_type"],
        "approval_denied",
        "{refused}"
    );
    let message = envelope(&refused)["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("2026-07-28") && message.contains("elicitation"),
        "{message}"
    );
}

#[tokio::test]
async fn subscriptions_listen_tells_a_2026_client_when_the_tools_change() {
    let registry = registry(&Payments::default());
    let server = start(registry.clone()).await;
    let client = Client::new(&server);
    let params = json!({"notifications": {"toolsListChanged": true}});
    let mut stream = client
        .request_2026("alice", json!(9), "subscriptions/listen", params, json!({}))
        .send()
        .await
        .expect("the subscription opens");
    assert_eq!(stream.status(), 200);
    let mut seen = String::new();
    let read = async {
        let mut changed = false;
        while let Some(chunk) = stream.chunk().await.expect("the stream reads") {
            seen.push_str(&String::from_utf8_lossy(&chunk));
            if !changed && seen.contains("notifications/subscriptions/acknowledged") {
                registry
                    .change(|c| c.remove("pay"))
                    .expect("the tool set changes");
                changed = true;
            }
            if seen.contains("notifications/tools/list_changed") {
                return;
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(10), read)
        .await
        .unwrap_or_else(|_| panic!("no tools/list_changed on the subscription: {seen}"));
    let changed = messages(&seen)
        .into_iter()
        .find(|m| m["method"] == "notifications/tools/list_changed")
        .expect("the notification");
    assert_eq!(
        changed["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], 9,
        "{changed}"
    );
}

/// The input-required result of a body: its one question's key and form, and its state.
fn question(body: &str) -> (String, Value, String) {
    let asked = answer(body, &json!(1));
    let result = &asked["result"];
    assert_eq!(result["resultType"], "input_required", "{asked}");
    let requests = result["inputRequests"].as_object().expect("input requests");
    assert_eq!(requests.len(), 1, "one question a round: {asked}");
    let (key, request) = requests.iter().next().expect("one");
    assert_eq!(request["method"], "elicitation/create", "{asked}");
    let state = result["requestState"].as_str().expect("a state").to_owned();
    (key.clone(), request["params"].clone(), state)
}

fn reply(key: &str, state: &str, answer: Value) -> Value {
    json!({"requestState": state, "inputResponses": { key: answer }})
}

#[tokio::test]
async fn a_tool_asks_a_2026_client_one_question_a_round_and_acts_once_at_the_end() {
    let payments = Payments::default();
    let server = start(registry(&payments)).await;
    let client = Client::new(&server);
    let args = json!({"order": "A1"});
    let body = call_with(
        &client,
        "alice",
        "ship_order",
        args.clone(),
        json!({}),
        json!({}),
    )
    .await;
    only_notifications(&body);
    let (key, form, state) = question(&body);
    assert_eq!(key, "toolwright_ask_0");
    assert_eq!(form["message"], "Where should A1 go?");
    let fields = form["requestedSchema"]["properties"]
        .as_object()
        .expect("the form's fields");
    assert!(
        fields.contains_key("street") && fields.contains_key("city"),
        "{form}"
    );

    let where_to =
        json!({"action": "accept", "content": {"street": "1 Main St", "city": "Springfield"}});
    let body = call_with(
        &client,
        "alice",
        "ship_order",
        args.clone(),
        reply(&key, &state, where_to),
        json!({}),
    )
    .await;
    let (key, form, state) = question(&body);
    assert_eq!(
        (key.as_str(), form["message"].as_str()),
        ("toolwright_ask_1", Some("How fast?"))
    );
    assert_eq!(
        payments.0.load(Ordering::SeqCst),
        0,
        "nothing shipped before the last answer"
    );

    let how_fast = json!({"action": "accept", "content": {"speed": "express"}});
    let body = call_with(
        &client,
        "alice",
        "ship_order",
        args.clone(),
        reply(&key, &state, how_fast.clone()),
        json!({}),
    )
    .await;
    let shipped = answer(&body, &json!(1));
    assert_eq!(
        envelope(&shipped)["data"],
        "A1 to 1 Main St, Springfield (express)",
        "{shipped}"
    );
    assert_eq!(payments.0.load(Ordering::SeqCst), 1);

    // The last round sent again (a client that lost the answer) is the same call: its answer
    // again, nothing shipped twice.
    let body = call_with(
        &client,
        "alice",
        "ship_order",
        args,
        reply(&key, &state, how_fast),
        json!({}),
    )
    .await;
    let again = answer(&body, &json!(1));
    assert_eq!(
        envelope(&again)["data"],
        envelope(&shipped)["data"],
        "{again}"
    );
    assert_eq!(payments.0.load(Ordering::SeqCst), 1, "shipped once");

    // The state of one call does not carry answers into another call's arguments.
    let body = call_with(
        &client,
        "alice",
        "ship_order",
        json!({"order": "B2"}),
        reply(
            "toolwright_ask_1",
            &state,
            json!({"action": "accept", "content": {"speed": "express"}}),
        ),
        json!({}),
    )
    .await;
    forged(&answer(&body, &json!(1)), "another call's answers");
}

#[tokio::test]
async fn approval_then_a_question_then_the_call_and_its_answers_approve_it_once() {
    let server = start(registry(&Payments::default())).await;
    let client = Client::new(&server);
    let args = json!({"amount": 5.0});
    let body = call_with(
        &client,
        "alice",
        "wire_refund",
        args.clone(),
        json!({}),
        json!({}),
    )
    .await;
    let (key, _, state) = question(&body);
    assert_eq!(key, "toolwright_approval");
    let body = call_with(
        &client,
        "alice",
        "wire_refund",
        args.clone(),
        reply(&key, &state, json!({"action": "accept"})),
        json!({}),
    )
    .await;
    let (key, _, state) = question(&body);
    assert_eq!(key, "toolwright_ask_0", "approved, the tool runs and asks");
    let last = reply(
        &key,
        &state,
        json!({"action": "accept", "content": {"speed": "standard"}}),
    );
    let body = call_with(
        &client,
        "alice",
        "wire_refund",
        args.clone(),
        last.clone(),
        json!({}),
    )
    .await;
    let refunded = answer(&body, &json!(1));
    assert_eq!(
        envelope(&refunded)["data"],
        "refunded 5 (standard)",
        "{refunded}"
    );

    // Sent again, the same call: its answer replayed, nothing refunded twice.
    let body = call_with(&client, "alice", "wire_refund", args, last, json!({})).await;
    let again = answer(&body, &json!(1));
    assert_eq!(envelope(&again)["data"], "refunded 5 (standard)", "{again}");
    assert_eq!(envelope(&again)["replayed"], true, "{again}");
}

#[tokio::test]
async fn a_tool_cannot_ask_a_client_without_forms_and_says_so() {
    let server = start(registry(&Payments::default())).await;
    let client = Client::new(&server);
    let no_forms = json!({"io.modelcontextprotocol/clientCapabilities": {}});
    let body = call_with(
        &client,
        "alice",
        "ship_order",
        json!({"order": "A1"}),
        json!({}),
        no_forms,
    )
    .await;
    only_notifications(&body);
    let refused = answer(&body, &json!(1));
    assert_eq!(envelope(&refused)["error_type"], "bad_request", "{refused}");
    let message = envelope(&refused)["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("could not ask its user") && message.contains("elicitation"),
        "{message}"
    );
}

#[tokio::test]
async fn a_registry_call_has_no_one_to_ask() {
    let outcome = registry(&Payments::default())
        .call(ToolCall::new("c1", "ship_order", r#"{"order":"A1"}"#))
        .await;
    assert_eq!(outcome.error_kind(), Some(ErrorKind::BadRequest));
    let message = outcome.to_model_string();
    assert!(message.contains("cannot ask one"), "{message}");
}

#[tokio::test]
async fn a_2026_tools_list_varies_by_authorization_not_by_the_named_conversation() {
    // `cancel_order` is shown only to a conversation that found an order.
    let registry = Registry::builder()
        .tool(FindOrder)
        .tool(CancelOrder)
        .visible_when("cancel_order", |session| {
            session.is_grounded("order", "ORD-3")
        })
        .build()
        .expect("the registry builds");
    let server = start(registry).await;
    let client = Client::new(&server);
    client
        .call_2026(
            "alice",
            1,
            "find_order",
            json!({"customer": "ada"}),
            in_conversation("chat-1"),
        )
        .await;
    let listed = |body: &str| -> Vec<String> {
        answer(body, &json!(2))["result"]["tools"]
            .as_array()
            .map(|tools| {
                tools
                    .iter()
                    .filter_map(|t| t["name"].as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    };
    let body = client
        .request_2026(
            "alice",
            json!(2),
            "tools/list",
            json!({}),
            in_conversation("chat-1"),
        )
        .send()
        .await
        .expect("answered")
        .text()
        .await
        .expect("a body");
    assert_eq!(listed(&body), ["find_order"], "{body}");

    // A 2025-11-25 session is one conversation, and its list is that conversation's.
    let session = client.open_2025("alice").await;
    client
        .call_2025(
            "alice",
            &session,
            1,
            "find_order",
            json!({"customer": "ada"}),
        )
        .await;
    let body = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    let body = client
        .post_2025("alice", Some(&session), body)
        .send()
        .await
        .expect("answered")
        .text()
        .await
        .expect("a body");
    assert_eq!(listed(&body), ["cancel_order", "find_order"], "{body}");
}

#[tokio::test]
async fn a_2026_list_never_holds_a_deferred_tool_and_a_found_one_is_callable_in_its_conversation() {
    let registry = Registry::builder()
        .tool(FindOrder)
        .tool(CancelOrder)
        .deferred(["cancel_order"])
        .build()
        .unwrap();
    let server = start(registry).await;
    let client = Client::new(&server);
    let listed = |answer: &Value| -> Vec<String> {
        answer["result"]["tools"]
            .as_array()
            .unwrap_or_else(|| panic!("a list: {answer}"))
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect()
    };
    let list = |id: u64| {
        let request = client.request_2026(
            "alice",
            json!(id),
            "tools/list",
            json!({}),
            in_conversation("chat-9"),
        );
        async move {
            let body = request
                .send()
                .await
                .expect("answered")
                .text()
                .await
                .unwrap();
            answer(&body, &json!(id))
        }
    };
    assert_eq!(listed(&list(1).await), ["find_order", "search_tools"]);

    let found = client
        .call_2026(
            "alice",
            2,
            "search_tools",
            json!({"query": "cancel an order"}),
            in_conversation("chat-9"),
        )
        .await;
    assert_eq!(
        envelope(&found)["data"]["tools"][0]["name"],
        "cancel_order",
        "{found}"
    );
    // The list varies by authorization only: still no deferred tool.
    assert_eq!(listed(&list(3).await), ["find_order", "search_tools"]);

    // Found in that conversation: callable there (the id is one its tool returned), and in
    // another conversation it is `unknown_tool`, telling the model to search.
    let order = client
        .call_2026(
            "alice",
            4,
            "find_order",
            json!({"customer": "ada"}),
            in_conversation("chat-9"),
        )
        .await;
    let id = envelope(&order)["data"]["id"].as_str().unwrap().to_owned();
    let cancelled = client
        .call_2026(
            "alice",
            5,
            "cancel_order",
            json!({"order_id": id}),
            in_conversation("chat-9"),
        )
        .await;
    assert_eq!(envelope(&cancelled)["status"], "success", "{cancelled}");
    let elsewhere = client
        .call_2026(
            "alice",
            6,
            "cancel_order",
            json!({"order_id": id}),
            in_conversation("chat-10"),
        )
        .await;
    assert_eq!(
        envelope(&elsewhere)["error_type"],
        "unknown_tool",
        "{elsewhere}"
    );
    assert!(
        envelope(&elsewhere)["message"]
            .as_str()
            .unwrap()
            .contains("search_tools"),
        "{elsewhere}"
    );
}

// ---------------------------------------------------------------------------------------------
// Long-running tools as tasks (`io.modelcontextprotocol/tasks`)
// ---------------------------------------------------------------------------------------------

/// Compile a report: five minutes of work.
#[tool(read_only, task, timeout_ms = 600000)]
async fn compile_report(
    runs: State<TaskRuns>,
    /// The quarter, `2026-Q3`.
    quarter: String,
) -> Result<String, ToolError> {
    runs.0 .0.started.fetch_add(1, Ordering::SeqCst);
    let _dropped = DropCount(Arc::clone(&runs.0 .0.dropped));
    tokio::time::sleep(runs.0 .0.report).await;
    runs.0 .0.finished.fetch_add(1, Ordering::SeqCst);
    Ok(format!("the {quarter} report"))
}

/// Send the newsletter to every subscriber (each run sends it again).
#[tool(idempotent = false, task, timeout_ms = 600000)]
async fn send_newsletter(
    key: IdempotencyKey,
    runs: State<TaskRuns>,
    /// Its subject line.
    subject: String,
) -> Result<String, ToolError> {
    let _ = key;
    runs.0 .0.started.fetch_add(1, Ordering::SeqCst);
    let _dropped = DropCount(Arc::clone(&runs.0 .0.dropped));
    tokio::time::sleep(runs.0 .0.letter).await;
    Ok(format!("sent {subject}"))
}

/// Purge a year of the archive (a person approves; it takes an hour).
#[tool(idempotent = false, requires_approval, task, timeout_ms = 7200000)]
async fn purge_archive(
    key: IdempotencyKey,
    runs: State<TaskRuns>,
    /// The year to purge.
    year: u32,
) -> Result<String, ToolError> {
    let _ = key;
    runs.0 .0.started.fetch_add(1, Ordering::SeqCst);
    tokio::time::sleep(Duration::from_secs(3600)).await;
    Ok(format!("purged {year}"))
}

#[derive(Clone, Default)]
struct TaskRuns(Arc<Counts>);

impl TaskRuns {
    /// Tools that take `report` and `letter` (five minutes and an hour by default).
    fn taking(report: Duration, letter: Duration) -> TaskRuns {
        TaskRuns(Arc::new(Counts {
            report,
            letter,
            ..Counts::default()
        }))
    }
}

struct Counts {
    started: AtomicU64,
    finished: AtomicU64,
    dropped: Arc<AtomicU64>,
    report: Duration,
    letter: Duration,
}

impl Default for Counts {
    fn default() -> Self {
        Counts {
            started: AtomicU64::new(0),
            finished: AtomicU64::new(0),
            dropped: Arc::new(AtomicU64::new(0)),
            report: Duration::from_secs(300),
            letter: Duration::from_secs(3600),
        }
    }
}

/// Counts a tool body dropped before its end (or at it).
struct DropCount(Arc<AtomicU64>);

impl Drop for DropCount {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

async fn task_server(runs: &TaskRuns, per_principal: usize) -> HttpServer {
    let registry = Registry::builder()
        .tool(CompileReport)
        .tool(SendNewsletter)
        .tool(PurgeArchive)
        .tool(FindOrder)
        .state(runs.clone())
        .build()
        .expect("the registry builds");
    bind(
        McpServer::new(registry)
            .max_tasks_per_principal(per_principal)
            .max_tasks(2),
    )
    .await
}

/// A task server (100 tasks a principal, 2 in all) and a client of it.
async fn task_client() -> (TaskRuns, HttpServer, Client) {
    let runs = TaskRuns::default();
    let server = task_server(&runs, 100).await;
    let client = Client::new(&server);
    (runs, server, client)
}

/// The `_meta` of a client that takes tasks.
fn takes_tasks(extra: Value) -> Value {
    let mut meta = json!({
        "io.modelcontextprotocol/clientCapabilities": {
            "extensions": {"io.modelcontextprotocol/tasks": {}}
        }
    });
    if let Value::Object(extra) = extra {
        meta.as_object_mut().expect("an object").extend(extra);
    }
    meta
}

impl Client {
    /// A `tools/call` of a client that takes tasks, answered with a task: its id.
    async fn start_task(&self, token: &str, id: u64, name: &str, arguments: Value) -> String {
        let created = self
            .call_2026(token, id, name, arguments, takes_tasks(json!({})))
            .await;
        created["result"]["taskId"]
            .as_str()
            .unwrap_or_else(|| panic!("no task: {created}"))
            .to_owned()
    }

    /// `tasks/get` or `tasks/cancel` of a client that takes tasks, its answer.
    async fn task_request(&self, token: &str, method: &str, task: &str) -> Value {
        let body = self
            .request_2026(
                token,
                json!(90),
                method,
                json!({"taskId": task}),
                takes_tasks(json!({})),
            )
            .send()
            .await
            .expect("answered")
            .text()
            .await
            .expect("a body");
        answer(&body, &json!(90))
    }

    /// Polls `tasks/get` every second of (paused) time until the task is no longer working,
    /// for longer than the slowest tool here takes (an hour).
    async fn settled(&self, token: &str, task: &str) -> Value {
        for _ in 0..4000 {
            let got = self.task_request(token, "tasks/get", task).await;
            if got["result"]["status"] != "working" {
                return got;
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
        panic!("task {task} never settled");
    }
}

/// A five-minute tool, called by a client that takes tasks: answered at once with a task
/// (working, its TTL and poll interval), which `tasks/get` reports working, then completed
/// with the envelope `tools/call` would have answered. Paused time: the five minutes pass on
/// tokio's clock.
#[tokio::test(start_paused = true)]
async fn a_long_tool_is_a_task_the_client_polls_to_its_result() {
    let (runs, _server, client) = task_client().await;
    let began = tokio::time::Instant::now();
    let created = client
        .call_2026(
            "alice",
            1,
            "compile_report",
            json!({"quarter": "2026-Q3"}),
            takes_tasks(json!({})),
        )
        .await;
    let task = &created["result"];
    assert_eq!(task["resultType"], "task", "{created}");
    assert_eq!(task["status"], "working", "{created}");
    assert_eq!(task["ttlMs"], 3_600_000, "{created}");
    assert_eq!(task["pollIntervalMs"], 1000, "{created}");
    assert!(task.get("content").is_none(), "{created}");
    let id = task["taskId"].as_str().expect("a task id").to_owned();
    assert!(
        began.elapsed() < Duration::from_secs(1),
        "answered before the work"
    );

    let working = client.task_request("alice", "tasks/get", &id).await;
    assert_eq!(working["result"]["status"], "working", "{working}");
    assert!(working["result"].get("result").is_none(), "{working}");

    let done = client.settled("alice", &id).await;
    assert_eq!(done["result"]["status"], "completed", "{done}");
    let result = &done["result"]["result"];
    assert_eq!(result["isError"], false, "{done}");
    assert_eq!(result["structuredContent"]["status"], "success", "{done}");
    assert_eq!(
        result["structuredContent"]["data"], "the 2026-Q3 report",
        "{done}"
    );
    assert!(began.elapsed() >= Duration::from_secs(300));
    assert_eq!(runs.0.finished.load(Ordering::SeqCst), 1);
}

/// `tasks/cancel` drops the call's future (its body with it) and the task ends `cancelled`;
/// a side-effecting tool's status says its effect is unknown. Cancelling again is an ack.
#[tokio::test(start_paused = true)]
async fn a_cancelled_task_drops_its_call() {
    let (runs, _server, client) = task_client().await;
    let id = client
        .start_task(
            "alice",
            1,
            "send_newsletter",
            json!({"subject": "December"}),
        )
        .await;
    let ack = client.task_request("alice", "tasks/cancel", &id).await;
    assert_eq!(ack["result"]["resultType"], "complete", "{ack}");
    assert!(ack["result"].get("status").is_none(), "{ack}");
    let ended = client.settled("alice", &id).await;
    assert_eq!(ended["result"]["status"], "cancelled", "{ended}");
    let message = ended["result"]["statusMessage"]
        .as_str()
        .unwrap_or_default();
    assert!(message.contains("unknown"), "{ended}");
    assert_eq!(runs.0.started.load(Ordering::SeqCst), 1);
    assert_eq!(
        runs.0.dropped.load(Ordering::SeqCst),
        1,
        "the body was dropped"
    );
    let again = client.task_request("alice", "tasks/cancel", &id).await;
    assert_eq!(again["result"]["resultType"], "complete", "{again}");
}

/// A task is its principal's: bob can neither read nor cancel alice's task (answered as an
/// unknown task), and alice's task runs on.
#[tokio::test(start_paused = true)]
async fn a_task_is_its_principal_s() {
    let (_runs, _server, client) = task_client().await;
    let id = client
        .start_task("alice", 1, "compile_report", json!({"quarter": "2026-Q4"}))
        .await;
    for method in ["tasks/get", "tasks/cancel"] {
        let refused = client.task_request("bob", method, &id).await;
        assert_eq!(refused["error"]["code"], -32602, "{method}: {refused}");
        let unknown = client.task_request("bob", method, "no-such-task").await;
        assert_eq!(
            refused["error"]["message"]
                .as_str()
                .map(|m| m.replace(&id, "ID")),
            unknown["error"]["message"]
                .as_str()
                .map(|m| m.replace("no-such-task", "ID")),
            "another's task reads as an unknown one"
        );
    }
    let done = client.settled("alice", &id).await;
    assert_eq!(done["result"]["status"], "completed", "{done}");
}

/// What comes before the body is answered at once, not as a task: invalid arguments (the
/// envelope names the field), and any call of a client that does not take tasks runs to its
/// end within its request.
#[tokio::test(start_paused = true)]
async fn checks_come_before_a_task_and_a_client_without_tasks_waits() {
    let (runs, _server, client) = task_client().await;
    let invalid = client
        .call_2026(
            "alice",
            1,
            "compile_report",
            json!({"quarter": 3}),
            takes_tasks(json!({})),
        )
        .await;
    assert_eq!(invalid["result"]["resultType"], "complete", "{invalid}");
    assert_eq!(
        envelope(&invalid)["error_type"],
        "schema_mismatch",
        "{invalid}"
    );
    assert_eq!(runs.0.started.load(Ordering::SeqCst), 0);

    let waited = client
        .call_2026(
            "alice",
            2,
            "compile_report",
            json!({"quarter": "2026-Q1"}),
            json!({}),
        )
        .await;
    assert_eq!(waited["result"]["resultType"], "complete", "{waited}");
    assert_eq!(envelope(&waited)["data"], "the 2026-Q1 report", "{waited}");
}

/// The stream broke and the client sent the call again under its call key (a new JSON-RPC
/// id): it is answered with the task already running it, and the tool runs once.
#[tokio::test(start_paused = true)]
async fn a_call_sent_again_attaches_to_its_running_task() {
    let (runs, _server, client) = task_client().await;
    let meta = takes_tasks(json!({ CONVERSATION_KEY: "chat-9", CALL_KEY: "report-1" }));
    let first = client
        .call_2026(
            "alice",
            1,
            "compile_report",
            json!({"quarter": "2026-Q2"}),
            meta.clone(),
        )
        .await;
    let again = client
        .call_2026(
            "alice",
            2,
            "compile_report",
            json!({"quarter": "2026-Q2"}),
            meta,
        )
        .await;
    assert_eq!(first["result"]["resultType"], "task", "{first}");
    assert_eq!(
        first["result"]["taskId"], again["result"]["taskId"],
        "{again}"
    );
    let id = first["result"]["taskId"]
        .as_str()
        .expect("a task")
        .to_owned();
    let done = client.settled("alice", &id).await;
    assert_eq!(done["result"]["status"], "completed", "{done}");
    assert_eq!(
        runs.0.started.load(Ordering::SeqCst),
        1,
        "the tool ran once"
    );
}

/// A principal has a bounded number of working tasks: past it the call is refused before it
/// runs, saying the limit; once a task ends, the next call is a task again.
#[tokio::test(start_paused = true)]
async fn working_tasks_are_capped_per_principal() {
    let runs = TaskRuns::default();
    let server = task_server(&runs, 1).await;
    let client = Client::new(&server);
    let call = |id: u64, token: &'static str| {
        let client = &client;
        async move {
            client
                .call_2026(
                    token,
                    id,
                    "send_newsletter",
                    json!({"subject": format!("issue {id}")}),
                    takes_tasks(json!({})),
                )
                .await
        }
    };
    let first = call(1, "alice").await;
    let id = first["result"]["taskId"]
        .as_str()
        .expect("a task")
        .to_owned();
    let refused = call(2, "alice").await;
    assert_eq!(refused["error"]["code"], -32600, "{refused}");
    assert_eq!(refused["error"]["data"]["limit"], 1, "{refused}");
    assert_eq!(runs.0.started.load(Ordering::SeqCst), 1, "nothing ran");
    // Another principal has its own cap, up to the server's.
    assert_eq!(call(3, "bob").await["result"]["resultType"], "task");
    let full = call(5, "carol").await;
    assert_eq!(full["error"]["code"], -32600, "{full}");
    assert_eq!(
        full["error"]["data"]["limit"], 2,
        "the server's cap: {full}"
    );
    client.task_request("alice", "tasks/cancel", &id).await;
    client.settled("alice", &id).await;
    assert_eq!(call(4, "alice").await["result"]["resultType"], "task");
}

/// Two replicas of one server, their tasks kept in one store.
async fn replicas(
    runs: &TaskRuns,
    store: Arc<dyn toolwright::conversation::ConversationStore>,
    lease: Duration,
) -> (HttpServer, HttpServer) {
    let replica = || {
        let registry = Registry::builder()
            .tool(CompileReport)
            .tool(SendNewsletter)
            .state(runs.clone())
            .build()
            .expect("the registry builds");
        McpServer::new(registry)
            .task_store(Arc::clone(&store))
            .task_lease(lease)
    };
    (bind(replica()).await, bind(replica()).await)
}

/// A task started on replica A is read on B (working, then completed with its result), a task
/// cancelled through B stops on A, and a task whose replica stopped is reported `failed` once
/// its hold passes, never `working` forever.
async fn tasks_answer_on_any_replica(
    runs: TaskRuns,
    store: Arc<dyn toolwright::conversation::ConversationStore>,
    lease: Duration,
) {
    let (a, b) = replicas(&runs, store, lease).await;
    let (on_a, on_b) = (Client::new(&a), Client::new(&b));
    let report = on_a
        .start_task("alice", 1, "compile_report", json!({"quarter": "2027-Q1"}))
        .await;
    let seen = on_b.task_request("alice", "tasks/get", &report).await;
    assert_eq!(seen["result"]["status"], "working", "{seen}");
    let bob = on_b.task_request("bob", "tasks/get", &report).await;
    assert_eq!(bob["error"]["code"], -32602, "another's task, on B: {bob}");
    let done = on_b.settled("alice", &report).await;
    assert_eq!(done["result"]["status"], "completed", "{done}");
    assert_eq!(
        done["result"]["result"]["structuredContent"]["data"], "the 2027-Q1 report",
        "{done}"
    );

    let letter = on_a
        .start_task("alice", 2, "send_newsletter", json!({"subject": "May"}))
        .await;
    let ack = on_b.task_request("alice", "tasks/cancel", &letter).await;
    assert_eq!(ack["result"]["resultType"], "complete", "{ack}");
    let ended = on_b.settled("alice", &letter).await;
    assert_eq!(ended["result"]["status"], "cancelled", "{ended}");
    assert_eq!(
        runs.0.dropped.load(Ordering::SeqCst),
        2,
        "the report ended, the letter was dropped"
    );

    let orphan = on_a
        .start_task("alice", 3, "send_newsletter", json!({"subject": "June"}))
        .await;
    a.shutdown().await.expect("A stops");
    let still = on_b.task_request("alice", "tasks/get", &orphan).await;
    assert_eq!(
        still["result"]["status"], "working",
        "held until the lease passes: {still}"
    );
    tokio::time::sleep(lease + lease / 2).await;
    let failed = on_b.task_request("alice", "tasks/get", &orphan).await;
    assert_eq!(failed["result"]["status"], "failed", "{failed}");
    let message = failed["result"]["statusMessage"]
        .as_str()
        .unwrap_or_default();
    assert!(
        message.contains("stopped") && message.contains("unknown"),
        "{failed}"
    );
    assert!(failed["result"].get("error").is_some(), "{failed}");
    drop(b);
}

#[tokio::test(start_paused = true)]
async fn tasks_answer_on_any_replica_sharing_a_memory_store() {
    let store = Arc::new(MemoryConversationStore::new());
    tasks_answer_on_any_replica(TaskRuns::default(), store, Duration::from_secs(10)).await;
}

#[cfg(feature = "redis")]
#[path = "../../../tests/it/support/redis_server.rs"]
pub(crate) mod redis_server;

/// The same on a real `redis-server`, in real time (its holds pass on the server's clock): a
/// two-second report, a half-second lease.
#[cfg(feature = "redis")]
#[tokio::test]
async fn tasks_answer_on_any_replica_sharing_one_redis() {
    let Some(server) = redis_server::RedisServer::start() else {
        return;
    };
    let store = toolwright_core::conversation::RedisConversationStore::builder()
        .prefix("tasks:")
        .connect(&server.url())
        .await
        .expect("connects");
    let runs = TaskRuns::taking(Duration::from_secs(2), Duration::from_secs(3600));
    tasks_answer_on_any_replica(runs, Arc::new(store), Duration::from_millis(500)).await;
}

/// Approval comes before the task: a client that answers forms and takes tasks is asked first
/// (an input-required result, nothing run), and the call sent again with the approval becomes a
/// task, run once.
#[tokio::test(start_paused = true)]
async fn approval_is_asked_before_a_task_exists() {
    let (runs, _server, client) = task_client().await;
    let both = json!({
        "io.modelcontextprotocol/clientCapabilities": {
            "elicitation": {"form": {}},
            "extensions": {"io.modelcontextprotocol/tasks": {}}
        }
    });
    let args = json!({"year": 2019});
    let body = call_with(
        &client,
        "alice",
        "purge_archive",
        args.clone(),
        json!({}),
        both.clone(),
    )
    .await;
    let (key, params, state) = question(&body);
    assert!(
        params["message"]
            .as_str()
            .unwrap_or_default()
            .contains("purge_archive"),
        "{params}"
    );
    assert_eq!(
        runs.0.started.load(Ordering::SeqCst),
        0,
        "nothing ran before approval"
    );

    let approved = reply(&key, &state, json!({"action": "accept"}));
    let body = call_with(&client, "alice", "purge_archive", args, approved, both).await;
    let created = answer(&body, &json!(1));
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    let id = created["result"]["taskId"]
        .as_str()
        .expect("a task")
        .to_owned();
    let done = client.settled("alice", &id).await;
    assert_eq!(done["result"]["status"], "completed", "{done}");
    assert_eq!(
        done["result"]["result"]["structuredContent"]["data"], "purged 2019",
        "{done}"
    );
    assert_eq!(
        runs.0.started.load(Ordering::SeqCst),
        1,
        "run once, after approval"
    );
}

// ---------------------------------------------------------------------------------------------
// Approvals across replicas
// ---------------------------------------------------------------------------------------------

/// Two replicas behind one address: the same sealing key and the same store for used
/// approvals.
async fn approving_replicas(
    runs: &TaskRuns,
    store: Arc<dyn toolwright::conversation::ConversationStore>,
) -> (HttpServer, HttpServer) {
    let replica = || {
        let registry = Registry::builder()
            .tool(PurgeArchive)
            .tool(DeleteAccount)
            .state(runs.clone())
            .build()
            .expect("the registry builds");
        McpServer::new(registry)
            .request_state_key(vec![42u8; 32])
            .request_state_store(Arc::clone(&store))
    };
    (bind(replica()).await, bind(replica()).await)
}

/// An approved request sent to replica A and then, identical, to replica B runs on A only:
/// B answers `approval_denied` ("already used"), for a plain tool and for a task tool alike.
async fn an_approval_runs_one_call_across_replicas(
    store: Arc<dyn toolwright::conversation::ConversationStore>,
) {
    let runs = TaskRuns::default();
    let (a, b) = approving_replicas(&runs, store).await;
    let (on_a, on_b) = (Client::new(&a), Client::new(&b));
    let both = json!({
        "io.modelcontextprotocol/clientCapabilities": {
            "elicitation": {"form": {}},
            "extensions": {"io.modelcontextprotocol/tasks": {}}
        }
    });
    for (tool, args) in [
        ("delete_account", json!({"account": "a1"})),
        ("purge_archive", json!({"year": 2019})),
    ] {
        let body = call_with(&on_a, "alice", tool, args.clone(), json!({}), both.clone()).await;
        let (key, _, state) = question(&body);
        let approved = reply(&key, &state, json!({"action": "accept"}));
        let body = call_with(
            &on_a,
            "alice",
            tool,
            args.clone(),
            approved.clone(),
            both.clone(),
        )
        .await;
        let ran = answer(&body, &json!(1));
        assert!(
            ran["result"]["resultType"] == "task" || envelope(&ran)["status"] == "success",
            "{tool} runs on A: {ran}"
        );
        let body = call_with(&on_b, "alice", tool, args, approved, both.clone()).await;
        let again = answer(&body, &json!(1));
        assert_eq!(
            envelope(&again)["error_type"],
            "approval_denied",
            "{tool} again on B: {again}"
        );
        let message = envelope(&again)["message"].as_str().unwrap_or_default();
        assert!(message.contains("already used"), "{message}");
    }
    assert_eq!(runs.0.started.load(Ordering::SeqCst), 1, "purged once");
}

#[tokio::test(start_paused = true)]
async fn an_approval_runs_one_call_across_replicas_sharing_a_memory_store() {
    an_approval_runs_one_call_across_replicas(Arc::new(MemoryConversationStore::new())).await;
}

#[cfg(feature = "redis")]
#[tokio::test]
async fn an_approval_runs_one_call_across_replicas_sharing_one_redis() {
    let Some(server) = redis_server::RedisServer::start() else {
        return;
    };
    let store = toolwright_core::conversation::RedisConversationStore::builder()
        .prefix("approvals:")
        .connect(&server.url())
        .await
        .expect("connects");
    an_approval_runs_one_call_across_replicas(Arc::new(store)).await;
}

// ---------------------------------------------------------------------------------------------
// Task caps, re-sends, finished tasks and the TTL
// ---------------------------------------------------------------------------------------------

/// Archive a mailbox: its effect happens 2.5 s in (each run archives once more).
#[tool(idempotent = false, task, timeout_ms = 600000)]
async fn archive_mailbox(
    key: IdempotencyKey,
    runs: State<TaskRuns>,
    /// The mailbox.
    mailbox: String,
) -> Result<String, ToolError> {
    let _ = key;
    runs.0 .0.started.fetch_add(1, Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(2500)).await;
    runs.0 .0.finished.fetch_add(1, Ordering::SeqCst);
    Ok(format!("archived {mailbox}"))
}

/// Export rows: a result of `kib` KiB.
#[tool(read_only, task, timeout_ms = 600000)]
async fn export_rows(
    /// How many KiB.
    kib: usize,
) -> Result<String, ToolError> {
    tokio::time::sleep(Duration::from_millis(10)).await;
    Ok("x".repeat(kib * 1024))
}

/// An approver that takes 200 ms to approve.
struct SlowApprover;

impl toolwright::approval::Approver for SlowApprover {
    fn review<'a>(
        &'a self,
        _request: &'a toolwright::approval::ApprovalRequest<'a>,
    ) -> std::pin::Pin<
        Box<dyn std::future::Future<Output = toolwright::approval::Approval> + Send + 'a>,
    > {
        Box::pin(async {
            tokio::time::sleep(Duration::from_millis(200)).await;
            toolwright::approval::Approval::Approved
        })
    }
}

/// A task server of every task tool, `configure`d.
async fn tasks_with(runs: &TaskRuns, configure: impl FnOnce(McpServer) -> McpServer) -> HttpServer {
    let registry = Registry::builder()
        .tool(CompileReport)
        .tool(SendNewsletter)
        .tool(PurgeArchive)
        .tool(ArchiveMailbox)
        .tool(ExportRows)
        .state(runs.clone())
        .build()
        .expect("the registry builds");
    bind(configure(McpServer::new(registry))).await
}

/// Twelve `purge_archive` task calls of alice at once, sent to `urls` in turn: the ids of the
/// tasks they became; every other call refused under the cap of three.
async fn twelve_purges_at_once(urls: &[String]) -> Vec<String> {
    let mut calls = tokio::task::JoinSet::new();
    for n in 0..12u32 {
        let client = Client {
            http: reqwest::Client::new(),
            url: urls[n as usize % urls.len()].clone(),
        };
        calls.spawn(async move {
            client
                .call_2026(
                    "alice",
                    u64::from(n),
                    "purge_archive",
                    json!({"year": 2000 + n}),
                    takes_tasks(json!({})),
                )
                .await
        });
    }
    let mut tasks = Vec::new();
    while let Some(answer) = calls.join_next().await {
        let answer = answer.expect("the call ends");
        if answer["result"]["resultType"] == "task" {
            tasks.push(
                answer["result"]["taskId"]
                    .as_str()
                    .expect("an id")
                    .to_owned(),
            );
        } else {
            assert_eq!(answer["error"]["code"], -32600, "{answer}");
            assert_eq!(answer["error"]["data"]["limit"], 3, "{answer}");
        }
    }
    tasks
}

/// Twelve task calls of one principal at once, each waiting 200 ms on its approver: the cap of
/// three holds at every instant, since each call takes its slot before its checks; the slots
/// of the refused are given back, and so are those of tasks that ended.
#[tokio::test(start_paused = true)]
async fn task_caps_hold_for_concurrent_calls_whose_checks_take_time() {
    let runs = TaskRuns::default();
    let server = tasks_with(&runs, |server| {
        server
            .max_tasks_per_principal(3)
            .approver(Arc::new(SlowApprover))
    })
    .await;
    let tasks = twelve_purges_at_once(&[server.url()]).await;
    assert_eq!(tasks.len(), 3, "three tasks, the rest refused");
    assert_eq!(runs.0.started.load(Ordering::SeqCst), 3);
    let client = Client::new(&server);
    client
        .task_request("alice", "tasks/cancel", &tasks[0])
        .await;
    client.settled("alice", &tasks[0]).await;
    let next = client
        .call_2026(
            "alice",
            99,
            "purge_archive",
            json!({"year": 1999}),
            takes_tasks(json!({})),
        )
        .await;
    assert_eq!(
        next["result"]["resultType"], "task",
        "a slot came back: {next}"
    );
}

/// Two replicas sharing a task store share its caps: twelve task calls of one principal, half
/// sent to each replica at once, each waiting 200 ms on its approver, start three tasks between
/// them (not three on each); another principal has places of its own; a cancelled task gives
/// its place back on both.
#[tokio::test(start_paused = true)]
async fn task_caps_hold_across_replicas_sharing_a_task_store() {
    let runs = TaskRuns::default();
    let store = Arc::new(MemoryConversationStore::new());
    let replica = || {
        let store = Arc::clone(&store);
        tasks_with(&runs, move |server| {
            server
                .max_tasks_per_principal(3)
                .approver(Arc::new(SlowApprover))
                .task_store(store)
                .task_lease(Duration::from_secs(10))
        })
    };
    let (a, b) = (replica().await, replica().await);
    let tasks = twelve_purges_at_once(&[a.url(), b.url()]).await;
    assert_eq!(tasks.len(), 3, "three tasks between the two replicas");
    assert_eq!(runs.0.started.load(Ordering::SeqCst), 3);

    // Bob has places of his own.
    let bob = Client::new(&b)
        .call_2026(
            "bob",
            50,
            "purge_archive",
            json!({"year": 1990}),
            takes_tasks(json!({})),
        )
        .await;
    assert_eq!(bob["result"]["resultType"], "task", "{bob}");

    // A task ended on either replica gives its place back to both.
    let on_a = Client::new(&a);
    on_a.task_request("alice", "tasks/cancel", &tasks[0]).await;
    on_a.settled("alice", &tasks[0]).await;
    tokio::time::sleep(Duration::from_millis(10)).await;
    let next = Client::new(&b)
        .call_2026(
            "alice",
            99,
            "purge_archive",
            json!({"year": 1999}),
            takes_tasks(json!({})),
        )
        .await;
    assert_eq!(
        next["result"]["resultType"], "task",
        "a place came back: {next}"
    );
}

/// A task attaches a re-sent call only when all of it matches: the same call key in another
/// conversation, or for another tool, is a call of its own; with the same tool and other
/// arguments, a side-effecting tool's key answers `idempotency_mismatch`.
#[tokio::test(start_paused = true)]
async fn a_resent_call_attaches_only_when_conversation_tool_and_arguments_match() {
    let runs = TaskRuns::default();
    let server = tasks_with(&runs, |server| server).await;
    let client = Client::new(&server);
    let meta =
        |conversation: &str| takes_tasks(json!({ CONVERSATION_KEY: conversation, CALL_KEY: "k1" }));
    let first = client
        .call_2026(
            "alice",
            1,
            "send_newsletter",
            json!({"subject": "May"}),
            meta("c-one"),
        )
        .await;
    let task = first["result"]["taskId"]
        .as_str()
        .expect("a task")
        .to_owned();

    let elsewhere = client
        .call_2026(
            "alice",
            2,
            "send_newsletter",
            json!({"subject": "June"}),
            meta("c-two"),
        )
        .await;
    assert_eq!(elsewhere["result"]["resultType"], "task", "{elsewhere}");
    assert_ne!(
        elsewhere["result"]["taskId"], task,
        "another conversation: {elsewhere}"
    );

    let other_tool = client
        .call_2026(
            "alice",
            3,
            "compile_report",
            json!({"quarter": "2026-Q1"}),
            meta("c-one"),
        )
        .await;
    assert_ne!(
        other_tool["result"]["taskId"], task,
        "another tool: {other_tool}"
    );

    let other_arguments = client
        .call_2026(
            "alice",
            4,
            "send_newsletter",
            json!({"subject": "July"}),
            meta("c-one"),
        )
        .await;
    assert_ne!(
        other_arguments["result"]["taskId"], task,
        "{other_arguments}"
    );
    assert_eq!(
        envelope(&other_arguments)["error_type"],
        "idempotency_mismatch",
        "{other_arguments}"
    );

    let same = client
        .call_2026(
            "alice",
            5,
            "send_newsletter",
            json!({"subject": "May"}),
            meta("c-one"),
        )
        .await;
    assert_eq!(same["result"]["taskId"], task, "the same call: {same}");
    assert_eq!(
        runs.0.started.load(Ordering::SeqCst),
        3,
        "May once, June once, the report once"
    );
}

impl Client {
    /// Polls `tasks/get` every few milliseconds until the task is no longer working (real
    /// time).
    async fn ended(&self, token: &str, task: &str) -> Value {
        for _ in 0..5000 {
            let got = self.task_request(token, "tasks/get", task).await;
            if got["result"]["status"] != "working" {
                return got;
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        panic!("task {task} never ended");
    }
}

/// Finished tasks are bounded per principal, in count and in bytes, the oldest forgotten first
/// (polling one is answered as for an unknown task); another principal's are not touched.
/// Paused time, under a TTL no test reaches (tokio moves the clock on while a request is on
/// the wire).
#[tokio::test(start_paused = true)]
async fn finished_tasks_are_bounded_in_count_and_bytes_per_principal() {
    let runs = TaskRuns::default();
    let server = tasks_with(&runs, |server| {
        server
            .max_tasks_per_principal(2)
            .task_ttl(Duration::from_secs(1 << 40))
    })
    .await;
    let client = Client::new(&server);
    let bob = client
        .start_task("bob", 1, "compile_report", json!({"quarter": "2026-Q4"}))
        .await;
    client.task_request("bob", "tasks/cancel", &bob).await;
    let count = toolwright_mcp::MAX_FINISHED_TASKS_PER_PRINCIPAL + 20;
    let mut cancelled = Vec::new();
    for n in 0..count {
        let id = client
            .start_task(
                "alice",
                n as u64 + 10,
                "compile_report",
                json!({"quarter": "2026-Q1"}),
            )
            .await;
        client.task_request("alice", "tasks/cancel", &id).await;
        client.ended("alice", &id).await;
        cancelled.push(id);
    }
    let oldest = client
        .task_request("alice", "tasks/get", &cancelled[0])
        .await;
    assert_eq!(oldest["error"]["code"], -32602, "forgotten: {oldest}");
    let newest = client
        .task_request("alice", "tasks/get", &cancelled[count - 1])
        .await;
    assert_eq!(newest["result"]["status"], "cancelled", "{newest}");
    let kept = client.task_request("bob", "tasks/get", &bob).await;
    assert_eq!(
        kept["result"]["status"], "cancelled",
        "bob's is his: {kept}"
    );

    // 40 results of 256 KiB are 10 MiB, over the 8 MiB a principal keeps.
    let mut exports = Vec::new();
    for n in 0..40 {
        let id = client
            .start_task("carol", 1000 + n, "export_rows", json!({"kib": 256}))
            .await;
        let done = client.ended("carol", &id).await;
        assert_eq!(done["result"]["status"], "completed", "{done}");
        exports.push(id);
    }
    let first = client.task_request("carol", "tasks/get", &exports[0]).await;
    assert_eq!(first["error"]["code"], -32602, "forgotten: {first}");
    let last = client
        .task_request("carol", "tasks/get", &exports[39])
        .await;
    assert_eq!(last["result"]["status"], "completed", "{last}");
    const { assert!(40 * 256 * 1024 > toolwright_mcp::MAX_FINISHED_TASK_BYTES_PER_PRINCIPAL) };
}

/// A working task is stopped by a timer at its TTL, with no one polling: its body is dropped
/// before its effect; polled, it reads `failed`, saying the TTL. Real time: a one-second TTL,
/// the effect due at 2.5 s.
#[tokio::test]
async fn a_working_task_is_stopped_at_its_ttl_with_no_one_polling() {
    let runs = TaskRuns::default();
    let server = tasks_with(&runs, |server| server.task_ttl(Duration::from_secs(1))).await;
    let client = Client::new(&server);
    client
        .start_task("alice", 1, "archive_mailbox", json!({"mailbox": "inbox"}))
        .await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(runs.0.started.load(Ordering::SeqCst), 1);
    assert_eq!(
        runs.0.finished.load(Ordering::SeqCst),
        0,
        "the effect never happened"
    );

    let id = client
        .start_task("alice", 2, "archive_mailbox", json!({"mailbox": "sent"}))
        .await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let failed = client.task_request("alice", "tasks/get", &id).await;
    assert_eq!(failed["result"]["status"], "failed", "{failed}");
    let message = failed["result"]["statusMessage"]
        .as_str()
        .unwrap_or_default();
    assert!(
        message.contains("TTL") && message.contains("unknown"),
        "{failed}"
    );
}

/// Asks `n` questions at once.
#[tool(read_only)]
async fn many_questions(ctx: ToolContext, n: usize) -> Result<usize, ToolError> {
    let asked = (0..n).map(|i| ctx.ask_named::<Speed>(format!("q{i}"), format!("Question {i}?")));
    let answers = futures_util::future::join_all(asked).await;
    for answer in answers {
        answer?;
    }
    Ok(n)
}

#[tokio::test]
async fn one_input_required_result_carries_at_most_32_questions() {
    let server = start(
        Registry::builder()
            .tool(ManyQuestions)
            .build()
            .expect("builds"),
    )
    .await;
    let client = Client::new(&server);
    for (n, listed) in [(32, 32), (40, 32)] {
        let body = call_with(
            &client,
            "alice",
            "many_questions",
            json!({"n": n}),
            json!({}),
            json!({}),
        )
        .await;
        let asked = answer(&body, &json!(1));
        let requests = asked["result"]["inputRequests"]
            .as_object()
            .map_or(0, |r| r.len());
        assert_eq!(requests, listed, "{n} questions at once: {asked}");
    }
}
