//! rmcp's own client against the server over an in-process pipe, the stdio transport's framing.

use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{ElicitationAction, ErrorCode};
use rmcp::ServiceError;
use serde_json::{json, Value};
use toolwright::approval::{Approval, ApprovalRequest};
use toolwright_mcp::McpServer;

use crate::common::{self, call, duplex, envelope, registry, Counters, Elicitor};

fn server(counters: &Counters) -> McpServer {
    McpServer::new(registry(counters.clone()))
        .session_factory(|session| session.with_scopes(["refunds:write"]))
}

fn protocol_error(result: Result<rmcp::model::CallToolResult, ServiceError>) -> rmcp::ErrorData {
    match result {
        Err(ServiceError::McpError(error)) => error,
        other => panic!("expected a JSON-RPC error, got {other:?}"),
    }
}

#[tokio::test]
async fn initialize_advertises_tools_and_ping_answers() {
    let client = duplex(
        server(&Counters::default()),
        Elicitor::without_elicitation(),
    )
    .await;
    let info = client.peer_info().expect("the server answered initialize");
    assert!(info.capabilities.tools.is_some());
    assert_eq!(info.protocol_version.as_str(), "2025-11-25");
    common::ping(&client).await.expect("ping");
}

#[tokio::test]
async fn tools_list_is_the_registry_export_with_annotations_and_schemas() {
    let client = duplex(
        server(&Counters::default()),
        Elicitor::without_elicitation(),
    )
    .await;
    let tools = client.list_all_tools().await.expect("tools/list");
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(
        names,
        [
            "count",
            "echo",
            "get_order",
            "refund_order",
            "search_orders",
            "slow_report"
        ]
    );
    let search = &tools[4];
    let listed = serde_json::to_value(search).expect("a tool serializes");
    assert_eq!(listed["annotations"]["readOnlyHint"], true);
    assert_eq!(listed["title"], "Search orders");
    assert_eq!(listed["inputSchema"]["required"], json!(["query"]));
    assert!(listed["outputSchema"]["properties"]["data"].is_object());
}

#[tokio::test]
async fn a_tool_a_session_lacks_the_scopes_for_is_not_listed_and_unauthorized_as_in_process() {
    let registry = registry(Counters::default());
    let client = duplex(
        McpServer::new(registry.clone()),
        Elicitor::without_elicitation(),
    )
    .await;
    let tools = client.list_all_tools().await.expect("tools/list");
    assert!(tools.iter().all(|t| t.name != "refund_order"));
    let arguments = json!({"order_id": "A1001", "amount": 5.0});
    let result = client
        .call_tool(call("refund_order", arguments.clone()))
        .await
        .expect("a result, not a protocol error");
    assert_eq!(result.is_error, Some(true));
    let over_mcp = envelope(&result);
    assert_eq!(over_mcp["error_type"], "unauthorized", "{over_mcp}");
    assert!(
        over_mcp["message"]
            .as_str()
            .is_some_and(|m| m.contains("`refunds:write`")),
        "names the scope: {over_mcp}"
    );

    // The same call in process, in a session without the scope: the same classification.
    let in_process = registry
        .call_in(
            &toolwright::Session::new("conv-1"),
            toolwright::ToolCall::new("c1", "refund_order", arguments.to_string()),
        )
        .await;
    assert_eq!(
        in_process.to_model_json()["error_type"],
        over_mcp["error_type"]
    );
    assert_eq!(in_process.to_model_json()["message"], over_mcp["message"]);
}

