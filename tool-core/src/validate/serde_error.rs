//! What serde refused when the schema holds: its first error, placed at the path serde_json was
//! reading when it stopped (found in the text from the error's position, without
//! deserializing the arguments a second time) and said in JSON terms.

use serde_json::Value;

use super::words::{child, out_of_range};
use super::{display_path, preview_json, push_pointer_token};
use crate::outcome::Violation;
use crate::tool::schema::IntegerType;

/// Longest serde error text echoed back, in characters.
const DETAIL_CHARS: usize = 200;

/// The first problem serde found, with the path it stopped at. Reached when the schema accepts
/// what serde refuses: a duplicated field, `2.0` for an integer (JSON Schema counts it as one,
/// serde does not), an integer beyond the Rust type, or a hand-written `Deserialize`.
pub(super) fn from_serde(
    text: &str,
    error: Option<&serde_json::Error>,
    value: &Value,
) -> Violation {
    let (path, detail, literal) = match error {
        Some(e) => {
            let at = byte_offset(text, e.line(), e.column());
            let path = at.map_or_else(String::new, |at| path_at(text, at));
            let literal = at.and_then(|at| number_before(text, at));
            (path, strip_position(&e.to_string()), literal)
        }
        None => (
            String::new(),
            "the arguments do not match the schema".to_owned(),
            None,
        ),
    };

    if let Some(name) = detail
        .strip_prefix("duplicate field `")
        .and_then(|rest| rest.strip_suffix('`'))
    {
        let path = child(&path, name);
        let shown = display_path(&path);
        return Violation {
            message: format!("`{shown}` is given more than once; send each argument once"),
            path,
            rule: "duplicate",
            expected: "each argument once".into(),
            got: Some("more than once".into()),
        };
    }

    let field = display_path(&path);
    let expectation = detail
        .strip_prefix("invalid type: ")
        .or_else(|| detail.strip_prefix("invalid value: "))
        .and_then(|rest| rest.rsplit_once(", expected "))
        .map(|(_, expected)| expected);
    if let (Some(rust), Some(instance)) = (expectation, value.pointer(&path)) {
        if let Some(integer) = IntegerType::by_rust_name(rust) {
            return integer_violation(path, integer, (&detail, literal), instance);
        }
        let got = preview_json(instance);
        let expected = match rust_type(rust) {
            RustType::Float => "a number".to_owned(),
            RustType::Other => cut(rust),
        };
        return Violation {
            message: format!("`{field}`: expected {expected}, got {got}"),
            path,
            rule: "type",
            expected,
            got: Some(got),
        };
    }

    let detail = cut(&detail);
    Violation {
        message: format!("`{field}`: {detail}"),
        path,
        rule: "type",
        expected: detail,
        got: None,
    }
}

enum RustType {
    Float,
    Other,
}

/// serde names primitive expectations by their Rust type; the model knows JSON types.
/// (Integers are [`IntegerType`]s.)
fn rust_type(expected: &str) -> RustType {
    match expected {
        "f32" | "f64" => RustType::Float,
        _ => RustType::Other,
    }
}

/// What serde refused of a number for an integer parameter, in words a model can act on: out of
/// the type's range, written as a float (`5.0`, `5e0`), `-0` (serde_json reads it as the float
/// `-0.0`, which no integer type takes), or not whole.
fn integer_violation(
    path: String,
    integer: IntegerType,
    (detail, literal): (&str, Option<&str>),
    instance: &Value,
) -> Violation {
    // 2^53: below it a double is an exact integer, so its range can be checked.
    const EXACT: f64 = 9_007_199_254_740_992.0;
    let field = display_path(&path);
    // serde quotes an integer it read whole but could not fit: "invalid value: integer `300`".
    if let Some(text) = detail
        .strip_prefix("invalid value: integer `")
        .and_then(|rest| rest.split_once('`'))
        .map(|(text, _)| text)
    {
        return out_of_range(&path, integer, text.to_owned());
    }
    // An integer literal serde_json read as a float because it did not fit 64 bits.
    if let Some(text) = literal.filter(|t| {
        let digits = t.strip_prefix('-').unwrap_or(t);
        !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) && digits.len() > 15
    }) {
        return out_of_range(
            &path,
            integer,
            super::preview_str(text).trim_matches('"').to_owned(),
        );
    }
    let (expected, got, message) = match instance.as_f64() {
        Some(n) if n == 0.0 && n.is_sign_negative() => (
            "an integer".to_owned(),
            "-0".to_owned(),
            format!("`{field}`: -0 is not accepted for an integer; write 0"),
        ),
        Some(n) if n.fract() == 0.0 && (n < integer.min as f64 || n > integer.max as f64) => {
            return out_of_range(&path, integer, instance.to_string());
        }
        Some(n) if n.fract() == 0.0 => {
            let expected = if n.abs() < EXACT {
                "an integer written without a decimal point or exponent".to_owned()
            } else {
                format!(
                    "an integer from {} to {} written without a decimal point or exponent",
                    integer.min, integer.max
                )
            };
            let got = preview_json(instance);
            let message = format!("`{field}`: expected {expected}, got {got}");
            (expected, got, message)
        }
        _ => {
            let got = preview_json(instance);
            let message = format!("`{field}`: expected an integer, got {got}");
            ("an integer".to_owned(), got, message)
        }
    };
    Violation {
        message,
        path,
        rule: "type",
        expected,
        got: Some(got),
    }
}

