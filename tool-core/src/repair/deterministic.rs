//! The deterministic rules: mechanical slips in a model's arguments fixed without a model round
//! trip, using only the text and the tool's input schema.
//!
//! Each rule fixes one kind of slip that a JSON parser or the schema rejects, and only when the
//! fix is unambiguous: the text stage fixes the syntax (a code fence or prose around the one
//! object, trailing commas, single quotes, unquoted keys, an object sent as a JSON string); the
//! value stage walks the parsed arguments beside the schema and fixes a value only where the
//! schema says what it must be (`"2"` for an integer only when the whole string is that
//! integer, `"true"` only for a boolean, one value for an array of that type, `null` for a
//! field the schema lets the model leave out). No rule matches a near-miss tool name, invents a
//! value or drops a field the model sent; renaming an argument (its case or underscores) is
//! a rule of its own, off unless switched on. The registry validates the result again, whole,
//! and runs the call only if it passes.

use std::borrow::Cow;

use serde::de::{MapAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::outcome::{ErrorKind, Failure, Fix, Fixes};

/// Nesting the value stage follows; deeper values are left as they are (the typed parse has a
/// limit of its own).
const MAX_DEPTH: usize = 64;

/// The deterministic repair rules, each switchable. The default has every rule on except
/// [`Fix::KeyCase`], which renames an argument and so must be asked for.
///
/// ```
/// use serde_json::json;
/// use toolwright::repair::Fix;
/// use toolwright::repair::DeterministicRepair;
///
/// let schema = json!({
///     "type": "object",
///     "properties": {"query": {"type": "string"}, "max_results": {"type": "integer"}},
///     "required": ["query", "max_results"],
///     "additionalProperties": false
/// });
/// let rules = DeterministicRepair::default();
/// let repaired = rules.repair(&schema, "```json\n{\"query\": \"ada\", \"max_results\": \"5\",}\n```").unwrap();
/// assert_eq!(repaired.text(), r#"{"query":"ada","max_results":5}"#);
/// assert_eq!(repaired.fixes().to_string(), "code_fence,trailing_comma,number_from_string");
///
/// // Only where the whole string is the number: nothing to do here.
/// assert!(rules.repair(&schema, r#"{"query": "ada", "max_results": "5 please"}"#).is_none());
/// // Renaming is opt-in.
/// assert!(rules.repair(&schema, r#"{"query": "ada", "maxResults": 5}"#).is_none());
/// let renaming = DeterministicRepair::default().rule(Fix::KeyCase, true);
/// assert_eq!(renaming.repair(&schema, r#"{"query": "ada", "maxResults": 5}"#).unwrap().text(), r#"{"query":"ada","max_results":5}"#);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeterministicRepair {
    rules: Fixes,
}

impl Default for DeterministicRepair {
    fn default() -> Self {
        DeterministicRepair {
            rules: Fix::ALL
                .iter()
                .copied()
                .filter(|f| !matches!(f, Fix::KeyCase | Fix::Model))
                .collect(),
        }
    }
}

/// Arguments the rules fixed: the new text and the rules that changed something.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Repaired {
    text: String,
    fixes: Fixes,
}

impl Repaired {
    /// The repaired argument text (compact JSON).
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The rules that changed something, never empty.
    pub fn fixes(&self) -> Fixes {
        self.fixes
    }

    /// The text, taken.
    pub fn into_text(self) -> String {
        self.text
    }
}

/// Violation rules no deterministic rule can fix: trying the rules on such a failure is
/// skipped, so a call that fails on a bound costs nothing more.
const UNFIXABLE: &[&str] = &[
    "range",
    "length",
    "pattern",
    "required",
    "custom",
    "duplicate",
];

impl DeterministicRepair {
    /// Every rule on except [`Fix::KeyCase`] (the default).
    pub fn new() -> Self {
        DeterministicRepair::default()
    }

    /// No rule on; switch the ones you want on with [`DeterministicRepair::rule`].
    pub fn none() -> Self {
        DeterministicRepair {
            rules: Fixes::EMPTY,
        }
    }