#[tokio::test]
async fn tools_a_predicate_hides_from_the_session_are_not_listed_nor_callable() {
    let registry = common::builder(Counters::default())
        .visible_when("echo", |session| session.principal() == Some("vip"))
        .build()
        .unwrap();
    let client = duplex(
        McpServer::new(registry.clone()).session_factory(|session| session.with_principal("guest")),
        Elicitor::without_elicitation(),
    )
    .await;
    let tools = client.list_all_tools().await.expect("tools/list");
    assert!(tools.iter().all(|t| t.name != "echo"), "{tools:?}");
    let error = protocol_error(client.call_tool(call("echo", json!({"text": "hi"}))).await);
    assert_eq!(error.code, ErrorCode::INVALID_PARAMS);
    assert!(
        error.message.starts_with("Unknown tool: 'echo'"),
        "{}",
        error.message
    );
    assert!(!error.message.contains("echo,"), "{}", error.message);
    // In process, the same session's call is the same classification, listing the same tools.
    let guest = toolwright::Session::new("conv-1").with_principal("guest");
    let in_process = registry
        .call_in(
            &guest,
            toolwright::ToolCall::new("c1", "echo", r#"{"text":"hi"}"#),
        )
        .await
        .to_model_json();
    let data = error.data.unwrap_or_default();
    assert_eq!(in_process["error_type"], data["error_type"]);
    assert_eq!(in_process["available_tools"], data["available_tools"]);

    let vip = duplex(
        McpServer::new(
            common::builder(Counters::default())
                .visible_when("echo", |session| session.principal() == Some("vip"))
                .build()
                .unwrap(),
        )
        .session_factory(|session| session.with_principal("vip")),
        Elicitor::without_elicitation(),
    )
    .await;
    let tools = vip.list_all_tools().await.expect("tools/list");
    assert!(tools.iter().any(|t| t.name == "echo"));
}

#[tokio::test]
async fn a_change_of_the_registry_is_announced_and_listed() {
    let registry = common::registry(Counters::default());
    let elicitor = Elicitor::without_elicitation();
    let announced = Arc::clone(&elicitor.list_changed);
    let client = duplex(
        McpServer::new(registry.clone())
            .session_factory(|session| session.with_scopes(["refunds:write"])),
        elicitor,
    )
    .await;
    let info = client.peer_info().expect("initialized");
    assert_eq!(
        info.capabilities
            .tools
            .as_ref()
            .and_then(|t| t.list_changed),
        Some(true)
    );
    // One request first, so the server has seen `notifications/initialized`.
    client.list_all_tools().await.expect("tools/list");

    registry
        .change(|c| c.remove("echo"))
        .expect("echo is there");
    tokio::time::timeout(Duration::from_secs(10), announced.notified())
        .await
        .expect("notifications/tools/list_changed within 10 s");
    let tools = client.list_all_tools().await.expect("tools/list");
    assert!(tools.iter().all(|t| t.name != "echo"), "{tools:?}");
    let error = protocol_error(client.call_tool(call("echo", json!({"text": "hi"}))).await);
    assert_eq!(error.code, ErrorCode::INVALID_PARAMS);

    registry
        .change(|c| c.tool(common::Echo))
        .expect("echo comes back");
    tokio::time::timeout(Duration::from_secs(10), announced.notified())
        .await
        .expect("a second notification");
    let result = client
        .call_tool(call("echo", json!({"text": "hi"})))
        .await
        .expect("tools/call");
    assert_eq!(result.is_error, Some(false));
}

#[tokio::test]
async fn a_deferred_tool_is_listed_and_announced_once_the_session_searched_for_it() {
    let registry = common::builder(Counters::default())
        .deferred(["get_order", "echo"])
        .build()
        .unwrap();
    let elicitor = Elicitor::without_elicitation();
    let announced = Arc::clone(&elicitor.list_changed);
    let client = duplex(McpServer::new(registry), elicitor).await;
    let listed = |tools: &[rmcp::model::Tool]| -> Vec<String> {
        tools.iter().map(|t| t.name.to_string()).collect()
    };
    let tools = client.list_all_tools().await.expect("tools/list");
    assert!(
        listed(&tools).contains(&"search_tools".to_owned()),
        "{:?}",
        listed(&tools)
    );
    assert!(
        !listed(&tools).contains(&"get_order".to_owned()),
        "{:?}",
        listed(&tools)
    );

    // Called before it was found: a result the model reads, telling it to search.
    let early = client
        .call_tool(call("get_order", json!({"order_id": "A1001"})))
        .await
        .expect("tools/call");
    assert_eq!(early.is_error, Some(true));
    let early = envelope(&early);
    assert_eq!(early["error_type"], "unknown_tool");
    assert!(
        early["message"]
            .as_str()
            .unwrap()
            .contains("`search_tools`"),
        "{early}"
    );

    let search = client
        .call_tool(call("search_tools", json!({"query": "fetch one order"})))
        .await
        .expect("tools/call");
    assert_eq!(search.is_error, Some(false));
    assert_eq!(envelope(&search)["data"]["tools"][0]["name"], "get_order");
    tokio::time::timeout(Duration::from_secs(10), announced.notified())
        .await
        .expect("notifications/tools/list_changed after the search found a tool");
    let tools = client.list_all_tools().await.expect("tools/list");
    assert!(
        listed(&tools).contains(&"get_order".to_owned()),
        "{:?}",
        listed(&tools)
    );
    let order = client
        .call_tool(call("get_order", json!({"order_id": "A1001"})))
        .await
        .expect("tools/call");
    assert_eq!(order.is_error, Some(false), "{:?}", envelope(&order));
}

#[tokio::test]
async fn a_good_call_is_a_result_with_the_envelope_as_text_and_structured_content() {
    let client = duplex(
        server(&Counters::default()),
        Elicitor::without_elicitation(),
    )
    .await;
    let result = client
        .call_tool(call("get_order", json!({"order_id": "A1001"})))
        .await
        .expect("tools/call");
    assert_eq!(result.is_error, Some(false));
    let envelope = envelope(&result);
    assert_eq!(envelope["status"], "success");
    assert_eq!(envelope["data"]["id"], "A1001");
    let text = result.content[0]
        .as_text()
        .expect("text content")
        .text
        .clone();
    assert_eq!(
        serde_json::from_str::<Value>(&text).expect("the text is JSON"),
        envelope
    );
}

#[tokio::test]
async fn malformed_arguments_are_a_tool_error_result_with_every_violation() {
    let client = duplex(
        server(&Counters::default()),
        Elicitor::without_elicitation(),
    )
    .await;
    let result = client
        .call_tool(call("get_order", json!({"order_id": 42, "extra": true})))
        .await
        .expect("tools/call");
    assert_eq!(result.is_error, Some(true));
    let envelope = envelope(&result);
    assert_eq!(envelope["status"], "error");
    assert!(
        envelope["error_type"] == "schema_mismatch" || envelope["error_type"] == "unknown_argument"
    );
}

#[tokio::test]
async fn a_failing_tool_is_a_tool_error_result() {
    let client = duplex(
        server(&Counters::default()),
        Elicitor::without_elicitation(),
    )
    .await;
    let result = client
        .call_tool(call("get_order", json!({"order_id": "A9999"})))
        .await
        .expect("tools/call");
    assert_eq!(result.is_error, Some(true));
    assert_eq!(envelope(&result)["error_type"], "not_found");
}

#[tokio::test]
async fn an_unknown_tool_is_invalid_params_listing_the_available_tools() {
    let client = duplex(
        server(&Counters::default()),
        Elicitor::without_elicitation(),
    )
    .await;
    let error = protocol_error(client.call_tool(call("refund_everything", json!({}))).await);
    assert_eq!(error.code, ErrorCode::INVALID_PARAMS);
    assert!(error.message.contains("refund_everything"));
    assert!(error.message.contains("get_order"));
    let data = error.data.expect("data");
    assert_eq!(data["error_type"], "unknown_tool");
    assert_eq!(data["available_tools"].as_array().map(Vec::len), Some(6));
}

#[tokio::test]
async fn arguments_over_the_limit_are_refused_naming_the_limit() {
    let client = duplex(
        server(&Counters::default()).max_argument_bytes(1000),
        Elicitor::without_elicitation(),
    )
    .await;
    let error = protocol_error(
        client
            .call_tool(call("echo", json!({"text": "x".repeat(2000)})))
            .await,
    );
    assert_eq!(error.code, ErrorCode::INVALID_PARAMS);
    assert!(
        error.message.contains("limit of 1000 bytes"),
        "{}",
        error.message
    );
    // and the server keeps serving
    let ok = client
        .call_tool(call("echo", json!({"text": "short"})))
        .await
        .expect("tools/call");
    assert_eq!(envelope(&ok)["data"], 5);
}

#[tokio::test]
async fn cancelling_a_call_drops_the_tool_mid_way_and_sends_no_result() {
    let counters = Counters::default();
    let client = Arc::new(duplex(server(&counters), Elicitor::without_elicitation()).await);
    let caller = Arc::clone(&client);
    let slow = tokio::spawn(async move {
        caller
            .call_tool(call("slow_report", json!({"steps": 100})))
            .await
    });
    while Counters::get(&counters.started) == 0 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    // rmcp's client sends `notifications/cancelled` when the call's future is dropped.
    slow.abort();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let steps = Counters::get(&counters.steps);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        Counters::get(&counters.steps),
        steps,
        "the tool kept running"
    );
    assert!(steps < 100);
    assert_eq!(Counters::get(&counters.finished), 0);
    common::ping(&client)
        .await
        .expect("the server still serves");
}

