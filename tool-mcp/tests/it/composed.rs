//! The registry's tools inside a `ServerHandler` the user writes (the `composed_server`
//! example): rmcp's client lists and calls the tools through toolwright, and lists and reads
//! the handler's own resources, gets its prompt and asks its completion; approval, progress and
//! list-changed still come from toolwright; over HTTP a session stays its principal's.

#[allow(dead_code)]
#[path = "../../examples/composed_server.rs"]
mod example;

use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{
    ArgumentInfo, CompleteRequestParams, ElicitationAction, ErrorCode, GetPromptRequestParams,
    NumberOrString, ProgressToken, ReadResourceRequestParams, Reference, RequestMetaObject,
    ResourceContents,
};
use rmcp::ServiceError;
use serde_json::{json, Value};
use toolwright_mcp::Grant;

use crate::common::{self, call, duplex, envelope, Counters, Elicitor};

fn protocol_error<T: std::fmt::Debug>(result: Result<T, ServiceError>) -> rmcp::ErrorData {
    match result {
        Err(ServiceError::McpError(error)) => error,
        other => panic!("expected a JSON-RPC error, got {other:?}"),
    }
}

fn text_of(contents: &[ResourceContents]) -> String {
    match contents.first() {
        Some(ResourceContents::TextResourceContents { text, .. }) => text.clone(),
        other => panic!("expected text contents, got {other:?}"),
    }
}

async fn notebook() -> common::Client {
    duplex(
        example::server(example::registry()),
        Elicitor::without_elicitation(),
    )
    .await
}

#[tokio::test]
async fn initialize_advertises_the_tools_and_the_handlers_own_capabilities() {
    let client = notebook().await;
    let info = client.peer_info().expect("initialized");
    assert_eq!(
        info.server_info.as_ref().map(|i| i.name.as_str()),
        Some("notebook")
    );
    assert_eq!(
        info.instructions.as_deref(),
        Some("Read notes with `get_note` or as `notes://` resources.")
    );
    let capabilities = &info.capabilities;
    assert_eq!(
        capabilities.tools.as_ref().and_then(|t| t.list_changed),
        Some(true)
    );
    assert!(capabilities.resources.is_some());
    assert!(capabilities.prompts.is_some());
    assert!(capabilities.completions.is_some());
    // Tools' protocol versions: up to 2025-11-25.
    assert_eq!(info.protocol_version.as_str(), "2025-11-25");
}

#[tokio::test]
async fn tools_are_listed_and_called_through_toolwright() {
    let client = notebook().await;
    let tools = client.list_all_tools().await.expect("tools/list");
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(names, ["get_note"]);
    let listed = serde_json::to_value(&tools[0]).expect("a tool serializes");
    assert_eq!(listed["annotations"]["readOnlyHint"], true);
    assert_eq!(
        listed["inputSchema"]["properties"]["id"]["pattern"],
        "^n[0-9]{1,4}$"
    );

    let good = client
        .call_tool(call("get_note", json!({"id": "n1"})))
        .await
        .expect("tools/call");
    assert_eq!(good.is_error, Some(false));
    assert_eq!(envelope(&good)["status"], "success");
    assert_eq!(
        envelope(&good)["data"],
        "Ship the composed server before Friday."
    );

    // Arguments the schema refuses: toolwright's envelope, for the model to repair.
    let bad = client
        .call_tool(call("get_note", json!({"id": "note one"})))
        .await
        .expect("tools/call");
    assert_eq!(bad.is_error, Some(true));
    let bad = envelope(&bad);
    assert_eq!(bad["status"], "error");
    assert_eq!(bad["error_type"], "schema_mismatch", "{bad}");
    assert_eq!(bad["retryable"], true, "{bad}");

    // A failure of the tool itself.
    let missing = client
        .call_tool(call("get_note", json!({"id": "n99"})))
        .await
        .expect("tools/call");
    assert_eq!(envelope(&missing)["error_type"], "not_found");

    // A tool that does not exist: -32602 listing the real ones.
    let error = protocol_error(client.call_tool(call("delete_note", json!({}))).await);
    assert_eq!(error.code, ErrorCode::INVALID_PARAMS);
    assert!(
        error.message.contains("Available tools: get_note"),
        "{}",
        error.message
    );
    common::ping(&client).await.expect("still serving");
}

#[tokio::test]
async fn resources_prompts_and_completions_are_the_handlers() {
    let client = notebook().await;
    let resources = client.list_all_resources().await.expect("resources/list");
    let uris: Vec<&str> = resources.iter().map(|r| r.uri.as_str()).collect();
    assert_eq!(
        uris,
        ["notes://n1", "notes://n2", "notes://n3", "notes://me"]
    );

    let read = client
        .read_resource(ReadResourceRequestParams::new("notes://n2"))
        .await
        .expect("resources/read");
    assert_eq!(
        text_of(&read.contents),
        "Progress is coalesced at 50 ms; zero sends every report."
    );
    // The handler reads the session toolwright made: over stdio, no principal.
    let me = client
        .read_resource(ReadResourceRequestParams::new("notes://me"))
        .await
        .expect("resources/read");
    assert_eq!(text_of(&me.contents), "principal: anonymous");
    let error = protocol_error(
        client
            .read_resource(ReadResourceRequestParams::new("notes://nope"))
            .await,
    );
    assert_eq!(error.code, ErrorCode::RESOURCE_NOT_FOUND);

    let prompts = client.list_all_prompts().await.expect("prompts/list");
    assert_eq!(prompts.len(), 1);
    assert_eq!(prompts[0].name, "summarize_note");
    let mut arguments = serde_json::Map::new();
    arguments.insert("id".into(), json!("n3"));
    let mut request = GetPromptRequestParams::new("summarize_note");
    request.arguments = Some(arguments);
    let prompt = client.get_prompt(request).await.expect("prompts/get");
    let message = serde_json::to_value(&prompt.messages[0]).expect("serializes");
    assert!(
        message["content"]["text"]
            .as_str()
            .is_some_and(|t| t.contains("belongs to the principal")),
        "{message}"
    );
    let error = protocol_error(
        client
            .get_prompt(GetPromptRequestParams::new("summarize_note"))
            .await,
    );
    assert_eq!(error.code, ErrorCode::INVALID_PARAMS);

    let completion = client
        .complete(CompleteRequestParams::new(
            Reference::for_prompt("summarize_note"),
            ArgumentInfo::new("id", "n"),
        ))
        .await
        .expect("completion/complete");
    assert_eq!(completion.completion.values, ["n1", "n2", "n3"]);
    let narrower = client
        .complete(CompleteRequestParams::new(
            Reference::for_prompt("summarize_note"),
            ArgumentInfo::new("id", "n2"),
        ))
        .await
        .expect("completion/complete");
    assert_eq!(narrower.completion.values, ["n2"]);
}

