//! The validation seam: everything checked before a tool body runs.
//!
//! Three stages, kept apart because each fails for a different reason and needs a different
//! answer (seed 000, "Build the validation layer before execution"):
//!
//! 1. **shape** (the crate-private `shape` module): the argument text is parsed straight into
//!    the typed argument struct. On failure, a slow path re-reads the text against the input
//!    schema to report every problem with its JSON path: `invalid_json`, `unknown_argument` or
//!    `schema_mismatch`.
//! 2. **field rules** ([`rules`]): the `#[arg(...)]` declarations, checked on the typed values;
//!    every violation is reported, not the first (`schema_mismatch`).
//! 3. **semantics**: the tool's cross-field rule (`semantic_invalid`).

pub mod repair;
pub mod rules;
pub(crate) mod shape;

use std::borrow::Cow;
use std::fmt::Write as _;

use crate::outcome::Violation;

/// Collects every argument problem of one call, so the model can fix them all in one turn.
#[derive(Debug, Default)]
pub struct Violations(Vec<Violation>);

impl Violations {
    /// An empty report.
    pub fn new() -> Self {
        Violations(Vec::new())
    }

    /// Records a problem.
    pub fn push(&mut self, violation: Violation) {
        self.0.push(violation);
    }

    /// Records a problem with a top-level field, building the message from its parts:
    /// "`field` must be {expected}, got {got}".
    pub fn field(&mut self, field: &str, rule: &'static str, expected: String, got: String) {
        let message = format!("`{field}` must be {expected}, got {got}");
        self.0.push(Violation {
            path: format!("/{}", escape_pointer(field)),
            rule,
            expected,
            got: Some(got),
            message,
        });
    }

    /// Whether nothing was found.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// How many problems were found.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// The problems found.
    pub fn as_slice(&self) -> &[Violation] {
        &self.0
    }

    /// The problems found, by value.
    pub fn into_vec(self) -> Vec<Violation> {
        self.0
    }
}

/// Escapes one JSON Pointer token (RFC 6901).
pub(crate) fn escape_pointer(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}

/// Longest object key kept whole in a path or message, in characters.
const KEY_CHARS: usize = 64;

/// A key shortened for a path or a message when it is absurdly long (a model that sends a
/// megabyte-long field name must not get a megabyte back): its head and its length.
pub(crate) fn shown_key(key: &str) -> Cow<'_, str> {
    let count = key.chars().count();
    if count <= KEY_CHARS {
        Cow::Borrowed(key)
    } else {
        let head: String = key.chars().take(PREVIEW_CHARS).collect();
        Cow::Owned(format!("{head}...({count} characters)"))
    }
}

/// One JSON Pointer token for an object key: escaped, and shortened when absurdly long.
pub(crate) fn pointer_token(key: &str) -> String {
    escape_pointer(&shown_key(key))
}

/// A JSON Pointer with absurdly long tokens shortened (see [`shown_key`]).
pub(crate) fn bounded_pointer(pointer: &str) -> Cow<'_, str> {
    if pointer.len() <= 4 * KEY_CHARS {
        return Cow::Borrowed(pointer);
    }
    let mut out = String::with_capacity(4 * KEY_CHARS);
    for token in pointer.split('/').skip(1) {
        out.push('/');
        if token.chars().count() <= KEY_CHARS {
            out.push_str(token);
        } else {
            let key = token.replace("~1", "/").replace("~0", "~");
            out.push_str(&pointer_token(&key));
        }
    }
    Cow::Owned(out)
}

/// Renders a JSON Pointer the way a person reads a field: `/legs/0/from` -> `legs[0].from`.
pub(crate) fn display_path(pointer: &str) -> String {
    if pointer.is_empty() {
        return "arguments".to_owned();
    }
    let mut out = String::with_capacity(pointer.len());
    for token in pointer.split('/').skip(1) {
        let token = token.replace("~1", "/").replace("~0", "~");
        if !token.is_empty() && token.bytes().all(|b| b.is_ascii_digit()) && !out.is_empty() {
            let _ = write!(out, "[{token}]");
        } else {
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(&token);
        }
    }
    out
}

