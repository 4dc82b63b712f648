//! Deferred tools and the search tool: ranking on a fixed corpus, what a session is shown before
//! and after a search, a deferred call refused until found, found-then-callable across two
//! replicas of one store (in memory, and a real Redis), the search tool's input bounded.

use std::sync::Arc;

use serde_json::{json, Value};
use toolwright::conversation::{ConversationStore, MemoryConversationStore};
use toolwright::dynamic::DynamicTool;
use toolwright::providers::Provider;
use toolwright::registry::{SearchHit, ToolSearch};
use toolwright::{BuildError, ErrorKind, Registry, RegistryBuilder, Session, Status, ToolCall};

#[cfg(feature = "redis")]
use crate::support::redis_server;

/// A tool named `name` that answers its name, with these parameters (name, description).
fn tool(name: &str, description: &str, parameters: &[(&str, &str)]) -> DynamicTool {
    let properties: serde_json::Map<String, Value> = parameters
        .iter()
        .map(|(p, d)| ((*p).to_owned(), json!({"type": "string", "description": d})))
        .collect();
    let answer = name.to_owned();
    DynamicTool::builder(name)
        .description(description)
        .input_schema(json!({"type": "object", "properties": properties}))
        .handler(move |_args, _ctx| {
            let answer = answer.clone();
            async move { Ok(json!(answer)) }
        })
        .build()
        .expect("the test tool builds")
}

/// The fixed corpus: twelve tools of a shop's back office, written as a team would write them.
fn corpus() -> Vec<DynamicTool> {
    vec![
        tool(
            "refund_order",
            "Refund a paid order to the card it was paid with.",
            &[
                ("order_id", "The order to refund."),
                ("reason", "Why the customer wants their money back."),
            ],
        ),
        tool(
            "cancel_subscription",
            "Cancel a customer's subscription at the end of the billing period.",
            &[("subscription_id", "The subscription.")],
        ),
        tool(
            "track_parcel",
            "Where a shipped parcel is now, from the carrier's tracking.",
            &[("tracking_number", "The carrier's tracking number.")],
        ),
        tool(
            "update_shipping_address",
            "Change the delivery address of an order that has not shipped yet.",
            &[
                ("order_id", "The order."),
                ("address", "The new street address, city and postcode."),
            ],
        ),
        tool(
            "issue_invoice",
            "Create a PDF invoice for an order and email it to the billing contact.",
            &[("order_id", "The order to invoice.")],
        ),
        tool(
            "reset_password",
            "Send the customer a link to reset their account password.",
            &[("email", "The account's email address.")],
        ),
        tool(
            "list_low_stock",
            "Products whose warehouse stock is below their reorder threshold.",
            &[("warehouse", "The warehouse code.")],
        ),
        tool(
            "apply_discount_code",
            "Apply a promotional discount code to a customer's open cart.",
            &[("cart_id", "The cart."), ("code", "The discount code.")],
        ),
        tool(
            "translate_text",
            "Translate a message into another language for the customer.",
            &[
                ("text", "What to translate."),
                ("target_language", "An ISO 639-1 code."),
            ],
        ),
        tool(
            "schedule_callback",
            "Book a phone call back from a support agent at a time the customer picks.",
            &[
                ("phone", "The number to call."),
                ("time", "When, in ISO 8601."),
            ],
        ),
        tool(
            "getExchangeRate",
            "The current exchange rate between two currencies.",
            &[
                ("from_currency", "ISO 4217 code."),
                ("to_currency", "ISO 4217 code."),
            ],
        ),
        tool(
            "delete_account",
            "Permanently delete a customer's account and personal data (GDPR erasure).",
            &[("account_id", "The account.")],
        ),
    ]
}

/// Every tool of the corpus, deferred, plus `lookup_customer`, always shown.
fn builder() -> RegistryBuilder {
    let mut builder = Registry::builder().dynamic_tool(tool(
        "lookup_customer",
        "Find a customer by email.",
        &[("email", "The customer's email.")],
    ));
    let mut names = Vec::new();
    for tool in corpus() {
        names.push(tool.name().to_owned());
        builder = builder.dynamic_tool(tool);
    }
    builder.deferred(names)
}

