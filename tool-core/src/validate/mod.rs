//! The validation seam: everything checked before a tool body runs.
//!
//! Three stages, kept apart because each fails for a different reason and needs a different
//! answer, and all of them run before any effect:
//!
//! 1. **shape** (the crate-private `shape` module): the argument text is parsed straight into
//!    the typed argument struct. On failure, a slow path re-reads the text against the input
//!    schema to report every problem with its JSON path: `invalid_json`, `unknown_argument` or
//!    `schema_mismatch`.
//! 2. **field rules** ([`rules`]): the `#[arg(...)]` declarations, checked on the typed values;
//!    every violation is reported, not the first (`schema_mismatch`).
//! 3. **semantics**: the tool's cross-field rule (`semantic_invalid`).

pub(crate) mod metered;
mod report;
pub mod rules;
mod serde_error;
pub(crate) mod shape;
mod words;

use std::borrow::Cow;

use serde_json::Value;

use crate::outcome::{Failure, Violation};
use crate::tool::spec::FieldMeta;

pub(crate) use crate::outcome::{escape_pointer, push_escaped_pointer};

/// Longest object key kept whole in a path or message, in characters.
const KEY_CHARS: usize = 64;

/// A key shortened for a path or a message when it is absurdly long (a model that sends a
/// megabyte-long field name must not get a megabyte back): its head and its length.
#[inline]
pub(crate) fn shown_key(key: &str) -> Cow<'_, str> {
    // No more bytes than the limit: no more characters either, without counting them.
    if key.len() <= KEY_CHARS {
        return Cow::Borrowed(key);
    }
    shortened_key(key)
}

/// [`shown_key`] of a key over the limit in bytes.
#[cold]
fn shortened_key(key: &str) -> Cow<'_, str> {
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
    let mut out = String::with_capacity(key.len());
    push_pointer_token(&mut out, key);
    out
}

/// [`pointer_token`], written at the end of `out` (a key short enough to keep whole and with
/// nothing to escape, nearly every key a report reads, is copied without an allocation).
pub(crate) fn push_pointer_token(out: &mut String, key: &str) {
    push_escaped_pointer(out, &shown_key(key));
}

/// A JSON Pointer with absurdly long tokens shortened (see [`shown_key`]).
pub(crate) fn bounded_pointer(pointer: &str) -> Cow<'_, str> {
    // No token of a pointer this short can be over the limit.
    if pointer.len() <= KEY_CHARS {
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
    let mut out = String::with_capacity(pointer.len().max(9));
    push_display_path(&mut out, pointer);
    out
}

/// [`display_path`], written at the end of `out`.
fn push_display_path(out: &mut String, pointer: &str) {
    if pointer.is_empty() {
        out.push_str("arguments");
        return;
    }
    let start = out.len();
    // The tokens after the first `/` (every pointer starts with one), split by bytes: a
    // failure's report writes a path several times, and `str::split` with its char searcher
    // cost three times as much on these short pointers.
    let Some(slash) = pointer.bytes().position(|b| b == b'/') else {
        return;
    };
    let mut rest = &pointer[slash + 1..];
    loop {
        let end = rest.bytes().position(|b| b == b'/').unwrap_or(rest.len());
        let token = &rest[..end];
        let first = out.len() == start;
        if !first && !token.is_empty() && token.bytes().all(|b| b.is_ascii_digit()) {
            out.push('[');
            out.push_str(token);
            out.push(']');
        } else {
            if !first {
                out.push('.');
            }
            if token.as_bytes().contains(&b'~') {
                out.push_str(&token.replace("~1", "/").replace("~0", "~"));
            } else {
                out.push_str(token);
            }
        }
        match rest.get(end + 1..) {
            Some(next) => rest = next,
            None => break,
        }
    }
}

/// A sentence about the value at `pointer`: `lead`, the field in backticks, then `rest`, in one
/// allocation ("`to.city`: expected a string, got number 7").
pub(crate) fn about(lead: &str, pointer: &str, rest: &[&str]) -> String {
    let length = lead.len() + pointer.len() + 12 + rest.iter().map(|r| r.len()).sum::<usize>();
    let mut out = String::with_capacity(length);
    out.push_str(lead);
    out.push('`');
    push_display_path(&mut out, pointer);
    out.push('`');
    for part in rest {
        out.push_str(part);
    }
    out
}

