//! Schema shaping: a generated JSON Schema made fit for a model (no noise, integer bounds
//! stated, the declared field rules written into it).

use schemars::JsonSchema;
use serde_json::{Map, Value};

use super::spec::{FieldMeta, Number, Rule};
use crate::wording::article;

pub(crate) fn root_schema<T: JsonSchema + ?Sized>() -> Value {
    let generator = schemars::generate::SchemaSettings::draft2020_12().into_generator();
    tidy_root(generator.into_root_schema_for::<T>().to_value())
}

/// A tool's generated input schema with its declared field rules written in, grounded fields
/// described in words, and the argument struct's own doc left out.
pub(crate) fn shape_input(input: &mut Value, fields: &[FieldMeta]) {
    if let Some(props) = input.get_mut("properties").and_then(Value::as_object_mut) {
        for field in fields {
            if let Some(prop) = props.get_mut(field.name()).and_then(Value::as_object_mut) {
                apply_rules(prop, field.declared_rules());
                if let Some(kind) = field.grounded_kind() {
                    // No JSON Schema keyword says "an id you were given": say it in words.
                    let note = format!(
                        "Must be {} id returned by a tool in this conversation; never invent one.",
                        article(kind)
                    );
                    let description = match prop.get("description").and_then(Value::as_str) {
                        Some(d) => format!("{} {note}", d.trim_end()),
                        None => note,
                    };
                    prop.insert("description".into(), Value::String(description));
                }
            }
        }
    }
    if let Some(obj) = input.as_object_mut() {
        // The tool's description is the description; the argument struct's doc is noise.
        obj.remove("description");
        // An argument struct with no fields still has to be an object for every provider.
        obj.entry("properties")
            .or_insert_with(|| Value::Object(Map::new()));
    }
}

/// A generated root schema without what a model does not need.
fn tidy_root(mut value: Value) -> Value {
    if let Some(obj) = value.as_object_mut() {
        // The draft is fixed by the settings; the title is the Rust type's name, noise to a model.
        obj.remove("$schema");
        obj.remove("title");
    }
    bound_integers(&mut value, 0);
    value
}

/// A Rust integer type: its name, width and range, found by the name serde uses in its errors
/// or by the `format` schemars writes for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct IntegerType {
    pub(crate) rust: &'static str,
    pub(crate) bits: u32,
    pub(crate) min: i128,
    pub(crate) max: u128,
}

impl IntegerType {
    const ALL: &'static [(&'static str, &'static str, IntegerType)] = &[
        ("u8", "uint8", IntegerType::new("u8", 8, 0, u8::MAX as u128)),
        (
            "u16",
            "uint16",
            IntegerType::new("u16", 16, 0, u16::MAX as u128),
        ),
        (
            "u32",
            "uint32",
            IntegerType::new("u32", 32, 0, u32::MAX as u128),
        ),
        (
            "u64",
            "uint64",
            IntegerType::new("u64", 64, 0, u64::MAX as u128),
        ),
        (
            "u128",
            "uint128",
            IntegerType::new("u128", 128, 0, u128::MAX),
        ),
        (
            "usize",
            "uint",
            IntegerType::new("usize", usize::BITS, 0, usize::MAX as u128),
        ),
        (
            "i8",
            "int8",
            IntegerType::new("i8", 8, i8::MIN as i128, i8::MAX as u128),
        ),
        (
            "i16",
            "int16",
            IntegerType::new("i16", 16, i16::MIN as i128, i16::MAX as u128),
        ),
        (
            "i32",
            "int32",
            IntegerType::new("i32", 32, i32::MIN as i128, i32::MAX as u128),
        ),
        (
            "i64",
            "int64",
            IntegerType::new("i64", 64, i64::MIN as i128, i64::MAX as u128),
        ),
        (
            "i128",
            "int128",
            IntegerType::new("i128", 128, i128::MIN, i128::MAX as u128),
        ),
        (
            "isize",
            "int",
            IntegerType::new("isize", isize::BITS, isize::MIN as i128, isize::MAX as u128),
        ),
    ];

    const fn new(rust: &'static str, bits: u32, min: i128, max: u128) -> Self {
        IntegerType {
            rust,
            bits,
            min,
            max,
        }
    }

    /// The type serde names `rust` (`"u32"`) in its errors.
    pub(crate) fn by_rust_name(rust: &str) -> Option<IntegerType> {
        Self::ALL.iter().find(|t| t.0 == rust).map(|t| t.2)
    }

    /// The type schemars writes as `format` (`"uint32"`).
    pub(crate) fn by_format(format: &str) -> Option<IntegerType> {
        Self::ALL.iter().find(|t| t.1 == format).map(|t| t.2)
    }

    /// "a 32-bit unsigned integer (0 to 4294967295)", for a model to act on.
    pub(crate) fn describe(&self) -> String {
        let sign = if self.min < 0 { "signed" } else { "unsigned" };
        let article = if self.bits == 8 { "an" } else { "a" };
        format!(
            "{article} {}-bit {sign} integer ({} to {})",
            self.bits, self.min, self.max
        )
    }

    /// The bounds as JSON numbers, when a JSON double holds them exactly and every provider
    /// reads them (up to 32 bits; 64-bit bounds round when read as doubles).
    fn schema_bounds(&self) -> Option<(Value, Value)> {
        if self.bits > 32 {
            return None;
        }
        let min = i64::try_from(self.min).ok()?;
        let max = u64::try_from(self.max).ok()?;
        Some((Value::from(min), Value::from(max)))
    }
}

