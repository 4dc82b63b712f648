//! Provider adapters: exact export shapes, strict-mode rewrites, refusals, parsing each
//! provider's calls (and its malformed JSON), and formatting outcomes back, end to end through
//! `Registry::call`.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use toolwright::prelude::*;
use toolwright::providers::{
    anthropic, gemini, mcp, mcp::McpHints, openai, Construct, Export, ParseErrorKind, Provider,
};

// ---------------------------------------------------------------------------------------------
// Tools

/// Check that a host answers.
#[tool(read_only)]
async fn ping(
    /// Host name.
    host: String,
) -> Result<String, ToolError> {
    if host == "down.example" {
        return Err(ToolError::unavailable("connection refused"));
    }
    Ok(format!("{host} is up"))
}

/// A postal address.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct Address {
    /// Street and number.
    street: String,
    /// Postal code.
    zip: Option<String>,
}

/// Seat class.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Cabin {
    /// The cheapest seats.
    Economy,
    /// More room.
    Business,
}

/// One traveller.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct Traveller {
    /// Full name.
    name: String,
    /// Age in years.
    age: u32,
}

/// How to pay.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "method", rename_all = "snake_case", deny_unknown_fields)]
enum Payment {
    /// A card on file.
    Card {
        /// Last four digits.
        last4: String,
    },
    /// A voucher.
    Voucher {
        /// The voucher code.
        code: String,
    },
}

/// A confirmed booking.
#[derive(Debug, Serialize, schemars::JsonSchema)]
struct Booking {
    id: String,
    seats: u32,
}

/// Book a trip for a group.
#[tool(idempotent = true)]
async fn book_trip(
    /// Who travels.
    #[arg(length(min = 1, max = 4))]
    travellers: Vec<Traveller>,
    /// Billing address.
    billing: Address,
    /// Seat class; any when absent.
    cabin: Option<Cabin>,
    /// How many seats.
    #[arg(range(min = 1, max = 9), default = 1)]
    seats: u32,
    /// A note for the airline.
    #[arg(length(max = 200))]
    note: Option<String>,
    /// How to pay.
    payment: Payment,
) -> Result<Booking, ToolError> {
    let _ = (billing.street, billing.zip, cabin, note, payment);
    Ok(Booking {
        id: format!("B-{}", travellers.len()),
        seats,
    })
}

/// Tag a record with free-form labels.
#[tool(idempotent = true)]
async fn tag_record(
    /// The record.
    record_id: String,
    /// Label name to value.
    labels: HashMap<String, String>,
) -> Result<usize, ToolError> {
    Ok(record_id.len() + labels.len())
}

/// A tree of categories.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
struct Category {
    name: String,
    children: Vec<Category>,
}

/// Import a category tree.
#[tool]
async fn import_tree(
    /// The root category.
    root: Category,
) -> Result<String, ToolError> {
    Ok(root.name)
}

/// Store any JSON value.
#[tool]
async fn store_value(
    /// The value.
    value: serde_json::Value,
) -> Result<(), ToolError> {
    let _ = value;
    Ok(())
}

/// Store a pair.
#[tool]
async fn store_pair(
    /// Rank and label.
    pair: (u8, String),
) -> Result<(), ToolError> {
    let _ = pair;
    Ok(())
}

/// Arguments whose field the legacy API spells `user-name`.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct LegacyArgs {
    /// The user's name.
    #[serde(rename = "user-name")]
    user_name: String,
}

struct LegacyLookup;

impl Tool for LegacyLookup {
    type Args = LegacyArgs;
    type Output = String;
    const META: toolwright::ToolMeta =
        toolwright::ToolMeta::new("legacy_lookup", "Look up a user in the legacy API.").read_only();
    async fn invoke(
        &self,
        args: LegacyArgs,
        _: &toolwright::Invocation<'_>,
    ) -> Result<String, ToolError> {
        Ok(args.user_name)
    }
}

fn registry() -> Registry {
    Registry::builder()
        .tool(Ping)
        .tool(BookTrip)
        .build()
        .unwrap()
}

fn spec<'a>(registry: &'a Registry, name: &str) -> &'a toolwright::ToolSpec {
    registry.spec(name).unwrap()
}

fn only(registry: &Registry, export: impl Into<Export>, name: &str) -> Value {
    export.into().tool(spec(registry, name)).unwrap()
}

fn ping_schema() -> Value {
    json!({
        "type": "object",
        "additionalProperties": false,
        "properties": {"host": {"type": "string", "description": "Host name."}},
        "required": ["host"]
    })
}

// ---------------------------------------------------------------------------------------------
// Exact shapes

#[test]
fn openai_chat_export_is_a_function_tool_with_strict_on() {
    let tools = Registry::builder()
        .tool(Ping)
        .build()
        .unwrap()
        .export(Provider::OpenAi)
        .unwrap();
    assert_eq!(
        tools,
        json!([{
            "type": "function",
            "function": {
                "name": "ping",
                "description": "Check that a host answers.",
                "parameters": ping_schema(),
                "strict": true
            }
        }])
    );
}

