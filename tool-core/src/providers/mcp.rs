//! Model Context Protocol: tool definitions for `tools/list`, `tools/call` requests in, and
//! `CallToolResult`s out.
//!
//! A tool's `inputSchema` is its argument schema as it is (MCP takes JSON Schema 2020-12). Its
//! `outputSchema` describes what [`call_tool_result`] puts in `structuredContent`: the
//! envelope, with the tool's own result schema under `data`, so a client that validates
//! structured results against the declared schema accepts every outcome, errors included.
//! Annotations come from the tool's metadata: `readOnlyHint` and `idempotentHint` from
//! `read_only`/`idempotent`; `destructiveHint` is `false` for a read-only tool and otherwise
//! MCP's default `true`, and `openWorldHint` is MCP's default `true`, unless [`McpHints`] says
//! otherwise.
//!
//! A tool's example arguments ([`ToolSpec::examples`](crate::ToolSpec::examples)) have no
//! field in MCP's `Tool` (revisions 2025-11-25 and 2026-07-28); the exported description ends
//! with them, a blank line, `Examples:`, then one
//! compact JSON object per line ([`Provider`] shows the form).

use serde_json::{json, Map, Value};

use super::parse::{argument_text, Node, ParseError, ParseErrorKind};
use super::provider::Provider;
use crate::call::ToolCall;
use crate::outcome::{ErrorKind, Outcome, Status};
use crate::tool::spec::ToolSpec;

/// Annotations a tool's metadata cannot know, set per tool with
/// [`Export::mcp_hints`](super::Export::mcp_hints).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct McpHints {
    destructive: Option<bool>,
    open_world: Option<bool>,
}

impl McpHints {
    /// No overrides: MCP's defaults apply.
    pub const fn new() -> Self {
        McpHints {
            destructive: None,
            open_world: None,
        }
    }

    /// `destructiveHint`: whether the tool may destroy or overwrite data (rather than only add).
    pub const fn destructive(mut self, destructive: bool) -> Self {
        self.destructive = Some(destructive);
        self
    }

    /// `openWorldHint`: whether the tool reaches an open world (the web) rather than a closed
    /// domain (one database).
    pub const fn open_world(mut self, open_world: bool) -> Self {
        self.open_world = Some(open_world);
        self
    }
}

/// MCP tool names: 1 to 128 of `A-Z a-z 0-9 _ - .`.
pub(crate) fn valid_name(name: &str) -> bool {
    (1..=128).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

/// `search_orders` -> `Search orders`.
fn title(name: &str) -> String {
    let words = name.replace(['_', '-', '.'], " ");
    let mut chars = words.trim().chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => name.to_owned(),
    }
}

pub(crate) fn tool(spec: &ToolSpec, input_schema: Value, hints: McpHints) -> Value {
    let read_only = spec.read_only();
    json!({
        "name": spec.name(),
        "title": title(spec.name()),
        "description": super::provider::described(spec),
        "inputSchema": input_schema,
        "outputSchema": envelope_schema(spec.output_schema()),
        "annotations": {
            "readOnlyHint": read_only,
            "destructiveHint": if read_only { false } else { hints.destructive.unwrap_or(true) },
            "idempotentHint": spec.idempotent(),
            "openWorldHint": hints.open_world.unwrap_or(true),
        }
    })
}