/// Writes the range of every bounded integer type (schemars' `format: "uint32"`, `"int8"`, ...)
/// as `minimum`/`maximum` where the schema has none, or one looser than the type allows, so a
/// provider or a model reading the schema knows `300` does not fit a `u8`. A declared bound
/// stricter than the type's is kept; an `enum` already says which values fit.
fn bound_integers(schema: &mut Value, depth: usize) {
    if depth > 64 {
        return;
    }
    match schema {
        Value::Object(node) => {
            let bounds = node
                .get("format")
                .and_then(Value::as_str)
                .and_then(IntegerType::by_format)
                .filter(|_| types_of(node).contains(&"integer"))
                .filter(|_| !node.contains_key("enum") && !node.contains_key("const"))
                .and_then(|t| t.schema_bounds());
            if let Some((min, max)) = bounds {
                let looser =
                    |old: Option<&Value>, new: &Value, stricter: fn(f64, f64) -> bool| match (
                        old.and_then(Value::as_f64),
                        new.as_f64(),
                    ) {
                        (Some(old), Some(new)) => stricter(new, old),
                        _ => true,
                    };
                if looser(node.get("minimum"), &min, |new, old| new > old) {
                    node.insert("minimum".into(), min);
                }
                if looser(node.get("maximum"), &max, |new, old| new < old) {
                    node.insert("maximum".into(), max);
                }
            }
            for (key, child) in node.iter_mut() {
                match (key.as_str(), child) {
                    // Maps from a name to a schema: a property may be called `default`.
                    (
                        "properties" | "$defs" | "definitions" | "patternProperties",
                        Value::Object(map),
                    ) => {
                        for schema in map.values_mut() {
                            bound_integers(schema, depth + 1);
                        }
                    }
                    // Values, not schemas: a default or an example is left as written.
                    ("default" | "examples" | "const" | "enum", _) => {}
                    (_, child) => bound_integers(child, depth + 1),
                }
            }
        }
        Value::Array(items) => {
            for item in items {
                bound_integers(item, depth + 1);
            }
        }
        _ => {}
    }
}

fn types_of(prop: &Map<String, Value>) -> Vec<&str> {
    match prop.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

/// Writes the schema keywords of `rules` into a property schema.
fn apply_rules(prop: &mut Map<String, Value>, rules: &[Rule]) {
    let types: Vec<String> = types_of(prop).into_iter().map(str::to_owned).collect();
    let has = |t: &str| types.iter().any(|x| x == t);
    let nullable = has("null");
    for rule in rules {
        match *rule {
            Rule::Range { min, max } => {
                if let Some(min) = min {
                    tighten(prop, "minimum", min, std::cmp::Ordering::Greater);
                }
                if let Some(max) = max {
                    tighten(prop, "maximum", max, std::cmp::Ordering::Less);
                }
            }
            Rule::Length { min, max } => {
                let (lo, hi) = if has("array") {
                    ("minItems", "maxItems")
                } else if has("object") {
                    ("minProperties", "maxProperties")
                } else {
                    ("minLength", "maxLength")
                };
                if let Some(min) = min {
                    prop.insert(lo.into(), Value::from(min));
                }
                if let Some(max) = max {
                    prop.insert(hi.into(), Value::from(max));
                }
            }
            Rule::Pattern(p) => {
                prop.insert("pattern".into(), Value::from(p));
            }
            Rule::OneOf(options) => {
                let mut values: Vec<Value> = options.iter().map(|s| Value::from(*s)).collect();
                if nullable {
                    values.push(Value::Null);
                }
                prop.insert("enum".into(), Value::Array(values));
            }
            Rule::OneOfNumbers(options) => {
                let mut values: Vec<Value> = options.iter().map(|n| n.to_json()).collect();
                if nullable {
                    values.push(Value::Null);
                }
                prop.insert("enum".into(), Value::Array(values));
            }
            Rule::Custom(_) => {}
        }
    }
}

/// Sets a numeric bound unless the schema already has a stricter one (schemars writes
/// `minimum: 0` for unsigned integers; a declared `min = 1` tightens it, `min = -5` does not).
/// `stricter` is how the new bound compares with the old one when it is the stricter: greater
/// for `minimum`, less for `maximum`; integers compare exactly.
fn tighten(prop: &mut Map<String, Value>, key: &str, bound: Number, stricter: std::cmp::Ordering) {
    let keep_old = prop
        .get(key)
        .and_then(|old| bound.cmp_json(old))
        .is_some_and(|order| order != stricter);
    if !keep_old {
        prop.insert(key.into(), bound.to_json());
    }
}
