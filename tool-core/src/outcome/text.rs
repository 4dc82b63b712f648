//! The envelope written as compact JSON text by hand, for [`Outcome::to_model_string`].
//!
//! The same text `serde_json::to_string` writes of the envelope (the tests hold the two equal),
//! without serde's per-field and per-string machinery: a failed call's envelope is some fifty
//! short strings (each violation's path, rule, expected, got and message), and serde_json's
//! escaping went over them a byte at a time through a writer, a fifth of a malformed call's
//! instructions. Here each string is copied in runs between the bytes that need escaping,
//! found eight at a time.
//!
//! [`Outcome::to_model_string`]: super::Outcome::to_model_string

use serde_json::value::RawValue;

use super::envelope::{fit, Envelope, SchemaField, MIN_ENVELOPE_BYTES};
use super::{Outcome, Violation, DEFAULT_MAX_ENVELOPE_BYTES};
use crate::runtime::needs_escape;
use crate::wording::push_number;

impl Outcome {
    /// The envelope as compact JSON text, ready for a provider's tool-result message: what to hand
    /// the model. The same envelope as `to_model_json()`, at a fraction of the cost of
    /// `to_model_json().to_string()` (see [`Outcome::to_model_json`]): the tool's data is copied,
    /// never re-parsed.
    ///
    /// ```
    /// use toolwright::Outcome;
    ///
    /// fn tool_message(outcome: &Outcome) -> String {
    ///     outcome.to_model_string()
    /// }
    /// ```
    pub fn to_model_string(&self) -> String {
        self.to_model_string_within(DEFAULT_MAX_ENVELOPE_BYTES)
    }

    /// [`Outcome::to_model_string`] with another cap than [`DEFAULT_MAX_ENVELOPE_BYTES`] on a
    /// failed call's envelope, in bytes (at least 1,024 are kept). Over the cap, the parts a
    /// schema or a model can make long are left out or cut, each saying how much was left out,
    /// in this order until the envelope fits: the tool's `expected_schema`, the
    /// `available_tools` past the first ones, the `errors` past the first ones, then the text of
    /// what remains. A successful call's data is never cut here (the registry's
    /// `max_result_bytes` bounds it).
    ///
    /// ```
    /// use toolwright::Outcome;
    ///
    /// /// For a model with a small context: failures in at most 8 KiB.
    /// fn tool_message(outcome: &Outcome) -> String {
    ///     outcome.to_model_string_within(8 * 1024)
    /// }
    /// ```
    pub fn to_model_string_within(&self, max_bytes: usize) -> String {
        if let Some(data) = self.plain_success() {
            return success(data, self.attempts);
        }
        let max_bytes = max_bytes.max(MIN_ENVELOPE_BYTES);
        let mut envelope = self.envelope();
        let text = write(&envelope);
        if text.len() > max_bytes && self.failure.is_some() {
            fit(&mut envelope, max_bytes);
            return write(&envelope);
        }
        text
    }
}

/// The envelope's compact JSON text.
pub(super) fn write(envelope: &Envelope<'_>) -> String {
    let mut out = String::with_capacity(estimate(envelope));
    out.push_str("{\"status\":");
    name(&mut out, envelope.status.as_str());
    if let Some(degraded) = envelope.degraded {
        boolean(&mut out, ",\"degraded\":", degraded);
    }
    if let Some(source) = envelope.source {
        out.push_str(",\"source\":");
        string(&mut out, source);
    }
    if let Some(kind) = envelope.error_type {
        out.push_str(",\"error_type\":");
        name(&mut out, kind.as_str());
    }
    if let Some(seam) = envelope.seam {
        out.push_str(",\"seam\":");
        name(&mut out, seam.as_str());
    }
    if let Some(retryable) = envelope.retryable {
        boolean(&mut out, ",\"retryable\":", retryable);
    }
    if let Some(message) = &envelope.message {
        out.push_str(",\"message\":");
        string(&mut out, message);
    }
    if let Some(errors) = &envelope.errors {
        out.push_str(",\"errors\":[");
        for (i, violation) in errors.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            self::violation(&mut out, violation);
        }
        out.push(']');
    }
    if let Some(tools) = &envelope.available_tools {
        out.push_str(",\"available_tools\":");
        strings(&mut out, tools.iter().map(String::as_str));
    }
    if let Some(ms) = envelope.retry_after_ms {
        out.push_str(",\"retry_after_ms\":");
        push_number(&mut out, ms);
    }
    if let Some(schema) = &envelope.expected_schema {
        out.push_str(",\"expected_schema\":");
        match schema {
            SchemaField::Text(text) => out.push_str(text.get()),
            // A schema whose text could not be kept: written from the tree (a `Value` always
            // serializes).
            SchemaField::Tree(tree) => {
                out.push_str(&serde_json::to_string(tree).unwrap_or_else(|_| "null".to_owned()))
            }
            SchemaField::Later => out.push_str("null"),
        }
    }
    if let Some(data) = envelope.data {
        out.push_str(",\"data\":");
        out.push_str(data.get());
    }
    if let Some(attempts) = envelope.attempts {
        out.push_str(",\"attempts\":");
        push_number(&mut out, u64::from(attempts));
    }
    if let Some(replayed) = envelope.replayed {
        boolean(&mut out, ",\"replayed\":", replayed);
    }
    if let Some(repaired) = envelope.repaired {
        boolean(&mut out, ",\"repaired\":", repaired);
    }
    if let Some(fixes) = envelope.repaired_by {
        out.push_str(",\"repaired_by\":");
        strings(&mut out, fixes.iter().map(super::Fix::as_str));
    }
    out.push('}');
    out
}

