//! The report of a failed parse, read straight from the argument text.
//!
//! When the typed parse fails, the model is owed every problem with its path. For the schemas
//! toolwright writes (objects of typed fields, `$ref`s to their definitions, an optional value
//! as an `anyOf` with `null`, an enum as `enum` or as a `oneOf` of constants, and the bounds,
//! lengths and patterns `#[arg]` declares), a [`Plan`] checks the text in one pass of
//! serde_json's reader: no `serde_json::Value` is built, no general validator's errors are
//! made and turned into violations, and no second walk bounds the cost, since the pass is
//! linear in the text (each value meets one node of the plan, a node checks a bounded number
//! of things, and a pattern runs on the `regex` crate's linear-time engine).
//!
//! A schema with anything else (`allOf`, a general `anyOf` or `oneOf`, `if`, a `$ref` beside
//! assertions, a long `enum`, a dialect that asserts `format`) has no plan, and the general
//! validator reports it as before.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;

use regex::Regex;
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

use super::words::{
    article, child, listed, must_be_violation, out_of_range, required_violation, shown_pattern,
    shown_value, type_violation, unknown_violation, valid_arguments,
};
use super::{
    counted, length_expected, preview_bool, preview_string, push_pointer_token,
    MAX_REPORTED_VIOLATIONS,
};
use crate::outcome::Violation;
use crate::tool::schema::IntegerType;
use crate::wording::{concat, push_number};

/// The most values an `enum` (or a `oneOf` of constants) may list for a plan: each value
/// checked is compared with each of them.
const MAX_ALLOWED: usize = 64;

/// The most properties or required names one object may have for a plan: each member's name is
/// looked up among them, and the required ones are tracked in one word.
const MAX_PROPERTIES: usize = 64;

/// The longest chain of `$ref`s and optionals a value may follow to the node that checks it.
const MAX_CHAIN: usize = 16;

/// JSON types, as bits.
const NULL: u8 = 1;
const BOOLEAN: u8 = 2;
const INTEGER: u8 = 4;
const NUMBER: u8 = 8;
const STRING: u8 = 16;
const ARRAY: u8 = 32;
const OBJECT: u8 = 64;
const ANY: u8 = 0x7f;

/// A schema compiled for reports.
pub(crate) struct Plan {
    nodes: Vec<Node>,
    /// The node of the arguments object.
    root: usize,
}

enum Node {
    /// A `$ref` with annotations beside it: the target checks the value.
    Alias(usize),
    /// `anyOf: [X, {"type": "null"}]`: `null`, or what X accepts.
    OrNull(usize),
    /// What the schema asserts of the value itself.
    Check(Box<Checks>),
}

#[derive(Default)]
struct Checks {
    /// `type`, as bits, and what a value of another type is told it should be ("a string",
    /// "integer or null"), written once with the plan.
    types: u8,
    type_words: String,
    min_length: Option<u64>,
    max_length: Option<u64>,
    /// `pattern`: its words ("a string matching `^A[0-9]{4}$`"), written once, and its regex.
    pattern: Option<(String, Regex)>,
    minimum: Option<(Num, String)>,
    maximum: Option<(Num, String)>,
    exclusive_minimum: Option<(Num, String)>,
    exclusive_maximum: Option<(Num, String)>,
    /// The integer type a `format` names, for bounds that are that type's range.
    integer: Option<IntegerType>,
    items: Option<usize>,
    min_items: Option<u64>,
    max_items: Option<u64>,
    properties: Vec<(String, usize)>,
    required: Vec<String>,
    additional: Additional,
    /// `enum` or `const`, or the constants of a `oneOf`: the values allowed, all scalars, and
    /// the words that list them.
    allowed: Option<(Vec<Value>, String)>,
    /// For the root: what an unknown argument is told.
    valid: String,
}

impl Checks {
    /// Checks of nothing: every value passes.
    fn any() -> Checks {
        Checks {
            types: ANY,
            ..Checks::default()
        }
    }
}

#[derive(Default, Clone, Copy)]
enum Additional {
    #[default]
    Any,
    Deny,
    Node(usize),
}

/// A number of the text or of the schema.
#[derive(Clone, Copy)]
enum Num {
    U(u64),
    I(i64),
    F(f64),
}

impl Num {
    fn of(n: &Number) -> Option<Num> {
        n.as_u64()
            .map(Num::U)
            .or_else(|| n.as_i64().map(Num::I))
            .or_else(|| n.as_f64().map(Num::F))
    }