#[test]
fn openai_responses_export_is_flat_and_writes_strict_out() {
    let r = registry();
    assert_eq!(
        only(&r, Provider::OpenAiResponses, "ping"),
        json!({
            "type": "function",
            "name": "ping",
            "description": "Check that a host answers.",
            "parameters": ping_schema(),
            "strict": true
        })
    );
    assert_eq!(
        only(&r, Provider::OpenAiResponses.strict(false), "ping")["strict"],
        json!(false)
    );
}

#[test]
fn anthropic_export_has_input_schema_and_strict_only_when_asked() {
    let r = registry();
    assert_eq!(
        only(&r, Provider::Anthropic, "ping"),
        json!({
            "name": "ping",
            "description": "Check that a host answers.",
            "input_schema": ping_schema()
        })
    );
    let strict = only(&r, Provider::Anthropic.strict(true), "ping");
    assert_eq!(strict["strict"], json!(true));
    assert_eq!(strict["input_schema"], ping_schema());
}

#[test]
fn gemini_export_is_one_tool_of_function_declarations_in_the_openapi_subset() {
    let tools = Registry::builder()
        .tool(Ping)
        .build()
        .unwrap()
        .export(Provider::Gemini)
        .unwrap();
    assert_eq!(
        tools,
        json!([{"functionDeclarations": [{
            "name": "ping",
            "description": "Check that a host answers.",
            "parameters": {
                "type": "OBJECT",
                "properties": {"host": {"type": "STRING", "description": "Host name."}},
                "required": ["host"]
            }
        }]}])
    );
}

#[test]
fn gemini_json_schema_export_uses_parameters_json_schema() {
    let tools = Registry::builder()
        .tool(Ping)
        .build()
        .unwrap()
        .export(Provider::GeminiJsonSchema)
        .unwrap();
    assert_eq!(
        tools,
        json!([{"functionDeclarations": [{
            "name": "ping",
            "description": "Check that a host answers.",
            "parametersJsonSchema": ping_schema()
        }]}])
    );
}

#[test]
fn mcp_export_has_title_schemas_and_annotations_from_metadata() {
    let r = registry();
    let ping = only(&r, Provider::Mcp, "ping");
    assert_eq!(ping["name"], "ping");
    assert_eq!(ping["title"], "Ping");
    assert_eq!(ping["description"], "Check that a host answers.");
    assert_eq!(ping["inputSchema"], ping_schema());
    assert_eq!(
        ping["annotations"],
        json!({"readOnlyHint": true, "destructiveHint": false, "idempotentHint": true, "openWorldHint": true})
    );
    // The output schema describes the envelope, with the tool's own result under `data`.
    assert_eq!(ping["outputSchema"]["type"], "object");
    assert_eq!(
        ping["outputSchema"]["properties"]["data"],
        json!({"type": "string"})
    );
    assert_eq!(ping["outputSchema"]["required"], json!(["status"]));

    let book = only(&r, Provider::Mcp, "book_trip");
    assert_eq!(
        book["annotations"],
        json!({"readOnlyHint": false, "destructiveHint": true, "idempotentHint": true, "openWorldHint": true})
    );
    // The result type's definitions move to the envelope's root, where `data`'s refs point.
    assert_eq!(
        book["outputSchema"]["properties"]["data"]["type"],
        json!("object")
    );
}

#[test]
fn mcp_hints_override_what_metadata_cannot_know() {
    let r = registry();
    let export = Export::new(Provider::Mcp).mcp_hints(
        "book_trip",
        McpHints::new().destructive(false).open_world(false),
    );
    let book = export.tool(spec(&r, "book_trip")).unwrap();
    assert_eq!(book["annotations"]["destructiveHint"], json!(false));
    assert_eq!(book["annotations"]["openWorldHint"], json!(false));
    let ping = export.tool(spec(&r, "ping")).unwrap();
    assert_eq!(ping["annotations"]["openWorldHint"], json!(true));
}

#[test]
fn non_strict_exports_keep_the_schema_as_it_is() {
    let r = registry();
    let original = spec(&r, "book_trip").input_schema().clone();
    assert_eq!(
        only(&r, Provider::OpenAi.strict(false), "book_trip")["function"]["parameters"],
        original
    );
    assert_eq!(
        only(&r, Provider::Anthropic, "book_trip")["input_schema"],
        original
    );
    assert_eq!(
        only(&r, Provider::Mcp, "book_trip")["inputSchema"],
        original
    );
}

// ---------------------------------------------------------------------------------------------
// Strict transformations

fn openai_strict_book_trip() -> Value {
    only(&registry(), Provider::OpenAi, "book_trip")["function"]["parameters"].clone()
}

#[test]
fn openai_strict_requires_every_property_and_closes_every_object() {
    let p = openai_strict_book_trip();
    assert_eq!(
        p["required"],
        json!(["travellers", "billing", "cabin", "seats", "note", "payment"])
    );
    assert_eq!(p["additionalProperties"], json!(false));
    // The inlined billing address (a `$ref` with a description beside it) is closed too and
    // lists its optional zip as required-and-nullable.
    let billing = &p["properties"]["billing"];
    assert_eq!(billing["description"], "Billing address.");
    assert_eq!(billing["additionalProperties"], json!(false));
    assert_eq!(billing["required"], json!(["street", "zip"]));
    assert_eq!(
        billing["properties"]["zip"]["type"],
        json!(["string", "null"])
    );
    // Every object of the tagged union is closed as well.
    for branch in p["properties"]["payment"]["anyOf"].as_array().unwrap() {
        assert_eq!(branch["additionalProperties"], json!(false));
    }
}