/// "1 item", "3 items", "1 character": a count with its unit, given in the plural.
pub(crate) fn counted(n: u64, unit: &str) -> String {
    if n != 1 {
        return format!("{n} {unit}");
    }
    let one = match unit {
        "entries" => "entry",
        other => other.strip_suffix('s').unwrap_or(other),
    };
    format!("1 {one}")
}

/// What a broken `length` bound expects: "non-empty", "at least 3 characters long",
/// "at most 1 item long".
pub(crate) fn length_expected(at_least: bool, limit: u64, unit: &str) -> String {
    match (at_least, limit) {
        (true, 1) => "non-empty".to_owned(),
        (true, n) => format!("at least {} long", counted(n, unit)),
        (false, n) => format!("at most {} long", counted(n, unit)),
    }
}

/// One message for the whole report: the single problem, or all of them in a row.
pub(crate) fn summarize(violations: &[Violation]) -> String {
    match violations {
        [one] => one.message.clone(),
        many => {
            let all: Vec<&str> = many.iter().map(|v| v.message.as_str()).collect();
            format!(
                "{} problems with the arguments: {}",
                many.len(),
                all.join("; ")
            )
        }
    }
}

/// Longest value preview echoed back to the model, in characters.
const PREVIEW_CHARS: usize = 48;

/// A short, safe rendering of a string value for a message: quoted, and cut with its length
/// when long, so a 1 MB argument is never echoed back to the model.
pub fn preview_str(s: &str) -> String {
    let count = s.chars().count();
    if count <= PREVIEW_CHARS {
        format!("{s:?}")
    } else {
        let head: String = s.chars().take(PREVIEW_CHARS).collect();
        format!("{head:?}... ({count} characters)")
    }
}

/// A short rendering of any JSON value: its type and, for scalars, the value.
pub(crate) fn preview_json(v: &serde_json::Value) -> String {
    use serde_json::Value;
    match v {
        Value::Null => "null".to_owned(),
        Value::Bool(b) => format!("boolean {b}"),
        Value::Number(n) => format!("number {n}"),
        Value::String(s) => format!("string {}", preview_str(s)),
        Value::Array(a) => format!(
            "an array of {} item{}",
            a.len(),
            if a.len() == 1 { "" } else { "s" }
        ),
        Value::Object(o) => format!(
            "an object with {} field{}",
            o.len(),
            if o.len() == 1 { "" } else { "s" }
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pointers_read_as_field_paths() {
        assert_eq!(display_path(""), "arguments");
        assert_eq!(display_path("/max_results"), "max_results");
        assert_eq!(display_path("/legs/0/from"), "legs[0].from");
        assert_eq!(display_path("/a~1b/c~0d"), "a/b.c~d");
    }

    #[test]
    fn counts_agree_with_their_number() {
        assert_eq!(counted(1, "items"), "1 item");
        assert_eq!(counted(0, "items"), "0 items");
        assert_eq!(counted(1, "entries"), "1 entry");
        assert_eq!(counted(1, "characters"), "1 character");
        assert_eq!(length_expected(true, 1, "items"), "non-empty");
        assert_eq!(length_expected(false, 1, "items"), "at most 1 item long");
        assert_eq!(
            length_expected(true, 3, "characters"),
            "at least 3 characters long"
        );
    }

    #[test]
    fn absurdly_long_keys_are_cut_in_paths() {
        let key = "k".repeat(100_000);
        let token = pointer_token(&key);
        assert!(token.len() < 100, "{token}");
        assert!(token.ends_with("...(100000 characters)"));
        assert_eq!(pointer_token("a/b"), "a~1b");
        let pointer = format!("/counts/{key}/0");
        let bounded = bounded_pointer(&pointer);
        assert_eq!(bounded, format!("/counts/{token}/0"));
        assert_eq!(bounded_pointer("/legs/0/from"), "/legs/0/from");
    }

    #[test]
    fn long_strings_are_cut_with_their_length() {
        let s = "x".repeat(1_000_000);
        let p = preview_str(&s);
        assert!(p.len() < 100, "{p}");
        assert!(p.ends_with("(1000000 characters)"));
        assert_eq!(preview_str("AB"), "\"AB\"");
    }
}
