//! Model providers: export a tool set to OpenAI, Anthropic, Gemini or MCP, parse the tool calls
//! their responses carry into [`ToolCall`](crate::ToolCall)s, and format
//! [`Outcome`](crate::Outcome)s back into the messages each provider expects.
//!
//! ```
//! use std::future::Future;
//! use serde_json::json;
//! use toolwright_core::providers::{openai, Provider};
//! use toolwright_core::{Invocation, Registry, Tool, ToolError, ToolMeta};
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

use std::fmt;

use serde_json::{json, Value};

use crate::call::Session;
use crate::registry::Registry;
use crate::tool::spec::ToolSpec;

pub use carriage::{Carriage, Carried};
pub(crate) use parse::{argument_text, Node};
pub use parse::{ParseError, ParseErrorKind};

pub mod anthropic;
mod carriage;
pub mod gemini;
pub mod mcp;
pub mod openai;
mod parse;
mod schema;

/// The providers a tool set can be exported to.
///
/// | provider | strict by default | schema |
/// |---|---|---|
/// | [`OpenAi`](Provider::OpenAi) (Chat Completions) | yes | rewritten for Structured Outputs |
/// | [`OpenAiResponses`](Provider::OpenAiResponses) | yes | rewritten for Structured Outputs |
/// | [`Anthropic`](Provider::Anthropic) | no (`.strict(true)` opts in) | as is; rewritten under strict |
/// | [`Gemini`](Provider::Gemini) | n/a | rewritten to the OpenAPI `Schema` subset (`parameters`) |
/// | [`GeminiJsonSchema`](Provider::GeminiJsonSchema) | n/a | lightly rewritten (`parametersJsonSchema`) |
/// | [`Mcp`](Provider::Mcp) | n/a | as is, plus the envelope as `outputSchema` |
///
/// Rewrites transform what they can without loss (`oneOf` of constants to `enum`, `const` to a
/// one-value `enum`, a `$ref` with siblings inlined, nullable types in the provider's form),
/// restate in the description what the provider rejects but a sentence can carry (length
/// bounds, formats, defaults, uniqueness), and refuse the rest ([`Construct`]).
///
/// A tool's example arguments ([`ToolSpec::examples`]) go where the provider reads them.
/// Anthropic has a field for them, `input_examples` (an array of input objects, in the
/// Messages API's `ToolParam`). OpenAI, Gemini and MCP have none, so the exported description
/// ends with a paragraph of them: a blank line, `Examples:`, then each example as compact JSON
/// on a line of its own, in the order declared:
///
/// ```text
/// Search orders by free text.
///
/// Examples:
/// {"query":"late orders","max_results":5}
/// {"query":"refunds"}
/// ```
///
/// Only the export changes: [`ToolSpec::description`] stays the tool's own, and a tool
/// without examples exports exactly as before.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Provider {
    /// OpenAI Chat Completions: `{"type":"function","function":{name, description, parameters,
    /// strict}}`.
    OpenAi,
    /// OpenAI Responses API: `{"type":"function", name, description, parameters, strict}`.
    OpenAiResponses,
    /// Anthropic Messages: `{name, description, input_schema}`, with `strict` when asked.
    Anthropic,
    /// Gemini `functionDeclarations` with `parameters` in the OpenAPI 3.0 `Schema` subset.
    Gemini,
    /// Gemini `functionDeclarations` with `parametersJsonSchema`.
    GeminiJsonSchema,
    /// MCP tool definitions (`tools/list`).
    Mcp,
}

