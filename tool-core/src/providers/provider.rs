//! The providers a registry exports tools for, and the description a provider without a field
//! for examples gets.

use std::fmt;

use crate::tool::spec::ToolSpec;

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
/// bounds, formats, defaults, uniqueness), and refuse the rest ([`Construct`](crate::providers::Construct)).
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
/// Only the export changes: [`ToolSpec::description`](crate::ToolSpec::description) stays the tool's own, and a tool
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

    pub(super) const fn strict_by_default(self) -> bool {
        matches!(self, Provider::OpenAi | Provider::OpenAiResponses)
    }
}

impl fmt::Display for Provider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The description a provider without a field for examples gets: the tool's own, then, when
/// it has examples, a last paragraph `Examples:` with one compact JSON object per line.
pub(super) fn described(spec: &ToolSpec) -> std::borrow::Cow<'_, str> {
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
