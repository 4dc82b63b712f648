//! Rewrites a tool's input schema (JSON Schema 2020-12, as schemars writes it) into the dialect a
//! provider accepts, or says exactly which construct the provider cannot express.
//!
//! Three moves, in this order of preference:
//! 1. **Transform** without loss: `oneOf` of constants becomes `enum`, `const` becomes a
//!    one-value `enum`, a `$ref` with sibling keywords is inlined, nullable types take the form
//!    the provider reads, schemars' integer formats become the bounds they imply.
//! 2. **Restate**: a keyword the provider rejects but whose meaning a sentence carries
//!    (`minLength`, `uniqueItems`, a format, a default) is removed and written into the
//!    `description`, so the model still sees the constraint; the registry enforces it anyway.
//! 3. **Refuse**: a construct no rewrite can express (a map under strict mode, a recursive type
//!    where references are not allowed, a value of any shape) is an [`Unsupported`] problem
//!    naming the path, never a silently wrong schema.

use std::collections::HashSet;

use serde_json::{Map, Value};

use super::error::{Construct, Unsupported};
use crate::validate::escape_pointer;

/// The schema dialects toolwright writes. Non-strict OpenAI, non-strict Anthropic and MCP take
/// the schema as it is and need no rewrite.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dialect {
    /// OpenAI Structured Outputs (`strict: true`), Chat Completions and Responses alike.
    OpenAiStrict,
    /// Anthropic strict tool use (grammar-constrained sampling).
    AnthropicStrict,
    /// Gemini `parameters`: the OpenAPI 3.0 `Schema` subset.
    GeminiOpenApi,
    /// Gemini `parametersJsonSchema`.
    GeminiJsonSchema,
}

/// What happens to one keyword in one dialect.
enum Fate {
    Keep,
    Restate,
    Drop,
    Refuse,
}

/// Keywords that only annotate; dropping them changes no accepted value.
const ANNOTATIONS: &[&str] = &[
    "$schema",
    "$id",
    "$comment",
    "$anchor",
    "deprecated",
    "readOnly",
    "writeOnly",
];

/// schemars' integer and float formats, with the range an integer format implies when the
/// range is narrower than what every provider's JSON numbers cover.
const NUMERIC_FORMATS: &[(&str, Option<(i64, i64)>)] = &[
    ("int8", Some((-128, 127))),
    ("int16", Some((-32768, 32767))),
    ("int32", Some((-2_147_483_648, 2_147_483_647))),
    ("int64", None),
    ("int", None),
    ("uint8", Some((0, 255))),
    ("uint16", Some((0, 65535))),
    ("uint32", Some((0, 4_294_967_295))),
    ("uint64", None),
    ("uint", None),
    ("float", None),
    ("double", None),
];