/// "1 item", "3 items", "1 character": a count with its unit, given in the plural.
pub(crate) fn counted(n: u64, unit: &str) -> String {
    let mut out = String::with_capacity(24 + unit.len());
    push_counted(&mut out, n, unit);
    out
}

/// [`counted`], written at the end of `out`.
fn push_counted(out: &mut String, n: u64, unit: &str) {
    crate::wording::push_number(out, n);
    out.push(' ');
    if n != 1 {
        out.push_str(unit);
        return;
    }
    out.push_str(match unit {
        "entries" => "entry",
        other => other.strip_suffix('s').unwrap_or(other),
    });
}

/// What a broken `length` bound expects: "non-empty", "at least 3 characters long",
/// "at most 1 item long".
pub(crate) fn length_expected(at_least: bool, limit: u64, unit: &str) -> String {
    if at_least && limit == 1 {
        return "non-empty".to_owned();
    }
    let mut out = String::with_capacity(40 + unit.len());
    out.push_str(if at_least { "at least " } else { "at most " });
    push_counted(&mut out, limit, unit);
    out.push_str(" long");
    out
}

/// Most places [`summarize`] names in one message.
const PLACES_NAMED: usize = 10;

/// One message for the whole report: the single problem, or how many there are and where, the
/// problems themselves being in the failure's violations (the envelope's `errors`), each with
/// what was expected and what came. Repeating every violation's sentence here would double the
/// report a model reads.
pub(crate) fn summarize(violations: &[Violation]) -> String {
    match violations {
        [one] => one.message.clone(),
        many => {
            // Where they are, each place once (one field can break several rules); on the stack
            // for the usual few.
            let mut paths: smallvec::SmallVec<[&str; 8]> = smallvec::SmallVec::new();
            for violation in many {
                if !paths.contains(&violation.path.as_str()) {
                    paths.push(&violation.path);
                }
            }
            let mut message = String::with_capacity(96 + 24 * paths.len());
            crate::wording::push_number(&mut message, many.len() as u64);
            message.push_str(" problems with the arguments, at ");
            let shown = paths.len().min(PLACES_NAMED);
            for (i, path) in paths[..shown].iter().enumerate() {
                if i > 0 {
                    message.push_str(if i + 1 == paths.len() { " and " } else { ", " });
                }
                message.push('`');
                push_display_path(&mut message, path);
                message.push('`');
            }
            if shown < paths.len() {
                message.push_str(" and ");
                crate::wording::push_number(&mut message, (paths.len() - shown) as u64);
                message.push_str(" more places");
            }
            message.push_str("; `errors` lists each with what was expected and what came");
            message
        }
    }
}

/// Longest value preview echoed back to the model, in characters.
const PREVIEW_CHARS: usize = 48;

/// A short, safe rendering of a string value for a message: quoted, and cut with its length
/// when long, so a 1 MB argument is never echoed back to the model.
pub fn preview_str(s: &str) -> String {
    let mut out = String::with_capacity(s.len().min(4 * PREVIEW_CHARS) + 2);
    push_preview_str(&mut out, s);
    out
}

/// [`preview_str`], written at the end of `out`.
pub(crate) fn push_preview_str(out: &mut String, s: &str) {
    // Printable ASCII without a quote or a backslash reads the same quoted by `Debug`.
    if s.len() <= PREVIEW_CHARS
        && s.bytes()
            .all(|b| matches!(b, b' '..=b'~') && b != b'"' && b != b'\\')
    {
        out.push('"');
        out.push_str(s);
        out.push('"');
        return;
    }
    use std::fmt::Write as _;
    let count = s.chars().count();
    // Writing into a `String` cannot fail.
    let _ = if count <= PREVIEW_CHARS {
        write!(out, "{s:?}")
    } else {
        let head: String = s.chars().take(PREVIEW_CHARS).collect();
        write!(out, "{head:?}... ({count} characters)")
    };
}

