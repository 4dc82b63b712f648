//! Failure paths of the registry through the real pipeline (`Registry::call`): an unknown tool,
//! injection and its build errors, duplicate names, the collected tools.
//!
//! Every test builds a registry from `#[tool]` functions and sends it the argument text a model
//! could send. Each failure is checked the way a model and an operator see it: the typed facts
//! (`error_kind`, `seam`, `retryable`) and the envelope (`error_type`, `message`, `errors[].path`),
//! and the message must name the field, what was expected and what came.

// `#[arg(validate = f)]` expands to a closure so that deref coercion applies (`fn(&str)` for a
// `String` argument); clippy reads it as user code. Reported for tool-macros to allow it there.
#![allow(clippy::redundant_closure)]

// The fixtures (one `#[tool]` per failure class) and the helpers every failure-path module
// shares, at the binary's root.
use super::*;

// ---------------------------------------------------------------------------------------------
// Lookup
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn an_unknown_tool_lists_the_available_tools_sorted_and_never_routes_a_near_miss() {
    let registry = registry();
    let outcome = registry
        .call(ToolCall::new(
            "call_1",
            "search_order",
            r#"{"query":"late"}"#,
        ))
        .await;
    let envelope = assert_failure(&outcome, ErrorKind::UnknownTool, true);
    assert_eq!(
        outcome.tool(),
        "search_order",
        "not routed to search_orders"
    );
    assert_eq!(outcome.attempts(), 0, "no tool ran");
    assert!(outcome.data().is_none());
    assert_eq!(
        message(&outcome),
        "'search_order' is not an available tool; call one of available_tools instead"
    );
    let available: Vec<&str> = envelope["available_tools"]
        .as_array()
        .expect("available_tools")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let mut sorted = available.clone();
    sorted.sort_unstable();
    assert_eq!(available, sorted);
    // Only the tools this (anonymous) session may call: none that needs a scope.
    let visible: Vec<&str> = registry
        .specs()
        .iter()
        .filter(|s| s.scopes().is_empty())
        .map(|s| s.name())
        .collect();
    assert!(
        visible.len() < registry.specs().len(),
        "some tool needs a scope"
    );
    assert_eq!(available, visible);
    assert!(available.contains(&"search_orders"));
    assert_eq!(outcome.raw_arguments(), Some(r#"{"query":"late"}"#));
}

// ---------------------------------------------------------------------------------------------
// Injection and building
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn state_is_injected_and_a_missing_state_stops_the_build() {
    let outcome = call("count_rows", "{}").await;
    assert_eq!(outcome.to_model_json()["data"], 42);

    let err = Registry::builder()
        .tool(CountRows)
        .build()
        .expect_err("no Db given");
    assert!(
        matches!(&err, BuildError::MissingState { tool, state } if tool == "count_rows" && state.ends_with("Db")),
        "{err:?}"
    );
    assert!(err.to_string().contains(".state("), "{err}");
}

#[tokio::test]
async fn duplicate_tool_names_stop_the_build() {
    let err = Registry::builder()
        .tool(Ping)
        .tool(SearchOrders)
        .tool(Ping)
        .build()
        .expect_err("two tools named ping");
    assert_eq!(err, BuildError::DuplicateTool("ping".into()));
}

#[tokio::test]
async fn context_and_idempotency_key_are_injected_with_one_derivation() {
    let registry = registry();
    let session = Session::new("conv-7").with_idempotency_scope("tenant-3");
    let outcome = registry
        .call_in(&session, ToolCall::new("call_42", "whoami", "{}"))
        .await;
    assert_eq!(
        outcome.to_model_json()["data"],
        json!({
            "key": "tenant-3:whoami:call_42",
            "context_key": "tenant-3:whoami:call_42",
            "call_id": "call_42",
            "tool": "whoami",
            "session": "conv-7",
            "attempt": 1,
        })
    );
    assert_eq!(
        IdempotencyKey::derive("tenant-3", "whoami", "call_42").as_str(),
        "tenant-3:whoami:call_42"
    );

    // The same proposal delivered twice maps to the same key; another call id does not.
    let again = registry
        .call_in(&session, ToolCall::new("call_42", "whoami", "{}"))
        .await;
    assert_eq!(
        again.to_model_json()["data"]["key"],
        "tenant-3:whoami:call_42"
    );
    let other = registry
        .call_in(&session, ToolCall::new("call_43", "whoami", "{}"))
        .await;
    assert_eq!(
        other.to_model_json()["data"]["key"],
        "tenant-3:whoami:call_43"
    );

    // A non-idempotent tool with a key parameter gets it too; outside a conversation, in a
    // scope of the call's own.
    let outcome = registry
        .call(ToolCall::new("call_9", "book_flight", r#"{"from":"SFO"}"#))
        .await;
    let reference = outcome.to_model_json()["data"]["reference"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let scope = reference
        .strip_prefix("anonymous.")
        .and_then(|rest| rest.strip_suffix(":book_flight:call_9/SFO"))
        .unwrap_or_else(|| panic!("{reference}"));
    assert_eq!(scope.len(), 32, "{reference}");
}

#[tokio::test]
async fn from_collected_finds_every_tool_of_the_binary() {
    // `count_rows` needs state, so the plain collection refuses to build...
    assert!(matches!(
        Registry::from_collected(),
        Err(BuildError::MissingState { .. })
    ));
    // ...and the collecting builder takes it.
    let collected = Registry::collected()
        .state(Db { rows: 1 })
        .build()
        .expect("every collected tool builds");
    assert_eq!(collected.names(), registry().names());
    let outcome = collected
        .call(ToolCall::new("c1", "count_rows", "{}"))
        .await;
    assert_eq!(outcome.to_model_json()["data"], 1);
}
