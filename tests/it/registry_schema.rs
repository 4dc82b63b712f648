//! The schemas a registry hands to a model: every `#[arg]` rule as its exact JSON Schema keyword,
//! what is required and what is not, descriptions from doc comments, injected parameters left
//! out, and every schema valid against the JSON Schema 2020-12 meta-schema.

// `#[arg(validate = f)]` expands to a closure so that deref coercion applies; clippy reads it as
// user code. Reported for tool-macros to allow it there.
#![allow(clippy::redundant_closure)]

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use toolwright::prelude::*;

#[derive(Serialize, schemars::JsonSchema)]
struct Booking {
    /// The booking reference.
    reference: String,
    seats: u32,
}

/// One leg of a trip.
#[derive(Deserialize, Serialize, schemars::JsonSchema)]
struct Leg {
    /// Departure airport.
    from: String,
    /// Arrival airport.
    to: String,
}

// A custom check receives the field as declared, `Option` included.
fn no_test_codes(code: &Option<String>) -> Result<(), String> {
    if code.as_deref().is_some_and(|c| c.starts_with("TEST")) {
        return Err("test codes are not accepted".into());
    }
    Ok(())
}

/// Book a flight with every kind of argument rule.
///
/// The second paragraph of the description.
#[tool(timeout_ms = 2500, idempotent = false)]
#[allow(clippy::too_many_arguments)]
async fn book_flight(
    key: IdempotencyKey,
    ctx: ToolContext,
    /// Origin airport code.
    #[arg(pattern = "^[A-Z]{3}$")]
    from: String,
    /// Number of passengers.
    #[arg(range(min = 1, max = 9), default = 1)]
    passengers: u32,
    /// Most the customer will pay, in dollars.
    #[arg(range(min = 0.5, max = 10000.0))]
    budget: f64,
    /// Share of the fare paid in miles, in percent.
    #[arg(range(min = 0, max = 100))]
    miles_share: Option<f64>,
    /// Degrees of latitude tolerance.
    #[arg(range(min = -5))]
    tolerance: i32,
    /// Cabin class.
    #[arg(one_of = ["economy", "business", "first"])]
    cabin: Option<String>,
    /// Meal preference.
    #[arg(one_of = ["standard", "vegetarian"], default = "standard")]
    meal: String,
    /// Stars of the airport hotel.
    #[arg(one_of = [3, 4, 5])]
    hotel_stars: Option<u8>,
    /// A note for the crew.
    #[arg(length(max = 300))]
    note: Option<String>,
    /// Promotion code.
    #[arg(length(min = 4, max = 12))]
    #[arg(validate = no_test_codes)]
    promo: Option<String>,
    /// The legs, in order.
    #[arg(length(min = 1, max = 4))]
    legs: Vec<Leg>,
    /// Seat preferences by passenger name.
    #[arg(length(max = 9))]
    seats: BTreeMap<String, String>,
    /// Frequent-flyer numbers.
    #[arg(length(min = 1))]
    loyalty: Option<Vec<String>>,
    /// Whether to hold the fare instead of paying.
    hold: bool,
) -> Result<Booking, ToolError> {
    let _ = (
        ctx,
        from,
        budget,
        miles_share,
        tolerance,
        cabin,
        meal,
        hotel_stars,
    );
    let _ = (note, promo, legs, seats, loyalty, hold);
    Ok(Booking {
        reference: key.to_string(),
        seats: passengers,
    })
}

struct Catalog;

/// Search orders by free text.
#[tool(read_only)]
async fn search_orders(
    catalog: State<Catalog>,
    /// Words to look for.
    #[arg(length(min = 1, max = 300))]
    query: String,
    /// How many orders to return.
    #[arg(range(min = 1, max = 20), default = 5)]
    max_results: u32,
) -> Result<Vec<Leg>, ToolError> {
    let _ = (catalog, query, max_results);
    Ok(Vec::new())
}

