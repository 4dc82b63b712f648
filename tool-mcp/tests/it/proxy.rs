//! The proxy in front of an MCP server that misbehaves on purpose: a hand-written JSON-RPC
//! server over an in-process pipe that hangs, fails, answers malformed results, errors once
//! and then succeeds. Every call gets a classified outcome, bad arguments never reach it, a
//! side-effecting call carries one idempotency key and runs once, and the proxy keeps serving.
#![cfg(feature = "proxy")]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream};
use toolwright::prelude::*;
use toolwright::Registry;
use toolwright_mcp::proxy::{Upstream, IDEMPOTENCY_META_KEY};

/// Every `tools/call` the upstream received: (tool, arguments, `_meta`).
type Received = Arc<Mutex<Vec<(String, Value, Value)>>>;

fn tools() -> Value {
    let text = json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"], "additionalProperties": false});
    let empty = json!({"type": "object", "properties": {}});
    let amount = json!({"type": "object", "properties": {"amount": {"type": "integer", "minimum": 1}}, "required": ["amount"]});
    json!([
        {"name": "echo", "description": "Echo the text.", "inputSchema": text, "annotations": {"readOnlyHint": true}},
        {"name": "hang", "description": "Never answers.", "inputSchema": empty, "annotations": {"readOnlyHint": true}},
        {"name": "fail", "description": "Always fails.", "inputSchema": empty, "annotations": {"idempotentHint": true}},
        {"name": "malformed", "description": "Answers nonsense.", "inputSchema": empty, "annotations": {"readOnlyHint": true}},
        {"name": "flaky", "description": "Fails once, then works.", "inputSchema": empty, "annotations": {"idempotentHint": true}},
        {"name": "pay", "description": "Takes a payment.", "inputSchema": amount},
        {"name": "bad.name!", "description": "A name providers refuse.", "inputSchema": empty}
    ])
}

/// The misbehaving server: one JSON-RPC message per line.
async fn serve(io: DuplexStream, received: Received) {
    let (read, mut write) = tokio::io::split(io);
    let mut lines = BufReader::new(read).lines();
    let mut flaky_failed = false;
    while let Ok(Some(line)) = lines.next_line().await {
        let Ok(message) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        let id = message["id"].clone();
        let params = &message["params"];
        let answer = match message["method"].as_str().unwrap_or_default() {
            "initialize" => json!({"jsonrpc": "2.0", "id": id, "result": {
                "protocolVersion": params["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "misbehaving", "version": "0"}
            }}),
            "tools/list" => {
                json!({"jsonrpc": "2.0", "id": id, "result": {"tools": tools()}})
            }
            "ping" => json!({"jsonrpc": "2.0", "id": id, "result": {}}),
            "tools/call" => {
                let name = params["name"].as_str().unwrap_or_default().to_owned();
                let arguments = params["arguments"].clone();
                received.lock().unwrap().push((
                    name.clone(),
                    arguments.clone(),
                    params["_meta"].clone(),
                ));
                let ok = |content: Value, structured: Option<Value>| {
                    let mut result = json!({"content": content, "isError": false});
                    if let Some(s) = structured {
                        result["structuredContent"] = s;
                    }
                    json!({"jsonrpc": "2.0", "id": id, "result": result})
                };
                match name.as_str() {
                    "echo" => ok(
                        json!([{"type": "text", "text": arguments.to_string()}]),
                        Some(arguments),
                    ),
                    "hang" => continue,
                    "fail" => json!({"jsonrpc": "2.0", "id": id, "result": {
                        "content": [{"type": "text", "text": "card declined"}], "isError": true}}),
                    "malformed" => {
                        json!({"jsonrpc": "2.0", "id": id, "result": {"content": "not a list"}})
                    }
                    "flaky" if !flaky_failed => {
                        flaky_failed = true;
                        json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32603, "message": "database restarting"}})
                    }
                    "flaky" => ok(json!([{"type": "text", "text": "{\"ok\":true}"}]), None),
                    "pay" => ok(json!([{"type": "text", "text": "paid"}]), None),
                    _ => {
                        json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32602, "message": "no such tool"}})
                    }
                }
            }
            _ if id.is_null() => continue, // a notification
            _ => {
                json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "method not found"}})
            }
        };
        let mut text = answer.to_string();
        text.push('\n');
        if write.write_all(text.as_bytes()).await.is_err() {
            break;
        }
    }
}