/// A boolean as `got` shows it.
pub(crate) fn preview_bool(b: bool) -> String {
    if b { "boolean true" } else { "boolean false" }.to_owned()
}

/// A string as `got` shows it: `string "..."`, cut when long (see [`preview_str`]).
pub(crate) fn preview_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len().min(4 * PREVIEW_CHARS) + 9);
    out.push_str("string ");
    push_preview_str(&mut out, s);
    out
}

/// A short rendering of any JSON value: its type and, for scalars, the value.
pub(crate) fn preview_json(v: &serde_json::Value) -> String {
    use crate::wording::concat;
    use serde_json::Value;
    match v {
        Value::Null => "null".to_owned(),
        Value::Bool(b) => preview_bool(*b),
        Value::Number(n) => concat(&["number ", &n.to_string()]),
        Value::String(s) => preview_string(s),
        Value::Array(a) => concat(&[
            "an array of ",
            &a.len().to_string(),
            if a.len() == 1 { " item" } else { " items" },
        ]),
        Value::Object(o) => concat(&[
            "an object with ",
            &o.len().to_string(),
            if o.len() == 1 { " field" } else { " fields" },
        ]),
    }
}

/// The default of [`RegistryBuilder::max_argument_bytes`](crate::RegistryBuilder::max_argument_bytes):
/// 1 MiB, far above any real tool call's arguments and far below what would let one call
/// take seconds of parsing and hundreds of megabytes of memory on the failure path.
pub const DEFAULT_MAX_ARGUMENT_BYTES: usize = 1 << 20;

/// The most violations one failure lists (the message then says only the first are listed).
/// A model fixes a handful at a time; an argument of 100,000 wrong items would otherwise make
/// an envelope far larger than the call, so validation stops once it has this many.
pub const MAX_REPORTED_VIOLATIONS: usize = 50;

/// Refuses argument text longer than `limit` bytes before anything reads it: `bad_request`,
/// retryable (smaller arguments may work), the message stating the limit and the size received.
pub(crate) fn check_size(arguments: &str, limit: usize) -> Result<(), Failure> {
    if arguments.len() <= limit {
        return Ok(());
    }
    let mut failure = Failure::new(
        crate::outcome::ErrorKind::BadRequest,
        format!(
            "the arguments are {} bytes long, more than the {limit} bytes this tool accepts; send shorter arguments (leave out long text the tool does not need)",
            arguments.len()
        ),
    );
    failure.retryable = true;
    Err(failure)
}

/// What replaces a sensitive value found in free text.
const REDACTED: &str = "[redacted]";

/// Shortest sensitive value scrubbed out of free text (a custom check's or a business rule's
/// message): shorter ones would blank out ordinary words and numbers.
const SCRUBBED_CHARS: usize = 4;

