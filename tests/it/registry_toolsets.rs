//! Per-session tool sets and prefixed groups: a tool a predicate hides from a session is absent
//! from every listing and export for it and is `unknown_tool` when called; a tool whose scopes
//! the session lacks is absent from listings and `unauthorized` when called; two groups with
//! the same tool names live side by side under prefixes, and clashes fail the build.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use serde_json::{json, Value};
use toolwright::agent::{Agent, Message, ScriptedModel, Turn};
use toolwright::dynamic::DynamicTool;
use toolwright::execute::BreakerPolicy;
use toolwright::prelude::*;
use toolwright::providers::Provider;
use toolwright::{BuildError, Effect, ToolSpec};

/// Look an order up by id.
#[tool(read_only)]
async fn lookup(order_id: String) -> Result<String, ToolError> {
    Ok(format!("order {order_id}: delivered"))
}

/// Refund an order.
#[tool(idempotent = true)]
async fn refund(order_id: String) -> Result<String, ToolError> {
    Ok(format!("refunded {order_id}"))
}

/// Close the books; finance staff only.
#[tool(idempotent = true, scopes = ["finance"])]
async fn close_books() -> Result<String, ToolError> {
    Ok("closed".into())
}

fn staff(session: &Session) -> bool {
    session.principal().is_some_and(|p| p.starts_with("staff:"))
}

fn registry() -> Registry {
    Registry::builder()
        .tool(Lookup)
        .tool(Refund)
        .tool(CloseBooks)
        .visible_when("refund", staff)
        .build()
        .unwrap()
}

fn names<'a>(specs: impl Iterator<Item = &'a ToolSpec>) -> Vec<&'a str> {
    specs.map(|s| s.name()).collect()
}

/// The tool names in a provider's export (each provider nests them its own way).
fn exported_names(tools: &Value, provider: Provider) -> Vec<String> {
    let list = match tools.pointer("/0/functionDeclarations") {
        Some(gemini) => gemini,
        None => tools,
    };
    list.as_array()
        .unwrap_or_else(|| panic!("{provider}: {tools}"))
        .iter()
        .map(|t| {
            let name = t.pointer("/function/name").unwrap_or(&t["name"]);
            name.as_str()
                .unwrap_or_else(|| panic!("{provider}: {t}"))
                .to_owned()
        })
        .collect()
}

