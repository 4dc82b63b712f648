//! What the page and the API share: the query string's filters, the path the router is nested
//! at, and a decision taken with every refusal given a status, a code and words for a person.

use std::convert::Infallible;

use axum::extract::{FromRequestParts, NestedPath};
use axum::http::request::Parts;
use axum::http::StatusCode;
use toolwright_core::approval::DecideError;
use toolwright_core::conversation::{TicketState, WaitingQuery};

use super::{ReviewPage, TICKETS_PER_PAGE};

/// What a redacted value reads as in a ticket's arguments.
pub(super) const REDACTED: &str = "[redacted]";

/// The path the router is nested at (`/approvals`), or empty at the root: every link, form,
/// redirect and the cookie's `Path` start with it.
pub(super) struct Base(pub(super) String);

impl<S: Send + Sync> FromRequestParts<S> for Base {
    type Rejection = Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        let nested = parts.extensions.get::<NestedPath>();
        let path = nested.map_or("", |p| p.as_str().trim_end_matches('/'));
        Ok(Base(path.to_owned()))
    }
}

impl Base {
    /// The list's own address, with `query` (already encoded) when there is one.
    pub(super) fn home(&self, query: &str) -> String {
        let path = if self.0.is_empty() { "/" } else { &self.0 };
        if query.is_empty() {
            path.to_owned()
        } else {
            format!("{path}?{query}")
        }
    }
}

/// The query string's filters and cursor (and the notice of the decision just taken).
#[derive(Default, Debug)]
pub(super) struct Filters {
    pub(super) tool: Option<String>,
    pub(super) principal: Option<String>,
    pub(super) after: u64,
    pub(super) token: Option<String>,
    pub(super) notice: Option<String>,
}

impl Filters {
    pub(super) fn parse(query: Option<&str>) -> Filters {
        let mut filters = Filters::default();
        for (key, value) in form_urlencoded::parse(query.unwrap_or("").as_bytes()) {
            let value = value.trim();
            let given = (!value.is_empty()).then(|| value.to_owned());
            match &*key {
                "tool" => filters.tool = given,
                "principal" => filters.principal = given,
                "after" => filters.after = value.parse().unwrap_or(0),
                "token" => filters.token = given,
                "notice" => filters.notice = given,
                _ => {}
            }
        }
        filters
    }

    pub(super) fn query(&self) -> WaitingQuery {
        WaitingQuery {
            after: self.after,
            limit: TICKETS_PER_PAGE,
            principal: self.principal.clone(),
            tool: self.tool.clone(),
        }
    }

    /// The filters (no cursor, no token, no notice) as a query string, plus `extra` pairs.
    pub(super) fn encoded(&self, extra: &[(&str, &str)]) -> String {
        let mut query = form_urlencoded::Serializer::new(String::new());
        if let Some(tool) = &self.tool {
            query.append_pair("tool", tool);
        }
        if let Some(principal) = &self.principal {
            query.append_pair("principal", principal);
        }
        for (key, value) in extra {
            query.append_pair(key, value);
        }
        query.finish()
    }
}

/// A decision a reviewer asks for.
pub(super) enum Verdict {
    Approve,
    Deny(String),
    /// Approve with these arguments instead.
    Edit(String),
}

impl Verdict {
    /// How the notice and the API name it once taken.
    fn taken(&self) -> &'static str {
        match self {
            Verdict::Approve => "approved",
            Verdict::Deny(_) => "denied",
            Verdict::Edit(_) => "approved with edits",
        }
    }
}

/// Why a decision was not taken: the status, a code for a program, words for a person, and the
/// edited arguments' violations (path, message) when that was why.
#[derive(Debug)]
pub(super) struct Refused {
    pub(super) status: StatusCode,
    pub(super) code: &'static str,
    pub(super) message: String,
    pub(super) violations: Vec<(String, String)>,
}

impl Refused {
    fn new(status: StatusCode, code: &'static str, message: String) -> Refused {
        Refused {
            status,
            code,
            message,
            violations: Vec::new(),
        }
    }
}