fn registry() -> Registry {
    builder().build().expect("the registry builds")
}

fn names(hits: &[SearchHit]) -> Vec<&str> {
    hits.iter().map(|h| h.name.as_str()).collect()
}

fn shown(registry: &Registry, session: &Session) -> Vec<String> {
    registry
        .specs_for(session)
        .map(|s| s.name().to_owned())
        .collect()
}

#[test]
fn requests_in_the_users_words_rank_the_right_tool_first() {
    let registry = registry();
    let session = Session::new("c1");
    let cases = [
        ("the customer wants their money back", "refund_order"),
        ("refunds", "refund_order"),
        ("cancel my monthly plan", "cancel_subscription"),
        ("where is my package, it shipped last week", "track_parcel"),
        (
            "I moved, change where the order is delivered",
            "update_shipping_address",
        ),
        ("send a bill as PDF", "issue_invoice"),
        ("forgot password", "reset_password"),
        ("which products need reordering", "list_low_stock"),
        ("use a promo code", "apply_discount_code"),
        ("translate this into Spanish", "translate_text"),
        ("call me back tomorrow at 10", "schedule_callback"),
        (
            "how many euros is a dollar: exchange rate",
            "getExchangeRate",
        ),
        ("erase all my personal data", "delete_account"),
    ];
    let mut wrong = Vec::new();
    for (query, expected) in cases {
        let hits = registry.search(&session, query, 5);
        if hits.first().map(|h| h.name.as_str()) != Some(expected) {
            wrong.push(format!(
                "{query:?}: expected {expected}, got {:?}",
                names(&hits)
            ));
        }
    }
    assert!(wrong.is_empty(), "misranked:\n{}", wrong.join("\n"));
}

#[test]
fn a_search_ranks_only_deferred_tools_best_first_and_answers_the_same_every_time() {
    let registry = registry();
    let session = Session::new("c1");
    let hits = registry.search(&session, "order", 20);
    assert!(hits.len() >= 3, "{hits:?}");
    assert!(
        hits.windows(2).all(|w| w[0].score >= w[1].score),
        "{hits:?}"
    );
    assert!(
        !names(&hits).contains(&"lookup_customer") && !names(&hits).contains(&"search_tools"),
        "only deferred tools are searched: {hits:?}"
    );
    for _ in 0..20 {
        assert_eq!(registry.search(&session, "order", 20), hits);
    }
    assert_eq!(
        names(&registry.search(&session, "order", 2)),
        names(&hits[..2])
    );
    assert!(registry.search(&session, "zebra xylophone", 5).is_empty());
    assert!(registry.search(&session, "", 5).is_empty());
    assert!(registry.search(&session, "the of and", 5).is_empty());
}

#[test]
fn a_deferred_tool_is_exported_only_once_found() {
    let registry = registry();
    let session = Session::new("c1");
    assert_eq!(
        shown(&registry, &session),
        ["lookup_customer", "search_tools"]
    );
    let tools = registry.export_for(&session, Provider::Anthropic).unwrap();
    let exported: Vec<&str> = tools
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(exported, ["lookup_customer", "search_tools"]);
    // The whole registry still exports every tool (the application's own view).
    assert_eq!(
        registry
            .export(Provider::Anthropic)
            .unwrap()
            .as_array()
            .unwrap()
            .len(),
        14
    );
    assert!(registry.is_deferred("refund_order") && !registry.is_deferred("lookup_customer"));
    assert_eq!(registry.search_tool(), Some("search_tools"));
}

