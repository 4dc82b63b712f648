//! Google Gemini.
//!
//! Export with [`Provider::Gemini`] (`parameters`, the OpenAPI 3.0
//! `Schema` subset: one upper-case `type` plus `nullable`, string-only enums, no `$ref`,
//! `const` or `oneOf`) or [`Provider::GeminiJsonSchema`]
//! (`parametersJsonSchema`). Read `functionCall` parts with [`parse_calls`]; each
//! [`GeminiCall`] keeps the part's `thoughtSignature`, which Gemini requires back when the
//! model's turn is replayed ([`model_content`]). Answer with [`function_response`] parts, all of
//! one turn in one [`user_content`].
//!
//! A tool's example arguments ([`ToolSpec::examples`](crate::ToolSpec::examples)) have no
//! field here; the exported description ends with them, a blank line, `Examples:`, then one
//! compact JSON object per line ([`Provider`] shows the form).

use std::hash::{BuildHasher, RandomState};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

use serde_json::{json, Map, Value};

use super::carriage;
use super::parse::{argument_text, Node, ParseError, ParseErrorKind};
use super::provider::Provider;
use crate::call::ToolCall;
use crate::outcome::{Outcome, Status};
use crate::tool::spec::ToolSpec;

/// The prefix of call ids toolwright mints for calls Gemini sent without one.
/// [`function_response`] leaves such ids out, so Gemini matches the response by name.
pub const MINTED_ID_PREFIX: &str = "tw-gemini-";

pub(crate) fn declaration(spec: &ToolSpec, field: &str, parameters: Value) -> Value {
    let mut declaration = Map::new();
    declaration.insert("name".into(), Value::from(spec.name()));
    declaration.insert(
        "description".into(),
        Value::from(super::provider::described(spec)),
    );
    // Gemini rejects an OBJECT `parameters` with no properties; a function without parameters
    // leaves the field out, as its documentation says.
    let no_parameters = field == "parameters"
        && parameters
            .get("properties")
            .and_then(Value::as_object)
            .is_some_and(Map::is_empty);
    if !no_parameters {
        declaration.insert(field.into(), parameters);
    }
    Value::Object(declaration)
}

/// Gemini's `tools` field holds one `Tool` with every declaration.
pub(crate) fn tools_field(declarations: Vec<Value>) -> Value {
    json!([{"functionDeclarations": declarations}])
}

/// Gemini function names: a letter or underscore first, then letters, digits, `_`, `.`, `:`
/// and `-`, at most 64 in all.
pub(crate) fn valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | ':' | '-'))
        && name.len() <= 64
}

/// A `functionCall` part: the call for the registry, and what Gemini needs back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GeminiCall {
    call: ToolCall,
    id: Option<String>,
    thought_signature: Option<String>,
}

impl GeminiCall {
    /// The call to run. Its id is Gemini's, or a minted one starting with
    /// [`MINTED_ID_PREFIX`] when Gemini sent none.
    pub fn call(&self) -> &ToolCall {
        &self.call
    }

    /// The call to run, by value (for [`Registry::call`](crate::Registry::call)).
    pub fn into_call(self) -> ToolCall {
        self.call
    }

    /// The id Gemini sent, if any.
    pub fn gemini_id(&self) -> Option<&str> {
        self.id.as_deref()
    }

    /// The part's opaque `thoughtSignature`, to be sent back unchanged with the model's turn.
    pub fn thought_signature(&self) -> Option<&str> {
        self.thought_signature.as_deref()
    }

    /// The part as Gemini sent it, for replaying the model's turn.
    pub fn to_part(&self) -> Value {
        let mut call = Map::new();
        if let Some(id) = &self.id {
            call.insert("id".into(), Value::from(id.as_str()));
        }
        call.insert("name".into(), Value::from(self.call.name()));
        let args = serde_json::from_str::<Value>(self.call.arguments())
            .unwrap_or_else(|_| Value::Object(Map::new()));
        call.insert("args".into(), args);
        let mut part = Map::new();
        part.insert("functionCall".into(), Value::Object(call));
        if let Some(signature) = &self.thought_signature {
            part.insert("thoughtSignature".into(), Value::from(signature.as_str()));
        }
        Value::Object(part)
    }
}

fn mint_id() -> String {
    // Unique within the process and, through the random hasher keys, across processes, so the
    // idempotency keys derived from call ids never collide between turns or replicas.
    static STATE: OnceLock<RandomState> = OnceLock::new();
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let hash = STATE.get_or_init(RandomState::new).hash_one(n);
    format!("{MINTED_ID_PREFIX}{hash:016x}")
}

