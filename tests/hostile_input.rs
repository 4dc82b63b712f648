//! What a hostile model can send a tool defined at run time (or a proxied one, which is one),
//! and the bound each attempt meets: patterns run in linear time or are refused at build, the
//! envelope of a failure stays under its cap whatever the schema, validation of a large argument
//! does not hold the worker other calls share.

use std::time::Duration;

use serde_json::{json, Value};
use toolwright::prelude::*;
use toolwright::{BuildError, DynamicTool, Effect};

fn tool_with(schema: Value) -> Result<DynamicTool, BuildError> {
    DynamicTool::builder("hostile")
        .description("A tool whose schema came from somewhere else.")
        .input_schema(schema)
        .handler(|_, _| async { Ok(json!("ran")) })
        .effect(Effect::ReadOnly)
        .timeout(Duration::from_secs(1))
        .build()
}

fn with_pattern(pattern: &str) -> Value {
    json!({
        "type": "object",
        "properties": {"p": {"type": "string", "pattern": pattern}},
        "required": ["p"]
    })
}

async fn call(registry: &Registry, arguments: String) -> Outcome {
    registry
        .call(ToolCall::new("c1", "hostile", arguments))
        .await
}

// ---------------------------------------------------------------------------------------------
// Patterns

#[test]
fn a_pattern_only_a_backtracking_engine_can_run_is_a_build_error_naming_tool_and_path() {
    for pattern in [
        // The issue's reproductions: 12 s for 64,000 characters, 8.5 s for 16,000.
        "(?=.*[0-9])[a-z]+$",
        "(?<=(a|aa)+)b",
        // A backreference.
        r"^(a+)\1$",
    ] {
        let err = tool_with(with_pattern(pattern)).unwrap_err();
        match &err {
            BuildError::InvalidSchema {
                tool,
                path,
                message,
            } => {
                assert_eq!(tool, "hostile");
                assert_eq!(path, "/properties/p/pattern", "{pattern}");
                assert!(message.contains(pattern), "{message}");
                assert!(message.contains("linear"), "{message}");
            }
            other => panic!("{pattern}: {other:?}"),
        }
    }
    // In `patternProperties` too.
    let err = tool_with(json!({
        "type": "object",
        "patternProperties": {"(?=x)y": {"type": "string"}}
    }))
    .unwrap_err();
    assert!(
        matches!(&err, BuildError::InvalidSchema { path, .. } if path.starts_with("/patternProperties")),
        "{err:?}"
    );
}

/// Nested quantifiers, anchored, run on the linear engine: a long argument that fails them is
/// an ordinary `schema_mismatch` naming the pattern.
#[tokio::test]
async fn anchored_nested_quantifiers_refuse_a_long_argument_as_schema_mismatch() {
    let registry = Registry::builder()
        .dynamic_tool(tool_with(with_pattern("^(a+)+$")).unwrap())
        .build()
        .unwrap();
    let long = format!("{}!", "a".repeat(64_000));
    let outcome = call(&registry, json!({ "p": long }).to_string()).await;
    assert_eq!(outcome.error_kind(), Some(ErrorKind::SchemaMismatch));
    assert_eq!(outcome.violations()[0].path, "/p");
    assert!(
        outcome.violations()[0].expected.contains("^(a+)+$"),
        "{:?}",
        outcome.violations()
    );
    let fine = call(&registry, json!({ "p": "a".repeat(64_000) }).to_string()).await;
    assert!(fine.is_ok(), "{}", fine.to_model_string());
}

