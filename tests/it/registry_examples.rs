//! Example arguments (`#[tool(example = ..)]`, `DynamicToolBuilder::example`): each is checked
//! by the tool's own checks when the registry is built or changed, a failing one is
//! `BuildError::InvalidExample` naming the tool, the example's number and every violation, and
//! the exports carry them (Anthropic's `input_examples`, elsewhere an `Examples:` paragraph of
//! the description) without touching a tool that has none.

use serde_json::{json, Value};
use toolwright::dynamic::DynamicTool;
use toolwright::prelude::*;
use toolwright::providers::Provider;
use toolwright::{BuildError, ErrorKind};

/// Search orders by free text.
#[tool(
    read_only,
    example = r#"{"query":"late orders","max_results":5}"#,
    example = r#"{"query":"refunds"}"#
)]
async fn search_orders(
    /// What to look for.
    #[arg(length(min = 1))]
    query: String,
    /// How many orders to return.
    #[arg(range(min = 1, max = 20), default = 10)]
    max_results: u32,
) -> Result<Vec<String>, ToolError> {
    Ok(vec![format!("{query}: {max_results}")])
}

/// Fetch one order.
#[tool(read_only)]
async fn get_order(order_id: String) -> Result<String, ToolError> {
    Ok(order_id)
}

/// The second example has a number where a string belongs.
#[tool(
    read_only,
    example = r#"{"query":"late orders"}"#,
    example = r#"{"query":5}"#
)]
async fn wrong_type(query: String) -> Result<String, ToolError> {
    Ok(query)
}

/// The example breaks two field rules at once.
#[tool(read_only, example = r#"{"query":"","max_results":50}"#)]
async fn breaks_rules(
    #[arg(length(min = 1))] query: String,
    #[arg(range(min = 1, max = 20))] max_results: u32,
) -> Result<String, ToolError> {
    Ok(format!("{query}{max_results}"))
}

/// The example names an argument the tool does not have.
#[tool(read_only, example = r#"{"query":"x","colour":"red"}"#)]
async fn unknown_field(query: String) -> Result<String, ToolError> {
    Ok(query)
}

fn start_before_end(args: &BackwardsArgs) -> Result<(), ToolError> {
    if args.start > args.end {
        return Err(ToolError::invalid(format!(
            "`start` ({}) must not be after `end` ({})",
            args.start, args.end
        )));
    }
    Ok(())
}

/// The example passes every field rule but not the cross-field rule.
#[tool(read_only, validate = start_before_end, example = r#"{"start":9,"end":3}"#)]
async fn backwards(start: u32, end: u32) -> Result<u32, ToolError> {
    Ok(end - start)
}

fn nobody(_: &RefundArgs, _: &Session) -> Result<(), ToolError> {
    Err(ToolError::new(ErrorKind::Unauthorized, "nobody may refund"))
}

/// Refund an order the conversation found; nobody is authorized.
#[tool(
    idempotent = true,
    authorize = nobody,
    example = r#"{"order_id":"ORD-1"}"#
)]
async fn refund(#[arg(grounded = "order")] order_id: String) -> Result<String, ToolError> {
    Ok(order_id)
}

mod crm {
    use toolwright::prelude::*;
    use toolwright::toolset;

    /// The CRM.
    pub struct Crm;

    #[toolset]
    impl Crm {
        /// Find a customer by name.
        #[tool(read_only, example = r#"{"name":"Ada"}"#)]
        async fn find_customer(&self, name: String) -> Result<String, ToolError> {
            Ok(name)
        }

        /// Find a customer, from a bad example.
        #[tool(read_only, example = r#"{"name":7}"#)]
        async fn find_badly(&self, name: String) -> Result<String, ToolError> {
            Ok(name)
        }
    }
}

mod good {
    use toolwright::prelude::*;
    use toolwright::toolset;

    /// Only a good example.
    pub struct Good;

    #[toolset]
    impl Good {
        /// Find a customer by name.
        #[tool(read_only, example = r#"{"name":"Ada"}"#)]
        async fn find_customer(&self, name: String) -> Result<String, ToolError> {
            Ok(name)
        }
    }
}

