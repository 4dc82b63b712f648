//! Classification helpers: turn what a dependency said (an HTTP status and its `Retry-After`, a
//! `reqwest::Error`, a `std::io::Error`) into a [`ToolError`] of the taxonomy, so the attempt loop
//! can decide whether to retry and the breaker whether to count it.
//!
//! | dependency says | kind | retried | note |
//! |---|---|---|---|
//! | 2xx | (success) | | [`check_status`] passes it through |
//! | 400, 422, other 4xx | `bad_request` | no | |
//! | 401 | `auth_expired` | no | |
//! | 403 | `permission_denied` | no | |
//! | 404, 410 | `not_found` | no | |
//! | 408 | `timeout` | if safe | |
//! | 409 | `conflict` | no | |
//! | 429 | `rate_limited` | yes | `Retry-After` honoured |
//! | 5xx | `unavailable` | if safe | a 503's `Retry-After` honoured |
//! | connection refused, DNS failure | `unavailable`, never started | yes, even when not idempotent | |
//! | connection reset, body cut short | `unavailable` | if safe | |
//! | client-side timeout | `timeout` | if safe | never started when it was the connect |
//! | a body that does not decode | `invalid_result` | no | |
//!
//! "If safe" means the tool is idempotent or takes an idempotency key (see
//! [`RetryPolicy`](super::RetryPolicy)). `std::io::Error` converts into [`ToolError`] with `?`; with the
//! `reqwest` feature so does `reqwest::Error`, and `check_response` classifies a response by its
//! status.
//!
//! ```
//! use std::time::Duration;
//! use toolwright::{execute::classify, ErrorKind};
//!
//! let e = classify::check_status(429, Some("7"), "/v1/refunds").unwrap_err();
//! assert_eq!(e.kind(), ErrorKind::RateLimited);
//! assert_eq!(e.retry_after(), Some(Duration::from_secs(7)));
//! assert!(classify::check_status(204, None, "/v1/refunds").is_ok());
//! ```

use std::time::{Duration, SystemTime};

use crate::error::ToolError;