/// Check that the service answers.
#[tool(name = "health-check", idempotent = true)]
async fn health() -> Result<(), ToolError> {
    Ok(())
}

fn registry() -> Registry {
    Registry::builder()
        .tool(SearchOrders)
        .tool(BookFlight)
        .tool(Health)
        .state(Catalog)
        .default_timeout(Duration::from_secs(7))
        .build()
        .expect("builds")
}

fn input(name: &str) -> Value {
    registry()
        .spec(name)
        .expect("registered")
        .input_schema()
        .clone()
}

fn property(name: &str, field: &str) -> Value {
    input(name)["properties"][field].clone()
}

#[test]
fn the_root_is_a_closed_object() {
    for spec in registry().specs() {
        let schema = spec.input_schema();
        assert_eq!(schema["type"], "object", "{}", spec.name());
        assert_eq!(schema["additionalProperties"], false, "{}", spec.name());
        assert!(schema["properties"].is_object(), "{}", spec.name());
        assert!(
            schema.get("title").is_none() && schema.get("$schema").is_none(),
            "no Rust type names or draft noise for the model: {schema}"
        );
        assert!(
            schema.get("description").is_none(),
            "the description lives on the tool, not the schema: {schema}"
        );
    }
    // A tool without arguments still has an (empty) object schema.
    assert_eq!(
        input("health-check"),
        json!({"type": "object", "additionalProperties": false, "properties": {}})
    );
}

#[test]
fn required_lists_exactly_the_arguments_without_option_or_default() {
    let schema = input("book_flight");
    let mut required: Vec<&str> = schema["required"]
        .as_array()
        .expect("required")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    required.sort_unstable();
    assert_eq!(
        required,
        ["budget", "from", "hold", "legs", "seats", "tolerance"]
    );
    assert_eq!(input("search_orders")["required"], json!(["query"]));
}

#[test]
fn injected_parameters_are_not_in_the_schema() {
    let schema = input("book_flight");
    let properties = schema["properties"].as_object().expect("properties");
    let names: Vec<&str> = properties.keys().map(String::as_str).collect();
    assert_eq!(
        names,
        [
            "from",
            "passengers",
            "budget",
            "miles_share",
            "tolerance",
            "cabin",
            "meal",
            "hotel_stars",
            "note",
            "promo",
            "legs",
            "seats",
            "loyalty",
            "hold"
        ],
        "declaration order, without `key` and `ctx`"
    );
    let search = input("search_orders");
    assert!(search["properties"].get("catalog").is_none());
    assert_eq!(
        search["properties"]
            .as_object()
            .map(|p| p.keys().cloned().collect::<Vec<_>>()),
        Some(vec!["query".to_owned(), "max_results".to_owned()])
    );
}

#[test]
fn range_writes_minimum_and_maximum_keeping_integers_and_floats_as_declared() {
    let passengers = property("book_flight", "passengers");
    assert_eq!(passengers["type"], "integer");
    assert_eq!(passengers["minimum"], json!(1));
    assert_eq!(passengers["maximum"], json!(9));
    assert!(passengers["minimum"].is_u64() && passengers["maximum"].is_u64());

    let budget = property("book_flight", "budget");
    assert_eq!(budget["type"], "number");
    assert_eq!(budget["minimum"], json!(0.5));
    assert_eq!(budget["maximum"], json!(10000.0));
    assert!(budget["minimum"].is_f64() && budget["maximum"].is_f64());

    // Integer bounds on a float argument stay integers, as written.
    let share = property("book_flight", "miles_share");
    assert_eq!(share["type"], json!(["number", "null"]));
    assert!(
        share["minimum"].is_i64() && share["maximum"].is_i64(),
        "{share}"
    );
    assert_eq!(
        (share["minimum"].as_i64(), share["maximum"].as_i64()),
        (Some(0), Some(100))
    );

    // Either bound may be omitted; a negative bound stays negative.
    let tolerance = property("book_flight", "tolerance");
    assert_eq!(tolerance["minimum"], json!(-5));
    // No declared maximum: the `i32`'s own bound is written instead.
    assert_eq!(tolerance["maximum"], json!(2_147_483_647), "{tolerance}");
}

