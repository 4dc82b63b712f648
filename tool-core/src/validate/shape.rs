//! Shape failures: turning a failed parse into every problem, each with its path.
//!
//! The fast path parses the argument text straight into the typed struct; serde stops at the
//! first problem and says little about it. Only when that fails do we come here and re-read the
//! text as a `serde_json::Value`, validate it against the tool's input schema (the `jsonschema`
//! crate, compiled once per tool on first failure) and report all problems at once. When the
//! schema finds nothing (a custom `Deserialize` disagreed with it), `serde_path_to_error` names
//! the path serde stopped at.

use std::sync::{Arc, OnceLock};

use jsonschema::error::{TypeKind, ValidationErrorKind};
use jsonschema::Validator;
use serde::de::DeserializeOwned;
use serde_json::error::Category;
use serde_json::Value;

use super::{display_path, escape_pointer, preview_json, preview_str, summarize};
use crate::outcome::{ErrorKind, Failure, Violation};

/// A tool's input-schema validator, built on the first shape failure and kept.
#[derive(Default)]
pub(crate) struct ShapeValidator(OnceLock<Option<Validator>>);

impl ShapeValidator {
    fn get(&self, schema: &Value) -> Option<&Validator> {
        self.0
            .get_or_init(|| jsonschema::draft202012::new(schema).ok())
            .as_ref()
    }
}

/// Classifies a failed typed parse of `text` as `invalid_json`, `unknown_argument` or
/// `schema_mismatch`, with every violation found.
pub(crate) fn failure<T: DeserializeOwned>(
    text: &str,
    error: &serde_json::Error,
    schema: &Arc<Value>,
    validator: &ShapeValidator,
) -> Failure {
    if error.classify() != Category::Data {
        return invalid_json(text, error, schema);
    }
    // The typed parse reached the data, so the text is JSON; a failure here would be a
    // recursion limit the typed parse never reached.
    let value: Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) => return invalid_json(text, &e, schema),
    };
    let mut violations = Vec::new();
    if !value.is_object() {
        violations.push(Violation {
            path: String::new(),
            rule: "type",
            expected: "object".into(),
            got: Some(preview_json(&value)),
            message: format!(
                "the arguments must be a JSON object, got {}",
                preview_json(&value)
            ),
        });
    } else if let Some(validator) = validator.get(schema) {
        for e in validator.iter_errors(&value) {
            convert(
                e.instance_path().as_str(),
                e.kind(),
                e.instance(),
                schema,
                &mut violations,
            );
        }
    }
    if violations.is_empty() {
        violations.push(from_serde::<T>(text, error));
    }
    let kind = if violations.iter().all(|v| v.rule == "unknown_argument") {
        ErrorKind::UnknownArgument
    } else {
        ErrorKind::SchemaMismatch
    };
    let mut failure = Failure::new(kind, summarize(&violations));
    failure.violations = violations;
    failure.expected_schema = Some(Arc::clone(schema));
    failure
}

fn invalid_json(text: &str, error: &serde_json::Error, schema: &Arc<Value>) -> Failure {
    let message = if text.trim().is_empty() {
        "the arguments are empty; send a JSON object (`{}` when the tool takes no arguments)"
            .to_owned()
    } else if error.to_string().starts_with("recursion limit exceeded") {
        format!(
            "the arguments are nested too deeply to parse (more than 128 levels, at line {} column {}); send a flat JSON object",
            error.line(),
            error.column()
        )
    } else {
        format!("the arguments are not valid JSON: {error}")
    };
    let mut failure = Failure::new(ErrorKind::InvalidJson, message.clone());
    failure.violations.push(Violation {
        path: String::new(),
        rule: "json",
        expected: "a JSON object".into(),
        got: Some(preview_str(text)),
        message,
    });
    failure.expected_schema = Some(Arc::clone(schema));
    failure
}

fn type_name(kind: &TypeKind) -> String {
    match kind {
        TypeKind::Single(t) => article(&t.to_string()),
        TypeKind::Multiple(set) => {
            let names: Vec<String> = set.iter().map(|t| t.to_string()).collect();
            names.join(" or ")
        }
    }
}

fn article(t: &str) -> String {
    match t {
        "integer" | "object" | "array" => format!("an {t}"),
        "null" => "null".to_owned(),
        _ => format!("a {t}"),
    }
}

fn child(parent: &str, key: &str) -> String {
    format!("{parent}/{}", escape_pointer(key))
}

/// Names the arguments the tool defines, for unknown-argument messages.
fn defined_arguments(schema: &Value, parent: &str) -> Vec<String> {
    // Only the top level has a fixed, well-known property list worth naming.
    if !parent.is_empty() {
        return Vec::new();
    }
    let mut names: Vec<String> = schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default();
    names.sort();
    names
}

