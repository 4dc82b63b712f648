//! # toolwright
//!
//! LLM tool calls that hold up in production. Write an ordinary `async fn`, put `#[tool]` on it,
//! and get the JSON schema, argument parsing with every problem reported by path, field and
//! semantic validation, a per-tool timeout, panic containment, idempotency-key threading and a
//! registry entry. Every call runs through one pipeline, Validate -> Bound -> Classify ->
//! Recover, and the model gets back an envelope it can act on.
//!
//! ```
//! use toolwright::prelude::*;
//!
//! /// Search orders by free text. Returns at most `max_results` orders.
//! #[tool(timeout_ms = 2000, read_only)]
//! async fn search_orders(
//!     /// Words to look for in the order.
//!     #[arg(length(min = 1, max = 300))]
//!     query: String,
//!     /// How many orders to return.
//!     #[arg(range(min = 1, max = 20), default = 5)]
//!     max_results: u32,
//! ) -> Result<Vec<String>, ToolError> {
//!     Ok((0..max_results.min(2)).map(|i| format!("{query}-{i}")).collect())
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let registry = Registry::builder().tool(SearchOrders).build().unwrap();
//!
//! let ok = registry.call(ToolCall::new("c1", "search_orders", r#"{"query":"late"}"#)).await;
//! assert_eq!(ok.status(), Status::Success);
//!
//! let bad = registry.call(ToolCall::new("c2", "search_orders", r#"{"query":"","max_results":50}"#)).await;
//! assert_eq!(bad.error_kind(), Some(ErrorKind::SchemaMismatch));
//! assert_eq!(bad.violations().len(), 2); // every problem, each with its path
//! # }
//! ```
//!
//! ## What `#[tool]` generates
//!
//! For `async fn search_orders` the attribute keeps the function callable as written and adds
//! `SearchOrdersArgs` (the argument struct: `Deserialize` + `JsonSchema`, unknown fields denied),
//! `SearchOrders` (a unit struct implementing [`Tool`]) and an auto-collection entry, so
//! [`Registry::from_collected`] finds every tool of the binary.
//!
//! Parameters of type [`IdempotencyKey`], [`ToolContext`] and [`State<T>`](State) are injected by
//! the registry and never appear in the schema.
//!
//! ### `#[tool(...)]` keys
//!
//! | key | meaning |
//! |---|---|
//! | `name = "..."` | the name the model calls (default: the function's name); `^[A-Za-z0-9_-]{1,64}$` |
//! | `timeout_ms = N` | per-attempt timeout (default: the registry's, 30 s) |
//! | `idempotent = bool` | calling twice has the same effect as once (default `false`, as MCP's `idempotentHint`) |
//! | `read_only` | changes nothing; implies `idempotent` |
//! | `retries = N` | retries after the first attempt; a non-idempotent tool needs an `IdempotencyKey` parameter |
//! | `scopes = ["..."]` | scopes the [`Session`] must hold, else `unauthorized` |
//! | `validate = path` | cross-field rule `fn(&Args) -> Result<(), E>` -> `semantic_invalid` |
//! | `authorize = path` | `fn(&Args, &Session) -> Result<(), E>` -> `unauthorized` |
//!
//! ### `#[arg(...)]` keys
//!
//! Each rule becomes both a JSON Schema keyword and a runtime check, from one declaration.
//!
//! | key | schema | check |
//! |---|---|---|
//! | `range(min = 1, max = 9)` | `minimum` / `maximum` | numbers (either bound may be omitted) |
//! | `length(min = 1, max = 300)` | `minLength`/`maxLength`, `minItems`/`maxItems` | characters of strings, items of lists |
//! | `pattern = "^[A-Z]{3}$"` | `pattern` | checked at compile time, searched like JSON Schema |
//! | `one_of = ["a", "b"]` | `enum` | strings or numbers |
//! | `default = 5` | `default`, not required | filled in when the model leaves it out |
//! | `validate = path` | | custom `fn(&T) -> Result<(), E: Display>` |
//! | `sensitive` | | never logged |
//!
//! An `Option<T>` parameter is not required. Validation failures report **every** violation,
//! each with its JSON path, what was expected and what came.
//!
//! ## Error contract
//!
//! [`ErrorKind`] lists every `error_type` the model can see; [`ERROR_CONTRACT`] is a
//! system-prompt paragraph that teaches a model to read the envelope.

