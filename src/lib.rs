//! # toolwright
//!
//! LLM tool calls that hold up in production. Write an ordinary function, put `#[tool]` on it,
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
//! The function may return `Result<T, E>` (any `E: Into<ToolError>`), `T` (a tool that cannot
//! fail), `Option<T>` (`None` is `status: empty`) or `()` (a success without data); the output
//! schema is the schema of what the model receives. It may be `async` or not: a sync `fn` runs
//! on tokio's blocking pool ([`execute::blocking`] says what a timeout means for a thread), or
//! inline with `#[tool(blocking = false)]` when it is cheap.
//!
//! ```
//! use toolwright::prelude::*;
//!
//! /// Convert a price to cents.
//! #[tool(read_only, blocking = false)]
//! fn to_cents(amount: f64) -> i64 {
//!     (amount * 100.0).round() as i64
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let registry = Registry::builder().tool(ToCents).build().unwrap();
//! let outcome = registry.call(ToolCall::new("c1", "to_cents", r#"{"amount":1.25}"#)).await;
//! assert_eq!(outcome.data_as::<i64>(), Some(125));
//! # }
//! ```
//!
//! ## Tools as methods
//!
//! `#[toolset]` on an `impl` block turns each `#[tool]` method into a tool holding one shared
//! `Arc<Self>` (never a copy), registered together with [`RegistryBuilder::toolset`]. Generic
//! impl blocks work, the parameters fixed at registration; `Self::name` in `validate`,
//! `authorize`, `fallback` and `#[arg(validate)]` names an item of the impl. A tool method takes
//! `&self`: calls run concurrently on the one instance.
//!
//! ```
//! use std::sync::atomic::{AtomicU64, Ordering};
//! use toolwright::prelude::*;
//!
//! struct Counter {
//!     step: u64,
//!     total: AtomicU64,
//! }
//!
//! #[toolset]
//! impl Counter {
//!     /// Add one step to the total and return it.
//!     #[tool(idempotent = false)]
//!     async fn bump(&self) -> u64 {
//!         self.total.fetch_add(self.step, Ordering::SeqCst) + self.step
//!     }
//!
//!     /// The total so far.
//!     #[tool(read_only)]
//!     fn total(&self) -> u64 {
//!         self.total.load(Ordering::SeqCst)
//!     }
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let counter = Counter { step: 5, total: AtomicU64::new(0) };
//! let registry = Registry::builder().toolset(counter).build().unwrap();
//! registry.call(ToolCall::new("c1", "bump", "{}")).await;
//! let total = registry.call(ToolCall::new("c2", "total", "{}")).await;
//! assert_eq!(total.data_as::<u64>(), Some(5));
//! # }
//! ```
//!
//! ### `#[tool(...)]` keys
//!
//! | key | meaning |
//! |---|---|
//! | `name = "..."` | the name the model calls (default: the function's name); `^[A-Za-z0-9_-]{1,64}$` |
//! | `timeout_ms = N` | per-attempt timeout (default: the registry's, 30 s) |
//! | `idempotent = bool` | calling twice has the same effect as once (default `false`, as MCP's `idempotentHint`) |
//! | `read_only` | changes nothing; implies `idempotent` |
//! | `retries = N` | retries after the first attempt (default: the registry's policy, 3 attempts in all); a non-idempotent tool needs an `IdempotencyKey` parameter |
//! | `scopes = ["..."]` | scopes the [`Session`] must hold, else `unauthorized` |
//! | `validate = path` | cross-field rule `fn(&Args) -> Result<(), E>` -> `semantic_invalid` |
//! | `authorize = path` | `fn(&Args, &Session) -> Result<(), E>` -> `unauthorized` |
//! | `grounds(order = "id")` | ids of that kind in the result become known to the session ([`provenance`]) |
//! | `requires_approval` | each call runs only when the session's approver approves that exact call; else `pending` or `approval_denied` ([`approval`]) |
//! | `task` | a call may run past its request: an MCP client that takes tasks polls it as a task once it passed its checks ([`ToolMeta::task`]) |
//! | `fallback = path` | a function with the tool's parameters and result type (`async` when the tool is) that answers when the tool is unavailable (below) |
//! | `blocking = false` | a sync `fn` runs inline on the calling task, not on the blocking pool (and takes no `timeout_ms`) |
//! | `example = r#"{..}"#` | example arguments, one JSON object per key, repeatable (in order); not an object: a compile error; failing the tool's own checks (shape, field rules, `validate`): [`BuildError::InvalidExample`] when the registry is built; exported as Anthropic's `input_examples`, elsewhere as an `Examples:` paragraph of the description ([`providers::Provider`]) |
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
//! | `grounded = "order"` | a sentence in the description | an id a tool returned in this session, else `ungrounded_identifier` ([`provenance`]) |
//!
//! An `Option<T>` parameter is not required. Validation failures report **every** violation,
//! each with its JSON path, what was expected and what came.
//!
//! Doc comments are reflowed for the model: a paragraph's lines joined with single spaces,
//! paragraphs separated by a blank line, list items and fenced code blocks kept line for line
//! (the tool's description, parameter docs, and `#[data]` field and variant docs alike).
//!
//! std's `SystemTime`, `Instant` and `Duration` are compile errors as a parameter, inside one
//! (`Option<..>`, `Vec<..>`) or as a field of a `#[data]`/`#[data(input)]` type: they serialize
//! as `{secs_since_epoch, nanos_since_epoch}` and `{secs, nanos}`, which models fill badly. Take
//! a `String` holding an RFC 3339 timestamp (or a `chrono::DateTime<Utc>`/`jiff::Timestamp`
//! with schemars' `chrono04`/`jiff02` feature) and an integer with its unit in its name
//! (`timeout_ms: u64`). `SystemTime` and `Instant` are matched by name, bare or as
//! `std::time::X`; `Duration` only when it is std's (chrono's or your own is fine).
//!
//! ## Your own types
//!
//! A parameter or result can be any struct or enum with `#[toolwright::data]` on it (also in
//! the prelude as `data`): it derives serde's `Serialize` and `Deserialize` and schemars'
//! `JsonSchema` through toolwright, so Cargo.toml still names only `toolwright` (and tokio).
//! `#[data(input)]` derives only what an argument needs, `#[data(output)]` only what a result
//! needs (a result may then hold a `&'static str`). serde's and schemars' own attributes work
//! below it, and `///` docs on fields and variants become descriptions in the schema.
//!
//! ```
//! use toolwright::prelude::*;
//!
//! /// How fast the parcel travels.
//! #[data]
//! #[derive(Debug, Clone, Copy)]
//! #[serde(rename_all = "snake_case")]
//! enum Speed {
//!     Standard,
//!     NextDay,
//! }
//!
//! /// Where and how to ship.
//! #[data(input)]
//! struct Shipment {
//!     /// The order to ship.
//!     order_id: String,
//!     speed: Speed,
//! }
//!
//! #[data(output)]
//! struct Label {
//!     tracking: String,
//!     carrier: &'static str,
//! }
//!
//! /// Buy a shipping label for an order.
//! #[tool(idempotent = true)]
//! async fn ship(shipment: Shipment) -> Result<Label, ToolError> {
//!     let carrier = match shipment.speed {
//!         Speed::Standard => "post",
//!         Speed::NextDay => "courier",
//!     };
//!     Ok(Label { tracking: format!("T-{}", shipment.order_id), carrier })
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let registry = Registry::builder().tool(Ship).build().unwrap();
//! let args = r#"{"shipment":{"order_id":"A1","speed":"next_day"}}"#;
//! let outcome = registry.call(ToolCall::new("c1", "ship", args)).await;
//! assert_eq!(outcome.status(), Status::Success);
//! # }
//! ```
//!
//! To name the traits or values yourself, use the re-exports [`serde`], [`serde_json`] and
//! [`schemars`], e.g. `toolwright::serde_json::Value`.
//!
//! ## Fallbacks
//!
//! `#[tool(fallback = path)]` names an `async fn` with the tool's parameters and result type
//! that answers when the tool is unavailable: after `circuit_open`, or `unavailable`,
//! `timeout`, `rate_limited` once retries are over, if the tool is idempotent or no attempt may
//! have acted. The model reads `"degraded": true, "source": "fallback"` and a message saying the
//! answer may be stale; a definitive failure (`not_found`, ...) is never replaced, and a
//! fallback that fails leaves the tool's own failure.
//!
//! ```
//! use toolwright::prelude::*;
//!
//! /// Today's exchange rate, from the live feed.
//! #[tool(read_only, timeout_ms = 500, fallback = last_rate)]
//! async fn exchange_rate(currency: String) -> Result<f64, ToolError> {
//!     Err(ToolError::unavailable(format!("the rate feed for {currency} is down")))
//! }
//!
//! /// Yesterday's closing rate.
//! async fn last_rate(currency: String) -> Result<f64, ToolError> {
//!     Ok(if currency == "EUR" { 1.08 } else { 1.0 })
//! }
//!
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() {
//! let registry = Registry::builder().tool(ExchangeRate).build().unwrap();
//! let call = ToolCall::new("c1", "exchange_rate", r#"{"currency":"EUR"}"#);
//! let outcome = registry.call(call).await;
//! assert!(outcome.is_degraded());
//! assert_eq!(outcome.degraded_by(), Some(ErrorKind::Unavailable));
//! assert_eq!(outcome.to_model_json()["source"], "fallback");
//! # }
//! ```
//!
//! ## Timeouts, retries, budgets, breakers
//!
//! Every attempt runs under the tool's timeout, with panics contained; one deadline covers all
//! the attempts of a call. A transient failure (`timeout`, `rate_limited`, `unavailable`) is
//! retried with capped full-jitter backoff (or after its `Retry-After`) when repeating it is
//! safe: the tool is idempotent, takes an [`IdempotencyKey`], or the request never started. A
//! per-tool retry budget keeps retries to about 20% of calls, and a per-tool circuit breaker
//! fails fast with `circuit_open` while a dependency is down. The [`Outcome`] tells the story:
//! [`Outcome::attempt_history`], [`Outcome::retry_stop`]. Configuration, defaults and what
//! cancellation means for a tool body: [`execute`].
//!
//! ```
//! use std::time::Duration;
//! use toolwright::execute::{BreakerPolicy, RetryBudget, RetryPolicy};
//! use toolwright::Registry;
//!
//! let registry = Registry::builder()
//!     .default_timeout(Duration::from_secs(5))
//!     .call_deadline(Duration::from_secs(12))
//!     .retry_policy(RetryPolicy::new().max_attempts(4))
//!     .retry_budget(RetryBudget::new(0.1))
//!     .breaker(BreakerPolicy::new().min_calls(20).cooldown(Duration::from_secs(10)))
//!     .build()
//!     .unwrap();
//! assert!(registry.breaker("no_such_tool").is_none());
//! ```
//!
//! With the `reqwest` feature, `?` on a reqwest call inside a tool classifies the error
//! (connect errors never started, timeouts, bodies that do not decode), and
//! `execute::classify::check_response` classifies a response by its status and `Retry-After`.
//!
//! ## Guard rails and recovery
//!
//! | module | what it does | declared with |
//! |---|---|---|
//! | [`idempotency`] | a non-idempotent call under one key happens once, retried or re-delivered | `#[tool]` (not `idempotent`), an `IdempotencyKey` parameter |
//! | [`provenance`] | an id argument must be one a tool returned in the conversation | `#[tool(grounds(order = "id"))]`, `#[arg(grounded = "order")]` |
//! | [`approval`] | a consequential call runs only once a person (or a policy) approves it | `#[tool(requires_approval)]`, [`Session::with_approver`] |
//! | [`repair`] | one more try at arguments that fail on their form: deterministic rules, then the model | [`RegistryBuilder::deterministic_repair`], [`RegistryBuilder::repairer`] |
//! | [`RecoveryBudget`](conversation::RecoveryBudget) | the model is told to stop after repeated failures of one kind | [`RegistryBuilder::recovery_budget`] |
//! | [`observe`] | one `tracing` event per call and per attempt, arguments redacted | [`RegistryBuilder::log_arguments`] |
//! | [`replay`] | recorded calls replayed against a changed registry | [`replay::Recorder`] |
//!
//! ## Error contract
//!
//! [`ErrorKind`] lists every `error_type` the model can see; [`ERROR_CONTRACT`] is a
//! system-prompt paragraph that teaches a model to read the envelope.

#![warn(missing_docs)]
#![forbid(unsafe_code)]
#![deny(unreachable_pub)]

// The crate root: what a tool author and an application name every day.
pub use toolwright_core::{
    ArgumentLog, AttemptRecord, BuildError, Content, Effect, ErrorKind, IdempotencyKey,
    IdempotencyStore, Invocation, KeyMode, MemoryStore, Outcome, Registry, RegistryBuilder,
    RetryStop, Seam, Session, State, Status, Tool, ToolCall, ToolContext, ToolError, ToolMeta,
    ToolSpec, Toolset, Violation, ERROR_CONTRACT,
};
pub use toolwright_macros::{data, tool, toolset};

// One module per stage of a call, in call order, then what a registry is built from and with.
pub use toolwright_core::{
    approval, ask, call, content, conversation, dynamic, error, execute, guard, idempotency,
    observe, outcome, progress, provenance, providers, registry, repair, replay, tool, validate,
};

/// A tool defined at run time: name, description, JSON Schema, async handler
/// ([`dynamic`] has the details).
pub use toolwright_core::dynamic::DynamicTool;

/// A registry as a `tower::Service<ToolCall>` (the `tower` feature), so tower's layers compose
/// in front of it: `registry.service_in(session)`.
#[cfg(feature = "tower")]
pub use toolwright_core::service;

/// Serve a registry as a Model Context Protocol server over stdio and streamable HTTP, on
/// rmcp (the `mcp` feature): `toolwright::mcp::McpServer::new(registry).serve_stdio()`.
#[cfg(feature = "mcp")]
#[doc(inline)]
pub use toolwright_mcp as mcp;

/// The agent loop: an [`Agent`](agent::Agent) over a [`ChatModel`](agent::ChatModel) and a
/// [`Registry`], with concurrent tool calls, a step cap, a deadline, retried model requests and a
/// typed end; [`ScriptedModel`](agent::ScriptedModel) for tests. The `agent` feature adds the
/// HTTP model clients (`toolwright::agent::http`: OpenAI and OpenAI-compatible servers,
/// Anthropic, Gemini).
#[doc(inline)]
pub use toolwright_agent as agent;

/// The serde toolwright is built on, so a tool crate can name `toolwright::serde::Serialize`
/// without its own dependency. [`data`] derives through it.
pub use serde;

/// The serde_json toolwright is built on: tool schemas and envelopes are
/// `toolwright::serde_json::Value`s.
pub use serde_json;

/// The redis crate the Redis-backed stores are built on (the `redis` feature), for building the
/// [`ConnectionManager`](redis::aio::ConnectionManager) that
/// [`RedisStore`](idempotency::RedisStore) and
/// [`RedisConversationStore`](conversation::RedisConversationStore) take, at the version they take.
#[cfg(feature = "redis")]
pub use toolwright_core::redis;

/// The schemars (1.x) toolwright is built on: `toolwright::schemars::JsonSchema` is what a tool's
/// argument and result types implement. [`data`] derives through it.
pub use schemars;

/// Everything a tool author needs: `use toolwright::prelude::*;`.
pub mod prelude {
    pub use toolwright_core::{
        ErrorKind, IdempotencyKey, Outcome, Registry, Seam, Session, State, Status, Tool, ToolCall,
        ToolContext, ToolError,
    };
    pub use toolwright_macros::{data, tool, toolset};
}

// Not public API: what `#[tool]`-generated code refers to (src/private/).
#[doc(hidden)]
#[path = "private/mod.rs"]
pub mod __private_v0_1;

/// The README and the guide's pages (`docs/src`), compiled and run as doc tests, so a page whose
/// code stops compiling fails `cargo test`.
#[cfg(doctest)]
mod guide {
    #[doc = include_str!("../README.md")]
    mod readme {}
    #[doc = include_str!("../docs/src/tools.md")]
    mod tools {}
    #[doc = include_str!("../docs/src/pipeline.md")]
    mod pipeline {}
    #[doc = include_str!("../docs/src/repair.md")]
    mod repair {}
    #[doc = include_str!("../docs/src/provenance.md")]
    mod provenance {}
    #[doc = include_str!("../docs/src/approval.md")]
    mod approval {}
    #[doc = include_str!("../docs/src/idempotency.md")]
    mod idempotency {}
    #[doc = include_str!("../docs/src/runtime-tools.md")]
    mod runtime_tools {}
    #[cfg(feature = "tower")]
    #[doc = include_str!("../docs/src/visibility.md")]
    mod visibility {}
    #[cfg(feature = "otlp")]
    #[doc = include_str!("../docs/src/observability.md")]
    mod observability {}
    #[doc = include_str!("../docs/src/scale-out.md")]
    mod scale_out {}
    #[doc = include_str!("../docs/src/providers.md")]
    mod providers {}
    #[cfg(feature = "agent")]
    #[doc = include_str!("../docs/src/agent.md")]
    mod agent {}
    #[cfg(feature = "mcp")]
    #[doc = include_str!("../docs/src/mcp.md")]
    mod mcp {}
    #[doc = include_str!("../docs/src/testing.md")]
    mod testing {}
    #[doc = include_str!("../docs/src/support-agent.md")]
    mod support_agent {}
}
