//! Why a registry could not be built: a leaf every module that builds tools may name.

use std::fmt;

use crate::outcome::{ErrorKind, Violation};

/// Why a registry could not be built.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum BuildError {
    /// Two tools share a name; a model could not tell them apart.
    DuplicateTool(String),
    /// A tool takes `State<T>` but no `T` was given to [`RegistryBuilder::state`](crate::RegistryBuilder::state).
    MissingState {
        /// The tool.
        tool: String,
        /// The missing state's type.
        state: &'static str,
    },
    /// [`RegistryBuilder::breaker_for`](crate::RegistryBuilder::breaker_for) names a tool the registry does not have.
    UnknownBreakerTool(String),
    /// A builder setting (`setting`, such as `visible_when`) names a tool the registry does
    /// not have.
    UnknownTool {
        /// The builder method.
        setting: &'static str,
        /// The name it was given.
        name: String,
    },
    /// A tool's registered name (with its [`prefixed`](crate::RegistryBuilder::prefixed) prefix)
    /// is one some provider refuses.
    InvalidName {
        /// The name.
        name: String,
        /// What is wrong with it.
        why: &'static str,
    },
    /// A change ([`Changes::deferred`](crate::registry::Changes::deferred)) defers this tool in a registry that has no search tool
    /// to find it with: build the registry with
    /// [`tool_search`](crate::RegistryBuilder::tool_search).
    NoToolSearch(String),
    /// A tool defined at run time has no handler.
    MissingHandler(String),
    /// A tool defined at run time has a schema that is not a valid JSON Schema (draft 2020-12)
    /// object schema.
    InvalidSchema {
        /// The tool.
        tool: String,
        /// JSON Pointer into the schema (`output/..` for the output schema).
        path: String,
        /// What is wrong there.
        message: String,
    },
    /// A source of tools (an MCP server the proxy connects to) lists one name more than once;
    /// every copy is refused, as a call by that name would be ambiguous.
    ListedMoreThanOnce {
        /// The name.
        name: String,
        /// How many times it is listed.
        times: usize,
    },
    /// A tool defined at run time has a schema a provider it targets cannot express.
    Unexpressible {
        /// The tool.
        tool: String,
        /// The provider.
        provider: crate::providers::Provider,
        /// JSON Pointer into the exported schema, of the first problem.
        path: String,
        /// Every problem, as the export reports them.
        message: String,
    },
    /// An example of a tool's arguments (`#[tool(example = ..)]`,
    /// [`DynamicToolBuilder::example`](crate::dynamic::DynamicToolBuilder::example)) fails the
    /// checks a call with those arguments would fail: its shape, a field rule or the semantic
    /// rule. An example the tool refuses would teach the model a call that cannot work.
    InvalidExample {
        /// The tool.
        tool: String,
        /// Which example, counting from 1 in the order declared.
        number: usize,
        /// How a call with these arguments would fail (`schema_mismatch`, `unknown_argument`,
        /// `invalid_json`, `semantic_invalid`).
        kind: ErrorKind,
        /// The failure's message, as a call's envelope carries it.
        message: String,
        /// Every violation, each with its path, what was expected and what came (empty for a
        /// semantic failure, which is one message).
        violations: Vec<Violation>,
    },
    /// A tool declares a kind of id that toolwright keeps for itself (one that starts with
    /// `toolwright.`, such as the deferred tools a search found), in `grounds` or `grounded`:
    /// its results could ground what only the registry may, so it is refused.
    ReservedKind {
        /// The tool.
        tool: String,
        /// The kind it declares.
        kind: String,
    },
    /// A tool's `grounds` path (`#[tool(grounds(kind = "path"))]`,
    /// [`DynamicToolBuilder::grounds`](crate::dynamic::DynamicToolBuilder::grounds)) names no
    /// field of its output schema: no result could ground an id there, and a model sent to the
    /// tool to look an id up would call it again and again. A tool defined at run time without
    /// an output schema accepts every path.
    UnknownGroundsPath {
        /// The tool.
        tool: String,
        /// The kind of id.
        kind: String,
        /// The path as declared.
        path: String,
        /// The part of the path that was found, before the field that is not there (`""`:
        /// the result itself).
        at: String,
        /// The fields there are at `at`, sorted; empty where the value is not an object.
        fields: Vec<String>,
    },
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BuildError::DuplicateTool(name) => {
                write!(f, "two tools are named `{name}`; tool names must be unique")
            }
            BuildError::MissingState { tool, state } => {
                write!(f, "tool `{tool}` takes `State<{state}>`, but the registry has no `{state}`: add `.state(value)` to the builder")
            }
            BuildError::UnknownBreakerTool(name) => {
                write!(
                    f,
                    "`breaker_for(\"{name}\", ..)` names no registered tool; check the tool's name"
                )
            }
            BuildError::UnknownTool { setting, name } => write!(
                f,
                "`{setting}(\"{name}\", ..)` names no registered tool; check the tool's name (with its prefix)"
            ),
            BuildError::InvalidName { name, why } => {
                write!(f, "the tool name `{name}` {why}")
            }
            BuildError::NoToolSearch(name) => write!(
                f,
                "`deferred(\"{name}\")` needs a registry with a search tool to find it by: add `.tool_search(ToolSearch::new())` to the registry's builder"
            ),
            BuildError::MissingHandler(name) => {
                write!(
                    f,
                    "tool `{name}` has no handler: add `.handler(..)` to its builder"
                )
            }
            BuildError::InvalidSchema {
                tool,
                path,
                message,
            } => {
                write!(
                    f,
                    "tool `{tool}`: the schema at `{path}` is invalid: {message}"
                )
            }
            BuildError::ListedMoreThanOnce { name, times } => write!(
                f,
                "the upstream lists `{name}` {times} times; a call by that name would be ambiguous, so no copy is served"
            ),
            BuildError::Unexpressible {
                tool,
                provider,
                path,
                message,
            } => write!(
                f,
                "tool `{tool}`: {provider} cannot express the schema at `{path}`: {message}"
            ),
            BuildError::InvalidExample {
                tool,
                number,
                kind,
                message,
                violations,
            } => {
                write!(
                    f,
                    "tool `{tool}`: example {number} fails the tool's own checks ({kind}): "
                )?;
                if violations.is_empty() {
                    f.write_str(message)?;
                }
                for (i, v) in violations.iter().enumerate() {
                    let at = if v.path.is_empty() { "/" } else { &v.path };
                    let sep = if i == 0 { "" } else { "; " };
                    write!(f, "{sep}at `{at}`: {}", v.message)?;
                }
                f.write_str("; fix the example, or the rule if the example is right")
            }
            BuildError::ReservedKind { tool, kind } => write!(
                f,
                "tool `{tool}` declares ids of kind `{kind}`, and kinds that start with `toolwright.` are kept for what the registry records itself (such as the tools a search found): name the kind after your own ids, such as `order`"
            ),
            BuildError::UnknownGroundsPath {
                tool,
                kind,
                path,
                at,
                fields,
            } => unknown_grounds_path(f, tool, kind, path, at, fields),
        }
    }
}

