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

// ---------------------------------------------------------------------------------------------
// What checking the arguments may cost

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// A runtime tool (MCP only: the schemas below are nothing a strict provider takes) that
/// counts its runs.
fn counted(schema: Value) -> (Registry, Arc<AtomicUsize>) {
    let runs = Arc::new(AtomicUsize::new(0));
    let seen = Arc::clone(&runs);
    let tool = DynamicTool::builder("hostile")
        .description("A tool whose schema came from somewhere else.")
        .input_schema(schema)
        .handler(move |_, _| {
            seen.fetch_add(1, Ordering::SeqCst);
            async { Ok(json!("ran")) }
        })
        .effect(Effect::ReadOnly)
        .providers([Provider::Mcp])
        .build()
        .unwrap();
    (
        Registry::builder().dynamic_tool(tool).build().unwrap(),
        runs,
    )
}

/// `$defs` where each of `steps` definitions names the next twice: `2^steps` subschemas for
/// one value, a few bytes of schema.
fn doubling_chain(steps: usize) -> Value {
    let mut defs = serde_json::Map::new();
    for i in 0..steps {
        let next = format!("#/$defs/d{}", i + 1);
        defs.insert(
            format!("d{i}"),
            json!({"anyOf": [{"$ref": next}, {"$ref": next}]}),
        );
    }
    defs.insert(format!("d{steps}"), json!({"type": "integer"}));
    json!({
        "type": "object",
        "properties": {"x": {"$ref": "#/$defs/d0"}},
        "$defs": defs
    })
}