/// The envelope of a plain success, `{"status":"success","data":..,"attempts":N}`: the text
/// [`write`] makes of it, without its checks of every other field.
pub(super) fn success(data: &RawValue, attempts: u16) -> String {
    let data = data.get();
    let mut out = String::with_capacity(data.len() + 48);
    out.push_str("{\"status\":\"success\",\"data\":");
    out.push_str(data);
    if attempts > 0 {
        out.push_str(",\"attempts\":");
        push_number(&mut out, u64::from(attempts));
    }
    out.push('}');
    out
}

/// About the length of the text, so that it is written into one allocation.
fn estimate(envelope: &Envelope<'_>) -> usize {
    let mut bytes = 160;
    bytes += envelope.message.as_ref().map_or(0, |m| m.len());
    if let Some(errors) = &envelope.errors {
        bytes += errors
            .iter()
            .map(|v| {
                64 + v.path.len()
                    + v.expected.len()
                    + v.got.as_ref().map_or(0, String::len)
                    + v.message.len()
            })
            .sum::<usize>();
    }
    if let Some(SchemaField::Text(text)) = &envelope.expected_schema {
        bytes += text.get().len();
    }
    bytes + envelope.data.map_or(0, |d| d.get().len())
}

fn violation(out: &mut String, violation: &Violation) {
    out.push_str("{\"path\":");
    string(out, &violation.path);
    out.push_str(",\"rule\":");
    string(out, violation.rule);
    out.push_str(",\"expected\":");
    string(out, &violation.expected);
    if let Some(got) = &violation.got {
        out.push_str(",\"got\":");
        string(out, got);
    }
    out.push_str(",\"message\":");
    string(out, &violation.message);
    out.push('}');
}

fn boolean(out: &mut String, key: &str, value: bool) {
    out.push_str(key);
    out.push_str(if value { "true" } else { "false" });
}

fn strings<'a>(out: &mut String, items: impl Iterator<Item = &'a str>) {
    out.push('[');
    for (i, item) in items.enumerate() {
        if i > 0 {
            out.push(',');
        }
        string(out, item);
    }
    out.push(']');
}

/// One of the envelope's fixed names (a status, an error type, a seam) as a JSON string: they
/// are lowercase words joined by `_`, nothing to escape, so they are copied without a scan.
fn name(out: &mut String, name: &'static str) {
    debug_assert!(!name.bytes().any(needs_escape), "{name}");
    out.push('"');
    out.push_str(name);
    out.push('"');
}

/// `s` as a JSON string, escaped as serde_json escapes it: `"` and `\` with a backslash, the
/// control characters with their short escape or `\u00xx`, everything else as it is.
fn string(out: &mut String, s: &str) {
    out.push('"');
    let bytes = s.as_bytes();
    // Most strings need no escape: one pass over their bytes, then one copy. A string with a
    // byte to escape is read again below.
    if !has_escape(bytes) {
        out.push_str(s);
        out.push('"');
        return;
    }
    let mut run = 0;
    let mut at = 0;
    while at < bytes.len() {
        // Eight bytes at a time, straight to the first that needs escaping.
        if let Some(chunk) = bytes.get(at..at + 8) {
            let mut word = [0u8; 8];
            word.copy_from_slice(chunk);
            let mask = escapes(u64::from_le_bytes(word));
            if mask == 0 {
                at += 8;
                continue;
            }
            at += (mask.trailing_zeros() / 8) as usize;
        } else if !needs_escape(bytes[at]) {
            at += 1;
            continue;
        }
        // `at` is an ASCII byte, so the run before it is whole characters.
        out.push_str(&s[run..at]);
        escape(out, bytes[at]);
        at += 1;
        run = at;
    }
    out.push_str(&s[run..]);
    out.push('"');
}