#[tokio::test]
async fn a_hidden_tool_is_absent_from_every_export_and_unknown_when_called() {
    let registry = registry();
    let customer = Session::new("c1").with_principal("user:al");
    let clerk = Session::new("c2").with_principal("staff:bo");

    assert_eq!(names(registry.specs_for(&customer)), ["lookup"]);
    assert_eq!(names(registry.specs_for(&clerk)), ["lookup", "refund"]);
    assert!(!registry.is_visible("refund", &customer));
    assert!(registry.is_visible("refund", &clerk));
    assert!(
        !registry.is_visible("close_books", &clerk),
        "lacks the scope"
    );
    for &provider in Provider::ALL {
        let tools = registry.export_for(&customer, provider).unwrap();
        assert_eq!(exported_names(&tools, provider), ["lookup"], "{provider}");
        let tools = registry.export_for(&clerk, provider).unwrap();
        assert_eq!(
            exported_names(&tools, provider),
            ["lookup", "refund"],
            "{provider}"
        );
    }

    let hidden = registry
        .call_in(
            &customer,
            ToolCall::new("k1", "refund", r#"{"order_id":"A1"}"#),
        )
        .await;
    assert_eq!(hidden.error_kind(), Some(ErrorKind::UnknownTool));
    let envelope = hidden.to_model_json();
    assert_eq!(envelope["available_tools"], json!(["lookup"]), "{envelope}");
    assert!(!hidden.to_model_string().contains("close_books"));

    let shown = registry
        .call_in(
            &clerk,
            ToolCall::new("k2", "refund", r#"{"order_id":"A1"}"#),
        )
        .await;
    assert_eq!(
        shown.status(),
        Status::Success,
        "{}",
        shown.to_model_string()
    );
}

#[tokio::test]
async fn a_tool_without_the_scope_is_unlisted_but_unauthorized_not_unknown() {
    let registry = registry();
    let clerk = Session::new("c2").with_principal("staff:bo");
    let outcome = registry
        .call_in(&clerk, ToolCall::new("k1", "close_books", "{}"))
        .await;
    assert_eq!(outcome.error_kind(), Some(ErrorKind::Unauthorized));
    let unknown = registry
        .call_in(&clerk, ToolCall::new("k2", "nope", "{}"))
        .await;
    assert_eq!(
        unknown.to_model_json()["available_tools"],
        json!(["lookup", "refund"])
    );
    let finance = Session::new("c3")
        .with_principal("staff:cy")
        .with_scopes(["finance"]);
    assert_eq!(
        names(registry.specs_for(&finance)),
        ["close_books", "lookup", "refund"]
    );
}

#[tokio::test]
async fn a_registry_wide_filter_hides_tools_and_the_predicate_is_asked_on_every_call() {
    let asked = Arc::new(AtomicU32::new(0));
    let counter = Arc::clone(&asked);
    let registry = Registry::builder()
        .tool(Lookup)
        .tool(Refund)
        .tool_filter(move |spec, session| {
            counter.fetch_add(1, Ordering::SeqCst);
            spec.read_only() || session.principal().is_some()
        })
        .build()
        .unwrap();
    let anonymous = Session::new("c1");
    assert_eq!(names(registry.specs_for(&anonymous)), ["lookup"]);
    let before = asked.load(Ordering::SeqCst);
    let outcome = registry
        .call_in(
            &anonymous,
            ToolCall::new("k1", "refund", r#"{"order_id":"A1"}"#),
        )
        .await;
    assert_eq!(outcome.error_kind(), Some(ErrorKind::UnknownTool));
    assert!(asked.load(Ordering::SeqCst) > before);
    let signed_in = Session::new("c2").with_principal("user:al");
    let outcome = registry
        .call_in(
            &signed_in,
            ToolCall::new("k2", "refund", r#"{"order_id":"A1"}"#),
        )
        .await;
    assert_eq!(outcome.status(), Status::Success);
}

#[test]
fn visible_when_for_a_name_the_registry_lacks_fails_the_build() {
    let error = Registry::builder()
        .tool(Lookup)
        .visible_when("refnud", staff)
        .build()
        .unwrap_err();
    assert_eq!(
        error,
        BuildError::UnknownTool {
            setting: "visible_when",
            name: "refnud".into()
        }
    );
    assert!(error.to_string().contains("`visible_when(\"refnud\", ..)`"));
}

// ---------------------------------------------------------------------------------------------
// Prefixed groups

// Each toolset in its own module: a `#[toolset]` defines a type per tool (`Search`,
// `SearchArgs`) next to the impl, as `#[tool]` does.
mod crm {
    use std::sync::atomic::{AtomicU32, Ordering};
    use toolwright::prelude::*;
    use toolwright::toolset;

    /// The CRM's records.
    pub struct Crm {
        pub calls: AtomicU32,
    }

    #[toolset]
    impl Crm {
        /// Search customers by name.
        #[tool(read_only)]
        async fn search(&self, query: String) -> Result<String, ToolError> {
            self.calls.fetch_add(1, Ordering::SeqCst);
            Ok(format!("customer matching {query}"))
        }
    }
}

mod docs {
    use toolwright::prelude::*;
    use toolwright::toolset;

    /// The manual.
    pub struct Docs;

    #[toolset]
    impl Docs {
        /// Search the manual.
        #[tool(read_only)]
        async fn search(&self, query: String) -> Result<String, ToolError> {
            Ok(format!("page about {query}"))
        }
    }
}

use crm::Crm;
use docs::Docs;

#[tokio::test]
async fn two_groups_with_the_same_tool_names_live_side_by_side_under_prefixes() {
    let crm = Arc::new(Crm {
        calls: AtomicU32::new(0),
    });
    let registry = Registry::builder()
        .prefixed("crm_", |b| b.toolset_shared(Arc::clone(&crm)))
        .prefixed("docs_", |b| b.toolset(Docs))
        .tool(Lookup)
        .breaker_for("crm_search", BreakerPolicy::new().min_calls(50))
        .build()
        .unwrap();
    assert_eq!(registry.names(), ["crm_search", "docs_search", "lookup"]);
    let outcome = registry
        .call(ToolCall::new("k1", "crm_search", r#"{"query":"ada"}"#))
        .await;
    assert_eq!(outcome.status(), Status::Success);
    assert_eq!(outcome.tool(), "crm_search");
    assert_eq!(crm.calls.load(Ordering::SeqCst), 1);
    let outcome = registry
        .call(ToolCall::new("k2", "docs_search", r#"{"query":"refunds"}"#))
        .await;
    assert_eq!(outcome.to_model_json()["data"], json!("page about refunds"));
    // The plain name no longer exists; the model is told the prefixed ones.
    let outcome = registry
        .call(ToolCall::new("k3", "search", r#"{"query":"x"}"#))
        .await;
    assert_eq!(outcome.error_kind(), Some(ErrorKind::UnknownTool));
    // The prefix is the name everywhere: exports, stats, breakers.
    let tools = registry.export(Provider::Anthropic).unwrap();
    assert_eq!(
        exported_names(&tools, Provider::Anthropic),
        ["crm_search", "docs_search", "lookup"]
    );
    let stats = registry.stats();
    assert!(stats.to_string().contains("crm_search"));
    assert!(registry.breaker("crm_search").is_some());
    assert!(registry.breaker("search").is_none());
}

#[test]
fn prefixes_nest_and_clashes_fail_the_build() {
    let registry = Registry::builder()
        .prefixed("a_", |b| b.prefixed("b_", |b| b.tool(Lookup)).tool(Lookup))
        .tool(Lookup)
        .build()
        .unwrap();
    assert_eq!(registry.names(), ["a_b_lookup", "a_lookup", "lookup"]);

    let clash = Registry::builder()
        .prefixed("x_", |b| b.toolset(Docs))
        .prefixed("x_", |b| {
            b.toolset(Crm {
                calls: AtomicU32::new(0),
            })
        })
        .build()
        .unwrap_err();
    assert_eq!(clash, BuildError::DuplicateTool("x_search".into()));
}

#[test]
fn a_prefix_a_provider_would_refuse_fails_the_build() {
    let dotted = Registry::builder()
        .prefixed("crm.", |b| b.tool(Lookup))
        .build()
        .unwrap_err();
    assert!(
        matches!(&dotted, BuildError::InvalidName { name, .. } if name == "crm.lookup"),
        "{dotted:?}"
    );
    let long = "p".repeat(60);
    let too_long = Registry::builder()
        .prefixed(&long, |b| b.tool(Lookup))
        .build()
        .unwrap_err();
    assert!(too_long.to_string().contains("64 characters"), "{too_long}");
}

#[tokio::test]
async fn a_prefixed_runtime_tool_runs_under_its_prefixed_name() {
    let tool = DynamicTool::builder("ping")
        .description("Answers pong.")
        .input_schema(json!({"type": "object", "properties": {}}))
        .effect(Effect::ReadOnly)
        .handler(|_args, _ctx| async { Ok(json!("pong")) })
        .build()
        .unwrap();
    let registry = Registry::builder()
        .prefixed("net_", |b| b.dynamic_tool(tool))
        .build()
        .unwrap();
    let outcome = registry.call(ToolCall::new("k1", "net_ping", "{}")).await;
    assert_eq!(outcome.status(), Status::Success);
    assert_eq!(outcome.tool(), "net_ping");
}

// ---------------------------------------------------------------------------------------------
// The agent loop sends each session only what it is shown

#[tokio::test(start_paused = true)]
async fn the_agent_sends_the_model_only_the_tools_its_session_is_shown() {
    let model = Arc::new(ScriptedModel::new([
        Turn::text("hello"),
        Turn::text("hello again"),
    ]));
    let agent = Agent::builder(Arc::clone(&model), registry())
        .build()
        .unwrap();
    agent
        .run(
            &Session::new("c1").with_principal("user:al"),
            vec![Message::user("hi")],
        )
        .await;
    agent
        .run(
            &Session::new("c2").with_principal("staff:bo"),
            vec![Message::user("hi")],
        )
        .await;
    let sent = model.requests();
    assert_eq!(exported_names(&sent[0].tools, Provider::OpenAi), ["lookup"]);
    assert_eq!(
        exported_names(&sent[1].tools, Provider::OpenAi),
        ["lookup", "refund"]
    );
}

#[tokio::test(start_paused = true)]
async fn the_agent_sends_the_tools_the_registry_has_at_each_step() {
    let model = Arc::new(ScriptedModel::new([
        Turn::text("before"),
        Turn::text("after"),
    ]));
    let registry = Registry::builder().tool(Lookup).build().unwrap();
    let agent = Agent::builder(Arc::clone(&model), registry.clone())
        .build()
        .unwrap();
    let session = Session::new("c1");
    agent.run(&session, vec![Message::user("hi")]).await;
    registry.change(|c| c.tool(Refund)).unwrap();
    agent.run(&session, vec![Message::user("hi")]).await;
    let sent = model.requests();
    assert_eq!(exported_names(&sent[0].tools, Provider::OpenAi), ["lookup"]);
    assert_eq!(
        exported_names(&sent[1].tools, Provider::OpenAi),
        ["lookup", "refund"]
    );
}