/// The JSON Schema of the envelope ([`Outcome::to_model_json`]) with `data` described by the
/// tool's result schema (whose `$defs` move to the root, where its references point).
///
/// A boolean result schema (`true`: any value, what a runtime tool without a declared output
/// schema has) is written as an object schema (`{}`, or `{"not": {}}` for `false`): the MCP
/// schema types each of `outputSchema.properties` as an object, and the official TypeScript
/// SDK refuses a whole `tools/list` that holds a boolean there.
pub fn envelope_schema(output_schema: &Value) -> Value {
    let mut data = match output_schema {
        Value::Bool(true) => json!({}),
        Value::Bool(false) => json!({"not": {}}),
        schema => schema.clone(),
    };
    let defs = data.as_object_mut().and_then(|d| d.remove("$defs"));
    let error_types: Vec<&str> = ErrorKind::ALL.iter().map(|k| k.as_str()).collect();
    let mut schema = json!({
        "type": "object",
        "properties": {
            "status": {"type": "string", "enum": ["success", "empty", "error", "pending"]},
            "data": data,
            "degraded": {"type": "boolean"},
            "source": {"type": "string"},
            "error_type": {"type": "string", "enum": error_types},
            "seam": {"type": "string", "enum": ["validation", "execution", "interpretation"]},
            "retryable": {"type": "boolean"},
            "message": {"type": "string"},
            "errors": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "path": {"type": "string"},
                        "rule": {"type": "string"},
                        "expected": {"type": "string"},
                        "got": {"type": "string"},
                        "message": {"type": "string"}
                    },
                    "required": ["path", "rule", "expected", "message"]
                }
            },
            "available_tools": {"type": "array", "items": {"type": "string"}},
            "retry_after_ms": {"type": "integer", "minimum": 0},
            "expected_schema": {"type": "object"},
            "attempts": {"type": "integer", "minimum": 0}
        },
        "required": ["status"]
    });
    if let (Some(defs), Some(obj)) = (defs, schema.as_object_mut()) {
        obj.insert("$defs".into(), defs);
    }
    schema
}

/// A `tools/call` JSON-RPC request: the call's id is the request's id (a number written as its
/// decimal text), the arguments object its argument text (`{}` when absent).
///
/// ```
/// # use serde_json::json;
/// let request = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
///                      "params": {"name": "search", "arguments": {"q": "x"}}});
/// let call = toolwright::providers::mcp::parse_request(&request).unwrap();
/// assert_eq!((call.id(), call.name(), call.arguments()), ("7", "search", r#"{"q":"x"}"#));
/// ```
pub fn parse_request(request: &Value) -> Result<ToolCall, ParseError> {
    let root = Node::root(Provider::Mcp, request);
    let method = root.field("method")?;
    if method.str()? != "tools/call" {
        return Err(method.error(
            ParseErrorKind::UnknownShape,
            format!("expected the method `tools/call`, got `{}`", method.str()?),
        ));
    }
    let id = root.field("id")?;
    let id = match id.value() {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        _ => return Err(id.wrong("a string or a number")),
    };
    call_from(root.field("params")?, id)
}

/// The `params` of a `tools/call` request, with the id the application tracks it by.
pub fn parse_params(id: impl Into<String>, params: &Value) -> Result<ToolCall, ParseError> {
    call_from(Node::root(Provider::Mcp, params), id.into())
}

fn call_from(params: Node<'_>, id: String) -> Result<ToolCall, ParseError> {
    let name = params.field("name")?.str()?;
    let arguments = params.optional("arguments");
    if let Some(arguments) = &arguments {
        arguments.object()?;
    }
    Ok(ToolCall::new(
        id,
        name,
        argument_text(arguments.map(|a| a.value())),
    ))
}

/// The `CallToolResult` for an outcome: the envelope as text `content` and as
/// `structuredContent`, `isError` when the call failed (a tool error the model should see, not
/// a protocol error). A [`Content`](crate::content::Content) result's `content` is its blocks,
/// as they are (they have MCP's shapes); `structuredContent` stays the envelope.
pub fn call_tool_result(outcome: &Outcome) -> Value {
    let mut result = Map::new();
    let content = match outcome.content() {
        Some(content) => serde_json::to_value(content.blocks()).unwrap_or_else(|_| json!([])),
        None => json!([{"type": "text", "text": outcome.to_model_string()}]),
    };
    result.insert("content".into(), content);
    result.insert("structuredContent".into(), outcome.to_model_json());
    result.insert(
        "isError".into(),
        Value::Bool(outcome.status() == Status::Error),
    );
    Value::Object(result)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn titles_are_the_name_in_words() {
        assert_eq!(title("search_orders"), "Search orders");
        assert_eq!(title("x"), "X");
    }
}