#[test]
fn openai_strict_inlines_refs_that_carry_siblings_and_keeps_bare_refs() {
    let p = openai_strict_book_trip();
    let text = p.to_string();
    assert!(p["properties"]["billing"].get("$ref").is_none());
    // `items: {$ref}` has no siblings and stays a reference into $defs.
    assert_eq!(
        p["properties"]["travellers"]["items"],
        json!({"$ref": "#/$defs/Traveller"})
    );
    assert!(p["$defs"]["Traveller"].is_object());
    // The address was inlined everywhere, so its definition is gone.
    assert!(p["$defs"].get("Address").is_none(), "{text}");
}

#[test]
fn openai_strict_restates_what_it_rejects_in_the_description() {
    let p = openai_strict_book_trip();
    let note = &p["properties"]["note"];
    assert!(note.get("maxLength").is_none());
    assert_eq!(
        note["description"],
        "A note for the airline. At most 200 characters."
    );
    let seats = &p["properties"]["seats"];
    assert!(seats.get("default").is_none() && seats.get("format").is_none());
    assert_eq!(seats["description"], "How many seats. Default: 1.");
    // Bounds strict mode supports stay keywords.
    assert_eq!(
        (seats["minimum"].clone(), seats["maximum"].clone()),
        (json!(1), json!(9))
    );
    // minItems/maxItems are supported: kept.
    let travellers = &p["properties"]["travellers"];
    assert_eq!(
        (
            travellers["minItems"].clone(),
            travellers["maxItems"].clone()
        ),
        (json!(1), json!(4))
    );
}

#[test]
fn integer_formats_become_the_bounds_they_imply() {
    let p = openai_strict_book_trip();
    let age = &p["$defs"]["Traveller"]["properties"]["age"];
    assert!(age.get("format").is_none());
    assert_eq!(age["minimum"], json!(0));
    assert_eq!(age["maximum"], json!(4_294_967_295u64));
}

#[test]
fn documented_enums_become_enum_with_the_variant_docs_restated() {
    let p = openai_strict_book_trip();
    let cabin = &p["$defs"]["Cabin"];
    assert!(cabin.get("oneOf").is_none());
    assert_eq!(cabin["enum"], json!(["economy", "business"]));
    assert_eq!(cabin["type"], json!("string"));
    assert_eq!(
        cabin["description"],
        "Seat class. `economy`: The cheapest seats; `business`: More room."
    );
    // The optional cabin is required and nullable through anyOf.
    assert_eq!(
        p["properties"]["cabin"]["anyOf"],
        json!([{"$ref": "#/$defs/Cabin"}, {"type": "null"}])
    );
}

#[test]
fn tagged_unions_become_any_of_with_constant_tags_as_enums() {
    let p = openai_strict_book_trip();
    let branches = p["properties"]["payment"]["anyOf"].as_array().unwrap();
    assert_eq!(branches.len(), 2);
    assert_eq!(
        branches[0]["properties"]["method"],
        json!({"type": "string", "enum": ["card"]})
    );
    assert!(!p.to_string().contains("oneOf"));
    assert!(!p.to_string().contains("\"const\""));
}

#[tokio::test]
async fn what_openai_strict_lets_the_model_send_the_tool_accepts() {
    // Strict mode makes the model send every field, `null` for the ones it leaves out; the
    // exported schema admits exactly such arguments, and the registry must accept them.
    let r = registry();
    let strict = openai_strict_book_trip();
    let args = json!({
        "travellers": [{"name": "Ada", "age": 36}],
        "billing": {"street": "1 Main St", "zip": null},
        "cabin": null,
        "seats": 2,
        "note": null,
        "payment": {"method": "voucher", "code": "V-1"}
    });
    assert!(
        jsonschema::is_valid(&strict, &args),
        "strict schema rejects {args}"
    );
    let outcome = r
        .call(ToolCall::new("c1", "book_trip", args.to_string()))
        .await;
    assert_eq!(
        outcome.status(),
        Status::Success,
        "{}",
        outcome.to_model_json()
    );
    // And the strict schema refuses what strict decoding must never produce.
    assert!(!jsonschema::is_valid(&strict, &json!({"travellers": []})));
}

#[test]
fn anthropic_strict_keeps_optional_fields_and_restates_numeric_bounds() {
    let p =
        only(&registry(), Provider::Anthropic.strict(true), "book_trip")["input_schema"].clone();
    assert_eq!(p["required"], json!(["travellers", "billing", "payment"]));
    let seats = &p["properties"]["seats"];
    assert!(seats.get("minimum").is_none() && seats.get("maximum").is_none());
    assert_eq!(
        seats["description"],
        "How many seats. Must be at least 1 and at most 9. Default: 1."
    );
    // minItems 1 is supported, maxItems is not.
    let travellers = &p["properties"]["travellers"];
    assert_eq!(travellers["minItems"], json!(1));
    assert!(travellers.get("maxItems").is_none());
    assert_eq!(travellers["description"], "Who travels. At most 4 items.");
    // Nullable types are an anyOf with a null branch rather than a type list.
    assert_eq!(
        p["properties"]["note"]["anyOf"],
        json!([{"type": "string"}, {"type": "null"}])
    );
    assert_eq!(
        p["properties"]["billing"]["additionalProperties"],
        json!(false)
    );
}