/// Parses a `Retry-After` header value: delta-seconds (`"120"`) or an HTTP-date
/// (`"Wed, 21 Oct 2015 07:28:00 GMT"`, and the two obsolete formats RFC 9110 says recipients must
/// accept), as a wait from `now`. A date in the past is a wait of zero; garbage is `None`.
///
/// ```
/// use std::time::{Duration, SystemTime};
/// use toolwright::execute::classify::retry_after_at;
///
/// let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_445_412_470); // 07:27:50 GMT
/// assert_eq!(retry_after_at("120", now), Some(Duration::from_secs(120)));
/// assert_eq!(retry_after_at("Wed, 21 Oct 2015 07:28:00 GMT", now), Some(Duration::from_secs(10)));
/// assert_eq!(retry_after_at("soon", now), None);
/// ```
pub fn retry_after_at(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) {
        // Longer than u64 seconds is "practically never": saturate rather than ignore it.
        return Some(Duration::from_secs(value.parse().unwrap_or(u64::MAX)));
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

/// [`retry_after_at`] against the system's wall clock (HTTP-dates are wall-clock times).
pub fn retry_after(value: &str) -> Option<Duration> {
    retry_after_at(value, SystemTime::now())
}

/// Classifies an HTTP status: `Ok(())` for 2xx, else the taxonomy's error, with the
/// `Retry-After` value (if any, for 429 and 503) parsed into
/// [`ToolError::retry_after`]. `what` names the request in the message (a path, say; keep
/// secrets out of it: the model reads it).
pub fn check_status(
    status: u16,
    retry_after_header: Option<&str>,
    what: &str,
) -> Result<(), ToolError> {
    if (200..300).contains(&status) {
        return Ok(());
    }
    Err(status_error(
        status,
        retry_after_header,
        format!("{what} answered HTTP {status}"),
    ))
}

fn status_error(status: u16, retry_after_header: Option<&str>, message: String) -> ToolError {
    let e = ToolError::from_status(status, message);
    match retry_after_header.and_then(retry_after) {
        Some(wait) if matches!(status, 429 | 503) => e.with_retry_after(wait),
        _ => e,
    }
}

#[cfg(feature = "reqwest")]
mod reqwest_support {
    use std::error::Error as StdError;

    use super::status_error;
    use crate::error::ToolError;
    use crate::outcome::ErrorKind;

    /// Classifies a response by its status (see the [module table](super)): passes a 2xx
    /// through, turns anything else into a [`ToolError`] with `Retry-After` honoured. The
    /// message names the URL's path, never its query.
    ///
    /// ```no_run
    /// # async fn demo(client: reqwest::Client) -> Result<(), toolwright::ToolError> {
    /// use toolwright::execute::classify;
    ///
    /// let response = client.get("http://orders.internal/v1/orders").send().await?; // connect error: never started
    /// let body = classify::check_response(response)?.text().await?; // 429: rate_limited + Retry-After
    /// # let _ = body;
    /// # Ok(()) }
    /// ```
    pub fn check_response(response: reqwest::Response) -> Result<reqwest::Response, ToolError> {
        let status = response.status();
        if status.is_success() {
            return Ok(response);
        }
        let header = response
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok());
        let message = format!("`{}` answered HTTP {}", response.url().path(), status);
        Err(status_error(status.as_u16(), header, message))
    }

    /// The error's sources joined into one line, the URL left out.
    fn describe(err: &(dyn StdError + 'static)) -> String {
        let mut message = String::new();
        let mut next = Some(err);
        while let Some(e) = next {
            let text = e.to_string();
            if !text.is_empty() && !message.contains(&text) {
                if !message.is_empty() {
                    message.push_str(": ");
                }
                message.push_str(&text);
            }
            next = e.source();
        }
        message
    }

    fn find<'a, T: StdError + 'static>(err: &'a (dyn StdError + 'static)) -> Option<&'a T> {
        let mut next = Some(err);
        while let Some(e) = next {
            if let Some(found) = e.downcast_ref::<T>() {
                return Some(found);
            }
            next = e.source();
        }
        None
    }

    fn io_kind(io: &std::io::Error) -> ErrorKind {
        ToolError::from(std::io::Error::from(io.kind())).kind()
    }

    impl From<reqwest::Error> for ToolError {
        /// A connect error never started (safe to retry even when not idempotent); a timeout is
        /// `timeout`; a body that is not the JSON expected is `invalid_result`; a body cut short
        /// or a reset connection is `unavailable`; a status error goes through
        /// [`ToolError::from_status`].
        fn from(err: reqwest::Error) -> Self {
            let err = err.without_url();
            let message = describe(&err);
            let e = if let Some(status) = err.status() {
                ToolError::from_status(status.as_u16(), message)
            } else if err.is_timeout() {
                let e = ToolError::timeout(message);
                if err.is_connect() {
                    e.never_started()
                } else {
                    e
                }
            } else if err.is_connect() {
                ToolError::unavailable(message).never_started()
            } else if err.is_decode() && find::<serde_json::Error>(&err).is_some() {
                ToolError::invalid_result(message)
            } else if err.is_builder() || err.is_redirect() {
                ToolError::bad_request(message)
            } else if err.is_decode() || err.is_body() {
                // reqwest files a body that stopped arriving under "decode"; say what it is.
                let cause = err.source().map_or(message, describe);
                let kind = find::<std::io::Error>(&err).map_or(ErrorKind::Unavailable, io_kind);
                ToolError::new(kind, format!("the transfer was cut short: {cause}"))
            } else if let Some(io) = find::<std::io::Error>(&err) {
                // The connection was up, so the request may have been sent: whatever the io
                // kind says, it is not proof the action never started.
                ToolError::new(io_kind(io), message)
            } else {
                // The connection closed mid-message, an upgrade failed.
                ToolError::unavailable(message)
            };
            e.with_source(err)
        }
    }
}