    fn integer(self) -> Option<i128> {
        match self {
            Num::U(u) => Some(i128::from(u)),
            Num::I(i) => Some(i128::from(i)),
            Num::F(_) => None,
        }
    }

    fn float(self) -> f64 {
        match self {
            Num::U(u) => u as f64,
            Num::I(i) => i as f64,
            Num::F(f) => f,
        }
    }

    fn cmp(self, other: Num) -> Option<std::cmp::Ordering> {
        match (self.integer(), other.integer()) {
            (Some(a), Some(b)) => Some(a.cmp(&b)),
            _ => self.float().partial_cmp(&other.float()),
        }
    }

    /// As serde_json writes it.
    fn text(self) -> String {
        match self {
            Num::U(u) => u.to_string(),
            Num::I(i) => i.to_string(),
            Num::F(f) => Number::from_f64(f).map_or_else(|| f.to_string(), |n| n.to_string()),
        }
    }

    fn is_whole(self) -> bool {
        match self {
            Num::F(f) => f.fract() == 0.0,
            _ => true,
        }
    }
}

impl Plan {
    /// The plan of `schema`, when every keyword it uses is one a plan checks as the general
    /// validator does.
    pub(crate) fn new(schema: &Value) -> Option<Plan> {
        let root = schema.as_object()?;
        if let Some(dialect) = root.get("$schema") {
            if dialect.as_str() != Some("https://json-schema.org/draft/2020-12/schema") {
                return None;
            }
        }
        let mut build = Build {
            root: schema,
            nodes: Vec::new(),
            seen: HashMap::new(),
        };
        let top = build.node(schema)?;
        let mut plan = Plan {
            nodes: build.nodes,
            root: 0,
        };
        // Every chain of references ends within a few steps (a reference to itself never does).
        for id in 0..plan.nodes.len() {
            let mut at = id;
            for step in 0.. {
                match plan.nodes[at] {
                    Node::Alias(next) | Node::OrNull(next) => at = next,
                    Node::Check(_) => break,
                }
                if step == MAX_CHAIN {
                    return None;
                }
            }
        }
        plan.root = plan.resolve(top, false)?;
        if let Node::Check(checks) = &mut plan.nodes[plan.root] {
            let mut names: Vec<String> = checks.properties.iter().map(|p| p.0.clone()).collect();
            names.sort();
            checks.valid = valid_arguments(&names);
        }
        Some(plan)
    }

    /// The node that checks a value reaching `id`, `None` for a `null` an optional accepts.
    fn resolve(&self, mut id: usize, null: bool) -> Option<usize> {
        loop {
            match self.nodes[id] {
                Node::Alias(next) => id = next,
                Node::OrNull(_) if null => return None,
                Node::OrNull(next) => id = next,
                Node::Check(_) => return Some(id),
            }
        }
    }

    /// Every problem in `text` (a JSON object), in the order they occur, and whether more were
    /// found than a report lists. `Err` with serde_json's error when the text is not JSON.
    pub(crate) fn report(&self, text: &str) -> Result<Found, serde_json::Error> {
        let mut walk = Walk {
            path: String::with_capacity(64),
            found: Vec::new(),
            truncated: false,
        };
        let mut reader = serde_json::Deserializer::from_str(text);
        let read = Seed {
            plan: self,
            node: Some(self.root),
            walk: &mut walk,
        }
        .deserialize(&mut reader)
        .and_then(|()| reader.end());
        match read {
            Ok(()) => {}
            // Stopped on purpose: the report is full.
            Err(_) if walk.truncated => {}
            Err(e) => return Err(e),
        }
        Ok(Found {
            violations: walk.found,
            truncated: walk.truncated,
        })
    }
}

/// What a report found.
pub(crate) struct Found {
    pub(crate) violations: Vec<Violation>,
    pub(crate) truncated: bool,
}

struct Build<'a> {
    root: &'a Value,
    nodes: Vec<Node>,
    seen: HashMap<*const Value, usize>,
}

impl<'a> Build<'a> {
    fn node(&mut self, schema: &'a Value) -> Option<usize> {
        if let Some(&id) = self.seen.get(&(schema as *const Value)) {
            return Some(id);
        }
        let id = self.nodes.len();
        self.nodes.push(Node::Alias(id));
        self.seen.insert(schema as *const Value, id);
        let node = match schema {
            Value::Bool(true) => Node::Check(Box::new(Checks::any())),
            Value::Object(map) => self.object(map)?,
            _ => return None,
        };
        self.nodes[id] = node;
        Some(id)
    }