    /// Switches one rule on or off. [`Fix::Model`] is not a rule and is ignored.
    #[must_use]
    pub fn rule(mut self, fix: Fix, on: bool) -> Self {
        if fix != Fix::Model {
            self.rules = if on {
                self.rules.with(fix)
            } else {
                self.rules.without(fix)
            };
        }
        self
    }

    /// The rules switched on.
    pub fn rules(&self) -> Fixes {
        self.rules
    }

    /// Whether any rule could fix this failure: a failure of syntax, or of a value's type (or,
    /// with [`Fix::KeyCase`], of an argument's name). A bound, a pattern or a missing field is
    /// never a matter for these rules.
    pub(crate) fn may_fix(&self, failure: &Failure) -> bool {
        match failure.kind {
            ErrorKind::InvalidJson => !self.rules.is_empty(),
            ErrorKind::SchemaMismatch | ErrorKind::UnknownArgument => {
                failure.violations.iter().any(|v| match v.rule {
                    "unknown_argument" => self.rules.contains(Fix::KeyCase),
                    rule => !UNFIXABLE.contains(&rule),
                })
            }
            _ => false,
        }
    }

    /// The arguments with every applicable rule applied, or `None` when no rule changes
    /// anything (or the text cannot be read even then). The result still has to be validated:
    /// a rule fixes one slip, not every problem of a call.
    pub fn repair(&self, schema: &Value, text: &str) -> Option<Repaired> {
        let mut fixes = Fixes::EMPTY;
        let trimmed = text.trim();
        let probe = Probe {
            rules: self.rules,
            root: schema,
        };
        let mut value = match serde_json::from_str::<Members<'_>>(trimmed) {
            // An object as it is: build it only if a rule could change it.
            Ok(members) => {
                let root = wanted(schema, schema);
                if !(root.types.known && probe.members(&members, root.schema, 0)) {
                    return None;
                }
                serde_json::from_str::<Value>(trimmed).ok()?
            }
            // Perhaps an object sent as a string.
            Err(_) if trimmed.starts_with('"') => serde_json::from_str::<Value>(trimmed).ok()?,
            Err(_) => self.read(trimmed, &mut fixes)?,
        };
        if let Value::String(inner) = &value {
            if !self.rules.contains(Fix::DoubleEncoded) {
                return None;
            }
            value = match serde_json::from_str::<Value>(inner.trim()) {
                Ok(object @ Value::Object(_)) => object,
                _ => return None,
            };
            fixes.insert(Fix::DoubleEncoded);
        }
        if !value.is_object() {
            return None;
        }
        Values {
            rules: self.rules,
            root: schema,
            fixes: &mut fixes,
        }
        .fix(&mut value, schema, 0);
        if fixes.is_empty() {
            return None;
        }
        Some(Repaired {
            text: value.to_string(),
            fixes,
        })
    }

    /// The text stage, for text that is not JSON as it is: the one JSON value in it, its
    /// syntax fixed where the rules allow.
    ///
    /// Whether a text parses is asked with `IgnoredAny`, which builds nothing: only the text
    /// that parses is read into a `Value`, once.
    fn read(&self, trimmed: &str, fixes: &mut Fixes) -> Option<Value> {
        let candidate = self.unwrap(trimmed, fixes)?;
        if candidate.len() != trimmed.len() && parses(candidate) {
            return serde_json::from_str::<Value>(candidate).ok();
        }
        let fixed = Syntax::new(self.rules, candidate.len()).fix(candidate)?;
        // No syntax rule changed anything: the text is as broken as it was.
        if fixed.fixes.is_empty() {
            return None;
        }
        let value = serde_json::from_str::<Value>(&fixed.text).ok()?;
        *fixes = fixes.with_all(fixed.fixes);
        Some(value)
    }

    /// The JSON inside a code fence, or the one object inside prose; the text itself when it
    /// is neither.
    fn unwrap<'t>(&self, text: &'t str, fixes: &mut Fixes) -> Option<&'t str> {
        if let Some((before, inner, after)) = fenced(text) {
            if !self.rules.contains(Fix::CodeFence) {
                return None;
            }
            fixes.insert(Fix::CodeFence);
            if !(before.trim().is_empty() && after.trim().is_empty()) {
                if !self.rules.contains(Fix::SurroundingProse) {
                    return None;
                }
                fixes.insert(Fix::SurroundingProse);
            }
            return Some(inner.trim());
        }
        // An object, or what is not an object at all (an array stays an array, and is refused).
        if (text.starts_with('{') && text.ends_with('}')) || text.starts_with(['[', '"']) {
            return Some(text);
        }
        // Prose around one object: from the first `{` to the last `}`. Two objects, or braces
        // in the prose, leave text that does not parse: ambiguous, so nothing is repaired.
        let start = text.find('{')?;
        let end = text.rfind('}')?;
        if end <= start || !self.rules.contains(Fix::SurroundingProse) {
            return None;
        }
        fixes.insert(Fix::SurroundingProse);
        Some(&text[start..=end])
    }
}