#[test]
fn length_writes_the_keyword_of_the_type() {
    let note = property("book_flight", "note");
    assert_eq!(note["maxLength"], json!(300));
    assert!(note.get("minLength").is_none());
    assert!(note.get("maxItems").is_none());

    let promo = property("book_flight", "promo");
    assert_eq!(
        (promo["minLength"].clone(), promo["maxLength"].clone()),
        (json!(4), json!(12))
    );

    let query = property("search_orders", "query");
    assert_eq!(query["minLength"], json!(1));
    assert_eq!(query["maxLength"], json!(300));

    let legs = property("book_flight", "legs");
    assert_eq!(legs["type"], "array");
    assert_eq!(legs["minItems"], json!(1));
    assert_eq!(legs["maxItems"], json!(4));
    assert!(legs.get("minLength").is_none(), "{legs}");

    let loyalty = property("book_flight", "loyalty");
    assert_eq!(loyalty["type"], json!(["array", "null"]));
    assert_eq!(loyalty["minItems"], json!(1));

    let seats = property("book_flight", "seats");
    assert_eq!(seats["type"], "object");
    assert_eq!(seats["maxProperties"], json!(9));
    assert!(seats.get("maxLength").is_none(), "{seats}");
}

#[test]
fn pattern_is_written_as_declared() {
    let from = property("book_flight", "from");
    assert_eq!(
        from,
        json!({"type": "string", "description": "Origin airport code.", "pattern": "^[A-Z]{3}$"})
    );
}

#[test]
fn one_of_is_an_enum_with_null_for_options() {
    assert_eq!(
        property("book_flight", "cabin")["enum"],
        json!(["economy", "business", "first", null])
    );
    assert_eq!(
        property("book_flight", "meal")["enum"],
        json!(["standard", "vegetarian"])
    );
    let stars = property("book_flight", "hotel_stars");
    assert_eq!(stars["enum"], json!([3, 4, 5, null]));
    assert!(stars["enum"][0].is_u64(), "numbers stay integers: {stars}");
}

#[test]
fn default_is_written_and_the_field_is_not_required() {
    let passengers = property("book_flight", "passengers");
    assert_eq!(passengers["default"], json!(1));
    let meal = property("book_flight", "meal");
    assert_eq!(meal["default"], json!("standard"));
    assert_eq!(
        meal["type"], "string",
        "a default does not make it nullable"
    );
    assert_eq!(
        property("search_orders", "max_results")["default"],
        json!(5)
    );
}

#[test]
fn a_custom_validator_adds_no_keyword() {
    let promo = property("book_flight", "promo");
    assert_eq!(
        promo,
        json!({
            "type": ["string", "null"],
            "description": "Promotion code.",
            "minLength": 4,
            "maxLength": 12
        })
    );
}

#[test]
fn doc_comments_are_descriptions() {
    let registry = registry();
    let spec = registry.spec("book_flight").expect("registered");
    assert_eq!(
        spec.description(),
        "Book a flight with every kind of argument rule.\n\nThe second paragraph of the description."
    );
    let schema = spec.input_schema();
    assert_eq!(
        schema["properties"]["passengers"]["description"],
        "Number of passengers."
    );
    assert_eq!(
        schema["properties"]["hold"]["description"],
        "Whether to hold the fare instead of paying."
    );
    for (name, property) in schema["properties"].as_object().expect("properties") {
        assert!(
            property["description"]
                .as_str()
                .is_some_and(|d| !d.is_empty()),
            "`{name}` has a description: {property}"
        );
    }
    // A user type keeps its own field docs in `$defs`.
    assert_eq!(
        schema["$defs"]["Leg"]["properties"]["from"]["description"],
        "Departure airport."
    );
}

