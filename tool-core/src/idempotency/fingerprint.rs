//! The fingerprint of a call: SHA-256 of the tool name and the canonical form of its arguments.
//!
//! Canonical, so that two texts a model could write for the same arguments hash alike:
//! object members sorted by key, insignificant whitespace dropped, numbers normalized (`5`,
//! `5.0` and `5e0` are one number), and a member whose value is `null` treated as absent (as
//! every `Option` parameter of a `#[tool]` treats it). Array order and string contents are
//! significant. Integers stay exact: `9007199254740993` and `9007199254740992` differ, which is
//! why this is not RFC 8785 (JCS), whose number form goes through an IEEE double and would make
//! two large order numbers one fingerprint.
//!
//! SHA-256 (RustCrypto's `sha2`, pure Rust, widely audited) rather than a faster hash: the
//! fingerprint crosses process boundaries (a Redis store shared by replicas, a header a
//! downstream service may check), so it must be a stable, standard, collision-resistant
//! function; its cost on a few hundred bytes of arguments is well under a microsecond, nothing
//! beside the side effect it protects.

use std::fmt;

use serde_json::{Number, Value};
use sha2::{Digest, Sha256};

/// Versions the canonical form, so a future change of it can never collide with this one.
const DOMAIN: &[u8] = b"toolwright-fingerprint-v1\0";

/// SHA-256 of a tool name and its canonical arguments. Displayed as 64 lowercase hex digits.
///
/// ```
/// use toolwright_core::idempotency::Fingerprint;
///
/// let a = Fingerprint::of("refund_order", r#"{"order_id":"A1","amount":5,"reason":null}"#);
/// let b = Fingerprint::of("refund_order", r#"{ "amount": 5.0, "order_id": "A1" }"#);
/// assert_eq!(a, b);
/// assert_ne!(a, Fingerprint::of("refund_order", r#"{"order_id":"A1","amount":6}"#));
/// assert_ne!(a, Fingerprint::of("cancel_order", r#"{"order_id":"A1","amount":5}"#));
/// assert_eq!(a.to_string().len(), 64);
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Fingerprint([u8; 32]);

impl Fingerprint {
    /// The fingerprint of a call of `tool` with the argument text `arguments`.
    ///
    /// Never fails: text that is not JSON (which the validation seam rejects before any store
    /// sees it) is hashed byte for byte, in a domain of its own.
    pub fn of(tool: &str, arguments: &str) -> Fingerprint {
        match serde_json::from_str::<Value>(arguments) {
            Ok(value) => Fingerprint::of_value(tool, &value),
            Err(_) => Fingerprint::hash(tool, b"raw\0", arguments.as_bytes()),
        }
    }

    /// The fingerprint of a call of `tool` with already parsed arguments.
    pub fn of_value(tool: &str, arguments: &Value) -> Fingerprint {
        let mut canonical = Vec::with_capacity(128);
        write_canonical(arguments, &mut canonical);
        Fingerprint::hash(tool, b"json\0", &canonical)
    }

    /// The canonical text [`Fingerprint::of`] hashes, for debugging a mismatch.
    ///
    /// ```
    /// use toolwright_core::idempotency::Fingerprint;
    ///
    /// let text = Fingerprint::canonical_text(r#"{"b":[1.50,2e0],"a":{"y":null,"x":-0.0}}"#);
    /// assert_eq!(text.as_deref(), Some(r#"{"a":{"x":0},"b":[1.5,2]}"#));
    /// ```
    pub fn canonical_text(arguments: &str) -> Option<String> {
        let value = serde_json::from_str::<Value>(arguments).ok()?;
        let mut canonical = Vec::with_capacity(arguments.len());
        write_canonical(&value, &mut canonical);
        String::from_utf8(canonical).ok()
    }

    /// The 32 digest bytes.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    fn hash(tool: &str, kind: &[u8], body: &[u8]) -> Fingerprint {
        let mut hasher = Sha256::new();
        hasher.update(DOMAIN);
        hasher.update(tool.as_bytes());
        hasher.update([0]);
        hasher.update(kind);
        hasher.update(body);
        Fingerprint(hasher.finalize().into())
    }
}

impl fmt::Display for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for byte in self.0 {
            write!(f, "{byte:02x}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Fingerprint({self})")
    }
}