impl Fixes {
    fn with_all(self, other: Fixes) -> Fixes {
        other.iter().fold(self, Fixes::with)
    }
}

/// Whether `text` is one JSON value, without building it.
fn parses(text: &str) -> bool {
    serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok()
}

/// The one Markdown code fence in `text`: what comes before it, inside it (without the info
/// string such as `json`), and after it. `None` without a fence, or with more than one.
fn fenced(text: &str) -> Option<(&str, &str, &str)> {
    let open = text.find("```")?;
    let rest = &text[open + 3..];
    // The info string: a word such as `json` up to the end of the line.
    let info = rest
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-'))
        .unwrap_or(rest.len());
    let body = &rest[info..];
    let close = body.find("```")?;
    let after = &body[close + 3..];
    if after.contains("```") {
        return None;
    }
    Some((&text[..open], &body[..close], after))
}

/// The syntax rules as one pass over the text: trailing commas dropped, single-quoted strings
/// and unquoted keys quoted. Strings in double quotes are copied untouched.
struct Syntax {
    rules: Fixes,
    out: String,
    fixes: Fixes,
    /// Open containers: `true` for an object.
    stack: Vec<bool>,
    /// The last significant character written outside a string.
    last: u8,
}

struct Fixed {
    text: String,
    fixes: Fixes,
}

impl Syntax {
    fn new(rules: Fixes, len: usize) -> Syntax {
        Syntax {
            rules,
            out: String::with_capacity(len + 16),
            fixes: Fixes::EMPTY,
            stack: Vec::new(),
            last: 0,
        }
    }

    /// A key may start here: inside an object, after its `{` or a `,`.
    fn at_key(&self) -> bool {
        self.stack.last() == Some(&true) && matches!(self.last, b'{' | b',')
    }

    /// A value or key may start here.
    fn at_token(&self) -> bool {
        matches!(self.last, 0 | b'{' | b'[' | b',' | b':')
    }

