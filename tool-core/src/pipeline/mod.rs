//! The stages of one call, in the order it runs through them, and the finalizer every path
//! ends with.
//!
//! ```text
//! scopes ─> shape, field rules, semantic rule, provenance, authorize ─> (one repair pass)
//!   ─> [side-effecting: idempotency begin: replay, duplicate_in_flight, mismatch]
//!   ─> approval ─> breaker, attempts under timeout and deadline, retries ─> interpret
//!   ─> fallback ─> [settle the idempotency key] ─> finalize (ids, recovery budget, log)
//! ```
//!
//! Only what needs the tool's type is generic ([`erased`]: parsing and the typed checks, the
//! attempts of its body with the interpretation of its result, its fallback's future), reached
//! through the type-erased [`DynTool`]; the call's path through the stages ([`run`]) and every
//! stage are ordinary functions, compiled once for all tools, so a tool adds to a build only
//! what its own types need.

mod approval;
mod durable;
mod erased;
mod finish;
mod idempotency;
mod run;
mod state;

pub(crate) use durable::revalidate;
pub(crate) use erased::{entry_with, reparse, Body, DynTool};
pub(crate) use finish::{finalize, finders};
pub(crate) use state::{Call, Pipeline};

use crate::observe;
use crate::outcome::Outcome;
use crate::runtime::BoxFuture;
use crate::session::Session;
use durable::run_durable;
use run::run;

/// A call handed to its tool: the one box its future lives in. An untraced call carries no span
/// in its future. A session whose conversation lives in a store takes a path of its own; every
/// other call pays for that one branch only.
pub(crate) fn dispatch<'a>(
    tool: &'a dyn DynTool,
    call: Call,
    session: &'a Session,
    pipeline: &'a Pipeline,
) -> BoxFuture<'a, Outcome> {
    let span = observe::span::call(tool.spec().name(), &call.id, session);
    match (session.store(), span.is_disabled()) {
        (None, true) => Box::pin(run(tool, call, session, pipeline)),
        (None, false) => Box::pin(observe::span::Traced::new(
            span,
            run(tool, call, session, pipeline),
        )),
        (Some(store), true) => Box::pin(run_durable(tool, call, session, &**store, pipeline)),
        (Some(store), false) => Box::pin(observe::span::Traced::new(
            span,
            run_durable(tool, call, session, &**store, pipeline),
        )),
    }
}

#[cfg(test)]
mod size;