/// The shop of the other tests served through the notebook: what toolwright's own handler
/// does (approval by elicitation, progress, list-changed) the user's handler does too.
#[tokio::test]
async fn approval_progress_and_list_changed_pass_through_the_users_handler() {
    let counters = Counters::default();
    let registry = common::registry(counters.clone());
    let elicitor = Elicitor::answering(ElicitationAction::Accept);
    let announced = Arc::clone(&elicitor.list_changed);
    let client = duplex(
        example::server(registry.clone())
            .session_factory(|session| session.with_scopes(["refunds:write"])),
        elicitor.clone(),
    )
    .await;

    client
        .call_tool(call("search_orders", json!({"query": "ada"})))
        .await
        .expect("search");
    let refund = client
        .call_tool(call(
            "refund_order",
            json!({"order_id": "A1001", "amount": 25.0}),
        ))
        .await
        .expect("tools/call");
    assert_eq!(envelope(&refund)["status"], "success", "{refund:?}");
    assert_eq!(Counters::get(&counters.refunds), 1);
    assert_eq!(elicitor.asked().len(), 1);

    let mut slow = call("slow_report", json!({"steps": 3}));
    slow.meta = Some(RequestMetaObject::with_progress_token(ProgressToken(
        NumberOrString::Number(1),
    )));
    let result = client.call_tool(slow).await.expect("tools/call");
    assert_eq!(envelope(&result)["status"], "success");
    let progress = elicitor.progress();
    assert_eq!(
        progress.last().map(|p| p.progress),
        Some(3.0),
        "{progress:?}"
    );

    registry
        .change(|c| c.remove("echo"))
        .expect("echo is there");
    tokio::time::timeout(Duration::from_secs(10), announced.notified())
        .await
        .expect("notifications/tools/list_changed within 10 s");
    let tools = client.list_all_tools().await.expect("tools/list");
    assert!(tools.iter().all(|t| t.name != "echo"));
}

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}"#;
const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

fn post(url: &str, token: &str, session: Option<&str>, body: String) -> reqwest::RequestBuilder {
    let mut request = reqwest::Client::new()
        .post(url)
        .bearer_auth(token)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-11-25")
        .body(body);
    if let Some(session) = session {
        request = request.header("mcp-session-id", session);
    }
    request
}

/// The result of request `id` in an SSE body.
fn result_of(sse: &str, id: u64) -> Value {
    sse.lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .filter_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
        .find(|m| m["id"] == id)
        .map(|m| m["result"].clone())
        .unwrap_or_else(|| panic!("no answer to {id} in {sse}"))
}

#[tokio::test]
async fn over_http_another_principal_cannot_use_the_session() {
    let server = example::server(example::registry())
        .authorize(|token: &str| match token {
            "alice" => Some(Grant::new("alice")),
            "bob" => Some(Grant::new("bob")),
            _ => None,
        })
        .bind_http("127.0.0.1:0")
        .await
        .expect("binds loopback");
    let url = server.url();
    let opened = post(&url, "alice", None, INITIALIZE.into())
        .send()
        .await
        .expect("initialize");
    assert_eq!(opened.status(), 200);
    let session = opened
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .expect("a session id")
        .to_owned();
    drop(opened.text().await);
    let initialized = post(&url, "alice", Some(&session), INITIALIZED.into())
        .send()
        .await
        .expect("initialized");
    assert_eq!(initialized.status(), 202);

    let read_me = |id: u64| {
        json!({"jsonrpc":"2.0","id":id,"method":"resources/read","params":{"uri":"notes://me"}})
            .to_string()
    };
    let get_note = json!({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"get_note","arguments":{"id":"n1"}}}).to_string();
    // Bob, with a valid token of his own, on Alice's session: as if it did not exist, for the
    // user's methods and the tools alike.
    for body in [read_me(2), get_note.clone()] {
        let refused = post(&url, "bob", Some(&session), body)
            .send()
            .await
            .expect("answered");
        assert_eq!(refused.status(), 404);
    }
    // Alice's session is hers, and the user's handler sees her as its principal.
    let mine = post(&url, "alice", Some(&session), read_me(4))
        .send()
        .await
        .expect("answered");
    assert_eq!(mine.status(), 200);
    let body = mine.text().await.expect("a body");
    assert_eq!(
        result_of(&body, 4)["contents"][0]["text"],
        "principal: alice"
    );
    let called = post(&url, "alice", Some(&session), get_note)
        .send()
        .await
        .expect("answered");
    let body = called.text().await.expect("a body");
    assert_eq!(
        result_of(&body, 3)["structuredContent"]["status"],
        "success"
    );
    server.shutdown().await.expect("shuts down");
}