    fn fix(mut self, text: &str) -> Option<Fixed> {
        let bytes = text.as_bytes();
        let mut i = 0;
        while i < bytes.len() {
            let b = bytes[i];
            match b {
                b'"' => {
                    let end = string_end(bytes, i)?;
                    self.out.push_str(&text[i..end]);
                    self.last = b'"';
                    i = end;
                    continue;
                }
                b'\'' if self.at_token() => {
                    if !self.rules.contains(Fix::SingleQuotes) {
                        return None;
                    }
                    i = self.single_quoted(text, i)?;
                    self.fixes.insert(Fix::SingleQuotes);
                    continue;
                }
                b',' => {
                    let next = bytes[i + 1..]
                        .iter()
                        .find(|c| !c.is_ascii_whitespace())
                        .copied();
                    if matches!(next, Some(b'}' | b']')) {
                        if !self.rules.contains(Fix::TrailingComma) {
                            return None;
                        }
                        self.fixes.insert(Fix::TrailingComma);
                        i += 1;
                        continue;
                    }
                }
                b'{' | b'[' => self.stack.push(b == b'{'),
                b'}' | b']' => {
                    self.stack.pop();
                }
                c if (c.is_ascii_alphabetic() || c == b'_' || c == b'$') && self.at_key() => {
                    let end = bytes[i..]
                        .iter()
                        .position(|c| {
                            !(c.is_ascii_alphanumeric() || matches!(c, b'_' | b'$' | b'-'))
                        })
                        .map_or(bytes.len(), |n| i + n);
                    let colon = bytes[end..]
                        .iter()
                        .find(|c| !c.is_ascii_whitespace())
                        .copied();
                    if colon == Some(b':') {
                        if !self.rules.contains(Fix::UnquotedKeys) {
                            return None;
                        }
                        self.fixes.insert(Fix::UnquotedKeys);
                        self.out.push('"');
                        self.out.push_str(&text[i..end]);
                        self.out.push('"');
                        self.last = b'"';
                        i = end;
                        continue;
                    }
                }
                _ => {}
            }
            // Multi-byte characters outside strings are not JSON anyway; copy them whole so the
            // output stays valid UTF-8 and let the parser refuse them.
            let len = utf8_len(b);
            self.out.push_str(text.get(i..i + len)?);
            if !b.is_ascii_whitespace() {
                self.last = b;
            }
            i += len;
        }
        Some(Fixed {
            text: self.out,
            fixes: self.fixes,
        })
    }

    /// Writes the single-quoted string starting at `start` in double quotes; returns where it
    /// ends. A `'` closes it only where a string can end (before `,`, `:`, `}`, `]` or the end),
    /// so an apostrophe inside ("it's") stays; a string that never closes is not repaired.
    fn single_quoted(&mut self, text: &str, start: usize) -> Option<usize> {
        let bytes = text.as_bytes();
        self.out.push('"');
        let mut i = start + 1;
        while i < bytes.len() {
            match bytes[i] {
                b'\\' if bytes.get(i + 1) == Some(&b'\'') => {
                    self.out.push('\'');
                    i += 2;
                }
                b'\\' => {
                    self.out.push_str(text.get(i..i + 2)?);
                    i += 2;
                }
                b'"' => {
                    self.out.push_str("\\\"");
                    i += 1;
                }
                b'\'' => {
                    let next = bytes[i + 1..]
                        .iter()
                        .find(|c| !c.is_ascii_whitespace())
                        .copied();
                    if matches!(next, None | Some(b',' | b':' | b'}' | b']')) {
                        self.out.push('"');
                        self.last = b'"';
                        return Some(i + 1);
                    }
                    self.out.push('\'');
                    i += 1;
                }
                b => {
                    let len = utf8_len(b);
                    self.out.push_str(text.get(i..i + len)?);
                    i += len;
                }
            }
        }
        None
    }
}

/// Where the double-quoted string starting at `start` ends (after its closing quote).
fn string_end(bytes: &[u8], start: usize) -> Option<usize> {
    let mut i = start + 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'"' => return Some(i + 1),
            _ => i += 1,
        }
    }
    None
}

fn utf8_len(first: u8) -> usize {
    match first {
        0xF0..=0xFF => 4,
        0xE0..=0xEF => 3,
        0xC0..=0xDF => 2,
        _ => 1,
    }
}

/// A cheap look, before any `Value` is built, at whether a rule could change arguments that
/// parse as they are: the text is read as borrowed raw pieces beside the schema, and only a
/// piece a rule could fix (a string where the schema wants no string, `null` for an optional
/// field, one value where an array is wanted, an unknown key with `key_case` on) sends the
/// arguments to the value stage. Most type errors a rule cannot fix (`"twelve"` for an
/// integer) cost one pass over the text and no allocation per value.
struct Probe<'s> {
    rules: Fixes,
    root: &'s Value,
}

/// An object's members as borrowed raw values, in order.
struct Members<'a>(Vec<(Cow<'a, str>, &'a RawValue)>);

impl<'de> Deserialize<'de> for Members<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> Visitor<'de> for Visit {
            type Value = Members<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<Members<'de>, M::Error> {
                let mut members = Vec::new();
                while let Some(key) = map.next_key::<Key<'de>>()? {
                    members.push((key.0, map.next_value::<&'de RawValue>()?));
                }
                Ok(Members(members))
            }
        }
        deserializer.deserialize_map(Visit)
    }
}

