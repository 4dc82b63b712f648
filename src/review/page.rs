//! The HTML routes: the list (the front door, which also takes the token once), what its script
//! polls, and the three forms. A decision answers with a redirect to the list (post, redirect,
//! get: a reload never decides twice), or the list again with the error next to the field.

use axum::body::Bytes;
use axum::extract::{Path, RawQuery, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};

use super::access::{authorized, holds};
use super::decide::{decide, Base, Filters, Verdict};
use super::html::{self, Field, Note};
use super::{Shared, COOKIE};

pub(super) async fn index(
    State(review): State<Shared>,
    base: Base,
    RawQuery(q): RawQuery,
    headers: HeaderMap,
) -> Response {
    let filters = Filters::parse(q.as_deref());
    if let Some(token) = &filters.token {
        if !holds(token, &review.token) {
            return html::unauthorized();
        }
        // Keep the token in an HttpOnly cookie and out of the address bar and its history.
        let path = if base.0.is_empty() { "/" } else { &base.0 };
        let cookie = format!(
            "{COOKIE}={}; HttpOnly; SameSite=Strict; Path={path}",
            review.token.as_str()
        );
        let mut response = Redirect::to(&base.home(&filters.encoded(&[]))).into_response();
        if let Ok(value) = HeaderValue::from_str(&cookie) {
            response.headers_mut().insert(header::SET_COOKIE, value);
        }
        return response;
    }
    if !authorized(&review.token, &headers) {
        return html::unauthorized();
    }
    let notice = filters.notice.clone().map(Note::Notice);
    render(&review, &base, &filters, notice.as_ref(), StatusCode::OK).await
}

/// The ids of the waiting tickets on the first page, as plain text.
pub(super) async fn version(State(review): State<Shared>, RawQuery(q): RawQuery) -> Response {
    let filters = Filters::parse(q.as_deref());
    match review.approvals.waiting(&filters.query()).await {
        Ok(page) => html::version_of(&page.tickets).into_response(),
        Err(e) => (StatusCode::SERVICE_UNAVAILABLE, e.to_string()).into_response(),
    }
}

pub(super) async fn approve(
    State(review): State<Shared>,
    base: Base,
    Path(id): Path<String>,
    RawQuery(q): RawQuery,
) -> Response {
    let filters = Filters::parse(q.as_deref());
    decided(
        &review,
        &base,
        &filters,
        id,
        Verdict::Approve,
        Field::Approve,
    )
    .await
}

pub(super) async fn deny(
    State(review): State<Shared>,
    base: Base,
    Path(id): Path<String>,
    RawQuery(q): RawQuery,
    body: Bytes,
) -> Response {
    let filters = Filters::parse(q.as_deref());
    let verdict = Verdict::Deny(field(&body, "reason"));
    decided(&review, &base, &filters, id, verdict, Field::Reason).await
}

pub(super) async fn edit(
    State(review): State<Shared>,
    base: Base,
    Path(id): Path<String>,
    RawQuery(q): RawQuery,
    body: Bytes,
) -> Response {
    let filters = Filters::parse(q.as_deref());
    let verdict = Verdict::Edit(field(&body, "arguments"));
    decided(&review, &base, &filters, id, verdict, Field::Arguments).await
}

/// A form body's one field.
fn field(body: &[u8], name: &str) -> String {
    form_urlencoded::parse(body)
        .find(|(key, _)| key == name)
        .map(|(_, value)| value.into_owned())
        .unwrap_or_default()
}

/// Takes the decision: back to the list with a notice, or the list with the error next to
/// `field` (and what the reviewer typed, shown again).
async fn decided(
    review: &Shared,
    base: &Base,
    filters: &Filters,
    id: String,
    verdict: Verdict,
    field: Field,
) -> Response {
    match decide(review, &id, &verdict).await {
        Ok(what) => {
            let notice = format!("{id} {what}");
            let to = base.home(&filters.encoded(&[("notice", &notice)]));
            Redirect::to(&to).into_response()
        }
        Err(refused) => {
            let value = match verdict {
                Verdict::Approve => String::new(),
                Verdict::Deny(text) | Verdict::Edit(text) => text,
            };
            let note = Note::Field {
                ticket: id,
                field,
                message: refused.message,
                value,
            };
            render(review, base, filters, Some(&note), refused.status).await
        }
    }
}

async fn render(
    review: &Shared,
    base: &Base,
    filters: &Filters,
    note: Option<&Note>,
    status: StatusCode,
) -> Response {
    match review.approvals.waiting(&filters.query()).await {
        Ok(page) => html::list(
            base,
            filters,
            &page,
            note,
            review.reviewer.as_deref(),
            status,
        ),
        Err(e) => html::unreachable(&e.to_string()),
    }
}