    fn target(&mut self, reference: &str) -> Option<usize> {
        let pointer = reference.strip_prefix('#')?;
        let target = self.root.pointer(pointer)?;
        self.node(target)
    }

    fn object(&mut self, map: &'a Map<String, Value>) -> Option<Node> {
        let assertions = map.keys().filter(|k| !is_annotation(k)).count();
        if let Some(reference) = map.get("$ref") {
            // A reference with nothing asserted beside it.
            return (assertions == 1)
                .then(|| self.target(reference.as_str()?))
                .flatten()
                .map(Node::Alias);
        }
        if let Some(Value::Array(branches)) = map.get("anyOf") {
            return match branches.as_slice() {
                [other, n] | [n, other] if is_null_schema(n) && assertions == 1 => {
                    Some(Node::OrNull(self.node(other)?))
                }
                _ => None,
            };
        }
        let mut checks = Checks::any();
        // `type`'s names, in alphabetical order for the message.
        let mut type_names: Vec<&'static str> = Vec::new();
        for (keyword, value) in map {
            match (keyword.as_str(), value) {
                (k, _) if is_annotation(k) => {}
                ("type", Value::String(t)) => {
                    let (bits, name) = type_bits(t)?;
                    checks.types = bits;
                    type_names = vec![name];
                }
                ("type", Value::Array(list)) => {
                    checks.types = 0;
                    for t in list {
                        let (bits, name) = type_bits(t.as_str()?)?;
                        checks.types |= bits;
                        type_names.push(name);
                    }
                    // Named in one order whatever the schema's, as the general validator does.
                    type_names.sort_unstable();
                    type_names.dedup();
                }
                ("minLength", n) => checks.min_length = Some(n.as_u64()?),
                ("maxLength", n) => checks.max_length = Some(n.as_u64()?),
                ("minItems", n) => checks.min_items = Some(n.as_u64()?),
                ("maxItems", n) => checks.max_items = Some(n.as_u64()?),
                ("pattern", Value::String(p)) => {
                    let translated = jsonschema_regex::to_rust_regex(p).ok()?;
                    let words = concat(&["a string matching ", &shown_pattern(p)]);
                    checks.pattern = Some((words, Regex::new(&translated).ok()?));
                }
                ("minimum", Value::Number(n)) => {
                    checks.minimum = Some((Num::of(n)?, n.to_string()))
                }
                ("maximum", Value::Number(n)) => {
                    checks.maximum = Some((Num::of(n)?, n.to_string()))
                }
                ("exclusiveMinimum", Value::Number(n)) => {
                    checks.exclusive_minimum = Some((Num::of(n)?, n.to_string()))
                }
                ("exclusiveMaximum", Value::Number(n)) => {
                    checks.exclusive_maximum = Some((Num::of(n)?, n.to_string()))
                }
                ("items", child) => checks.items = Some(self.node(child)?),
                ("properties", Value::Object(members)) => {
                    if members.len() > MAX_PROPERTIES {
                        return None;
                    }
                    for (name, child) in members {
                        let child = self.node(child)?;
                        checks.properties.push((name.clone(), child));
                    }
                }
                ("required", Value::Array(names)) => {
                    if names.len() > MAX_PROPERTIES {
                        return None;
                    }
                    for name in names {
                        let name = name.as_str()?.to_owned();
                        if checks.required.contains(&name) {
                            return None;
                        }
                        checks.required.push(name);
                    }
                }
                ("additionalProperties", Value::Bool(false)) => {
                    checks.additional = Additional::Deny
                }
                ("additionalProperties", child) => {
                    checks.additional = Additional::Node(self.node(child)?)
                }
                ("enum", Value::Array(values)) => checks.allowed = Some(allowed(values.clone())?),
                ("const", value) => checks.allowed = Some(allowed(vec![value.clone()])?),
                ("oneOf", Value::Array(branches)) => {
                    checks.allowed = Some(allowed(constants(branches)?)?)
                }
                _ => return None,
            }
        }
        checks.type_words = match type_names.as_slice() {
            [one] => article(one),
            many => many.join(" or "),
        };
        // `format` names an integer type whose range the bounds may be.
        checks.integer = map
            .get("format")
            .and_then(Value::as_str)
            .and_then(IntegerType::by_format);
        Some(Node::Check(Box::new(checks)))
    }
}