impl Dialect {
    fn name(self) -> &'static str {
        match self {
            Dialect::OpenAiStrict => "OpenAI strict mode",
            Dialect::AnthropicStrict => "Anthropic strict tool use",
            Dialect::GeminiOpenApi => "Gemini `parameters`",
            Dialect::GeminiJsonSchema => "Gemini `parametersJsonSchema`",
        }
    }

    /// Every `$ref` is replaced by its definition (Gemini's OpenAPI subset has no references).
    fn inlines_every_ref(self) -> bool {
        self == Dialect::GeminiOpenApi
    }

    /// A type that contains itself cannot be expressed.
    fn refuses_recursion(self) -> bool {
        matches!(self, Dialect::AnthropicStrict | Dialect::GeminiOpenApi)
    }

    /// Every object is closed with `additionalProperties: false`; maps are refused.
    fn closes_objects(self) -> bool {
        matches!(self, Dialect::OpenAiStrict | Dialect::AnthropicStrict)
    }

    fn keeps_bounds(self) -> bool {
        self != Dialect::AnthropicStrict
    }

    fn fate(self, keyword: &str, node: &Map<String, Value>) -> Fate {
        use Dialect::*;
        if ANNOTATIONS.contains(&keyword) {
            return Fate::Drop;
        }
        match keyword {
            "type" | "description" | "title" | "properties" | "required" | "items" | "anyOf"
            | "enum" | "$ref" => Fate::Keep,
            "additionalProperties" => match self {
                GeminiOpenApi => Fate::Drop,
                _ => Fate::Keep,
            },
            "nullable" => match self {
                GeminiOpenApi => Fate::Keep,
                _ => Fate::Refuse,
            },
            "minimum" | "maximum" => match self {
                AnthropicStrict => Fate::Restate,
                _ => Fate::Keep,
            },
            "exclusiveMinimum" | "exclusiveMaximum" | "multipleOf" => match self {
                OpenAiStrict => Fate::Keep,
                _ => Fate::Restate,
            },
            "minItems" => match self {
                AnthropicStrict
                    if !matches!(node.get("minItems").and_then(Value::as_u64), Some(0 | 1)) =>
                {
                    Fate::Restate
                }
                _ => Fate::Keep,
            },
            "maxItems" => match self {
                AnthropicStrict => Fate::Restate,
                _ => Fate::Keep,
            },
            "minLength" | "maxLength" | "minProperties" | "maxProperties" => match self {
                GeminiOpenApi => Fate::Keep,
                _ => Fate::Restate,
            },
            "pattern" => match self {
                OpenAiStrict | GeminiOpenApi => Fate::Keep,
                AnthropicStrict => match node.get("pattern").and_then(Value::as_str) {
                    Some(p) if grammar_friendly(p) => Fate::Keep,
                    _ => Fate::Restate,
                },
                GeminiJsonSchema => Fate::Restate,
            },
            "default" => match self {
                GeminiOpenApi => Fate::Keep,
                _ => Fate::Restate,
            },
            "prefixItems" => match self {
                GeminiJsonSchema => Fate::Keep,
                _ => Fate::Refuse,
            },
            "format" => match node.get("format").and_then(Value::as_str) {
                Some(f) if self.keeps_format(f, node) => Fate::Keep,
                Some(f) if numeric_format(f).is_some() => Fate::Drop,
                _ => Fate::Restate,
            },
            "uniqueItems" | "examples" | "contentEncoding" | "contentMediaType" => Fate::Restate,
            _ => Fate::Refuse,
        }
    }

    fn keeps_format(self, format: &str, node: &Map<String, Value>) -> bool {
        let types = types_of(node);
        match self {
            Dialect::OpenAiStrict => matches!(
                format,
                "date-time"
                    | "time"
                    | "date"
                    | "duration"
                    | "email"
                    | "hostname"
                    | "ipv4"
                    | "ipv6"
                    | "uuid"
            ),
            Dialect::AnthropicStrict => matches!(
                format,
                "date-time"
                    | "time"
                    | "date"
                    | "duration"
                    | "email"
                    | "hostname"
                    | "uri"
                    | "ipv4"
                    | "ipv6"
                    | "uuid"
            ),
            Dialect::GeminiOpenApi => match format {
                "int32" | "int64" => types.contains(&"integer"),
                "float" | "double" => types.contains(&"number"),
                "date-time" => types.contains(&"string"),
                _ => false,
            },
            Dialect::GeminiJsonSchema => matches!(format, "date-time" | "date" | "time"),
        }
    }
}

/// Whether a regex avoids the features a sampling grammar cannot compile (Anthropic documents
/// backreferences, lookaround and word boundaries as unsupported).
fn grammar_friendly(pattern: &str) -> bool {
    let bytes = pattern.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' if i + 1 < bytes.len() => {
                if matches!(bytes[i + 1], b'1'..=b'9' | b'b' | b'B' | b'k') {
                    return false;
                }
                i += 2;
                continue;
            }
            b'(' if bytes.get(i + 1) == Some(&b'?') => {
                if matches!(bytes.get(i + 2), Some(b'=' | b'!' | b'<')) {
                    return false;
                }
            }
            _ => {}
        }
        i += 1;
    }
    true
}

fn numeric_format(format: &str) -> Option<Option<(i64, i64)>> {
    NUMERIC_FORMATS
        .iter()
        .find(|(name, _)| *name == format)
        .map(|(_, range)| *range)
}

