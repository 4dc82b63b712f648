#![doc = include_str!("docs/crate.md")]
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