/// Takes the decision on ticket `id`; what was decided, or why nothing was.
pub(super) async fn decide(
    review: &ReviewPage,
    id: &str,
    verdict: &Verdict,
) -> Result<&'static str, Refused> {
    let result = match verdict {
        Verdict::Approve => review.approvals.approve(id).await,
        Verdict::Deny(reason) if reason.trim().is_empty() => {
            let message = "Say why: the model tells the user this reason.".to_owned();
            return Err(Refused::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "bad_request",
                message,
            ));
        }
        Verdict::Deny(reason) => review.approvals.deny(id, reason.trim()).await,
        Verdict::Edit(arguments) => {
            if let Some(path) = redacted_path(arguments) {
                let message = format!(
                    "`{path}` still reads {REDACTED}: the reviewer never sees a sensitive value, \
                     so type it again (or approve the call as it was asked)."
                );
                return Err(Refused::new(
                    StatusCode::UNPROCESSABLE_ENTITY,
                    "redacted_value",
                    message,
                ));
            }
            review
                .registry
                .approve_with(&review.approvals, id, arguments)
                .await
        }
    };
    let decided = result
        .map(|()| verdict.taken())
        .map_err(|e| refused(id, e))?;
    tracing::info!(
        target: "toolwright::review",
        reviewer = review.reviewer.as_deref().unwrap_or(""),
        ticket = id,
        decided,
        "a reviewer decided a ticket"
    );
    Ok(decided)
}

fn refused(ticket: &str, error: DecideError) -> Refused {
    match error {
        DecideError::Invalid(outcome) => {
            let violations: Vec<(String, String)> = outcome
                .violations()
                .iter()
                .map(|v| {
                    let path = if v.path.is_empty() { "/" } else { &v.path };
                    (path.to_owned(), v.message.clone())
                })
                .collect();
            // One line per violation, with the field's path; the outcome's own message when
            // the failure is not about one field (an ungrounded id, a business rule).
            let message = if violations.is_empty() {
                outcome.message().unwrap_or("invalid arguments").to_owned()
            } else {
                let lines: Vec<String> = violations
                    .iter()
                    .map(|(path, message)| format!("{path}: {message}"))
                    .collect();
                lines.join("\n")
            };
            Refused {
                status: StatusCode::UNPROCESSABLE_ENTITY,
                code: "invalid_arguments",
                message,
                violations,
            }
        }
        DecideError::AlreadyDecided(state) => Refused::new(
            StatusCode::CONFLICT,
            "already_decided",
            format!(
                "Another reviewer decided {ticket} first: {}.",
                state_text(&state)
            ),
        ),
        DecideError::UnknownTicket => Refused::new(
            StatusCode::NOT_FOUND,
            "unknown_ticket",
            format!("No ticket {ticket}: it was never asked, or it expired."),
        ),
        DecideError::Store(e) => Refused::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "store_unavailable",
            format!("Nothing was decided: {e}"),
        ),
        other => Refused::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            other.to_string(),
        ),
    }
}

fn state_text(state: &TicketState) -> String {
    match state {
        TicketState::Waiting => "still waiting".to_owned(),
        TicketState::Approved => "approved".to_owned(),
        TicketState::Denied { reason } => format!("denied ({reason})"),
        TicketState::Used => "approved and already run".to_owned(),
    }
}

/// The JSON pointer of a value still reading `[redacted]`: approving it would run the call
/// with that text in place of the secret.
fn redacted_path(arguments: &str) -> Option<String> {
    fn walk(value: &serde_json::Value, path: &mut Vec<String>) -> bool {
        let mut child = |key: String, value: &serde_json::Value| {
            path.push(key);
            let found = walk(value, path);
            if !found {
                path.pop();
            }
            found
        };
        match value {
            serde_json::Value::String(s) => s == REDACTED,
            serde_json::Value::Object(map) => map
                .iter()
                .any(|(key, value)| child(key.replace('~', "~0").replace('/', "~1"), value)),
            serde_json::Value::Array(items) => items
                .iter()
                .enumerate()
                .any(|(i, value)| child(i.to_string(), value)),
            _ => false,
        }
    }
    let value: serde_json::Value = serde_json::from_str(arguments).ok()?;
    let mut path = Vec::new();
    walk(&value, &mut path).then(|| path.iter().map(|p| format!("/{p}")).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_still_redacted_is_found_by_its_pointer() {
        let args = r#"{"a":{"b/c":["x","[redacted]"]},"d":1}"#;
        assert_eq!(redacted_path(args).as_deref(), Some("/a/b~1c/1"));
        assert_eq!(redacted_path(r#"{"a":"[redacted] no"}"#), None);
        assert_eq!(redacted_path("not json"), None);
    }
}
