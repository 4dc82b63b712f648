//! Serve a toolwright [`Registry`] as a Model Context Protocol server, over stdio or streamable
//! HTTP, with every guard rail of the registry in force.
//!
//! The protocol engine is [rmcp](https://docs.rs/rmcp), the official Rust MCP SDK: framing,
//! lifecycle and version negotiation, cancellation, server-to-client requests and the
//! streamable HTTP transport are its. This crate maps MCP onto the registry:
//!
//! - **Both revisions**: 2025-11-25 (and earlier) with sessions, and 2026-07-28 without: each
//!   2026-07-28 request carries its version and capabilities, opens no session, and its results
//!   say their `resultType`; `subscriptions/listen` delivers `tools/list_changed`.
//! - **One [`Session`] per conversation**: per MCP session (a stdio connection, a
//!   streamable-HTTP `Mcp-Session-Id`), or, for a request whose `_meta` names one
//!   ([`CONVERSATION_KEY`]), per named conversation of that principal, across requests and
//!   revisions. A 2026-07-28 request that names none is a conversation of its own. Grounded
//!   ids, recovery budgets and idempotency scopes belong to that conversation, never shared
//!   with another principal's.
//! - **A streamable-HTTP session belongs to the principal who opened it.** With
//!   [`McpServer::authorize`], every HTTP request is authorized on its own (a token the
//!   authorizer now rejects is 401, on an open session too), and every message naming an
//!   `Mcp-Session-Id` (requests, notifications such as `notifications/cancelled`, the client's
//!   answers to elicitation, the `GET` stream, `DELETE`) is accepted only from that principal;
//!   from anyone else it is 404, exactly as for a session that does not exist, and nothing
//!   reaches the session. A request's scopes are its own token's, so a narrower token on an
//!   open session lists and calls fewer tools. Server-to-client requests carry random ids, and
//!   an answer is delivered only for a request still waiting, once.
//! - **Bounded**: live sessions ([`McpServer::max_sessions`], per principal
//!   [`McpServer::max_sessions_per_principal`]; past a cap, 503 with `Retry-After`, decided
//!   before anything is allocated), idle sessions end ([`McpServer::session_idle_timeout`]),
//!   and [`McpServer::bind_http`] caps connections and times out slow headers and bodies
//!   ([`McpServer::max_connections`], [`McpServer::header_read_timeout`],
//!   [`McpServer::body_read_timeout`]).
//! - **`tools/list`** is the registry's MCP export (title, annotations, input and output
//!   schema), filtered to the tools the session is shown ([`Registry::is_visible`]: it holds
//!   the tool's `#[tool(scopes = [..])]`, and the registry's `visible_when` / `tool_filter`
//!   predicates allow it).
//! - **Deferred tools** ([`RegistryBuilder::deferred`](toolwright_core::RegistryBuilder::deferred))
//!   are not listed until the session finds them with the registry's search tool, which is
//!   listed. In a 2025-11-25 session, a search that finds tools sends
//!   `notifications/tools/list_changed`, and the next `tools/list` holds them. A 2026-07-28
//!   `tools/list` varies by authorization only, never by conversation, so it never holds a
//!   deferred tool: the client calls a found tool by the name the search returned, in the
//!   conversation the request names. Give the search
//!   [`ToolSearch::with_schemas`](toolwright_core::registry::ToolSearch::with_schemas) so its
//!   results carry each tool's input schema. A deferred tool called before it was found is an
//!   `unknown_tool` result telling the model to search.
//! - **`tools/call`** runs [`Registry::call_in`]. Every outcome, a failure included, is a
//!   result: the envelope as text and as `structuredContent`, `isError: true` when the call
//!   failed, so the model reads why and recovers (MCP 2025-11-25, "Tool Execution Errors";
//!   invalid arguments are in this class since that revision). A tool whose scopes the session
//!   lacks is not listed, and a call of it is such a result, `unauthorized`, as in process.
//! - **Protocol errors** are what the spec makes them: a tool that does not exist for the
//!   session ([`Registry::exists_for`]: no such name, or a predicate hides it) is
//!   JSON-RPC `-32602` (the spec's example for an unknown tool), its message and `data`
//!   listing the tools it can call; arguments over [`McpServer::max_argument_bytes`] are
//!   `-32602` naming the limit, and so are `tools/call` params of the wrong shape (non-object
//!   `arguments`: the message names the field, what it must be and what came); malformed
//!   JSON-RPC and unknown methods are rmcp's `-32600`,
//!   `-32601` and `-32602`. Input that is not JSON at all has no id to answer and is dropped,
//!   as every official SDK does; the server keeps serving.
//! - **Progress**: when a `tools/call` carries a `progressToken`, what the tool reports through
//!   [`ToolContext::progress`](toolwright_core::ToolContext::progress) becomes
//!   `notifications/progress`, at most one per 50 ms ([`McpServer::progress_interval`]) and
//!   the last one always, all before the result.
//! - **Cancellation**: `notifications/cancelled`, an HTTP response stream the client drops and
//!   a closed connection drop the call's future; no result is sent. The registry counts a
//!   dropped call neither as a success nor as a failure, and leaves a non-idempotent call's key
//!   to expire as an effect of unknown outcome.
//! - **Approval**: a `#[tool(requires_approval)]` call asks the user through
//!   `elicitation/create`, showing the tool and its redacted arguments; accept runs it once,
//!   decline or cancel is `approval_denied`. A 2026-07-28 client, which gets no
//!   server-initiated requests, is asked by an input-required result instead: the question and
//!   a sealed `requestState`, bound to the principal, the tool and its arguments
//!   ([`McpServer::request_state_key`]); the client sends the call again with the user's
//!   answer, and an accepted state approves that one call. A client without elicitation gets
//!   [`McpServer::approver`], or a refusal.
//! - **Beside your resources and prompts**: [`McpServer::with_handler`] serves an rmcp
//!   [`ServerHandler`] you write (resources, prompts, completions, logging) with the tools
//!   inside it as a [`Tools`], so everything above holds for them.
//!
//! ```no_run
//! use toolwright_core::{Registry, ToolError};
//! use toolwright_mcp::McpServer;
//!
//! # async fn demo(registry: Registry) -> Result<(), toolwright_mcp::ServeError> {
//! // stdio, for a desktop client that starts the server itself:
//! McpServer::new(registry.clone()).serve_stdio().await?;
//!
//! // streamable HTTP on loopback:
//! McpServer::new(registry).serve_http("127.0.0.1:8080").await?;
//! # Ok(()) }
//! ```