fn types_of(node: &Map<String, Value>) -> Vec<&str> {
    match node.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

fn is_object(node: &Map<String, Value>) -> bool {
    types_of(node).contains(&"object") || node.contains_key("properties")
}

fn is_null_schema(schema: &Value) -> bool {
    schema.as_object().is_some_and(|b| {
        b.get("type").and_then(Value::as_str) == Some("null")
            && b.keys()
                .all(|k| matches!(k.as_str(), "type" | "description" | "title"))
    })
}

fn show(value: &Value) -> String {
    match value {
        Value::String(s) => format!("`{s}`"),
        other => other.to_string(),
    }
}

fn number(value: &Value) -> String {
    value.to_string()
}

/// Sentences restating the constraints a dialect dropped, in a fixed order so exports are
/// reproducible.
fn restate(node: &Map<String, Value>, restated: &[String]) -> Vec<String> {
    let has = |k: &str| restated.iter().any(|r| r == k);
    let get = |k: &str| node.get(k).filter(|_| has(k));
    let is_array = types_of(node).contains(&"array");
    let mut notes = Vec::new();

    let range = |lo: Option<&Value>, hi: Option<&Value>, unit: &str| -> Option<String> {
        match (lo, hi) {
            (Some(lo), Some(hi)) if lo == hi => Some(format!("Exactly {} {unit}.", number(lo))),
            (Some(lo), Some(hi)) => Some(format!("{} to {} {unit}.", number(lo), number(hi))),
            (Some(lo), None) => Some(format!("At least {} {unit}.", number(lo))),
            (None, Some(hi)) => Some(format!("At most {} {unit}.", number(hi))),
            (None, None) => None,
        }
    };
    notes.extend(range(get("minLength"), get("maxLength"), "characters"));
    if is_array {
        notes.extend(range(get("minItems"), get("maxItems"), "items"));
    }
    notes.extend(range(get("minProperties"), get("maxProperties"), "entries"));
    match (get("minimum"), get("maximum")) {
        (Some(lo), Some(hi)) => notes.push(format!(
            "Must be at least {} and at most {}.",
            number(lo),
            number(hi)
        )),
        (Some(lo), None) => notes.push(format!("Must be at least {}.", number(lo))),
        (None, Some(hi)) => notes.push(format!("Must be at most {}.", number(hi))),
        (None, None) => {}
    }
    if let Some(v) = get("exclusiveMinimum") {
        notes.push(format!("Must be greater than {}.", number(v)));
    }
    if let Some(v) = get("exclusiveMaximum") {
        notes.push(format!("Must be less than {}.", number(v)));
    }
    if let Some(v) = get("multipleOf") {
        notes.push(format!("Must be a multiple of {}.", number(v)));
    }
    if let Some(Value::String(p)) = get("pattern") {
        notes.push(format!("Must match the regular expression `{p}`."));
    }
    if let Some(Value::String(f)) = get("format") {
        notes.push(format!("Format: {f}."));
    }
    if get("uniqueItems") == Some(&Value::Bool(true)) {
        notes.push("Items must be unique.".to_owned());
    }
    if let Some(Value::String(e)) = get("contentEncoding") {
        notes.push(format!("Encoding: {e}."));
    }
    if let Some(Value::String(m)) = get("contentMediaType") {
        notes.push(format!("Media type: {m}."));
    }
    if let Some(Value::Array(values)) = get("enum") {
        let shown: Vec<String> = values.iter().map(show).collect();
        notes.push(format!("One of: {}.", shown.join(", ")));
    }
    if let Some(v) = get("default") {
        notes.push(format!("Default: {}.", show(v)));
    }
    if let Some(Value::Array(examples)) = get("examples") {
        if let Some(first) = examples.first() {
            notes.push(format!("Example: {}.", show(first)));
        }
    }
    notes
}

fn with_notes(description: Option<&str>, notes: &[String]) -> Option<String> {
    let base = description.map(str::trim).filter(|d| !d.is_empty());
    if notes.is_empty() {
        return base.map(str::to_owned);
    }
    let mut text = String::new();
    if let Some(base) = base {
        text.push_str(base);
        if !base.ends_with(['.', '!', '?', ':']) {
            text.push('.');
        }
        text.push(' ');
    }
    text.push_str(&notes.join(" "));
    Some(text)
}

/// The `#/$defs/...` definitions a schema's references point into, and which of them are
/// recursive (reachable from themselves).
fn recursive_defs(defs: &Map<String, Value>) -> HashSet<String> {
    fn refs(value: &Value, out: &mut Vec<String>) {
        match value {
            Value::Object(map) => {
                if let Some(name) = map.get("$ref").and_then(Value::as_str).and_then(def_name) {
                    out.push(name.to_owned());
                }
                map.values().for_each(|v| refs(v, out));
            }
            Value::Array(items) => items.iter().for_each(|v| refs(v, out)),
            _ => {}
        }
    }
    let mut recursive = HashSet::new();
    for start in defs.keys() {
        let mut seen = HashSet::new();
        let mut stack = Vec::new();
        if let Some(def) = defs.get(start) {
            refs(def, &mut stack);
        }
        while let Some(name) = stack.pop() {
            if &name == start {
                recursive.insert(start.clone());
                break;
            }
            if seen.insert(name.clone()) {
                if let Some(def) = defs.get(&name) {
                    refs(def, &mut stack);
                }
            }
        }
    }
    recursive
}

fn def_name(reference: &str) -> Option<&str> {
    reference
        .strip_prefix("#/$defs/")
        .or_else(|| reference.strip_prefix("#/definitions/"))
        .filter(|name| !name.contains('/'))
}

/// Rewrites one tool's input schema. Every problem found is reported, not only the first.
pub(crate) fn rewrite(
    dialect: Dialect,
    tool: &str,
    schema: &Value,
) -> Result<Value, Vec<Unsupported>> {
    let empty = Map::new();
    let defs = schema
        .get("$defs")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let mut rewriter = Rewriter {
        dialect,
        tool,
        defs,
        recursive: recursive_defs(defs),
        inlining: Vec::new(),
        used_defs: Vec::new(),
        problems: Vec::new(),
    };
    let mut root = match schema {
        Value::Object(map) => {
            let mut map = map.clone();
            map.remove("$defs");
            rewriter.node(&Value::Object(map), "", true)
        }
        other => rewriter.node(other, "", true),
    };
    // Definitions still referenced, in their original order; rewriting one may reference more.
    let mut out_defs = Map::new();
    let mut done = 0;
    while done < rewriter.used_defs.len() {
        let name = rewriter.used_defs[done].clone();
        done += 1;
        if let Some(def) = defs.get(&name) {
            let path = format!("/$defs/{}", escape_pointer(&name));
            let rewritten = rewriter.node(def, &path, false);
            out_defs.insert(name, rewritten);
        }
    }
    if !out_defs.is_empty() {
        let mut ordered = Map::new();
        for name in defs.keys() {
            if let Some(def) = out_defs.remove(name) {
                ordered.insert(name.clone(), def);
            }
        }
        if let Some(obj) = root.as_object_mut() {
            obj.insert("$defs".into(), Value::Object(ordered));
        }
    }
    if dialect == Dialect::OpenAiStrict {
        rewriter.check_openai_limits(&root);
    }
    if rewriter.problems.is_empty() {
        Ok(root)
    } else {
        Err(rewriter.problems)
    }
}

struct Rewriter<'a> {
    dialect: Dialect,
    tool: &'a str,
    defs: &'a Map<String, Value>,
    recursive: HashSet<String>,
    inlining: Vec<String>,
    used_defs: Vec<String>,
    problems: Vec<Unsupported>,
}

