//! The canonical text a [`Fingerprint`](super::Fingerprint) hashes, and the [`Plan`] that
//! guides it: what a tool's input schema says about each place in its arguments, read from the
//! schema once per tool instead of on every call.
//!
//! The rules are the fingerprint's (see its module): members sorted, whitespace dropped,
//! escapes decoded, a `null` dropped only where serde erases it, a left-out property with a
//! default written out, numbers exact unless the schema says `f64`/`f32`.

use std::borrow::Cow;
use std::collections::HashMap;
use std::ops::Range;

use serde_json::Value;
use smallvec::SmallVec;

use crate::runtime::needs_escape;

/// serde_json's own nesting limit: deeper text never reaches a tool.
const MAX_DEPTH: usize = 128;

/// What a schema says about every place of the values it describes: compiled once (a tool's
/// spec keeps its plan), walked on each call without a lookup into the schema.
#[derive(Debug)]
pub(crate) struct Plan {
    nodes: Vec<Node>,
    root: Child,
}

/// The schema of a place: a compiled node, or none that this module can follow (keep every
/// `null`, numbers exact, children unknown).
#[derive(Debug, Clone, Copy)]
enum Child {
    Unknown,
    Node(usize),
}

/// One schema, `$ref`s followed and an `Option`'s `anyOf: [T, {"type": "null"}]` read as `T`.
#[derive(Debug)]
struct Node {
    number: NumberKind,
    /// `prefixItems`, by position.
    prefix: Box<[Child]>,
    /// `items`: every array item past the prefix (and within it where the prefix has no entry).
    items: Child,
    /// Declared properties, sorted by name.
    properties: Box<[Property]>,
    /// A member that is not declared: `additionalProperties` when it is a schema or `true`.
    additional: Child,
    /// Declared properties with a non-null default: name, place and the default as JSON
    /// text, in declaration order.
    defaults: Box<[(Box<str>, Child, String)]>,
}

#[derive(Debug)]
struct Property {
    name: Box<str>,
    child: Child,
    /// An optional, nullable property without a default: serde reads its `null` as its
    /// absence.
    erases_null: bool,
}

/// How a number is canonicalized where it stands.
#[derive(Debug, Clone, Copy)]
enum NumberKind {
    /// Exact decimal value: integers of any size, decimals digit for digit.
    Exact,
    /// The `f64` serde reads from the text.
    Double,
    /// The `f32` serde reads from the text.
    Float,
}

impl Plan {
    /// The plan of `schema`, a root schema (its `$ref`s point into it).
    pub(crate) fn compile(schema: &Value) -> Plan {
        let mut compiler = Compiler {
            root: schema,
            nodes: Vec::new(),
            seen: HashMap::new(),
        };
        let root = compiler.child(schema, 0);
        Plan {
            nodes: compiler.nodes,
            root,
        }
    }

    /// No schema: every `null` and every exact number counts.
    pub(crate) const UNKNOWN: Plan = Plan {
        nodes: Vec::new(),
        root: Child::Unknown,
    };
}

struct Compiler<'s> {
    root: &'s Value,
    nodes: Vec<Node>,
    /// Node of each resolved schema, by address: a recursive type compiles to a cycle.
    seen: HashMap<*const Value, usize>,
}

