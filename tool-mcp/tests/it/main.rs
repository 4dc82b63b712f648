//! The MCP server's and the proxy's integration tests, one binary: a module per file, the
//! shared tools and clients in `common`. One binary links the dependency tree once.
//!
//! Run one file with `cargo test -p toolwright-mcp --all-features --test it <file name>::`.

mod common;

mod ask;
mod client_requests;
mod composed;
mod content;
mod http;
mod progress;
mod proxy;
mod revisions;
mod sessions;
mod stdio;
mod task_ask;
