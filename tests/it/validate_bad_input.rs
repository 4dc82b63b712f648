//! Whatever a model sends, a call comes back as a classified outcome: never a panic, never an
//! unclassified error, and never a body run with arguments its rules refuse. Random arguments
//! (JSON of any shape built from the tools' own parameter names, then mangled as text the way
//! models mangle it) go through the real pipeline with every deterministic repair rule on, and
//! through the four providers' parsers.

use std::collections::HashMap;

use proptest::prelude::*;
use toolwright::prelude::*;
use toolwright::providers::{anthropic, gemini, mcp, openai};
use toolwright::repair::{DeterministicRepair, Fix};
use toolwright::serde_json::{self, json, Value};

/// How fast.
#[toolwright::data]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
enum Speed {
    /// Slow.
    Standard,
    /// Fast.
    NextDay,
}

/// One leg of a trip.
#[toolwright::data(input)]
#[derive(Debug)]
struct Leg {
    /// Airport code.
    from: String,
    /// Airport code.
    to: String,
    /// Day of the month.
    day: u8,
}

/// Book a trip. Panics if its arguments break a rule it declares: the pipeline must never let
/// such arguments through (a panic is contained and shows as `tool_panicked`).
#[tool(read_only)]
#[allow(clippy::too_many_arguments)]
async fn book_trip(
    /// Where from.
    #[arg(pattern = "^[A-Z]{3}$")]
    origin: String,
    /// Seats.
    #[arg(range(min = 1, max = 9), default = 1)]
    seats: u32,
    /// Cabin.
    #[arg(one_of = ["economy", "business", "first"])]
    cabin: String,
    /// Budget per seat.
    #[arg(range(min = 0.01, max = 500.0))]
    budget: f64,
    /// The legs, in order.
    #[arg(length(min = 1, max = 4))]
    legs: Vec<Leg>,
    /// How fast.
    speed: Option<Speed>,
    /// Labels; null clears one.
    tags: Option<HashMap<String, Option<String>>>,
    /// An amount in the smallest unit.
    amount: Option<u128>,
    /// A note.
    #[arg(length(max = 300))]
    note: Option<String>,
) -> Result<Value, ToolError> {
    let code = |s: &str| s.len() == 3 && s.bytes().all(|b| b.is_ascii_uppercase());
    assert!(code(&origin), "origin {origin:?}");
    assert!((1..=9).contains(&seats), "seats {seats}");
    assert!(["economy", "business", "first"].contains(&cabin.as_str()));
    assert!((0.01..=500.0).contains(&budget), "budget {budget}");
    assert!((1..=4).contains(&legs.len()), "{} legs", legs.len());
    assert!(note.as_ref().is_none_or(|n| n.chars().count() <= 300));
    let days: Vec<u8> = legs.iter().map(|l| l.day).collect();
    let route: Vec<String> = legs
        .iter()
        .map(|l| format!("{}-{}", l.from, l.to))
        .collect();
    Ok(
        json!({ "seats": seats, "days": days, "route": route, "speed": speed, "tags": tags, "amount": amount.map(|a| a.to_string()) }),
    )
}

/// Set fields, once per call id (the fingerprint reads the arguments too).
#[tool(idempotent = false)]
async fn set_fields(
    key: IdempotencyKey,
    /// The fields to set; null clears one.
    fields: HashMap<String, Option<String>>,
    /// How many times.
    #[arg(range(min = 1, max = 3))]
    times: Option<u8>,
) -> Result<String, ToolError> {
    assert!(times.is_none_or(|t| (1..=3).contains(&t)));
    Ok(format!("{key} {}", fields.len()))
}

fn registry() -> Registry {
    Registry::builder()
        .tool(BookTrip)
        .tool(SetFields)
        .deterministic_repair(DeterministicRepair::default().rule(Fix::KeyCase, true))
        .build()
        .unwrap()
}

/// Keys a model might send: the parameters' own names, their case and spelling slips, others.
const KEYS: &[&str] = &[
    "origin",
    "seats",
    "cabin",
    "budget",
    "legs",
    "from",
    "to",
    "day",
    "speed",
    "tags",
    "amount",
    "note",
    "fields",
    "times",
    "Origin",
    "SEATS",
    "legs ",
    "",
    "extra",
    "__proto__",
];

/// Strings a model might send where anything is expected.
fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("LHR".to_owned()),
        Just("lhr".to_owned()),
        Just("economy".to_owned()),
        Just("next_day".to_owned()),
        Just("Next Day".to_owned()),
        Just("3".to_owned()),
        Just("-1".to_owned()),
        Just("1e400".to_owned()),
        Just("2.5".to_owned()),
        Just("true".to_owned()),
        Just("null".to_owned()),
        Just("[1, 2]".to_owned()),
        Just("{\"from\": \"LHR\"}".to_owned()),
        Just("```json\n{}\n```".to_owned()),
        Just("é𝄞\u{0}\u{202e}".to_owned()),
        Just("x".repeat(400)),
        "\\PC{0,12}",
    ]
}

