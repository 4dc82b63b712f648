//! OpenAI: Chat Completions and the Responses API.
//!
//! Export with [`Provider::OpenAi`] or
//! [`Provider::OpenAiResponses`] (strict by default), read the
//! calls with [`parse_calls`] / [`parse_response_calls`], and answer each with
//! [`tool_message`] / [`function_call_output`]. Both APIs send arguments as JSON text, which
//! becomes the call's argument text unchanged, so malformed arguments reach the registry's
//! validation seam and come back as `invalid_json`, never as a parse failure here.
//!
//! A tool's example arguments ([`ToolSpec::examples`](crate::ToolSpec::examples)) have no
//! field here; the exported description ends with them, a blank line, `Examples:`, then one
//! compact JSON object per line ([`Provider`] shows the form).

use serde_json::{json, Value};

use super::carriage;
use super::parse::{Node, ParseError, ParseErrorKind};
use super::provider::Provider;
use crate::call::ToolCall;
use crate::outcome::Outcome;
use crate::tool::spec::ToolSpec;

pub(crate) fn chat_tool(spec: &ToolSpec, parameters: Value, strict: bool) -> Value {
    json!({
        "type": "function",
        "function": {
            "name": spec.name(),
            "description": super::provider::described(spec),
            "parameters": parameters,
            "strict": strict,
        }
    })
}

pub(crate) fn responses_tool(spec: &ToolSpec, parameters: Value, strict: bool) -> Value {
    // The Responses API defaults `strict` to true, so it is always written out.
    json!({
        "type": "function",
        "name": spec.name(),
        "description": super::provider::described(spec),
        "parameters": parameters,
        "strict": strict,
    })
}

/// The function calls of a Chat Completions answer: a whole response (its first choice), an
/// assistant message, or a `tool_calls` array. Calls of other tool types (`custom`) are left to
/// the application.
///
/// ```
/// # use serde_json::json;
/// let message = json!({"role": "assistant", "tool_calls": [
///     {"id": "call_1", "type": "function", "function": {"name": "search", "arguments": "{\"q\":\"x\"}"}}
/// ]});
/// let calls = toolwright::providers::openai::parse_calls(&message).unwrap();
/// assert_eq!(calls[0].arguments(), "{\"q\":\"x\"}");
/// ```
pub fn parse_calls(response: &Value) -> Result<Vec<ToolCall>, ParseError> {
    let root = Node::root(Provider::OpenAi, response);
    let tool_calls = match response {
        Value::Array(_) => root,
        Value::Object(map) if map.contains_key("choices") => {
            let choices = root.field("choices")?.items()?;
            let Some(first) = choices.into_iter().next() else {
                return Ok(Vec::new());
            };
            match first.field("message")?.optional("tool_calls") {
                Some(calls) => calls,
                None => return Ok(Vec::new()),
            }
        }
        Value::Object(map) if map.contains_key("tool_calls") || map.contains_key("role") => {
            match root.optional("tool_calls") {
                Some(calls) => calls,
                None => return Ok(Vec::new()),
            }
        }
        _ => {
            return Err(root.error(
                ParseErrorKind::UnknownShape,
                "expected a Chat Completions response (`choices`), an assistant message (`tool_calls`) or an array of tool calls",
            ))
        }
    };
    let mut calls = Vec::new();
    for item in tool_calls.items()? {
        let kind = match item.optional("type") {
            Some(t) => t.str()?,
            None => "function",
        };
        if kind != "function" {
            continue;
        }
        let id = item.field("id")?.str()?;
        let function = item.field("function")?;
        let name = function.field("name")?.str()?;
        let arguments = function.field("arguments")?.str()?;
        calls.push(ToolCall::new(id, name, arguments));
    }
    Ok(calls)
}

/// The `function_call` items of a Responses API answer: a whole response (`output`) or an array
/// of output items. The call's id is the item's `call_id`, which [`function_call_output`]
/// answers. Other items (messages, reasoning, built-in tool calls) are skipped.
pub fn parse_response_calls(response: &Value) -> Result<Vec<ToolCall>, ParseError> {
    let root = Node::root(Provider::OpenAiResponses, response);
    let items = match response {
        Value::Array(_) => root,
        Value::Object(map) if map.contains_key("output") => root.field("output")?,
        _ => {
            return Err(root.error(
                ParseErrorKind::UnknownShape,
                "expected a Responses API response (`output`) or an array of output items",
            ))
        }
    };
    let mut calls = Vec::new();
    for item in items.items()? {
        if item.field("type")?.str()? != "function_call" {
            continue;
        }
        let call_id = item.field("call_id")?.str()?;
        let name = item.field("name")?.str()?;
        let arguments = item.field("arguments")?.str()?;
        calls.push(ToolCall::new(call_id, name, arguments));
    }
    Ok(calls)
}

/// The Chat Completions message answering a call: `{"role": "tool", "tool_call_id", "content"}`
/// with the outcome's envelope as content. A tool message carries text only: a
/// [`Content`](crate::content::Content) result's images and audio are named in the envelope as
/// not carried ([`Carriage`](super::Carriage) tells the application).
pub fn tool_message(outcome: &Outcome) -> Value {
    let content = match carriage::render(outcome, Provider::OpenAi) {
        Some(rendered) => rendered.text(),
        None => outcome.to_model_string(),
    };
    json!({
        "role": "tool",
        "tool_call_id": outcome.call_id(),
        "content": content,
    })
}

/// The Responses API input item answering a call: `{"type": "function_call_output", "call_id",
/// "output"}` with the outcome's envelope as output.
///
/// A [`Content`](crate::content::Content) result's output is a list of content parts: the
/// envelope as `input_text`, then each image as `input_image` (a data URL); audio, which the
/// format cannot carry, is named in the envelope ([`Carriage`](super::Carriage)).
pub fn function_call_output(outcome: &Outcome) -> Value {
    if let Some(rendered) = carriage::render(outcome, Provider::OpenAiResponses) {
        let mut output = vec![json!({"type": "input_text", "text": rendered.text()})];
        output.extend(rendered.media.into_iter().map(|m| {
            json!({
                "type": "input_image",
                "detail": "auto",
                "image_url": format!("data:{};base64,{}", m.mime_type, m.data),
            })
        }));
        return json!({
            "type": "function_call_output",
            "call_id": outcome.call_id(),
            "output": output,
        });
    }
    json!({
        "type": "function_call_output",
        "call_id": outcome.call_id(),
        "output": outcome.to_model_string(),
    })
}