async fn proxy() -> (Registry, Received, Vec<String>) {
    let (server_io, client_io) = tokio::io::duplex(1 << 20);
    let received = Received::default();
    tokio::spawn(serve(server_io, Arc::clone(&received)));
    let (read, write) = tokio::io::split(client_io);
    let upstream = Upstream::connect((read, write))
        .await
        .expect("the upstream initializes")
        .timeout(Duration::from_millis(300));
    let proxied = upstream.tools();
    let refused = proxied.refused.iter().map(|(n, _)| n.clone()).collect();
    let registry = proxied
        .tools
        .into_iter()
        .fold(Registry::builder(), |b, tool| b.dynamic_tool(tool))
        .build()
        .expect("the proxied tools build");
    (registry, received, refused)
}

fn calls_of(received: &Received, tool: &str) -> usize {
    received
        .lock()
        .unwrap()
        .iter()
        .filter(|(name, ..)| name == tool)
        .count()
}

#[tokio::test]
async fn every_upstream_tool_is_proxied_with_its_effect_and_a_bad_name_is_refused() {
    let (registry, _, refused) = proxy().await;
    assert_eq!(
        registry.names(),
        ["echo", "fail", "flaky", "hang", "malformed", "pay"]
    );
    assert_eq!(refused, ["bad.name!"]);
    assert!(registry.spec("echo").unwrap().read_only());
    assert!(registry.spec("fail").unwrap().idempotent());
    assert!(!registry.spec("pay").unwrap().idempotent());
}