#[test]
fn gemini_inlines_every_ref_and_writes_nullable_instead_of_null_types() {
    let p = only(&registry(), Provider::Gemini, "book_trip")["parameters"].clone();
    let text = p.to_string();
    assert!(!text.contains("$ref") && !text.contains("$defs"), "{text}");
    assert!(
        !text.contains("oneOf") && !text.contains("\"const\""),
        "{text}"
    );
    assert!(!text.contains("additionalProperties"), "{text}");
    assert!(!text.contains("\"null\""), "{text}");
    assert_eq!(
        p["properties"]["cabin"],
        json!({
            "description": "Seat class; any when absent. `economy`: The cheapest seats; `business`: More room.",
            "type": "STRING",
            "enum": ["economy", "business"],
            "nullable": true
        })
    );
    assert_eq!(
        p["properties"]["billing"]["properties"]["zip"],
        json!({"type": "STRING", "description": "Postal code.", "nullable": true})
    );
    assert_eq!(
        p["properties"]["travellers"]["items"]["properties"]["age"]["type"],
        "INTEGER"
    );
    // Gemini's Schema has lengths and defaults: kept as keywords.
    assert_eq!(p["properties"]["note"]["maxLength"], json!(200));
    assert_eq!(p["properties"]["seats"]["default"], json!(1));
    assert_eq!(p["required"], json!(["travellers", "billing", "payment"]));
}

#[test]
fn gemini_restates_number_enums_it_cannot_express() {
    /// Pick a size.
    #[tool]
    async fn pick_size(
        /// Size in centimetres.
        #[arg(one_of = [10, 20, 40])]
        size: u32,
    ) -> Result<u32, ToolError> {
        Ok(size)
    }
    let r = Registry::builder().tool(PickSize).build().unwrap();
    let size = only(&r, Provider::Gemini, "pick_size")["parameters"]["properties"]["size"].clone();
    assert!(size.get("enum").is_none());
    assert_eq!(size["type"], "INTEGER");
    assert_eq!(
        size["description"],
        "Size in centimetres. One of: 10, 20, 40."
    );
    // OpenAI keeps integer enums.
    let openai = only(&r, Provider::OpenAi, "pick_size");
    assert_eq!(
        openai["function"]["parameters"]["properties"]["size"]["enum"],
        json!([10, 20, 40])
    );
}

#[test]
fn gemini_leaves_parameters_out_for_a_tool_without_arguments() {
    /// Report the server time.
    #[tool(read_only)]
    async fn server_time() -> Result<u64, ToolError> {
        Ok(0)
    }
    let r = Registry::builder().tool(ServerTime).build().unwrap();
    assert_eq!(
        only(&r, Provider::Gemini, "server_time"),
        json!({"name": "server_time", "description": "Report the server time."})
    );
    // Every other provider still gets an (empty) object schema.
    let openai = only(&r, Provider::OpenAi, "server_time");
    assert_eq!(
        openai["function"]["parameters"],
        json!({"type": "object", "additionalProperties": false, "properties": {}, "required": []})
    );
}

#[test]
fn openai_strict_refuses_schemas_nested_deeper_than_its_limit() {
    macro_rules! nest {
        ($outer:ident => $inner:ident $(, $rest:ident)*) => {
            #[derive(Deserialize, schemars::JsonSchema)]
            #[allow(dead_code)]
            struct $outer { inner: $inner }
            nest!($inner $(=> $rest)*);
        };
        ($outer:ident => $inner:ident $(=> $rest:ident)*) => {
            nest!($outer => $inner $(, $rest)*);
        };
        ($last:ident) => {
            #[derive(Deserialize, schemars::JsonSchema)]
            #[allow(dead_code)]
            struct $last { leaf: String }
        };
    }
    nest!(L1 => L2, L3, L4, L5, L6, L7, L8, L9, L10, L11);

    /// Store a deeply nested value.
    #[tool]
    async fn store_deep(
        /// Eleven levels down.
        deep: L1,
    ) -> Result<(), ToolError> {
        let _ = deep;
        Ok(())
    }
    let r = Registry::builder().tool(StoreDeep).build().unwrap();
    let err = refusal(Provider::OpenAi, &r);
    assert_eq!(
        err.problems()[0].construct(),
        &Construct::Limit {
            what: "levels of object nesting",
            limit: 10,
            actual: 12
        },
        "{err}"
    );
    r.export(Provider::Anthropic.strict(true)).unwrap();
}

// ---------------------------------------------------------------------------------------------
// Refusals

fn refusal(export: impl Into<Export>, registry: &Registry) -> toolwright::providers::ExportError {
    registry.export(export).unwrap_err()
}

