//! What of a call's arguments may be shown to a log or a reviewer: the values of declared,
//! non-sensitive fields. A `#[arg(sensitive)]` field's value is replaced, and so is the value
//! of every key the tool's schema does not declare: a misspelled `card_numbr` is exactly the
//! `unknown_argument` failure that gets logged, and its value is whatever the model meant to
//! put in `card_number`.

use serde_json::{Map, Value};

use crate::tool::spec::FieldMeta;

/// What replaces a value that is not shown.
pub const REDACTED: &str = "[redacted]";

/// How deep the walk goes before it stops showing anything (a schema can be recursive).
const MAX_DEPTH: usize = 64;

/// The argument text with every sensitive or undeclared value replaced; text that is not a JSON
/// object is described by its length only (it may be anything the model sent).
pub(crate) fn redacted(text: &str, schema: &Value, fields: &[FieldMeta]) -> String {
    let Ok(Value::Object(mut map)) = serde_json::from_str::<Value>(text) else {
        return format!("<not a JSON object, {} bytes>", text.len());
    };
    let properties = schema.get("properties").and_then(Value::as_object);
    for (key, value) in &mut map {
        let sensitive = fields.iter().any(|f| f.name() == key && f.is_sensitive());
        match properties.and_then(|p| p.get(key)) {
            Some(property) if !sensitive => conceal(value, property, schema, 0),
            _ => *value = Value::from(REDACTED),
        }
    }
    Value::Object(map).to_string()
}

/// The argument text with the values of the call's `#[arg(sensitive)]` fields replaced, and
/// nothing else changed: what a recording keeps of a call, so that replaying it still sends the
/// same undeclared keys and the same values everywhere else. `None` when nothing is sensitive or
/// the text is not a JSON object (then there is nothing to find a field in).
pub(crate) fn without_sensitive(text: &str, fields: &[FieldMeta]) -> Option<String> {
    if !fields.iter().any(FieldMeta::is_sensitive) {
        return None;
    }
    let Ok(Value::Object(mut map)) = serde_json::from_str::<Value>(text) else {
        return None;
    };
    for field in fields.iter().filter(|f| f.is_sensitive()) {
        if let Some(value) = map.get_mut(field.name()) {
            *value = Value::from(REDACTED);
        }
    }
    Some(Value::Object(map).to_string())
}

/// `message` (a contained panic's) with every value of the call's `#[arg(sensitive)]` fields
/// replaced by [`REDACTED`]: a tool body that panics quoting its own argument
/// (`panic!("declined {card_number}")`) must not put the card number into the log. Runs only on
/// that cold path; the values are read from the argument text again.
pub(crate) fn scrubbed(message: &str, arguments: &str, fields: &[FieldMeta]) -> String {
    if !fields.iter().any(FieldMeta::is_sensitive) {
        return message.to_owned();
    }
    let Ok(Value::Object(map)) = serde_json::from_str::<Value>(arguments) else {
        return message.to_owned();
    };
    let mut secrets = Vec::new();
    for field in fields.iter().filter(|f| f.is_sensitive()) {
        if let Some(value) = map.get(field.name()) {
            leaves(value, &mut secrets, 0);
        }
    }
    // Longest first, so a value that contains another is replaced whole.
    secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
    secrets.iter().fold(message.to_owned(), |text, secret| {
        text.replace(secret.as_str(), REDACTED)
    })
}

/// The strings and numbers inside `value`, as text.
fn leaves(value: &Value, out: &mut Vec<String>, depth: usize) {
    match value {
        Value::String(s) if !s.is_empty() => out.push(s.clone()),
        Value::Number(n) => out.push(n.to_string()),
        Value::Array(items) if depth < MAX_DEPTH => {
            items.iter().for_each(|v| leaves(v, out, depth + 1));
        }
        Value::Object(map) if depth < MAX_DEPTH => {
            map.values().for_each(|v| leaves(v, out, depth + 1));
        }
        _ => {}
    }
}

/// Replaces, inside `value`, every value at a key `schema` does not declare.
fn conceal(value: &mut Value, schema: &Value, root: &Value, depth: usize) {
    if depth > MAX_DEPTH {
        *value = Value::from(REDACTED);
        return;
    }
    let schema = resolve(schema, root);
    match value {
        Value::Object(map) => {
            let Some(object) = object_schema(schema, root) else {
                conceal_all(map);
                return;
            };
            let properties = object.get("properties").and_then(Value::as_object);
            let additional = object.get("additionalProperties").filter(|a| a.is_object());
            for (key, inner) in map.iter_mut() {
                match properties.and_then(|p| p.get(key)).or(additional) {
                    Some(inner_schema) => conceal(inner, inner_schema, root, depth + 1),
                    None => *inner = Value::from(REDACTED),
                }
            }
        }
        Value::Array(items) => {
            let item_schema = alternatives(schema, root)
                .find_map(|s| s.get("items"))
                .cloned()
                .unwrap_or(Value::Bool(false));
            for item in items {
                conceal(item, &item_schema, root, depth + 1);
            }
        }
        _ => {}
    }
}

