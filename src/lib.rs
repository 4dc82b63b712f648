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

// The approval review page, as an axum router a service mounts (the `review-page` feature).
#[cfg(feature = "review-page")]
pub mod review;

/// Everything a tool author needs: `use toolwright::prelude::*;`.
pub mod prelude {
    pub use toolwright_core::{
        ErrorKind, IdempotencyKey, Outcome, Registry, Seam, Session, State, Status, Tool, ToolCall,
        ToolContext, ToolError,
    };
    pub use toolwright_macros::{data, tool, toolset};
}

/// Not public API: what `#[tool]`-generated code refers to, so users depend on `toolwright`
/// alone. The version in the name ties the macro crate to the facade of the same release: a
/// `toolwright-macros` of another version fails to resolve this path instead of generating code
/// against a runtime it does not match (serde names its `__private` module the same way).
mod args;

#[doc(hidden)]
pub mod __private_v0_1 {
    pub use crate::args::{
        args_schema, present, value_once, ArgProbe, ArgSchema, FieldIndex, Unusable, Usable,
    };
    pub use inventory;
    pub use schemars;
    pub use serde;
    pub use serde_json;
    pub use toolwright_core::execute::blocking::blocking;
    pub use toolwright_core::outcome::Violations;
    pub use toolwright_core::provenance::{check as grounded, Grounds};
    pub use toolwright_core::registry::{CollectedTool, Toolset};
    pub use toolwright_core::tool::{FieldMeta, Number, Rule, StateRequirement};
    pub use toolwright_core::validate::rules;
    pub use toolwright_core::{Invocation, RegistryBuilder, Session, Tool, ToolError, ToolMeta};