#[tokio::test]
async fn a_client_that_disconnects_mid_call_stops_the_tool() {
    let counters = Counters::default();
    let client = duplex(server(&counters), Elicitor::without_elicitation()).await;
    let peer = client.peer().clone();
    tokio::spawn(async move {
        let _ = peer
            .call_tool(call("slow_report", json!({"steps": 400})))
            .await;
    });
    while Counters::get(&counters.started) == 0 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    drop(client.cancel().await);
    // rmcp lets in-flight handlers finish for up to 5 s after the connection ends (to send
    // their answers), then cancels them.
    tokio::time::sleep(Duration::from_millis(5500)).await;
    let steps = Counters::get(&counters.steps);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        Counters::get(&counters.steps),
        steps,
        "the tool kept running"
    );
    assert!(steps < 400);
    assert_eq!(Counters::get(&counters.finished), 0);
}

#[tokio::test]
async fn two_clients_never_share_grounded_ids() {
    let counters = Counters::default();
    let approve = Arc::new(|_: &ApprovalRequest<'_>| Approval::Approved);
    let make = || server(&counters).approver(Arc::clone(&approve));
    let first = duplex(make(), Elicitor::without_elicitation()).await;
    let second = duplex(make(), Elicitor::without_elicitation()).await;
    first
        .call_tool(call("search_orders", json!({"query": "ada"})))
        .await
        .expect("search");
    let refund = json!({"order_id": "A1001", "amount": 5.0});
    let theirs = second
        .call_tool(call("refund_order", refund.clone()))
        .await
        .expect("tools/call");
    assert_eq!(envelope(&theirs)["error_type"], "ungrounded_identifier");
    let mine = first
        .call_tool(call("refund_order", refund))
        .await
        .expect("tools/call");
    assert_eq!(
        envelope(&mine)["status"],
        "success",
        "{:?}",
        envelope(&mine)
    );
    assert_eq!(Counters::get(&counters.refunds), 1);
}

async fn refund_with(client: Elicitor, counters: &Counters) -> Value {
    let client = duplex(server(counters), client).await;
    client
        .call_tool(call("search_orders", json!({"query": "ada"})))
        .await
        .expect("search");
    let result = client
        .call_tool(call(
            "refund_order",
            json!({"order_id": "A1001", "amount": 25.0}),
        ))
        .await
        .expect("tools/call");
    envelope(&result)
}

#[tokio::test]
async fn an_accepted_elicitation_runs_the_call_once() {
    let counters = Counters::default();
    let elicitor = Elicitor::answering(ElicitationAction::Accept);
    let envelope = refund_with(elicitor.clone(), &counters).await;
    assert_eq!(envelope["status"], "success", "{envelope}");
    assert_eq!(Counters::get(&counters.refunds), 1);
    let asked = elicitor.asked();
    assert_eq!(asked.len(), 1);
    assert!(
        asked[0].contains("refund_order") && asked[0].contains("25"),
        "{asked:?}"
    );
}

#[tokio::test]
async fn a_declined_elicitation_is_approval_denied_and_nothing_runs() {
    let counters = Counters::default();
    let envelope = refund_with(Elicitor::answering(ElicitationAction::Decline), &counters).await;
    assert_eq!(envelope["error_type"], "approval_denied");
    assert_eq!(Counters::get(&counters.refunds), 0);
}

#[tokio::test]
async fn a_client_without_elicitation_is_refused_unless_the_application_approves() {
    let counters = Counters::default();
    let envelope = refund_with(Elicitor::without_elicitation(), &counters).await;
    assert_eq!(envelope["error_type"], "approval_denied");
    assert!(envelope["message"]
        .as_str()
        .is_some_and(|m| m.contains("elicitation")));

    let approved = duplex(
        server(&counters).approver(Arc::new(|_: &ApprovalRequest<'_>| Approval::Approved)),
        Elicitor::without_elicitation(),
    )
    .await;
    approved
        .call_tool(call("search_orders", json!({"query": "ada"})))
        .await
        .expect("search");
    let result = approved
        .call_tool(call(
            "refund_order",
            json!({"order_id": "A1001", "amount": 25.0}),
        ))
        .await
        .expect("tools/call");
    assert_eq!(common::envelope(&result)["status"], "success");
    assert_eq!(Counters::get(&counters.refunds), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_concurrent_calls_from_one_client_are_all_answered() {
    let client = Arc::new(
        duplex(
            server(&Counters::default()),
            Elicitor::without_elicitation(),
        )
        .await,
    );
    let calls = (0..1000).map(|i| {
        let client = Arc::clone(&client);
        tokio::spawn(async move {
            let arguments = if i % 2 == 0 {
                json!({"text": "x".repeat(i % 50)})
            } else {
                json!({"text": i})
            };
            client.call_tool(call("echo", arguments)).await
        })
    });
    let mut ok = 0;
    let mut errors = 0;
    for handle in calls {
        let result = handle.await.expect("joined").expect("answered");
        match result.is_error {
            Some(true) => errors += 1,
            _ => ok += 1,
        }
    }
    assert_eq!((ok, errors), (500, 500));
    common::ping(&client).await.expect("still serving");
}

#[tokio::test]
async fn garbage_on_the_pipe_is_answered_where_it_has_an_id_and_the_server_stays_up() {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

    let (server_io, client_io) = tokio::io::duplex(64 << 20);
    let (server_read, server_write) = tokio::io::split(server_io);
    let server = server(&Counters::default());
    tokio::spawn(async move {
        let _ = server.serve((server_read, server_write)).await;
    });
    let (read, mut write) = tokio::io::split(client_io);
    let mut lines = BufReader::new(read).lines();
    let huge = format!(
        r#"{{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"{}"}}}}}}"#,
        "x".repeat(10 << 20)
    );
    let sent = [
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}"#.to_owned(),
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_owned(),
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/ca"#.to_owned(), // truncated: no id to answer
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":7}}"#.to_owned(),
        r#"{"jsonrpc":"2.0","id":4,"method":"no/such/method"}"#.to_owned(),
        r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":5}}"#.to_owned(),
        huge,
        r#"{"jsonrpc":"2.0","id":6,"method":"ping"}"#.to_owned(),
    ];
    for line in sent {
        write.write_all(line.as_bytes()).await.expect("write");
        write.write_all(b"\n").await.expect("write");
    }
    let mut answered = std::collections::BTreeMap::new();
    while answered.len() < 6 {
        let line = tokio::time::timeout(Duration::from_secs(10), lines.next_line())
            .await
            .expect("an answer in time")
            .expect("read")
            .expect("the server is up");
        let message: Value = serde_json::from_str(&line).expect("JSON");
        answered.insert(message["id"].as_i64().unwrap_or(-1), message);
    }
    assert!(answered[&1]["result"].is_object());
    assert!(answered[&3]["error"]["code"].is_i64());
    assert_eq!(answered[&4]["error"]["code"], -32601);
    assert_eq!(answered[&5]["error"]["code"], -32602);
    assert!(answered[&5]["error"]["message"]
        .as_str()
        .is_some_and(|m| m.contains("limit")));
    assert_eq!(answered[&6]["result"], json!({}));
    assert_eq!(
        answered[&7]["error"]["code"], -32602,
        "not -32601: {}",
        answered[&7]
    );
    assert!(answered[&7]["error"]["message"]
        .as_str()
        .is_some_and(|m| m.contains("`arguments`") && m.contains("a number (5)")));
}