/// The byte offset serde_json's 1-based `line` and `column` name in `text` (its column counts
/// bytes from the start of the line). `None` for an error serde_json gave no position.
fn byte_offset(text: &str, line: usize, column: usize) -> Option<usize> {
    let start_of_line = match line {
        0 => return None,
        1 => 0,
        n => text.match_indices('\n').nth(n - 2)?.0 + 1,
    };
    let at = start_of_line + column;
    (at <= text.len()).then_some(at)
}

/// The JSON pointer of what serde_json was reading when it stopped at byte `at` of `text` (valid
/// JSON): the value that ended last before `at` (a scalar, or an object or array closed there),
/// or, when the last thing read opened a container, separated its members or was a key, that
/// container. serde_json reports a value's error just past the value, a struct's (a missing or
/// a duplicated field) past its closing brace or its key; so this names the path serde stopped
/// at without deserializing the arguments a second time.
fn path_at(text: &str, at: usize) -> String {
    /// One open container: an object with the key of the member being read, or an array with
    /// the index of the element being read.
    enum Open {
        Object(Option<String>),
        Array(usize),
    }
    fn pointer(open: &[Open]) -> String {
        let mut pointer = String::new();
        for frame in open {
            match frame {
                Open::Object(Some(key)) => {
                    pointer.push('/');
                    push_pointer_token(&mut pointer, key);
                }
                Open::Object(None) => {}
                Open::Array(index) => {
                    pointer.push('/');
                    crate::wording::push_number(&mut pointer, *index as u64);
                }
            }
        }
        pointer
    }
    let bytes = text.as_bytes();
    let end = at.min(bytes.len());
    let mut open: Vec<Open> = Vec::new();
    // The path of the value that ended last, while nothing else has been read since.
    let mut ended: Option<String> = None;
    let mut i = 0;
    while i < end {
        match bytes[i] {
            b' ' | b'\t' | b'\n' | b'\r' => {
                i += 1;
                continue;
            }
            b'{' => open.push(Open::Object(None)),
            b'[' => open.push(Open::Array(0)),
            b'}' | b']' => {
                open.pop();
                ended = Some(pointer(&open));
                i += 1;
                continue;
            }
            b',' => match open.last_mut() {
                Some(Open::Array(index)) => *index += 1,
                Some(Open::Object(key)) => *key = None,
                None => {}
            },
            b':' => {}
            b'"' => {
                let start = i;
                i += 1;
                while i < bytes.len() && bytes[i] != b'"' {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
                let raw = text.get(start..i.min(bytes.len())).unwrap_or_default();
                if let Some(Open::Object(key @ None)) = open.last_mut() {
                    *key = Some(serde_json::from_str(raw).unwrap_or_default());
                    ended = None;
                } else {
                    ended = Some(pointer(&open));
                }
                continue;
            }
            _ => {
                while i < bytes.len()
                    && !matches!(bytes[i], b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r')
                {
                    i += 1;
                }
                ended = Some(pointer(&open));
                continue;
            }
        }
        ended = None;
        i += 1;
    }
    // Nothing ended since: inside a container, the container itself (not the member after its
    // last key or comma).
    ended.unwrap_or_else(|| pointer(&open[..open.len().saturating_sub(1)]))
}

/// The number literal that ends at byte `at` (where serde_json stopped), as the model wrote it:
/// serde_json reports an integer beyond 64 bits as a float, losing its digits.
fn number_before(text: &str, at: usize) -> Option<&str> {
    let head = text.get(..at)?;
    let start = head
        .rfind(|c: char| !matches!(c, '0'..='9' | '-' | '+' | '.' | 'e' | 'E'))
        .map_or(0, |i| i + 1);
    let number = &head[start..];
    (!number.is_empty()).then_some(number)
}

/// serde quotes offending values whole ("invalid value: string \"...\""); cap the echo.
fn cut(detail: &str) -> String {
    if detail.chars().count() > DETAIL_CHARS {
        let head: String = detail.chars().take(DETAIL_CHARS).collect();
        format!("{head}...")
    } else {
        detail.to_owned()
    }
}

/// serde_json appends " at line 1 column 17"; the path already says where.
fn strip_position(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(i) => message[..i].to_owned(),
        None => message.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Deserialize, Debug)]
    #[allow(dead_code, reason = "only the parse is tested")]
    struct Line {
        sku: String,
        qty: u8,
    }

    #[derive(Deserialize, Debug)]
    #[allow(dead_code, reason = "only the parse is tested")]
    struct Order {
        id: String,
        lines: Vec<Line>,
        #[serde(rename = "a/b~c")]
        odd: Option<Line>,
    }

    /// The path serde_json's own error points at, as `failure` finds it.
    fn path_of_error(text: &str) -> String {
        let error = serde_json::from_str::<Order>(text).unwrap_err();
        let value: Value = serde_json::from_str(text).unwrap();
        from_serde(text, Some(&error), &value).path
    }

    #[test]
    fn a_value_serde_refused_is_named_by_its_path() {
        // A scalar in an array of structs, spread over lines.
        let text = "{\"id\": \"o1\",\n \"lines\": [{\"sku\": \"a\", \"qty\": 1},\n  {\"sku\": \"b\", \"qty\": 2.0}]}";
        assert_eq!(path_of_error(text), "/lines/1/qty");
        // Out of the type's range.
        let text = r#"{"id": "o1", "lines": [{"sku": "a", "qty": 300}]}"#;
        assert_eq!(path_of_error(text), "/lines/0/qty");
        // A key that needs escaping in a pointer, and escapes in the key's JSON text.
        let text = r#"{"id": "o1", "lines": [], "a\/b~c": {"sku": "x", "qty": -1}}"#;
        assert_eq!(path_of_error(text), "/a~1b~0c/qty");
        // Whitespace before the next token does not move the path.
        let text = "{\"id\": \"o1\", \"lines\": [{\"sku\": 7 , \"qty\": 1}]}";
        assert_eq!(path_of_error(text), "/lines/0/sku");
    }

    #[test]
    fn a_struct_serde_refused_is_named_by_the_struct_not_its_last_member() {
        // A missing field: serde_json reports it past the struct's closing brace.
        let text = r#"{"id": "o1", "lines": [{"sku": "a"}]}"#;
        assert_eq!(path_of_error(text), "/lines/0");
        // A duplicated field: reported past its second key; the violation names the field.
        let text = r#"{"id": "o1", "lines": [{"sku": "a", "sku": "b", "qty": 1}]}"#;
        let error = serde_json::from_str::<Order>(text).unwrap_err();
        let value: Value = serde_json::from_str(text).unwrap();
        let violation = from_serde(text, Some(&error), &value);
        assert_eq!(violation.path, "/lines/0/sku");
        assert_eq!(violation.rule, "duplicate");
        let text = r#"{"id": "o1", "id": "o2", "lines": []}"#;
        let error = serde_json::from_str::<Order>(text).unwrap_err();
        let value: Value = serde_json::from_str(text).unwrap();
        assert_eq!(from_serde(text, Some(&error), &value).path, "/id");
    }

    #[test]
    fn a_serde_detail_is_echoed_up_to_200_characters() {
        assert_eq!(cut("expected u8"), "expected u8");
        let limit = "é".repeat(DETAIL_CHARS);
        assert_eq!(cut(&limit), limit);
        assert_eq!(cut(&format!("{limit}x")), format!("{limit}..."));
    }

    #[test]
    fn positions_read_as_paths() {
        let text = r#"{"a": [1, {"b": "x\"}"}, [true]], "c": null}"#;
        // Just past `1`, past the string holding an escaped quote and brace, past `[true]`,
        // and past `null`.
        assert_eq!(path_at(text, text.find(", {").unwrap()), "/a/0");
        assert_eq!(path_at(text, text.find("}, [").unwrap()), "/a/1/b");
        assert_eq!(path_at(text, text.find("]]").unwrap() + 1), "/a/2");
        assert_eq!(path_at(text, text.len() - 1), "/c");
        // Just after a key, an opening bracket or a comma: the container.
        assert_eq!(path_at(text, text.find(": [").unwrap()), "");
        assert_eq!(path_at(text, text.find("{\"b").unwrap() + 1), "/a/1");
        assert_eq!(path_at(text, text.find(", {").unwrap() + 1), "/a");
        // A value right after its colon, no space between.
        let tight = r#"{"a":{"b":"x,}"},"c":1}"#;
        assert_eq!(path_at(tight, tight.find("},").unwrap()), "/a/b");
        assert_eq!(path_at(tight, tight.len() - 1), "/c");
        // The whole text, and a position past its end.
        assert_eq!(path_at(text, text.len()), "");
        assert_eq!(path_at(text, text.len() + 5), "");
        // No position (serde_json gave none).
        assert_eq!(byte_offset(text, 0, 0), None);
        assert_eq!(byte_offset("{\n}", 2, 1), Some(3));
        assert_eq!(byte_offset("{\n}", 2, 2), None);
    }
}
