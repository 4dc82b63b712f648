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
            BuildError::InvalidSchema { tool, path, message } => {
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
