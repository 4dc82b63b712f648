//! Where a tool's result carries ids, and finding them in a result.

use serde_json::Value;

/// Where a tool's result carries ids of a kind (`#[tool(grounds(kind = "path"))]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Grounds {
    kind: &'static str,
    path: &'static str,
}

impl Grounds {
    /// Ids of `kind` at `path` in the result: field names joined by `.`, arrays walked at
    /// every step; `""` is the result itself.
    pub const fn new(kind: &'static str, path: &'static str) -> Self {
        Grounds { kind, path }
    }

    /// The kind of id.
    pub const fn kind(&self) -> &'static str {
        self.kind
    }

    /// Where in the result.
    pub const fn path(&self) -> &'static str {
        self.path
    }

    /// Every id this declaration finds in a result.
    pub(crate) fn ids_in(&self, result: &Value, out: &mut Vec<String>) {
        let steps: Vec<&str> = self.path.split('.').filter(|s| !s.is_empty()).collect();
        walk(result, &steps, out);
    }
}

fn walk(value: &Value, steps: &[&str], out: &mut Vec<String>) {
    match (value, steps.split_first()) {
        (Value::Array(items), _) => items.iter().for_each(|item| walk(item, steps, out)),
        (Value::Object(map), Some((first, rest))) => {
            if let Some(next) = map.get(*first) {
                walk(next, rest, out);
            }
        }
        (Value::String(s), None) => out.push(s.clone()),
        (Value::Number(n), None) => out.push(n.to_string()),
        _ => {}
    }
}

/// The prefix of the kinds of id toolwright records itself (the deferred tools a search found,
/// `toolwright.found_tool`): a tool may not declare one, or its output could ground what only
/// the registry may.
pub(crate) const RESERVED_PREFIX: &str = "toolwright.";

/// Whether `kind` is one toolwright keeps for itself ([`RESERVED_PREFIX`]).
pub(crate) fn is_reserved(kind: &str) -> bool {
    kind.starts_with(RESERVED_PREFIX)
}

/// Where a path stopped reaching into a result: the steps before the one that names no field,
/// and the fields there are at that point (empty where the value is not an object).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Unreached {
    pub(crate) at: String,
    pub(crate) fields: Vec<String>,
}

/// How deep a schema is followed (through `$ref`s and combinators) before the check gives up
/// and accepts the path: a schema it cannot finish reading is not a reason to refuse.
const MAX_SCHEMA_DEPTH: usize = 64;

impl Grounds {
    /// `None` when some result of `schema` (a JSON Schema of the tool's output) may hold a
    /// value at this path; otherwise where the path stopped and the fields there are. Lenient
    /// where the schema is: an unconstrained value, a map, a reference it cannot follow, or a
    /// schema deeper than it reads all accept any field.
    pub(crate) fn unreached(&self, schema: &Value) -> Option<Unreached> {
        let steps: Vec<&str> = self.path.split('.').filter(|s| !s.is_empty()).collect();
        let mut deepest = Deepest::default();
        if reaches(schema, schema, &steps, 0, 0, &mut deepest) {
            return None;
        }
        let (stopped, mut fields) = deepest.found.unwrap_or((0, Vec::new()));
        fields.sort_unstable();
        fields.dedup();
        Some(Unreached {
            at: steps[..stopped.min(steps.len())].join("."),
            fields,
        })
    }
}

/// The furthest step a path failed at, and the fields there are there (from every branch of
/// the schema that got that far).
#[derive(Default)]
struct Deepest {
    found: Option<(usize, Vec<String>)>,
}

impl Deepest {
    fn note(&mut self, step: usize, fields: impl IntoIterator<Item = String>) {
        match &mut self.found {
            Some((at, known)) if *at == step => known.extend(fields),
            Some((at, _)) if *at > step => {}
            _ => self.found = Some((step, fields.into_iter().collect())),
        }
    }
}

/// Whether a value of `schema` may hold a value at `steps[step..]`, walking arrays at every
/// step as [`Grounds::ids_in`] does. `root` resolves `$ref`s.
fn reaches(
    root: &Value,
    schema: &Value,
    steps: &[&str],
    step: usize,
    depth: usize,
    deepest: &mut Deepest,
) -> bool {
    if step >= steps.len() || depth > MAX_SCHEMA_DEPTH {
        return true;
    }
    let object = match schema {
        Value::Bool(open) => return *open,
        Value::Object(object) => object,
        _ => return true,
    };
    let mut branches: Vec<&Value> = Vec::new();
    if let Some(reference) = object.get("$ref").and_then(Value::as_str) {
        match reference.strip_prefix('#').and_then(|p| root.pointer(p)) {
            Some(target) => branches.push(target),
            None => return true,
        }
    }
    for combinator in ["anyOf", "oneOf", "allOf"] {
        if let Some(list) = object.get(combinator).and_then(Value::as_array) {
            branches.extend(list);
        }
    }
    let mut any = false;
    for branch in &branches {
        any |= reaches(root, branch, steps, step, depth + 1, deepest);
    }
    any || own_shape(
        root,
        object,
        steps,
        step,
        depth,
        deepest,
        branches.is_empty(),
    )
}

/// [`reaches`] for what the schema object says itself, beside its `$ref` and combinators.
/// `alone`: it has neither, so a schema that says nothing accepts anything.
fn own_shape(
    root: &Value,
    object: &serde_json::Map<String, Value>,
    steps: &[&str],
    step: usize,
    depth: usize,
    deepest: &mut Deepest,
    alone: bool,
) -> bool {
    let types: Vec<&str> = match object.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(list)) => list.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    let has = |key: &str| object.contains_key(key);
    let is_array = types.contains(&"array") || has("items") || has("prefixItems");
    let is_object = types.contains(&"object")
        || has("properties")
        || has("additionalProperties")
        || has("patternProperties");
    let mut any = false;
    if is_array {
        let mut items: Vec<&Value> = Vec::new();
        if let Some(prefix) = object.get("prefixItems").and_then(Value::as_array) {
            items.extend(prefix);
        }
        match object.get("items") {
            Some(schema) => items.push(schema),
            None if !has("prefixItems") => return true,
            None => {}
        }
        for item in items {
            any |= reaches(root, item, steps, step, depth + 1, deepest);
        }
    }
    if is_object {
        let properties = object.get("properties").and_then(Value::as_object);
        let field = steps.get(step).copied();
        if let Some(next) = properties.zip(field).and_then(|(p, field)| p.get(field)) {
            any |= reaches(root, next, steps, step + 1, depth + 1, deepest);
        } else if has("patternProperties") {
            return true;
        } else {
            match object.get("additionalProperties") {
                Some(Value::Bool(false)) => {}
                Some(values) => any |= reaches(root, values, steps, step + 1, depth + 1, deepest),
                None if properties.is_none() => return true,
                None => {}
            }
            deepest.note(step, properties.into_iter().flat_map(|p| p.keys().cloned()));
        }
    }
    if is_array || is_object {
        return any;
    }
    if types.is_empty() && !has("const") && !has("enum") {
        // Says nothing of its shape: anything, unless its combinators said.
        return alone;
    }
    if types.is_empty() {
        // `const` or `enum`: reached where one of its values is an object or a list.
        let values: Vec<&Value> = object
            .get("const")
            .into_iter()
            .chain(
                object
                    .get("enum")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten(),
            )
            .collect();
        if values.iter().any(|v| v.is_object() || v.is_array()) {
            return true;
        }
    }
    // A string, a number, `null`: no fields.
    deepest.note(step, std::iter::empty());
    false
}
