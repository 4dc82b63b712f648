//! The agent loop's integration tests, one binary: a module per file. One binary links the
//! dependency tree once.
//!
//! Run one file with `cargo test -p toolwright-agent --all-features --test it <file name>::`.

mod agent_bounds;
mod agent_loop;
mod client_requests;
// The HTTP model clients against a fake provider on loopback.
#[cfg(feature = "http")]
mod support;
#[cfg(feature = "http")]
mod wire;
#[cfg(feature = "http")]
mod wire_bounds;