/// Rewrites every violation under an `#[arg(sensitive)]` field so that none of them quotes its
/// value: `got` describes the value without it ("a string of 15 characters", "an integer"), the
/// message names the field, what was expected and the rule that failed, and any copy of the
/// value in `expected` (a custom check may write one) is replaced by `[redacted]`. `arguments`
/// is the call's argument text, read to describe the values. Returns whether anything was
/// rewritten.
///
/// A model reads the envelope, and whatever the model reads may end in its context, a
/// transcript or a provider's logs: a card number that failed its pattern must not travel back
/// in the error that reports it.
///
/// ```
/// use toolwright::outcome::Violation;
/// use toolwright::validate::redact_sensitive;
/// use toolwright::tool::FieldMeta;
///
/// const FIELDS: &[FieldMeta] = &[FieldMeta::new("card").sensitive()];
/// let mut violations = vec![Violation {
///     path: "/card".into(),
///     rule: "pattern",
///     expected: "a string matching `^[0-9]{16}$`".into(),
///     got: Some("\"411111111111111\"".into()),
///     message: "`card` must be a string matching `^[0-9]{16}$`, got \"411111111111111\"".into(),
/// }];
/// assert!(redact_sensitive(&mut violations, FIELDS, r#"{"card":"411111111111111"}"#));
/// assert_eq!(violations[0].got.as_deref(), Some("a string of 15 characters"));
/// assert!(!violations[0].message.contains("4111"));
/// ```
pub fn redact_sensitive(
    violations: &mut [Violation],
    fields: &[FieldMeta],
    arguments: &str,
) -> bool {
    if !fields.iter().any(FieldMeta::is_sensitive) {
        return false;
    }
    let mut parsed: Option<Option<Value>> = None;
    let mut changed = false;
    for violation in violations.iter_mut() {
        let Some(field) = sensitive_field(&violation.path, fields) else {
            continue;
        };
        let parsed = parsed.get_or_insert_with(|| serde_json::from_str(arguments).ok());
        let secrets = secrets_of(parsed.as_ref().and_then(|p| p.get(field.name())));
        let expected = scrub(&violation.expected, &secrets);
        let shown = display_path(&violation.path);
        let rule = violation.rule;
        match &violation.got {
            Some(_) => {
                let got = describe(parsed.as_ref().and_then(|p| p.pointer(&violation.path)));
                violation.message = format!(
                    "`{shown}` must be {expected}, got {got} (its `{rule}` rule; the value is sensitive and not shown)"
                );
                violation.got = Some(got);
            }
            // Nothing was quoted as `got` (a missing field, a custom check): only free text.
            None => violation.message = scrub(&violation.message, &secrets),
        }
        violation.expected = expected;
        changed = true;
    }
    changed
}

/// [`redact_sensitive`] on a validation failure, its message rebuilt from the rewritten
/// violations (what follows the summary, such as an `ungrounded_identifier` hint, is kept), and
/// any copy of a sensitive value in the message itself (a business rule's own words) scrubbed.
pub(crate) fn redact_failure(failure: &mut Failure, fields: &[FieldMeta], arguments: &str) {
    if !fields.iter().any(FieldMeta::is_sensitive) {
        return;
    }
    let before = summarize(&failure.violations);
    if redact_sensitive(&mut failure.violations, fields, arguments) {
        if let Some(rest) = failure.message.strip_prefix(before.as_str()) {
            failure.message = format!("{}{rest}", summarize(&failure.violations));
        }
    }
    let Ok(parsed) = serde_json::from_str::<Value>(arguments) else {
        return;
    };
    let mut secrets = Vec::new();
    for field in fields.iter().filter(|f| f.is_sensitive()) {
        secrets.extend(secrets_of(parsed.get(field.name())));
    }
    failure.message = scrub(&failure.message, &secrets);
}

/// The sensitive field a violation at `path` is about: the field itself or anything inside it.
fn sensitive_field<'f>(path: &str, fields: &'f [FieldMeta]) -> Option<&'f FieldMeta> {
    let token = path.strip_prefix('/')?;
    let token = token.split('/').next().unwrap_or(token);
    fields
        .iter()
        .filter(|f| f.is_sensitive())
        .find(|f| escape_pointer(f.name()) == token)
}

/// The texts a sensitive value could be quoted as: its strings and numbers, anywhere inside it.
fn secrets_of(value: Option<&Value>) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack: Vec<&Value> = value.into_iter().collect();
    while let Some(v) = stack.pop() {
        match v {
            Value::String(s) => out.push(s.clone()),
            Value::Number(n) => out.push(n.to_string()),
            Value::Array(items) => stack.extend(items),
            Value::Object(map) => stack.extend(map.values()),
            Value::Null | Value::Bool(_) => {}
        }
    }
    out.retain(|s| s.chars().count() >= SCRUBBED_CHARS);
    // Longest first, so a value never leaves a tail of a longer one behind.
    out.sort_by_key(|s| std::cmp::Reverse(s.len()));
    out
}

fn scrub(text: &str, secrets: &[String]) -> String {
    let mut text = text.to_owned();
    for secret in secrets {
        if text.contains(secret.as_str()) {
            text = text.replace(secret.as_str(), REDACTED);
        }
    }
    text
}

