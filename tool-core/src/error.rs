//! [`ToolError`]: how a tool body (or a validator) says what went wrong.
//!
//! A tool returns `Result<T, ToolError>`. The constructors name the failure in the taxonomy's
//! terms, so the pipeline can decide without guessing whether to retry, whether the failure
//! counts against the breaker, and what to tell the model.

use std::borrow::Cow;
use std::error::Error as StdError;
use std::fmt;
use std::time::Duration;

use crate::outcome::{ErrorKind, Violation};

/// A classified failure raised by a tool body, a semantic validator or a field validator.
///
/// ```
/// use std::time::Duration;
/// use toolwright::{ErrorKind, ToolError};
///
/// let e = ToolError::rate_limited("payments API is throttling", Some(Duration::from_secs(2)));
/// assert_eq!(e.kind(), ErrorKind::RateLimited);
/// assert!(e.is_retryable());
///
/// let e = ToolError::from_status(404, "order A17 does not exist");
/// assert_eq!(e.kind(), ErrorKind::NotFound);
/// assert!(!e.is_retryable());
/// ```
pub struct ToolError(Box<Inner>);

/// Boxed so that `Result<T, ToolError>` stays small: a tool's result is moved through several
/// futures on every call, and the error is the rare case.
struct Inner {
    kind: ErrorKind,
    message: Cow<'static, str>,
    retryable: Option<bool>,
    retry_after: Option<Duration>,
    never_started: bool,
    violations: Vec<Violation>,
    source: Option<Box<dyn StdError + Send + Sync + 'static>>,
}

impl ToolError {
    /// A failure of the given kind with a message for the model.
    pub fn new(kind: ErrorKind, message: impl Into<Cow<'static, str>>) -> Self {
        ToolError(Box::new(Inner {
            kind,
            message: message.into(),
            retryable: None,
            retry_after: None,
            never_started: false,
            violations: Vec::new(),
            source: None,
        }))
    }

    /// The dependency could not be reached or failed (network, 5xx). Transient.
    pub fn unavailable(message: impl Into<Cow<'static, str>>) -> Self {
        Self::new(ErrorKind::Unavailable, message)
    }

    /// The dependency is throttling (HTTP 429). Transient; `retry_after` is honoured when given.
    pub fn rate_limited(
        message: impl Into<Cow<'static, str>>,
        retry_after: Option<Duration>,
    ) -> Self {
        let mut e = Self::new(ErrorKind::RateLimited, message);
        e.0.retry_after = retry_after;
        e
    }

    /// The operation did not finish in time. Transient.
    pub fn timeout(message: impl Into<Cow<'static, str>>) -> Self {
        Self::new(ErrorKind::Timeout, message)
    }

    /// The record does not exist (HTTP 404). Never retried; a different id may work.
    pub fn not_found(message: impl Into<Cow<'static, str>>) -> Self {
        Self::new(ErrorKind::NotFound, message)
    }

    /// The action conflicts with the current state (HTTP 409). Never retried.
    pub fn conflict(message: impl Into<Cow<'static, str>>) -> Self {
        Self::new(ErrorKind::Conflict, message)
    }

    /// The dependency refused the action (HTTP 403). Never retried.
    pub fn permission_denied(message: impl Into<Cow<'static, str>>) -> Self {
        Self::new(ErrorKind::PermissionDenied, message)
    }

    /// The credentials expired (HTTP 401). Never retried.
    pub fn auth_expired(message: impl Into<Cow<'static, str>>) -> Self {
        Self::new(ErrorKind::AuthExpired, message)
    }

    /// The dependency rejected the request (other 4xx). Never retried.
    pub fn bad_request(message: impl Into<Cow<'static, str>>) -> Self {
        Self::new(ErrorKind::BadRequest, message)
    }

    /// The arguments break a business rule: `semantic_invalid`. Use it in
    /// `#[tool(validate = ...)]` functions, and in tool bodies that discover the problem late.
    pub fn invalid(message: impl Into<Cow<'static, str>>) -> Self {
        Self::new(ErrorKind::SemanticInvalid, message)
    }

    /// The caller may not perform this action: `unauthorized`.
    pub fn unauthorized(message: impl Into<Cow<'static, str>>) -> Self {
        Self::new(ErrorKind::Unauthorized, message)
    }

    /// The tool's own result is unusable: `invalid_result`.
    pub fn invalid_result(message: impl Into<Cow<'static, str>>) -> Self {
        Self::new(ErrorKind::InvalidResult, message)
    }

    /// Classifies an HTTP status code from a dependency.
    ///
    /// | status | kind |
    /// |---|---|
    /// | 401 | `auth_expired` |
    /// | 403 | `permission_denied` |
    /// | 404, 410 | `not_found` |
    /// | 408 | `timeout` |
    /// | 409 | `conflict` |
    /// | 429 | `rate_limited` |
    /// | other 4xx | `bad_request` |
    /// | 5xx | `unavailable` |
    /// | anything else (2xx, 3xx, nonsense) | `invalid_result`: the caller treated it as a failure, and it is not one we can classify |
    pub fn from_status(status: u16, message: impl Into<Cow<'static, str>>) -> Self {
        let kind = match status {
            401 => ErrorKind::AuthExpired,
            403 => ErrorKind::PermissionDenied,
            404 | 410 => ErrorKind::NotFound,
            408 => ErrorKind::Timeout,
            409 => ErrorKind::Conflict,
            429 => ErrorKind::RateLimited,
            400..=499 => ErrorKind::BadRequest,
            500..=599 => ErrorKind::Unavailable,
            _ => ErrorKind::InvalidResult,
        };
        Self::new(kind, message)
    }

