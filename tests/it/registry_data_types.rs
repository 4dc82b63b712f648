//! Tools whose argument and result are the user's own structs and enums, declared with
//! `#[toolwright::data]` alone: no serde or schemars in sight. Every check goes through the real
//! pipeline (`Registry::call`) and the specs the registry exports.

use toolwright::prelude::*;
use toolwright::serde_json::{json, Value};

/// How fast the parcel travels.
#[toolwright::data]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
enum Speed {
    /// Three to five working days.
    Standard,
    /// The next working day.
    NextDay,
}

/// Where a parcel goes.
#[data(input)]
#[derive(Debug)]
struct Address {
    /// The street and number.
    street: String,
    /// Two-letter country code.
    country: String,
}

/// What to ship and how.
#[data(input)]
#[derive(Debug)]
struct Shipment {
    /// The order whose goods are shipped.
    order_id: String,
    /// How fast it must arrive.
    speed: Speed,
    /// Where it goes.
    to: Address,
}

/// A label the carrier issued.
#[data(output)]
#[derive(Debug)]
struct Label {
    /// The carrier's tracking number.
    tracking: String,
    /// Who carries it: a fixed name, hence `output` only.
    carrier: &'static str,
    /// The speed that was bought.
    speed: Speed,
}

/// Buy a shipping label for an order.
#[tool(idempotent = true)]
async fn ship(
    /// The shipment to buy a label for.
    shipment: Shipment,
) -> Result<Label, ToolError> {
    if shipment.to.street.trim().is_empty() {
        return Err(ToolError::invalid("the street is empty"));
    }
    let carrier = match shipment.speed {
        Speed::Standard => "post",
        Speed::NextDay => "courier",
    };
    Ok(Label {
        tracking: format!("{}-{}", shipment.order_id, shipment.to.country),
        carrier,
        speed: shipment.speed,
    })
}

/// Quote the price of a speed.
#[tool(read_only)]
async fn quote_speed(
    /// The speed to price.
    speed: Speed,
) -> Result<u32, ToolError> {
    Ok(match speed {
        Speed::Standard => 5,
        Speed::NextDay => 20,
    })
}

fn registry() -> Registry {
    match Registry::builder().tool(Ship).tool(QuoteSpeed).build() {
        Ok(registry) => registry,
        Err(e) => panic!("the registry builds: {e}"),
    }
}

/// A schema with every `$ref` into `$defs` replaced by the definition, so assertions read the
/// shape the model sees regardless of where schemars chose to put it.
fn resolved(schema: &Value) -> Value {
    fn walk(node: &Value, defs: &Value) -> Value {
        match node {
            Value::Object(map) => {
                if let Some(Value::String(r)) = map.get("$ref") {
                    if let Some(name) = r.strip_prefix("#/$defs/") {
                        // Keywords beside the `$ref` (the field's own description) win.
                        let mut merged = walk(&defs[name], defs);
                        if let Value::Object(target) = &mut merged {
                            for (k, v) in map.iter().filter(|(k, _)| k.as_str() != "$ref") {
                                target.insert(k.clone(), walk(v, defs));
                            }
                        }
                        return merged;
                    }
                }
                Value::Object(
                    map.iter()
                        .filter(|(k, _)| k.as_str() != "$defs")
                        .map(|(k, v)| (k.clone(), walk(v, defs)))
                        .collect(),
                )
            }
            Value::Array(items) => Value::Array(items.iter().map(|v| walk(v, defs)).collect()),
            other => other.clone(),
        }
    }
    walk(schema, &schema["$defs"])
}

fn call(tool: &str, arguments: Value) -> ToolCall {
    ToolCall::new("c1", tool, arguments.to_string())
}

fn shipment(speed: &str) -> Value {
    json!({"shipment": {
        "order_id": "A1",
        "speed": speed,
        "to": {"street": "1 Main St", "country": "NL"},
    }})
}

/// The values an enum schema allows, however schemars spelled them (`enum`, or `oneOf` of
/// `const`s when the variants have docs).
fn enum_values(schema: &Value) -> Vec<Value> {
    if let Some(values) = schema["enum"].as_array() {
        return values.clone();
    }
    schema["oneOf"]
        .as_array()
        .map(|variants| variants.iter().map(|v| v["const"].clone()).collect())
        .unwrap_or_default()
}