/// Whether any of `bytes` needs escaping: eight at a time, the last word overlapping the one
/// before it, with no early exit. (The vector loop the compiler makes of a pass byte by byte
/// runs as many instructions, but an envelope's strings are short, and its byte-wise tail's
/// branches made a failed call's whole path 5% to 7% slower.)
fn has_escape(bytes: &[u8]) -> bool {
    let Some(last) = bytes.len().checked_sub(8) else {
        return bytes
            .iter()
            .fold(false, |found, &b| found | needs_escape(b));
    };
    let word = |at: usize| {
        let mut word = [0u8; 8];
        word.copy_from_slice(&bytes[at..at + 8]);
        escapes(u64::from_le_bytes(word))
    };
    let mut found = 0;
    let mut at = 0;
    while at < last {
        found |= word(at);
        at += 8;
    }
    // A word marks no lane unless one of its lanes needs escaping.
    found | word(last) != 0
}

fn escape(out: &mut String, b: u8) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    match b {
        b'"' => out.push_str("\\\""),
        b'\\' => out.push_str("\\\\"),
        b'\n' => out.push_str("\\n"),
        b'\r' => out.push_str("\\r"),
        b'\t' => out.push_str("\\t"),
        0x08 => out.push_str("\\b"),
        0x0c => out.push_str("\\f"),
        _ => {
            out.push_str("\\u00");
            out.push(char::from(HEX[usize::from(b >> 4)]));
            out.push(char::from(HEX[usize::from(b & 0xf)]));
        }
    }
}