impl Provider {
    /// Every provider, for iterating in tests and tools.
    pub const ALL: &'static [Provider] = &[
        Provider::OpenAi,
        Provider::OpenAiResponses,
        Provider::Anthropic,
        Provider::Gemini,
        Provider::GeminiJsonSchema,
        Provider::Mcp,
    ];

    /// An export to this provider with strict mode on or off. Strict mode exists for OpenAI
    /// (on by default) and Anthropic (off by default); Gemini and MCP have none and ignore it.
    pub fn strict(self, strict: bool) -> Export {
        Export::new(self).strict(strict)
    }

    /// The provider's human name, as error messages show it.
    pub const fn name(self) -> &'static str {
        match self {
            Provider::OpenAi => "OpenAI Chat Completions",
            Provider::OpenAiResponses => "OpenAI Responses",
            Provider::Anthropic => "Anthropic Messages",
            Provider::Gemini => "Gemini",
            Provider::GeminiJsonSchema => "Gemini (parametersJsonSchema)",
            Provider::Mcp => "MCP",
        }
    }

    const fn strict_by_default(self) -> bool {
        matches!(self, Provider::OpenAi | Provider::OpenAiResponses)
    }
}

impl fmt::Display for Provider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// How to export: the provider and its options. `Provider` converts into it, so the common case
/// is `registry.export(Provider::Anthropic)`.
///
/// ```
/// use toolwright_core::providers::{mcp::McpHints, Export, Provider};
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
    /// use toolwright_core::providers::{Export, Provider};
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

impl Registry {
    /// Every tool's definition for a provider: the value of its `tools` request field, each
    /// tool's examples as Anthropic's `input_examples` or, elsewhere, a last `Examples:`
    /// paragraph of its description ([`Provider`]).
    ///
    /// ```
    /// # use toolwright_core::{Registry, providers::Provider};
    /// # fn demo(registry: &Registry) -> Result<(), toolwright_core::providers::ExportError> {
    /// let openai = registry.export(Provider::OpenAi)?;                 // strict
    /// let anthropic = registry.export(Provider::Anthropic.strict(true))?;
    /// let gemini = registry.export(Provider::Gemini)?;
    /// let mcp = registry.export(Provider::Mcp)?;
    /// # let _ = (openai, anthropic, gemini, mcp); Ok(()) }
    /// ```
    pub fn export(&self, export: impl Into<Export>) -> Result<Value, ExportError> {
        self.export_seen(None, export.into())
    }

    /// The definitions a session's model should see: every tool whose scopes the session
    /// holds, none it could not call. A model shown a tool it may not call wastes a turn on
    /// it; the tool list is also the model's whole picture of what exists.
    ///
    /// ```
    /// # use toolwright_core::{Registry, Session, providers::Provider};
    /// # fn demo(registry: &Registry) -> Result<(), toolwright_core::providers::ExportError> {
    /// let support = Session::new("conv-1").with_scopes(["orders:read"]);
    /// let tools = registry.export_for(&support, Provider::Anthropic)?;
    /// # let _ = tools; Ok(()) }
    /// ```
    pub fn export_for(
        &self,
        session: &Session,
        export: impl Into<Export>,
    ) -> Result<Value, ExportError> {
        self.export_seen(Some(session), export.into())
    }

    /// The tools `session` is shown (every tool for `None`), or with the provider's own search
    /// every tool it may see.
    fn export_seen(&self, session: Option<&Session>, export: Export) -> Result<Value, ExportError> {
        match (self.search_tool(), session) {
            (Some(search), _) if export.uses_native_tool_search() => {
                export.tools_searched_natively(self.natively_searched(session), search)
            }
            (_, Some(session)) => export.tools(self.specs_for(session)),
            (_, None) => export.tools(self.specs()),
        }
    }
}

/// The description a provider without a field for examples gets: the tool's own, then, when
/// it has examples, a last paragraph `Examples:` with one compact JSON object per line.
pub(crate) fn described(spec: &ToolSpec) -> std::borrow::Cow<'_, str> {
    let examples = spec.examples();
    if examples.is_empty() {
        return std::borrow::Cow::Borrowed(spec.description());
    }
    let mut text = spec.description().trim_end().to_owned();
    if !text.is_empty() {
        text.push_str("\n\n");
    }
    text.push_str("Examples:");
    for example in examples {
        text.push('\n');
        text.push_str(&example.to_string());
    }
    std::borrow::Cow::Owned(text)
}

