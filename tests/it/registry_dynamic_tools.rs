//! Tools defined at run time: a runtime twin of a compiled tool, given the same calls, answers
//! with the same envelopes (valid, unknown argument, type error, several violations, invalid
//! JSON, timeout, idempotency replay, approval pending, scopes) and exports the same way to
//! every provider; schemas that are not JSON Schema or that a provider cannot express are build
//! errors naming the tool and the path.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use toolwright::approval::ApprovalQueue;
use toolwright::prelude::*;
use toolwright::providers::Provider;
use toolwright::{BuildError, DynamicTool, Effect};

/// Look up orders by customer.
#[tool(read_only, timeout_ms = 100)]
async fn find_orders(
    /// The customer.
    customer: String,
    /// How many orders.
    limit: u32,
) -> Result<Vec<String>, ToolError> {
    if customer == "slow" {
        tokio::time::sleep(Duration::from_secs(60)).await;
    }
    Ok((0..limit.min(3))
        .map(|i| format!("{customer}-{i}"))
        .collect())
}

/// The compiled tool's schema, as its registry exports it.
fn compiled_schema() -> Value {
    let registry = Registry::builder().tool(FindOrders).build().unwrap();
    registry.spec("find_orders").unwrap().input_schema().clone()
}

fn find_orders_twin(schema: Value) -> DynamicTool {
    DynamicTool::builder("find_orders")
        .description("Look up orders by customer.")
        .input_schema(schema)
        .handler(|args, _ctx| async move {
            let customer = args["customer"].as_str().unwrap_or_default().to_owned();
            if customer == "slow" {
                tokio::time::sleep(Duration::from_secs(60)).await;
            }
            let limit = args["limit"].as_u64().unwrap_or_default().min(3);
            let orders: Vec<String> = (0..limit).map(|i| format!("{customer}-{i}")).collect();
            Ok(json!(orders))
        })
        .effect(Effect::ReadOnly)
        .timeout(Duration::from_millis(100))
        .build()
        .unwrap()
}

fn pair() -> (Registry, Registry) {
    let compiled = Registry::builder().tool(FindOrders).build().unwrap();
    let runtime = Registry::builder()
        .dynamic_tool(find_orders_twin(compiled_schema()))
        .build()
        .unwrap();
    (compiled, runtime)
}

async fn both(arguments: &str) -> (Value, Value) {
    let (compiled, runtime) = pair();
    let call = || ToolCall::new("c1", "find_orders", arguments);
    let a = compiled.call(call()).await.to_model_json();
    let b = runtime.call(call()).await.to_model_json();
    (a, b)
}