/// JSON of any shape, four levels deep at most.
fn value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        (-1000i32..1000).prop_map(Value::from),
        any::<f64>()
            .prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
        text().prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            proptest::collection::vec((proptest::sample::select(KEYS), inner), 0..7).prop_map(
                |pairs| Value::Object(pairs.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())
            ),
        ]
    })
}

/// Values at and just past a parameter's bounds, as numbers and as text.
fn edges(key: &str) -> Vec<Value> {
    match key {
        "seats" => vec![
            json!(0),
            json!(1),
            json!(9),
            json!(10),
            json!("9"),
            json!(9.0),
            json!(1.5),
        ],
        "budget" => vec![
            json!(0.01),
            json!(0.009_999),
            json!(500.0),
            json!(500.000_01),
            json!("0.01"),
            json!(0),
            json!(1e300),
        ],
        "origin" => vec![
            json!("LHR"),
            json!("lhr"),
            json!("LH"),
            json!("LHRX"),
            json!(" LHR"),
        ],
        "cabin" => vec![
            json!("first"),
            json!("First"),
            json!("economy "),
            json!(["economy"]),
        ],
        "legs" => vec![
            json!([]),
            json!({"from": "LHR", "to": "JFK", "day": 3}),
            Value::Array(vec![json!({"from": "LHR", "to": "JFK", "day": 3}); 4]),
            Value::Array(vec![json!({"from": "LHR", "to": "JFK", "day": 3}); 5]),
            json!([{"from": "LHR", "to": "JFK"}]),
            json!([{"from": "LHR", "to": "JFK", "day": 256}]),
        ],
        "note" => vec![
            json!("n".repeat(300)),
            json!("n".repeat(301)),
            json!("é".repeat(300)),
            json!(null),
        ],
        "amount" => vec![
            json!("340282366920938463463374607431768211455"),
            json!("340282366920938463463374607431768211456"),
            json!(u64::MAX),
            json!(-1),
            json!("12"),
        ],
        "speed" => vec![
            json!("standard"),
            json!("Next Day"),
            json!("nextDay"),
            json!(null),
        ],
        "times" => vec![
            json!(0),
            json!(1),
            json!(3),
            json!(4),
            json!(255),
            json!(256),
            json!("3"),
        ],
        "fields" => vec![
            json!({}),
            json!({"a": null}),
            json!([["a", "b"]]),
            json!("a=b"),
        ],
        _ => vec![json!(null), json!({}), json!("x")],
    }
}

/// The two tools' parameter names.
const PARAMS: &[&str] = &[
    "origin", "seats", "cabin", "budget", "legs", "speed", "tags", "amount", "note", "fields",
    "times",
];

/// A valid call of either tool, then up to three slips: a value replaced (by an edge value or
/// any JSON), a key removed, a key renamed; or an object of any keys from the pool.
fn arguments() -> impl Strategy<Value = (&'static str, Value)> {
    let valid = prop_oneof![
        Just((
            "book_trip",
            json!({
                "origin": "LHR", "seats": 2, "cabin": "economy", "budget": 120.5,
                "legs": [{"from": "LHR", "to": "JFK", "day": 3}], "speed": "next_day",
                "tags": {"trip": "work", "old": null}, "amount": 12, "note": "aisle"
            })
        )),
        Just((
            "set_fields",
            json!({"fields": {"name": "Ada", "email": null}, "times": 2})
        )),
    ];
    let key =
        prop_oneof![3 => proptest::sample::select(PARAMS), 1 => proptest::sample::select(KEYS)];
    let slip = (0u8..4, key, any::<proptest::sample::Index>(), value());
    let slipped =
        (valid, proptest::collection::vec(slip, 0..4)).prop_map(|((tool, mut args), slips)| {
            let map = args.as_object_mut().unwrap();
            for (how, key, edge, value) in slips {
                match how {
                    0 => {
                        map.insert(key.to_owned(), edge.get(&edges(key)).clone());
                    }
                    1 => {
                        map.insert(key.to_owned(), value);
                    }
                    2 => {
                        map.remove(key);
                    }
                    _ => {
                        if let Some(v) = map.remove(key) {
                            map.insert(key.to_uppercase(), v);
                        }
                    }
                }
            }
            (tool, args)
        });
    let any_keys = (
        proptest::sample::select(&["book_trip", "set_fields"][..]),
        proptest::collection::vec((proptest::sample::select(KEYS), value()), 0..9),
    )
        .prop_map(|(tool, pairs)| {
            (
                tool,
                Value::Object(pairs.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()),
            )
        });
    prop_oneof![3 => slipped, 1 => any_keys]
}