/// A schema's pattern is ECMA-262: without the `u` flag `\d` is `[0-9]` and `\w` is ASCII, so
/// digits and letters of other scripts are refused (the `regex` crate alone would take them).
#[tokio::test]
async fn a_runtime_pattern_reads_classes_as_ecma_262_does() {
    let registry = Registry::builder()
        .dynamic_tool(tool_with(with_pattern(r"^\d+\w$")).unwrap())
        .build()
        .unwrap();
    let ok = call(&registry, json!({"p": "12a"}).to_string()).await;
    assert!(ok.is_ok(), "{}", ok.to_model_string());
    for refused in ["١٢a", "12é", "१२a"] {
        let outcome = call(&registry, json!({ "p": refused }).to_string()).await;
        assert_eq!(
            outcome.error_kind(),
            Some(ErrorKind::SchemaMismatch),
            "{refused}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// The envelope

use toolwright::outcome::DEFAULT_MAX_ENVELOPE_BYTES;
use toolwright::providers::Provider;

fn mcp_only(schema: Value) -> Registry {
    let tool = DynamicTool::builder("hostile")
        .description("A tool whose schema came from somewhere else.")
        .input_schema(schema)
        .handler(|_, _| async { Ok(json!("ran")) })
        .effect(Effect::ReadOnly)
        .providers([Provider::Mcp])
        .build()
        .unwrap();
    Registry::builder().dynamic_tool(tool).build().unwrap()
}

/// The issue's reproduction: a 200,000-value `enum` quoted whole made a 9.3 MB envelope.
#[tokio::test]
async fn a_huge_enum_is_cut_in_the_envelope_with_a_count_of_what_was_left_out() {
    let values: Vec<String> = (0..200_000).map(|i| format!("value-{i}")).collect();
    let registry = mcp_only(json!({
        "type": "object",
        "properties": {"choice": {"enum": values}},
        "required": ["choice"]
    }));
    let outcome = call(&registry, r#"{"choice":"nope"}"#.to_owned()).await;
    assert_eq!(outcome.error_kind(), Some(ErrorKind::SchemaMismatch));
    let expected = &outcome.violations()[0].expected;
    assert!(
        expected.starts_with("one of \"value-0\", \"value-1\""),
        "{expected}"
    );
    assert!(expected.ends_with(", and 199980 more"), "{expected}");
    let text = outcome.to_model_string();
    assert!(
        text.len() <= DEFAULT_MAX_ENVELOPE_BYTES,
        "{} bytes",
        text.len()
    );
    // The schema, megabytes long, is left out and the message says so.
    let envelope: Value = serde_json::from_str(&text).unwrap();
    assert!(envelope.get("expected_schema").is_none());
    let message = envelope["message"].as_str().unwrap();
    assert!(message.contains("expected_schema"), "{message}");
    assert!(message.contains("left out"), "{message}");
    let tree = outcome.to_model_json().to_string();
    assert!(
        tree.len() <= DEFAULT_MAX_ENVELOPE_BYTES,
        "{} bytes",
        tree.len()
    );
    // Another cap, when asked.
    let small = outcome.to_model_string_within(4096);
    assert!(small.len() <= 4096, "{} bytes: {small}", small.len());
    serde_json::from_str::<Value>(&small).unwrap();
}

/// A pattern of 20,000 characters, a `oneOf` of 10,000 constants and a schema of 100,000
/// properties with 20,000 unknown keys sent: each `expected` is cut, the envelope under its cap.
#[tokio::test]
async fn every_long_expected_side_is_cut_and_the_envelope_stays_under_its_cap() {
    let pattern = format!("^({})$", vec!["abc"; 5_000].join("|"));
    let constants: Vec<Value> = (0..10_000).map(|i| json!({ "const": i })).collect();
    let mut properties = serde_json::Map::new();
    properties.insert("p".into(), json!({"type": "string", "pattern": pattern}));
    properties.insert("k".into(), json!({"oneOf": constants}));
    for i in 0..100_000 {
        properties.insert(format!("field_{i}"), json!({"type": "integer"}));
    }
    let registry = mcp_only(json!({
        "type": "object",
        "properties": properties,
        "additionalProperties": false
    }));
    let outcome = call(&registry, json!({"p": "zzz", "k": -1}).to_string()).await;
    assert_eq!(outcome.error_kind(), Some(ErrorKind::SchemaMismatch));
    for violation in outcome.violations() {
        assert!(
            violation.expected.len() < 2_000,
            "{}: {} bytes",
            violation.rule,
            violation.expected.len()
        );
        assert!(
            violation.message.len() < 3_000,
            "{}",
            violation.message.len()
        );
    }
    let pattern_violation = outcome
        .violations()
        .iter()
        .find(|v| v.rule == "pattern")
        .unwrap();
    assert!(
        pattern_violation
            .expected
            .contains("(a pattern of 20003 characters, cut here)"),
        "{}",
        pattern_violation.expected
    );
    let text = outcome.to_model_string();
    assert!(
        text.len() <= DEFAULT_MAX_ENVELOPE_BYTES,
        "{} bytes",
        text.len()
    );

    let mut unknown = serde_json::Map::new();
    for i in 0..20_000 {
        unknown.insert(format!("x{i}"), json!(1));
    }
    let outcome = call(&registry, Value::Object(unknown).to_string()).await;
    assert_eq!(outcome.error_kind(), Some(ErrorKind::UnknownArgument));
    assert_eq!(
        outcome.violations().len(),
        toolwright::validate::MAX_REPORTED_VIOLATIONS
    );
    let expected = &outcome.violations()[0].expected;
    assert!(expected.ends_with(" more"), "{expected}");
    assert!(expected.len() < 2_000, "{} bytes", expected.len());
    let text = outcome.to_model_string();
    assert!(
        text.len() <= DEFAULT_MAX_ENVELOPE_BYTES,
        "{} bytes",
        text.len()
    );
    assert!(
        text.contains("only the first 50 problems are listed"),
        "cut, and says so"
    );
}
