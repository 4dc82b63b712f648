//! Model providers: export a tool set to OpenAI, Anthropic, Gemini or MCP, parse the tool calls
//! their responses carry into [`ToolCall`](crate::ToolCall)s, and format
//! [`Outcome`](crate::Outcome)s back into the messages each provider expects.
//!
//! ```
//! use std::future::Future;
//! use serde_json::json;
//! use toolwright::providers::{openai, Provider};
//! use toolwright::{Invocation, Registry, Tool, ToolError, ToolMeta};
//!
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! #[serde(deny_unknown_fields)]
//! struct EchoArgs {
//!     /// Text to repeat.
//!     text: String,
//! }
//!
//! struct Echo;
//! impl Tool for Echo {
//!     type Args = EchoArgs;
//!     type Output = String;
//!     const META: ToolMeta = ToolMeta::new("echo", "Repeat the text back.").read_only();
//!     fn invoke(&self, args: EchoArgs, _: &Invocation<'_>) -> impl Future<Output = Result<String, ToolError>> + Send {
//!         async move { Ok(args.text) }
//!     }
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let registry = Registry::builder().tool(Echo).build()?;
//!
//! // 1. The request's `tools` field, in one line.
//! let tools = registry.export(Provider::OpenAi)?;
//! assert_eq!(tools[0]["function"]["strict"], json!(true));
//!
//! // 2. The calls in the provider's response.
//! let response = json!({"choices": [{"message": {"role": "assistant", "tool_calls": [
//!     {"id": "call_1", "type": "function", "function": {"name": "echo", "arguments": "{\"text\":\"hi\"}"}}
//! ]}}]});
//! for call in openai::parse_calls(&response)? {
//!     // 3. Run each through the pipeline and send the outcome back.
//!     let outcome = registry.call(call).await;
//!     let message = openai::tool_message(&outcome);
//!     assert_eq!(message["tool_call_id"], "call_1");
//! }
//! # Ok(()) }
//! ```
//!
//! Every export is the value of the provider's `tools` request field (for MCP, the `tools` of
//! a `tools/list` result). A schema a provider cannot express is an [`ExportError`] naming the
//! tool, the path and the construct, never a silently wrong schema; what each provider gets
//! transformed, restated or refused is listed on [`Provider`]. Malformed provider JSON is a
//! [`ParseError`] naming the path and what was expected there, never a panic.

use serde_json::{json, Value};

use crate::tool::spec::ToolSpec;

pub use carriage::{Carriage, Carried};
pub use error::{Construct, ExportError, Unsupported};
pub use parse::{ParseError, ParseErrorKind};
pub use provider::Provider;

pub mod anthropic;
mod carriage;
mod error;
pub mod gemini;
pub mod mcp;
pub mod openai;
mod parse;
mod provider;
mod schema;

impl Provider {
    /// An export to this provider with strict mode on or off. Strict mode exists for OpenAI
    /// (on by default) and Anthropic (off by default); Gemini and MCP have none and ignore it.
    pub fn strict(self, strict: bool) -> Export {
        Export::new(self).strict(strict)
    }
}

/// How to export: the provider and its options. `Provider` converts into it, so the common case
/// is `registry.export(Provider::Anthropic)`.
///
/// ```
/// use toolwright::providers::{mcp::McpHints, Export, Provider};
///
/// let openai_loose = Provider::OpenAi.strict(false);
/// let mcp = Export::new(Provider::Mcp).mcp_hints("search_web", McpHints::new().open_world(true));
/// # let _ = (openai_loose, mcp);
/// ```
#[derive(Debug, Clone)]
pub struct Export {
    provider: Provider,
    strict: bool,
    mcp_hints: Vec<(String, mcp::McpHints)>,
    native_search: bool,
}

impl Export {
    /// An export with the provider's defaults.
    pub fn new(provider: Provider) -> Self {
        Export {
            provider,
            strict: provider.strict_by_default(),
            mcp_hints: Vec::new(),
            native_search: false,
        }
    }