fn weather(example: Value) -> DynamicTool {
    DynamicTool::builder("get_weather")
        .description("Current weather for a city.")
        .input_schema(json!({
            "type": "object",
            "properties": {
                "city": {"type": "string", "minLength": 1},
                "days": {"type": "integer", "maximum": 7}
            },
            "required": ["city"],
            "additionalProperties": false
        }))
        .example(json!({"city": "Oslo"}))
        .example(example)
        .effect(toolwright::Effect::ReadOnly)
        .handler(|args, _ctx| async move { Ok(args) })
        .build()
        .unwrap()
}

/// The `InvalidExample` of a build that must fail, with its Display.
fn invalid_example(result: Result<Registry, BuildError>) -> (BuildError, String) {
    match result {
        Ok(_) => panic!("the registry was built despite a failing example"),
        Err(e @ BuildError::InvalidExample { .. }) => {
            let text = e.to_string();
            (e, text)
        }
        Err(other) => panic!("expected InvalidExample, got {other:?}"),
    }
}

fn paths(error: &BuildError) -> Vec<&str> {
    match error {
        BuildError::InvalidExample { violations, .. } => {
            violations.iter().map(|v| v.path.as_str()).collect()
        }
        _ => Vec::new(),
    }
}

#[test]
fn valid_examples_build_and_keep_their_order() {
    let registry = Registry::builder().tool(SearchOrders).build().unwrap();
    let spec = registry.spec("search_orders").unwrap();
    assert_eq!(
        spec.examples(),
        [
            json!({"query": "late orders", "max_results": 5}),
            json!({"query": "refunds"})
        ]
    );
    assert_eq!(spec.description(), "Search orders by free text.");
}

#[tokio::test]
async fn each_example_is_a_call_the_registry_runs() {
    // What a test (or a replay corpus) can rely on: every example passes validation as a call.
    let registry = Registry::builder()
        .tool(SearchOrders)
        .dynamic_tool(weather(json!({"city": "Lima", "days": 3})))
        .build()
        .unwrap();
    let mut made = 0;
    for spec in registry.specs() {
        for (i, example) in spec.examples().iter().enumerate() {
            let call = ToolCall::new(format!("c{i}"), spec.name(), example.to_string());
            let outcome = registry.call(call).await;
            assert_eq!(
                outcome.status(),
                Status::Success,
                "{}: {example}",
                spec.name()
            );
            made += 1;
        }
    }
    assert_eq!(made, 4);
}

/// The slips models make with a call's arguments, applied to a good argument text.
fn damaged(text: &str) -> Vec<(&'static str, String)> {
    let object: serde_json::Map<String, Value> = serde_json::from_str(text).unwrap();
    let as_strings: serde_json::Map<String, Value> = object
        .iter()
        .map(|(k, v)| {
            let v = match v {
                Value::Number(n) => Value::String(n.to_string()),
                other => other.clone(),
            };
            (k.clone(), v)
        })
        .collect();
    vec![
        ("a code fence", format!("```json\n{text}\n```")),
        (
            "a trailing comma",
            format!("{},}}", &text[..text.len() - 1]),
        ),
        ("numbers as strings", Value::Object(as_strings).to_string()),
        ("single quotes", text.replace('"', "'")),
    ]
}

#[tokio::test]
async fn each_example_damaged_as_models_damage_arguments_is_repaired_by_the_rules() {
    // What deterministic repair's tests can build on: the tool's own examples, each damaged
    // the way models damage arguments, come back as successful repaired calls.
    use toolwright::repair::DeterministicRepair;
    let registry = Registry::builder()
        .tool(SearchOrders)
        .dynamic_tool(weather(json!({"city": "Lima", "days": 3})))
        .deterministic_repair(DeterministicRepair::default())
        .build()
        .unwrap();
    let mut repaired = 0;
    for spec in registry.specs() {
        for example in spec.examples().iter() {
            let text = example.to_string();
            for (slip, broken) in damaged(&text) {
                if broken == text {
                    continue; // an example without numbers has no number to damage
                }
                let call = ToolCall::new("c", spec.name(), broken.clone());
                let outcome = registry.call(call).await;
                assert_eq!(
                    outcome.status(),
                    Status::Success,
                    "{} with {slip}: {broken}: {}",
                    spec.name(),
                    outcome.to_model_string()
                );
                assert_eq!(
                    outcome.to_model_json()["repaired"],
                    true,
                    "{slip}: {broken}"
                );
                repaired += 1;
            }
        }
    }
    assert!(repaired >= 12, "{repaired}");
}