/// The reproduction: a 9-byte argument against a 20-step doubling chain took 12.7 s of one
/// worker (opt-level 0), building a report of a million branches. The count stops at the
/// steps allowed and the call is refused unchecked, saying why.
#[tokio::test]
async fn a_reference_chain_that_doubles_is_refused_without_walking_every_branch() {
    let (registry, runs) = counted(doubling_chain(20));
    for arguments in [r#"{"x":"s"}"#, r#"{"x":7}"#] {
        let outcome = call(&registry, arguments.into()).await;
        assert_eq!(
            outcome.error_kind(),
            Some(ErrorKind::BadRequest),
            "{arguments}"
        );
        assert!(outcome.retryable());
        let envelope = outcome.to_model_string();
        assert!(envelope.contains("steps allowed"), "{envelope}");
        assert!(envelope.contains("send fewer values"), "{envelope}");
    }
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    // A chain of a few steps is an ordinary schema: checked, and run when valid.
    let (registry, runs) = counted(doubling_chain(4));
    let outcome = call(&registry, r#"{"x":"s"}"#.into()).await;
    assert_eq!(outcome.error_kind(), Some(ErrorKind::SchemaMismatch));
    assert_eq!(outcome.violations()[0].path, "/x");
    let fine = call(&registry, r#"{"x":7}"#.into()).await;
    assert!(fine.is_ok(), "{}", fine.to_model_string());
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

/// A reference the count cannot follow (another document, an anchor) would leave the check
/// unbounded: a build error naming the path and the reference.
#[test]
fn a_reference_outside_the_schema_is_a_build_error_naming_its_path() {
    for reference in ["https://example.com/s.json", "#node", "other.json#/$defs/x"] {
        let err = tool_with(json!({
            "type": "object",
            "properties": {"a": {"$ref": reference}}
        }))
        .unwrap_err();
        match &err {
            BuildError::InvalidSchema { path, message, .. } => {
                assert_eq!(path, "/properties/a/$ref", "{reference}");
                assert!(message.contains(reference), "{message}");
                assert!(message.contains("#/$defs/name"), "{message}");
            }
            other => panic!("{reference}: {other:?}"),
        }
    }
}

/// Valid arguments whose check takes more steps than their length allows are refused before
/// the tool runs: `bad_request`, retryable, saying why and what to send instead. (Before the
/// bound, 100,000 elements against an `anyOf` of 200 patterns took 74 s.)
#[tokio::test]
async fn valid_arguments_too_costly_to_check_are_refused_before_the_tool_runs() {
    // 200 string branches (so none can be ruled out by type), the last of which each element
    // matches.
    let mut branches: Vec<Value> = (0..199)
        .map(|i| json!({"type": "string", "pattern": format!("^a{i}b$")}))
        .collect();
    branches.push(json!({"type": "string"}));
    let (registry, runs) = counted(json!({
        "type": "object",
        "properties": {"x": {"type": "array", "items": {"anyOf": branches}}}
    }));
    let elements = vec![json!("ok"); 5_000];
    let arguments = json!({ "x": elements }).to_string();
    let outcome = call(&registry, arguments.clone()).await;
    assert_eq!(outcome.error_kind(), Some(ErrorKind::BadRequest));
    assert!(outcome.retryable());
    let envelope = outcome.to_model_string();
    assert!(
        envelope.contains(&format!("these {} bytes", arguments.len())),
        "{envelope}"
    );
    assert!(envelope.contains("split the work"), "{envelope}");
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    // A few elements are checked in full and run.
    let few = json!({ "x": vec![json!("ok"); 20] }).to_string();
    let fine = call(&registry, few).await;
    assert!(fine.is_ok(), "{}", fine.to_model_string());
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

/// The bound grows with the argument: a large argument against an ordinary schema is checked
/// in full, valid or not, with every problem listed.
#[tokio::test]
async fn a_large_argument_against_an_ordinary_schema_is_checked_in_full() {
    let (registry, runs) = counted(json!({
        "type": "object",
        "properties": {"rows": {"type": "array", "items": {
            "type": "object",
            "properties": {"id": {"type": "integer", "minimum": 0}, "name": {"type": "string", "maxLength": 40}},
            "required": ["id", "name"]
        }}}
    }));
    let rows: Vec<Value> = (0..20_000)
        .map(|i| json!({"id": i, "name": format!("row {i}")}))
        .collect();
    let arguments = json!({ "rows": rows }).to_string();
    assert!(arguments.len() > 500_000, "{}", arguments.len());
    let outcome = call(&registry, arguments).await;
    assert!(outcome.is_ok(), "{}", outcome.to_model_string());
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    let mut rows = rows;
    rows[7]["id"] = json!(-1);
    rows[19_999]["name"] = json!(7);
    let outcome = call(&registry, json!({ "rows": rows }).to_string()).await;
    assert_eq!(outcome.error_kind(), Some(ErrorKind::SchemaMismatch));
    let paths: Vec<&str> = outcome
        .violations()
        .iter()
        .map(|v| v.path.as_str())
        .collect();
    assert_eq!(paths, ["/rows/7/id", "/rows/19999/name"]);
}

// ---------------------------------------------------------------------------------------------
// What held before, kept: refused when the tool is built

/// Names a model or a reviewer could misread, or a provider refuses, are build errors.
#[test]
fn odd_tool_names_are_refused_at_build() {
    for name in [
        "pay\u{202e}yap",    // right-to-left override
        "pa\u{200b}y",       // zero-width space
        "p\u{0430}y",        // Cyrillic a
        "pay\nnow",          // newline
        &"a".repeat(10_000), // far past any provider's limit
        "",
    ] {
        let built = DynamicTool::builder(name)
            .description("Pay.")
            .input_schema(json!({"type": "object", "properties": {}}))
            .handler(|_, _| async { Ok(json!("ran")) })
            .build()
            .and_then(|tool| Registry::builder().dynamic_tool(tool).build());
        assert!(built.is_err(), "{name:?} was accepted");
    }
}

/// A schema that refers to itself without descending, or nests past what a provider takes, is
/// refused at build; a reference to a file or a URL is never fetched (refused too).
#[test]
fn cycles_depth_and_outside_references_are_refused_at_build() {
    let cycle = json!({
        "type": "object",
        "properties": {"a": {"$ref": "#/$defs/a"}},
        "$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}
    });
    // As deep as a schema parsed from text can be (serde_json stops at 128 levels).
    let deep = (0..40).fold(
        json!({"type": "string"}),
        |inner, _| json!({"type": "object", "properties": {"n": inner}}),
    );
    let deep = json!({"type": "object", "properties": {"n": deep}});
    // Past what a provider takes, and refused by the provider check.
    let nested = (0..12).fold(
        json!({"type": "string"}),
        |inner, _| json!({"type": "object", "properties": {"n": inner}}),
    );
    let nested = json!({"type": "object", "properties": {"n": nested}});
    for schema in [cycle, deep, nested] {
        let built = DynamicTool::builder("hostile")
            .description("A tool whose schema came from somewhere else.")
            .input_schema(schema)
            .handler(|_, _| async { Ok(json!("ran")) })
            .build();
        assert!(built.is_err(), "accepted");
    }
    for reference in [
        "file:///etc/passwd",
        "http://169.254.169.254/latest/meta-data",
    ] {
        let err = tool_with(json!({
            "type": "object",
            "properties": {"a": {"$ref": reference}}
        }))
        .unwrap_err();
        assert!(err.to_string().contains(reference), "{err}");
    }
}

/// A chain of thousands of `$ref`s, each naming the next, is shallow as a document but deep to
/// follow: refused at build (it overflowed the stack), and the message says why.
#[test]
fn a_long_reference_chain_does_not_overflow_the_stack() {
    let mut defs = serde_json::Map::new();
    let steps = 5_000;
    for i in 0..steps {
        defs.insert(
            format!("d{i}"),
            json!({"$ref": format!("#/$defs/d{}", i + 1)}),
        );
    }
    defs.insert(format!("d{steps}"), json!({"type": "integer"}));
    let schema = json!({
        "type": "object",
        "properties": {"x": {"$ref": "#/$defs/d0"}},
        "$defs": defs
    });
    let err = DynamicTool::builder("hostile")
        .description("A tool whose schema came from somewhere else.")
        .input_schema(schema)
        .handler(|_, _| async { Ok(json!("ran")) })
        .providers([Provider::Mcp])
        .build()
        .unwrap_err();
    assert!(err.to_string().contains("5001 `$ref`s"), "{err}");
}