#[test]
fn the_input_schema_describes_the_nested_struct_and_enum_with_their_docs() {
    let registry = registry();
    let Some(spec) = registry.spec("ship") else {
        panic!("`ship` is registered");
    };
    let schema = resolved(spec.input_schema());
    let shipment = &schema["properties"]["shipment"];
    assert_eq!(shipment["description"], "The shipment to buy a label for.");
    assert_eq!(shipment["required"], json!(["order_id", "speed", "to"]));
    assert_eq!(
        shipment["properties"]["order_id"]["description"],
        "The order whose goods are shipped."
    );

    // `rename_all = "snake_case"` reaches the schema; variant docs become descriptions.
    let speed = &shipment["properties"]["speed"];
    assert_eq!(enum_values(speed), [json!("standard"), json!("next_day")]);
    assert_eq!(speed["description"], "How fast it must arrive.");
    assert_eq!(speed["oneOf"][1]["description"], "The next working day.");

    let to = &shipment["properties"]["to"];
    assert_eq!(to["type"], "object");
    assert_eq!(to["required"], json!(["street", "country"]));
    assert_eq!(
        to["properties"]["country"]["description"],
        "Two-letter country code."
    );
}

#[test]
fn the_output_schema_describes_the_result_struct() {
    let registry = registry();
    let Some(spec) = registry.spec("ship") else {
        panic!("`ship` is registered");
    };
    let schema = resolved(spec.output_schema());
    assert_eq!(schema["type"], "object");
    assert_eq!(schema["description"], "A label the carrier issued.");
    assert_eq!(schema["required"], json!(["tracking", "carrier", "speed"]));
    // A `&'static str` field is a plain string to the model.
    assert_eq!(schema["properties"]["carrier"]["type"], "string");
    assert_eq!(
        schema["properties"]["tracking"]["description"],
        "The carrier's tracking number."
    );
    assert_eq!(
        enum_values(&schema["properties"]["speed"]),
        [json!("standard"), json!("next_day")]
    );
}

#[tokio::test]
async fn a_call_with_user_types_returns_the_result_struct() {
    let outcome = registry().call(call("ship", shipment("next_day"))).await;
    assert_eq!(
        outcome.status(),
        Status::Success,
        "{}",
        outcome.to_model_json()
    );
    assert_eq!(
        outcome.to_model_json()["data"],
        json!({"tracking": "A1-NL", "carrier": "courier", "speed": "next_day"})
    );
}

#[tokio::test]
async fn an_enum_can_be_a_parameter_of_its_own() {
    let outcome = registry()
        .call(call("quote_speed", json!({"speed": "standard"})))
        .await;
    assert_eq!(
        outcome.status(),
        Status::Success,
        "{}",
        outcome.to_model_json()
    );
    assert_eq!(outcome.to_model_json()["data"], json!(5));
}

#[tokio::test]
async fn a_wrong_enum_value_is_a_schema_mismatch_naming_the_field() {
    let outcome = registry().call(call("ship", shipment("tomorrow"))).await;
    assert_eq!(outcome.error_kind(), Some(ErrorKind::SchemaMismatch));
    let envelope = outcome.to_model_json();
    assert_eq!(envelope["error_type"], "schema_mismatch");
    assert_eq!(envelope["errors"][0]["path"], "/shipment/speed");
    let Some(message) = envelope["message"].as_str() else {
        panic!("the envelope has a message: {envelope}");
    };
    assert!(message.contains("`shipment.speed`"), "{message}");
    assert!(message.contains("tomorrow"), "{message}");
    // The variants carry docs, so schemars writes a `oneOf` of `const`s; the model is still
    // told the allowed values, not which keyword failed.
    assert_eq!(
        message,
        r#"`shipment.speed` must be one of "standard", "next_day", got string "tomorrow""#
    );
    assert_eq!(envelope["errors"][0]["rule"], "one_of");
}

#[tokio::test]
async fn a_wrong_variant_name_in_the_original_case_is_refused_too() {
    // `rename_all` means the Rust spelling is not what the model must send.
    let outcome = registry()
        .call(call("quote_speed", json!({"speed": "NextDay"})))
        .await;
    assert_eq!(outcome.error_kind(), Some(ErrorKind::SchemaMismatch));
    assert_eq!(outcome.to_model_json()["errors"][0]["path"], "/speed");
}

#[test]
fn data_types_work_with_the_reexported_crates_directly() {
    // `#[data]` derives both directions: the re-exported serde_json reads and writes it.
    assert_eq!(
        toolwright::serde_json::to_value(Speed::NextDay).ok(),
        Some(json!("next_day"))
    );
    assert_eq!(
        toolwright::serde_json::from_value::<Speed>(json!("standard")).ok(),
        Some(Speed::Standard)
    );
    let schema = toolwright::schemars::schema_for!(Speed);
    assert_eq!(
        schema.get("description"),
        Some(&json!("How fast the parcel travels."))
    );
}