/// The arguments as text, garbled half the time as models garble it.
fn garbled(args: Value, how: u8, cut: usize) -> String {
    let text = args.to_string();
    match how % 16 {
        0 => format!("```json\n{text}\n```"),
        1 => format!("Here are the arguments: {text} Hope that helps."),
        2 => text.replace('"', "'"),
        3 => {
            // Cut short at a character boundary.
            let at = text
                .char_indices()
                .map(|(i, _)| i)
                .nth(cut % text.chars().count().max(1));
            text[..at.unwrap_or(text.len())].to_owned()
        }
        4 => text.replacen('}', ",}", 1),
        5 => serde_json::to_string(&text).unwrap(), // the object sent as one JSON string
        6 => serde_json::to_string_pretty(&args).unwrap(),
        _ => text,
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// What every outcome of a bad call must be: classified at validation, with a message, the
/// violations naming their field; or a success whose body found its rules held.
fn check(outcome: &Outcome) -> Result<(), TestCaseError> {
    let envelope = outcome.to_model_json();
    match outcome.status() {
        Status::Success | Status::Empty => {}
        Status::Error => {
            let kind = outcome.error_kind();
            prop_assert!(
                matches!(
                    kind,
                    Some(
                        ErrorKind::InvalidJson
                            | ErrorKind::UnknownArgument
                            | ErrorKind::SchemaMismatch
                            | ErrorKind::SemanticInvalid
                    )
                ),
                "{kind:?}: {envelope}"
            );
            prop_assert!(
                !outcome.message().unwrap_or_default().is_empty(),
                "{envelope}"
            );
            for v in outcome.violations() {
                prop_assert!(!v.message.is_empty() && !v.expected.is_empty(), "{v:?}");
                prop_assert!(v.path.is_empty() || v.path.starts_with('/'), "{v:?}");
                // The field is named: the message says the last token of its path.
                let field = v.path.rsplit('/').next().unwrap_or_default();
                prop_assert!(
                    field.is_empty() || v.message.contains(field),
                    "{v:?} does not name `{field}`"
                );
            }
        }
        other => prop_assert!(false, "{other:?}: {envelope}"),
    }
    // The envelope is what a provider sends back: it serializes, whatever came.
    prop_assert!(!outcome.to_model_string().is_empty());
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1024))]

    #[test]
    fn any_arguments_get_a_classified_outcome(
        (tool, args) in arguments(),
        how in any::<u8>(),
        cut in any::<usize>(),
    ) {
        let text = garbled(args, how, cut);
        let outcome = runtime().block_on(registry().call(ToolCall::new("call_1", tool, text)));
        check(&outcome)?;
    }

    #[test]
    fn any_text_gets_a_classified_outcome(text in "\\PC{0,64}", tool in proptest::sample::select(&["book_trip", "set_fields", "no_such_tool"][..])) {
        let outcome = runtime().block_on(registry().call(ToolCall::new("call_1", tool, text)));
        if tool == "no_such_tool" {
            prop_assert_eq!(outcome.error_kind(), Some(ErrorKind::UnknownTool));
        } else {
            check(&outcome)?;
        }
    }

    /// The providers' parsers read any JSON a model's API might return (or a proxy might
    /// corrupt) into calls or a parse error: never a panic.
    #[test]
    fn provider_parsers_read_any_json(message in value(), args in value()) {
        let _ = openai::parse_calls(&message);
        let _ = openai::parse_response_calls(&message);
        let _ = anthropic::parse_calls(&message);
        let _ = gemini::parse_calls(&message);
        let _ = mcp::parse_request(&message);
        let _ = mcp::parse_params("1", &message);
        // The same, with the value where each provider keeps a call's arguments.
        let wrapped = [
            json!({"choices": [{"message": {"tool_calls": [{"id": "c", "type": "function", "function": {"name": "book_trip", "arguments": args}}]}}]}),
            json!({"output": [{"type": "function_call", "call_id": "c", "name": "book_trip", "arguments": args}]}),
            json!({"content": [{"type": "tool_use", "id": "c", "name": "book_trip", "input": args}]}),
            json!({"candidates": [{"content": {"parts": [{"functionCall": {"name": "book_trip", "args": args}}]}}]}),
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "book_trip", "arguments": args}}),
        ];
        // OpenAI sends the arguments as text: a string is passed on as it came, for the
        // pipeline to parse; anything else is a parse error, never a guess.
        for calls in [openai::parse_calls(&wrapped[0]), openai::parse_response_calls(&wrapped[1])] {
            match args.as_str() {
                Some(text) => {
                    let calls = calls.map_err(|e| TestCaseError::fail(e.to_string()))?;
                    prop_assert_eq!(calls.len(), 1);
                    prop_assert_eq!(calls[0].arguments(), text);
                }
                None => prop_assert!(calls.is_err(), "{args}"),
            }
        }
        // The others send an object: passed on as its JSON text.
        let text = args.to_string();
        let anthropic = anthropic::parse_calls(&wrapped[2]);
        let gemini = gemini::parse_calls(&wrapped[3]).map(|c| c.into_iter().map(gemini::GeminiCall::into_call).collect());
        let mcp = mcp::parse_request(&wrapped[4]).map(|c| vec![c]);
        for calls in [anthropic, gemini, mcp] {
            if args.is_object() {
                let calls: Vec<ToolCall> = calls.map_err(|e| TestCaseError::fail(e.to_string()))?;
                prop_assert_eq!(calls.len(), 1);
                prop_assert_eq!(calls[0].name(), "book_trip");
                prop_assert_eq!(calls[0].arguments(), text.as_str());
            }
        }
    }
}