#![warn(missing_docs)]

pub use toolwright_core::*;
pub use toolwright_macros::tool;

/// Everything a tool author needs: `use toolwright::prelude::*;`.
pub mod prelude {
    pub use toolwright_core::{
        ErrorKind, IdempotencyKey, Outcome, Registry, Seam, Session, State, Status, Tool, ToolCall,
        ToolContext, ToolError,
    };
    pub use toolwright_macros::tool;
}

/// Not public API: what `#[tool]`-generated code refers to, so users depend on `toolwright`
/// alone.
#[doc(hidden)]
pub mod __private {
    pub use inventory;
    pub use schemars;
    pub use serde;
    pub use serde_json;
    pub use toolwright_core::validate::rules;
    pub use toolwright_core::validate::Violations;
    pub use toolwright_core::{
        CollectedTool, FieldMeta, Invocation, Number, RegistryBuilder, Rule, Session,
        StateRequirement, Tool, ToolError, ToolMeta,
    };

    /// The return type of a tool: serializable, with a schema.
    #[diagnostic::on_unimplemented(
        message = "`{Self}` cannot be a tool result: it must implement `Serialize` and `JsonSchema`",
        label = "the model receives this value as JSON, described by a schema",
        note = "add `#[derive(serde::Serialize, schemars::JsonSchema)]` to the type (toolwright re-exports both crates)"
    )]
    pub trait ToolOutput: serde::Serialize + schemars::JsonSchema + Send + 'static {}
    impl<T: serde::Serialize + schemars::JsonSchema + Send + 'static> ToolOutput for T {}

    /// Asserts at compile time that a tool's result type is usable.
    pub const fn assert_output<T: ToolOutput>() {}

    /// Errors a validator may return: a [`ToolError`], or a message.
    pub trait IntoValidationError {
        /// The error, with `kind` when the validator gave only a message.
        fn into_validation_error(self, kind: toolwright_core::ErrorKind) -> ToolError;
    }

    impl IntoValidationError for ToolError {
        fn into_validation_error(self, _: toolwright_core::ErrorKind) -> ToolError {
            self
        }
    }

    impl IntoValidationError for String {
        fn into_validation_error(self, kind: toolwright_core::ErrorKind) -> ToolError {
            ToolError::new(kind, self)
        }
    }

    impl IntoValidationError for &'static str {
        fn into_validation_error(self, kind: toolwright_core::ErrorKind) -> ToolError {
            ToolError::new(kind, self)
        }
    }

    /// Adapts a `validate = path` result.
    pub fn semantic<E: IntoValidationError>(result: Result<(), E>) -> Result<(), ToolError> {
        result.map_err(|e| e.into_validation_error(toolwright_core::ErrorKind::SemanticInvalid))
    }

    /// Adapts an `authorize = path` result.
    pub fn authorized<E: IntoValidationError>(result: Result<(), E>) -> Result<(), ToolError> {
        result.map_err(|e| e.into_validation_error(toolwright_core::ErrorKind::Unauthorized))
    }

    /// Adapts a tool function's result.
    pub fn into_result<T, E: Into<ToolError>>(result: Result<T, E>) -> Result<T, ToolError> {
        result.map_err(Into::into)
    }

    /// The error of a tool whose shared state is missing (the registry refuses to build in that
    /// case, so this only guards hand-built invocations).
    pub fn missing_state(type_name: &'static str) -> ToolError {
        ToolError::unavailable(format!(
            "the tool's shared state `{type_name}` is not configured"
        ))
    }
}