    /// Says how long to wait before trying again (a Retry-After header, for example).
    pub fn with_retry_after(mut self, retry_after: Duration) -> Self {
        self.0.retry_after = Some(retry_after);
        self
    }

    /// Overrides the envelope's `retryable` for this error.
    pub fn with_retryable(mut self, retryable: bool) -> Self {
        self.0.retryable = Some(retryable);
        self
    }

    /// Declares that the action provably never started (the connection was refused, the request
    /// was never sent), so even a non-idempotent tool may be retried safely.
    pub fn never_started(mut self) -> Self {
        self.0.never_started = true;
        self
    }

    /// Attaches the underlying error, kept for logs; the model sees only the message.
    pub fn with_source(mut self, source: impl StdError + Send + Sync + 'static) -> Self {
        self.0.source = Some(Box::new(source));
        self
    }

    /// Attaches argument problems, each with its path, for the envelope's `errors`.
    pub fn with_violations(mut self, violations: Vec<Violation>) -> Self {
        self.0.violations = violations;
        self
    }

    /// The taxonomy kind.
    pub fn kind(&self) -> ErrorKind {
        self.0.kind
    }

    /// The message for the model.
    pub fn message(&self) -> &str {
        &self.0.message
    }

    /// The envelope's `retryable`: the override if one was set, else the kind's default.
    pub fn is_retryable(&self) -> bool {
        self.0.retryable.unwrap_or(self.0.kind.model_retryable())
    }

    /// How long to wait before trying again, if the failure said so.
    pub fn retry_after(&self) -> Option<Duration> {
        self.0.retry_after
    }

    /// Whether the action provably never started.
    pub fn is_never_started(&self) -> bool {
        self.0.never_started
    }

    /// Argument problems attached with [`ToolError::with_violations`].
    pub fn violations(&self) -> &[Violation] {
        &self.0.violations
    }

    pub(crate) fn into_failure(self) -> crate::outcome::Failure {
        let inner = *self.0;
        let mut failure = crate::outcome::Failure::new(inner.kind, inner.message);
        failure.retryable = inner.retryable.unwrap_or(inner.kind.model_retryable());
        failure.retry_after = inner.retry_after;
        failure.violations = inner.violations;
        failure
    }
}

impl fmt::Debug for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("ToolError");
        d.field("kind", &self.0.kind)
            .field("message", &self.0.message);
        if let Some(r) = self.0.retryable {
            d.field("retryable", &r);
        }
        if let Some(r) = self.0.retry_after {
            d.field("retry_after", &r);
        }
        if self.0.never_started {
            d.field("never_started", &true);
        }
        if !self.0.violations.is_empty() {
            d.field("violations", &self.0.violations);
        }
        if let Some(s) = &self.0.source {
            d.field("source", s);
        }
        d.finish()
    }
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.0.kind, self.0.message)
    }
}

impl StdError for ToolError {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        self.0
            .source
            .as_deref()
            .map(|s| s as &(dyn StdError + 'static))
    }
}

impl From<std::io::Error> for ToolError {
    /// Connection refused / not found mean the request never left; the rest of the
    /// connection-level errors are `unavailable`, timeouts are `timeout`.
    fn from(err: std::io::Error) -> Self {
        use std::io::ErrorKind as Io;
        let message = err.to_string();
        let e = match err.kind() {
            Io::ConnectionRefused | Io::AddrNotAvailable | Io::NotConnected => {
                ToolError::unavailable(message).never_started()
            }
            Io::TimedOut | Io::WouldBlock => ToolError::timeout(message),
            Io::ConnectionReset
            | Io::ConnectionAborted
            | Io::BrokenPipe
            | Io::UnexpectedEof
            | Io::Interrupted => ToolError::unavailable(message),
            Io::NotFound => ToolError::not_found(message),
            Io::PermissionDenied => ToolError::permission_denied(message),
            Io::InvalidInput => ToolError::bad_request(message),
            Io::InvalidData => ToolError::invalid_result(message),
            _ => ToolError::unavailable(message),
        };
        e.with_source(err)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_status_class_has_a_kind() {
        let cases = [
            (400, ErrorKind::BadRequest),
            (401, ErrorKind::AuthExpired),
            (403, ErrorKind::PermissionDenied),
            (404, ErrorKind::NotFound),
            (408, ErrorKind::Timeout),
            (409, ErrorKind::Conflict),
            (422, ErrorKind::BadRequest),
            (429, ErrorKind::RateLimited),
            (500, ErrorKind::Unavailable),
            (503, ErrorKind::Unavailable),
            (200, ErrorKind::InvalidResult),
        ];
        for (status, kind) in cases {
            assert_eq!(ToolError::from_status(status, "x").kind(), kind, "{status}");
        }
    }

    #[test]
    fn retryable_defaults_follow_the_kind_and_can_be_overridden() {
        assert!(ToolError::unavailable("x").is_retryable());
        assert!(!ToolError::conflict("x").is_retryable());
        assert!(ToolError::conflict("x").with_retryable(true).is_retryable());
    }

    #[test]
    fn refused_connections_never_started() {
        let e = ToolError::from(std::io::Error::from(std::io::ErrorKind::ConnectionRefused));
        assert_eq!(e.kind(), ErrorKind::Unavailable);
        assert!(e.is_never_started());
        let e = ToolError::from(std::io::Error::from(std::io::ErrorKind::ConnectionReset));
        assert!(!e.is_never_started());
    }
}