#[test]
fn the_output_schema_comes_from_the_return_type() {
    let registry = registry();
    let booking = registry
        .spec("book_flight")
        .expect("registered")
        .output_schema();
    assert_eq!(booking["type"], "object");
    assert_eq!(
        booking["properties"]["reference"],
        json!({"type": "string", "description": "The booking reference."})
    );
    assert_eq!(booking["properties"]["seats"]["type"], "integer");
    assert_eq!(booking["required"], json!(["reference", "seats"]));

    let orders = registry
        .spec("search_orders")
        .expect("registered")
        .output_schema();
    assert_eq!(orders["type"], "array");
    assert_eq!(orders["items"]["$ref"], "#/$defs/Leg");
    assert!(orders["$defs"]["Leg"].is_object());

    let unit = registry
        .spec("health-check")
        .expect("registered")
        .output_schema();
    assert_eq!(unit["type"], "null");
}

#[test]
fn specs_are_sorted_by_name_with_their_policy() {
    let registry = registry();
    let specs = registry.specs();
    let names: Vec<&str> = specs.iter().map(|s| s.name()).collect();
    assert_eq!(names, ["book_flight", "health-check", "search_orders"]);
    assert_eq!(
        registry.names(),
        ["book_flight", "health-check", "search_orders"]
    );

    let policy: Vec<(Duration, bool, bool)> = specs
        .iter()
        .map(|s| (s.timeout(), s.idempotent(), s.read_only()))
        .collect();
    assert_eq!(
        policy,
        [
            (Duration::from_millis(2500), false, false),
            (Duration::from_secs(7), true, false),
            (Duration::from_secs(7), true, true),
        ]
    );
    assert!(specs[0].takes_idempotency_key());
    assert!(!specs[2].takes_idempotency_key());
}

#[test]
fn field_metadata_lists_the_declared_rules() {
    let registry = registry();
    let spec = registry.spec("book_flight").expect("registered");
    let fields: Vec<&str> = spec.fields().iter().map(|f| f.name()).collect();
    assert_eq!(fields.len(), 14);
    assert_eq!(fields[0], "from");
    let promo = spec
        .fields()
        .iter()
        .find(|f| f.name() == "promo")
        .expect("promo");
    assert_eq!(
        promo.declared_rules(),
        [
            toolwright::tool::Rule::Length {
                min: Some(4),
                max: Some(12)
            },
            toolwright::tool::Rule::Custom("no_test_codes"),
        ]
    );
}

#[test]
fn every_schema_is_valid_json_schema_2020_12() {
    let registry = registry();
    for spec in registry.specs() {
        for (which, schema) in [
            ("input", spec.input_schema()),
            ("output", spec.output_schema()),
        ] {
            if let Err(e) = jsonschema::draft202012::meta::validate(schema) {
                panic!(
                    "{} {which} schema is not valid 2020-12: {e}\n{schema}",
                    spec.name()
                );
            }
            jsonschema::draft202012::new(schema)
                .unwrap_or_else(|e| panic!("{} {which} schema does not compile: {e}", spec.name()));
        }
    }
    // The meta-schema check can fail: a schema with a mistyped keyword value is refused.
    assert!(
        jsonschema::draft202012::meta::validate(&json!({"type": "object", "minLength": "4"}))
            .is_err()
    );
}