fn convert(
    path: &str,
    kind: &ValidationErrorKind,
    instance: &Value,
    schema: &Value,
    out: &mut Vec<Violation>,
) {
    let field = display_path(path);
    let got = preview_json(instance);
    let mut push = |path: String,
                    rule: &'static str,
                    expected: String,
                    got: Option<String>,
                    message: String| {
        out.push(Violation {
            path,
            rule,
            expected,
            got,
            message,
        });
    };
    match kind {
        ValidationErrorKind::Type { kind } => {
            let expected = type_name(kind);
            push(
                path.into(),
                "type",
                expected.clone(),
                Some(got.clone()),
                format!("`{field}`: expected {expected}, got {got}"),
            );
        }
        ValidationErrorKind::Required { property } => {
            let name = property.as_str().unwrap_or_default();
            let p = child(path, name);
            let shown = display_path(&p);
            push(
                p,
                "required",
                "a value".into(),
                None,
                format!("`{shown}` is required but missing"),
            );
        }
        ValidationErrorKind::AdditionalProperties { unexpected }
        | ValidationErrorKind::UnevaluatedProperties { unexpected } => {
            let defined = defined_arguments(schema, path);
            let valid = if defined.is_empty() {
                "remove it".to_owned()
            } else {
                let quoted: Vec<String> = defined.iter().map(|d| format!("`{d}`")).collect();
                format!("valid arguments are {}", quoted.join(", "))
            };
            for name in unexpected {
                let p = child(path, name);
                let shown = display_path(&p);
                push(
                    p,
                    "unknown_argument",
                    valid.clone(),
                    Some(format!("`{name}`")),
                    format!("unknown argument `{shown}`; {valid}"),
                );
            }
        }
        ValidationErrorKind::Minimum { limit } => {
            push(
                path.into(),
                "range",
                format!("at least {limit}"),
                Some(got.clone()),
                format!("`{field}` must be at least {limit}, got {instance}"),
            );
        }
        ValidationErrorKind::Maximum { limit } => {
            push(
                path.into(),
                "range",
                format!("at most {limit}"),
                Some(got.clone()),
                format!("`{field}` must be at most {limit}, got {instance}"),
            );
        }
        ValidationErrorKind::ExclusiveMinimum { limit } => {
            push(
                path.into(),
                "range",
                format!("more than {limit}"),
                Some(got.clone()),
                format!("`{field}` must be more than {limit}, got {instance}"),
            );
        }
        ValidationErrorKind::ExclusiveMaximum { limit } => {
            push(
                path.into(),
                "range",
                format!("less than {limit}"),
                Some(got.clone()),
                format!("`{field}` must be less than {limit}, got {instance}"),
            );
        }
        ValidationErrorKind::MinLength { limit } | ValidationErrorKind::MaxLength { limit } => {
            let count = instance.as_str().map_or(0, |s| s.chars().count());
            let bound = if matches!(kind, ValidationErrorKind::MinLength { .. }) {
                "at least"
            } else {
                "at most"
            };
            let expected = format!("{bound} {limit} characters long");
            push(
                path.into(),
                "length",
                expected.clone(),
                Some(format!("{count} characters")),
                format!("`{field}` must be {expected}, got {count} characters"),
            );
        }
        ValidationErrorKind::MinItems { limit } | ValidationErrorKind::MaxItems { limit } => {
            let count = instance.as_array().map_or(0, Vec::len);
            let bound = if matches!(kind, ValidationErrorKind::MinItems { .. }) {
                "at least"
            } else {
                "at most"
            };
            let expected = format!("{bound} {limit} items long");
            push(
                path.into(),
                "length",
                expected.clone(),
                Some(format!("{count} items")),
                format!("`{field}` must be {expected}, got {count} items"),
            );
        }
        ValidationErrorKind::Pattern { pattern } => {
            let expected = format!("a string matching `{pattern}`");
            push(
                path.into(),
                "pattern",
                expected.clone(),
                Some(got.clone()),
                format!("`{field}` must be {expected}, got {got}"),
            );
        }
        ValidationErrorKind::Enum { options }
        | ValidationErrorKind::Constant {
            expected_value: options,
        } => {
            let expected = match options.as_array() {
                Some(items) => {
                    let shown: Vec<String> = items.iter().map(Value::to_string).collect();
                    format!("one of {}", shown.join(", "))
                }
                None => options.to_string(),
            };
            push(
                path.into(),
                "one_of",
                expected.clone(),
                Some(got.clone()),
                format!("`{field}` must be {expected}, got {got}"),
            );
        }
        other => {
            let keyword = other.keyword();
            let expected = format!("to satisfy `{keyword}`");
            push(
                path.into(),
                "schema",
                expected,
                Some(got.clone()),
                format!("`{field}` does not satisfy the schema's `{keyword}` rule, got {got}"),
            );
        }
    }
}

/// The first problem serde found, with the path it stopped at.
fn from_serde<T: DeserializeOwned>(text: &str, error: &serde_json::Error) -> Violation {
    let mut de = serde_json::Deserializer::from_str(text);
    let (path, detail) = match serde_path_to_error::deserialize::<_, T>(&mut de) {
        Err(e) => {
            let mut pointer = String::new();
            for segment in e.path().iter() {
                use serde_path_to_error::Segment;
                match segment {
                    Segment::Seq { index } => pointer.push_str(&format!("/{index}")),
                    Segment::Map { key } => pointer.push_str(&format!("/{}", escape_pointer(key))),
                    Segment::Enum { variant } => {
                        pointer.push_str(&format!("/{}", escape_pointer(variant)))
                    }
                    Segment::Unknown => {}
                }
            }
            (pointer, strip_position(&e.into_inner().to_string()))
        }
        Ok(_) => (String::new(), strip_position(&error.to_string())),
    };
    let field = display_path(&path);
    Violation {
        message: format!("`{field}`: {detail}"),
        path,
        rule: "type",
        expected: detail.clone(),
        got: None,
    }
}

/// serde_json appends " at line 1 column 17"; the path already says where.
fn strip_position(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(i) => message[..i].to_owned(),
        None => message.to_owned(),
    }
}