#[tokio::test]
async fn a_deferred_tool_called_before_it_is_found_is_unknown_tool_telling_the_model_to_search() {
    let registry = registry();
    let session = Session::new("c1");
    let early = registry
        .call_in(
            &session,
            ToolCall::new("c1", "refund_order", r#"{"order_id":"A1"}"#),
        )
        .await;
    assert_eq!(early.error_kind(), Some(ErrorKind::UnknownTool));
    let envelope = early.to_model_json();
    let message = envelope["message"].as_str().unwrap();
    assert!(
        message.contains("'refund_order' is not loaded") && message.contains("`search_tools`"),
        "{message}"
    );
    assert_eq!(
        envelope["available_tools"],
        json!(["lookup_customer", "search_tools"])
    );
}

#[tokio::test]
async fn the_search_tool_finds_and_the_found_tool_is_shown_and_callable_in_that_conversation_only()
{
    let registry = registry();
    let session = Session::new("c1");
    let other = Session::new("c2");
    let search = registry
        .call_in(
            &session,
            ToolCall::new(
                "s1",
                "search_tools",
                r#"{"query":"refund the customer's order","limit":2}"#,
            ),
        )
        .await;
    assert_eq!(
        search.status(),
        Status::Success,
        "{:?}",
        search.to_model_json()
    );
    let result = search.to_model_json()["data"].clone();
    let found: Vec<&str> = result["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(found.len(), 2, "{result}");
    assert_eq!(found[0], "refund_order");
    assert!(
        result["tools"][0].get("input_schema").is_none(),
        "no schemas by default"
    );
    assert!(result["tools"][0]["description"]
        .as_str()
        .unwrap()
        .starts_with("Refund"));

    let mut expected = vec!["lookup_customer".to_owned(), "search_tools".to_owned()];
    expected.extend(found.iter().map(|s| (*s).to_owned()));
    expected.sort();
    assert_eq!(shown(&registry, &session), expected);
    let refund = registry
        .call_in(
            &session,
            ToolCall::new("r1", "refund_order", r#"{"order_id":"A1"}"#),
        )
        .await;
    assert_eq!(refund.status(), Status::Success);
    assert_eq!(refund.to_model_json()["data"], json!("refund_order"));

    // Another conversation found nothing.
    assert_eq!(
        shown(&registry, &other),
        ["lookup_customer", "search_tools"]
    );
    let elsewhere = registry
        .call_in(
            &other,
            ToolCall::new("r2", "refund_order", r#"{"order_id":"A1"}"#),
        )
        .await;
    assert_eq!(elsewhere.error_kind(), Some(ErrorKind::UnknownTool));
}

#[tokio::test]
async fn results_carry_input_schemas_when_asked() {
    let registry = builder()
        .tool_search(
            ToolSearch::new()
                .name("find_tools")
                .results(1)
                .with_schemas(true),
        )
        .build()
        .unwrap();
    let session = Session::new("c1");
    let search = registry
        .call_in(
            &session,
            ToolCall::new("s1", "find_tools", r#"{"query":"track my parcel"}"#),
        )
        .await;
    let result = search.to_model_json()["data"].clone();
    assert_eq!(result["tools"].as_array().unwrap().len(), 1, "{result}");
    assert_eq!(result["tools"][0]["name"], "track_parcel");
    assert_eq!(
        result["tools"][0]["input_schema"]["properties"]["tracking_number"]["type"],
        "string"
    );
    assert_eq!(registry.search_tool(), Some("find_tools"));
}

#[tokio::test]
async fn the_search_tools_input_is_bounded_and_refusals_name_the_field() {
    let registry = registry();
    let session = Session::new("c1");
    let long = "refund ".repeat(100);
    for (arguments, path) in [
        (json!({"query": long}).to_string(), "/query"),
        (r#"{"query":""}"#.to_owned(), "/query"),
        (r#"{"query":"refund","limit":0}"#.to_owned(), "/limit"),
        (r#"{"query":"refund","limit":21}"#.to_owned(), "/limit"),
        (r#"{"limit":3}"#.to_owned(), "/query"),
    ] {
        let outcome = registry
            .call_in(
                &session,
                ToolCall::new("s", "search_tools", arguments.clone()),
            )
            .await;
        assert_eq!(
            outcome.error_kind(),
            Some(ErrorKind::SchemaMismatch),
            "{arguments}"
        );
        let envelope = outcome.to_model_json();
        let paths: Vec<&str> = envelope["errors"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v["path"].as_str().unwrap())
            .collect();
        assert!(paths.contains(&path), "{arguments}: {envelope}");
    }
    assert_eq!(
        shown(&registry, &session),
        ["lookup_customer", "search_tools"]
    );
}

#[tokio::test]
async fn a_search_sees_only_the_tools_the_session_may_see() {
    let registry = builder()
        .visible_when("refund_order", |s| {
            s.principal().is_some_and(|p| p.starts_with("staff:"))
        })
        .build()
        .unwrap();
    let customer = Session::new("c1").with_principal("user:al");
    let staff = Session::new("c2").with_principal("staff:bo");
    assert!(!names(&registry.search(&customer, "refund an order", 5)).contains(&"refund_order"));
    assert_eq!(
        registry.search(&staff, "refund an order", 5)[0].name,
        "refund_order"
    );
    // Even named in a search's grounding, a hidden tool stays hidden and uncallable.
    customer.ground("toolwright.found_tool", "refund_order");
    assert!(!registry.is_visible("refund_order", &customer));
    let refused = registry
        .call_in(&customer, ToolCall::new("r", "refund_order", "{}"))
        .await;
    assert_eq!(refused.error_kind(), Some(ErrorKind::UnknownTool));
    assert!(
        !refused.to_model_json()["message"]
            .as_str()
            .unwrap()
            .contains("search"),
        "a hidden tool is not hinted at"
    );
}

#[tokio::test]
async fn outside_a_conversation_nothing_is_found() {
    let registry = registry();
    let search = registry
        .call(ToolCall::new("s", "search_tools", r#"{"query":"refund"}"#))
        .await;
    assert_eq!(search.status(), Status::Success);
    let refund = registry
        .call(ToolCall::new("r", "refund_order", r#"{"order_id":"A1"}"#))
        .await;
    assert_eq!(refund.error_kind(), Some(ErrorKind::UnknownTool));
}

#[test]
fn deferring_a_name_the_registry_lacks_or_a_search_tool_name_taken_fails_the_build() {
    let err = builder().deferred(["refund_ordr"]).build().unwrap_err();
    assert_eq!(
        err,
        BuildError::UnknownTool {
            setting: "deferred",
            name: "refund_ordr".to_owned()
        }
    );
    assert!(
        err.to_string().contains("`deferred(\"refund_ordr\", ..)`"),
        "{err}"
    );
    let clash = builder()
        .dynamic_tool(tool("search_tools", "My own search.", &[]))
        .build()
        .unwrap_err();
    assert_eq!(clash, BuildError::DuplicateTool("search_tools".to_owned()));
    // No deferred tool and no search asked for: no search tool.
    let plain = Registry::builder()
        .dynamic_tool(tool("ping", "Ping.", &[]))
        .build()
        .unwrap();
    assert_eq!(plain.names(), ["ping"]);
    assert_eq!(plain.search_tool(), None);
}

/// A tool that answers the name the model sends it, declaring what it answers as ids of `kind`.
fn echo(kind: &str) -> DynamicTool {
    DynamicTool::builder("echo_name")
        .description("Repeats a name.")
        .input_schema(json!({"type": "object", "properties": {"name": {"type": "string"}}}))
        .grounds(kind, "")
        .handler(|args, _ctx| async move { Ok(args["name"].clone()) })
        .build()
        .expect("the echo builds")
}

#[tokio::test]
async fn a_tool_may_not_ground_the_kinds_toolwright_keeps_so_no_output_finds_a_deferred_tool() {
    // The found tools are kept as ids of `toolwright.found_tool`: a tool declaring that kind
    // would let the model find `delete_account` by naming it, without a search.
    let err = builder()
        .dynamic_tool(echo("toolwright.found_tool"))
        .build()
        .expect_err("a tool declaring a reserved kind is refused");
    assert_eq!(
        err,
        BuildError::ReservedKind {
            tool: "echo_name".to_owned(),
            kind: "toolwright.found_tool".to_owned()
        }
    );
    assert!(
        err.to_string()
            .contains("kinds that start with `toolwright.` are kept"),
        "{err}"
    );
    // Every reserved kind, and an argument declared as one, while serving too.
    let registry = registry();
    let change = registry.change(|c| c.dynamic_tool(echo("toolwright.anything")));
    assert!(
        matches!(change, Err(BuildError::ReservedKind { .. })),
        "{change:?}"
    );
    let reads = DynamicTool::builder("read_found")
        .description("Reads a found tool's name.")
        .input_schema(json!({"type": "object", "properties": {"tool": {"type": "string"}}}))
        .grounded("tool", "toolwright.found_tool")
        .handler(|args, _ctx| async move { Ok(args["tool"].clone()) })
        .build()
        .expect("the tool builds");
    let change = registry.change(|c| c.dynamic_tool(reads));
    assert!(
        matches!(change, Err(BuildError::ReservedKind { .. })),
        "{change:?}"
    );
    // The registry's own search tool grounds that kind still.
    let session = Session::new("found-1");
    let search = ToolCall::new("c1", "search_tools", r#"{"query":"delete an account"}"#);
    assert_eq!(
        registry.call_in(&session, search).await.status(),
        Status::Success
    );
    let delete = ToolCall::new("c2", "delete_account", r#"{"account_id":"A1"}"#);
    assert_eq!(
        registry.call_in(&session, delete).await.status(),
        Status::Success
    );
    // A kind of the application's own is fine.
    assert!(builder()
        .dynamic_tool(echo("customer_name"))
        .build()
        .is_ok());
}

#[tokio::test]
async fn a_change_keeps_what_is_deferred_and_indexes_the_new_table() {
    let registry = registry();
    registry
        .change(|c| {
            c.remove("refund_order")
                .dynamic_tool(tool("ping", "Ping.", &[]))
        })
        .unwrap();
    let session = Session::new("c1");
    assert!(registry.is_deferred("track_parcel"));
    assert!(!registry.is_deferred("ping"));
    assert!(shown(&registry, &session).contains(&"ping".to_owned()));
    assert!(!names(&registry.search(&session, "refund the order", 20)).contains(&"refund_order"));
    assert_eq!(
        registry.search(&session, "where is my parcel", 1)[0].name,
        "track_parcel"
    );
    let search = registry
        .call_in(
            &session,
            ToolCall::new("s", "search_tools", r#"{"query":"parcel tracking"}"#),
        )
        .await;
    assert_eq!(search.status(), Status::Success);
    assert!(registry.is_visible("track_parcel", &session));
}

/// Two replicas of one service: registries built the same, sessions of one conversation on
/// one store. A search on `a` makes the tool callable on `b`, and `b`'s listing shows it once
/// it reads the store.
async fn found_on_one_replica_is_callable_on_the_other(store: Arc<dyn ConversationStore>) {
    let (a, b) = (registry(), registry());
    let on_a = Session::new("conv-9").with_store(Arc::clone(&store));
    let on_b = Session::new("conv-9").with_store(Arc::clone(&store));
    let search = a
        .call_in(
            &on_a,
            ToolCall::new(
                "s1",
                "search_tools",
                r#"{"query":"refund an order","limit":1}"#,
            ),
        )
        .await;
    assert_eq!(
        search.status(),
        Status::Success,
        "{:?}",
        search.to_model_json()
    );
    assert!(a.is_visible("refund_order", &on_a));

    // `b` has not read the store yet: not listed, but a call asks the store and runs.
    assert!(!b.is_visible("refund_order", &on_b));
    let refund = b
        .call_in(
            &on_b,
            ToolCall::new("r1", "refund_order", r#"{"order_id":"A1"}"#),
        )
        .await;
    assert_eq!(
        refund.status(),
        Status::Success,
        "{:?}",
        refund.to_model_json()
    );
    assert!(b.is_visible("refund_order", &on_b));

    // A third replica's listing after it reads the store.
    let c = registry();
    let on_c = Session::new("conv-9").with_store(Arc::clone(&store));
    c.refresh_found(&on_c).await.unwrap();
    assert_eq!(
        shown(&c, &on_c),
        ["lookup_customer", "refund_order", "search_tools"]
    );

    // Only what was found: another deferred tool is still refused on `b`.
    let other = b
        .call_in(
            &on_b,
            ToolCall::new("r2", "track_parcel", r#"{"tracking_number":"Z"}"#),
        )
        .await;
    assert_eq!(other.error_kind(), Some(ErrorKind::UnknownTool));
    // And another conversation on the same store found nothing.
    let stranger = Session::new("conv-10").with_store(store);
    c.refresh_found(&stranger).await.unwrap();
    assert_eq!(shown(&c, &stranger), ["lookup_customer", "search_tools"]);
}

#[tokio::test]
async fn found_on_one_replica_is_callable_on_the_other_in_memory() {
    found_on_one_replica_is_callable_on_the_other(Arc::new(MemoryConversationStore::new())).await;
}

#[cfg(feature = "redis")]
#[tokio::test]
async fn found_on_one_replica_is_callable_on_the_other_on_redis() {
    let Some(server) = redis_server::RedisServer::start() else {
        return;
    };
    let store = toolwright::conversation::RedisConversationStore::connect(&server.url())
        .await
        .expect("connect the store");
    found_on_one_replica_is_callable_on_the_other(Arc::new(store)).await;
}

#[tokio::test]
async fn a_store_that_cannot_be_read_refuses_a_deferred_call_as_unavailable() {
    use toolwright::conversation::{
        CallRecord, ConversationFuture, ConversationStoreError, Decided, Decision, FailureCounts,
        Prepare, Prepared, Review, Ticket, TicketRequest, WaitingPage, WaitingQuery,
    };
    struct Down;
    fn down<'a, T: Send + 'a>() -> ConversationFuture<'a, T> {
        Box::pin(async {
            Err(ConversationStoreError::backend(std::io::Error::other(
                "connection refused",
            )))
        })
    }
    impl ConversationStore for Down {
        fn prepare<'a>(&'a self, _: &'a str, _: &'a Prepare) -> ConversationFuture<'a, Prepared> {
            down()
        }
        fn record<'a>(
            &'a self,
            _: &'a str,
            _: &'a CallRecord,
        ) -> ConversationFuture<'a, FailureCounts> {
            down()
        }
        fn review<'a>(&'a self, _: &'a TicketRequest) -> ConversationFuture<'a, Review> {
            down()
        }
        fn decide<'a>(&'a self, _: &'a str, _: &'a Decision) -> ConversationFuture<'a, Decided> {
            down()
        }
        fn ticket<'a>(&'a self, _: &'a str) -> ConversationFuture<'a, Option<Ticket>> {
            down()
        }
        fn waiting<'a>(&'a self, _: &'a WaitingQuery) -> ConversationFuture<'a, WaitingPage> {
            down()
        }
    }
    let registry = registry();
    let session = Session::new("c1").with_store(Arc::new(Down));
    let outcome = registry
        .call_in(
            &session,
            ToolCall::new("r", "refund_order", r#"{"order_id":"A1"}"#),
        )
        .await;
    assert_eq!(outcome.error_kind(), Some(ErrorKind::Unavailable));
    assert!(registry.refresh_found(&session).await.is_err());
    assert_eq!(
        shown(&registry, &session),
        ["lookup_customer", "search_tools"]
    );
}

#[test]
fn a_provider_that_searches_itself_gets_every_tool_deferred_ones_marked_and_its_own_search() {
    use toolwright::providers::{Construct, Export};
    let registry = builder()
        .visible_when("delete_account", |s| s.principal() == Some("staff:bo"))
        .build()
        .unwrap();
    let session = Session::new("c1").with_principal("user:al");
    let tools = registry
        .export_for(
            &session,
            Export::new(Provider::OpenAiResponses).native_tool_search(true),
        )
        .unwrap();
    let tools = tools.as_array().unwrap();
    let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    assert_eq!(
        tools.len(),
        13,
        "12 tools the session may see and the provider's search"
    );
    assert!(
        !names.contains(&"search_tools") && !names.contains(&"delete_account"),
        "{names:?}"
    );
    assert_eq!(tools.last().unwrap(), &json!({"type": "tool_search"}));
    for tool in &tools[..12] {
        let deferred = tool["name"] != "lookup_customer";
        assert_eq!(
            tool.get("defer_loading") == Some(&json!(true)),
            deferred,
            "{tool}"
        );
    }

    for provider in [
        Provider::OpenAi,
        Provider::Gemini,
        Provider::GeminiJsonSchema,
        Provider::Mcp,
    ] {
        let err = registry
            .export(Export::new(provider).native_tool_search(true))
            .unwrap_err();
        assert_eq!(
            err.problems()[0].construct(),
            &Construct::NativeToolSearch,
            "{provider}"
        );
        assert!(err.to_string().contains("native_tool_search"), "{err}");
    }
    // Nothing deferred: nothing for the provider to search, the export is the plain one.
    let plain = Registry::builder()
        .dynamic_tool(tool("ping", "Ping.", &[]))
        .build()
        .unwrap();
    assert_eq!(
        plain
            .export(Export::new(Provider::OpenAi).native_tool_search(true))
            .unwrap(),
        plain.export(Provider::OpenAi).unwrap()
    );
}

#[tokio::test]
async fn a_session_searched_by_its_provider_calls_deferred_tools_directly() {
    let registry = registry();
    let session = Session::new("c1").with_native_tool_search();
    assert!(registry.is_visible("refund_order", &session));
    let refund = registry
        .call_in(
            &session,
            ToolCall::new("r", "refund_order", r#"{"order_id":"A1"}"#),
        )
        .await;
    assert_eq!(refund.status(), Status::Success);
}

#[tokio::test]
async fn tools_added_while_serving_can_be_deferred_and_are_found_by_the_next_search() {
    let registry = registry();
    registry
        .change(|c| {
            c.dynamic_tool(tool(
                "export_ledger",
                "Export the accounting ledger as a CSV file.",
                &[("year", "The fiscal year.")],
            ))
            .deferred(["export_ledger"])
        })
        .unwrap();
    let session = Session::new("c1");
    assert!(registry.is_deferred("export_ledger"));
    assert!(!registry.is_visible("export_ledger", &session));
    let search = registry
        .call_in(
            &session,
            ToolCall::new("s", "search_tools", r#"{"query":"ledger csv export"}"#),
        )
        .await;
    assert_eq!(
        search.to_model_json()["data"]["tools"][0]["name"],
        "export_ledger"
    );
    assert!(registry.is_visible("export_ledger", &session));

    let unknown = registry
        .change(|c| c.deferred(["no_such_tool"]))
        .unwrap_err();
    assert_eq!(
        unknown,
        BuildError::UnknownTool {
            setting: "deferred",
            name: "no_such_tool".to_owned()
        }
    );
    let plain = Registry::builder()
        .dynamic_tool(tool("ping", "Ping.", &[]))
        .build()
        .unwrap();
    let refused = plain.change(|c| c.deferred(["ping"])).unwrap_err();
    assert_eq!(refused, BuildError::NoToolSearch("ping".to_owned()));
    assert!(
        refused
            .to_string()
            .contains("tool_search(ToolSearch::new())"),
        "{refused}"
    );
    assert!(
        !plain.is_deferred("ping"),
        "a refused change changes nothing"
    );
}

#[test]
fn a_search_tool_name_no_provider_accepts_fails_the_build_instead_of_panicking() {
    let err = builder()
        .tool_search(ToolSearch::new().name("find tools!"))
        .build()
        .unwrap_err();
    assert!(err.to_string().contains("find tools!"), "{err}");
}