impl Rewriter<'_> {
    fn refuse(&mut self, path: &str, construct: Construct) -> Value {
        self.problems.push(Unsupported {
            tool: self.tool.to_owned(),
            path: if path.is_empty() {
                "/".to_owned()
            } else {
                path.to_owned()
            },
            construct,
            dialect: Some(self.dialect.name()),
        });
        Value::Object(Map::new())
    }

    fn node(&mut self, schema: &Value, path: &str, root: bool) -> Value {
        match schema {
            Value::Object(map) => self.object(map.clone(), path, root),
            Value::Bool(true) => self.any_value(path, None),
            _ => self.refuse(
                path,
                Construct::Keyword {
                    keyword: schema.to_string(),
                },
            ),
        }
    }

    /// A schema that admits any value: Gemini's JSON Schema mode takes it as `{}` (with its
    /// description); every constrained dialect refuses it.
    fn any_value(&mut self, path: &str, description: Option<&Value>) -> Value {
        if self.dialect == Dialect::GeminiJsonSchema {
            let mut out = Map::new();
            if let Some(d) = description {
                out.insert("description".into(), d.clone());
            }
            Value::Object(out)
        } else {
            self.refuse(path, Construct::AnyValue)
        }
    }

    fn object(&mut self, mut node: Map<String, Value>, path: &str, root: bool) -> Value {
        // References: keep a bare `$ref` where the dialect has them, inline otherwise.
        if let Some(reference) = node.get("$ref").cloned() {
            let Some(name) = reference.as_str().and_then(def_name).map(str::to_owned) else {
                return self.refuse(
                    path,
                    Construct::ExternalRef {
                        reference: reference.as_str().unwrap_or_default().to_owned(),
                    },
                );
            };
            let Some(target) = self.defs.get(&name).cloned() else {
                return self.refuse(
                    path,
                    Construct::ExternalRef {
                        reference: format!("#/$defs/{name}"),
                    },
                );
            };
            if self.dialect.refuses_recursion() && self.recursive.contains(&name) {
                return self.refuse(path, Construct::RecursiveType { name });
            }
            let siblings = node
                .keys()
                .any(|k| k != "$ref" && !ANNOTATIONS.contains(&k.as_str()));
            if !siblings && !self.dialect.inlines_every_ref() {
                if !self.used_defs.contains(&name) {
                    self.used_defs.push(name);
                }
                return Value::Object(Map::from_iter([("$ref".to_owned(), reference)]));
            }
            if self.inlining.contains(&name) {
                // A recursive type whose reference carries a description: keep the reference
                // and hang the siblings on a one-branch `anyOf`.
                if !self.used_defs.contains(&name) {
                    self.used_defs.push(name);
                }
                node.remove("$ref");
                let mut wrapper = Map::new();
                wrapper.insert(
                    "anyOf".into(),
                    Value::Array(vec![Value::Object(Map::from_iter([(
                        "$ref".to_owned(),
                        reference,
                    )]))]),
                );
                if let Some(d) = node.remove("description") {
                    wrapper.insert("description".into(), d);
                }
                return Value::Object(wrapper);
            }
            let mut merged = match target {
                Value::Object(map) => map,
                Value::Bool(true) => Map::new(),
                other => {
                    return self.refuse(
                        path,
                        Construct::Keyword {
                            keyword: other.to_string(),
                        },
                    )
                }
            };
            node.remove("$ref");
            for (k, v) in node {
                merged.insert(k, v);
            }
            self.inlining.push(name);
            let out = self.object(merged, path, root);
            self.inlining.pop();
            return out;
        }

        // `allOf` with one entry is that entry (schemars writes it for flattened structs).
        if let Some(all_of) = node.remove("allOf") {
            match all_of {
                Value::Array(mut entries) if entries.len() == 1 => {
                    let entry = entries.remove(0);
                    let Value::Object(mut merged) = entry else {
                        return self.refuse(
                            path,
                            Construct::Keyword {
                                keyword: "allOf".into(),
                            },
                        );
                    };
                    for (k, v) in node {
                        merged.insert(k, v);
                    }
                    return self.object(merged, path, root);
                }
                _ => {
                    return self.refuse(
                        path,
                        Construct::Keyword {
                            keyword: "allOf".into(),
                        },
                    )
                }
            }
        }

        let mut notes = Vec::new();

        // `oneOf` of constants (an enum with documented variants) becomes `enum`, the variant
        // docs restated; any other `oneOf` becomes `anyOf` (schemars' alternatives are
        // disjoint, so nothing is lost).
        if let Some(one_of) = node.remove("oneOf") {
            let branches = one_of.as_array().cloned().unwrap_or_default();
            let constants = constants_of(&branches);
            match constants {
                Some(constants) if !constants.is_empty() => {
                    let mut types: Vec<String> = Vec::new();
                    for c in &constants {
                        let ty =
                            c.ty.clone()
                                .unwrap_or_else(|| json_type(&c.value).to_owned());
                        if !types.contains(&ty) {
                            types.push(ty);
                        }
                    }
                    if !node.contains_key("type") {
                        node.insert(
                            "type".into(),
                            if types.len() == 1 {
                                Value::String(types.remove(0))
                            } else {
                                Value::Array(types.into_iter().map(Value::String).collect())
                            },
                        );
                    }
                    let documented: Vec<String> = constants
                        .iter()
                        .filter_map(|c| {
                            let d = c.description.as_ref()?;
                            Some(format!("{}: {}", show(&c.value), d.trim_end_matches('.')))
                        })
                        .collect();
                    if !documented.is_empty() {
                        notes.push(format!("{}.", documented.join("; ")));
                    }
                    node.insert(
                        "enum".into(),
                        Value::Array(constants.into_iter().map(|c| c.value).collect()),
                    );
                }
                _ => {
                    let mut any_of = node
                        .remove("anyOf")
                        .and_then(|v| v.as_array().cloned())
                        .unwrap_or_default();
                    any_of.extend(branches);
                    node.insert("anyOf".into(), Value::Array(any_of));
                }
            }
        }
        if let Some(value) = node.remove("const") {
            if !node.contains_key("type") {
                node.insert("type".into(), Value::String(json_type(&value).into()));
            }
            node.insert("enum".into(), Value::Array(vec![value]));
        }

        // Gemini: a `null` branch of `anyOf` is `nullable`; a single remaining branch is the
        // schema itself.
        if self.dialect == Dialect::GeminiOpenApi {
            if let Some(Value::Array(branches)) = node.get_mut("anyOf") {
                let before = branches.len();
                branches.retain(|b| !is_null_schema(b));
                if branches.len() != before {
                    if branches.len() == 1 {
                        let only = branches.remove(0);
                        node.remove("anyOf");
                        let mut merged = match only {
                            Value::Object(map) => map,
                            _ => Map::new(),
                        };
                        for (k, v) in node {
                            merged.insert(k, v);
                        }
                        let mut out = self.object(merged, path, root);
                        if let Some(obj) = out.as_object_mut() {
                            obj.insert("nullable".into(), Value::Bool(true));
                        }
                        return out;
                    }
                    node.insert("nullable".into(), Value::Bool(true));
                }
            }
        }

        // A schema that admits any value.
        let constrains = ["type", "enum", "anyOf", "properties", "items"]
            .iter()
            .any(|k| node.contains_key(*k));
        if !constrains {
            return self.any_value(path, node.get("description"));
        }

        // schemars' numeric formats: the implied range where the dialect keeps bounds.
        if let Some(Value::String(format)) = node.get("format").cloned() {
            if let Some(Some((lo, hi))) = numeric_format(&format) {
                if self.dialect.keeps_bounds() && !node.contains_key("enum") {
                    node.entry("minimum").or_insert(Value::from(lo));
                    node.entry("maximum").or_insert(Value::from(hi));
                }
            }
        }

        // Keywords: keep, restate, drop or refuse, each by the dialect's table.
        let mut out = Map::new();
        let mut restated = Vec::new();
        let keys: Vec<String> = node.keys().cloned().collect();
        for key in &keys {
            let Some(value) = node.get(key).cloned() else {
                continue;
            };
            let child = |k: &str| {
                if path.is_empty() {
                    format!("/{k}")
                } else {
                    format!("{path}/{k}")
                }
            };
            match self.dialect.fate(key, &node) {
                Fate::Drop => {}
                Fate::Restate => restated.push(key.clone()),
                Fate::Refuse => {
                    let construct = if key == "prefixItems" {
                        Construct::Tuple
                    } else {
                        Construct::Keyword {
                            keyword: key.clone(),
                        }
                    };
                    self.refuse(&child(key), construct);
                }
                Fate::Keep => {
                    let rewritten = match key.as_str() {
                        "properties" => {
                            let mut props = Map::new();
                            for (name, schema) in value.as_object().into_iter().flatten() {
                                let p = format!("{}/{}", child("properties"), escape_pointer(name));
                                props.insert(name.clone(), self.node(schema, &p, false));
                            }
                            Value::Object(props)
                        }
                        "items" => self.node(&value, &child("items"), false),
                        "prefixItems" | "anyOf" => {
                            let base = child(key);
                            Value::Array(
                                value
                                    .as_array()
                                    .into_iter()
                                    .flatten()
                                    .enumerate()
                                    .map(|(i, s)| self.node(s, &format!("{base}/{i}"), false))
                                    .collect(),
                            )
                        }
                        "additionalProperties" => match &value {
                            Value::Bool(false) => value,
                            _ if self.dialect.closes_objects() => {
                                self.refuse(&child(key), Construct::Map);
                                continue;
                            }
                            Value::Bool(true) => value,
                            schema => self.node(schema, &child(key), false),
                        },
                        _ => value,
                    };
                    out.insert(key.clone(), rewritten);
                }
            }
        }
        notes.extend(restate(&node, &restated));

        // Objects.
        if is_object(&node) {
            let additional = node.get("additionalProperties");
            let free_form =
                !node.contains_key("properties") && !matches!(additional, Some(Value::Bool(false)));
            match self.dialect {
                Dialect::OpenAiStrict | Dialect::AnthropicStrict => {
                    if free_form && additional.is_none() {
                        self.refuse(path, Construct::Map);
                    }
                    out.insert("additionalProperties".into(), Value::Bool(false));
                    out.entry("properties").or_insert(Value::Object(Map::new()));
                }
                Dialect::GeminiOpenApi => match additional {
                    Some(Value::Bool(true) | Value::Object(_)) => {
                        let p = format!("{path}/additionalProperties");
                        self.refuse(&p, Construct::Map);
                    }
                    _ if free_form => {
                        self.refuse(path, Construct::Map);
                    }
                    _ => {}
                },
                Dialect::GeminiJsonSchema => {}
            }
            if self.dialect == Dialect::OpenAiStrict {
                // Every property is required; an optional one already admits null (an
                // `Option<T>`), or it has a default and stays required without null, since a
                // `null` would not deserialize into it.
                if let Some(Value::Object(props)) = out.get("properties") {
                    let all: Vec<Value> = props.keys().cloned().map(Value::String).collect();
                    out.insert("required".into(), Value::Array(all));
                }
            }
            if root && self.dialect == Dialect::GeminiOpenApi {
                let names: Vec<String> = out
                    .get("properties")
                    .and_then(Value::as_object)
                    .map(|p| p.keys().cloned().collect())
                    .unwrap_or_default();
                for name in names {
                    if !gemini_parameter_name(&name) {
                        self.refuse(
                            &format!("/properties/{}", escape_pointer(&name)),
                            Construct::ParameterName { name },
                        );
                    }
                }
            }
        }

        // Types in the dialect's form.
        match self.dialect {
            Dialect::AnthropicStrict => split_type_union(&mut out, false),
            Dialect::GeminiOpenApi => self.gemini_types(&mut out, &mut notes),
            Dialect::OpenAiStrict | Dialect::GeminiJsonSchema => {}
        }

        if let Some(description) =
            with_notes(out.get("description").and_then(Value::as_str), &notes)
        {
            out.insert("description".into(), Value::String(description));
        }
        Value::Object(out)
    }

    /// Gemini's OpenAPI subset: one upper-case `type` plus `nullable`, string-only enums, no
    /// `null` branches.
    fn gemini_types(&mut self, out: &mut Map<String, Value>, notes: &mut Vec<String>) {
        let mut nullable = false;
        // `null` in an enum, or a `null` branch of `anyOf`, is `nullable`.
        if let Some(Value::Array(values)) = out.get_mut("enum") {
            if values.contains(&Value::Null) {
                values.retain(|v| !v.is_null());
                nullable = true;
            }
        }
        if out.get("nullable") == Some(&Value::Bool(true)) {
            nullable = true;
        }
        // Enums of numbers or booleans have no Gemini form: restated.
        if let Some(Value::Array(values)) = out.get("enum") {
            if values.iter().any(|v| !v.is_string()) {
                let shown: Vec<String> = values.iter().map(show).collect();
                notes.push(format!("One of: {}.", shown.join(", ")));
                out.remove("enum");
            }
        }
        let types: Vec<String> = match out.get("type") {
            Some(Value::String(t)) => vec![t.clone()],
            Some(Value::Array(ts)) => ts
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect(),
            _ => Vec::new(),
        };
        if types.iter().any(|t| t == "null") {
            nullable = true;
        }
        let non_null: Vec<String> = types.into_iter().filter(|t| t != "null").collect();
        match non_null.len() {
            0 => {
                out.remove("type");
            }
            1 => {
                out.insert("type".into(), Value::String(non_null[0].to_uppercase()));
            }
            _ => {
                split_type_union(out, true);
            }
        }
        if nullable {
            out.insert("nullable".into(), Value::Bool(true));
        }
    }

    fn check_openai_limits(&mut self, root: &Value) {
        // OpenAI documents these limits for strict schemas.
        const MAX_PROPERTIES: usize = 5000;
        const MAX_DEPTH: usize = 10;
        const MAX_ENUM_VALUES: usize = 1000;
        fn count(v: &Value, props: &mut usize, enums: &mut usize) {
            match v {
                Value::Object(map) => {
                    if let Some(Value::Object(p)) = map.get("properties") {
                        *props += p.len();
                    }
                    if let Some(Value::Array(e)) = map.get("enum") {
                        *enums += e.len();
                    }
                    map.iter()
                        .filter(|(k, _)| k.as_str() != "enum")
                        .for_each(|(_, child)| count(child, props, enums));
                }
                Value::Array(items) => items.iter().for_each(|i| count(i, props, enums)),
                _ => {}
            }
        }
        // Object nesting, following references (a recursive one is not followed again).
        fn depth<'a>(
            v: &'a Value,
            defs: Option<&'a Map<String, Value>>,
            stack: &mut Vec<&'a str>,
        ) -> usize {
            match v {
                Value::Object(map) => {
                    let own = usize::from(map.contains_key("properties"));
                    let mut deepest = 0;
                    if let Some(name) = map.get("$ref").and_then(Value::as_str).and_then(def_name) {
                        if let Some(def) = defs.and_then(|d| d.get(name)) {
                            if !stack.contains(&name) {
                                stack.push(name);
                                deepest = deepest.max(depth(def, defs, stack));
                                stack.pop();
                            }
                        }
                    }
                    for (k, child) in map {
                        if k != "$defs" && k != "enum" {
                            deepest = deepest.max(depth(child, defs, stack));
                        }
                    }
                    own + deepest
                }
                Value::Array(items) => items
                    .iter()
                    .map(|i| depth(i, defs, stack))
                    .max()
                    .unwrap_or(0),
                _ => 0,
            }
        }
        let (mut props, mut enums) = (0, 0);
        count(root, &mut props, &mut enums);
        let defs = root.get("$defs").and_then(Value::as_object);
        let deepest = depth(root, defs, &mut Vec::new());
        for (what, limit, actual) in [
            ("object properties", MAX_PROPERTIES, props),
            ("levels of object nesting", MAX_DEPTH, deepest),
            ("enum values", MAX_ENUM_VALUES, enums),
        ] {
            if actual > limit {
                self.refuse(
                    "",
                    Construct::Limit {
                        what,
                        limit,
                        actual,
                    },
                );
            }
        }
    }
}