#[cfg(feature = "reqwest")]
pub use reqwest_support::check_response;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorKind;

    #[test]
    fn retry_after_accepts_all_three_http_date_formats() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(784_111_767); // Sun, 06 Nov 1994 08:49:27
        for date in [
            "Sun, 06 Nov 1994 08:49:37 GMT",
            "Sunday, 06-Nov-94 08:49:37 GMT",
            "Sun Nov  6 08:49:37 1994",
        ] {
            assert_eq!(
                retry_after_at(date, now),
                Some(Duration::from_secs(10)),
                "{date}"
            );
        }
        assert_eq!(
            retry_after_at("Sun, 06 Nov 1994 08:00:00 GMT", now),
            Some(Duration::ZERO)
        );
        assert_eq!(retry_after_at(" 3 ", now), Some(Duration::from_secs(3)));
        assert_eq!(retry_after_at("-3", now), None);
        assert_eq!(retry_after_at("", now), None);
    }

    #[test]
    fn every_status_class_is_classified() {
        let kind = |s| check_status(s, None, "/x").err().map(|e| e.kind());
        assert_eq!(kind(200), None);
        assert_eq!(kind(204), None);
        assert_eq!(kind(400), Some(ErrorKind::BadRequest));
        assert_eq!(kind(401), Some(ErrorKind::AuthExpired));
        assert_eq!(kind(403), Some(ErrorKind::PermissionDenied));
        assert_eq!(kind(404), Some(ErrorKind::NotFound));
        assert_eq!(kind(409), Some(ErrorKind::Conflict));
        assert_eq!(kind(422), Some(ErrorKind::BadRequest));
        assert_eq!(kind(429), Some(ErrorKind::RateLimited));
        assert_eq!(kind(500), Some(ErrorKind::Unavailable));
        assert_eq!(kind(503), Some(ErrorKind::Unavailable));
    }

    #[test]
    fn retry_after_rides_on_429_and_503_only() {
        let wait = |s| {
            check_status(s, Some("5"), "/x")
                .err()
                .and_then(|e| e.retry_after())
        };
        assert_eq!(wait(429), Some(Duration::from_secs(5)));
        assert_eq!(wait(503), Some(Duration::from_secs(5)));
        assert_eq!(wait(500), None);
    }
}

#[cfg(feature = "rusqlite")]
mod rusqlite_support {
    use rusqlite::ErrorCode;

    use crate::error::ToolError;

    impl From<rusqlite::Error> for ToolError {
        /// `?` on a rusqlite call inside a tool:
        ///
        /// | rusqlite says | kind | retried |
        /// |---|---|---|
        /// | no row (`QueryReturnedNoRows`) | `not_found` | no |
        /// | the database is busy or locked (`SQLITE_BUSY`, `SQLITE_LOCKED`) | `unavailable` | if safe |
        /// | a constraint failed (unique, foreign key, check, not null) | `conflict` | no |
        /// | read-only database, permission denied, authorization | `permission_denied` | no |
        /// | the database file is missing or cannot be opened | `unavailable` | if safe |
        /// | out of memory, disk full, I/O error | `unavailable` | if safe |
        /// | a value that does not convert into the Rust type asked for | `invalid_result` | no |
        /// | anything else (bad SQL, a parameter count that does not match) | `bad_request` | no |
        ///
        /// The message is rusqlite's, which names the constraint or the column but never the
        /// values bound.
        ///
        /// ```
        /// use toolwright::{ErrorKind, ToolError};
        ///
        /// let db = rusqlite::Connection::open_in_memory().unwrap();
        /// db.execute("CREATE TABLE members (id TEXT PRIMARY KEY)", []).unwrap();
        /// db.execute("INSERT INTO members VALUES ('m1')", []).unwrap();
        /// let again = db.execute("INSERT INTO members VALUES ('m1')", []).unwrap_err();
        /// assert_eq!(ToolError::from(again).kind(), ErrorKind::Conflict);
        /// let missing = db
        ///     .query_row("SELECT id FROM members WHERE id = 'm9'", [], |row| row.get::<_, String>(0))
        ///     .unwrap_err();
        /// assert_eq!(ToolError::from(missing).kind(), ErrorKind::NotFound);
        /// ```
        fn from(err: rusqlite::Error) -> Self {
            let message = err.to_string();
            let e = match &err {
                rusqlite::Error::QueryReturnedNoRows => ToolError::not_found("no matching record"),
                rusqlite::Error::SqliteFailure(failure, _) => match failure.code {
                    ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked => {
                        ToolError::unavailable(format!("the database is busy: {message}"))
                    }
                    ErrorCode::ConstraintViolation => ToolError::conflict(message),
                    ErrorCode::ReadOnly
                    | ErrorCode::PermissionDenied
                    | ErrorCode::AuthorizationForStatementDenied => {
                        ToolError::permission_denied(message)
                    }
                    ErrorCode::CannotOpen
                    | ErrorCode::OutOfMemory
                    | ErrorCode::DiskFull
                    | ErrorCode::SystemIoFailure
                    | ErrorCode::DatabaseCorrupt
                    | ErrorCode::NotADatabase => ToolError::unavailable(message),
                    _ => ToolError::bad_request(message),
                },
                rusqlite::Error::FromSqlConversionFailure(..)
                | rusqlite::Error::IntegralValueOutOfRange(..)
                | rusqlite::Error::InvalidColumnType(..)
                | rusqlite::Error::Utf8Error(..) => ToolError::invalid_result(message),
                _ => ToolError::bad_request(message),
            };
            e.with_source(err)
        }
    }
}