    /// Lets the provider search the deferred tools itself
    /// ([`RegistryBuilder::deferred`](crate::RegistryBuilder::deferred)), where its API can:
    /// every tool the session may see is exported, each deferred one marked
    /// `"defer_loading": true`, and the provider's own search tool takes the place of the
    /// registry's (Anthropic: `tool_search_tool_bm25`; OpenAI Responses: `tool_search`). A
    /// session served this way calls deferred tools without the registry's search
    /// ([`Session::with_native_tool_search`](crate::Session::with_native_tool_search); the
    /// agent loop sets it when its model's export asks for native search). Chat Completions,
    /// Gemini and MCP have no such search: exporting a registry with deferred tools for them
    /// this way fails with [`Construct::NativeToolSearch`].
    ///
    /// ```
    /// use toolwright::providers::{Export, Provider};
    ///
    /// let anthropic = Export::new(Provider::Anthropic).native_tool_search(true);
    /// assert!(anthropic.uses_native_tool_search());
    /// ```
    pub fn native_tool_search(mut self, native: bool) -> Self {
        self.native_search = native;
        self
    }

    /// Whether the provider searches deferred tools itself ([`Export::native_tool_search`]).
    pub fn uses_native_tool_search(&self) -> bool {
        self.native_search
    }

    /// The tools field with the provider's own search: each tool as [`Export::tool`] writes it,
    /// a deferred one marked `defer_loading`, then the provider's search tool.
    pub(crate) fn tools_searched_natively<'a>(
        &self,
        specs: impl IntoIterator<Item = (&'a ToolSpec, bool)>,
        search_tool: &str,
    ) -> Result<Value, ExportError> {
        let search = match self.provider {
            Provider::Anthropic => json!({
                "type": "tool_search_tool_bm25_20251119",
                "name": "tool_search_tool_bm25",
            }),
            Provider::OpenAiResponses => json!({"type": "tool_search"}),
            _ => {
                return Err(ExportError {
                    provider: self.provider,
                    problems: vec![Unsupported {
                        tool: search_tool.to_owned(),
                        path: String::new(),
                        construct: Construct::NativeToolSearch,
                        dialect: Some(self.provider.name()),
                    }],
                })
            }
        };
        let mut definitions = self.definitions(specs)?;
        definitions.push(search);
        Ok(Value::Array(definitions))
    }

    /// Turns strict mode on or off (OpenAI and Anthropic; ignored elsewhere).
    pub fn strict(mut self, strict: bool) -> Self {
        self.strict = strict;
        self
    }

    /// MCP annotations the tool's metadata cannot know (`destructiveHint`, `openWorldHint`) for
    /// the tool named `tool`.
    pub fn mcp_hints(mut self, tool: impl Into<String>, hints: mcp::McpHints) -> Self {
        self.mcp_hints.push((tool.into(), hints));
        self
    }

    /// The provider.
    pub fn provider(&self) -> Provider {
        self.provider
    }

    /// Whether the export uses strict mode.
    pub fn is_strict(&self) -> bool {
        self.strict
            && matches!(
                self.provider,
                Provider::OpenAi | Provider::OpenAiResponses | Provider::Anthropic
            )
    }

    /// One tool's definition. Its examples, if any, are Anthropic's `input_examples` and, for
    /// every other provider, a last paragraph of the description (`Examples:` and one compact
    /// JSON object per line), as [`Provider`] describes.
    pub fn tool(&self, spec: &ToolSpec) -> Result<Value, ExportError> {
        let mut problems = Vec::new();
        let definition = self.definition(spec, &mut problems);
        if problems.is_empty() {
            Ok(definition)
        } else {
            Err(ExportError {
                provider: self.provider,
                problems,
            })
        }
    }

