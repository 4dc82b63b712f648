#![doc = include_str!("docs/crate.md")]
#![cfg_attr(docsrs, feature(doc_cfg))]
#![forbid(unsafe_code)]
#![deny(unreachable_pub)]

// What a user configures: the builder, its defaults, what every session shares.
mod server;

// One MCP session and its methods (`tools/list`, `tools/call`), then what a call may meet on
// its way: the conversation it belongs to, progress, a question or an approval for the user,
// and a task that outlives its request.
mod approval;
mod conversations;
mod handler;
// Sampling, roots and logging are in both revisions this server speaks; rmcp marks them
// deprecated for a later one (SEP-2577).
#[allow(deprecated)]
mod input;
mod progress;
mod tasks;

// Streamable HTTP: who may call, whose each session is, the listener.
mod listen;
mod sessions;
mod streamable;

// Another MCP server's tools through the pipeline.
#[cfg(feature = "proxy")]
#[cfg_attr(docsrs, doc(cfg(feature = "proxy")))]
pub mod proxy;

// The public items of the modules above, at the crate's root.
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
    MAX_FINISHED_TASK_BYTES_PER_PRINCIPAL, MAX_INPUT_RESPONSE_BYTES, MAX_PENDING_INPUTS_PER_TASK,
};
/// The rmcp this crate is built on, for [`McpServer::serve`]'s transports.
pub use rmcp;
