//! Anthropic Messages.
//!
//! Export with [`Provider::Anthropic`] (`strict` off by default;
//! `Provider::Anthropic.strict(true)` opts into grammar-constrained tool inputs and the schema
//! subset that needs), read `tool_use` blocks with [`parse_calls`], and answer them with
//! [`tool_result`] blocks, all results of one turn in one [`user_message`].
//!
//! A tool's example arguments ([`ToolSpec::examples`](crate::ToolSpec::examples)) are exported
//! as the tool's `input_examples`, an array of input objects (the field of the Messages API's
//! `ToolParam`, generally available in the official SDKs, no beta header); a tool without
//! examples has no such field.

use serde_json::{json, Map, Value};

use super::carriage;
use super::parse::{argument_text, Node, ParseError, ParseErrorKind};
use super::provider::Provider;
use crate::call::ToolCall;
use crate::outcome::{Outcome, Status};
use crate::tool::spec::ToolSpec;

pub(crate) fn tool(spec: &ToolSpec, input_schema: Value, strict: bool) -> Value {
    let mut tool = Map::new();
    tool.insert("name".into(), Value::from(spec.name()));
    tool.insert("description".into(), Value::from(spec.description()));
    tool.insert("input_schema".into(), input_schema);
    if !spec.examples().is_empty() {
        tool.insert(
            "input_examples".into(),
            Value::Array(spec.examples().to_vec()),
        );
    }
    if strict {
        tool.insert("strict".into(), Value::Bool(true));
    }
    Value::Object(tool)
}

/// The `tool_use` blocks of a Messages answer: a whole message (`content`) or a content array.
/// The `input` object becomes the call's argument text; server tools (`server_tool_use`) and
/// other blocks are skipped.
///
/// ```
/// # use serde_json::json;
/// let message = json!({"role": "assistant", "content": [
///     {"type": "text", "text": "Let me look."},
///     {"type": "tool_use", "id": "toolu_1", "name": "search", "input": {"q": "x"}}
/// ]});
/// let calls = toolwright::providers::anthropic::parse_calls(&message).unwrap();
/// assert_eq!((calls[0].id(), calls[0].arguments()), ("toolu_1", r#"{"q":"x"}"#));
/// ```
pub fn parse_calls(message: &Value) -> Result<Vec<ToolCall>, ParseError> {
    let root = Node::root(Provider::Anthropic, message);
    let content = match message {
        Value::Array(_) => root,
        Value::Object(map) if map.contains_key("content") => {
            let content = root.field("content")?;
            if content.value().is_string() {
                return Ok(Vec::new());
            }
            content
        }
        _ => {
            return Err(root.error(
                ParseErrorKind::UnknownShape,
                "expected a message (`content`) or an array of content blocks",
            ))
        }
    };
    let mut calls = Vec::new();
    for block in content.items()? {
        if block.field("type")?.str()? != "tool_use" {
            continue;
        }
        let id = block.field("id")?.str()?;
        let name = block.field("name")?.str()?;
        let input = block.field("input")?;
        calls.push(ToolCall::new(id, name, argument_text(Some(input.value()))));
    }
    Ok(calls)
}

/// The `tool_result` block answering a call: the envelope as content, `is_error` when the call
/// failed. A [`Content`](crate::content::Content) result's images follow the envelope as image
/// blocks; what Anthropic cannot carry (audio) is named in the envelope
/// ([`Carriage`](super::Carriage) tells the application).
pub fn tool_result(outcome: &Outcome) -> Value {
    if let Some(rendered) = carriage::render(outcome, Provider::Anthropic) {
        let mut content = vec![json!({"type": "text", "text": rendered.text()})];
        content.extend(rendered.media.into_iter().map(|m| {
            json!({
                "type": "image",
                "source": {"type": "base64", "media_type": m.mime_type, "data": m.data},
            })
        }));
        return json!({
            "type": "tool_result",
            "tool_use_id": outcome.call_id(),
            "content": content,
            "is_error": false,
        });
    }
    json!({
        "type": "tool_result",
        "tool_use_id": outcome.call_id(),
        "content": outcome.to_model_string(),
        "is_error": outcome.status() == Status::Error,
    })
}

/// The user message carrying every result of one assistant turn (Anthropic wants them
/// together, before any text).
pub fn user_message<'a>(outcomes: impl IntoIterator<Item = &'a Outcome>) -> Value {
    let content: Vec<Value> = outcomes.into_iter().map(tool_result).collect();
    json!({"role": "user", "content": content})
}