/// A key, borrowed when it has no escapes.
struct Key<'a>(Cow<'a, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> Visitor<'de> for Visit {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a key")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v.to_owned())))
            }
        }
        deserializer.deserialize_str(Visit)
    }
}

impl<'s> Probe<'s> {
    fn fixable(&self, raw: &RawValue, schema: &'s Value, depth: usize) -> bool {
        self.fixable_as(raw, &wanted(self.root, schema), depth)
    }

    fn fixable_as(&self, raw: &RawValue, want: &Wanted<'s>, depth: usize) -> bool {
        let types = want.types;
        if !types.known || depth > MAX_DEPTH {
            return false;
        }
        let text = raw.get();
        let wrap = types.array && self.rules.contains(Fix::SingleToArray);
        match text.as_bytes().first() {
            Some(b'{') if types.object => serde_json::from_str::<Members<'_>>(text)
                .is_ok_and(|members| self.members(&members, want.schema, depth)),
            Some(b'[') if types.array => {
                let Some(items) = want.schema.get("items") else {
                    return false;
                };
                let items = wanted(self.root, items);
                serde_json::from_str::<Vec<&RawValue>>(text).is_ok_and(|all| {
                    all.iter()
                        .any(|item| self.fixable_as(item, &items, depth + 1))
                })
            }
            Some(b'"') if types.string => false,
            Some(b'"') => {
                let Ok(inner) = serde_json::from_str::<Cow<'_, str>>(text) else {
                    return false;
                };
                let number = (types.integer || types.number)
                    && self.rules.contains(Fix::NumberFromString)
                    && inner
                        .bytes()
                        .next()
                        .is_some_and(|b| b == b'-' || b.is_ascii_digit())
                    && inner.bytes().last().is_some_and(|b| b.is_ascii_digit());
                let flag = types.boolean
                    && self.rules.contains(Fix::BoolFromString)
                    && matches!(&*inner, "true" | "false");
                number || flag || wrap
            }
            Some(b'n') => false,
            Some(b'{' | b'[') => wrap,
            _ => wrap && !serde_json::from_str(text).is_ok_and(|v| types.accepts(&v)),
        }
    }

    /// Whether a rule could change one of an object's members.
    fn members(&self, members: &Members<'_>, schema: &'s Value, depth: usize) -> bool {
        let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
            return false;
        };
        let required = |key: &str| {
            schema
                .get("required")
                .and_then(Value::as_array)
                .is_some_and(|r| r.iter().any(|k| k.as_str() == Some(key)))
        };
        members
            .0
            .iter()
            .any(|(key, raw)| match properties.get(key.as_ref()) {
                None => self.rules.contains(Fix::KeyCase),
                Some(property) if raw.get() == "null" => {
                    let w = wanted(self.root, property);
                    self.rules.contains(Fix::NullOptional)
                        && !required(key)
                        && w.types.known
                        && !w.types.null
                }
                Some(property) => self.fixable(raw, property, depth + 1),
            })
    }
}

/// The value stage: the parsed arguments walked beside the schema.
struct Values<'s, 'f> {
    rules: Fixes,
    root: &'s Value,
    fixes: &'f mut Fixes,
}

/// What a (sub)schema says a value must be, after `$ref` and a nullable `anyOf` are resolved.
struct Wanted<'s> {
    schema: &'s Value,
    types: Types,
}

#[derive(Clone, Copy, Default)]
struct Types {
    known: bool,
    null: bool,
    boolean: bool,
    integer: bool,
    number: bool,
    string: bool,
    array: bool,
    object: bool,
}

