//! The fingerprint of a call: SHA-256 of the tool name and the canonical form of its arguments.
//!
//! Two argument texts have one fingerprint exactly when the tool would receive the same values
//! from them. So the canonical form is guided by the tool's input schema
//! ([`Fingerprint::for_tool`]):
//!
//! - object members are sorted by key, insignificant whitespace is dropped and string escapes
//!   are decoded (`"\u0041"` is `"A"`);
//! - a `null` is dropped only where serde erases it: a declared, optional property whose schema
//!   allows `null` and has no default (an `Option` parameter, where `null` and absence are both
//!   `None`). Everywhere else it is kept: a map value (`{"email": null}` clears an email, `{}`
//!   clears nothing), an array item, a property with a default (absent takes the default, `null`
//!   is `None`). A property with a default that is left out counts as its default written out;
//! - integers stay exact, whatever their size (`u128` ids differ in their last digit), and so do
//!   decimals, except where the schema says the value is an `f64` or `f32` (`format: "double"` or
//!   `"float"`): there a number is the float serde reads from it, so `5`, `5.0` and `5e0` are one
//!   number, and so are two long decimals that round to the same double.
//!
//! Where the schema cannot tell (an enum with data, a `serde_json::Value`, [`Fingerprint::of`]
//! without a schema) the form keeps every `null` and every exact number: two texts that the tool
//! might read differently never share a fingerprint there, at the price of telling apart a few
//! it would read alike. This is why the form is not RFC 8785 (JCS): JCS writes every number
//! through an IEEE double, which would make two large order numbers one fingerprint, and knows
//! nothing of the schema.
//!
//! SHA-256 (RustCrypto's `sha2`, pure Rust, widely audited) rather than a faster hash: the
//! fingerprint crosses process boundaries (a Redis store shared by replicas, a header a
//! downstream service may check), so it must be a stable, standard, collision-resistant
//! function; its cost on a few hundred bytes of arguments is well under a microsecond, nothing
//! beside the side effect it protects.

use std::borrow::Cow;
use std::fmt;

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::tool::spec::ToolSpec;

/// Versions the canonical form, so a future change of it can never collide with this one.
/// v2: `null` kept where serde keeps it, exact numbers read from the text, schema-guided floats.
const DOMAIN: &[u8] = b"toolwright-fingerprint-v2\0";

/// SHA-256 of a tool name and its canonical arguments. Displayed as 64 lowercase hex digits.
///
/// ```
/// use toolwright_core::idempotency::Fingerprint;
///
/// let a = Fingerprint::of("refund_order", r#"{"order_id":"A1","amount":5}"#);
/// let b = Fingerprint::of("refund_order", r#"{ "amount": 5.0, "order_id": "A1" }"#);
/// assert_eq!(a, b);
/// assert_ne!(a, Fingerprint::of("refund_order", r#"{"order_id":"A1","amount":6}"#));
/// assert_ne!(a, Fingerprint::of("cancel_order", r#"{"order_id":"A1","amount":5}"#));
/// // Without a schema, a `null` is a value like any other (see `Fingerprint::for_tool`).
/// assert_ne!(a, Fingerprint::of("refund_order", r#"{"order_id":"A1","amount":5,"reason":null}"#));
/// assert_eq!(a.to_string().len(), 64);
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Fingerprint([u8; 32]);

impl Fingerprint {
    /// The fingerprint of a call of `tool` with the argument text `arguments`, without a schema:
    /// every `null` counts and every number is exact (`5` and `5.0` are one number; `0.1` and
    /// `0.10000000000000001` are two). Prefer [`Fingerprint::for_tool`], which agrees with what
    /// the tool receives.
    ///
    /// Never fails: text that is not JSON (which the validation seam rejects before any store
    /// sees it) is hashed byte for byte, in a domain of its own.
    pub fn of(tool: &str, arguments: &str) -> Fingerprint {
        Fingerprint::with_schema(tool, None, arguments)
    }

    /// The fingerprint of a call of `tool` whose arguments follow the JSON Schema `schema`
    /// (with its `$defs`), for tools registered without a [`ToolSpec`](crate::ToolSpec). `None`: as
    /// [`Fingerprint::of`].
    pub fn with_schema(tool: &str, schema: Option<&Value>, arguments: &str) -> Fingerprint {
        match canonical(arguments, schema) {
            Some(canonical) => Fingerprint::hash(tool, b"json\0", &canonical),
            None => Fingerprint::hash(tool, b"raw\0", arguments.as_bytes()),
        }
    }

    /// The fingerprint of a call of `tool` with already parsed arguments, without a schema.
    /// A `Value` holds integers beyond 64 bits as floats; hash the text when you have it.
    pub fn of_value(tool: &str, arguments: &Value) -> Fingerprint {
        Fingerprint::of(tool, &arguments.to_string())
    }