#[tokio::test]
async fn arguments_are_validated_before_they_reach_the_upstream() {
    let (registry, received, _) = proxy().await;
    let outcome = registry
        .call(ToolCall::new("c1", "echo", r#"{"text":5,"colour":"red"}"#))
        .await;
    assert_eq!(outcome.error_kind(), Some(ErrorKind::SchemaMismatch));
    let envelope = outcome.to_model_json();
    assert_eq!(
        envelope["errors"].as_array().unwrap().len(),
        2,
        "{envelope}"
    );
    assert_eq!(calls_of(&received, "echo"), 0);
    let outcome = registry
        .call(ToolCall::new("c2", "echo", r#"{"text":"hi"}"#))
        .await;
    assert_eq!(outcome.status(), Status::Success);
    assert_eq!(outcome.to_model_json()["data"], json!({"text": "hi"}));
}

#[tokio::test]
async fn a_hang_a_failure_and_a_malformed_answer_are_classified_and_the_proxy_keeps_serving() {
    let (registry, received, _) = proxy().await;
    let hang = registry.call(ToolCall::new("c1", "hang", "{}")).await;
    assert_eq!(hang.error_kind(), Some(ErrorKind::Timeout));

    let fail = registry.call(ToolCall::new("c2", "fail", "{}")).await;
    assert_eq!(fail.error_kind(), Some(ErrorKind::BadRequest));
    assert!(fail.to_model_string().contains("card declined"));
    assert_eq!(calls_of(&received, "fail"), 1, "a refusal is not retried");

    let malformed = registry.call(ToolCall::new("c3", "malformed", "{}")).await;
    assert!(
        matches!(
            malformed.error_kind(),
            Some(ErrorKind::InvalidResult | ErrorKind::Timeout | ErrorKind::Unavailable)
        ),
        "{}",
        malformed.to_model_string()
    );

    let echo = registry
        .call(ToolCall::new("c4", "echo", r#"{"text":"still here"}"#))
        .await;
    assert_eq!(echo.status(), Status::Success, "{}", echo.to_model_string());
}

#[tokio::test]
async fn a_transient_upstream_error_is_retried_for_an_idempotent_tool() {
    let (registry, received, _) = proxy().await;
    let outcome = registry.call(ToolCall::new("c1", "flaky", "{}")).await;
    assert_eq!(
        outcome.status(),
        Status::Success,
        "{}",
        outcome.to_model_string()
    );
    assert_eq!(outcome.attempts(), 2);
    assert_eq!(outcome.to_model_json()["data"], json!({"ok": true}));
    assert_eq!(calls_of(&received, "flaky"), 2);
}

#[tokio::test]
async fn a_side_effecting_call_carries_one_key_and_runs_once() {
    let (registry, received, _) = proxy().await;
    let session = Session::new("conv-1");
    let pay = || ToolCall::new("call-9", "pay", r#"{"amount":5}"#);
    let first = registry.call_in(&session, pay()).await;
    assert_eq!(
        first.status(),
        Status::Success,
        "{}",
        first.to_model_string()
    );
    let again = registry.call_in(&session, pay()).await;
    assert_eq!(again.status(), Status::Success);
    assert_eq!(calls_of(&received, "pay"), 1, "the repeat is replayed");
    let meta = received.lock().unwrap()[0].2.clone();
    let key = meta[IDEMPOTENCY_META_KEY]
        .as_str()
        .expect("the key is sent");
    assert!(!key.is_empty());
    let refused = registry
        .call_in(&session, ToolCall::new("call-10", "pay", r#"{"amount":0}"#))
        .await;
    assert_eq!(refused.error_kind(), Some(ErrorKind::SchemaMismatch));
    assert_eq!(calls_of(&received, "pay"), 1);
}

// ---------------------------------------------------------------------------------------------
// A scripted upstream: its tool list can change, its answers can be huge or held back, and the
// test can push any line to the proxy (a notification, a held-back answer).

/// The scripted upstream's state, shared with the test.
#[derive(Default)]
struct Script {
    /// What `tools/list` answers.
    tools: Mutex<Value>,
    /// Every `tools/call`: (tool, arguments, JSON-RPC id).
    calls: Mutex<Vec<(String, Value, Value)>>,
    /// How many bytes of text `big` and `big_id_last` answer with.
    big: Mutex<usize>,
}

impl Script {
    fn calls_of(&self, tool: &str) -> usize {
        self.calls
            .lock()
            .unwrap()
            .iter()
            .filter(|(name, ..)| name == tool)
            .count()
    }

    fn id_of_call(&self, tool: &str) -> Option<Value> {
        self.calls
            .lock()
            .unwrap()
            .iter()
            .find(|(name, ..)| name == tool)
            .map(|(_, _, id)| id.clone())
    }
}

fn scripted_tools() -> Value {
    let empty = json!({"type": "object", "properties": {}});
    let amount = json!({"type": "object", "properties": {"amount": {"type": "integer", "minimum": 1}}, "required": ["amount"]});
    let text =
        json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]});
    json!([
        {"name": "echo", "inputSchema": text, "annotations": {"readOnlyHint": true}},
        {"name": "big", "inputSchema": empty, "annotations": {"readOnlyHint": true}},
        {"name": "big_id_last", "inputSchema": empty, "annotations": {"idempotentHint": true}},
        {"name": "slow", "inputSchema": empty, "annotations": {"idempotentHint": true}},
        {"name": "pay", "inputSchema": amount}
    ])
}

async fn serve_scripted(
    io: DuplexStream,
    script: Arc<Script>,
    mut push: tokio::sync::mpsc::UnboundedReceiver<String>,
) {
    let (read, mut write) = tokio::io::split(io);
    let mut lines = BufReader::new(read).lines();
    loop {
        let line = tokio::select! {
            line = lines.next_line() => match line {
                Ok(Some(line)) => line,
                _ => break,
            },
            Some(pushed) = push.recv() => {
                if write.write_all(format!("{pushed}\n").as_bytes()).await.is_err() {
                    break;
                }
                continue;
            }
        };
        let Ok(message) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        let id = message["id"].clone();
        let params = &message["params"];
        let text = match message["method"].as_str().unwrap_or_default() {
            "initialize" => json!({"jsonrpc": "2.0", "id": id, "result": {
                "protocolVersion": params["protocolVersion"],
                "capabilities": {"tools": {"listChanged": true}},
                "serverInfo": {"name": "scripted", "version": "0"}
            }})
            .to_string(),
            "tools/list" => {
                let tools = script.tools.lock().unwrap().clone();
                json!({"jsonrpc": "2.0", "id": id, "result": {"tools": tools}}).to_string()
            }
            "ping" => json!({"jsonrpc": "2.0", "id": id, "result": {}}).to_string(),
            "tools/call" => {
                let name = params["name"].as_str().unwrap_or_default().to_owned();
                let arguments = params["arguments"].clone();
                script
                    .calls
                    .lock()
                    .unwrap()
                    .push((name.clone(), arguments.clone(), id.clone()));
                let big = *script.big.lock().unwrap();
                match name.as_str() {
                    "slow" => continue,
                    // The id first (serde_json writes keys in order), then the huge result.
                    "big" => json!({"jsonrpc": "2.0", "id": id, "result": {
                        "content": [{"type": "text", "text": "x".repeat(big)}]}})
                    .to_string(),
                    // The huge result first, the id last.
                    "big_id_last" => format!(
                        r#"{{"jsonrpc":"2.0","result":{{"content":[{{"type":"text","text":"{}"}}]}},"id":{id}}}"#,
                        "y".repeat(big)
                    ),
                    _ => json!({"jsonrpc": "2.0", "id": id, "result": {
                        "content": [{"type": "text", "text": format!("{name} {arguments}")}]}})
                    .to_string(),
                }
            }
            _ if id.is_null() => continue, // a notification
            _ => json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "method not found"}})
                .to_string(),
        };
        if write
            .write_all(format!("{text}\n").as_bytes())
            .await
            .is_err()
        {
            break;
        }
    }
}

/// A scripted upstream and the sender that pushes lines to the proxy, with the pipe's client
/// end for the proxy.
fn scripted(
    tools: Value,
) -> (
    Arc<Script>,
    tokio::sync::mpsc::UnboundedSender<String>,
    DuplexStream,
) {
    let (server_io, client_io) = tokio::io::duplex(1 << 20);
    let script = Arc::new(Script::default());
    *script.tools.lock().unwrap() = tools;
    let (push, pushed) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(serve_scripted(server_io, Arc::clone(&script), pushed));
    (script, push, client_io)
}

fn registry_of(upstream: &Upstream) -> Registry {
    upstream
        .tools()
        .tools
        .into_iter()
        .fold(Registry::builder(), |b, tool| b.dynamic_tool(tool))
        .build()
        .expect("the proxied tools build")
}

#[tokio::test]
async fn an_answer_over_the_default_limit_is_invalid_result_at_once_and_the_upstream_is_asked_once()
{
    let (script, _push, io) = scripted(scripted_tools());
    *script.big.lock().unwrap() = 17 << 20; // over the 16 MiB default
    let (read, write) = tokio::io::split(io);
    let upstream = Upstream::connect_io(read, write)
        .await
        .expect("the upstream initializes")
        .timeout(Duration::from_secs(5));
    let registry = registry_of(&upstream);
    for tool in ["big", "big_id_last"] {
        let outcome = registry.call(ToolCall::new("c1", tool, "{}")).await;
        assert_eq!(
            outcome.error_kind(),
            Some(ErrorKind::InvalidResult),
            "{tool}: {}",
            outcome.to_model_string()
        );
        assert!(
            outcome.to_model_string().contains("16 MiB"),
            "{}",
            outcome.to_model_string()
        );
        assert_eq!(outcome.attempts(), 1, "{tool}: not retried");
        assert_eq!(
            script.calls_of(tool),
            1,
            "{tool}: the upstream is asked once"
        );
    }
    let echo = registry
        .call(ToolCall::new("c2", "echo", r#"{"text":"after"}"#))
        .await;
    assert_eq!(echo.status(), Status::Success, "{}", echo.to_model_string());
}

#[tokio::test]
async fn a_name_listed_twice_is_refused_in_every_copy_and_the_other_tools_are_served() {
    let mut tools = scripted_tools();
    let empty = json!({"type": "object", "properties": {}});
    let list = tools.as_array_mut().unwrap();
    list.push(json!({"name": "pay", "description": "Another pay.", "inputSchema": empty}));
    let (script, _push, io) = scripted(tools);
    let (read, write) = tokio::io::split(io);
    let upstream = Upstream::connect((read, write))
        .await
        .expect("the upstream initializes")
        .timeout(Duration::from_secs(5));
    let proxied = upstream.tools();
    let refused: Vec<_> = proxied
        .refused
        .iter()
        .map(|(name, why)| (name.clone(), why.to_string()))
        .collect();
    assert_eq!(refused.len(), 2, "{refused:?}");
    for (name, why) in &refused {
        assert_eq!(name, "pay");
        assert!(why.contains("2 times"), "{why}");
    }
    // The module docs' fold.
    let registry = proxied
        .tools
        .into_iter()
        .fold(Registry::builder(), |b, tool| b.dynamic_tool(tool))
        .build()
        .expect("the other tools build");
    assert!(registry.spec("pay").is_none());
    let echo = registry
        .call(ToolCall::new("c1", "echo", r#"{"text":"hi"}"#))
        .await;
    assert_eq!(echo.status(), Status::Success, "{}", echo.to_model_string());
    assert_eq!(script.calls_of("pay"), 0);
}

#[tokio::test]
async fn a_tool_the_upstream_changes_is_refused_and_a_call_in_flight_gets_its_own_answer() {
    let (script, push, io) = scripted(scripted_tools());
    let (read, write) = tokio::io::split(io);
    let upstream = Upstream::connect((read, write))
        .await
        .expect("the upstream initializes")
        .timeout(Duration::from_secs(5));
    let registry = Arc::new(registry_of(&upstream));

    // A call whose answer the upstream holds back.
    let in_flight = tokio::spawn({
        let registry = Arc::clone(&registry);
        async move { registry.call(ToolCall::new("c1", "slow", "{}")).await }
    });
    let mut id = None;
    for _ in 0..500 {
        id = script.id_of_call("slow");
        if id.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let id = id.expect("the slow call reaches the upstream");

    // During it, `pay` gets another schema, `big` goes away, `echo` stays; the upstream says
    // so, then answers the held-back call.
    let mut tools = scripted_tools();
    let list = tools.as_array_mut().unwrap();
    list.retain(|t| t["name"] != "big");
    for tool in list.iter_mut() {
        if tool["name"] == "pay" {
            tool["inputSchema"] = json!({"type": "object", "properties": {"cents": {"type": "integer"}}, "required": ["cents"]});
        }
    }
    *script.tools.lock().unwrap() = tools;
    push.send(json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}).to_string())
        .unwrap();
    push.send(
        json!({"jsonrpc": "2.0", "id": id, "result": {"content": [{"type": "text", "text": "late"}]}})
            .to_string(),
    )
    .unwrap();

    let answered = in_flight.await.unwrap();
    assert_eq!(
        answered.status(),
        Status::Success,
        "{}",
        answered.to_model_string()
    );
    assert_eq!(answered.to_model_json()["data"], json!("late"));

    for tool in ["pay", "big"] {
        let args = if tool == "pay" {
            r#"{"amount":5}"#
        } else {
            "{}"
        };
        let refused = registry.call(ToolCall::new("c2", tool, args)).await;
        assert_eq!(
            refused.error_kind(),
            Some(ErrorKind::NotFound),
            "{tool}: {}",
            refused.to_model_string()
        );
        assert!(
            refused.to_model_string().contains("changed"),
            "{}",
            refused.to_model_string()
        );
        assert_eq!(refused.attempts(), 1);
        assert_eq!(
            script.calls_of(tool),
            0,
            "{tool} never reaches the upstream"
        );
    }
    let echo = registry
        .call(ToolCall::new("c3", "echo", r#"{"text":"unchanged"}"#))
        .await;
    assert_eq!(echo.status(), Status::Success, "{}", echo.to_model_string());
}

#[tokio::test]
async fn a_configured_limit_refuses_a_bigger_answer_and_passes_a_smaller_one() {
    let (script, _push, io) = scripted(scripted_tools());
    let (read, write) = tokio::io::split(io);
    let upstream = Upstream::builder()
        .max_answer_bytes(64 * 1024)
        .connect_io(read, write)
        .await
        .expect("the upstream initializes")
        .timeout(Duration::from_secs(5));
    let registry = registry_of(&upstream);

    *script.big.lock().unwrap() = 100 * 1024;
    for tool in ["big", "big_id_last"] {
        let outcome = registry.call(ToolCall::new("c1", tool, "{}")).await;
        assert_eq!(
            outcome.error_kind(),
            Some(ErrorKind::InvalidResult),
            "{tool}: {}",
            outcome.to_model_string()
        );
        assert!(outcome.to_model_string().contains("64 KiB"));
        assert!(!outcome.retryable());
        assert_eq!(
            script.calls_of(tool),
            1,
            "{tool}: the upstream is asked once"
        );
    }

    *script.big.lock().unwrap() = 60 * 1024;
    let outcome = registry.call(ToolCall::new("c2", "big", "{}")).await;
    assert_eq!(
        outcome.status(),
        Status::Success,
        "{}",
        outcome.to_model_string()
    );
    assert_eq!(
        outcome.to_model_json()["data"].as_str().map(str::len),
        Some(60 * 1024)
    );
}

/// Held: an upstream that sends progress for a call without end, never answering, does not keep
/// the call alive past its timeout: `timeout`, and the proxy keeps serving. (The `slow` tool is
/// idempotent, so its attempts are retried; each ends at its own timeout.)
#[tokio::test]
async fn endless_upstream_progress_ends_in_timeout() {
    let (script, push, io) = scripted(scripted_tools());
    let (read, write) = tokio::io::split(io);
    let upstream = Upstream::connect_io(read, write)
        .await
        .expect("the upstream initializes")
        .timeout(Duration::from_millis(300));
    let registry = Arc::new(registry_of(&upstream));
    let call = tokio::spawn({
        let registry = Arc::clone(&registry);
        async move { registry.call(ToolCall::new("c1", "slow", "{}")).await }
    });
    // Progress for every attempt of the call, every 10 ms, until it ends.
    let chatter = tokio::spawn(async move {
        for step in 0u64.. {
            let note = json!({"jsonrpc": "2.0", "method": "notifications/progress",
                "params": {"progressToken": step % 7, "progress": step}});
            if push.send(note.to_string()).is_err() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    });
    let outcome = tokio::time::timeout(Duration::from_secs(30), call)
        .await
        .expect("the call ends")
        .unwrap();
    chatter.abort();
    assert_eq!(
        outcome.error_kind(),
        Some(ErrorKind::Timeout),
        "{}",
        outcome.to_model_string()
    );
    assert!(script.calls_of("slow") >= 1);
    let echo = registry
        .call(ToolCall::new("c2", "echo", r#"{"text":"still here"}"#))
        .await;
    assert!(echo.is_ok(), "{}", echo.to_model_string());
}