#[test]
fn a_map_under_openai_strict_is_refused_with_tool_path_and_construct() {
    let r = Registry::builder().tool(TagRecord).build().unwrap();
    let err = refusal(Provider::OpenAi, &r);
    assert_eq!(err.provider(), Provider::OpenAi);
    let [problem] = err.problems() else {
        panic!("{err}")
    };
    assert_eq!(problem.tool(), "tag_record");
    assert_eq!(problem.path(), "/properties/labels/additionalProperties");
    assert_eq!(problem.construct(), &Construct::Map);
    let text = err.to_string();
    assert!(
        text.contains("tag_record") && text.contains("map"),
        "{text}"
    );
    // Where maps exist, the same tool exports.
    for ok in [
        Provider::OpenAi.strict(false),
        Provider::Anthropic.into(),
        Provider::GeminiJsonSchema.into(),
        Provider::Mcp.into(),
    ] {
        r.export(ok).unwrap();
    }
    // Anthropic strict and Gemini's OpenAPI subset cannot express it.
    assert_eq!(
        refusal(Provider::Anthropic.strict(true), &r).problems()[0].construct(),
        &Construct::Map
    );
    assert_eq!(
        refusal(Provider::Gemini, &r).problems()[0].construct(),
        &Construct::Map
    );
}

#[test]
fn a_recursive_type_is_refused_where_references_cannot_recurse() {
    let r = Registry::builder().tool(ImportTree).build().unwrap();
    for export in [
        Export::from(Provider::Gemini),
        Provider::Anthropic.strict(true),
    ] {
        let err = refusal(export, &r);
        assert!(
            err.problems().iter().any(|p| p.construct()
                == &Construct::RecursiveType {
                    name: "Category".into()
                }),
            "{err}"
        );
    }
    // OpenAI strict and Gemini's JSON Schema mode follow `$ref` recursively.
    let openai = r.export(Provider::OpenAi).unwrap();
    let params = &openai[0]["function"]["parameters"];
    assert_eq!(
        params["$defs"]["Category"]["properties"]["children"]["items"],
        json!({"$ref": "#/$defs/Category"})
    );
    assert_eq!(
        params["$defs"]["Category"]["additionalProperties"],
        json!(false)
    );
    r.export(Provider::GeminiJsonSchema).unwrap();
}

#[test]
fn a_value_of_any_shape_is_refused_by_strict_dialects() {
    let r = Registry::builder().tool(StoreValue).build().unwrap();
    for export in [
        Export::from(Provider::OpenAi),
        Provider::Anthropic.strict(true),
        Provider::Gemini.into(),
    ] {
        let err = refusal(export, &r);
        assert_eq!(err.problems()[0].construct(), &Construct::AnyValue, "{err}");
        assert_eq!(err.problems()[0].path(), "/properties/value");
    }
    let gemini_json = r.export(Provider::GeminiJsonSchema).unwrap();
    assert_eq!(
        gemini_json[0]["functionDeclarations"][0]["parametersJsonSchema"]["properties"]["value"],
        json!({"description": "The value."})
    );
}

#[test]
fn a_tuple_is_refused_except_by_gemini_json_schema() {
    let r = Registry::builder().tool(StorePair).build().unwrap();
    for export in [
        Export::from(Provider::OpenAi),
        Provider::Anthropic.strict(true),
        Provider::Gemini.into(),
    ] {
        let err = refusal(export, &r);
        assert_eq!(err.problems()[0].construct(), &Construct::Tuple, "{err}");
        assert_eq!(err.problems()[0].path(), "/properties/pair/prefixItems");
    }
    r.export(Provider::GeminiJsonSchema).unwrap();
}

#[test]
fn gemini_refuses_parameter_names_it_cannot_take() {
    let r = Registry::builder().tool(LegacyLookup).build().unwrap();
    let err = refusal(Provider::Gemini, &r);
    assert_eq!(
        err.problems()[0].construct(),
        &Construct::ParameterName {
            name: "user-name".into()
        }
    );
    r.export(Provider::OpenAi).unwrap();
}

#[test]
fn gemini_refuses_tool_names_that_start_with_a_digit() {
    #[derive(Deserialize, schemars::JsonSchema)]
    #[serde(deny_unknown_fields)]
    struct NoArgs {}
    struct TwoFa;
    impl Tool for TwoFa {
        type Args = NoArgs;
        type Output = bool;
        const META: toolwright::ToolMeta = toolwright::ToolMeta::new("2fa_check", "Check 2FA.");
        async fn invoke(
            &self,
            _: NoArgs,
            _: &toolwright::Invocation<'_>,
        ) -> Result<bool, ToolError> {
            Ok(true)
        }
    }
    let r = Registry::builder().tool(TwoFa).build().unwrap();
    let err = refusal(Provider::Gemini, &r);
    assert_eq!(err.problems()[0].construct(), &Construct::ToolName);
    assert_eq!(err.problems()[0].tool(), "2fa_check");
    r.export(Provider::OpenAi).unwrap();
}

#[test]
fn every_problem_of_every_tool_is_reported_at_once() {
    let r = Registry::builder()
        .tool(TagRecord)
        .tool(StoreValue)
        .tool(StorePair)
        .tool(Ping)
        .build()
        .unwrap();
    let err = refusal(Provider::OpenAi, &r);
    let tools: Vec<&str> = err.problems().iter().map(|p| p.tool()).collect();
    assert_eq!(tools, ["store_pair", "store_value", "tag_record"]);
}

// ---------------------------------------------------------------------------------------------
// JSON Schema validity of every exported schema