fn conceal_all(map: &mut Map<String, Value>) {
    for value in map.values_mut() {
        *value = Value::from(REDACTED);
    }
}

/// The subschema that describes an object: the schema itself, or one of its `anyOf`/`oneOf`/
/// `allOf` alternatives (an `Option<Struct>` is `anyOf: [{$ref}, {type: null}]`).
fn object_schema<'a>(schema: &'a Value, root: &'a Value) -> Option<&'a Value> {
    alternatives(schema, root)
        .find(|s| s.get("properties").is_some() || s.get("additionalProperties").is_some())
}

/// `schema` and its direct `anyOf`/`oneOf`/`allOf` alternatives, each resolved.
fn alternatives<'a>(schema: &'a Value, root: &'a Value) -> impl Iterator<Item = &'a Value> {
    let nested = ["anyOf", "oneOf", "allOf"]
        .into_iter()
        .filter_map(move |k| schema.get(k).and_then(Value::as_array))
        .flatten()
        .map(move |s| resolve(s, root));
    std::iter::once(schema).chain(nested)
}

/// Follows a local `$ref` (`#/$defs/Name`, as schemars writes them).
fn resolve<'a>(schema: &'a Value, root: &'a Value) -> &'a Value {
    let mut current = schema;
    for _ in 0..8 {
        let Some(path) = current.get("$ref").and_then(Value::as_str) else {
            return current;
        };
        let Some(pointer) = path.strip_prefix('#') else {
            return current;
        };
        match root.pointer(pointer) {
            Some(target) => current = target,
            None => return current,
        }
    }
    current
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const FIELDS: &[FieldMeta] = &[
        FieldMeta::new("card_number").sensitive(),
        FieldMeta::new("amount"),
        FieldMeta::new("address"),
        FieldMeta::new("tags"),
    ];

    fn schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "card_number": {"type": "string"},
                "amount": {"type": "number"},
                "address": {"anyOf": [{"$ref": "#/$defs/Address"}, {"type": "null"}]},
                "tags": {"type": "object", "additionalProperties": {"type": "string"}},
                "lines": {"type": "array", "items": {"$ref": "#/$defs/Address"}}
            },
            "additionalProperties": false,
            "$defs": {"Address": {"type": "object", "properties": {"street": {"type": "string"}}, "additionalProperties": false}}
        })
    }

    #[test]
    fn sensitive_fields_are_redacted_and_the_rest_kept() {
        let shown = redacted(
            r#"{"card_number":"4111111111111111","amount":5}"#,
            &schema(),
            FIELDS,
        );
        assert_eq!(shown, r#"{"card_number":"[redacted]","amount":5}"#);
    }

    #[test]
    fn values_of_undeclared_keys_are_never_shown_at_any_depth() {
        let text = r#"{"card_numbr":"4111111111111111","address":{"street":"Main St","cvv":"123"},"lines":[{"street":"A","pin":"9"}],"tags":{"vip":"yes"}}"#;
        let shown = redacted(text, &schema(), FIELDS);
        assert!(!shown.contains("4111"), "{shown}");
        assert!(!shown.contains("123"), "{shown}");
        assert!(!shown.contains("\"9\""), "{shown}");
        assert!(
            shown.contains("Main St") && shown.contains("\"yes\""),
            "{shown}"
        );
        assert!(shown.contains(r#""card_numbr":"[redacted]""#), "{shown}");
    }

    #[test]
    fn a_message_quoting_a_sensitive_value_is_scrubbed_and_the_rest_kept() {
        let arguments = r#"{"card_number":"4111111111111111","amount":5}"#;
        assert_eq!(
            scrubbed(
                "declined card 4111111111111111 (\"4111111111111111\") for 5",
                arguments,
                FIELDS
            ),
            "declined card [redacted] (\"[redacted]\") for 5"
        );
        let plain: &[FieldMeta] = &[FieldMeta::new("card_number")];
        assert_eq!(
            scrubbed("card 4111111111111111", arguments, plain),
            "card 4111111111111111",
            "nothing is sensitive"
        );
    }

    #[test]
    fn text_that_is_not_an_object_is_never_shown() {
        assert_eq!(
            redacted(r#"{"card_number":"4111"#, &schema(), FIELDS),
            "<not a JSON object, 20 bytes>"
        );
        assert_eq!(
            redacted(r#"["4111111111111111"]"#, &schema(), FIELDS),
            "<not a JSON object, 20 bytes>"
        );
    }
}