#[test]
fn an_example_of_the_wrong_type_names_the_tool_the_example_and_the_path() {
    let (error, text) = invalid_example(Registry::builder().tool(WrongType).build());
    let BuildError::InvalidExample {
        tool, number, kind, ..
    } = &error
    else {
        unreachable!()
    };
    assert_eq!(
        (tool.as_str(), *number, *kind),
        ("wrong_type", 2, ErrorKind::SchemaMismatch)
    );
    assert_eq!(paths(&error), ["/query"]);
    assert!(text.contains("tool `wrong_type`"), "{text}");
    assert!(text.contains("example 2"), "{text}");
    assert!(
        text.contains("at `/query`: `query`: expected a string, got number 5"),
        "{text}"
    );
}

#[test]
fn an_example_breaking_field_rules_reports_every_violation() {
    let (error, text) = invalid_example(Registry::builder().tool(BreaksRules).build());
    assert_eq!(paths(&error), ["/query", "/max_results"]);
    assert!(text.contains("tool `breaks_rules`: example 1"), "{text}");
    assert!(text.contains("(schema_mismatch)"), "{text}");
    assert!(
        text.contains("at `/max_results`: `max_results` must be at most 20, got 50"),
        "{text}"
    );
    assert!(text.contains("at `/query`"), "{text}");
}

#[test]
fn an_example_with_an_unknown_field_is_refused_as_the_call_would_be() {
    let (error, text) = invalid_example(Registry::builder().tool(UnknownField).build());
    let BuildError::InvalidExample { kind, .. } = &error else {
        unreachable!()
    };
    assert_eq!(*kind, ErrorKind::UnknownArgument);
    assert_eq!(paths(&error), ["/colour"]);
    assert!(text.contains("tool `unknown_field`: example 1"), "{text}");
    assert!(
        text.contains("at `/colour`: unknown argument `colour`"),
        "{text}"
    );
}

#[test]
fn an_example_failing_the_semantic_rule_is_refused_with_its_message() {
    let (error, text) = invalid_example(Registry::builder().tool(Backwards).build());
    let BuildError::InvalidExample { kind, number, .. } = &error else {
        unreachable!()
    };
    assert_eq!((*kind, *number), (ErrorKind::SemanticInvalid, 1));
    assert!(text.contains("tool `backwards`: example 1"), "{text}");
    assert!(
        text.contains("`start` (9) must not be after `end` (3)"),
        "{text}"
    );
}

#[test]
fn provenance_and_authorization_are_not_asked_of_an_example() {
    // The id was never returned in a conversation and nobody is authorized: neither can be
    // known when the registry is built, so the example stands.
    let registry = Registry::builder().tool(Refund).build().unwrap();
    assert_eq!(
        registry.spec("refund").unwrap().examples(),
        [json!({"order_id": "ORD-1"})]
    );
}

#[test]
fn a_toolset_methods_examples_are_kept_and_checked() {
    let registry = Registry::builder().toolset(good::Good).build().unwrap();
    assert_eq!(
        registry.spec("find_customer").unwrap().examples(),
        [json!({"name": "Ada"})]
    );
    let (error, text) = invalid_example(Registry::builder().toolset(crm::Crm).build());
    assert_eq!(paths(&error), ["/name"]);
    assert!(text.contains("tool `find_badly`: example 1"), "{text}");
}

