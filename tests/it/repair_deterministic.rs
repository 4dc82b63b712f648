//! Deterministic repair through the real pipeline: mechanical slips fixed before any model
//! round trip, the result validated again, whole; a repair that still fails reports the model's
//! own error; a valid call is never changed.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use proptest::prelude::*;
use toolwright::prelude::*;
use toolwright::repair::{DeterministicRepair, Fix, Repair, RepairRequest};

use crate::support::capture;

/// A window of hours.
#[toolwright::data(input)]
pub struct Window {
    /// First hour.
    from: u8,
    /// Last hour.
    to: u8,
}

/// Search orders.
#[tool(read_only)]
async fn search_orders(
    /// Words to look for.
    #[arg(length(min = 1, max = 300))]
    query: String,
    /// How many.
    #[arg(range(min = 1, max = 20), default = 5)]
    max_results: u32,
    /// Only exact matches.
    #[arg(default = false)]
    exact: bool,
    /// Tags to filter by.
    tags: Option<Vec<String>>,
    /// A note.
    note: Option<String>,
    /// When.
    window: Option<Window>,
) -> Result<serde_json::Value, ToolError> {
    Ok(serde_json::json!({
        "query": query,
        "max_results": max_results,
        "exact": exact,
        "tags": tags,
        "note": note,
        "window": window.map(|w| [w.from, w.to]),
    }))
}

fn registry(rules: DeterministicRepair) -> Registry {
    Registry::builder()
        .tool(SearchOrders)
        .deterministic_repair(rules)
        .build()
        .unwrap()
}

async fn call(registry: &Registry, args: &str) -> Outcome {
    registry
        .call(ToolCall::new("call_1", "search_orders", args))
        .await
}