#[tokio::test]
async fn the_twin_answers_every_kind_of_call_with_the_same_envelope() {
    let cases = [
        (r#"{"customer":"ada","limit":2}"#, None),
        (
            r#"{"customer":"ada","limit":2,"colour":"red"}"#,
            Some("unknown_argument"),
        ),
        (
            r#"{"customer":"ada","limit":"two"}"#,
            Some("schema_mismatch"),
        ),
        (
            r#"{"customer":7,"limit":-1,"extra":true}"#,
            Some("schema_mismatch"),
        ),
        (r#"{"limit":1}"#, Some("schema_mismatch")),
        (r#"{"customer":"ada","#, Some("invalid_json")),
        (r#"["ada",2]"#, Some("schema_mismatch")),
        ("", Some("invalid_json")),
    ];
    for (arguments, kind) in cases {
        let (compiled, runtime) = both(arguments).await;
        assert_eq!(compiled, runtime, "arguments {arguments}");
        assert_eq!(
            runtime["error_type"].as_str(),
            kind,
            "arguments {arguments}: {runtime}"
        );
    }
}

#[tokio::test]
async fn every_violation_is_reported_with_its_path() {
    let (_, runtime) = both(r#"{"customer":7,"limit":-1,"extra":true}"#).await;
    let paths: Vec<&str> = runtime["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["path"].as_str().unwrap())
        .collect();
    for path in ["/customer", "/limit", "/extra"] {
        assert!(paths.contains(&path), "{path} missing from {runtime}");
    }
}

#[tokio::test(start_paused = true)]
async fn a_hanging_handler_times_out_like_the_compiled_tool() {
    let (compiled, runtime) = both(r#"{"customer":"slow","limit":1}"#).await;
    assert_eq!(runtime["error_type"], "timeout", "{runtime}");
    assert_eq!(compiled, runtime);
}

#[tokio::test]
async fn a_hand_written_schema_validates_every_violation() {
    let tool = DynamicTool::builder("set_priority")
        .description("Set a ticket's priority.")
        .input_schema(json!({
            "type": "object",
            "properties": {
                "ticket": {"type": "string", "pattern": "^T-[0-9]+$"},
                "priority": {"type": "integer", "minimum": 1, "maximum": 5}
            },
            "required": ["ticket", "priority"],
            "additionalProperties": false
        }))
        .handler(|args, _| async move { Ok(json!({"set": args["priority"]})) })
        .effect(Effect::Idempotent)
        .build()
        .unwrap();
    let registry = Registry::builder().dynamic_tool(tool).build().unwrap();
    let bad = registry
        .call(ToolCall::new(
            "c1",
            "set_priority",
            r#"{"ticket":"X-1","priority":9}"#,
        ))
        .await;
    assert_eq!(bad.error_kind(), Some(ErrorKind::SchemaMismatch));
    let paths: Vec<&str> = bad.violations().iter().map(|v| v.path.as_str()).collect();
    assert_eq!(paths, ["/ticket", "/priority"], "{:?}", bad.violations());
    assert!(
        bad.violations()[1].message.contains("priority")
            && bad.violations()[1].message.contains('9'),
        "{:?}",
        bad.violations()[1]
    );
    let good = registry
        .call(ToolCall::new(
            "c2",
            "set_priority",
            r#"{"ticket":"T-12","priority":2}"#,
        ))
        .await;
    assert!(good.is_ok(), "{}", good.to_model_json());
    assert_eq!(good.to_model_json()["data"], json!({"set": 2}));
}

/// Refund an order.
#[tool]
async fn refund(
    key: IdempotencyKey,
    order: String,
    runs: State<Runs>,
) -> Result<String, ToolError> {
    runs.0 .0.fetch_add(1, Ordering::SeqCst);
    Ok(format!("refunded {order} under {key}"))
}

#[derive(Clone, Default)]
struct Runs(Arc<AtomicU32>);

fn refund_twin(runs: Runs) -> DynamicTool {
    DynamicTool::builder("refund")
        .description("Refund an order.")
        .input_schema(json!({
            "type": "object",
            "properties": {"order": {"type": "string"}},
            "required": ["order"],
            "additionalProperties": false
        }))
        .handler(move |args, ctx| {
            let runs = runs.clone();
            async move {
                runs.0.fetch_add(1, Ordering::SeqCst);
                let order = args["order"].as_str().unwrap_or_default().to_owned();
                Ok(json!(format!(
                    "refunded {order} under {}",
                    ctx.idempotency_key()
                )))
            }
        })
        .build()
        .unwrap()
}

#[tokio::test]
async fn a_side_effecting_twin_runs_once_per_key_and_replays() {
    let compiled_runs = Runs::default();
    let compiled = Registry::builder()
        .tool(Refund)
        .state(compiled_runs.clone())
        .build()
        .unwrap();
    let runtime_runs = Runs::default();
    let runtime = Registry::builder()
        .dynamic_tool(refund_twin(runtime_runs.clone()))
        .build()
        .unwrap();
    let call = || ToolCall::new("call_9", "refund", r#"{"order":"A-1"}"#);
    let session = Session::new("conv-refund");
    for _ in 0..3 {
        let a = compiled.call_in(&session, call()).await.to_model_json();
        let b = runtime.call_in(&session, call()).await.to_model_json();
        assert_eq!(a, b);
    }
    let replay = runtime.call_in(&session, call()).await;
    assert!(replay.is_replayed(), "{}", replay.to_model_json());
    assert_eq!(compiled_runs.0.load(Ordering::SeqCst), 1);
    assert_eq!(runtime_runs.0.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn an_approval_twin_is_pending_with_the_same_ticket() {
    let schema = json!({
        "type": "object",
        "properties": {"order": {"type": "string"}},
        "required": ["order"],
        "additionalProperties": false
    });
    let runs = Runs::default();
    let runtime = Registry::builder()
        .dynamic_tool(
            DynamicTool::builder("cancel_order")
                .description("Cancel an order.")
                .input_schema(schema)
                .handler(move |_, _| {
                    let runs = runs.clone();
                    async move {
                        runs.0.fetch_add(1, Ordering::SeqCst);
                        Ok(json!("cancelled"))
                    }
                })
                .requires_approval()
                .build()
                .unwrap(),
        )
        .build()
        .unwrap();
    let call = ToolCall::new("c1", "cancel_order", r#"{"order":"A-1"}"#);
    let unattended = runtime.call(call.clone()).await;
    assert_eq!(unattended.error_kind(), Some(ErrorKind::ApprovalDenied));
    let queue = Arc::new(ApprovalQueue::new());
    let session = Session::new("conv-cancel").with_approver(Arc::clone(&queue));
    let pending = runtime.call_in(&session, call.clone()).await;
    assert_eq!(pending.status(), Status::Pending);
    let ticket = pending.to_model_json()["data"]["ticket"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(queue.approve(&ticket));
    let approved = runtime.call_in(&session, call).await;
    assert!(approved.is_ok(), "{}", approved.to_model_json());
}

#[tokio::test]
async fn scopes_guard_a_runtime_tool_before_its_arguments() {
    let tool = DynamicTool::builder("delete_user")
        .description("Delete a user.")
        .input_schema(json!({"type": "object", "properties": {}, "additionalProperties": false}))
        .handler(|_, _| async { Ok(json!("deleted")) })
        .scopes(["admin"])
        .build()
        .unwrap();
    let registry = Registry::builder().dynamic_tool(tool).build().unwrap();
    let call = || ToolCall::new("c1", "delete_user", "not json");
    let refused = registry.call_in(&Session::new("s"), call()).await;
    assert_eq!(refused.error_kind(), Some(ErrorKind::Unauthorized));
    let admin = Session::new("s").with_scopes(["admin"]);
    let read = registry.call_in(&admin, call()).await;
    assert_eq!(read.error_kind(), Some(ErrorKind::InvalidJson));
}

#[test]
fn compiled_and_runtime_tools_mix_and_export_alike_to_every_provider() {
    let compiled = Registry::builder().tool(FindOrders).build().unwrap();
    // The one thing a hand-written twin says differently: its result schema, unless given.
    let declared = compiled
        .spec("find_orders")
        .unwrap()
        .output_schema()
        .clone();
    let without_output = Registry::builder()
        .dynamic_tool(find_orders_twin(compiled_schema()))
        .build()
        .unwrap();
    let mcp = without_output.export(Provider::Mcp).unwrap();
    // Any value, written as an object schema: MCP types each property schema as an object.
    assert_eq!(mcp[0]["outputSchema"]["properties"]["data"], json!({}));
    let twin = DynamicTool::builder("find_orders")
        .description("Look up orders by customer.")
        .input_schema(compiled_schema())
        .output_schema(declared)
        .handler(|_, _| async { Ok(json!([])) })
        .effect(Effect::ReadOnly)
        .build()
        .unwrap();
    let runtime = Registry::builder().dynamic_tool(twin).build().unwrap();
    for &provider in Provider::ALL {
        assert_eq!(
            compiled.export(provider).unwrap(),
            runtime.export(provider).unwrap(),
            "{provider}"
        );
    }
    let mixed = Registry::builder()
        .tool(FindOrders)
        .dynamic_tool(refund_twin(Runs::default()))
        .build()
        .unwrap();
    assert_eq!(mixed.names(), ["find_orders", "refund"]);
    let twice = Registry::builder()
        .tool(FindOrders)
        .dynamic_tool(find_orders_twin(compiled_schema()))
        .build();
    assert_eq!(
        twice.err(),
        Some(BuildError::DuplicateTool("find_orders".into()))
    );
}

fn build_with(schema: Value) -> Result<DynamicTool, BuildError> {
    DynamicTool::builder("bad_tool")
        .description("A tool with a bad schema.")
        .input_schema(schema)
        .handler(|_, _| async { Ok(Value::Null) })
        .build()
}

#[test]
fn a_schema_that_is_not_json_schema_is_a_build_error_naming_tool_and_path() {
    let err = build_with(json!({
        "type": "object",
        "properties": {"n": {"type": "integr"}}
    }))
    .unwrap_err();
    match &err {
        BuildError::InvalidSchema { tool, path, .. } => {
            assert_eq!(tool, "bad_tool");
            assert_eq!(path, "/properties/n/type");
        }
        other => panic!("{other:?}"),
    }
    assert!(err.to_string().contains("bad_tool"), "{err}");
    let not_object = build_with(json!({"type": "string"})).unwrap_err();
    assert!(
        matches!(&not_object, BuildError::InvalidSchema { path, .. } if path == "/type"),
        "{not_object:?}"
    );
    let missing = DynamicTool::builder("no_body")
        .input_schema(json!({"type": "object"}))
        .build()
        .unwrap_err();
    assert_eq!(missing, BuildError::MissingHandler("no_body".into()));
}

#[test]
fn a_schema_a_provider_cannot_express_is_a_build_error_unless_that_provider_is_left_out() {
    // A map of free-form keys: OpenAI's strict mode cannot say it.
    let map = json!({
        "type": "object",
        "properties": {"labels": {"type": "object", "additionalProperties": {"type": "string"}}},
        "required": ["labels"],
        "additionalProperties": false
    });
    let err = build_with(map.clone()).unwrap_err();
    match &err {
        BuildError::Unexpressible {
            tool,
            path,
            provider,
            ..
        } => {
            assert_eq!(tool, "bad_tool");
            assert_eq!(*provider, Provider::OpenAi);
            assert!(path.starts_with("/properties/labels"), "{path}");
        }
        other => panic!("{other:?}"),
    }
    let mcp_only = DynamicTool::builder("labels")
        .input_schema(map)
        .handler(|_, _| async { Ok(Value::Null) })
        .providers([Provider::Mcp, Provider::Anthropic])
        .build();
    assert!(mcp_only.is_ok(), "{mcp_only:?}");
}

#[tokio::test]
async fn a_session_sees_only_the_tools_its_scopes_allow_in_every_export() {
    let admin_only = DynamicTool::builder("delete_user")
        .description("Delete a user.")
        .input_schema(json!({"type": "object", "properties": {}, "additionalProperties": false}))
        .handler(|_, _| async { Ok(json!("deleted")) })
        .scopes(["admin"])
        .build()
        .unwrap();
    let registry = Registry::builder()
        .tool(FindOrders)
        .dynamic_tool(admin_only)
        .build()
        .unwrap();
    let user = Session::new("s-user");
    let admin = Session::new("s-admin").with_scopes(["admin"]);
    let names = |session: &Session| -> Vec<String> {
        registry
            .specs_for(session)
            .map(|s| s.name().to_owned())
            .collect()
    };
    assert_eq!(names(&user), ["find_orders"]);
    assert_eq!(names(&admin), ["delete_user", "find_orders"]);
    for &provider in Provider::ALL {
        let shown = registry.export_for(&user, provider).unwrap().to_string();
        assert!(!shown.contains("delete_user"), "{provider}: {shown}");
        assert!(shown.contains("find_orders"), "{provider}: {shown}");
        let all = registry.export_for(&admin, provider).unwrap();
        assert_eq!(all, registry.export(provider).unwrap(), "{provider}");
    }
    // A name the model made up: `available_tools` lists only what this session may call.
    let unknown = registry
        .call_in(&user, ToolCall::new("c1", "drop_tables", "{}"))
        .await
        .to_model_json();
    assert_eq!(unknown["error_type"], "unknown_tool");
    assert_eq!(unknown["available_tools"], json!(["find_orders"]));
}

/// The README's "Tools defined at run time" example, verbatim.
mod readme {
    use std::time::Duration;
    use toolwright::providers::Provider;
    use toolwright::serde_json::json;
    use toolwright::{DynamicTool, Effect, Registry, Session, ToolCall};

    async fn demo() -> Result<(), Box<dyn std::error::Error>> {
        let refund = DynamicTool::builder("refund_order")
        .description("Refund an order in full.")
        .input_schema(json!({
            "type": "object",
            "properties": { "order_id": { "type": "string", "pattern": "^ORD-[0-9]+$" } },
            "required": ["order_id"],
            "additionalProperties": false
        }))
        .handler(|args, ctx| async move {
            // `ctx.idempotency_key()` is the same on every attempt: hand it to the payment API.
            Ok(json!({ "refunded": args["order_id"], "key": ctx.idempotency_key().to_string() }))
        })
        .effect(Effect::SideEffecting) // the default: run once per key, replayed after
        .timeout(Duration::from_secs(10))
        .scopes(["payments"])
        .build()?;
        let registry = Registry::builder().dynamic_tool(refund).build()?;

        let agent = Session::new("conv-7").with_scopes(["payments"]);
        let tools = registry.export_for(&agent, Provider::Anthropic)?; // only what this session may call
        let outcome = registry
            .call_in(
                &agent,
                ToolCall::new("c1", "refund_order", r#"{"order_id":"42"}"#),
            )
            .await;
        // Refused before the handler runs, with the path, the pattern and the value that came.
        assert_eq!(outcome.to_model_json()["error_type"], "schema_mismatch");
        println!("{tools}");
        Ok(())
    }

    #[tokio::test]
    async fn the_readme_example_runs() {
        demo().await.unwrap();
    }
}

// ---------------------------------------------------------------------------------------------
// Provenance, sensitive arguments and fallbacks, as a `#[tool]` declares them

/// List a customer's tickets.
#[tool(read_only, grounds(ticket = "id"))]
async fn list_tickets(customer: String) -> Result<Vec<Value>, ToolError> {
    Ok(vec![
        json!({"id": format!("T-{customer}"), "title": "late"}),
    ])
}

/// Close a ticket, with the card that pays the fee.
#[tool(idempotent = true)]
async fn close_ticket(
    #[arg(grounded = "ticket")] ticket_id: String,
    #[arg(sensitive, pattern = "^[0-9]{16}$")] card: String,
) -> Result<String, ToolError> {
    let _ = card;
    Ok(format!("closed {ticket_id}"))
}

/// The compiled pair and its runtime twin, the runtime one marked by builder (`list_tickets`'
/// grounds, `card` sensitive) and by schema annotation (`ticket_id` grounded).
fn ticket_registries() -> (Registry, Registry) {
    let compiled = Registry::builder()
        .tool(ListTickets)
        .tool(CloseTicket)
        .build()
        .unwrap();
    let list_schema = compiled
        .spec("list_tickets")
        .unwrap()
        .input_schema()
        .clone();
    let mut close_schema = compiled
        .spec("close_ticket")
        .unwrap()
        .input_schema()
        .clone();
    // The runtime tool is given the schema without the compiled tool's grounded note; the
    // annotation puts it back.
    close_schema["properties"]["ticket_id"] = json!({"type": "string", "x-grounded": "ticket"});
    let list = DynamicTool::builder("list_tickets")
        .description("List a customer's tickets.")
        .input_schema(list_schema)
        .effect(Effect::ReadOnly)
        .grounds("ticket", "id")
        .handler(|args, _ctx| async move {
            let customer = args["customer"].as_str().unwrap_or_default().to_owned();
            Ok(json!([{"id": format!("T-{customer}"), "title": "late"}]))
        })
        .build()
        .unwrap();
    let close = DynamicTool::builder("close_ticket")
        .description("Close a ticket, with the card that pays the fee.")
        .input_schema(close_schema)
        .effect(Effect::Idempotent)
        .sensitive("card")
        .handler(|args, _ctx| async move {
            Ok(json!(format!(
                "closed {}",
                args["ticket_id"].as_str().unwrap_or_default()
            )))
        })
        .build()
        .unwrap();
    let runtime = Registry::builder()
        .dynamic_tool(list)
        .dynamic_tool(close)
        .build()
        .unwrap();
    (compiled, runtime)
}

#[tokio::test]
async fn a_runtime_twin_grounds_ids_and_hides_sensitive_values_as_the_compiled_tool_does() {
    let (compiled, runtime) = ticket_registries();
    assert_eq!(
        compiled.spec("close_ticket").unwrap().input_schema(),
        runtime.spec("close_ticket").unwrap().input_schema(),
        "the annotation is gone and the grounded note is there"
    );
    for registry in [&compiled, &runtime] {
        let session = Session::new("conv-1");
        let close = |id: &str, card: &str| {
            ToolCall::new(
                id,
                "close_ticket",
                format!(r#"{{"ticket_id":"T-ada","card":"{card}"}}"#),
            )
        };
        // Not yet returned by any tool: refused, pointing at the tool that returns tickets.
        let ungrounded = registry
            .call_in(&session, close("c1", "4111111111111111"))
            .await;
        assert_eq!(
            ungrounded.error_kind(),
            Some(ErrorKind::UngroundedIdentifier)
        );
        assert!(ungrounded.to_model_string().contains("`list_tickets`"));
        // A sensitive value that breaks its pattern is described, never quoted.
        let wrong_card = registry.call_in(&session, close("c2", "4111-1111")).await;
        assert_eq!(wrong_card.error_kind(), Some(ErrorKind::SchemaMismatch));
        assert!(
            !wrong_card.to_model_string().contains("4111-1111"),
            "{}",
            wrong_card.to_model_string()
        );
        let listed = registry
            .call_in(
                &session,
                ToolCall::new("c3", "list_tickets", r#"{"customer":"ada"}"#),
            )
            .await;
        assert_eq!(listed.status(), Status::Success);
        let closed = registry
            .call_in(&session, close("c4", "4111111111111111"))
            .await;
        assert_eq!(
            closed.status(),
            Status::Success,
            "{}",
            closed.to_model_string()
        );
        assert_eq!(closed.to_model_json()["data"], "closed T-ada");
    }
}

#[test]
fn marking_an_argument_the_schema_lacks_is_a_build_error() {
    let error = DynamicTool::builder("close_ticket")
        .input_schema(json!({"type": "object", "properties": {"ticket_id": {"type": "string"}}}))
        .grounded("ticket", "ticket")
        .handler(|_args, _ctx| async { Ok(json!(null)) })
        .build()
        .unwrap_err();
    assert!(
        matches!(&error, BuildError::InvalidSchema { path, .. } if path == "/properties/ticket"),
        "{error:?}"
    );
    let error = DynamicTool::builder("close_ticket")
        .input_schema(json!({"type": "object", "properties": {"card": {"type": "string", "x-sensitive": "yes"}}}))
        .handler(|_args, _ctx| async { Ok(json!(null)) })
        .build()
        .unwrap_err();
    assert!(
        matches!(&error, BuildError::InvalidSchema { path, .. } if path == "/properties/card/x-sensitive"),
        "{error:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_runtime_tool_s_fallback_answers_when_its_attempts_time_out() {
    let tool = DynamicTool::builder("stock")
        .description("Units in stock.")
        .input_schema(json!({"type": "object", "properties": {"sku": {"type": "string"}}}))
        .effect(Effect::ReadOnly)
        .timeout(Duration::from_millis(100))
        .retries(0)
        .handler(|_args, _ctx| async {
            tokio::time::sleep(Duration::from_secs(60)).await;
            Ok(json!(0))
        })
        .fallback(|args, _ctx| async move {
            Ok(json!({"sku": args["sku"], "units": 7, "cached": true}))
        })
        .build()
        .unwrap();
    let registry = Registry::builder().dynamic_tool(tool).build().unwrap();
    let outcome = registry
        .call(ToolCall::new("c1", "stock", r#"{"sku":"S1"}"#))
        .await;
    assert!(outcome.is_ok(), "{}", outcome.to_model_string());
    let envelope = outcome.to_model_json();
    assert_eq!(envelope["data"]["units"], 7, "{envelope}");
    assert!(
        outcome.to_model_string().contains("fallback"),
        "{}",
        outcome.to_model_string()
    );
}
