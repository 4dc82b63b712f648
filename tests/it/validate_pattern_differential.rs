//! `#[arg(pattern)]` means what the schema's `pattern` keyword means.
//!
//! JSON Schema patterns are ECMA-262 regular expressions: without the `u` flag `\d` is `[0-9]`
//! and `\w` is `[A-Za-z0-9_]`, while Rust's `regex` makes both Unicode-aware. The runtime check
//! translates the pattern as the `jsonschema` validator does, so the two accept the same
//! strings; this file checks that on every pattern the tests, `tests/ui-pass` and `examples/`
//! use, plus the classes whose meaning differs, against strings in several scripts.

use serde_json::{json, Value};
use toolwright::prelude::*;
use toolwright::validate::rules::LazyPattern;

/// The patterns in the test suite, `tests/ui-pass` and `examples/` (read from the sources by
/// [`declared_patterns`] as well, so a new one is covered without being listed), then the
/// classes whose meaning differs between ECMA-262 and Rust's `regex`.
const PATTERNS: &[&str] = &[
    "^A[0-9]+$",
    "^A[0-9]{4}$",
    "^B[0-9]+$",
    "^[A-Z]{3}$",
    "^[a-z]+$",
    "^SKU-[0-9]{4}$",
    r"^A\d{4}$",
    r"^\w+$",
    r"\d",
    r"^\D+$",
    r"^\W+$",
    r"^[\w-]+$",
    r"^[^\d]+$",
    r"\s",
    r"^\S+$",
    r"^[\s\d]+$",
    "^.+$",
    "a.b",
    r"\bA",
    r"A\B",
];

/// ASCII, other scripts' digits and letters, Unicode whitespace and line terminators.
const PIECES: &[&str] = &[
    "",
    "A",
    "a",
    "Z",
    "_",
    "-",
    "1",
    "1234",
    "A1234",
    "SKU-1234",
    "SFO",
    "abc",
    "١٢٣٤",     // Arabic-Indic digits
    "１２３４", // full-width digits
    "१२३४",     // Devanagari digits
    "пароль",
    "é",
    "ß",
    "日本",
    " ",
    "\t",
    "\n",
    "\r",
    "\u{a0}",
    "\u{2003}",
    "\u{feff}",
    "\u{2028}",
    "\u{85}",
    "\u{180e}",
];

/// Every piece, and every pair of pieces: word boundaries sit between them.
fn inputs() -> Vec<String> {
    let mut inputs: Vec<String> = PIECES.iter().map(|p| (*p).to_owned()).collect();
    for a in PIECES {
        for b in PIECES {
            inputs.push(format!("{a}{b}"));
        }
    }
    inputs.push("A1234 ".to_owned());
    inputs.push("xA1234".to_owned());
    inputs
}

/// Every `#[arg(pattern)]` literal in the `.rs` files of `tests/it/`, `tests/failure_paths/`,
/// `tests/ui-pass/` and `examples/` (not `tests/ui`, whose patterns are wrong on purpose).
fn declared_patterns() -> Vec<String> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut patterns = Vec::new();
    for dir in [
        "tests/it",
        "tests/failure_paths",
        "tests/ui-pass",
        "examples",
    ] {
        let entries = std::fs::read_dir(root.join(dir)).expect("the directory exists");
        for entry in entries {
            let path = entry.expect("readable").path();
            if path.extension().is_some_and(|e| e == "rs") {
                let source = std::fs::read_to_string(&path).expect("readable");
                patterns.extend(string_literals_after(&source, "pattern = \""));
            }
        }
    }
    patterns.sort();
    patterns.dedup();
    patterns
}

/// The string literals that follow `marker` (which ends at the opening quote), unescaped.
fn string_literals_after(source: &str, marker: &str) -> Vec<String> {
    let mut found = Vec::new();
    for (start, _) in source.match_indices(marker) {
        let mut literal = String::new();
        let mut chars = source[start + marker.len()..].chars();
        while let Some(c) = chars.next() {
            match c {
                '"' => break,
                '\\' => literal.extend(chars.next()),
                c => literal.push(c),
            }
        }
        found.push(literal);
    }
    found
}

#[test]
fn the_patterns_in_the_sources_are_found() {
    let declared = declared_patterns();
    for pattern in ["^[A-Z]{3}$", "^A[0-9]{4}$", r"^A\d{4}$"] {
        assert!(
            declared.iter().any(|p| p == pattern),
            "{pattern}: {declared:?}"
        );
    }
}

#[test]
fn the_runtime_check_accepts_exactly_what_the_schema_keyword_accepts() {
    let inputs = inputs();
    let mut patterns: Vec<String> = PATTERNS.iter().map(|p| (*p).to_owned()).collect();
    patterns.extend(declared_patterns());
    let mut disagreements = Vec::new();
    for pattern in &patterns {
        let schema = json!({"type": "string", "pattern": pattern});
        let validator = jsonschema::validator_for(&schema).expect("the pattern compiles");
        let runtime = LazyPattern::new(Box::leak(pattern.clone().into_boxed_str()));
        for input in &inputs {
            let by_schema = validator.is_valid(&Value::String(input.clone()));
            let by_rule = runtime.is_match(input).expect("the pattern translates");
            if by_schema != by_rule {
                disagreements.push(format!(
                    "{pattern:?} on {input:?}: schema {by_schema}, rule {by_rule}"
                ));
            }
        }
    }
    assert!(disagreements.is_empty(), "{disagreements:#?}");
}

/// Look up an order.
#[tool(read_only)]
async fn get_order(
    /// The order id.
    #[arg(pattern = "^A\\d{4}$")]
    order_id: String,
    /// A username.
    #[arg(pattern = "^\\w+$")]
    user: Option<String>,
) -> Result<String, ToolError> {
    Ok(format!("{order_id} {user:?}"))
}

async fn call(arguments: Value) -> Outcome {
    let registry = Registry::builder().tool(GetOrder).build().expect("builds");
    registry
        .call(ToolCall::new("c1", "get_order", arguments.to_string()))
        .await
}

#[tokio::test]
async fn other_scripts_digits_are_not_ecma_digits() {
    for id in ["A١٢٣٤", "A１２３４", "A१२३४"] {
        let outcome = call(json!({"order_id": id})).await;
        assert_eq!(outcome.status(), Status::Error, "{id}");
        assert_eq!(
            outcome.error_kind(),
            Some(ErrorKind::SchemaMismatch),
            "{id}: {}",
            outcome.to_model_json()
        );
    }
    let outcome = call(json!({"order_id": "A1234"})).await;
    assert_eq!(
        outcome.status(),
        Status::Success,
        "{}",
        outcome.to_model_json()
    );
}

#[tokio::test]
async fn other_scripts_letters_are_not_ecma_word_characters() {
    let outcome = call(json!({"order_id": "A1234", "user": "пароль"})).await;
    assert_eq!(
        outcome.status(),
        Status::Error,
        "{}",
        outcome.to_model_json()
    );
    let outcome = call(json!({"order_id": "A1234", "user": "pass_word1"})).await;
    assert_eq!(
        outcome.status(),
        Status::Success,
        "{}",
        outcome.to_model_json()
    );
}