/// One branch of a `oneOf` that is a single constant (a documented enum variant).
struct Constant {
    value: Value,
    description: Option<String>,
    ty: Option<String>,
}

/// The branches as constants, when every one is a constant with at most a type, a title and a
/// description beside it.
fn constants_of(branches: &[Value]) -> Option<Vec<Constant>> {
    branches
        .iter()
        .map(|b| {
            let b = b.as_object()?;
            let value = b.get("const").cloned().or_else(|| {
                b.get("enum")
                    .and_then(Value::as_array)
                    .filter(|e| e.len() == 1)
                    .map(|e| e[0].clone())
            })?;
            let known = b.keys().all(|k| {
                matches!(
                    k.as_str(),
                    "const" | "enum" | "type" | "description" | "title"
                )
            });
            known.then(|| Constant {
                value,
                description: b
                    .get("description")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
                ty: b.get("type").and_then(Value::as_str).map(str::to_owned),
            })
        })
        .collect()
}

fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_f64() => "number",
        Value::Number(_) => "integer",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// The keywords that apply to one JSON type, for splitting `type: [a, b]` into `anyOf`.
fn keyword_type(keyword: &str) -> Option<&'static [&'static str]> {
    Some(match keyword {
        "minLength" | "maxLength" | "pattern" => &["string"],
        "format" => &["string", "integer", "number"],
        "minimum" | "maximum" | "exclusiveMinimum" | "exclusiveMaximum" | "multipleOf" => {
            &["integer", "number"]
        }
        "items" | "prefixItems" | "minItems" | "maxItems" | "uniqueItems" => &["array"],
        "properties" | "required" | "additionalProperties" | "minProperties" | "maxProperties" => {
            &["object"]
        }
        _ => return None,
    })
}