impl<'s> Compiler<'s> {
    /// The node of the value `schema` describes. Text deeper than [`MAX_DEPTH`] is never
    /// canonicalized, so nothing below it is compiled.
    fn child(&mut self, schema: &'s Value, depth: usize) -> Child {
        let Some(schema) = resolve(schema, self.root) else {
            return Child::Unknown;
        };
        if let Some(&index) = self.seen.get(&std::ptr::from_ref(schema)) {
            return Child::Node(index);
        }
        if depth > MAX_DEPTH {
            return Child::Unknown;
        }
        let index = self.nodes.len();
        self.seen.insert(std::ptr::from_ref(schema), index);
        self.nodes.push(Node {
            number: number_kind(schema),
            prefix: Box::new([]),
            items: Child::Unknown,
            properties: Box::new([]),
            additional: Child::Unknown,
            defaults: Box::new([]),
        });
        let prefix = schema
            .get("prefixItems")
            .and_then(Value::as_array)
            .map(|p| p.iter().map(|s| self.child(s, depth + 1)).collect())
            .unwrap_or_default();
        let items = match schema.get("items") {
            Some(items) => self.child(items, depth + 1),
            None => Child::Unknown,
        };
        let required = schema.get("required").and_then(Value::as_array);
        let declared = schema.get("properties").and_then(Value::as_object);
        let mut properties = Vec::new();
        let mut defaults = Vec::new();
        for (name, property) in declared.into_iter().flatten() {
            let default = default_of(property, self.root);
            let required = required.is_some_and(|r| r.iter().any(|n| n.as_str() == Some(name)));
            let child = self.child(property, depth + 1);
            properties.push(Property {
                name: name.as_str().into(),
                child,
                erases_null: !required && default.is_none() && allows_null(property, self.root, 0),
            });
            if let Some(default) = default {
                defaults.push((name.as_str().into(), child, default.to_string()));
            }
        }
        properties.sort_by(|a, b| a.name.cmp(&b.name));
        let additional = match schema.get("additionalProperties") {
            Some(extra @ (Value::Object(_) | Value::Bool(true))) => self.child(extra, depth + 1),
            _ => Child::Unknown,
        };
        let node = &mut self.nodes[index];
        node.prefix = prefix;
        node.items = items;
        node.properties = properties.into();
        node.additional = additional;
        node.defaults = defaults.into();
        Child::Node(index)
    }
}

/// The canonical text of `text` under `plan`; `None` when it is not JSON.
pub(crate) fn canonical(text: &str, plan: &Plan) -> Option<Vec<u8>> {
    let mut scanner = Scanner {
        text,
        pos: 0,
        plan,
        members: SmallVec::new(),
    };
    // An object's members are written twice (as read, then in order) before the first copy is
    // dropped: room for both, so the buffer is allocated once for the usual text.
    let mut out = Vec::with_capacity(text.len().saturating_mul(2).saturating_add(16));
    scanner.value(plan.root, 0, &mut out)?;
    scanner.skip_ws();
    (scanner.pos == scanner.text.len()).then_some(out)
}

/// A member of an object being read: its key, decoded, and where its canonical value was
/// written.
type Member<'t> = (Cow<'t, str>, Range<usize>);

/// A single-pass reader of JSON text that writes the canonical form as it goes. Hand-written
/// because serde_json (without `arbitrary_precision`) turns integers beyond 64 bits into floats
/// before any visitor sees them; strings are still decoded by serde_json.
struct Scanner<'t, 'p> {
    /// The text, valid UTF-8: a slice between two ASCII bytes is a `str` without a second
    /// check.
    text: &'t str,
    pos: usize,
    plan: &'p Plan,
    /// The members of the objects being read, innermost last: one buffer for the whole text,
    /// not one per object, on the stack while it holds a few.
    members: SmallVec<[Member<'t>; 8]>,
}

impl<'t, 'p> Scanner<'t, 'p> {
    /// The byte at `pos`.
    fn byte(&self, pos: usize) -> Option<u8> {
        self.text.as_bytes().get(pos).copied()
    }

    fn node(&self, child: Child) -> Option<&'p Node> {
        match child {
            Child::Unknown => None,
            Child::Node(index) => self.plan.nodes.get(index),
        }
    }