#![warn(missing_docs)]
#![deny(unreachable_pub)]

mod approval;
mod conversations;
mod handler;
mod input;
mod listen;
mod progress;
#[cfg(feature = "proxy")]
pub mod proxy;
mod server;
mod sessions;
mod streamable;
mod tasks;

pub use crate::conversations::{CALL_KEY, CONVERSATION_KEY, MAX_CONVERSATION_KEY_BYTES};
pub use crate::handler::Tools;
pub(crate) use crate::server::Served;
pub use crate::server::{
    serve_stdio, McpServer, ServeError, DEFAULT_BODY_READ_TIMEOUT,
    DEFAULT_CONVERSATION_IDLE_TIMEOUT, DEFAULT_HEADER_READ_TIMEOUT, DEFAULT_MAX_CONNECTIONS,
    DEFAULT_MAX_SESSIONS, DEFAULT_MAX_SESSIONS_PER_PRINCIPAL, DEFAULT_PROGRESS_INTERVAL,
    DEFAULT_SESSION_IDLE_TIMEOUT,
};
pub use crate::streamable::{Authorizer, Grant, HttpServer, ProtectedResource};
pub use crate::tasks::{
    DEFAULT_MAX_TASKS, DEFAULT_MAX_TASKS_PER_PRINCIPAL, DEFAULT_TASK_LEASE,
    DEFAULT_TASK_POLL_INTERVAL, DEFAULT_TASK_TTL, MAX_FINISHED_TASKS,
    MAX_FINISHED_TASKS_PER_PRINCIPAL, MAX_FINISHED_TASK_BYTES,
    MAX_FINISHED_TASK_BYTES_PER_PRINCIPAL,
};
/// The rmcp this crate is built on, for [`McpServer::serve`]'s transports.
pub use rmcp;