/// The `functionCall` parts of a Gemini answer: a whole `generateContent` response (its first
/// candidate), a `Content` (`parts`), or an array of parts. The `args` object becomes the
/// call's argument text; a part's `thoughtSignature` is kept.
///
/// ```
/// # use serde_json::json;
/// let response = json!({"candidates": [{"content": {"role": "model", "parts": [
///     {"functionCall": {"name": "search", "args": {"q": "x"}}, "thoughtSignature": "c2ln"}
/// ]}}]});
/// let calls = toolwright::providers::gemini::parse_calls(&response).unwrap();
/// assert_eq!(calls[0].call().arguments(), r#"{"q":"x"}"#);
/// assert_eq!(calls[0].thought_signature(), Some("c2ln"));
/// ```
pub fn parse_calls(response: &Value) -> Result<Vec<GeminiCall>, ParseError> {
    let root = Node::root(Provider::Gemini, response);
    let parts = match response {
        Value::Array(_) => root,
        Value::Object(map) if map.contains_key("candidates") => {
            let candidates = root.field("candidates")?.items()?;
            let Some(first) = candidates.into_iter().next() else {
                return Ok(Vec::new());
            };
            let Some(content) = first.optional("content") else {
                return Ok(Vec::new());
            };
            match content.optional("parts") {
                Some(parts) => parts,
                None => return Ok(Vec::new()),
            }
        }
        Value::Object(map) if map.contains_key("parts") => match root.optional("parts") {
            Some(parts) => parts,
            None => return Ok(Vec::new()),
        },
        _ => {
            return Err(root.error(
                ParseErrorKind::UnknownShape,
                "expected a generateContent response (`candidates`), a content (`parts`) or an array of parts",
            ))
        }
    };
    let mut calls = Vec::new();
    for part in parts.items()? {
        let Some(function_call) = part.optional("functionCall") else {
            continue;
        };
        let name = function_call.field("name")?.str()?;
        let id = match function_call.optional("id") {
            Some(id) => Some(id.str()?.to_owned()),
            None => None,
        };
        let args = function_call.optional("args");
        if let Some(args) = &args {
            args.object()?;
        }
        let thought_signature = match part.optional("thoughtSignature") {
            Some(signature) => Some(signature.str()?.to_owned()),
            None => None,
        };
        let call_id = id.clone().unwrap_or_else(mint_id);
        calls.push(GeminiCall {
            call: ToolCall::new(call_id, name, argument_text(args.map(|a| a.value()))),
            id,
            thought_signature,
        });
    }
    Ok(calls)
}

/// The model's turn rebuilt from its calls, thought signatures included, for the history of
/// the next request.
pub fn model_content<'a>(calls: impl IntoIterator<Item = &'a GeminiCall>) -> Value {
    let parts: Vec<Value> = calls.into_iter().map(GeminiCall::to_part).collect();
    json!({"role": "model", "parts": parts})
}

/// The `functionResponse` part answering a call: the envelope under `response.output`, or
/// under `response.error` when the call failed. A [`Content`](crate::content::Content)
/// result's images go in the response's `parts` as `inlineData`; audio, which Gemini's
/// function responses do not take, is named in the envelope ([`Carriage`](super::Carriage)).
pub fn function_response(outcome: &Outcome) -> Value {
    if let Some(rendered) = carriage::render(outcome, Provider::Gemini) {
        let mut response = Map::new();
        if !outcome.call_id().starts_with(MINTED_ID_PREFIX) {
            response.insert("id".into(), Value::from(outcome.call_id()));
        }
        response.insert("name".into(), Value::from(outcome.tool()));
        response.insert("response".into(), json!({ "output": rendered.envelope }));
        if !rendered.media.is_empty() {
            let parts: Vec<Value> = rendered
                .media
                .into_iter()
                .map(|m| json!({"inlineData": {"mimeType": m.mime_type, "data": m.data}}))
                .collect();
            response.insert("parts".into(), Value::Array(parts));
        }
        return json!({ "functionResponse": response });
    }
    let key = if outcome.status() == Status::Error {
        "error"
    } else {
        "output"
    };
    let mut response = Map::new();
    if !outcome.call_id().starts_with(MINTED_ID_PREFIX) {
        response.insert("id".into(), Value::from(outcome.call_id()));
    }
    response.insert("name".into(), Value::from(outcome.tool()));
    response.insert("response".into(), json!({ key: outcome.to_model_json() }));
    json!({"functionResponse": response})
}

/// The user content carrying every response of one model turn.
pub fn user_content<'a>(outcomes: impl IntoIterator<Item = &'a Outcome>) -> Value {
    let parts: Vec<Value> = outcomes.into_iter().map(function_response).collect();
    json!({"role": "user", "parts": parts})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minted_ids_are_unique_and_recognizable() {
        let (a, b) = (mint_id(), mint_id());
        assert_ne!(a, b);
        assert!(a.starts_with(MINTED_ID_PREFIX) && b.starts_with(MINTED_ID_PREFIX));
    }

    #[test]
    fn gemini_names_start_with_a_letter_or_underscore() {
        assert!(valid_name("get_weather.v2"));
        assert!(!valid_name("2fa_check"));
        assert!(!valid_name("-x"));
    }
}