/// The lanes of `word`'s eight bytes that are `"`, `\` or below 0x20, as the high bit of each
/// lane: exact up to the first such lane (a borrow can only mark lanes after it), which is
/// all [`string`] reads.
fn escapes(word: u64) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    // The high bit of a lane is set when the lane is zero in `x` (or past a zero lane).
    let zero = |x: u64| x.wrapping_sub(ONES) & !x & HIGHS;
    let quote = zero(word ^ (ONES * u64::from(b'"')));
    let backslash = zero(word ^ (ONES * u64::from(b'\\')));
    // A lane below 0x20 borrows into its own high bit (lanes from 0x80 up never count).
    let control = word.wrapping_sub(ONES * 0x20) & !word & HIGHS;
    quote | backslash | control
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use serde_json::value::RawValue;
    use serde_json::{json, Value};

    use super::super::{ErrorKind, Fix, Fixes, Seam, Status};
    use super::*;

    fn envelope<'a>(
        message: &'a str,
        errors: &'a [Violation],
        tools: &'a [String],
        schema: &'a RawValue,
    ) -> Envelope<'a> {
        Envelope {
            status: Status::Error,
            degraded: Some(true),
            source: Some("fallback"),
            error_type: Some(ErrorKind::SchemaMismatch),
            seam: Some(Seam::Validation),
            retryable: Some(false),
            message: Some(Cow::Borrowed(message)),
            errors: Some(Cow::Borrowed(errors)),
            available_tools: Some(Cow::Borrowed(tools)),
            retry_after_ms: Some(u64::MAX),
            expected_schema: Some(SchemaField::Text(schema)),
            data: Some(schema),
            attempts: Some(3),
            replayed: Some(true),
            repaired: Some(false),
            repaired_by: Some(
                Fixes::default()
                    .with(Fix::CodeFence)
                    .with(Fix::SurroundingProse),
            ),
        }
    }

    /// Every byte value below 0x80 and some text beyond it, at every offset against the
    /// eight-byte steps.
    fn awkward() -> Vec<String> {
        let mut texts: Vec<String> = (0u8..0x80)
            .map(|b| format!("a{}bcdefghijklmnop{}", char::from(b), char::from(b)))
            .collect();
        texts.push(String::new());
        texts.push("plain text of some length, no escapes at all here".to_owned());
        texts.push("é ü 漢字 \u{2028} \u{7f} 🎉 \"quoted\" back\\slash".to_owned());
        for shift in 0..9 {
            texts.push(format!("{}\"{}\n", "x".repeat(shift), "y".repeat(shift)));
        }
        // Every length up to three words, with one byte to escape at every place, and a
        // multi-byte character at the end.
        for length in 1..=24 {
            for at in 0..length {
                let mut text = vec![b'x'; length];
                text[at] = if at % 2 == 0 { b'"' } else { 0x1f };
                texts.push(String::from_utf8(text).unwrap_or_default());
            }
            texts.push(format!("{}é", "z".repeat(length)));
        }
        texts
    }

    #[test]
    fn the_text_is_serde_jsons_text() {
        let schema = RawValue::from_string(
            json!({"type": "object", "properties": {"a": {"type": "string"}}}).to_string(),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        for text in awkward() {
            let violations = vec![
                Violation {
                    path: format!("/{text}"),
                    rule: "type",
                    expected: text.clone(),
                    got: Some(text.clone()),
                    message: text.clone(),
                },
                Violation {
                    path: String::new(),
                    rule: "required",
                    expected: "a value".into(),
                    got: None,
                    message: text.clone(),
                },
            ];
            let tools = vec![text.clone(), "search".to_owned()];
            let full = envelope(&text, &violations, &tools, &schema);
            assert_eq!(
                write(&full),
                serde_json::to_string(&full).unwrap_or_default(),
                "{text:?}"
            );
        }
    }

    #[test]
    fn every_field_left_out_is_left_out_as_serde_leaves_it() {
        let tree = json!({"type": "object"});
        let empty = Envelope {
            retry_after_ms: Some(0),
            expected_schema: Some(SchemaField::Tree(&tree)),
            attempts: None,
            ..bare(Status::Success)
        };
        let text = write(&empty);
        assert_eq!(text, serde_json::to_string(&empty).unwrap_or_default());
        let parsed: Value = serde_json::from_str(&text).unwrap_or_default();
        assert_eq!(parsed["retry_after_ms"], 0);
        for status in [
            Status::Success,
            Status::Empty,
            Status::Error,
            Status::Pending,
        ] {
            let one = bare(status);
            assert_eq!(write(&one), serde_json::to_string(&one).unwrap_or_default());
        }
    }

    /// An envelope of `status` with one attempt and nothing else.
    fn bare<'a>(status: Status) -> Envelope<'a> {
        Envelope {
            status,
            degraded: None,
            source: None,
            error_type: None,
            seam: None,
            retryable: None,
            message: None,
            errors: None,
            available_tools: None,
            retry_after_ms: None,
            expected_schema: None,
            data: None,
            attempts: Some(1),
            replayed: None,
            repaired: None,
            repaired_by: None,
        }
    }

    #[test]
    fn the_fixed_names_are_written_as_their_escaped_strings() {
        let statuses = [
            Status::Success,
            Status::Empty,
            Status::Error,
            Status::Pending,
        ]
        .map(Status::as_str);
        let seams = [Seam::Validation, Seam::Execution, Seam::Interpretation].map(Seam::as_str);
        let kinds = ErrorKind::ALL.iter().map(|k| k.as_str());
        for fixed in statuses.into_iter().chain(seams).chain(kinds) {
            let (mut written, mut escaped) = (String::new(), String::new());
            name(&mut written, fixed);
            string(&mut escaped, fixed);
            assert_eq!(written, escaped);
        }
    }

    #[test]
    fn numbers_are_written_whole() {
        for n in [0, 7, 10, 99, 100, 12_345, u64::from(u32::MAX), u64::MAX] {
            let mut out = String::new();
            push_number(&mut out, n);
            assert_eq!(out, n.to_string());
        }
    }

    #[test]
    fn the_word_test_finds_the_first_byte_that_needs_escaping_in_every_lane() {
        for lane in 0..8 {
            for b in 0u8..=255 {
                // The lane under test, then bytes that need escaping after it, which must
                // not hide it.
                let mut word = [b'a'; 8];
                word[lane] = b;
                for later in word.iter_mut().skip(lane + 1) {
                    *later = 0x01;
                }
                let mask = escapes(u64::from_le_bytes(word));
                let first = (mask != 0).then(|| (mask.trailing_zeros() / 8) as usize);
                let wanted = if needs_escape(b) {
                    Some(lane)
                } else if lane < 7 {
                    Some(lane + 1)
                } else {
                    None
                };
                assert_eq!(first, wanted, "byte {b:#x} in lane {lane}");
            }
        }
    }
}