/// Whether `schema` is `{"type": "null"}`.
fn is_null_schema(schema: &Value) -> bool {
    schema.as_object().is_some_and(|map| {
        map.len() == 1 && map.get("type").and_then(Value::as_str) == Some("null")
    })
}

/// Keywords that assert nothing of the value (in draft 2020-12, without a dialect that
/// asserts formats): `format` is read for the integer type it names, never checked.
fn is_annotation(keyword: &str) -> bool {
    matches!(
        keyword,
        "description"
            | "title"
            | "default"
            | "examples"
            | "deprecated"
            | "readOnly"
            | "writeOnly"
            | "$comment"
            | "$schema"
            | "$id"
            | "$defs"
            | "definitions"
            | "format"
    )
}

fn type_bits(name: &str) -> Option<(u8, &'static str)> {
    Some(match name {
        "null" => (NULL, "null"),
        "boolean" => (BOOLEAN, "boolean"),
        "integer" => (INTEGER, "integer"),
        "number" => (NUMBER | INTEGER, "number"),
        "string" => (STRING, "string"),
        "array" => (ARRAY, "array"),
        "object" => (OBJECT, "object"),
        _ => return None,
    })
}

/// The values of a `oneOf` whose every branch is one constant (with its type and
/// annotations): an enum whose variants carry docs.
fn constants(branches: &[Value]) -> Option<Vec<Value>> {
    let mut values = Vec::with_capacity(branches.len());
    for branch in branches {
        let map = branch.as_object()?;
        let value = map.get("const")?;
        for (keyword, v) in map {
            match keyword.as_str() {
                "const" => {}
                "type" => {
                    let (bits, _) = type_bits(v.as_str()?)?;
                    if bits & kind_of(value) == 0 {
                        return None;
                    }
                }
                k if is_annotation(k) => {}
                _ => return None,
            }
        }
        // Two equal constants would make `oneOf` refuse them both.
        if values.contains(value) {
            return None;
        }
        values.push(value.clone());
    }
    Some(values)
}

/// Allowed scalar values and the words listing them; `None` for a long list or a non-scalar.
fn allowed(values: Vec<Value>) -> Option<(Vec<Value>, String)> {
    if values.len() > MAX_ALLOWED || values.iter().any(|v| v.is_array() || v.is_object()) {
        return None;
    }
    let words = match values.as_slice() {
        [one] => shown_value(one),
        many => concat(&["one of ", &listed(many.iter().map(shown_value), many.len())]),
    };
    Some((values, words))
}

fn kind_of(value: &Value) -> u8 {
    match value {
        Value::Null => NULL,
        Value::Bool(_) => BOOLEAN,
        Value::Number(n) if n.is_f64() && n.as_f64().is_some_and(|f| f.fract() != 0.0) => NUMBER,
        Value::Number(_) => INTEGER,
        Value::String(_) => STRING,
        Value::Array(_) => ARRAY,
        Value::Object(_) => OBJECT,
    }
}

/// The report being written as the text is read.
struct Walk {
    /// The JSON Pointer of the value being read.
    path: String,
    found: Vec<Violation>,
    /// More problems than a report lists were found; the reading stopped.
    truncated: bool,
}

impl Walk {
    /// Records a violation; `Err` once the report is full, to stop reading.
    fn push<E: de::Error>(&mut self, violation: Violation) -> Result<(), E> {
        if self.found.len() >= MAX_REPORTED_VIOLATIONS {
            self.truncated = true;
            return Err(E::custom("the report is full"));
        }
        self.found.push(violation);
        Ok(())
    }
}

/// A value read as it arrives: what it is, for the checks and for `got`.
enum Scalar<'t> {
    Null,
    Bool(bool),
    Num(Num),
    Str(&'t str),
}

/// A value to read and the node that checks it (`None`: nothing does, but it is read all the
/// same, within serde_json's nesting limit, for the text to be JSON).
struct Seed<'p, 'w> {
    plan: &'p Plan,
    node: Option<usize>,
    walk: &'w mut Walk,
}

impl<'de> DeserializeSeed<'de> for Seed<'_, '_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, reader: D) -> Result<(), D::Error> {
        reader.deserialize_any(self)
    }
}

/// The checks of the node a value reaching `node` meets, `None` when nothing checks it.
fn checks(plan: &Plan, node: Option<usize>, null: bool) -> Option<&Checks> {
    match &plan.nodes[plan.resolve(node?, null)?] {
        Node::Check(checks) => Some(checks),
        _ => None,
    }
}

