//! An application's check of every call once its arguments are known to be valid, before
//! anything about it is decided or run: a registry-wide policy (a per-principal quota, a
//! maintenance window, a kill switch for one tool) that a tower layer cannot apply, because a
//! layer sees the call before its arguments are validated and cannot answer in the envelope.
//!
//! ```
//! use toolwright::guard::policy::CallCheck;
//! use toolwright::{Registry, ToolError};
//!
//! let registry = Registry::builder()
//!     .call_guard(|call: &CallCheck<'_>| {
//!         if call.tool().name() == "refund_order" && call.session().principal().is_none() {
//!             return Err(ToolError::unauthorized("refunds need a signed-in user; tell the user"));
//!         }
//!         Ok(())
//!     })
//!     .build()
//!     .unwrap();
//! # let _ = registry;
//! ```

use crate::error::ToolError;
use crate::session::Session;
use crate::tool::spec::ToolSpec;

/// A validated call, as a [`CallGuard`] sees it.
#[derive(Debug)]
pub struct CallCheck<'a> {
    pub(crate) tool: &'a ToolSpec,
    pub(crate) session: &'a Session,
    pub(crate) call_id: &'a str,
    pub(crate) arguments: &'a str,
}

impl CallCheck<'_> {
    /// The tool called.
    pub fn tool(&self) -> &ToolSpec {
        self.tool
    }

    /// The conversation the call runs in.
    pub fn session(&self) -> &Session {
        self.session
    }

    /// The provider's call id.
    pub fn call_id(&self) -> &str {
        self.call_id
    }

    /// The validated argument text (after any repair): what runs. It may hold values of
    /// `#[arg(sensitive)]` fields; never log it.
    pub fn arguments(&self) -> &str {
        self.arguments
    }
}

/// A check of every call after validation and before approval, the idempotency store and the
/// tool: `Err` refuses the call with the error's kind and message (nothing runs, the breaker does
/// not count it). Implemented for closures of that shape.
pub trait CallGuard: Send + Sync + 'static {
    /// Let the call go on, or refuse it.
    fn check(&self, call: &CallCheck<'_>) -> Result<(), ToolError>;
}

impl<F> CallGuard for F
where
    F: Fn(&CallCheck<'_>) -> Result<(), ToolError> + Send + Sync + 'static,
{
    fn check(&self, call: &CallCheck<'_>) -> Result<(), ToolError> {
        self(call)
    }
}

/// The application's check of a validated call: `Err` with the guard's failure when it refuses.
pub(crate) fn check_call(
    guard: &dyn CallGuard,
    tool: &ToolSpec,
    session: &Session,
    call_id: &str,
    arguments: &str,
) -> Result<(), Box<crate::outcome::Failure>> {
    let check = CallCheck {
        tool,
        session,
        call_id,
        arguments,
    };
    guard.check(&check).map_err(|e| Box::new(e.into_failure()))
}