impl Types {
    fn of(schema: &Value) -> Types {
        let mut types = Types::default();
        let mut add = |name: &str| {
            types.known = true;
            match name {
                "null" => types.null = true,
                "boolean" => types.boolean = true,
                "integer" => types.integer = true,
                "number" => types.number = true,
                "string" => types.string = true,
                "array" => types.array = true,
                "object" => types.object = true,
                _ => {}
            }
        };
        match schema.get("type") {
            Some(Value::String(name)) => add(name),
            Some(Value::Array(names)) => names.iter().filter_map(Value::as_str).for_each(add),
            _ => {}
        }
        if !types.known && schema.get("properties").is_some() {
            types.known = true;
            types.object = true;
        }
        types
    }

    /// Whether a value of this JSON type is accepted (only when the schema names types).
    fn accepts(self, value: &Value) -> bool {
        match value {
            Value::Null => self.null,
            Value::Bool(_) => self.boolean,
            Value::Number(n) => self.number || (self.integer && (n.is_i64() || n.is_u64())),
            Value::String(_) => self.string,
            Value::Array(_) => self.array,
            Value::Object(_) => self.object,
        }
    }
}

/// The schema behind a `$ref` into the root's `$defs` (or `definitions`).
fn resolve<'s>(root: &'s Value, schema: &'s Value) -> &'s Value {
    let mut schema = schema;
    for _ in 0..8 {
        let Some(reference) = schema.get("$ref").and_then(Value::as_str) else {
            break;
        };
        let target = ["#/$defs/", "#/definitions/"].iter().find_map(|prefix| {
            let name = reference.strip_prefix(prefix)?;
            let defs = &prefix[2..prefix.len() - 1];
            root.get(defs)?.get(name)
        });
        match target {
            Some(target) => schema = target,
            None => break,
        }
    }
    schema
}

/// What `schema` wants: its own types, or those of the one non-null branch of an `anyOf`
/// / `oneOf` (how an optional field of a named type is written), `null` allowed then.
fn wanted<'s>(root: &'s Value, schema: &'s Value) -> Wanted<'s> {
    let schema = resolve(root, schema);
    let mut types = Types::of(schema);
    if types.known {
        return Wanted { schema, types };
    }
    let branches = schema
        .get("anyOf")
        .or_else(|| schema.get("oneOf"))
        .and_then(Value::as_array);
    if let Some(branches) = branches {
        let mut non_null = branches.iter().filter(|b| {
            let t = Types::of(b);
            !(t.known
                && t.null
                && !(t.boolean || t.integer || t.number || t.string || t.array || t.object))
        });
        let null = branches.len() > 1;
        if let (Some(only), None) = (non_null.next(), non_null.next()) {
            let mut inner = wanted(root, only);
            inner.types.null |= null;
            return inner;
        }
    }
    types.known = false;
    Wanted { schema, types }
}