/// Where an object's member goes.
enum Member {
    /// Nothing checks it.
    Skip,
    /// `additionalProperties: false` refuses it.
    Unknown,
    Node(usize),
}

impl Seed<'_, '_> {
    fn scalar<E: de::Error>(self, value: Scalar<'_>) -> Result<(), E> {
        let Some(checks) = checks(self.plan, self.node, matches!(value, Scalar::Null)) else {
            return Ok(());
        };
        let path = || self.walk.path.clone();
        let kind = match &value {
            Scalar::Null => NULL,
            Scalar::Bool(_) => BOOLEAN,
            Scalar::Num(n) if n.is_whole() => INTEGER | NUMBER,
            Scalar::Num(_) => NUMBER,
            Scalar::Str(_) => STRING,
        };
        // Most values break one rule: that one stays on the stack.
        let mut found: smallvec::SmallVec<[Violation; 1]> = smallvec::SmallVec::new();
        if checks.types & kind == 0 {
            found.push(type_violation(
                path(),
                checks.type_words.clone(),
                preview(&value),
            ));
        }
        match &value {
            Scalar::Str(s) => {
                if checks.min_length.is_some() || checks.max_length.is_some() {
                    let count = s.chars().count() as u64;
                    let mut length = |at_least: bool, limit: u64| {
                        found.push(must_be_violation(
                            path(),
                            "length",
                            length_expected(at_least, limit, "characters"),
                            counted(count, "characters"),
                        ))
                    };
                    if let Some(min) = checks.min_length.filter(|&m| count < m) {
                        length(true, min);
                    }
                    if let Some(max) = checks.max_length.filter(|&m| count > m) {
                        length(false, max);
                    }
                }
                if let Some((words, regex)) = &checks.pattern {
                    if !regex.is_match(s) {
                        found.push(must_be_violation(
                            path(),
                            "pattern",
                            words.clone(),
                            preview(&value),
                        ));
                    }
                }
            }
            Scalar::Num(n) => {
                use std::cmp::Ordering::{Greater, Less};
                let bounds = [
                    (&checks.minimum, "at least ", Less, true),
                    (&checks.maximum, "at most ", Greater, true),
                    (&checks.exclusive_minimum, "more than ", Greater, false),
                    (&checks.exclusive_maximum, "less than ", Less, false),
                ];
                for (bound, words, refused, inclusive) in bounds {
                    let Some((limit, limit_text)) = bound else {
                        continue;
                    };
                    let order = n.cmp(*limit);
                    let broken = if inclusive {
                        order == Some(refused)
                    } else {
                        order != Some(refused)
                    };
                    if !broken {
                        continue;
                    }
                    let integer = checks.integer.filter(|t| {
                        inclusive
                            && (limit.integer() == Some(t.min)
                                || limit.integer().and_then(|l| u128::try_from(l).ok())
                                    == Some(t.max))
                    });
                    found.push(match integer {
                        Some(integer) => out_of_range(&self.walk.path, integer, n.text()),
                        None => must_be_violation(
                            path(),
                            "range",
                            concat(&[words, limit_text]),
                            n.text(),
                        ),
                    });
                }
            }
            Scalar::Null | Scalar::Bool(_) => {}
        }
        if let Some((values, words)) = &checks.allowed {
            if !values.iter().any(|v| equal(v, &value)) {
                found.push(must_be_violation(
                    path(),
                    "one_of",
                    words.clone(),
                    preview(&value),
                ));
            }
        }
        for violation in found {
            self.walk.push(violation)?;
        }
        Ok(())
    }
}

/// A value as `got` shows it: its type and, for scalars, the value.
fn preview(value: &Scalar<'_>) -> String {
    match value {
        Scalar::Null => "null".to_owned(),
        Scalar::Bool(b) => preview_bool(*b),
        Scalar::Num(n) => concat(&["number ", &n.text()]),
        Scalar::Str(s) => preview_string(s),
    }
}

/// Whether an allowed value is the value read: JSON equality (`1` is `1.0`).
fn equal(allowed: &Value, value: &Scalar<'_>) -> bool {
    match (allowed, value) {
        (Value::Null, Scalar::Null) => true,
        (Value::Bool(a), Scalar::Bool(b)) => a == b,
        (Value::String(a), Scalar::Str(b)) => a == b,
        (Value::Number(a), Scalar::Num(b)) => {
            Num::of(a).and_then(|a| a.cmp(*b)) == Some(std::cmp::Ordering::Equal)
        }
        _ => false,
    }
}