#[test]
fn every_exported_json_schema_is_valid_draft_2020_12() {
    let r = Registry::builder()
        .tool(Ping)
        .tool(BookTrip)
        .tool(ImportTree)
        .build()
        .unwrap();
    let mut checked = 0;
    for export in [
        Export::from(Provider::OpenAi),
        Provider::OpenAiResponses.into(),
        Provider::Anthropic.into(),
        Provider::Anthropic.strict(true),
        Provider::GeminiJsonSchema.into(),
        Provider::Mcp.into(),
    ] {
        for spec in r.specs() {
            let Ok(tool) = export.tool(spec) else {
                continue;
            };
            let schemas = [
                &tool["function"]["parameters"],
                &tool["parameters"],
                &tool["input_schema"],
                &tool["parametersJsonSchema"],
                &tool["inputSchema"],
                &tool["outputSchema"],
            ];
            for schema in schemas.into_iter().filter(|s| s.is_object()) {
                jsonschema::draft202012::meta::validate(schema)
                    .unwrap_or_else(|e| panic!("{}: {e}\n{schema}", spec.name()));
                checked += 1;
            }
        }
    }
    assert!(checked >= 15, "{checked}");
}

// ---------------------------------------------------------------------------------------------
// Parse -> call -> format round trips

#[tokio::test]
async fn openai_chat_round_trip_answers_each_call_by_id() {
    let r = registry();
    let response = json!({
        "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "gpt-x",
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
            "role": "assistant", "content": null,
            "tool_calls": [
                {"id": "call_a", "type": "function", "function": {"name": "ping", "arguments": "{\"host\":\"db.example\"}"}},
                {"id": "call_b", "type": "function", "function": {"name": "ping", "arguments": "{\"host\":"}}
            ]
        }}]
    });
    let calls = openai::parse_calls(&response).unwrap();
    assert_eq!(calls.len(), 2);
    let ok = r.call(calls[0].clone()).await;
    let bad = r.call(calls[1].clone()).await;
    assert_eq!(bad.error_kind(), Some(ErrorKind::InvalidJson));
    assert_eq!(
        openai::tool_message(&ok),
        json!({"role": "tool", "tool_call_id": "call_a", "content": ok.to_model_string()})
    );
    let message = openai::tool_message(&bad);
    assert_eq!(message["tool_call_id"], "call_b");
    let content: Value = serde_json::from_str(message["content"].as_str().unwrap()).unwrap();
    assert_eq!(content["error_type"], "invalid_json");
}

#[tokio::test]
async fn openai_responses_round_trip_uses_call_id_not_item_id() {
    let r = registry();
    let response = json!({"id": "resp_1", "object": "response", "output": [
        {"type": "reasoning", "id": "rs_1", "summary": []},
        {"type": "function_call", "id": "fc_1", "call_id": "call_9", "name": "ping",
         "arguments": "{\"host\":\"down.example\"}", "status": "completed"}
    ]});
    let calls = openai::parse_response_calls(&response).unwrap();
    assert_eq!(
        calls,
        [ToolCall::new(
            "call_9",
            "ping",
            "{\"host\":\"down.example\"}"
        )]
    );
    let outcome = r.call(calls[0].clone()).await;
    assert_eq!(outcome.error_kind(), Some(ErrorKind::Unavailable));
    assert_eq!(
        openai::function_call_output(&outcome),
        json!({"type": "function_call_output", "call_id": "call_9", "output": outcome.to_model_string()})
    );
}