impl<'s> Values<'s, '_> {
    fn wanted(&self, schema: &'s Value) -> Wanted<'s> {
        wanted(self.root, schema)
    }

    fn fix(&mut self, value: &mut Value, schema: &'s Value, depth: usize) {
        if depth > MAX_DEPTH {
            return;
        }
        let wanted = self.wanted(schema);
        let types = wanted.types;
        if !types.known {
            return;
        }
        // Unquoted before anything is wrapped: `"1"` where an integer or a list is wanted is
        // the integer, not a list of it.
        if let Value::String(text) = value {
            if !types.string {
                if let Some(fixed) = self.unquoted(text, types) {
                    *value = fixed;
                    return;
                }
            }
        }
        if types.array && !types.accepts(value) && !value.is_null() {
            self.wrap(value, wanted.schema, depth);
            return;
        }
        match value {
            Value::Object(map) if types.object => self.fix_object(map, wanted.schema, depth),
            Value::Array(items) if types.array => {
                if let Some(items_schema) = wanted.schema.get("items") {
                    for item in items {
                        self.fix(item, items_schema, depth + 1);
                    }
                }
            }
            _ => {}
        }
    }

    /// `"2"` for a number, `"true"` for a boolean: only the exact JSON text of that value.
    fn unquoted(&mut self, text: &str, types: Types) -> Option<Value> {
        if (types.integer || types.number) && self.rules.contains(Fix::NumberFromString) {
            let exact = text
                .bytes()
                .next()
                .is_some_and(|b| b == b'-' || b.is_ascii_digit())
                && text.bytes().last().is_some_and(|b| b.is_ascii_digit());
            if exact {
                if let Ok(Value::Number(n)) = serde_json::from_str::<Value>(text) {
                    if types.number || n.is_i64() || n.is_u64() {
                        self.fixes.insert(Fix::NumberFromString);
                        return Some(Value::Number(n));
                    }
                }
            }
        }
        if types.boolean && self.rules.contains(Fix::BoolFromString) {
            let flag = match text {
                "true" => Some(true),
                "false" => Some(false),
                _ => None,
            };
            if let Some(flag) = flag {
                self.fixes.insert(Fix::BoolFromString);
                return Some(Value::Bool(flag));
            }
        }
        None
    }

    /// One value where an array is wanted: `[value]`, when the value (fixed as an item) is of
    /// the items' type.
    fn wrap(&mut self, value: &mut Value, schema: &'s Value, depth: usize) {
        if !self.rules.contains(Fix::SingleToArray) {
            return;
        }
        let Some(items_schema) = schema.get("items") else {
            return;
        };
        let before = *self.fixes;
        let mut item = value.clone();
        self.fix(&mut item, items_schema, depth + 1);
        let item_types = self.wanted(items_schema).types;
        if item_types.known && item_types.accepts(&item) {
            *value = Value::Array(vec![item]);
            self.fixes.insert(Fix::SingleToArray);
        } else {
            *self.fixes = before;
        }
    }

    fn fix_object(&mut self, map: &mut Map<String, Value>, schema: &'s Value, depth: usize) {
        let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
            return;
        };
        if self.rules.contains(Fix::KeyCase) {
            self.rename(map, properties, schema);
        }
        let required = |key: &str| {
            schema
                .get("required")
                .and_then(Value::as_array)
                .is_some_and(|r| r.iter().any(|k| k.as_str() == Some(key)))
        };
        if self.rules.contains(Fix::NullOptional) {
            let absent: Vec<String> = map
                .iter()
                .filter(|(key, value)| {
                    value.is_null()
                        && !required(key)
                        && properties.get(key.as_str()).is_some_and(|p| {
                            let w = self.wanted(p);
                            w.types.known && !w.types.null
                        })
                })
                .map(|(key, _)| key.clone())
                .collect();
            for key in absent {
                map.shift_remove(&key);
                self.fixes.insert(Fix::NullOptional);
            }
        }
        for (key, value) in map.iter_mut() {
            if let Some(property) = properties.get(key.as_str()) {
                self.fix(value, property, depth + 1);
            }
        }
    }

    /// Unknown keys that are a case or underscore variant of exactly one known, absent key,
    /// renamed to it, when the schema refuses unknown keys.
    fn rename(
        &mut self,
        map: &mut Map<String, Value>,
        properties: &Map<String, Value>,
        schema: &Value,
    ) {
        if schema.get("additionalProperties") != Some(&Value::Bool(false)) {
            return;
        }
        let unknown: Vec<String> = map
            .keys()
            .filter(|k| !properties.contains_key(k.as_str()))
            .cloned()
            .collect();
        for key in unknown {
            let folded = fold(&key);
            let mut matches = properties
                .keys()
                .filter(|known| fold(known) == folded && !map.contains_key(known.as_str()));
            let (Some(known), None) = (matches.next(), matches.next()) else {
                continue;
            };
            // Two unknown keys folding to the same name are ambiguous: leave both.
            let rivals = map
                .keys()
                .filter(|k| *k != &key && fold(k) == folded)
                .count();
            if rivals > 0 {
                continue;
            }
            let known = known.clone();
            if let Some(value) = map.shift_remove(&key) {
                map.insert(known, value);
                self.fixes.insert(Fix::KeyCase);
            }
        }
    }
}

/// A name without case, `_` or `-`: `maxResults`, `MAX_RESULTS` and `max-results` fold alike.
fn fold(name: &str) -> String {
    name.chars()
        .filter(|c| !matches!(c, '_' | '-'))
        .flat_map(char::to_lowercase)
        .collect()
}

#[cfg(test)]
mod tests;
