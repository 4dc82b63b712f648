//! Guard rails on what a tool answers, before it becomes the envelope the model reads: a cap on
//! the result's size ([`RegistryBuilder::max_result_bytes`](crate::RegistryBuilder::max_result_bytes))
//! and an application's own [`ResultGuard`] (redact fields, refuse results that break a policy).
//! A tower layer sees only the finished outcome; these run where the result is still the
//! tool's, so a refusal is classified like any failure (and counted, logged, recorded as the
//! tool's), and a rewrite is what the model, the logs and the idempotency store all see.
//!
//! ```
//! use serde_json::Value;
//! use toolwright::guard::output::ResultCheck;
//! use toolwright::{Registry, ToolError};
//!
//! // Never show a model an email address a tool returned.
//! let registry = Registry::builder()
//!     .result_guard(|check: &ResultCheck<'_>| -> Result<Option<Value>, ToolError> {
//!         let mut value = check.value()?;
//!         let mut changed = false;
//!         if let Some(email) = value.get_mut("email") {
//!             *email = Value::from("[redacted]");
//!             changed = true;
//!         }
//!         Ok(changed.then_some(value))
//!     })
//!     .max_result_bytes(64 * 1024)
//!     .build()
//!     .unwrap();
//! # let _ = registry;
//! ```

use serde_json::value::RawValue;
use serde_json::Value;

use crate::error::ToolError;
use crate::outcome::{ErrorKind, Failure, Status};
use crate::session::Session;
use crate::tool::spec::ToolSpec;

/// A successful result, as a [`ResultGuard`] sees it.
#[derive(Debug)]
pub struct ResultCheck<'a> {
    pub(crate) tool: &'a ToolSpec,
    pub(crate) session: &'a Session,
    pub(crate) call_id: &'a str,
    pub(crate) text: &'a str,
}

impl ResultCheck<'_> {
    /// The tool that answered.
    pub fn tool(&self) -> &ToolSpec {
        self.tool
    }

    /// The conversation the call ran in.
    pub fn session(&self) -> &Session {
        self.session
    }

    /// The provider's call id.
    pub fn call_id(&self) -> &str {
        self.call_id
    }

    /// The result as JSON text, exactly as the envelope would carry it.
    pub fn text(&self) -> &str {
        self.text
    }

    /// The result parsed (a copy the guard may change and return).
    pub fn value(&self) -> Result<Value, ToolError> {
        serde_json::from_str(self.text)
            .map_err(|e| ToolError::invalid_result(format!("the result is not JSON: {e}")))
    }
}

/// A check of every successful result of every tool before it becomes the envelope. `Ok(None)`
/// keeps the result, `Ok(Some(value))` replaces it (a redacted copy), `Err` fails the call with
/// the error's kind (`ToolError::invalid_result` for a result that must not reach the model).
/// Implemented for closures of that shape. It runs on the result of the tool's own attempts (a
/// fallback's answer is the application's and is not checked again).
pub trait ResultGuard: Send + Sync + 'static {
    /// Keep, replace or refuse the result.
    fn check(&self, result: &ResultCheck<'_>) -> Result<Option<Value>, ToolError>;
}

impl<F> ResultGuard for F
where
    F: Fn(&ResultCheck<'_>) -> Result<Option<Value>, ToolError> + Send + Sync + 'static,
{
    fn check(&self, result: &ResultCheck<'_>) -> Result<Option<Value>, ToolError> {
        self(result)
    }
}

/// The size cap (`max_bytes`), then the application's guard, on one interpreted result.
#[cold]
pub(crate) fn check(
    answer: (Status, Box<RawValue>),
    tool: &ToolSpec,
    session: &Session,
    call_id: &str,
    (max_bytes, guard): (Option<usize>, Option<&dyn ResultGuard>),
) -> Result<(Status, Box<RawValue>), Failure> {
    let size = answer.1.get().len();
    if let Some(limit) = max_bytes.filter(|limit| size > *limit) {
        let mut failure = Failure::new(
            ErrorKind::InvalidResult,
            format!(
                "`{}` answered {size} bytes, over this registry's limit of {limit} bytes for a result; ask for less (a narrower query, fewer fields, a page)",
                tool.name()
            ),
        );
        // Unlike a malformed result, the model can fix this one: by asking for less.
        failure.retryable = true;
        return Err(failure);
    }
    let Some(guard) = guard else {
        return Ok(answer);
    };
    let check = ResultCheck {
        tool,
        session,
        call_id,
        text: answer.1.get(),
    };
    match guard.check(&check) {
        Ok(None) => Ok(answer),
        Ok(Some(value)) => crate::interpret::result(tool.name(), &value),
        Err(e) => Err(e.into_failure()),
    }
}