    fn skip_ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.byte(self.pos) {
            self.pos += 1;
        }
    }

    fn eat(&mut self, byte: u8) -> bool {
        self.skip_ws();
        if self.byte(self.pos) == Some(byte) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn value(&mut self, place: Child, depth: usize, out: &mut Vec<u8>) -> Option<()> {
        self.skip_ws();
        match self.byte(self.pos)? {
            b'{' if depth < MAX_DEPTH => self.object(place, depth + 1, out),
            b'[' if depth < MAX_DEPTH => self.array(place, depth + 1, out),
            b'"' => {
                let s = self.string()?;
                write_text(&s, out);
                Some(())
            }
            b't' => self.literal(b"true", out),
            b'f' => self.literal(b"false", out),
            b'n' => self.literal(b"null", out),
            b'-' | b'0'..=b'9' => {
                let start = self.pos;
                while let Some(b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E') = self.byte(self.pos)
                {
                    self.pos += 1;
                }
                let number = self.text.get(start..self.pos)?;
                let kind = self.node(place).map_or(NumberKind::Exact, |n| n.number);
                write_number(number, kind, out)
            }
            _ => None,
        }
    }

    fn literal(&mut self, word: &[u8], out: &mut Vec<u8>) -> Option<()> {
        let end = self.pos + word.len();
        (self.text.as_bytes().get(self.pos..end)? == word).then_some(())?;
        self.pos = end;
        out.extend_from_slice(word);
        Some(())
    }

    /// The string at the cursor, escapes decoded: borrowed exactly when it has no escape (and
    /// so no byte that needs one, see [`write_text`]).
    fn string(&mut self) -> Option<Cow<'t, str>> {
        let start = self.pos;
        let body = self.text.as_bytes().get(start + 1..)?;
        // Most strings have no escape: one tight scan to their end.
        let end = body.iter().position(|&b| needs_escape(b))?;
        match body[end] {
            b'"' => {
                self.pos = start + 1 + end + 1;
                self.text.get(start + 1..start + 1 + end).map(Cow::Borrowed)
            }
            b'\\' => self.escaped(start, start + 1 + end),
            // A control byte: not JSON.
            _ => None,
        }
    }

    /// The string at `start` whose first escape is at `pos`, decoded by serde_json (which also
    /// refuses a control byte in it).
    fn escaped(&mut self, start: usize, mut pos: usize) -> Option<Cow<'t, str>> {
        loop {
            match self.byte(pos)? {
                b'"' => break,
                b'\\' => pos += 2,
                _ => pos += 1,
            }
        }
        self.pos = pos + 1;
        // Both ends are quotes, ASCII: the slice is whole characters.
        let quoted = self.text.get(start..self.pos)?;
        serde_json::from_str::<String>(quoted).ok().map(Cow::Owned)
    }

    fn array(&mut self, place: Child, depth: usize, out: &mut Vec<u8>) -> Option<()> {
        self.pos += 1;
        let node = self.node(place);
        out.push(b'[');
        if !self.eat(b']') {
            let mut index = 0;
            loop {
                if index > 0 {
                    out.push(b',');
                }
                let item = node.map_or(Child::Unknown, |n| {
                    n.prefix.get(index).copied().unwrap_or(n.items)
                });
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

    fn object(&mut self, place: Child, depth: usize, out: &mut Vec<u8>) -> Option<()> {
        self.pos += 1;
        let node = self.node(place);
        // Each member's canonical value is written past the end of `out`, then the members
        // are written again in order after them and the unordered values dropped: no buffer
        // of its own per object or per member.
        let start = out.len();
        let base = self.members.len();
        if !self.eat(b'}') {
            loop {
                self.skip_ws();
                if self.byte(self.pos) != Some(b'"') {
                    return None;
                }
                let key = self.string()?;
                self.eat(b':').then_some(())?;
                let (child, erases_null) =
                    node.map_or((Child::Unknown, false), |n| member(n, &key));
                let from = out.len();
                self.value(child, depth, out)?;
                if erases_null && &out[from..] == b"null" {
                    out.truncate(from);
                } else {
                    self.members.push((key, from..out.len()));
                }
                if self.eat(b'}') {
                    break;
                }
                self.eat(b',').then_some(())?;
            }
        }
        if let Some(node) = node {
            self.defaults(node, depth, base, out)?;
        }
        let written = out.len();
        let members = &mut self.members[base..];
        // Sorted by UTF-8 bytes (= code points); of a key given twice, the last one counts, as
        // serde's maps keep it (a struct refuses the duplicate before any store sees it). The
        // sort is stable, so the last of equal keys stays last.
        members.sort_by(|a, b| a.0.cmp(&b.0));
        out.push(b'{');
        let mut first = true;
        for (i, (key, range)) in members.iter().enumerate() {
            if members.get(i + 1).is_some_and(|next| next.0 == *key) {
                continue;
            }
            if !first {
                out.push(b',');
            }
            first = false;
            write_text(key, out);
            out.push(b':');
            out.extend_from_within(range.clone());
        }
        out.push(b'}');
        out.drain(start..written);
        self.members.truncate(base);
        Some(())
    }

    /// Adds every declared property with a default that the text left out, as the default's
    /// canonical text: serde gives the tool that value, so writing it out changes nothing.
    fn defaults(
        &mut self,
        node: &'p Node,
        depth: usize,
        base: usize,
        out: &mut Vec<u8>,
    ) -> Option<()> {
        for (name, child, default) in &*node.defaults {
            if self.members[base..].iter().any(|(key, _)| **key == **name) {
                continue;
            }
            let mut nested = Scanner {
                text: default,
                pos: 0,
                plan: self.plan,
                members: SmallVec::new(),
            };
            let from = out.len();
            nested.value(*child, depth, out)?;
            self.members
                .push((Cow::Owned(name.to_string()), from..out.len()));
        }
        Some(())
    }
}

/// The place of a member named `key` in an object of `node`, and whether serde erases its
/// `null`.
fn member(node: &Node, key: &str) -> (Child, bool) {
    match node.properties.binary_search_by(|p| (*p.name).cmp(key)) {
        Ok(i) => (node.properties[i].child, node.properties[i].erases_null),
        Err(_) => (node.additional, false),
    }
}

/// The schema a value must follow: `$ref`s followed, and of an `Option`'s
/// `anyOf: [T, {"type": "null"}]` the `T`. `None` when there is no single one.
fn resolve<'s>(schema: &'s Value, root: &'s Value) -> Option<&'s Value> {
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
fn allows_null(schema: &Value, root: &Value, depth: usize) -> bool {
    let Some(schema) = follow(schema, root) else {
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
fn default_of<'s>(property: &'s Value, root: &'s Value) -> Option<&'s Value> {
    let default = property
        .get("default")
        .or_else(|| follow(property, root).and_then(|p| p.get("default")))?;
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
    if let Some(integer) = plain_integer(unsigned) {
        if negative && integer != "0" {
            out.push(b'-');
        }
        out.extend_from_slice(integer.as_bytes());
        return Some(());
    }
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

/// `unsigned` when it is an integer written as JSON writes one (digits, no leading zero, no
/// fraction or exponent) that is its own canonical text: at most [`SPELLED_ZEROS`] zeros at
/// its end. Most numbers a model sends are; they need no rewriting.
fn plain_integer(unsigned: &str) -> Option<&str> {
    let bytes = unsigned.as_bytes();
    let plain = match bytes {
        [b'0'] => true,
        [b'1'..=b'9', rest @ ..] => rest.iter().all(u8::is_ascii_digit),
        _ => false,
    };
    let zeros = bytes.iter().rev().take_while(|&&b| b == b'0').count();
    (plain && (zeros as i64) <= SPELLED_ZEROS).then_some(unsigned)
}

/// A string [`Scanner::string`] read: a borrowed one had no escape and no control byte (it
/// would have been refused), so it is its own text between quotes.
#[allow(
    clippy::ptr_arg,
    reason = "the variant is what it reads: a borrowed string needs no escape"
)]
fn write_text(s: &Cow<'_, str>, out: &mut Vec<u8>) {
    match s {
        Cow::Borrowed(s) => {
            out.push(b'"');
            out.extend_from_slice(s.as_bytes());
            out.push(b'"');
        }
        Cow::Owned(s) => write_string(s, out),
    }
}

fn write_string(s: &str, out: &mut Vec<u8>) {
    // Most strings need no escape: serde_json escapes exactly `"`, `\` and the controls below
    // U+0020, so such a string is its own text between quotes.
    if !s.bytes().any(needs_escape) {
        out.push(b'"');
        out.extend_from_slice(s.as_bytes());
        out.push(b'"');
        return;
    }
    // serde_json's escaping is deterministic: the same string always gives the same text.
    if serde_json::to_writer(&mut *out, s).is_err() {
        // Writing into a Vec cannot fail; keep the content significant all the same.
        out.extend_from_slice(s.as_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_integer_is_its_own_text_only_as_json_writes_it_and_with_its_zeros_spelled_out() {
        assert_eq!(plain_integer("0"), Some("0"));
        assert_eq!(plain_integer("7"), Some("7"));
        assert_eq!(plain_integer("120"), Some("120"));
        let forty = format!("1{}", "0".repeat(40));
        assert_eq!(plain_integer(&forty), Some(forty.as_str()));
        // These go to the general writer, which spells them its own way.
        assert_eq!(plain_integer(&format!("{forty}0")), None);
        assert_eq!(plain_integer("007"), None);
        assert_eq!(plain_integer("00"), None);
        assert_eq!(plain_integer("1.5"), None);
        assert_eq!(plain_integer("1e3"), None);
        assert_eq!(plain_integer("-1"), None);
        assert_eq!(plain_integer(""), None);
    }
}
