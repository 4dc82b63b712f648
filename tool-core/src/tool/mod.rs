//! The [`Tool`] trait and the metadata a registry knows a tool by ([`ToolMeta`], [`ToolSpec`]).
//!
//! `#[tool]` implements [`Tool`] for you. Implement it by hand for tools that carry state
//! (a client, a connection pool) or whose arguments you want to define yourself:
//!
//! ```
//! use std::future::Future;
//! use schemars::JsonSchema;
//! use serde::Deserialize;
//! use toolwright::{Invocation, Tool, ToolError, ToolMeta};
//!
//! #[derive(Deserialize, JsonSchema)]
//! #[serde(deny_unknown_fields)]
//! struct EchoArgs {
//!     /// Text to repeat.
//!     text: String,
//! }
//!
//! struct Echo;
//!
//! impl Tool for Echo {
//!     type Args = EchoArgs;
//!     type Output = String;
//!     const META: ToolMeta = ToolMeta::new("echo", "Repeat the text back.").read_only();
//!
//!     fn invoke(&self, args: EchoArgs, _: &Invocation<'_>) -> impl Future<Output = Result<String, ToolError>> + Send {
//!         async move { Ok(args.text) }
//!     }
//! }
//! ```

pub(crate) mod grounds;
pub(crate) mod schema;
pub(crate) mod spec;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

use crate::context::Invocation;
use crate::error::ToolError;
use crate::outcome::Violations;
use crate::session::Session;

use schema::root_schema;
pub use spec::{Effect, FieldMeta, Number, Rule, StateRequirement, ToolMeta, ToolSpec};

/// A tool the model can call: typed arguments in, a serializable result or a classified
/// [`ToolError`] out.
///
/// The registry runs every call through the same pipeline: the argument text is parsed straight
/// into [`Tool::Args`] (shape), [`Tool::check_fields`] reports every field-rule violation,
/// [`Tool::check_semantics`] applies cross-field rules, and only then does [`Tool::invoke`] run,
/// bounded by the tool's timeout, with panics contained.
pub trait Tool: Send + Sync + 'static {
    /// The arguments, deserialized from the model's JSON. Its JSON Schema is the tool's input
    /// schema; it should deny unknown fields.
    type Args: DeserializeOwned + JsonSchema + Send + 'static;
    /// The result handed back to the model. Its JSON Schema is the tool's output schema.
    type Output: Serialize + JsonSchema + Send + 'static;

    /// Name, description and policy.
    const META: ToolMeta;

    /// Pushes every field-rule violation of `args` into `report` (all of them, not the first).
    fn check_fields(args: &Self::Args, report: &mut Violations) {
        let _ = (args, report);
    }

    /// Cross-field business rules, run after the field rules passed. An error here is reported
    /// as `semantic_invalid` unless it names another validation kind.
    fn check_semantics(args: &Self::Args) -> Result<(), ToolError> {
        let _ = args;
        Ok(())
    }

    /// Provenance: pushes a violation for every identifier argument
    /// (`#[arg(grounded = "kind")]`) whose value no tool returned in this session. Runs after
    /// the semantic check; a violation is reported as `ungrounded_identifier`.
    fn check_grounded(args: &Self::Args, session: &Session, report: &mut Violations) {
        let _ = (args, session, report);
    }

    /// Authorization: may this session invoke the tool with these arguments? Runs after the
    /// semantic check and after the session's scopes were checked against
    /// [`ToolMeta::scopes`]. An error here is reported as `unauthorized` unless it names another
    /// validation kind.
    fn authorize(args: &Self::Args, session: &Session) -> Result<(), ToolError> {
        let _ = (args, session);
        Ok(())
    }

    /// Shared state the tool reads with [`Invocation::state`]; the registry refuses to build
    /// when one is missing, instead of failing calls at run time.
    fn required_state() -> Vec<StateRequirement> {
        Vec::new()
    }

    /// Runs one attempt of the tool; a retry calls it again with the same arguments and the same
    /// idempotency key. The future is dropped when the attempt times out or the caller gives up
    /// ([what that means for a body](crate::execute#cancellation-what-a-tool-author-must-know)).
    fn invoke(
        &self,
        args: Self::Args,
        invocation: &Invocation<'_>,
    ) -> impl Future<Output = Result<Self::Output, ToolError>> + Send;

    /// The answer when the tool itself is unavailable (`#[tool(fallback = path)]`): a cached
    /// snapshot, a narrower source, a queued request. Called only when [`ToolMeta::fallback`]
    /// is declared, once, after the call ended `circuit_open`, `unavailable`, `timeout` or
    /// `rate_limited` and no attempt may have acted (or the tool is idempotent). Its result
    /// reaches the model marked `"degraded": true, "source": "fallback"`; its failure leaves
    /// the tool's own failure in place. It runs under the tool's timeout, with panics contained,
    /// and is never retried.
    fn fallback(
        &self,
        args: Self::Args,
        invocation: &Invocation<'_>,
    ) -> impl Future<Output = Result<Self::Output, ToolError>> + Send {
        let _ = (args, invocation);
        async {
            Err(ToolError::unavailable(
                "the tool declares a fallback but does not implement `Tool::fallback`",
            ))
        }
    }
}

impl ToolSpec {
    pub(crate) fn of<T: Tool>(default_timeout: Duration) -> Self {
        ToolSpec::from_parts(
            T::META,
            root_schema::<T::Args>(),
            root_schema::<T::Output>(),
            std::any::TypeId::of::<T::Output>()
                == std::any::TypeId::of::<crate::content::Content>(),
            default_timeout,
        )
    }

    /// The spec from the tool's declaration and its schemas: compiled once, not once per tool.
    fn from_parts(
        meta: ToolMeta,
        mut input: Value,
        output: Value,
        returns_content: bool,
        default_timeout: Duration,
    ) -> Self {
        schema::shape_input(&mut input, meta.fields);
        ToolSpec {
            name: Arc::from(meta.name),
            meta,
            input_schema: Arc::new(crate::outcome::ToolSchema::new(input)),
            output_schema: Arc::new(output),
            timeout: meta.timeout.unwrap_or(default_timeout),
            returns_content,
            examples: spec::parsed_examples(meta.examples),
        }
    }
}