#[tokio::test]
async fn each_rule_alone_repairs_its_slip_and_the_envelope_names_it() {
    let cases = [
        (Fix::CodeFence, "```json\n{\"query\": \"ada\"}\n```"),
        (
            Fix::SurroundingProse,
            "Calling it now: {\"query\": \"ada\"}.",
        ),
        (Fix::TrailingComma, r#"{"query": "ada",}"#),
        (Fix::SingleQuotes, r#"{'query': 'ada'}"#),
        (Fix::UnquotedKeys, r#"{query: "ada"}"#),
        (Fix::DoubleEncoded, r#""{\"query\": \"ada\"}""#),
        (
            Fix::NumberFromString,
            r#"{"query": "ada", "max_results": "5"}"#,
        ),
        (Fix::BoolFromString, r#"{"query": "ada", "exact": "false"}"#),
        (Fix::SingleToArray, r#"{"query": "ada", "tags": "x"}"#),
        (
            Fix::NullOptional,
            r#"{"query": "ada", "max_results": null}"#,
        ),
        (Fix::KeyCase, r#"{"query": "ada", "maxResults": 5}"#),
    ];
    for (fix, args) in cases {
        // Without the rule the call fails on its form ...
        let off = registry(DeterministicRepair::default().rule(fix, false));
        let failed = call(&off, args).await;
        assert!(failed.error_kind().is_some(), "{fix}: {args}");
        // ... with only the rule it runs, and says so.
        let on = registry(DeterministicRepair::none().rule(fix, true));
        let outcome = call(&on, args).await;
        assert_eq!(
            outcome.status(),
            Status::Success,
            "{fix}: {}",
            outcome.to_model_json()
        );
        let envelope = outcome.to_model_json();
        assert_eq!(envelope["repaired"], true);
        assert_eq!(envelope["repaired_by"], serde_json::json!([fix.as_str()]));
        assert_eq!(envelope["data"]["query"], "ada", "{fix}");
    }
}

#[tokio::test]
async fn rules_combine_and_the_call_runs_with_the_repaired_values() {
    let registry = registry(DeterministicRepair::default());
    let outcome = call(
        &registry,
        "Here you go:\n```json\n{'query': 'ada', max_results: \"3\", tags: \"vip\", window: {from: \"9\", to: 17},}\n```",
    )
    .await;
    let envelope = outcome.to_model_json();
    assert_eq!(outcome.status(), Status::Success, "{envelope}");
    assert_eq!(
        envelope["repaired_by"],
        serde_json::json!([
            "code_fence",
            "surrounding_prose",
            "trailing_comma",
            "single_quotes",
            "unquoted_keys",
            "number_from_string",
            "single_to_array"
        ])
    );
    assert_eq!(
        envelope["data"],
        serde_json::json!({"query": "ada", "max_results": 3, "exact": false, "tags": ["vip"], "note": null, "window": [9, 17]})
    );
}

#[tokio::test]
async fn a_repair_that_still_fails_reports_the_models_own_error() {
    let registry = registry(DeterministicRepair::default());
    // "50" becomes 50, out of range: the model hears about the string it sent.
    let outcome = call(&registry, r#"{"query": "ada", "max_results": "50"}"#).await;
    assert_eq!(outcome.error_kind(), Some(ErrorKind::SchemaMismatch));
    assert!(!outcome.is_repaired());
    assert_eq!(
        outcome.message(),
        Some("`max_results`: expected an integer, got string \"50\"")
    );
    assert!(outcome.to_model_json().get("repaired_by").is_none());
    assert_eq!(
        outcome.raw_arguments(),
        Some(r#"{"query": "ada", "max_results": "50"}"#)
    );
    // A trailing comma fixed, but a field still missing: the original invalid_json.
    let outcome = call(&registry, r#"{"max_results": 2,}"#).await;
    assert_eq!(outcome.error_kind(), Some(ErrorKind::InvalidJson));
}

#[tokio::test]
async fn nothing_is_invented_renamed_or_dropped() {
    let registry = registry(DeterministicRepair::default());
    for (args, kind) in [
        // An unknown argument stays an error (key case is off by default).
        (
            r#"{"query": "ada", "maxResults": 5}"#,
            ErrorKind::UnknownArgument,
        ),
        (
            r#"{"query": "ada", "limit": 5}"#,
            ErrorKind::UnknownArgument,
        ),
        // A missing required field is not invented; null for it is not dropped.
        (r#"{"max_results": 5}"#, ErrorKind::SchemaMismatch),
        (r#"{"query": null}"#, ErrorKind::SchemaMismatch),
        // Only the whole string is a number.
        (
            r#"{"query": "ada", "max_results": "5 results"}"#,
            ErrorKind::SchemaMismatch,
        ),
        // Truncated text is not completed.
        (r#"{"query": "ad"#, ErrorKind::InvalidJson),
    ] {
        let outcome = call(&registry, args).await;
        assert_eq!(outcome.error_kind(), Some(kind), "{args}");
        assert!(!outcome.is_repaired(), "{args}");
    }
    // A near-miss tool name is never routed.
    let outcome = registry
        .call(ToolCall::new("c", "search_order", r#"{"query": "ada"}"#))
        .await;
    assert_eq!(outcome.error_kind(), Some(ErrorKind::UnknownTool));
}

#[tokio::test]
async fn the_rules_run_before_the_model_and_spare_its_round_trip() {
    let asked = Arc::new(AtomicU32::new(0));
    let seen = Arc::clone(&asked);
    let registry = Registry::builder()
        .tool(SearchOrders)
        .deterministic_repair(DeterministicRepair::default())
        .repairer(move |request: &RepairRequest<'_>| {
            seen.fetch_add(1, Ordering::SeqCst);
            // The model gets the original text, not the rules' attempt.
            assert!(request.arguments().contains("\"20 or so\""));
            Repair::Arguments(r#"{"query": "ada", "max_results": 20}"#.into())
        })
        .build()
        .unwrap();
    let by_rules = call(&registry, r#"{"query": "ada", "max_results": "7",}"#).await;
    assert_eq!(
        by_rules.to_model_json()["repaired_by"],
        serde_json::json!(["trailing_comma", "number_from_string"])
    );
    assert_eq!(asked.load(Ordering::SeqCst), 0);
    let by_model = call(&registry, r#"{"query": "ada", "max_results": "20 or so"}"#).await;
    assert_eq!(by_model.status(), Status::Success);
    assert_eq!(
        by_model.to_model_json()["repaired_by"],
        serde_json::json!(["model"])
    );
    assert_eq!(asked.load(Ordering::SeqCst), 1);
}

#[tokio::test(flavor = "current_thread")]
async fn the_log_event_names_the_rules() {
    let registry = registry(DeterministicRepair::default());
    let seen = capture::capture(async {
        call(&registry, r#"{"query": "ada", "exact": "true"}"#).await;
        call(&registry, r#"{"query": "ada", "max_results": "99"}"#).await;
    })
    .await;
    let events = seen.of("toolwright::repair");
    let got: Vec<_> = events
        .iter()
        .map(|e| (e.get("by"), e.get("rules"), e.get("result")))
        .collect();
    assert_eq!(
        got,
        [
            (Some("rules"), Some("bool_from_string"), Some("repaired")),
            (
                Some("rules"),
                Some("number_from_string"),
                Some("still invalid")
            ),
        ]
    );
}

/// The input schema of `search_orders`, as the registry gives it to the model.
fn schema() -> &'static serde_json::Value {
    static SCHEMA: std::sync::OnceLock<serde_json::Value> = std::sync::OnceLock::new();
    SCHEMA.get_or_init(|| {
        let registry = registry(DeterministicRepair::default());
        registry
            .spec("search_orders")
            .map(|spec| spec.input_schema().clone())
            .unwrap_or_default()
    })
}

/// Valid arguments for `search_orders`, with strings that look like what the rules fix.
fn valid_arguments() -> impl Strategy<Value = serde_json::Value> {
    let text = prop_oneof![
        "[a-z ]{1,12}",
        "[0-9]{1,4}",
        Just("true".to_owned()),
        Just("null".to_owned()),
        Just("```json {\"a\": 1,}```".to_owned()),
        Just("it's 'quoted', {a: 1,}".to_owned()),
        ".{1,20}",
    ];
    (
        text.clone(),
        proptest::option::of(1u32..=20),
        proptest::option::of(any::<bool>()),
        proptest::option::of(proptest::option::of(proptest::collection::vec(
            text.clone(),
            0..3,
        ))),
        proptest::option::of(proptest::option::of(text)),
        proptest::option::of(proptest::option::of((0u8..24, 0u8..24))),
    )
        .prop_map(|(query, max, exact, tags, note, window)| {
            let mut args = serde_json::Map::new();
            args.insert("query".into(), query.into());
            if let Some(max) = max {
                args.insert("max_results".into(), max.into());
            }
            if let Some(exact) = exact {
                args.insert("exact".into(), exact.into());
            }
            if let Some(tags) = tags {
                args.insert("tags".into(), serde_json::json!(tags));
            }
            if let Some(note) = note {
                args.insert("note".into(), serde_json::json!(note));
            }
            if let Some(window) = window {
                let window = window.map(|(from, to)| serde_json::json!({"from": from, "to": to}));
                args.insert("window".into(), serde_json::json!(window));
            }
            serde_json::Value::Object(args)
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// No rule (key case included) changes a call that was valid, compact or pretty-printed.
    #[test]
    fn no_rule_changes_a_valid_call(args in valid_arguments(), pretty in any::<bool>()) {
        let schema = schema();
        let text = if pretty {
            serde_json::to_string_pretty(&args).unwrap()
        } else {
            args.to_string()
        };
        let every = DeterministicRepair::default().rule(Fix::KeyCase, true);
        prop_assert_eq!(every.repair(schema, &text), None);
        for fix in Fix::ALL.iter().copied() {
            prop_assert_eq!(DeterministicRepair::none().rule(fix, true).repair(schema, &text), None);
        }
    }
}