/// `type: [string, null]` becomes `anyOf: [{type: string, ...}, {type: null}]`, each branch
/// with the keywords of its type. With `gemini`, types are upper-case and `null` is left to
/// `nullable`.
fn split_type_union(out: &mut Map<String, Value>, gemini: bool) {
    let Some(Value::Array(types)) = out.get("type").cloned() else {
        return;
    };
    let types: Vec<String> = types
        .iter()
        .filter_map(Value::as_str)
        .filter(|t| !(gemini && *t == "null"))
        .map(str::to_owned)
        .collect();
    if types.len() == 1 && !gemini {
        out.insert("type".into(), Value::String(types[0].clone()));
        return;
    }
    out.remove("type");
    let enum_values = out.remove("enum");
    let mut branches = Vec::new();
    for ty in &types {
        let mut branch = Map::new();
        branch.insert(
            "type".into(),
            Value::String(if gemini {
                ty.to_uppercase()
            } else {
                ty.clone()
            }),
        );
        let keys: Vec<String> = out.keys().cloned().collect();
        for key in keys {
            if let Some(applies) = keyword_type(&key) {
                if applies.contains(&ty.as_str()) {
                    if let Some(v) = out.get(&key) {
                        branch.insert(key.clone(), v.clone());
                    }
                }
            }
        }
        if let Some(Value::Array(values)) = &enum_values {
            let mine: Vec<Value> = values
                .iter()
                .filter(|v| {
                    let t = json_type(v);
                    t == ty || (t == "integer" && ty == "number")
                })
                .cloned()
                .collect();
            if ty != "null" {
                branch.insert("enum".into(), Value::Array(mine));
            }
        }
        branches.push(Value::Object(branch));
    }
    out.retain(|k, _| keyword_type(k).is_none());
    out.insert("anyOf".into(), Value::Array(branches));
}

