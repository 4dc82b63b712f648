//! Reading provider JSON: every call a provider's response carries, with each malformed value
//! a [`ParseError`] that names its path and what was expected there.

use std::fmt;

use serde_json::{Map, Value};

use super::provider::Provider;
use crate::validate::push_escaped_pointer;

/// The classes of malformed provider JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ParseErrorKind {
    /// A field the provider always sends is absent.
    Missing,
    /// A field has the wrong JSON type.
    WrongType,
    /// The value is none of the shapes the parser reads (a response, a message, a list).
    UnknownShape,
}

/// Provider JSON that is not what the provider sends: where, and what was expected there.
///
/// ```
/// use serde_json::json;
/// use toolwright::providers::{openai, ParseErrorKind};
///
/// let bad = json!({"choices": [{"message": {"tool_calls": [{"id": "c1", "type": "function", "function": {"name": "x", "arguments": {"a": 1}}}]}}]});
/// let err = openai::parse_calls(&bad).unwrap_err();
/// assert_eq!(err.kind(), ParseErrorKind::WrongType);
/// assert_eq!(err.path(), "/choices/0/message/tool_calls/0/function/arguments");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    provider: Provider,
    kind: ParseErrorKind,
    path: String,
    message: String,
}

impl ParseError {
    /// The provider whose JSON it was.
    pub fn provider(&self) -> Provider {
        self.provider
    }

    /// The class of the problem.
    pub fn kind(&self) -> ParseErrorKind {
        self.kind
    }

    /// JSON Pointer to the offending value (`""` for the whole input).
    pub fn path(&self) -> &str {
        &self.path
    }
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "malformed {} JSON", self.provider)?;
        if !self.path.is_empty() {
            write!(f, " at `{}`", self.path)?;
        }
        write!(f, ": {}", self.message)
    }
}

impl std::error::Error for ParseError {}

fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A position in provider JSON, for reading it with every error naming its path.
pub(crate) struct Node<'a> {
    provider: Provider,
    value: &'a Value,
    path: String,
}

impl<'a> Node<'a> {
    pub(crate) fn root(provider: Provider, value: &'a Value) -> Self {
        Node {
            provider,
            value,
            path: String::new(),
        }
    }

    pub(crate) fn value(&self) -> &'a Value {
        self.value
    }

    pub(crate) fn error(&self, kind: ParseErrorKind, message: impl Into<String>) -> ParseError {
        ParseError {
            provider: self.provider,
            kind,
            path: self.path.clone(),
            message: message.into(),
        }
    }

    fn child(&self, key: &str, value: &'a Value) -> Node<'a> {
        let mut path = String::with_capacity(self.path.len() + 1 + key.len());
        path.push_str(&self.path);
        path.push('/');
        push_escaped_pointer(&mut path, key);
        Node {
            provider: self.provider,
            value,
            path,
        }
    }

    /// A field that must be present (and not null).
    pub(crate) fn field(&self, key: &str) -> Result<Node<'a>, ParseError> {
        let map = self.object()?;
        match map.get(key) {
            Some(Value::Null) | None => Err(self
                .child(key, &Value::Null)
                .error(ParseErrorKind::Missing, format!("`{key}` is missing"))),
            Some(value) => Ok(self.child(key, value)),
        }
    }

    /// A field that may be absent or null.
    pub(crate) fn optional(&self, key: &str) -> Option<Node<'a>> {
        match self.value.as_object()?.get(key) {
            Some(Value::Null) | None => None,
            Some(value) => Some(self.child(key, value)),
        }
    }

    pub(crate) fn object(&self) -> Result<&'a Map<String, Value>, ParseError> {
        self.value
            .as_object()
            .ok_or_else(|| self.wrong("an object"))
    }

    pub(crate) fn str(&self) -> Result<&'a str, ParseError> {
        self.value.as_str().ok_or_else(|| self.wrong("a string"))
    }

    pub(crate) fn items(&self) -> Result<Vec<Node<'a>>, ParseError> {
        let items = self
            .value
            .as_array()
            .ok_or_else(|| self.wrong("an array"))?;
        Ok(items
            .iter()
            .enumerate()
            .map(|(i, v)| self.child(&i.to_string(), v))
            .collect())
    }

    pub(crate) fn wrong(&self, expected: &str) -> ParseError {
        self.error(
            ParseErrorKind::WrongType,
            format!("expected {expected}, got {}", kind_of(self.value)),
        )
    }
}

/// Argument text for providers that send arguments as a JSON object: the object serialized
/// compactly (the registry parses it like any other argument text).
pub(crate) fn argument_text(arguments: Option<&Value>) -> String {
    match arguments {
        None => "{}".to_owned(),
        Some(value) => value.to_string(),
    }
}