/// OpenAI's and Anthropic's tool-name rule: `^[a-zA-Z0-9_-]{1,64}$`.
fn openai_style_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// A construct a provider cannot express.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Construct {
    /// A map: an object whose keys are not declared (`additionalProperties` with a schema).
    Map,
    /// A schema that admits any JSON value (`serde_json::Value`).
    AnyValue,
    /// A type that contains itself, where the provider allows no recursion.
    RecursiveType {
        /// The definition's name.
        name: String,
    },
    /// A tuple (`prefixItems`).
    Tuple,
    /// A constraining keyword the provider lacks and no sentence can stand in for.
    Keyword {
        /// The keyword.
        keyword: String,
    },
    /// A `$ref` that does not point into the schema's own `$defs`.
    ExternalRef {
        /// The reference.
        reference: String,
    },
    /// The tool's name breaks the provider's naming rule.
    ToolName,
    /// A search of deferred tools by the provider itself ([`Export::native_tool_search`]),
    /// which the provider does not offer.
    NativeToolSearch,
    /// A parameter's name breaks the provider's naming rule.
    ParameterName {
        /// The parameter.
        name: String,
    },
    /// The schema is larger than the provider allows.
    Limit {
        /// What is counted.
        what: &'static str,
        /// The provider's limit.
        limit: usize,
        /// The schema's count.
        actual: usize,
    },
}

impl fmt::Display for Construct {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Construct::Map => f.write_str(
                "a map (an object with undeclared keys, `additionalProperties`); use a list of key/value structs",
            ),
            Construct::AnyValue => {
                f.write_str("a value of any shape (`serde_json::Value`); give it a concrete type")
            }
            Construct::RecursiveType { name } => write!(
                f,
                "the recursive type `{name}` (it contains itself); bound the nesting with separate types"
            ),
            Construct::Tuple => f.write_str("a tuple (`prefixItems`); use a struct with named fields"),
            Construct::Keyword { keyword } => write!(f, "the keyword `{keyword}`"),
            Construct::ExternalRef { reference } => {
                write!(f, "the reference `{reference}`, which is not in the schema's `$defs`")
            }
            Construct::ToolName => f.write_str("the tool name, which breaks the provider's naming rule"),
            Construct::NativeToolSearch => f.write_str(
                "a search of deferred tools by the provider, which it does not offer: export without `native_tool_search` and the registry's own search tool is sent instead",
            ),
            Construct::ParameterName { name } => write!(
                f,
                "the parameter name `{name}`: it must start with a letter or `_` and hold only letters, digits and `_` (rename it with `#[serde(rename)]`)"
            ),
            Construct::Limit { what, limit, actual } => {
                write!(f, "{actual} {what}, more than the limit of {limit}")
            }
        }
    }
}

/// One construct of one tool that a provider cannot express.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unsupported {
    tool: String,
    path: String,
    construct: Construct,
    dialect: Option<&'static str>,
}

impl Unsupported {
    /// The tool.
    pub fn tool(&self) -> &str {
        &self.tool
    }

    /// JSON Pointer into the exported parameters schema (`/properties/tags`), `/` for the whole
    /// schema, empty for the tool itself (its name).
    pub fn path(&self) -> &str {
        &self.path
    }

    /// What cannot be expressed.
    pub fn construct(&self) -> &Construct {
        &self.construct
    }
}

impl fmt::Display for Unsupported {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "tool `{}`", self.tool)?;
        if !self.path.is_empty() {
            write!(f, " at `{}`", self.path)?;
        }
        write!(f, ": {}", self.construct)?;
        if let Some(dialect) = self.dialect {
            write!(f, " ({dialect} cannot express it)")?;
        }
        Ok(())
    }
}

/// Why a tool set could not be exported: every construct of every tool the provider cannot
/// express.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportError {
    provider: Provider,
    problems: Vec<Unsupported>,
}

impl ExportError {
    /// The provider exported to.
    pub fn provider(&self) -> Provider {
        self.provider
    }

    /// Every problem found, in tool order.
    pub fn problems(&self) -> &[Unsupported] {
        &self.problems
    }
}

impl fmt::Display for ExportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cannot export to {}: ", self.provider)?;
        for (i, problem) in self.problems.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            write!(f, "{problem}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ExportError {}

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