    /// The value of the provider's `tools` request field for these tools, each as
    /// [`Export::tool`] writes it (examples included). Every problem of every tool is reported
    /// at once.
    pub fn tools<'a, I>(&self, specs: I) -> Result<Value, ExportError>
    where
        I: IntoIterator<Item = &'a ToolSpec>,
    {
        let definitions = self.definitions(specs.into_iter().map(|spec| (spec, false)))?;
        Ok(match self.provider {
            Provider::Gemini | Provider::GeminiJsonSchema => gemini::tools_field(definitions),
            _ => Value::Array(definitions),
        })
    }

    /// Each tool's definition, a `deferred` one marked `defer_loading`; every problem of every
    /// tool at once.
    fn definitions<'a>(
        &self,
        specs: impl IntoIterator<Item = (&'a ToolSpec, bool)>,
    ) -> Result<Vec<Value>, ExportError> {
        let mut problems = Vec::new();
        let definitions = specs
            .into_iter()
            .map(|(spec, deferred)| {
                let mut definition = self.definition(spec, &mut problems);
                if let (true, Some(fields)) = (deferred, definition.as_object_mut()) {
                    fields.insert("defer_loading".to_owned(), Value::Bool(true));
                }
                definition
            })
            .collect();
        if problems.is_empty() {
            Ok(definitions)
        } else {
            Err(ExportError {
                provider: self.provider,
                problems,
            })
        }
    }

    fn definition(&self, spec: &ToolSpec, problems: &mut Vec<Unsupported>) -> Value {
        let strict = self.is_strict();
        let name_ok = match self.provider {
            Provider::Gemini | Provider::GeminiJsonSchema => gemini::valid_name(spec.name()),
            Provider::Mcp => mcp::valid_name(spec.name()),
            _ => openai_style_name(spec.name()),
        };
        if !name_ok {
            problems.push(Unsupported {
                tool: spec.name().to_owned(),
                path: String::new(),
                construct: Construct::ToolName,
                dialect: Some(self.provider.name()),
            });
        }
        let dialect = match self.provider {
            Provider::OpenAi | Provider::OpenAiResponses if strict => {
                Some(schema::Dialect::OpenAiStrict)
            }
            Provider::Anthropic if strict => Some(schema::Dialect::AnthropicStrict),
            Provider::Gemini => Some(schema::Dialect::GeminiOpenApi),
            Provider::GeminiJsonSchema => Some(schema::Dialect::GeminiJsonSchema),
            _ => None,
        };
        let parameters = match dialect {
            Some(dialect) => match schema::rewrite(dialect, spec.name(), spec.input_schema()) {
                Ok(schema) => schema,
                Err(found) => {
                    problems.extend(found);
                    Value::Null
                }
            },
            None => spec.input_schema().clone(),
        };
        match self.provider {
            Provider::OpenAi => openai::chat_tool(spec, parameters, strict),
            Provider::OpenAiResponses => openai::responses_tool(spec, parameters, strict),
            Provider::Anthropic => anthropic::tool(spec, parameters, strict),
            Provider::Gemini => gemini::declaration(spec, "parameters", parameters),
            Provider::GeminiJsonSchema => {
                gemini::declaration(spec, "parametersJsonSchema", parameters)
            }
            Provider::Mcp => {
                let hints = self
                    .mcp_hints
                    .iter()
                    .rev()
                    .find(|(name, _)| name == spec.name())
                    .map(|(_, h)| *h)
                    .unwrap_or_default();
                mcp::tool(spec, parameters, hints)
            }
        }
    }
}

impl From<Provider> for Export {
    fn from(provider: Provider) -> Self {
        Export::new(provider)
    }
}

/// OpenAI's and Anthropic's tool-name rule: `^[a-zA-Z0-9_-]{1,64}$`.
fn openai_style_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_names_follow_the_shared_openai_anthropic_rule() {
        assert!(openai_style_name("refund_order-2"));
        assert!(!openai_style_name(""));
        assert!(!openai_style_name("has space"));
        assert!(!openai_style_name(&"x".repeat(65)));
    }
}