#[test]
fn the_schema_accepts_what_the_tool_accepts_and_refuses_what_it_refuses() {
    // One declaration feeds the keyword and the check: a value on each side of every bound.
    let schema = input("book_flight");
    let validator = jsonschema::draft202012::new(&schema).expect("compiles");
    let valid = json!({
        "from": "SFO", "budget": 0.5, "tolerance": -5, "hold": false,
        "legs": [{"from": "SFO", "to": "LAX"}], "seats": {},
        "passengers": 9, "miles_share": 100, "cabin": null, "meal": "vegetarian",
        "hotel_stars": 5, "note": "", "promo": "SAVE", "loyalty": ["A"]
    });
    assert!(validator.is_valid(&valid));
    let broken = [
        ("passengers", json!(10)),
        ("passengers", json!(0)),
        ("budget", json!(0.49)),
        ("miles_share", json!(100.5)),
        ("tolerance", json!(-6)),
        ("cabin", json!("premium")),
        ("meal", json!(null)),
        ("hotel_stars", json!(2)),
        ("note", json!("n".repeat(301))),
        ("promo", json!("ABC")),
        ("legs", json!([])),
        ("loyalty", json!([])),
        ("from", json!("sfo")),
    ];
    for (field, value) in broken {
        let mut arguments = valid.clone();
        arguments[field] = value.clone();
        assert!(
            !validator.is_valid(&arguments),
            "schema accepts {field} = {value}"
        );
    }
}

/// A tool whose parameters cover what a schema row carries: a doc comment over several lines,
/// one whose first line is a `#` title, none at all, defaults (a `Serialize` value and an
/// `Option`), an `Option`, a nested type with its own schema, a map and a raw identifier.
#[tool]
async fn schema_rows(
    /// # The query
    ///
    /// What to look for,
    /// over two lines.
    query: String,
    /// How many results.
    #[arg(default = 10)]
    limit: u32,
    #[arg(default = Some("merge".to_string()))] mode: Option<String>,
    /// Only open items.
    open: Option<bool>,
    /// Where to deliver.
    leg: Option<Leg>,
    /// Labels by name.
    labels: BTreeMap<String, i64>,
    /// The kind, a keyword in Rust.
    r#type: String,
) -> Result<String, ToolError> {
    Ok(format!(
        "{query}{limit}{mode:?}{open:?}{}{labels:?}{type}",
        leg.is_some()
    ))
}

// What schemars' derive writes for the same arguments (as `#[tool]` used to derive it), but for
// the doc over two lines: `#[tool]` reflows it to one (schemars' derive would keep the `\n`), so
// here it is written on one line.
#[derive(schemars::JsonSchema)]
#[serde(rename = "SchemaRowsArgs", deny_unknown_fields)]
#[allow(dead_code)]
/// Arguments of the `schema_rows` tool, as the model sends them (generated by `#[tool]`).
struct DerivedRows {
    /// # The query
    ///
    /// What to look for, over two lines.
    query: String,
    /// How many results.
    #[serde(default = "ten")]
    limit: u32,
    #[serde(default = "merge")]
    mode: Option<String>,
    /// Only open items.
    open: Option<bool>,
    /// Where to deliver.
    leg: Option<Leg>,
    /// Labels by name.
    labels: BTreeMap<String, i64>,
    /// The kind, a keyword in Rust.
    r#type: String,
}

fn ten() -> u32 {
    10
}

fn merge() -> Option<String> {
    Some("merge".to_string())
}

#[test]
fn the_arguments_schema_is_the_one_schemars_derives_for_the_same_struct() {
    let written = serde_json::to_value(schemars::schema_for!(SchemaRowsArgs)).unwrap();
    let derived = serde_json::to_value(schemars::schema_for!(DerivedRows)).unwrap();
    assert_eq!(written, derived);
    // Key order too: the model reads the properties in the order the function declares them.
    assert_eq!(written.to_string(), derived.to_string());
    // And under the serialize contract, where a default does not make a field optional.
    let settings = schemars::generate::SchemaSettings::draft2020_12().for_serialize();
    let written = settings
        .clone()
        .into_generator()
        .into_root_schema_for::<SchemaRowsArgs>();
    let derived = settings
        .into_generator()
        .into_root_schema_for::<DerivedRows>();
    assert_eq!(
        serde_json::to_string(&written).unwrap(),
        serde_json::to_string(&derived).unwrap()
    );
}