/// A container's `got`: "an array of 2 items", "an object with 1 field".
fn container(what: &str, count: usize, unit: &str) -> String {
    concat(&[what, &counted(count as u64, unit)])
}

impl<'de> Visitor<'de> for Seed<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        self.scalar(Scalar::Null)
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<(), E> {
        self.scalar(Scalar::Bool(v))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<(), E> {
        self.scalar(Scalar::Num(Num::U(v)))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<(), E> {
        self.scalar(Scalar::Num(Num::I(v)))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<(), E> {
        self.scalar(Scalar::Num(Num::F(v)))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<(), E> {
        self.scalar(Scalar::Str(v))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let checks = checks(self.plan, self.node, false);
        let items = checks.and_then(|c| c.items);
        let mut count = 0usize;
        loop {
            let mark = self.walk.path.len();
            if items.is_some() {
                self.walk.path.push('/');
                push_number(&mut self.walk.path, count as u64);
            }
            let more = seq.next_element_seed(Seed {
                plan: self.plan,
                node: items,
                walk: &mut *self.walk,
            })?;
            self.walk.path.truncate(mark);
            if more.is_none() {
                break;
            }
            count += 1;
        }
        let Some(checks) = checks else {
            return Ok(());
        };
        let path = &self.walk.path;
        let mut found = Vec::new();
        if checks.types & ARRAY == 0 {
            found.push(type_violation(
                path.clone(),
                checks.type_words.clone(),
                container("an array of ", count, "items"),
            ));
        }
        let mut length = |at_least: bool, limit: u64| {
            found.push(must_be_violation(
                path.clone(),
                "length",
                length_expected(at_least, limit, "items"),
                counted(count as u64, "items"),
            ))
        };
        if let Some(min) = checks.min_items.filter(|&m| (count as u64) < m) {
            length(true, min);
        }
        if let Some(max) = checks.max_items.filter(|&m| (count as u64) > m) {
            length(false, max);
        }
        if let Some((_, words)) = &checks.allowed {
            found.push(must_be_violation(
                path.clone(),
                "one_of",
                words.clone(),
                container("an array of ", count, "items"),
            ));
        }
        for violation in found {
            self.walk.push(violation)?;
        }
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let checks = checks(self.plan, self.node, false);
        let mut seen: u64 = 0;
        let mut count = 0usize;
        while let Some(key) = map.next_key_seed(Key)? {
            count += 1;
            let key: &str = &key;
            let member = match checks {
                None => Member::Skip,
                Some(c) => {
                    if let Some(at) = c.required.iter().position(|name| name == key) {
                        seen |= 1 << at;
                    }
                    match c.properties.iter().find(|(name, _)| name == key) {
                        Some(&(_, node)) => Member::Node(node),
                        None => match c.additional {
                            Additional::Any => Member::Skip,
                            Additional::Deny => Member::Unknown,
                            Additional::Node(node) => Member::Node(node),
                        },
                    }
                }
            };
            let node = match member {
                Member::Skip => None,
                Member::Unknown => {
                    // The root's arguments are named; deeper, the member is to go.
                    let valid = match checks {
                        Some(c) if self.walk.path.is_empty() => c.valid.as_str(),
                        _ => "remove it",
                    };
                    let path = child(&self.walk.path, key);
                    self.walk.push(unknown_violation(path, key, valid))?;
                    None
                }
                Member::Node(node) => Some(node),
            };
            let mark = self.walk.path.len();
            if node.is_some() {
                self.walk.path.push('/');
                push_pointer_token(&mut self.walk.path, key);
            }
            map.next_value_seed(Seed {
                plan: self.plan,
                node,
                walk: &mut *self.walk,
            })?;
            self.walk.path.truncate(mark);
        }
        let Some(checks) = checks else {
            return Ok(());
        };
        if checks.types & OBJECT == 0 {
            let got = container("an object with ", count, "fields");
            let violation = type_violation(self.walk.path.clone(), checks.type_words.clone(), got);
            self.walk.push(violation)?;
        }
        for (at, name) in checks.required.iter().enumerate() {
            if seen & (1 << at) == 0 {
                let violation = required_violation(child(&self.walk.path, name));
                self.walk.push(violation)?;
            }
        }
        if let Some((_, words)) = &checks.allowed {
            let got = container("an object with ", count, "fields");
            let violation = must_be_violation(self.walk.path.clone(), "one_of", words.clone(), got);
            self.walk.push(violation)?;
        }
        Ok(())
    }
}

/// An object key, borrowed from the text when it has no escapes.
struct Key;

impl<'de> DeserializeSeed<'de> for Key {
    type Value = Cow<'de, str>;

    fn deserialize<D: Deserializer<'de>>(self, reader: D) -> Result<Cow<'de, str>, D::Error> {
        reader.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for Key {
    type Value = Cow<'de, str>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a key")
    }

    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Cow<'de, str>, E> {
        Ok(Cow::Borrowed(v))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Cow<'de, str>, E> {
        Ok(Cow::Owned(v.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use super::*;

    fn plan(schema: Value) -> Option<Plan> {
        Plan::new(&schema)
    }

    fn object(property: Value) -> Value {
        json!({"type": "object", "properties": {"p": property}})
    }

    /// What a report of `text` against `schema` says: each violation's path and message.
    fn said(schema: Value, text: &str) -> Vec<(String, String)> {
        let plan = plan(schema).unwrap_or_else(|| panic!("a plan"));
        let found = plan.report(text).unwrap_or_else(|e| panic!("{text}: {e}"));
        found
            .violations
            .into_iter()
            .map(|v| (v.path, v.message))
            .collect()
    }

    #[test]
    fn only_the_shapes_it_checks_as_the_general_validator_does_get_a_plan() {
        let planned = [
            object(json!(true)),
            object(json!({"const": "a"})),
            object(json!({"enum": [1, "a", null, true]})),
            object(json!({"type": ["string", "null"], "description": "d", "format": "email"})),
            object(json!({"anyOf": [{"type": "string"}, {"type": "null"}], "title": "t"})),
            object(json!({"oneOf": [
                {"type": "string", "const": "a", "description": "A."},
                {"type": "number", "const": 1.5},
                {"type": "integer", "const": 2},
                {"type": "integer", "const": 3.0}
            ]})),
            json!({"type": "object", "properties": {"p": {"$ref": "#/$defs/P", "description": "d"}},
                   "$defs": {"P": {"type": "string"}},
                   "$schema": "https://json-schema.org/draft/2020-12/schema"}),
        ];
        for schema in planned {
            assert!(plan(schema.clone()).is_some(), "{schema}");
        }
        let left_to_the_general_validator = [
            object(json!({"anyOf": [{"type": "string"}, {"type": "integer"}]})),
            object(json!({"anyOf": [{"type": "string"}, {"type": "null"}], "minLength": 1})),
            object(json!({"allOf": [{"type": "string"}]})),
            object(json!({"not": {"type": "string"}})),
            object(json!({"$ref": "#/properties/p", "minLength": 1})),
            object(json!({"enum": [[1]]})),
            object(json!({"enum": [{"a": 1}]})),
            object(json!({"oneOf": [{"const": "a", "minLength": 5}]})),
            object(json!({"oneOf": [{"type": "string", "const": 1}]})),
            object(json!({"oneOf": [{"type": "integer", "const": 1.5}]})),
            object(json!({"oneOf": [{"const": "a"}, {"const": "a"}]})),
            object(json!({"oneOf": [{"type": "string"}]})),
            object(json!({"type": "strin"})),
            object(json!({"uniqueItems": true})),
            json!({"$ref": "#"}),
            json!({"type": "object", "$schema": "http://json-schema.org/draft-07/schema#"}),
        ];
        for schema in left_to_the_general_validator {
            assert!(plan(schema.clone()).is_none(), "{schema}");
        }
    }

    #[test]
    fn the_bounds_on_a_plans_size_hold_at_their_edge() {
        let properties = |n: usize| -> Value {
            let map: Map<String, Value> = (0..n).map(|i| (format!("p{i}"), json!(true))).collect();
            json!({"type": "object", "properties": map})
        };
        assert!(plan(properties(MAX_PROPERTIES)).is_some());
        assert!(plan(properties(MAX_PROPERTIES + 1)).is_none());
        let required = |n: usize| -> Value {
            let names: Vec<String> = (0..n).map(|i| format!("p{i}")).collect();
            json!({"type": "object", "required": names})
        };
        assert!(plan(required(MAX_PROPERTIES)).is_some());
        assert!(plan(required(MAX_PROPERTIES + 1)).is_none());
        let allowed = |n: usize| object(json!({"enum": (0..n).collect::<Vec<usize>>()}));
        assert!(plan(allowed(MAX_ALLOWED)).is_some());
        assert!(plan(allowed(MAX_ALLOWED + 1)).is_none());
    }

    #[test]
    fn integers_beyond_a_double_compare_exactly() {
        // 2^53 + 1 is 2^53 as a double: only an integer comparison sees it is past the bound.
        let schema = object(json!({"type": "integer", "maximum": 9_007_199_254_740_992u64}));
        assert_eq!(said(schema.clone(), r#"{"p":9007199254740992}"#), []);
        assert_eq!(
            said(schema, r#"{"p":9007199254740993}"#),
            [(
                "/p".to_owned(),
                "`p` must be at most 9007199254740992, got 9007199254740993".to_owned()
            )]
        );
    }

    #[test]
    fn a_constant_and_an_empty_schema_are_checked_for_what_they_say() {
        let schema = json!({"type": "object", "properties": {"c": {"const": "on"}, "t": true}});
        assert_eq!(said(schema.clone(), r#"{"c":"on","t":[1,{"a":2}]}"#), []);
        assert_eq!(
            said(schema, r#"{"c":"off"}"#),
            [(
                "/c".to_owned(),
                "`c` must be \"on\", got string \"off\"".to_owned()
            )]
        );
    }

    #[test]
    fn an_allowed_value_is_equal_as_json_says() {
        let schema = object(json!({"enum": [1, true, null, "a"]}));
        for text in [
            r#"{"p":1}"#,
            r#"{"p":1.0}"#,
            r#"{"p":true}"#,
            r#"{"p":null}"#,
            r#"{"p":"a"}"#,
        ] {
            assert_eq!(said(schema.clone(), text), [], "{text}");
        }
        for text in [
            r#"{"p":2}"#,
            r#"{"p":false}"#,
            r#"{"p":"b"}"#,
            r#"{"p":[1]}"#,
            r#"{"p":{}}"#,
        ] {
            let said = said(schema.clone(), text);
            assert_eq!(said.len(), 1, "{text}: {said:?}");
            assert!(
                said[0]
                    .1
                    .starts_with("`p` must be one of 1, true, null, \"a\", got "),
                "{said:?}"
            );
        }
    }

    #[test]
    fn a_list_at_its_longest_and_a_key_written_with_escapes_are_read_as_they_are() {
        let schema = object(json!({"type": "array", "maxItems": 2, "minItems": 2}));
        assert_eq!(said(schema.clone(), r#"{"p":[1,2]}"#), []);
        assert_eq!(said(schema.clone(), r#"{"p":[1,2,3]}"#).len(), 1);
        assert_eq!(said(schema, r#"{"p":[1]}"#).len(), 1);
        // `\u0070` is `p`: a key with an escape is not borrowed from the text, and is the same key.
        let schema = object(json!({"type": "string"}));
        assert_eq!(
            said(schema, r#"{"\u0070":5}"#),
            [(
                "/p".to_owned(),
                "`p`: expected a string, got number 5".to_owned()
            )]
        );
    }

    #[test]
    fn a_full_report_stops_reading_and_says_so() {
        let schema = json!({"type": "object", "additionalProperties": {"type": "integer"}});
        let members: Vec<String> = (0..MAX_REPORTED_VIOLATIONS + 5)
            .map(|i| format!(r#""k{i}":"x""#))
            .collect();
        // Text that is not JSON after the report filled up is not read that far.
        let text = format!("{{{},", members.join(","));
        let plan = plan(schema).unwrap_or_else(|| panic!("a plan"));
        let found = plan.report(&text).unwrap_or_else(|e| panic!("{e}"));
        assert!(found.truncated);
        assert_eq!(found.violations.len(), MAX_REPORTED_VIOLATIONS);
        // Exactly as many as a report lists: all of them, nothing cut.
        let members: Vec<String> = (0..MAX_REPORTED_VIOLATIONS)
            .map(|i| format!(r#""k{i}":"x""#))
            .collect();
        let found = plan
            .report(&format!("{{{}}}", members.join(",")))
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(!found.truncated);
        assert_eq!(found.violations.len(), MAX_REPORTED_VIOLATIONS);
    }

    #[test]
    fn text_that_is_not_json_past_the_first_problem_is_an_error() {
        let plan = plan(object(json!({"type": "string"}))).unwrap_or_else(|| panic!("a plan"));
        assert!(plan.report(r#"{"p":5,"q":}"#).is_err());
        assert!(plan.report(r#"{"p":5} trailing"#).is_err());
        assert!(plan.report(r#"{"p":5}"#).is_ok());
    }
}
