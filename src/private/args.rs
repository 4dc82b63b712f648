//! A tool's arguments: the parts every generated `Deserialize` and `JsonSchema` impl of an
//! `<Fn>Args` struct shares, compiled once instead of once per tool.
//!
//! `#[tool]` writes each arguments struct's `Deserialize` impl itself, as a map visitor only:
//! the arguments are a JSON object (their schema says so), so there is no sequence visitor to
//! compile, and an array of values is refused as the wrong type instead of being read
//! positionally. The field names, the "missing", "unknown" and "duplicate field" errors and the
//! `None` of an absent `Option` are serde's own, as its derive produces them.
//!
//! It writes the `JsonSchema` impl as one call of [`args_schema`] with a row per parameter: the
//! schema schemars' derive builds for the same struct (`deny_unknown_fields`, doc comments as
//! title and description, defaults), built by one function instead of by code per field.

use std::fmt;
use std::marker::PhantomData;

use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde::de::{self, Deserialize, DeserializeSeed, Deserializer, MapAccess, Visitor};
use serde_json::Value;

/// A map key read as the index of a parameter's name among `names`; any other name is serde's
/// "unknown field" error (the arguments struct denies unknown fields).
#[derive(Clone, Copy)]
pub struct FieldIndex(pub &'static [&'static str]);

impl<'de> DeserializeSeed<'de> for FieldIndex {
    type Value = usize;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<usize, D::Error> {
        deserializer.deserialize_identifier(self)
    }
}

impl<'de> Visitor<'de> for FieldIndex {
    type Value = usize;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("field identifier")
    }

    fn visit_str<E: de::Error>(self, name: &str) -> Result<usize, E> {
        self.0
            .iter()
            .position(|known| *known == name)
            .ok_or_else(|| E::unknown_field(name, self.0))
    }

    fn visit_bytes<E: de::Error>(self, name: &[u8]) -> Result<usize, E> {
        self.visit_str(&String::from_utf8_lossy(name))
    }
}

/// Reads the value of the parameter `name` into `slot`; a second value for it is serde's
/// "duplicate field" error.
pub fn value_once<'de, T: Deserialize<'de>, A: MapAccess<'de>>(
    slot: &mut Option<T>,
    map: &mut A,
    name: &'static str,
) -> Result<(), A::Error> {
    if slot.is_some() {
        return Err(<A::Error as de::Error>::duplicate_field(name));
    }
    *slot = Some(map.next_value()?);
    Ok(())
}

/// The value read for the parameter `name`, or, if the call did not send it, `missing`'s
/// value.
pub fn present<'de, T: Deserialize<'de>, E: de::Error>(
    slot: Option<T>,
    name: &'static str,
) -> Result<T, E> {
    match slot {
        Some(value) => Ok(value),
        None => missing(name),
    }
}

/// The value of a parameter the call did not send: `None` for an `Option` (and any type that
/// reads an absent value as its own), serde's "missing field" error otherwise.
fn missing<'de, T: Deserialize<'de>, E: de::Error>(name: &'static str) -> Result<T, E> {
    T::deserialize(Missing(name, PhantomData))
}