/// Writes the canonical JSON text of `value`. Recursion is bounded by `serde_json`'s own depth
/// limit on the parse that produced `value`.
fn write_canonical(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Number(n) => write_number(n, out),
        Value::String(s) => write_string(s, out),
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_canonical(item, out);
            }
            out.push(b']');
        }
        Value::Object(map) => {
            // Sorted by UTF-8 bytes (= code points), whatever order the map keeps.
            let mut members: Vec<(&String, &Value)> =
                map.iter().filter(|(_, v)| !v.is_null()).collect();
            members.sort_unstable_by(|a, b| a.0.cmp(b.0));
            out.push(b'{');
            for (i, (key, item)) in members.into_iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_string(key, out);
                out.push(b':');
                write_canonical(item, out);
            }
            out.push(b'}');
        }
    }
}

/// Integers as exact integers; a float with an integral value that a double represents exactly
/// (|x| < 2^53) as that integer; any other float in its shortest round-trip form.
fn write_number(n: &Number, out: &mut Vec<u8>) {
    const EXACT: f64 = 9_007_199_254_740_992.0; // 2^53
    if let Some(i) = n.as_i64() {
        out.extend_from_slice(i.to_string().as_bytes());
    } else if let Some(u) = n.as_u64() {
        out.extend_from_slice(u.to_string().as_bytes());
    } else if let Some(f) = n.as_f64() {
        if f.fract() == 0.0 && f.abs() < EXACT {
            // Exact: the value is an integer below 2^53 (and -0.0 becomes 0).
            out.extend_from_slice((f as i64).to_string().as_bytes());
        } else {
            // serde_json writes finite floats in ryu's shortest round-trip form.
            out.extend_from_slice(n.to_string().as_bytes());
        }
    }
}

fn write_string(s: &str, out: &mut Vec<u8>) {
    // serde_json's escaping is deterministic: the same string always gives the same text.
    if serde_json::to_writer(&mut *out, s).is_err() {
        // Writing into a Vec cannot fail; keep the content significant all the same.
        out.extend_from_slice(s.as_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn canon(text: &str) -> String {
        Fingerprint::canonical_text(text).unwrap()
    }

    #[test]
    fn member_order_and_whitespace_do_not_matter() {
        assert_eq!(
            canon(r#"{ "b" : 1, "a" : {"d":[1, 2], "c":"x"} }"#),
            r#"{"a":{"c":"x","d":[1,2]},"b":1}"#
        );
    }

    #[test]
    fn numbers_are_normalized_but_integers_stay_exact() {
        assert_eq!(
            canon("[5, 5.0, 5e0, 50e-1, -0.0, 1.50, 1e300]"),
            "[5,5,5,5,0,1.5,1e+300]"
        );
        assert_ne!(
            Fingerprint::of("t", "9007199254740993"),
            Fingerprint::of("t", "9007199254740992")
        );
        assert_eq!(canon("18446744073709551615"), "18446744073709551615");
        assert_eq!(canon("-9223372036854775808"), "-9223372036854775808");
    }

    #[test]
    fn null_members_are_absent_but_null_items_are_not() {
        assert_eq!(canon(r#"{"a":null,"b":[null]}"#), r#"{"b":[null]}"#);
        assert_ne!(Fingerprint::of("t", "[null]"), Fingerprint::of("t", "[]"));
    }

    #[test]
    fn array_order_strings_and_the_tool_name_are_significant() {
        assert_ne!(Fingerprint::of("t", "[1,2]"), Fingerprint::of("t", "[2,1]"));
        assert_ne!(
            Fingerprint::of("t", r#""A1""#),
            Fingerprint::of("t", r#""a1""#)
        );
        assert_ne!(Fingerprint::of("t", "{}"), Fingerprint::of("u", "{}"));
        assert_eq!(canon(r#""a\u0022\n""#), r#""a\"\n""#);
    }

    #[test]
    fn text_that_is_not_json_is_hashed_as_is_and_never_equals_json() {
        assert_eq!(Fingerprint::of("t", "{oops"), Fingerprint::of("t", "{oops"));
        assert_ne!(
            Fingerprint::of("t", "{oops"),
            Fingerprint::of("t", "{oops ")
        );
        assert_ne!(Fingerprint::of("t", "1"), Fingerprint::of("t", "1 x"));
    }

    #[test]
    fn display_is_sha256_hex() {
        let fp = Fingerprint::of("refund_order", "{}");
        let hex = fp.to_string();
        assert_eq!(hex.len(), 64);
        assert!(hex
            .bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()));
    }
}