#[tokio::test]
async fn anthropic_round_trip_sets_is_error_on_failures() {
    let r = registry();
    let message = json!({"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-x",
    "stop_reason": "tool_use", "content": [
        {"type": "text", "text": "Checking both."},
        {"type": "tool_use", "id": "toolu_1", "name": "ping", "input": {"host": "db.example"}},
        {"type": "tool_use", "id": "toolu_2", "name": "pign", "input": {"host": "x"}}
    ]});
    let calls = anthropic::parse_calls(&message).unwrap();
    assert_eq!(
        calls[0],
        ToolCall::new("toolu_1", "ping", r#"{"host":"db.example"}"#)
    );
    let mut outcomes = Vec::new();
    for call in calls {
        outcomes.push(r.call(call).await);
    }
    assert_eq!(outcomes[1].error_kind(), Some(ErrorKind::UnknownTool));
    let reply = anthropic::user_message(&outcomes);
    assert_eq!(reply["role"], "user");
    assert_eq!(
        reply["content"][0],
        json!({"type": "tool_result", "tool_use_id": "toolu_1",
               "content": outcomes[0].to_model_string(), "is_error": false})
    );
    assert_eq!(reply["content"][1]["is_error"], json!(true));
    assert_eq!(reply["content"][1]["tool_use_id"], "toolu_2");
}

#[tokio::test]
async fn gemini_round_trip_keeps_thought_signatures_and_matches_ids() {
    let r = registry();
    let response = json!({"candidates": [{"content": {"role": "model", "parts": [
        {"functionCall": {"id": "fc-1", "name": "ping", "args": {"host": "db.example"}}, "thoughtSignature": "c2lnLTE="},
        {"functionCall": {"name": "ping", "args": {"host": "down.example"}}}
    ]}, "finishReason": "STOP"}]});
    let calls = gemini::parse_calls(&response).unwrap();
    assert_eq!(calls[0].call().id(), "fc-1");
    assert_eq!(calls[0].gemini_id(), Some("fc-1"));
    assert_eq!(calls[0].thought_signature(), Some("c2lnLTE="));
    // No id from Gemini: one is minted, unique, and left out of the response.
    assert!(calls[1].call().id().starts_with(gemini::MINTED_ID_PREFIX));
    assert_eq!(calls[1].gemini_id(), None);

    // The model's turn replays exactly what Gemini sent.
    assert_eq!(
        gemini::model_content(&calls),
        response["candidates"][0]["content"]
    );

    let ok = r.call(calls[0].clone().into_call()).await;
    let failed = r.call(calls[1].clone().into_call()).await;
    assert_eq!(
        gemini::function_response(&ok),
        json!({"functionResponse": {"id": "fc-1", "name": "ping", "response": {"output": ok.to_model_json()}}})
    );
    assert_eq!(
        gemini::function_response(&failed),
        json!({"functionResponse": {"name": "ping", "response": {"error": failed.to_model_json()}}})
    );
    let content = gemini::user_content([&ok, &failed]);
    assert_eq!(content["role"], "user");
    assert_eq!(content["parts"].as_array().unwrap().len(), 2);
}

#[tokio::test]
async fn mcp_round_trip_returns_the_envelope_as_text_and_structured_content() {
    let r = registry();
    let request = json!({"jsonrpc": "2.0", "id": 42, "method": "tools/call",
                         "params": {"name": "ping", "arguments": {"host": "db.example"}}});
    let call = mcp::parse_request(&request).unwrap();
    assert_eq!(
        call,
        ToolCall::new("42", "ping", r#"{"host":"db.example"}"#)
    );
    let outcome = r.call(call).await;
    let result = mcp::call_tool_result(&outcome);
    assert_eq!(
        result,
        json!({
            "content": [{"type": "text", "text": outcome.to_model_string()}],
            "structuredContent": outcome.to_model_json(),
            "isError": false
        })
    );
    let failed = r
        .call(mcp::parse_params("s-1", &json!({"name": "ping", "arguments": {"host": 5}})).unwrap())
        .await;
    let result = mcp::call_tool_result(&failed);
    assert_eq!(result["isError"], json!(true));
    assert_eq!(result["structuredContent"]["error_type"], "schema_mismatch");
    // No arguments at all is an empty object.
    let bare = mcp::parse_params("s-2", &json!({"name": "ping"})).unwrap();
    assert_eq!(bare.arguments(), "{}");
}

#[tokio::test]
async fn mcp_structured_content_always_matches_the_declared_output_schema() {
    let r = registry();
    let calls = [
        ToolCall::new("1", "ping", r#"{"host":"db.example"}"#),
        ToolCall::new("2", "ping", r#"{"host":"down.example"}"#),
        ToolCall::new("3", "ping", r#"{"host":7}"#),
        ToolCall::new("4", "ping", r#"{"host":"#),
        ToolCall::new(
            "5",
            "book_trip",
            r#"{"travellers":[{"name":"Ada","age":36}],"billing":{"street":"x"},"payment":{"method":"card","last4":"1234"}}"#,
        ),
        ToolCall::new(
            "6",
            "book_trip",
            r#"{"travellers":[],"billing":{},"payment":{}}"#,
        ),
    ];
    for call in calls {
        let tool = call.name().to_owned();
        let outcome = r.call(call).await;
        let declared = only(&r, Provider::Mcp, &tool)["outputSchema"].clone();
        let structured = mcp::call_tool_result(&outcome)["structuredContent"].clone();
        assert!(
            jsonschema::is_valid(&declared, &structured),
            "{tool}: {structured} does not match {declared}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Malformed provider JSON

#[test]
fn malformed_openai_json_names_the_path_and_what_was_expected() {
    let cases = [
        (json!("hello"), ParseErrorKind::UnknownShape, ""),
        (
            json!({"choices": {}}),
            ParseErrorKind::WrongType,
            "/choices",
        ),
        (
            json!({"choices": [{}]}),
            ParseErrorKind::Missing,
            "/choices/0/message",
        ),
        (
            json!({"tool_calls": [{"type": "function", "function": {"name": "x", "arguments": "{}"}}]}),
            ParseErrorKind::Missing,
            "/tool_calls/0/id",
        ),
        (
            json!([{"id": 5, "type": "function", "function": {"name": "x", "arguments": "{}"}}]),
            ParseErrorKind::WrongType,
            "/0/id",
        ),
        (
            json!([{"id": "c", "type": "function", "function": {"arguments": "{}"}}]),
            ParseErrorKind::Missing,
            "/0/function/name",
        ),
    ];
    for (input, kind, path) in cases {
        let err = openai::parse_calls(&input).unwrap_err();
        assert_eq!((err.kind(), err.path()), (kind, path), "{input}: {err}");
        assert_eq!(err.provider(), Provider::OpenAi);
    }
    let err = openai::parse_response_calls(
        &json!({"output": [{"type": "function_call", "call_id": "c", "name": "x", "arguments": {}}]}),
    )
    .unwrap_err();
    assert_eq!(err.path(), "/output/0/arguments");
    assert!(
        err.to_string().contains("expected a string, got an object"),
        "{err}"
    );
}

#[test]
fn malformed_anthropic_gemini_and_mcp_json_are_classified() {
    let err =
        anthropic::parse_calls(&json!({"content": [{"type": "tool_use", "id": "t", "name": "x"}]}))
            .unwrap_err();
    assert_eq!(
        (err.kind(), err.path()),
        (ParseErrorKind::Missing, "/content/0/input")
    );
    let err = anthropic::parse_calls(&json!({"content": [{"id": "t"}]})).unwrap_err();
    assert_eq!(err.path(), "/content/0/type");

    let err =
        gemini::parse_calls(&json!({"parts": [{"functionCall": {"name": "x", "args": [1]}}]}))
            .unwrap_err();
    assert_eq!(
        (err.kind(), err.path()),
        (ParseErrorKind::WrongType, "/parts/0/functionCall/args")
    );
    let err =
        gemini::parse_calls(&json!([{"functionCall": {"name": "x"}, "thoughtSignature": 12}]))
            .unwrap_err();
    assert_eq!(err.path(), "/0/thoughtSignature");

    let err = mcp::parse_request(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
        .unwrap_err();
    assert_eq!(
        (err.kind(), err.path()),
        (ParseErrorKind::UnknownShape, "/method")
    );
    let err = mcp::parse_request(
        &json!({"jsonrpc": "2.0", "id": [1], "method": "tools/call", "params": {"name": "x"}}),
    )
    .unwrap_err();
    assert_eq!(err.path(), "/id");
    let err = mcp::parse_params("1", &json!({"name": "x", "arguments": "{}"})).unwrap_err();
    assert_eq!(err.path(), "/arguments");
}

#[test]
fn no_provider_json_makes_a_parser_panic() {
    // Every shape the parsers branch on, with every field replaced by every JSON kind.
    let kinds = [
        json!(null),
        json!(true),
        json!(1.5),
        json!("s"),
        json!([]),
        json!([null]),
        json!({}),
        json!({"x": 1}),
    ];
    let templates = [
        json!({"choices": [{"message": {"tool_calls": [{"id": "a", "type": "function", "function": {"name": "n", "arguments": "{}"}}]}}]}),
        json!({"output": [{"type": "function_call", "call_id": "c", "name": "n", "arguments": "{}"}]}),
        json!({"content": [{"type": "tool_use", "id": "t", "name": "n", "input": {}}]}),
        json!({"candidates": [{"content": {"parts": [{"functionCall": {"id": "i", "name": "n", "args": {}}, "thoughtSignature": "s"}]}}]}),
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "n", "arguments": {}}}),
    ];
    fn mutations(value: &Value, kinds: &[Value], out: &mut Vec<Value>) {
        // Replace each node (by pointer) with each kind.
        fn pointers(value: &Value, at: String, out: &mut Vec<String>) {
            out.push(at.clone());
            match value {
                Value::Object(map) => {
                    for (k, v) in map {
                        pointers(v, format!("{at}/{k}"), out);
                    }
                }
                Value::Array(items) => {
                    for (i, v) in items.iter().enumerate() {
                        pointers(v, format!("{at}/{i}"), out);
                    }
                }
                _ => {}
            }
        }
        let mut ptrs = Vec::new();
        pointers(value, String::new(), &mut ptrs);
        for ptr in ptrs {
            for kind in kinds {
                let mut copy = value.clone();
                if let Some(slot) = copy.pointer_mut(&ptr) {
                    *slot = kind.clone();
                }
                out.push(copy);
            }
        }
    }
    let mut inputs = Vec::new();
    for template in &templates {
        mutations(template, &kinds, &mut inputs);
    }
    assert!(inputs.len() > 300);
    for input in &inputs {
        let _ = openai::parse_calls(input);
        let _ = openai::parse_response_calls(input);
        let _ = anthropic::parse_calls(input);
        let _ = gemini::parse_calls(input);
        let _ = mcp::parse_request(input);
        let _ = mcp::parse_params("1", input);
    }
}

/// The MCP schema types `Tool.outputSchema.properties` as `{ [key: string]: object }`, and the
/// official TypeScript SDK refuses a whole `tools/list` when one property schema is a boolean:
/// a runtime tool that declares no output schema (any value, JSON Schema's `true`) must be listed
/// with an object schema for `data`.
#[test]
fn an_mcp_output_schema_has_only_object_property_schemas() {
    let any = toolwright::DynamicTool::builder("anything")
        .description("Answers with any JSON value.")
        .input_schema(json!({"type": "object", "properties": {}, "additionalProperties": false}))
        .handler(|_args, _ctx| async { Ok(json!(1)) })
        .build()
        .unwrap();
    let registry = Registry::builder().dynamic_tool(any).build().unwrap();
    let tools = registry.export(Provider::Mcp).unwrap();
    let output = &tools[0]["outputSchema"];
    assert_eq!(output["type"], "object");
    for (name, schema) in output["properties"].as_object().unwrap() {
        assert!(
            schema.is_object(),
            "outputSchema.properties.{name} is {schema}"
        );
    }
    assert_eq!(output["properties"]["data"], json!({}));
}
