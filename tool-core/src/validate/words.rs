//! The sentences of a violation, shared by both reports of a failed parse (the one-pass plan's,
//! [`super::report`], and the general validator's, [`super::shape`]): each builds the
//! violation's path, rule, expected, got and message the same way.

use serde_json::Value;

use super::{about, display_path, push_pointer_token, shown_key};
use crate::outcome::Violation;
use crate::tool::schema::IntegerType;
use crate::wording::concat;

/// A JSON type's name with its article: "a string", "an integer", "null".
pub(crate) fn article(t: &str) -> String {
    match t {
        "integer" | "object" | "array" => concat(&["an ", t]),
        "null" => "null".to_owned(),
        _ => concat(&["a ", t]),
    }
}

/// The pointer of `parent`'s member `key`.
pub(crate) fn child(parent: &str, key: &str) -> String {
    let mut out = String::with_capacity(parent.len() + 1 + key.len());
    out.push_str(parent);
    out.push('/');
    push_pointer_token(&mut out, key);
    out
}

/// "`field`: expected {expected}, got {got}".
pub(crate) fn type_violation(path: String, expected: String, got: String) -> Violation {
    let message = about("", &path, &[": expected ", &expected, ", got ", &got]);
    Violation {
        path,
        rule: "type",
        expected,
        got: Some(got),
        message,
    }
}

/// "`field` must be {expected}, got {got}".
pub(crate) fn must_be_violation(
    path: String,
    rule: &'static str,
    expected: String,
    got: String,
) -> Violation {
    let message = about("", &path, &[" must be ", &expected, ", got ", &got]);
    Violation {
        path,
        rule,
        expected,
        got: Some(got),
        message,
    }
}

/// "`field` is required but missing".
pub(crate) fn required_violation(path: String) -> Violation {
    let message = about("", &path, &[" is required but missing"]);
    Violation {
        path,
        rule: "required",
        expected: "a value".into(),
        got: None,
        message,
    }
}

/// "unknown argument `field`; {valid}", `valid` from [`valid_arguments`].
pub(crate) fn unknown_violation(path: String, name: &str, valid: &str) -> Violation {
    let message = about("unknown argument ", &path, &["; ", valid]);
    Violation {
        path,
        rule: "unknown_argument",
        expected: valid.to_owned(),
        got: Some(concat(&["`", &shown_key(name), "`"])),
        message,
    }
}

/// What an unknown argument is told: the arguments there are, or to remove it.
pub(crate) fn valid_arguments(defined: &[String]) -> String {
    if defined.is_empty() {
        return "remove it".to_owned();
    }
    let quoted = defined.iter().map(|d| concat(&["`", &shown_key(d), "`"]));
    concat(&["valid arguments are ", &listed(quoted, defined.len())])
}

/// Most values (allowed values, argument names) one `expected` lists.
const LISTED_VALUES: usize = 20;

/// Most characters of the values one `expected` lists, and of one value or pattern quoted.
const LISTED_CHARS: usize = 1000;

/// Most characters of one allowed value or pattern quoted whole.
const QUOTED_CHARS: usize = 200;

/// `items` (of `total`) joined with `, `, cut after [`LISTED_VALUES`] of them or
/// [`LISTED_CHARS`] characters, saying how many were left out: a schema's 200,000-value `enum`
/// must not come back whole in every failure.
pub(crate) fn listed(items: impl Iterator<Item = String>, total: usize) -> String {
    let mut out = String::new();
    let mut shown = 0;
    for item in items.take(LISTED_VALUES) {
        if shown > 0 && out.len() + item.len() > LISTED_CHARS {
            break;
        }
        if shown > 0 {
            out.push_str(", ");
        }
        out.push_str(&item);
        shown += 1;
    }
    if shown < total {
        out.push_str(&format!(", and {} more", total - shown));
    }
    out
}

/// One allowed value as JSON text, cut with its length when long.
pub(crate) fn shown_value(value: &Value) -> String {
    match value {
        Value::String(s) => super::preview_str(s),
        Value::Array(_) | Value::Object(_) => {
            let text = value.to_string();
            match text.char_indices().nth(QUOTED_CHARS) {
                Some((at, _)) => {
                    format!("{}... ({} characters)", &text[..at], text.chars().count())
                }
                None => text,
            }
        }
        other => other.to_string(),
    }
}

/// A schema's pattern as a message quotes it, in backticks: whole up to [`QUOTED_CHARS`]
/// characters, cut with its length beyond.
pub(crate) fn shown_pattern(pattern: &str) -> String {
    match pattern.char_indices().nth(QUOTED_CHARS) {
        Some((at, _)) => format!(
            "`{}...` (a pattern of {} characters, cut here)",
            &pattern[..at],
            pattern.chars().count()
        ),
        None => format!("`{pattern}`"),
    }
}

/// "`b` is out of range for a 32-bit unsigned integer (0 to 4294967295), got 4294967296".
pub(crate) fn out_of_range(path: &str, integer: IntegerType, got: String) -> Violation {
    Violation {
        message: format!(
            "`{}` is out of range for {}, got {got}",
            display_path(path),
            integer.describe()
        ),
        path: path.to_owned(),
        rule: "range",
        expected: format!("an integer from {} to {}", integer.min, integer.max),
        got: Some(got),
    }
}