/// [`BuildError::UnknownGroundsPath`]: the fields there are, and the path to write instead.
fn unknown_grounds_path(
    f: &mut fmt::Formatter<'_>,
    tool: &str,
    kind: &str,
    path: &str,
    at: &str,
    fields: &[String],
) -> fmt::Result {
    write!(
        f,
        "tool `{tool}` grounds `{kind}` ids at `{path}`, which names no field of its result: "
    )?;
    let place = if at.is_empty() {
        "the result".to_owned()
    } else {
        format!("`{at}` in the result")
    };
    if fields.is_empty() {
        return write!(
            f,
            "{place} has no fields; write the path of the field that holds the ids, or `\"{at}\"` for {place} itself"
        );
    }
    let listed: Vec<String> = fields.iter().map(|field| format!("`{field}`")).collect();
    let missing = path
        .strip_prefix(at)
        .unwrap_or(path)
        .trim_start_matches('.')
        .split('.')
        .next()
        .unwrap_or_default();
    let guess = closest_field(missing, fields);
    let fix = if at.is_empty() {
        guess.to_owned()
    } else {
        format!("{at}.{guess}")
    };
    write!(
        f,
        "{place} has {}; write the path of the field that holds the ids, such as `\"{fix}\"`",
        listed.join(", ")
    )
}

/// The field a mistaken step most likely meant: one that ends or starts the step (`slot_id`
/// for `id`), else one named like an id, else the first.
fn closest_field<'f>(step: &str, fields: &'f [String]) -> &'f str {
    let related = |field: &&String| {
        let (field, step) = (field.to_ascii_lowercase(), step.to_ascii_lowercase());
        step.ends_with(&field) || step.starts_with(&field) || field.ends_with(&step)
    };
    fields
        .iter()
        .find(related)
        .or_else(|| {
            fields
                .iter()
                .find(|f| f.to_ascii_lowercase().ends_with("id"))
        })
        .or_else(|| fields.first())
        .map_or("", String::as_str)
}

impl std::error::Error for BuildError {}