/// A value described without being quoted.
fn describe(value: Option<&Value>) -> String {
    match value {
        None => "a value".to_owned(),
        Some(Value::Null) => "null".to_owned(),
        Some(Value::Bool(_)) => "a boolean".to_owned(),
        Some(Value::Number(n)) if n.is_i64() || n.is_u64() => "an integer".to_owned(),
        Some(Value::Number(_)) => "a number".to_owned(),
        Some(Value::String(s)) => format!(
            "a string of {}",
            counted(s.chars().count() as u64, "characters")
        ),
        Some(Value::Array(items)) => format!("a list of {}", counted(items.len() as u64, "items")),
        Some(Value::Object(map)) => {
            format!("an object with {}", counted(map.len() as u64, "fields"))
        }
    }
}

/// `schema_mismatch` with every field-rule violation, and the schema to fix them by.
#[cold]
pub(crate) fn field_failure(
    violations: Vec<Violation>,
    schema: &std::sync::Arc<crate::outcome::ToolSchema>,
) -> Failure {
    let mut failure = Failure::new(
        crate::outcome::ErrorKind::SchemaMismatch,
        summarize(&violations),
    );
    failure.violations = violations;
    failure.expected_schema = Some(std::sync::Arc::clone(schema));
    failure
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIELDS: &[FieldMeta] = &[
        FieldMeta::new("card").sensitive(),
        FieldMeta::new("cvv").sensitive(),
        FieldMeta::new("note"),
    ];

    fn violation(
        path: &str,
        rule: &'static str,
        expected: &str,
        got: Option<&str>,
        message: &str,
    ) -> Violation {
        Violation {
            path: path.into(),
            rule,
            expected: expected.into(),
            got: got.map(Into::into),
            message: message.into(),
        }
    }

    #[test]
    fn a_report_of_many_names_each_place_once_and_leaves_the_sentences_to_its_violations() {
        let at = |path: &str| violation(path, "type", "x", Some("y"), "a sentence of its own");
        assert_eq!(summarize(&[at("/a")]), "a sentence of its own");
        assert_eq!(
            summarize(&[at("/a"), at("/b/0/c"), at("/a")]),
            "3 problems with the arguments, at `a` and `b[0].c`; `errors` lists each with what was expected and what came"
        );
        assert_eq!(
            summarize(&[at("/a"), at("/b"), at("/c")]),
            "3 problems with the arguments, at `a`, `b` and `c`; `errors` lists each with what was expected and what came"
        );
        let many: Vec<Violation> = (0..13).map(|i| at(&format!("/f{i}"))).collect();
        let message = summarize(&many);
        assert!(
            message.starts_with("13 problems with the arguments, at `f0`, `f1`,"),
            "{message}"
        );
        assert!(message.contains("`f9` and 3 more places;"), "{message}");
        assert!(!message.contains("a sentence"), "{message}");
    }

    #[test]
    fn arguments_over_the_limit_are_refused_with_the_limit_and_the_size() {
        assert!(check_size("{}", 2).is_ok());
        let failure = check_size("{\"a\":1}", 2).unwrap_err();
        assert_eq!(failure.kind, crate::outcome::ErrorKind::BadRequest);
        assert!(failure.retryable);
        assert!(failure
            .message
            .starts_with("the arguments are 7 bytes long, more than the 2 bytes"));
    }

    #[test]
    fn sensitive_values_are_described_never_quoted() {
        let arguments = r#"{"card":"4111-1111","cvv":9876,"note":"4111-1111"}"#;
        let mut violations = vec![
            violation(
                "/card",
                "pattern",
                "a string matching `^[0-9]+$`",
                Some("\"4111-1111\""),
                "`card` must be a string matching `^[0-9]+$`, got \"4111-1111\"",
            ),
            violation(
                "/cvv",
                "type",
                "a string",
                Some("number 9876"),
                "`cvv`: expected a string, got number 9876",
            ),
            violation(
                "/card",
                "custom",
                "4111-1111 fails the Luhn check",
                None,
                "`card`: 4111-1111 fails the Luhn check",
            ),
            violation(
                "/note",
                "length",
                "at most 3 characters long",
                Some("9 characters"),
                "`note` must be at most 3 characters long, got 9 characters",
            ),
        ];
        assert!(redact_sensitive(&mut violations, FIELDS, arguments));
        assert_eq!(
            violations[0].got.as_deref(),
            Some("a string of 9 characters")
        );
        assert_eq!(
            violations[0].message,
            "`card` must be a string matching `^[0-9]+$`, got a string of 9 characters (its `pattern` rule; the value is sensitive and not shown)"
        );
        assert_eq!(violations[1].got.as_deref(), Some("an integer"));
        assert_eq!(
            violations[2].message,
            "`card`: [redacted] fails the Luhn check"
        );
        assert_eq!(violations[2].expected, "[redacted] fails the Luhn check");
        // Not sensitive: untouched.
        assert_eq!(violations[3].got.as_deref(), Some("9 characters"));
        for v in &violations[..3] {
            let all = format!("{} {} {:?}", v.message, v.expected, v.got);
            assert!(!all.contains("4111") && !all.contains("9876"), "{all}");
        }
    }

    #[test]
    fn a_failure_message_is_rebuilt_and_its_tail_kept() {
        let arguments = r#"{"card":"4111111111111111"}"#;
        let mut failure = Failure::new(crate::outcome::ErrorKind::UngroundedIdentifier, "");
        failure.violations = vec![violation(
            "/card",
            "grounded",
            "a card id a tool returned in this conversation",
            Some("\"4111111111111111\""),
            "`card` is \"4111111111111111\", a card id no tool has returned in this conversation",
        )];
        failure.message = format!(
            "{}. Look it up first with `find_card`; never invent ids.",
            summarize(&failure.violations)
        );
        redact_failure(&mut failure, FIELDS, arguments);
        assert!(!failure.message.contains("4111"), "{}", failure.message);
        assert!(failure
            .message
            .ends_with(". Look it up first with `find_card`; never invent ids."));
        assert!(failure.message.starts_with("`card` must be a card id a tool returned in this conversation, got a string of 16 characters"));
    }

    #[test]
    fn a_business_rule_quoting_a_sensitive_value_is_scrubbed() {
        let mut failure = Failure::new(
            crate::outcome::ErrorKind::SemanticInvalid,
            "card 4111111111111111 is expired",
        );
        redact_failure(&mut failure, FIELDS, r#"{"card":"4111111111111111"}"#);
        assert_eq!(failure.message, "card [redacted] is expired");
    }

    #[test]
    fn nothing_changes_without_sensitive_fields() {
        let mut violations = vec![violation(
            "/card",
            "type",
            "a string",
            Some("number 1"),
            "m",
        )];
        assert!(!redact_sensitive(
            &mut violations,
            &[FieldMeta::new("card")],
            r#"{"card":1}"#
        ));
        assert_eq!(violations[0].message, "m");
    }

    #[test]
    fn pointers_read_as_field_paths() {
        assert_eq!(display_path(""), "arguments");
        assert_eq!(display_path("/max_results"), "max_results");
        assert_eq!(display_path("/legs/0/from"), "legs[0].from");
        assert_eq!(display_path("/a~1b/c~0d"), "a/b.c~d");
    }

    /// Every pointer of up to five characters over `/`, `~`, `0`, `1`, `a` reads as the
    /// definition reads it: the tokens after the first `/`, unescaped, an index in brackets
    /// except first, the others joined with dots.
    #[test]
    fn field_paths_follow_their_definition_on_every_short_pointer() {
        fn defined(pointer: &str) -> String {
            if pointer.is_empty() {
                return "arguments".to_owned();
            }
            let mut out = String::new();
            for token in pointer.split('/').skip(1) {
                let token = token.replace("~1", "/").replace("~0", "~");
                let index = !token.is_empty() && token.chars().all(|c| c.is_ascii_digit());
                if out.is_empty() {
                    out.push_str(&token);
                } else if index {
                    out.push_str(&format!("[{token}]"));
                } else {
                    out.push_str(&format!(".{token}"));
                }
            }
            out
        }
        let alphabet = ['/', '~', '0', '1', 'a'];
        let mut pointers = vec![String::new()];
        for length in 1..=5 {
            let mut next = Vec::new();
            for pointer in pointers.iter().filter(|p| p.len() == length - 1) {
                for c in alphabet {
                    next.push(format!("{pointer}{c}"));
                }
            }
            pointers.extend(next);
        }
        assert_eq!(pointers.len(), 1 + 5 + 25 + 125 + 625 + 3125);
        for pointer in &pointers {
            assert_eq!(display_path(pointer), defined(pointer), "{pointer:?}");
        }
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
        // A long key is cut in a short pointer too, as `pointer_token` names it elsewhere in
        // the same failure; keys up to the limit are kept whole.
        let long = "k".repeat(100);
        assert_eq!(
            bounded_pointer(&format!("/{long}")),
            format!("/{}", pointer_token(&long))
        );
        assert_ne!(pointer_token(&long), long);
        let limit = "k".repeat(KEY_CHARS);
        let pointer = format!("/{limit}/{limit}/{limit}/{limit}/{limit}");
        assert_eq!(bounded_pointer(&pointer), pointer);
    }

    #[test]
    fn a_token_is_the_key_as_shown_escaped_as_rfc_6901_says() {
        // Around the length limit (in bytes and in characters), with and without the two
        // characters a pointer escapes, in one- and multi-byte characters.
        let mut keys = vec![
            String::new(),
            "a/b".to_owned(),
            "~".to_owned(),
            "x~1".to_owned(),
        ];
        for n in [KEY_CHARS - 1, KEY_CHARS, KEY_CHARS + 1, 2 * KEY_CHARS] {
            for unit in ["k", "é", "/", "~", "语"] {
                keys.push(unit.repeat(n));
                keys.push(format!("{}/", "k".repeat(n)));
            }
        }
        for key in keys {
            // RFC 6901's escaping, of the key as a report shows it.
            let defined = shown_key(&key).replace('~', "~0").replace('/', "~1");
            let mut out = "/before".to_owned();
            push_pointer_token(&mut out, &key);
            assert_eq!(out, format!("/before{defined}"), "{key}");
            assert_eq!(pointer_token(&key), defined, "{key}");
        }
    }

    #[test]
    fn any_value_is_previewed_by_its_type_and_scalars_by_their_value() {
        use serde_json::json;
        assert_eq!(preview_json(&json!(null)), "null");
        assert_eq!(preview_json(&json!(true)), "boolean true");
        assert_eq!(preview_json(&json!(2.5)), "number 2.5");
        assert_eq!(preview_json(&json!("AB")), "string \"AB\"");
        assert_eq!(preview_json(&json!([1])), "an array of 1 item");
        assert_eq!(preview_json(&json!([1, 2])), "an array of 2 items");
        assert_eq!(preview_json(&json!({"a": 1})), "an object with 1 field");
        assert_eq!(preview_json(&json!({})), "an object with 0 fields");
    }

    #[test]
    fn a_sensitive_value_is_described_by_its_kind_alone() {
        use serde_json::json;
        assert_eq!(describe(None), "a value");
        assert_eq!(describe(Some(&json!(null))), "null");
        assert_eq!(describe(Some(&json!(true))), "a boolean");
        assert_eq!(describe(Some(&json!(-5))), "an integer");
        assert_eq!(describe(Some(&json!(u64::MAX))), "an integer");
        assert_eq!(describe(Some(&json!(2.5))), "a number");
        assert_eq!(describe(Some(&json!("4111"))), "a string of 4 characters");
        assert_eq!(describe(Some(&json!([1]))), "a list of 1 item");
        assert_eq!(
            describe(Some(&json!({"a": 1, "b": 2}))),
            "an object with 2 fields"
        );
    }

    #[test]
    fn the_default_size_limit_takes_a_mebibyte() {
        let mebibyte = "x".repeat(1024 * 1024);
        assert!(check_size(&mebibyte, DEFAULT_MAX_ARGUMENT_BYTES).is_ok());
        let over = format!("{mebibyte}x");
        assert!(check_size(&over, DEFAULT_MAX_ARGUMENT_BYTES).is_err());
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