/// Gemini parameter names: a letter or underscore, then letters, digits and underscores, at
/// most 64 in all.
fn gemini_parameter_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && name.len() <= 64
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn patterns_with_lookaround_or_backreferences_are_not_grammar_friendly() {
        assert!(grammar_friendly("^[A-Z]{3}$"));
        assert!(grammar_friendly(r"^\d+(\.\d+)?$"));
        assert!(!grammar_friendly(r"^(?=.*\d).+$"));
        assert!(!grammar_friendly(r"(a)\1"));
        assert!(!grammar_friendly(r"\bword\b"));
    }

    #[test]
    fn recursive_definitions_are_found_through_other_definitions() {
        let defs = json!({
            "A": {"properties": {"b": {"$ref": "#/$defs/B"}}},
            "B": {"properties": {"a": {"$ref": "#/$defs/A"}}},
            "C": {"type": "string"}
        });
        let found = recursive_defs(defs.as_object().unwrap());
        assert!(found.contains("A") && found.contains("B") && !found.contains("C"));
    }

    #[test]
    fn notes_follow_the_description_as_sentences() {
        assert_eq!(
            with_notes(Some("Words"), &["At most 3 characters.".into()]).as_deref(),
            Some("Words. At most 3 characters.")
        );
        assert_eq!(
            with_notes(None, &["Items must be unique.".into()]).as_deref(),
            Some("Items must be unique.")
        );
    }
}