/// The deserializer of an absent value, as serde's derive has it: an `Option` reads `None`,
/// every other type fails with "missing field".
struct Missing<E>(&'static str, PhantomData<E>);

impl<'de, E: de::Error> Deserializer<'de> for Missing<E> {
    type Error = E;

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, E> {
        Err(E::missing_field(self.0))
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, E> {
        visitor.visit_none()
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf unit unit_struct newtype_struct seq tuple
        tuple_struct map struct enum identifier ignored_any
    }
}

/// How the generated `Deserialize` and `JsonSchema` impls reach a parameter's type whatever it
/// is, so a type that is no tool argument is reported once, at the parameter, by the
/// registration's `ToolArgument` bound, and neither these impls nor the `Tool` impl (named by
/// `Registry::builder().tool(..)`) report it again.
///
/// The expansion calls `(&ArgProbe::<T>::NEW).value_once(..)` (and `present`, `schema`):
/// method lookup tries the receiver `&ArgProbe<T>` first, where [`Usable`] has the methods for
/// every `T: ToolArgument`; for any other type it takes the next receiver, `&&ArgProbe<T>`,
/// where [`Unusable`]'s methods refuse. A program with such a parameter never builds (the
/// registration's error), so those never run.
pub struct ArgProbe<T>(PhantomData<fn() -> T>);

impl<T> ArgProbe<T> {
    /// The probe of `T`.
    pub const NEW: Self = ArgProbe(PhantomData);
}

/// The probe's methods for a usable parameter type (see [`ArgProbe`]).
pub trait Usable<T> {
    /// [`value_once`].
    fn value_once<'de, A: MapAccess<'de>>(
        &self,
        slot: &mut Option<T>,
        map: &mut A,
        name: &'static str,
    ) -> Result<(), A::Error>;
    /// [`present`].
    fn present<E: de::Error>(&self, slot: Option<T>, name: &'static str) -> Result<T, E>;
    /// [`ArgSchema::of`].
    fn schema(&self, name: &'static str, doc: &'static str) -> ArgSchema;
}

impl<T: crate::__private_v0_1::ToolArgument> Usable<T> for ArgProbe<T> {
    fn value_once<'de, A: MapAccess<'de>>(
        &self,
        slot: &mut Option<T>,
        map: &mut A,
        name: &'static str,
    ) -> Result<(), A::Error> {
        value_once(slot, map, name)
    }

    fn present<E: de::Error>(&self, slot: Option<T>, name: &'static str) -> Result<T, E> {
        present(slot, name)
    }

    fn schema(&self, name: &'static str, doc: &'static str) -> ArgSchema {
        ArgSchema::of::<T>(name, doc)
    }
}

/// The probe's methods for a type that is no tool argument (see [`ArgProbe`]): they refuse.
pub trait Unusable<T> {
    /// Refuses the value.
    fn value_once<'de, A: MapAccess<'de>>(
        &self,
        slot: &mut Option<T>,
        map: &mut A,
        name: &'static str,
    ) -> Result<(), A::Error>;
    /// Refuses the value.
    fn present<E: de::Error>(&self, slot: Option<T>, name: &'static str) -> Result<T, E>;
    /// A schema that admits nothing.
    fn schema(&self, name: &'static str, doc: &'static str) -> ArgSchema;
}

impl<T> Unusable<T> for &ArgProbe<T> {
    fn value_once<'de, A: MapAccess<'de>>(
        &self,
        _: &mut Option<T>,
        _: &mut A,
        name: &'static str,
    ) -> Result<(), A::Error> {
        Err(de::Error::custom(format_args!(
            "`{name}` is not a tool argument"
        )))
    }

    fn present<E: de::Error>(&self, _: Option<T>, name: &'static str) -> Result<T, E> {
        Err(E::custom(format_args!("`{name}` is not a tool argument")))
    }

    fn schema(&self, name: &'static str, doc: &'static str) -> ArgSchema {
        ArgSchema {
            name,
            doc,
            schema: |_| json_schema!(false),
            is_option: || false,
            default: None,
        }
    }
}

/// One parameter of a tool, as its arguments' schema describes it.
pub struct ArgSchema {
    /// The JSON name.
    pub name: &'static str,
    /// The doc comment, lines joined with `\n` (schemars' reading of it: a first line starting
    /// with `#` is the title, the rest the description).
    pub doc: &'static str,
    /// `SchemaGenerator::subschema_for::<T>`.
    pub schema: fn(&mut SchemaGenerator) -> Schema,
    /// Whether `T` is an `Option` (absent means `None`, so not required).
    pub is_option: fn() -> bool,
    /// The `#[arg(default = ..)]` value, as JSON when `T` is `Serialize`.
    pub default: Option<fn() -> Option<Value>>,
}

impl ArgSchema {
    /// A parameter of type `T`.
    pub fn of<T: JsonSchema>(name: &'static str, doc: &'static str) -> ArgSchema {
        ArgSchema {
            name,
            doc,
            schema: SchemaGenerator::subschema_for::<T>,
            is_option: T::_schemars_private_is_option,
            default: None,
        }
    }

    /// With the value an absent argument takes.
    pub fn with_default(mut self, default: fn() -> Option<Value>) -> ArgSchema {
        self.default = Some(default);
        self
    }
}

/// The schema of a tool's arguments: a closed object with a property per parameter, as
/// schemars' derive writes it for a struct with `#[serde(deny_unknown_fields)]`.
pub fn args_schema(generator: &mut SchemaGenerator, doc: &str, args: &[ArgSchema]) -> Schema {
    let mut schema = json_schema!({
        "type": "object",
        "additionalProperties": false,
    });
    for arg in args {
        let mut property = (arg.schema)(generator);
        describe(&mut property, arg.doc);
        if let Some(value) = arg.default.and_then(|default| default()) {
            property.insert("default".into(), value);
        }
        let optional =
            generator.contract().is_deserialize() && (arg.default.is_some() || (arg.is_option)());
        let object = schema.ensure_object();
        if let Some(properties) = object
            .entry("properties")
            .or_insert_with(|| Value::Object(Default::default()))
            .as_object_mut()
        {
            properties.insert(arg.name.to_owned(), property.into());
        }
        if !optional {
            if let Some(required) = object
                .entry("required")
                .or_insert_with(|| Value::Array(Vec::new()))
                .as_array_mut()
            {
                required.push(arg.name.into());
            }
        }
    }
    describe(&mut schema, doc);
    schema
}

/// A doc comment as `title` and `description`, each only when not empty.
fn describe(schema: &mut Schema, doc: &str) {
    let (title, description) = title_and_description(doc);
    if !title.is_empty() {
        schema.insert("title".into(), title.into());
    }
    if !description.is_empty() {
        schema.insert("description".into(), description.into());
    }
}

/// schemars' reading of a doc comment: a first line starting with `#` is the title (without the
/// `#`s), the rest the description; otherwise all of it is the description. ASCII whitespace
/// trimmed at both ends of each.
fn title_and_description(doc: &str) -> (&str, &str) {
    let doc = trim_ascii(doc);
    if !doc.starts_with('#') {
        return ("", doc);
    }
    let end = doc.find('\n').unwrap_or(doc.len());
    (
        trim_ascii(doc[..end].trim_start_matches('#')),
        trim_ascii(&doc[end..]),
    )
}

fn trim_ascii(text: &str) -> &str {
    text.trim_matches(|c: char| c.is_ascii_whitespace())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A hand-written arguments struct as `#[tool]` writes them: `a` required, `b` optional.
    #[derive(Debug, PartialEq)]
    struct Args {
        a: u32,
        b: Option<String>,
    }

    impl<'de> Deserialize<'de> for Args {
        fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
            struct V;
            impl<'de> Visitor<'de> for V {
                type Value = Args;
                fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                    f.write_str("struct Args")
                }
                fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Args, A::Error> {
                    const FIELDS: &[&str] = &["a", "b"];
                    let (mut a, mut b) = (None, None);
                    while let Some(i) = map.next_key_seed(FieldIndex(FIELDS))? {
                        match i {
                            0 => value_once(&mut a, &mut map, "a"),
                            _ => value_once(&mut b, &mut map, "b"),
                        }?;
                    }
                    Ok(Args {
                        a: present(a, "a")?,
                        b: present(b, "b")?,
                    })
                }
            }
            deserializer.deserialize_map(V)
        }
    }

    fn read(text: &str) -> Result<Args, String> {
        serde_json::from_str(text).map_err(|e| e.to_string())
    }

    #[test]
    fn reads_fields_in_any_order_and_an_absent_option_as_none() {
        let both = Args {
            a: 1,
            b: Some("x".into()),
        };
        assert_eq!(read(r#"{"a": 1, "b": "x"}"#), Ok(both));
        let reversed = read(r#"{"b": "x", "a": 1}"#).map(|args| args.a);
        assert_eq!(reversed, Ok(1));
        assert_eq!(read(r#"{"a": 2}"#), Ok(Args { a: 2, b: None }));
        // An escaped key is the same name.
        assert_eq!(read(r#"{"\u0061": 3}"#), Ok(Args { a: 3, b: None }));
    }

    #[test]
    fn refuses_as_serde_derive_does_with_its_messages() {
        assert_eq!(
            read(r#"{"b": "x"}"#),
            Err("missing field `a` at line 1 column 10".into())
        );
        assert_eq!(
            read(r#"{"a": 1, "c": 2}"#),
            Err("unknown field `c`, expected `a` or `b` at line 1 column 12".into())
        );
        assert_eq!(
            read(r#"{"a": 1, "a": 2}"#),
            Err("duplicate field `a` at line 1 column 12".into())
        );
        assert_eq!(
            read(r#"{"a": "1"}"#),
            Err("invalid type: string \"1\", expected u32 at line 1 column 9".into())
        );
    }

    #[test]
    fn an_array_of_values_is_the_wrong_type_not_read_by_position() {
        assert_eq!(
            read(r#"[1, "x"]"#),
            Err("invalid type: sequence, expected struct Args at line 1 column 0".into())
        );
        assert_eq!(
            read("null"),
            Err("invalid type: null, expected struct Args at line 1 column 4".into())
        );
    }

    #[test]
    fn a_missing_option_is_none_and_a_missing_value_names_its_field() {
        let none: Result<Option<u8>, serde_json::Error> = missing("x");
        assert_eq!(none.map_err(|e| e.to_string()), Ok(None));
        let absent: Result<u8, serde_json::Error> = missing("x");
        assert_eq!(
            absent.map_err(|e| e.to_string()),
            Err("missing field `x`".to_string())
        );
        let bytes: Result<usize, serde_json::Error> = FieldIndex(&["x"]).visit_bytes(b"x");
        assert_eq!(bytes.map_err(|e| e.to_string()), Ok(0));
    }

    #[test]
    fn doc_comments_split_into_title_and_description_as_schemars_splits_them() {
        let docs = [
            "",
            "  plain text  ",
            "# Title",
            "## Title\n\nThe body,\nover two lines. ",
            "#",
            "# Title\r\n body ",
            "not # a title",
            "\n\t# A title after blank lines\nbody",
            "# Tïtle with ünïcode\nbödy",
        ];
        for doc in docs {
            let theirs = schemars::_private::get_title_and_description(doc);
            assert_eq!(title_and_description(doc), theirs, "{doc:?}");
        }
    }
}
