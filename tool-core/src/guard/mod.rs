//! The guard stages: what runs after the arguments are known to be well-formed and before
//! anything acts. Each refuses a call without running it.
//!
//! | stage | module | refuses with |
//! |---|---|---|
//! | scopes, then the tool's `authorize` rule | this module | `unauthorized` |
//! | provenance of identifier arguments | [`provenance`](crate::provenance) | `ungrounded_identifier` |
//! | the application's [`CallGuard`](policy::CallGuard) | [`policy`] | the guard's kind |
//! | a person's approval | [`approval`](crate::approval) | `pending`, `approval_denied` |
//! | the result's size, the application's [`ResultGuard`](output::ResultGuard) (after the tool ran) | [`output`] | `invalid_result`, or the guard's kind |
//!
//! Scopes are checked first of all, before the arguments are even parsed: a session that may not
//! call a tool learns nothing about its schema, its rules or its ids.

pub mod output;
pub mod policy;

use crate::error::ToolError;
use crate::outcome::{ErrorKind, Failure};
use crate::session::Session;
use crate::tool::spec::ToolSpec;

/// Whether the session holds every scope the tool declares (`#[tool(scopes = [..])]`).
pub(crate) fn scopes(spec: &ToolSpec, session: &Session) -> Result<(), Box<Failure>> {
    match spec.scopes().iter().find(|s| !session.has_scope(s)) {
        None => Ok(()),
        Some(missing) => Err(Box::new(Failure::new(
            ErrorKind::Unauthorized,
            format!(
                "this conversation may not call `{}`: it lacks the `{missing}` scope; do not retry, tell the user",
                spec.name()
            ),
        ))),
    }
}

/// Whether the session may see (and call) the tool at all: it holds the tool's scopes.
pub(crate) fn visible(spec: &ToolSpec, session: &Session) -> bool {
    spec.scopes().iter().all(|s| session.has_scope(s))
}

/// A validator's error as a validation-seam failure: its own kind when it names one of the
/// validation seam, `default` otherwise (`semantic_invalid` for a business rule,
/// `unauthorized` for an `authorize` rule).
pub(crate) fn validation_failure(e: ToolError, default: ErrorKind) -> Box<Failure> {
    let mut failure = e.into_failure();
    if failure.kind.seam() != crate::outcome::Seam::Validation {
        failure.kind = default;
        failure.retryable = default.model_retryable();
    }
    Box::new(failure)
}