    /// The return type of a tool: serializable, with a schema.
    ///
    /// The generated `Tool` impl carries `where for<'__toolwright> T: ToolOutput`, so an
    /// unusable `T` fails this one obligation where the tool is registered, reported once (the
    /// message below) at the return type, instead of one error per missing trait and per place
    /// the type is used. The binder keeps rustc from rejecting the bound on the impl itself as
    /// trivially false.
    #[diagnostic::on_unimplemented(
        message = "`{Self}` cannot be a tool result: it must implement `Serialize` and `JsonSchema`",
        label = "the model receives this value as JSON, described by a schema",
        note = "put `#[toolwright::data(output)]` on the returned type and on every type inside it (or derive `serde::Serialize` and `schemars::JsonSchema` yourself, with both crates in Cargo.toml)",
        note = "a tool result must also be `Send + 'static`: no references, `Rc` or `RefCell`"
    )]
    pub trait ToolOutput: serde::Serialize + schemars::JsonSchema + Send + 'static {}

    // `do_not_recommend` makes rustc report the unmet `T: ToolOutput` itself, with the message
    // above, rather than each unmet bound of this impl as a separate error.
    #[diagnostic::do_not_recommend]
    impl<T: serde::Serialize + schemars::JsonSchema + Send + 'static> ToolOutput for T {}

    /// The type of a tool parameter the model fills: deserializable, with a schema.
    ///
    /// The generated `<Fn>Args` struct's `Deserialize` and `JsonSchema` impls reach each
    /// parameter type `P` through [`ArgProbe`], which compiles for any `P`, so neither they nor
    /// the `Tool` impl check `P` themselves (which reported an unusable type several times, with
    /// notes inside serde, or once more where the tool is registered). The registration
    /// function proves `for<'__toolwright> P: ToolArgument` once, at the parameter's type, so an
    /// unusable `P` is one error there, with the message below. As for [`ToolOutput`], the
    /// binder keeps rustc from rejecting the bound as trivially false where it is declared.
    #[diagnostic::on_unimplemented(
        message = "`{Self}` cannot be a tool parameter: it must implement `Deserialize` and `JsonSchema`",
        label = "the model sends this value as JSON, described by a schema",
        note = "put `#[toolwright::data]` (or `#[toolwright::data(input)]`) on the type and on every type inside it (or derive `serde::Deserialize` and `schemars::JsonSchema` yourself, with both crates in Cargo.toml)",
        note = "a tool parameter must also be `Send + 'static`: no references, `Rc` or `RefCell`"
    )]
    pub trait ToolArgument:
        serde::de::DeserializeOwned + schemars::JsonSchema + Send + 'static
    {
    }

    /// What the `Tool` impl asks of a parameter type, since its arguments struct must be
    /// `Send + 'static` (the rest of [`ToolArgument`] the registration proves).
    #[diagnostic::on_unimplemented(
        message = "`{Self}` cannot be a tool parameter: it must be `Send + 'static`",
        label = "calls run on any worker thread and outlive the caller's borrows",
        note = "no references, `Rc` or `RefCell`: take an owned value (`String`, `Vec<T>`, `Arc<T>`)"
    )]
    pub trait SendArgument: Send + 'static {}

    #[diagnostic::do_not_recommend]
    impl<T: Send + 'static> SendArgument for T {}

    // As for `ToolOutput`: the unmet `P: ToolArgument` is reported, not each bound of this impl.
    #[diagnostic::do_not_recommend]
    impl<T: serde::de::DeserializeOwned + schemars::JsonSchema + Send + 'static> ToolArgument for T {}

    /// Whether a tool parameter's type (or a type inside it) is `std::time::Duration`, which
    /// serde and schemars describe as `{secs, nanos}`: `#[tool]` cannot tell from the name
    /// (`Duration` may be chrono's, or the user's), so it asks the compiler. For each path
    /// ending in `Duration`, the expansion calls `refuse_duration((&ClockProbe::<T>::NEW).probe())`:
    /// method lookup tries the receiver by value first, where only `ClockProbe<Duration>` has
    /// a `probe` ([`ByValue`](clock::ByValue)), returning [`IsStdDuration`](clock::IsStdDuration),
    /// which fails the bound with the message below; every other type takes the
    /// [`ByReference`](clock::ByReference) method, returning a type that meets it.
    pub mod clock {
        use core::marker::PhantomData;

        /// The type asked about.
        pub struct ClockProbe<T: ?Sized>(PhantomData<T>);

        impl<T: ?Sized> ClockProbe<T> {
            /// The probe.
            pub const NEW: Self = ClockProbe(PhantomData);
        }

        /// The answer for `std::time::Duration`.
        pub struct IsStdDuration;

        /// The answer for every other type.
        pub struct NotStdDuration;

        /// Found first, for `ClockProbe<std::time::Duration>` alone.
        pub trait ByValue {
            /// `IsStdDuration`.
            fn probe(&self) -> IsStdDuration {
                IsStdDuration
            }
        }

        impl ByValue for ClockProbe<std::time::Duration> {}

        /// Found for every type, after [`ByValue`].
        pub trait ByReference {
            /// `NotStdDuration`.
            fn probe(&self) -> NotStdDuration {
                NotStdDuration
            }
        }

        impl<T: ?Sized> ByReference for &ClockProbe<T> {}

        /// Met by every parameter type but `std::time::Duration`.
        #[diagnostic::on_unimplemented(
            message = "a model cannot fill a `std::time::Duration` well: it serializes as `{{secs, nanos}}`",
            label = "take an integer with its unit in the name instead, such as `timeout_ms: u64`",
            note = "write `timeout_ms: u64` (or `delay_secs: u32`, ...), bound it with `#[arg(range(max = ..))]` if it needs one, and build the `Duration` in the function with `Duration::from_millis(timeout_ms)`",
            note = "only std's `Duration` is refused: `chrono::Duration` or a type of your own named `Duration` is not"
        )]
        pub trait NotADuration {}

        impl NotADuration for NotStdDuration {}

        /// Fails for `IsStdDuration`, at the parameter's type.
        pub fn refuse_duration<T: NotADuration>(_: T) {}

        /// What `#[data]` reads an `Instant` field with, after reporting it: serde cannot
        /// derive for one, and this keeps the derive from adding errors of its own.
        pub fn refused_deserialize<'de, D: serde::Deserializer<'de>, T>(
            _: D,
        ) -> Result<T, D::Error> {
            Err(serde::de::Error::custom("an `Instant` cannot be sent"))
        }

        /// As [`refused_deserialize`], for `#[data]`'s `Serialize`.
        pub fn refused_serialize<T, S: serde::Serializer>(_: &T, _: S) -> Result<S::Ok, S::Error> {
            Err(serde::ser::Error::custom("an `Instant` cannot be sent"))
        }
    }

    /// A `#[arg(default = "...")]` string literal turned into the parameter's type.
    #[diagnostic::on_unimplemented(
        message = "`default` is a string, but this parameter is a `{Self}`",
        label = "expected a `{Self}` value here",
        note = "write the default as a value of the parameter's type: `default = 5` for a number, `default = true` for a bool, `default = \"text\"` only for a `String`"
    )]
    pub trait DefaultFromStr: Sized {
        /// The default value.
        fn default_from_str(text: &'static str) -> Self;
    }

    #[diagnostic::do_not_recommend]
    impl<T: From<&'static str>> DefaultFromStr for T {
        fn default_from_str(text: &'static str) -> Self {
            T::from(text)
        }
    }

    /// Fills a parameter from a `default = "..."` string literal (called at the literal, so a
    /// mismatch is reported there).
    pub fn default_from_str<T: DefaultFromStr>(text: &'static str) -> T {
        T::default_from_str(text)
    }

    /// What an `#[arg(validate = path)]` function returns.
    #[diagnostic::on_unimplemented(
        message = "an `#[arg(validate = ..)]` function must return `Result<(), E>` with `E: Display`, not `{Self}`",
        label = "this function returns `{Self}`",
        note = "write `fn check(value: &T) -> Result<(), String>` and return `Err(\"what is wrong\".to_string())`; the message reaches the model, naming the field"
    )]
    pub trait FieldCheckResult {
        /// The error, shown to the model.
        type Error: core::fmt::Display;
        /// As a plain `Result`.
        fn into_check_result(self) -> Result<(), Self::Error>;
    }

    #[diagnostic::do_not_recommend]
    impl<E: core::fmt::Display> FieldCheckResult for Result<(), E> {
        type Error = E;
        fn into_check_result(self) -> Result<(), E> {
            self
        }
    }

    /// Adapts an `#[arg(validate = path)]` result.
    pub fn field_check<R: FieldCheckResult>(result: R) -> Result<(), R::Error> {
        result.into_check_result()
    }

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

    /// What a `#[tool(validate = path)]` or `#[tool(authorize = path)]` function returns.
    #[diagnostic::on_unimplemented(
        message = "a `#[tool(validate = ..)]` or `#[tool(authorize = ..)]` function must return `Result<(), E>` with `E` a `ToolError`, `String` or `&'static str`, not `{Self}`",
        label = "this function returns `{Self}`",
        note = "write `fn check(args: &MyToolArgs) -> Result<(), ToolError>` and return `Err(ToolError::invalid(\"...\"))` when a rule is broken; an `authorize` function also takes `&Session`"
    )]
    pub trait ToolCheckResult {
        /// As a plain `Result`, with `kind` when the function gave only a message.
        fn into_tool_check(self, kind: toolwright_core::ErrorKind) -> Result<(), ToolError>;
    }

    #[diagnostic::do_not_recommend]
    impl<E: IntoValidationError> ToolCheckResult for Result<(), E> {
        fn into_tool_check(self, kind: toolwright_core::ErrorKind) -> Result<(), ToolError> {
            self.map_err(|e| e.into_validation_error(kind))
        }
    }

    /// Adapts a `validate = path` result.
    pub fn semantic<R: ToolCheckResult>(result: R) -> Result<(), ToolError> {
        result.into_tool_check(toolwright_core::ErrorKind::SemanticInvalid)
    }

    /// Adapts an `authorize = path` result.
    pub fn authorized<R: ToolCheckResult>(result: R) -> Result<(), ToolError> {
        result.into_tool_check(toolwright_core::ErrorKind::Unauthorized)
    }

    /// The error type of a tool function: anything that converts into a [`ToolError`].
    #[diagnostic::on_unimplemented(
        message = "`{Self}` cannot be a tool's error: it does not convert into `ToolError`",
        label = "the registry classifies failures as `ToolError`s",
        note = "return `Result<T, ToolError>` and map failures where they happen, for example `.map_err(|e| ToolError::unavailable(e.to_string()))?`; for your own error type, implement `From<{Self}> for ToolError`"
    )]
    pub trait IntoToolError {
        /// The error, classified.
        fn into_tool_error(self) -> ToolError;
    }

    #[diagnostic::do_not_recommend]
    impl<E: Into<ToolError>> IntoToolError for E {
        fn into_tool_error(self) -> ToolError {
            self.into()
        }
    }

    /// Adapts a tool function's result.
    pub fn into_result<T, E: IntoToolError>(result: Result<T, E>) -> Result<T, ToolError> {
        result.map_err(IntoToolError::into_tool_error)
    }

    /// What a `#[tool(fallback = ..)]` function may return for a tool whose result is `T`.
    #[diagnostic::on_unimplemented(
        message = "a `#[tool(fallback = ..)]` function must return what the tool returns, `Result<{T}, E>`, not `{Self}`",
        label = "this fallback returns `{Self}`",
        note = "write `async fn fallback(<the tool's parameters>) -> Result<{T}, ToolError>`: the same parameters as the tool, in the same order, and the tool's result type"
    )]
    pub trait FallbackResult<T> {
        /// As the tool's own result.
        fn into_tool_result(self) -> Result<T, ToolError>;
    }

    impl<T, E: IntoToolError> FallbackResult<T> for Result<T, E> {
        fn into_tool_result(self) -> Result<T, ToolError> {
            into_result(self)
        }
    }

    /// Adapts a fallback function's result.
    pub fn fallback_result<T, R: FallbackResult<T>>(result: R) -> Result<T, ToolError> {
        result.into_tool_result()
    }

    /// The error of a tool whose shared state is missing (the registry refuses to build in that
    /// case, so this only guards hand-built invocations).
    pub fn missing_state(type_name: &'static str) -> ToolError {
        ToolError::unavailable(format!(
            "the tool's shared state `{type_name}` is not configured"
        ))
    }
}

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