#[test]
fn a_runtime_tools_examples_are_checked_against_its_schema() {
    let registry = Registry::builder()
        .dynamic_tool(weather(json!({"city": "Lima", "days": 3})))
        .build()
        .unwrap();
    assert_eq!(registry.spec("get_weather").unwrap().examples().len(), 2);

    let (error, text) = invalid_example(
        Registry::builder()
            .dynamic_tool(weather(json!({"city": "", "days": 30})))
            .build(),
    );
    let mut found = paths(&error);
    found.sort_unstable();
    assert_eq!(found, ["/city", "/days"]);
    assert!(text.contains("tool `get_weather`: example 2"), "{text}");
    assert!(
        text.contains("at `/days`: `days` must be at most 7, got 30"),
        "{text}"
    );

    let (error, _) = invalid_example(
        Registry::builder()
            .dynamic_tool(weather(json!(["Oslo"])))
            .build(),
    );
    assert!(matches!(
        error,
        BuildError::InvalidExample { number: 2, .. }
    ));
}

#[test]
fn a_change_adding_a_tool_with_a_failing_example_applies_nothing() {
    let registry = Registry::builder().tool(GetOrder).build().unwrap();
    let result = registry.change(|c| c.tool(SearchOrders).tool(WrongType));
    assert!(
        matches!(result, Err(BuildError::InvalidExample { ref tool, number: 2, .. }) if tool == "wrong_type"),
        "{result:?}"
    );
    assert_eq!(registry.names(), ["get_order"]);
    registry
        .change(|c| c.dynamic_tool(weather(json!({"city": "Lima"}))))
        .unwrap();
    assert_eq!(registry.names(), ["get_order", "get_weather"]);
}

fn exported(provider: Provider) -> Value {
    let registry = Registry::builder()
        .tool(SearchOrders)
        .tool(GetOrder)
        .build()
        .unwrap();
    registry.export(provider).unwrap()
}

/// The exported definition of `name`, wherever the provider puts its list.
fn definition(tools: &Value, name: &str) -> Value {
    let list = tools[0]
        .get("functionDeclarations")
        .unwrap_or(tools)
        .as_array()
        .unwrap();
    list.iter()
        .find(|d| d["name"] == name || d["function"]["name"] == name)
        .unwrap_or_else(|| panic!("no `{name}` in {tools}"))
        .clone()
}

fn description(definition: &Value) -> &str {
    definition["description"]
        .as_str()
        .or_else(|| definition["function"]["description"].as_str())
        .unwrap()
}

const PARAGRAPH: &str = "Search orders by free text.\n\nExamples:\n{\"query\":\"late orders\",\"max_results\":5}\n{\"query\":\"refunds\"}";

#[test]
fn anthropic_exports_the_examples_as_input_examples() {
    for export in [
        Provider::Anthropic.strict(false),
        Provider::Anthropic.strict(true),
    ] {
        let tools = Registry::builder()
            .tool(SearchOrders)
            .build()
            .unwrap()
            .export(export)
            .unwrap();
        let search = definition(&tools, "search_orders");
        assert_eq!(
            search["input_examples"],
            json!([{"query": "late orders", "max_results": 5}, {"query": "refunds"}])
        );
        // Anthropic has the field: the description stays the tool's own.
        assert_eq!(description(&search), "Search orders by free text.");
    }
}

#[test]
fn providers_without_a_field_end_the_description_with_the_examples() {
    for provider in [
        Provider::OpenAi,
        Provider::OpenAiResponses,
        Provider::Gemini,
        Provider::GeminiJsonSchema,
        Provider::Mcp,
    ] {
        let search = definition(&exported(provider), "search_orders");
        assert_eq!(description(&search), PARAGRAPH, "{provider}");
        assert!(search.get("input_examples").is_none(), "{provider}");
    }
}

#[test]
fn a_tool_without_examples_exports_as_it_is_described() {
    for &provider in Provider::ALL {
        let get = definition(&exported(provider), "get_order");
        assert_eq!(description(&get), "Fetch one order.", "{provider}");
        assert!(get.get("input_examples").is_none(), "{provider}");
        assert!(
            get["function"].get("input_examples").is_none(),
            "{provider}"
        );
    }
}