    /// The canonical text [`Fingerprint::of`] hashes, for debugging a mismatch.
    ///
    /// ```
    /// use toolwright_core::idempotency::Fingerprint;
    ///
    /// let text = Fingerprint::canonical_text(r#"{"b":[1.50,2e0],"a":{"y":null,"x":-0.0}}"#);
    /// assert_eq!(text.as_deref(), Some(r#"{"a":{"x":0,"y":null},"b":[1.5,2]}"#));
    /// ```
    pub fn canonical_text(arguments: &str) -> Option<String> {
        String::from_utf8(canonical(arguments, None)?).ok()
    }

    /// The canonical text [`Fingerprint::with_schema`] hashes, for debugging a mismatch.
    pub fn canonical_text_with(schema: &Value, arguments: &str) -> Option<String> {
        String::from_utf8(canonical(arguments, Some(schema))?).ok()
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

/// serde_json's own nesting limit: deeper text never reaches a tool.
const MAX_DEPTH: usize = 128;

/// The canonical text of `text`, guided by `schema` where given; `None` when it is not JSON.
fn canonical(text: &str, schema: Option<&Value>) -> Option<Vec<u8>> {
    let mut scanner = Scanner {
        text: text.as_bytes(),
        pos: 0,
        root: schema,
    };
    let mut out = Vec::with_capacity(text.len());
    scanner.value(
        schema.map(Place::Schema).unwrap_or(Place::Unknown),
        0,
        &mut out,
    )?;
    scanner.skip_ws();
    (scanner.pos == scanner.text.len()).then_some(out)
}

/// What the schema says about the value at hand.
#[derive(Clone, Copy)]
enum Place<'s> {
    /// No schema, or one this module cannot follow: keep every `null`, numbers exact.
    Unknown,
    /// A schema (not yet resolved through `$ref`).
    Schema(&'s Value),
}

/// How a number is canonicalized where it stands.
enum NumberKind {
    /// Exact decimal value: integers of any size, decimals digit for digit.
    Exact,
    /// The `f64` serde reads from the text.
    Double,
    /// The `f32` serde reads from the text.
    Float,
}

/// A single-pass reader of JSON text that writes the canonical form as it goes. Hand-written
/// because serde_json (without `arbitrary_precision`) turns integers beyond 64 bits into floats
/// before any visitor sees them; strings are still decoded by serde_json.
struct Scanner<'t, 's> {
    text: &'t [u8],
    pos: usize,
    root: Option<&'s Value>,
}

impl<'t, 's> Scanner<'t, 's> {
    fn skip_ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.text.get(self.pos) {
            self.pos += 1;
        }
    }

    fn eat(&mut self, byte: u8) -> bool {
        self.skip_ws();
        if self.text.get(self.pos) == Some(&byte) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn value(&mut self, place: Place<'s>, depth: usize, out: &mut Vec<u8>) -> Option<()> {
        self.skip_ws();
        match *self.text.get(self.pos)? {
            b'{' if depth < MAX_DEPTH => self.object(place, depth + 1, out),
            b'[' if depth < MAX_DEPTH => self.array(place, depth + 1, out),
            b'"' => {
                let s = self.string()?;
                write_string(&s, out);
                Some(())
            }
            b't' => self.literal(b"true", out),
            b'f' => self.literal(b"false", out),
            b'n' => self.literal(b"null", out),
            b'-' | b'0'..=b'9' => {
                let start = self.pos;
                while let Some(b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E') =
                    self.text.get(self.pos)
                {
                    self.pos += 1;
                }
                let number = std::str::from_utf8(&self.text[start..self.pos]).ok()?;
                let kind = self.resolve(place).map_or(NumberKind::Exact, number_kind);
                write_number(number, kind, out)
            }
            _ => None,
        }
    }

    fn literal(&mut self, word: &[u8], out: &mut Vec<u8>) -> Option<()> {
        let end = self.pos + word.len();
        (self.text.get(self.pos..end)? == word).then_some(())?;
        self.pos = end;
        out.extend_from_slice(word);
        Some(())
    }

    /// The string at the cursor, escapes decoded.
    fn string(&mut self) -> Option<Cow<'t, str>> {
        let start = self.pos;
        let mut plain = true;
        self.pos += 1;
        loop {
            match *self.text.get(self.pos)? {
                b'"' => break,
                b'\\' => {
                    plain = false;
                    self.pos += 2;
                }
                b if b < 0x20 => return None,
                _ => self.pos += 1,
            }
        }
        self.pos += 1;
        let quoted = &self.text[start..self.pos];
        if plain {
            let inner = std::str::from_utf8(&quoted[1..quoted.len() - 1]).ok()?;
            Some(Cow::Borrowed(inner))
        } else {
            serde_json::from_slice::<String>(quoted)
                .ok()
                .map(Cow::Owned)
        }
    }

    fn array(&mut self, place: Place<'s>, depth: usize, out: &mut Vec<u8>) -> Option<()> {
        self.pos += 1;
        let schema = self.resolve(place);
        let items = schema.and_then(|s| s.get("items"));
        let prefix = schema
            .and_then(|s| s.get("prefixItems"))
            .and_then(Value::as_array);
        out.push(b'[');
        if !self.eat(b']') {
            let mut index = 0;
            loop {
                if index > 0 {
                    out.push(b',');
                }
                let item = prefix
                    .and_then(|p| p.get(index))
                    .or(items)
                    .map_or(Place::Unknown, Place::Schema);
                self.value(item, depth, out)?;
                index += 1;
                if self.eat(b']') {
                    break;
                }
                self.eat(b',').then_some(())?;
            }
        }
        out.push(b']');
        Some(())
    }

    fn object(&mut self, place: Place<'s>, depth: usize, out: &mut Vec<u8>) -> Option<()> {
        self.pos += 1;
        let schema = self.resolve(place);
        let mut members: Vec<(Cow<'t, str>, Vec<u8>)> = Vec::new();
        if !self.eat(b'}') {
            loop {
                self.skip_ws();
                if self.text.get(self.pos) != Some(&b'"') {
                    return None;
                }
                let key = self.string()?;
                self.eat(b':').then_some(())?;
                let member = schema.map_or(Member::UNKNOWN, |s| self.member(s, &key));
                let mut canonical = Vec::new();
                self.value(member.place, depth, &mut canonical)?;
                if !(member.erases_null && canonical == b"null") {
                    members.push((key, canonical));
                }
                if self.eat(b'}') {
                    break;
                }
                self.eat(b',').then_some(())?;
            }
        }
        if let Some(schema) = schema {
            self.defaults(schema, depth, &mut members)?;
        }
        // Sorted by UTF-8 bytes (= code points); of a key given twice, the last one counts, as
        // serde's maps keep it (a struct refuses the duplicate before any store sees it).
        members.sort_by(|a, b| a.0.cmp(&b.0));
        out.push(b'{');
        let mut first = true;
        for (i, (key, canonical)) in members.iter().enumerate() {
            if members.get(i + 1).is_some_and(|next| next.0 == *key) {
                continue;
            }
            if !first {
                out.push(b',');
            }
            first = false;
            write_string(key, out);
            out.push(b':');
            out.extend_from_slice(canonical);
        }
        out.push(b'}');
        Some(())
    }

    /// Adds every declared property with a default that the text left out, as the default's
    /// canonical text: serde gives the tool that value, so writing it out changes nothing.
    fn defaults(
        &self,
        schema: &'s Value,
        depth: usize,
        members: &mut Vec<(Cow<'t, str>, Vec<u8>)>,
    ) -> Option<()> {
        let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
            return Some(());
        };
        for (name, property) in properties {
            let Some(default) = default_of(property, self.root) else {
                continue;
            };
            if members.iter().any(|(key, _)| key == name) {
                continue;
            }
            let text = default.to_string();
            let mut nested = Scanner {
                text: text.as_bytes(),
                pos: 0,
                root: self.root,
            };
            let mut canonical = Vec::new();
            nested.value(Place::Schema(property), depth, &mut canonical)?;
            members.push((Cow::Owned(name.clone()), canonical));
        }
        Some(())
    }

    /// The schema of a member, and whether serde erases a `null` there.
    fn member(&self, object: &'s Value, key: &str) -> Member<'s> {
        if let Some(property) = object.get("properties").and_then(|p| p.get(key)) {
            let required = object
                .get("required")
                .and_then(Value::as_array)
                .is_some_and(|r| r.iter().any(|name| name.as_str() == Some(key)));
            let erases_null = !required
                && default_of(property, self.root).is_none()
                && allows_null(property, self.root, 0);
            return Member {
                place: Place::Schema(property),
                erases_null,
            };
        }
        match object.get("additionalProperties") {
            Some(extra @ (Value::Object(_) | Value::Bool(true))) => Member {
                place: Place::Schema(extra),
                erases_null: false,
            },
            _ => Member::UNKNOWN,
        }
    }

    /// The schema a value must follow: `$ref`s followed, and of an `Option`'s
    /// `anyOf: [T, {"type": "null"}]` the `T`. `None` when there is no single one.
    fn resolve(&self, place: Place<'s>) -> Option<&'s Value> {
        let Place::Schema(schema) = place else {
            return None;
        };
        let root = self.root?;
        let schema = follow(schema, root)?;
        let branches = schema
            .get("anyOf")
            .or_else(|| schema.get("oneOf"))
            .and_then(Value::as_array);
        let Some(branches) = branches else {
            return Some(schema);
        };
        let mut rest = branches
            .iter()
            .filter_map(|b| follow(b, root))
            .filter(|b| !is_null_schema(b));
        match (rest.next(), rest.next()) {
            (Some(only), None) => Some(only),
            _ => None,
        }
    }
}

/// A member's place, and whether its `null` is the same as its absence.
struct Member<'s> {
    place: Place<'s>,
    erases_null: bool,
}

impl Member<'_> {
    const UNKNOWN: Member<'static> = Member {
        place: Place::Unknown,
        erases_null: false,
    };
}

/// `schema` with its `$ref`s followed (to `#/...` pointers into the root schema).
fn follow<'s>(mut schema: &'s Value, root: &'s Value) -> Option<&'s Value> {
    for _ in 0..MAX_DEPTH {
        let Some(reference) = schema.get("$ref").and_then(Value::as_str) else {
            return Some(schema);
        };
        schema = root.pointer(reference.strip_prefix('#')?)?;
    }
    None
}

/// Exactly the schema of `null`: the second branch of an `Option`.
fn is_null_schema(schema: &Value) -> bool {
    matches!(schema.get("type"), Some(Value::String(t)) if t == "null")
        || schema.get("const") == Some(&Value::Null)
}

/// Whether `schema` accepts `null`.
fn allows_null(schema: &Value, root: Option<&Value>, depth: usize) -> bool {
    let Some(schema) = root.map_or(Some(schema), |root| follow(schema, root)) else {
        return false;
    };
    match schema {
        Value::Bool(b) => return *b,
        Value::Object(o) if o.is_empty() => return true,
        _ => {}
    }
    let typed = match schema.get("type") {
        Some(Value::String(t)) => t == "null",
        Some(Value::Array(ts)) => ts.iter().any(|t| t == "null"),
        _ => false,
    };
    let listed = schema.get("const") == Some(&Value::Null)
        || schema
            .get("enum")
            .and_then(Value::as_array)
            .is_some_and(|e| e.contains(&Value::Null));
    let branch = depth < 8
        && ["anyOf", "oneOf"].iter().any(|k| {
            schema
                .get(*k)
                .and_then(Value::as_array)
                .is_some_and(|bs| bs.iter().any(|b| allows_null(b, root, depth + 1)))
        });
    typed || listed || branch
}

/// A property's default, unless it is `null` (then absence and `null` are the same value).
fn default_of<'s>(property: &'s Value, root: Option<&'s Value>) -> Option<&'s Value> {
    let default = property.get("default").or_else(|| {
        root.and_then(|root| follow(property, root))
            .and_then(|p| p.get("default"))
    })?;
    (!default.is_null()).then_some(default)
}

/// A float where schemars says the Rust type is one (`format: "double"` or `"float"`) and the
/// schema admits no other JSON type; exact everywhere else.
fn number_kind(schema: &Value) -> NumberKind {
    let only_number = match schema.get("type") {
        Some(Value::String(t)) => t == "number",
        Some(Value::Array(ts)) => ts.iter().all(|t| t == "number" || t == "null"),
        _ => false,
    };
    match schema.get("format").and_then(Value::as_str) {
        Some("double") if only_number => NumberKind::Double,
        Some("float") if only_number => NumberKind::Float,
        _ => NumberKind::Exact,
    }
}

fn write_number(text: &str, kind: NumberKind, out: &mut Vec<u8>) -> Option<()> {
    // The float serde_json reads (its own parser, the one the typed parse runs), so two texts
    // the tool cannot tell apart are one number here too. `-0.0 == 0.0` for the tool as well.
    let float = match kind {
        NumberKind::Exact => None,
        NumberKind::Double => serde_json::from_str::<f64>(text).ok(),
        NumberKind::Float => serde_json::from_str::<f32>(text).ok().map(f64::from),
    };
    match float {
        Some(f) => write_float(f, out),
        None => write_exact(text, out)?,
    }
    Some(())
}

/// A float in its shortest round-trip form; integral values below 2^53 as integers.
fn write_float(f: f64, out: &mut Vec<u8>) {
    const EXACT: f64 = 9_007_199_254_740_992.0; // 2^53
    if f.fract() == 0.0 && f.abs() < EXACT {
        // Exact: the value is an integer below 2^53 (and -0.0 becomes 0).
        out.extend_from_slice((f as i64).to_string().as_bytes());
    } else if let Some(n) = serde_json::Number::from_f64(f) {
        out.extend_from_slice(n.to_string().as_bytes());
    }
}

/// Longest run of zeros written out in an exact number before it switches to an exponent.
const SPELLED_ZEROS: i64 = 40;

/// The exact decimal value of a JSON number, one text per value: `5`, `5.0`, `50e-1` are `5`;
/// `1.50` is `1.5`; `-0` is `0`; huge or tiny magnitudes are `d.ddde±n`. `None` when `text` is
/// not a JSON number.
fn write_exact(text: &str, out: &mut Vec<u8>) -> Option<()> {
    let (negative, unsigned) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let (mantissa, exponent) = match unsigned.find(['e', 'E']) {
        Some(i) => (&unsigned[..i], Some(&unsigned[i + 1..])),
        None => (unsigned, None),
    };
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let digit_run = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !digit_run(int) || !(frac.is_empty() && !mantissa.contains('.') || digit_run(frac)) {
        return None;
    }
    let mut exp: i64 = match exponent {
        None => 0,
        Some(e) => {
            let digits = e.strip_prefix(['+', '-']).unwrap_or(e);
            if !digit_run(digits) {
                return None;
            }
            let digits = digits.trim_start_matches('0');
            if digits.len() > 15 {
                // Beyond any float or integer a tool can receive: keep it as written, marked.
                out.push(b'~');
                out.extend_from_slice(text.as_bytes());
                return Some(());
            }
            let magnitude: i64 = digits.parse().unwrap_or(0);
            if e.starts_with('-') {
                -magnitude
            } else {
                magnitude
            }
        }
    };
    let all: String = [int, frac].concat();
    exp -= frac.len() as i64;
    let digits = all.trim_start_matches('0');
    let significant = digits.trim_end_matches('0');
    exp += (digits.len() - significant.len()) as i64;
    if significant.is_empty() {
        out.push(b'0');
        return Some(());
    }
    if negative {
        out.push(b'-');
    }
    let len = significant.len() as i64;
    if (0..=SPELLED_ZEROS).contains(&exp) {
        out.extend_from_slice(significant.as_bytes());
        out.extend(std::iter::repeat_n(b'0', exp as usize));
    } else if exp < 0 && len + exp > 0 {
        let point = (len + exp) as usize;
        out.extend_from_slice(&significant.as_bytes()[..point]);
        out.push(b'.');
        out.extend_from_slice(&significant.as_bytes()[point..]);
    } else if exp < 0 && -(len + exp) <= SPELLED_ZEROS {
        out.extend_from_slice(b"0.");
        out.extend(std::iter::repeat_n(b'0', (-(len + exp)) as usize));
        out.extend_from_slice(significant.as_bytes());
    } else {
        out.extend_from_slice(&significant.as_bytes()[..1]);
        if len > 1 {
            out.push(b'.');
            out.extend_from_slice(&significant.as_bytes()[1..]);
        }
        out.push(b'e');
        out.extend_from_slice((exp + len - 1).to_string().as_bytes());
    }
    Some(())
}

fn write_string(s: &str, out: &mut Vec<u8>) {
    // serde_json's escaping is deterministic: the same string always gives the same text.
    if serde_json::to_writer(&mut *out, s).is_err() {
        // Writing into a Vec cannot fail; keep the content significant all the same.
        out.extend_from_slice(s.as_bytes());
    }
}

// The fingerprint of a tool's call reads its spec's input schema.
impl Fingerprint {
    /// The fingerprint of a call of the tool `spec` describes: equal for two argument texts
    /// exactly when the tool receives equal values from them. This is the fingerprint the
    /// registry stores beside an idempotency key and shows an approver.
    ///
    /// The tool's input schema guides the canonical form: a `null` is dropped only where serde
    /// erases it (an optional, nullable property without a default, i.e. an `Option`
    /// parameter), and kept in maps, arrays and properties with a default; a property left out
    /// counts as its schema `default`; integers and decimals are exact from their text, except
    /// where schemars marks an `f64`/`f32` (`format: "double"`/`"float"`), where a number is
    /// the float serde reads. Where the schema cannot tell (an enum with data, a
    /// `serde_json::Value`) every `null` and every exact number counts.
    ///
    /// ```
    /// # use toolwright_core::{idempotency::Fingerprint, Registry};
    /// # fn demo(registry: &Registry) {
    /// let spec = registry.spec("update_profile").unwrap();
    /// // `fields: HashMap<String, Option<String>>`: a null clears a field, so it counts.
    /// assert_ne!(
    ///     Fingerprint::for_tool(spec, r#"{"fields":{}}"#),
    ///     Fingerprint::for_tool(spec, r#"{"fields":{"email":null}}"#),
    /// );
    /// # }
    /// ```
    pub fn for_tool(spec: &ToolSpec, arguments: &str) -> Fingerprint {
        Fingerprint::with_schema(spec.name(), Some(spec.input_schema()), arguments)
    }

    /// The canonical text [`Fingerprint::for_tool`](crate::idempotency::Fingerprint::for_tool)
    /// hashes, for debugging a mismatch.
    pub fn canonical_text_for(spec: &ToolSpec, arguments: &str) -> Option<String> {
        Self::canonical_text_with(spec.input_schema(), arguments)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn canon(text: &str) -> String {
        Fingerprint::canonical_text(text).unwrap()
    }

    fn canon_with(schema: &Value, text: &str) -> String {
        String::from_utf8(canonical(text, Some(schema)).unwrap()).unwrap()
    }

    /// The schema schemars writes for `fields: HashMap<String, Option<String>>`,
    /// `#[arg(default = Some(..))] mode: Option<String>`, `note: Option<String>`,
    /// `big: Option<u128>`, `ratio: Option<f64>`, `address: Option<Address>`.
    fn schema() -> Value {
        json!({
            "type": "object",
            "additionalProperties": false,
            "properties": {
                "fields": {"type": "object", "additionalProperties": {"type": ["string", "null"]}},
                "mode": {"type": ["string", "null"], "default": "fast"},
                "note": {"type": ["string", "null"]},
                "big": {"type": ["integer", "null"], "format": "uint128", "minimum": 0},
                "ratio": {"type": ["number", "null"], "format": "double"},
                "small": {"type": ["number", "null"], "format": "float"},
                "address": {"anyOf": [{"$ref": "#/$defs/Address"}, {"type": "null"}]},
                "tags": {"type": "array", "items": {"type": ["integer", "null"], "format": "int64"}}
            },
            "required": ["fields"],
            "$defs": {
                "Address": {
                    "type": "object",
                    "properties": {
                        "street": {"type": "string"},
                        "floor": {"type": ["integer", "null"], "format": "int32"},
                        "unit": {"type": ["number", "null"], "format": "double"}
                    },
                    "required": ["street"]
                }
            }
        })
    }

    #[test]
    fn member_order_whitespace_and_escapes_do_not_matter() {
        assert_eq!(
            canon(r#"{ "b" : 1, "a" : {"d":[1, 2], "c":"x"} }"#),
            r#"{"a":{"c":"x","d":[1,2]},"b":1}"#
        );
        assert_eq!(canon(r#""a\u0022\n\u0041""#), r#""a\"\nA""#);
        assert_eq!(canon(r#"{"\u0061":1}"#), r#"{"a":1}"#);
    }

    #[test]
    fn numbers_are_exact_without_a_schema() {
        assert_eq!(
            canon("[5, 5.0, 5e0, 50e-1, -0.0, 1.50, 1e300, 0.001, 1e-50, -12.5E+1]"),
            "[5,5,5,5,0,1.5,1e300,0.001,1e-50,-125]"
        );
        assert_ne!(canon("0.1"), canon("0.10000000000000001"));
        assert_ne!(
            Fingerprint::of("t", "9007199254740993"),
            Fingerprint::of("t", "9007199254740992")
        );
        assert_eq!(canon("18446744073709551615"), "18446744073709551615");
        assert_eq!(canon("-9223372036854775808"), "-9223372036854775808");
        assert_ne!(
            Fingerprint::of("t", "100000000000000000000000000000"),
            Fingerprint::of("t", "100000000000000000000000009999")
        );
        assert_eq!(
            canon("123456789012345678901234567890.000"),
            "123456789012345678901234567890"
        );
        assert_eq!(canon("1e99999999999999999999"), "~1e99999999999999999999");
    }

    #[test]
    fn each_number_has_one_spelling_at_every_boundary() {
        // The spellings at the edges of each branch of the exact writer: a point inside the
        // digits, just before them, zeros spelled out up to the limit, then an exponent.
        assert_eq!(canon("0.5"), "0.5");
        assert_eq!(canon("5e-1"), "0.5");
        assert_eq!(canon("12.5"), "12.5");
        assert_eq!(canon("0.05"), "0.05");
        assert_eq!(canon("1e40"), format!("1{}", "0".repeat(40)));
        assert_eq!(canon("1e41"), "1e41");
        assert_eq!(canon("1e-41"), format!("0.{}1", "0".repeat(40)));
        assert_eq!(canon("1e-42"), "1e-42");
        assert_eq!(canon("-1.5e-42"), "-1.5e-42");
        // Exponents up to 15 digits are read as numbers, so two spellings of one value meet.
        assert_eq!(canon("1e100000000000000"), canon("10e99999999999999"));
        assert_eq!(canon("1e100000000000000"), "1e100000000000000");
        // A float field: integral values below 2^53 as integers, 2^53 and above as floats.
        let schema = schema();
        assert_eq!(
            canon_with(&schema, r#"{"fields":{},"ratio":9007199254740991.0}"#),
            r#"{"fields":{},"mode":"fast","ratio":9007199254740991}"#
        );
        assert_eq!(
            canon_with(&schema, r#"{"fields":{},"ratio":9007199254740992}"#),
            r#"{"fields":{},"mode":"fast","ratio":9007199254740992.0}"#
        );
        // A space is text, a control character is not valid JSON text.
        assert_eq!(canon(r#""a b""#), r#""a b""#);
        assert!(Fingerprint::canonical_text(r#""\u0001""#).is_some());
        assert!(Fingerprint::canonical_text("\"\x01\"").is_none());
    }

    #[test]
    fn literals_nesting_and_the_public_views_are_exact() {
        assert_eq!(canon("[true, false, null]"), "[true,false,null]");
        // 128 levels of nesting are read; one more is refused (no stack overflow on hostile text).
        let nested = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
        assert_eq!(canon(&nested(128)), nested(128));
        assert!(Fingerprint::canonical_text(&nested(129)).is_none());
        // Objects count toward the same limit, alone and mixed with arrays.
        let objects = |n: usize| format!("{}1{}", r#"{"a":"#.repeat(n), "}".repeat(n));
        assert_eq!(canon(&objects(128)), objects(128));
        assert!(Fingerprint::canonical_text(&objects(129)).is_none());
        let mixed = format!("{}{}{}", r#"{"a":"#.repeat(64), nested(65), "}".repeat(64));
        assert!(Fingerprint::canonical_text(&mixed).is_none());
        let schema = schema();
        let text = r#"{ "fields": {}, "ratio": 2.50 }"#;
        assert_eq!(
            Fingerprint::canonical_text_with(&schema, text).as_deref(),
            Some(canon_with(&schema, text).as_str())
        );
        let a = Fingerprint::of("t", r#"{"a":1}"#);
        let b = Fingerprint::of("t", r#"{"a":2}"#);
        let hex: String = a.as_bytes().iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(hex, a.to_string());
        assert_ne!(a.as_bytes(), b.as_bytes());
    }

    #[test]
    fn big_integers_stay_exact_with_a_schema() {
        let schema = schema();
        let a = r#"{"fields":{},"big":100000000000000000000000000000}"#;
        let b = r#"{"fields":{},"big":100000000000000000000000009999}"#;
        assert_ne!(canon_with(&schema, a), canon_with(&schema, b));
        assert!(canon_with(&schema, b).contains("100000000000000000000000009999"));
    }

    #[test]
    fn floats_are_the_float_serde_reads_where_the_schema_says_float() {
        let schema = schema();
        let double = |n: &str| canon_with(&schema, &format!(r#"{{"fields":{{}},"ratio":{n}}}"#));
        assert_eq!(double("5"), double("5.0"));
        assert_eq!(double("5e0"), double("50e-1"));
        assert_eq!(double("0.1"), double("0.10000000000000001"));
        assert_eq!(
            double("100000000000000000000000000000"),
            double("100000000000000000000000009999")
        );
        assert_eq!(double("-0.0"), double("0"));
        assert_ne!(double("0.1"), double("0.2"));
        let float = |n: &str| canon_with(&schema, &format!(r#"{{"fields":{{}},"small":{n}}}"#));
        assert_eq!(float("0.1"), float("0.100000001"));
        assert_ne!(double("0.1"), double("0.100000001"));
        // Through `$ref` and `Option` too.
        let unit = |n: &str| {
            canon_with(
                &schema,
                &format!(r#"{{"fields":{{}},"address":{{"street":"x","unit":{n}}}}}"#),
            )
        };
        assert_eq!(unit("2"), unit("2.0"));
        assert_eq!(unit("0.1"), unit("0.10000000000000001"));
    }

    #[test]
    fn null_counts_in_maps_arrays_and_defaulted_properties() {
        let schema = schema();
        let c = |t: &str| canon_with(&schema, t);
        assert_ne!(c(r#"{"fields":{}}"#), c(r#"{"fields":{"email":null}}"#));
        assert_ne!(c(r#"{"fields":{}}"#), c(r#"{"fields":{},"mode":null}"#));
        assert_ne!(
            c(r#"{"fields":{},"tags":[]}"#),
            c(r#"{"fields":{},"tags":[null]}"#)
        );
        // Where serde erases it, it is erased: an `Option` without a default, also nested.
        assert_eq!(c(r#"{"fields":{}}"#), c(r#"{"fields":{},"note":null}"#));
        assert_eq!(c(r#"{"fields":{}}"#), c(r#"{"fields":{},"address":null}"#));
        assert_eq!(
            c(r#"{"fields":{},"address":{"street":"x"}}"#),
            c(r#"{"fields":{},"address":{"street":"x","floor":null}}"#)
        );
    }

    #[test]
    fn a_left_out_default_counts_as_written() {
        let schema = schema();
        let c = |t: &str| canon_with(&schema, t);
        assert_eq!(c(r#"{"fields":{}}"#), c(r#"{"fields":{},"mode":"fast"}"#));
        assert_ne!(c(r#"{"fields":{}}"#), c(r#"{"fields":{},"mode":"slow"}"#));
        assert_eq!(c(r#"{"fields":{}}"#), r#"{"fields":{},"mode":"fast"}"#);
    }

    #[test]
    fn escapes_anywhere_in_a_string_are_read() {
        assert_eq!(canon(r#""\\""#), r#""\\""#);
        assert_eq!(canon(r#""\"\"""#), r#""\"\"""#);
        assert_eq!(
            canon(r#"{"path":"C:\\dir\\file"}"#),
            r#"{"path":"C:\\dir\\file"}"#
        );
    }

    /// Whether `{"p":null}` and `{}` are one call where the optional property `p` has the
    /// schema `property`.
    fn null_erased(property: Value) -> bool {
        let schema = json!({"type": "object", "properties": {"p": property}});
        canon_with(&schema, r#"{"p":null}"#) == canon_with(&schema, "{}")
    }

    #[test]
    fn null_is_erased_only_where_the_property_accepts_null() {
        for admits in [
            json!(true),
            json!({}),
            json!({"type": "null"}),
            json!({"type": ["integer", "null"]}),
            json!({"enum": ["a", null]}),
            json!({"const": null}),
            json!({"anyOf": [{"type": "string"}, {"type": "null"}]}),
            json!({"oneOf": [{"type": "string"}, {"type": "null"}]}),
        ] {
            assert!(null_erased(admits.clone()), "{admits}");
        }
        // There a `null` is refused by the tool: kept, so it never shares a fingerprint with
        // a call the tool accepts.
        for refuses in [
            json!(false),
            json!({"type": "string"}),
            json!({"type": ["string", "integer"]}),
            json!({"enum": ["a", "b"]}),
            json!({"const": "a"}),
            json!({"anyOf": [{"type": "string"}, {"type": "integer"}]}),
        ] {
            assert!(!null_erased(refuses.clone()), "{refuses}");
        }
    }

    #[test]
    fn a_null_branch_is_looked_for_eight_levels_deep_and_a_cyclic_schema_ends() {
        let nested = |levels: usize| {
            (0..levels).fold(
                json!({"type": "null"}),
                |inner, _| json!({"anyOf": [{"type": "string"}, inner]}),
            )
        };
        assert!(null_erased(nested(8)));
        // Deeper, the null is kept: never erased on a guess.
        assert!(!null_erased(nested(9)));
        let cyclic = json!({
            "type": "object",
            "properties": {"p": {"$ref": "#/$defs/A"}},
            "$defs": {"A": {"anyOf": [{"$ref": "#/$defs/A"}, {"type": "string"}]}}
        });
        assert_ne!(
            canon_with(&cyclic, r#"{"p":null}"#),
            canon_with(&cyclic, "{}")
        );
    }

    #[test]
    fn a_number_is_a_float_only_where_the_schema_admits_nothing_else() {
        let same = |property: Value, a: &str, b: &str| {
            let schema = json!({"type": "object", "properties": {"n": property}});
            canon_with(&schema, &format!(r#"{{"n":{a}}}"#))
                == canon_with(&schema, &format!(r#"{{"n":{b}}}"#))
        };
        let (a, b) = ("0.1", "0.10000000000000001");
        let (c, d) = ("0.1", "0.100000001");
        // A required `f64` or `f32`.
        assert!(same(json!({"type": "number", "format": "double"}), a, b));
        assert!(same(json!({"type": "number", "format": "float"}), c, d));
        // A number that may be something else, or has no float format: exact.
        assert!(!same(
            json!({"type": ["number", "string"], "format": "double"}),
            a,
            b
        ));
        assert!(!same(
            json!({"type": ["number", "string"], "format": "float"}),
            c,
            d
        ));
        assert!(!same(json!({"type": "integer", "format": "double"}), a, b));
        assert!(!same(json!({"type": "number"}), a, b));
        // The values of a map follow `additionalProperties`.
        let map = json!({"type": "object", "additionalProperties": {"type": "number", "format": "double"}});
        assert_eq!(
            canon_with(&map, r#"{"x":0.1}"#),
            canon_with(&map, r#"{"x":0.10000000000000001}"#)
        );
    }

    #[test]
    fn of_a_key_given_twice_the_last_counts() {
        assert_eq!(canon(r#"{"a":1,"b":2,"a":3}"#), r#"{"a":3,"b":2}"#);
    }

    #[test]
    fn null_is_kept_without_a_schema() {
        assert_eq!(
            canon(r#"{"a":null,"b":[null]}"#),
            r#"{"a":null,"b":[null]}"#
        );
        assert_ne!(Fingerprint::of("t", "[null]"), Fingerprint::of("t", "[]"));
        assert_ne!(
            Fingerprint::of("t", r#"{"a":null}"#),
            Fingerprint::of("t", "{}")
        );
    }

    #[test]
    fn array_order_strings_and_the_tool_name_are_significant() {
        assert_ne!(Fingerprint::of("t", "[1,2]"), Fingerprint::of("t", "[2,1]"));
        assert_ne!(
            Fingerprint::of("t", r#""A1""#),
            Fingerprint::of("t", r#""a1""#)
        );
        assert_ne!(Fingerprint::of("t", "{}"), Fingerprint::of("u", "{}"));
    }

    #[test]
    fn text_that_is_not_json_is_hashed_as_is_and_never_equals_json() {
        assert_eq!(Fingerprint::of("t", "{oops"), Fingerprint::of("t", "{oops"));
        assert_ne!(
            Fingerprint::of("t", "{oops"),
            Fingerprint::of("t", "{oops ")
        );
        assert_ne!(Fingerprint::of("t", "1"), Fingerprint::of("t", "1 x"));
        for broken in [
            "",
            "{",
            "[1,]",
            "{\"a\"}",
            "\"\\",
            "nul",
            "5.",
            "--1",
            "{\"a\":1,}",
        ] {
            assert_eq!(Fingerprint::canonical_text(broken), None, "{broken}");
        }
        let deep = "[".repeat(200) + &"]".repeat(200);
        assert_eq!(Fingerprint::canonical_text(&deep), None);
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
