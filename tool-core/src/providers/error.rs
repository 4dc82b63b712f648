//! What a provider cannot express, and the export's error that says so.

use std::fmt;

use super::provider::Provider;

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
    /// A search of deferred tools by the provider itself ([`Export::native_tool_search`](crate::providers::Export::native_tool_search)),
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
    pub(super) tool: String,
    pub(super) path: String,
    pub(super) construct: Construct,
    pub(super) dialect: Option<&'static str>,
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
    pub(super) provider: Provider,
    pub(super) problems: Vec<Unsupported>,
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
