#![doc = include_str!("docs/crate.md")]
#![cfg_attr(docsrs, feature(doc_cfg))]
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
#[cfg_attr(docsrs, doc(cfg(feature = "tower")))]
pub use toolwright_core::service;

/// Serve a registry as a Model Context Protocol server over stdio and streamable HTTP, on
/// rmcp (the `mcp` feature): `toolwright::mcp::McpServer::new(registry).serve_stdio()`.
#[cfg(feature = "mcp")]
#[cfg_attr(docsrs, doc(cfg(feature = "mcp")))]
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
#[cfg_attr(docsrs, doc(cfg(feature = "redis")))]
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
