//! The review page: server-rendered HTML over `toolwright::approval::Approvals`, one router an
//! application (or a test) mounts. Waiting calls with tool, principal, age and redacted
//! arguments; Approve, Deny with a reason, and Edit arguments (checked whole by the tool's own
//! validation through `Registry::approve_with`, errors next to the field). A small script polls
//! `/version` and reloads when the waiting tickets change, unless the reviewer is typing.
//!
//! Access needs the token: `/?token=...` once (answered with an `HttpOnly`, `SameSite=Strict`
//! cookie and a redirect that drops the token from the address bar), or
//! `Authorization: Bearer ...` on every request. Every value rendered is HTML-escaped.
//!
//! A state-changing request (every `POST`) signed in by the cookie must come from the page
//! itself: its `Origin` (or, without one, its `Sec-Fetch-Site`) must name the page's own origin,
//! scheme, host and port, or it is refused with 403 before anything is decided. `SameSite=Strict`
//! alone does not do that: a page on another port of the same host is "same-site", so the
//! browser sends the cookie with its form. A request signed in by `Authorization: Bearer` needs
//! no such check (no browser attaches that header on another page's behalf).
#![allow(dead_code)]

use std::fmt::Write as _;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use axum::body::Bytes;
use axum::extract::{Path, RawQuery, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::Router;
use toolwright::approval::{Approvals, DecideError};
use toolwright::conversation::{Ticket, TicketState, WaitingQuery};
use toolwright::Registry;

/// The cookie the token is kept in after `?token=`.
const COOKIE: &str = "approvals_token";
/// Tickets per page.
const PAGE: usize = 20;
/// What a redacted value reads as in a ticket's arguments.
const REDACTED: &str = "[redacted]";

#[derive(Clone)]
struct Review {
    registry: Registry,
    approvals: Approvals,
    token: Arc<str>,
}

/// The page's routes, over `approvals` (decided with `registry`'s validation), behind `token`.
pub fn router(registry: Registry, approvals: Approvals, token: impl Into<Arc<str>>) -> Router {
    let review = Review {
        registry,
        approvals,
        token: token.into(),
    };
    // Everything but the front door (which takes the token once) needs it on every request.
    let guarded = Router::new()
        .route("/version", get(version))
        .route("/tickets/{id}/approve", post(approve))
        .route("/tickets/{id}/deny", post(deny))
        .route("/tickets/{id}/edit", post(edit))
        .route_layer(middleware::from_fn_with_state(
            review.clone(),
            require_token,
        ));
    guarded.route("/", get(index)).with_state(review)
}

/// A fresh random token, 128 bits in hex.
pub fn new_token() -> Result<String, String> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).map_err(|e| format!("no randomness for the token: {e}"))?;
    Ok(bytes.iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    }))
}

// ---------------------------------------------------------------------------------------------
// Access
// ---------------------------------------------------------------------------------------------

/// Equal, in time that does not depend on where two tokens of the same length first differ.
fn same(a: &str, b: &str) -> bool {
    a.len() == b.len() && a.bytes().zip(b.bytes()).fold(0u8, |d, (x, y)| d | (x ^ y)) == 0
}

/// How a request proved it holds the token, or `None` when it did not.
#[derive(Clone, Copy, PartialEq, Eq)]
enum SignedIn {
    Bearer,
    Cookie,
}

fn signed_in(review: &Review, headers: &HeaderMap) -> Option<SignedIn> {
    let bearer = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    if bearer.is_some_and(|given| same(given, &review.token)) {
        return Some(SignedIn::Bearer);
    }
    let cookie = headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == COOKIE)
        .map(|(_, value)| value);
    cookie
        .is_some_and(|given| same(given, &review.token))
        .then_some(SignedIn::Cookie)
}

fn authorized(review: &Review, headers: &HeaderMap) -> bool {
    signed_in(review, headers).is_some()
}

async fn require_token(State(review): State<Review>, request: Request, next: Next) -> Response {
    match signed_in(&review, request.headers()) {
        None => unauthorized(),
        Some(SignedIn::Cookie)
            if request.method() != axum::http::Method::GET && !from_the_page(request.headers()) =>
        {
            other_origin()
        }
        Some(_) => next.run(request).await,
    }
}

/// Whether a request was made by the page itself: its `Origin` is the page's own (the scheme
/// and the `Host` it was sent to, port included), or, for a browser that sent no `Origin`, its
/// `Sec-Fetch-Site` is `same-origin`. A request with neither is refused: every browser that
/// supports `SameSite` sends one of them with a form's `POST`.
fn from_the_page(headers: &HeaderMap) -> bool {
    let text = |name: header::HeaderName| headers.get(name).and_then(|v| v.to_str().ok());
    let Some(host) = text(header::HOST) else {
        return false;
    };
    match text(header::ORIGIN) {
        Some(origin) => {
            let origin = origin.to_ascii_lowercase();
            let host = host.to_ascii_lowercase();
            origin == format!("http://{host}") || origin == format!("https://{host}")
        }
        None => headers
            .get("sec-fetch-site")
            .is_some_and(|site| site.as_bytes() == b"same-origin"),
    }
}

fn other_origin() -> Response {
    let body = layout(
        "Refused",
        "",
        "<p class=\"error\">This request did not come from the review page itself (its \
         <code>Origin</code> is another site, or another port of this host); nothing was \
         decided. Decide from the page.</p>",
    );
    (StatusCode::FORBIDDEN, Html(body)).into_response()
}

fn unauthorized() -> Response {
    let body = layout(
        "Not signed in",
        "",
        "<p class=\"error\">Open the address the server printed when it started (it carries the \
         token once), or send <code>Authorization: Bearer TOKEN</code>.</p>",
    );
    (StatusCode::UNAUTHORIZED, Html(body)).into_response()
}

// ---------------------------------------------------------------------------------------------
// Requests
// ---------------------------------------------------------------------------------------------

/// The query string's filters and cursor (and the notice of the decision just taken).
#[derive(Default)]
struct Filters {
    tool: Option<String>,
    principal: Option<String>,
    after: u64,
    token: Option<String>,
    notice: Option<String>,
}

impl Filters {
    fn parse(query: Option<&str>) -> Filters {
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

    fn query(&self) -> WaitingQuery {
        WaitingQuery {
            after: self.after,
            limit: PAGE,
            principal: self.principal.clone(),
            tool: self.tool.clone(),
        }
    }

    /// The page's own address with these filters (no cursor, no notice).
    fn href(&self) -> String {
        let mut query = form_urlencoded::Serializer::new(String::new());
        if let Some(tool) = &self.tool {
            query.append_pair("tool", tool);
        }
        if let Some(principal) = &self.principal {
            query.append_pair("principal", principal);
        }
        let query = query.finish();
        if query.is_empty() {
            "/".to_owned()
        } else {
            format!("/?{query}")
        }
    }
}

/// A form body's one field.
fn field(body: &[u8], name: &str) -> String {
    form_urlencoded::parse(body)
        .find(|(key, _)| key == name)
        .map(|(_, value)| value.into_owned())
        .unwrap_or_default()
}

async fn index(
    State(review): State<Review>,
    RawQuery(q): RawQuery,
    headers: HeaderMap,
) -> Response {
    let filters = Filters::parse(q.as_deref());
    if let Some(token) = &filters.token {
        if !same(token, &review.token) {
            return unauthorized();
        }
        // Keep the token in an HttpOnly cookie and out of the address bar and its history.
        let cookie = format!(
            "{COOKIE}={}; HttpOnly; SameSite=Strict; Path=/",
            review.token
        );
        let mut response = Redirect::to(&filters.href()).into_response();
        if let Ok(value) = HeaderValue::from_str(&cookie) {
            response.headers_mut().insert(header::SET_COOKIE, value);
        }
        return response;
    }
    if !authorized(&review, &headers) {
        return unauthorized();
    }
    let notice = filters
        .notice
        .as_deref()
        .map(|n| Note::Notice(n.to_owned()));
    render(&review, &filters, notice, StatusCode::OK).await
}

/// The ids of the waiting tickets on the first page: the script reloads when they change.
async fn version(State(review): State<Review>, RawQuery(q): RawQuery) -> Response {
    let filters = Filters::parse(q.as_deref());
    match review.approvals.waiting(&filters.query()).await {
        Ok(page) => version_of(&page.tickets).into_response(),
        Err(e) => (StatusCode::SERVICE_UNAVAILABLE, e.to_string()).into_response(),
    }
}

fn version_of(tickets: &[Ticket]) -> String {
    tickets
        .iter()
        .map(|t| t.id.as_str())
        .collect::<Vec<_>>()
        .join(",")
}

async fn approve(
    State(review): State<Review>,
    Path(id): Path<String>,
    RawQuery(q): RawQuery,
) -> Response {
    let result = review.approvals.approve(&id).await;
    decided(
        &review,
        &Filters::parse(q.as_deref()),
        &id,
        "approved",
        result,
        Field::Approve,
    )
    .await
}

async fn deny(
    State(review): State<Review>,
    Path(id): Path<String>,
    RawQuery(q): RawQuery,
    body: Bytes,
) -> Response {
    let filters = Filters::parse(q.as_deref());
    let reason = field(&body, "reason").trim().to_owned();
    if reason.is_empty() {
        let error = Note::Field {
            ticket: id,
            field: Field::Reason,
            message: "Say why: the model tells the user this reason.".to_owned(),
            value: String::new(),
        };
        return render(
            &review,
            &filters,
            Some(error),
            StatusCode::UNPROCESSABLE_ENTITY,
        )
        .await;
    }
    let result = review.approvals.deny(&id, reason.as_str()).await;
    decided(&review, &filters, &id, "denied", result, Field::Reason).await
}

async fn edit(
    State(review): State<Review>,
    Path(id): Path<String>,
    RawQuery(q): RawQuery,
    body: Bytes,
) -> Response {
    let filters = Filters::parse(q.as_deref());
    let arguments = field(&body, "arguments");
    let result = match redacted_path(&arguments) {
        Some(path) => Err(EditError::Redacted(path)),
        None => review
            .registry
            .approve_with(&review.approvals, &id, &arguments)
            .await
            .map_err(EditError::Decide),
    };
    match result {
        Ok(()) => {
            decided(
                &review,
                &filters,
                &id,
                "approved with edits",
                Ok(()),
                Field::Arguments,
            )
            .await
        }
        Err(EditError::Decide(e)) => {
            let (field, value) = (Field::Arguments, arguments);
            failed(&review, &filters, id, field, value, e).await
        }
        Err(EditError::Redacted(path)) => {
            let error = Note::Field {
                ticket: id,
                field: Field::Arguments,
                message: format!(
                    "`{path}` still reads {REDACTED}: the reviewer never sees a sensitive value, \
                     so type it again (or approve the call as it was asked)."
                ),
                value: arguments,
            };
            render(
                &review,
                &filters,
                Some(error),
                StatusCode::UNPROCESSABLE_ENTITY,
            )
            .await
        }
    }
}

enum EditError {
    Redacted(String),
    Decide(DecideError),
}

/// The JSON pointer of a value still reading `[redacted]`: approving it would run the call
/// with that text in place of the secret.
fn redacted_path(arguments: &str) -> Option<String> {
    fn walk(value: &serde_json::Value, path: &mut String) -> bool {
        match value {
            serde_json::Value::String(s) => s == REDACTED,
            serde_json::Value::Object(map) => map.iter().any(|(key, value)| {
                let len = path.len();
                path.push('/');
                path.push_str(&key.replace('~', "~0").replace('/', "~1"));
                let found = walk(value, path);
                if !found {
                    path.truncate(len);
                }
                found
            }),
            serde_json::Value::Array(items) => items.iter().enumerate().any(|(i, value)| {
                let len = path.len();
                let _ = write!(path, "/{i}");
                let found = walk(value, path);
                if !found {
                    path.truncate(len);
                }
                found
            }),
            _ => false,
        }
    }
    let value: serde_json::Value = serde_json::from_str(arguments).ok()?;
    let mut path = String::new();
    walk(&value, &mut path).then_some(path)
}

/// After a decision: back to the list with a notice (post, redirect, get: a reload never
/// decides twice), or the page again with the error next to `field`.
async fn decided(
    review: &Review,
    filters: &Filters,
    id: &str,
    what: &str,
    result: Result<(), DecideError>,
    field: Field,
) -> Response {
    match result {
        Ok(()) => {
            let mut to = form_urlencoded::Serializer::new(String::new());
            if let Some(tool) = &filters.tool {
                to.append_pair("tool", tool);
            }
            if let Some(principal) = &filters.principal {
                to.append_pair("principal", principal);
            }
            to.append_pair("notice", &format!("{id} {what}"));
            Redirect::to(&format!("/?{}", to.finish())).into_response()
        }
        Err(e) => failed(review, filters, id.to_owned(), field, String::new(), e).await,
    }
}

async fn failed(
    review: &Review,
    filters: &Filters,
    ticket: String,
    field: Field,
    value: String,
    error: DecideError,
) -> Response {
    let (status, message) = match &error {
        DecideError::Invalid(outcome) => {
            // One line per violation, with the field's path; the outcome's own message when
            // the failure is not about one field (an ungrounded id, a business rule).
            let lines: Vec<String> = outcome
                .violations()
                .iter()
                .map(|v| {
                    let path = if v.path.is_empty() { "/" } else { &v.path };
                    format!("{path}: {}", v.message)
                })
                .collect();
            let message = if lines.is_empty() {
                outcome.message().unwrap_or("invalid arguments").to_owned()
            } else {
                lines.join("\n")
            };
            (StatusCode::UNPROCESSABLE_ENTITY, message)
        }
        DecideError::AlreadyDecided(state) => (
            StatusCode::CONFLICT,
            format!(
                "Another reviewer decided {ticket} first: {}.",
                state_text(state)
            ),
        ),
        DecideError::UnknownTicket => (
            StatusCode::NOT_FOUND,
            format!("No ticket {ticket}: it was never asked, or it expired."),
        ),
        DecideError::Store(e) => (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("Nothing was decided: {e}"),
        ),
        other => (StatusCode::INTERNAL_SERVER_ERROR, other.to_string()),
    };
    let note = Note::Field {
        ticket,
        field,
        message,
        value,
    };
    render(review, filters, Some(note), status).await
}

fn state_text(state: &TicketState) -> String {
    match state {
        TicketState::Waiting => "still waiting".to_owned(),
        TicketState::Approved => "approved".to_owned(),
        TicketState::Denied { reason } => format!("denied ({reason})"),
        TicketState::Used => "approved and already run".to_owned(),
    }
}

// ---------------------------------------------------------------------------------------------
// Rendering
// ---------------------------------------------------------------------------------------------

/// Which control of a ticket an error belongs next to.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Field {
    Approve,
    Reason,
    Arguments,
}

impl Field {
    fn name(self) -> &'static str {
        match self {
            Field::Approve => "approve",
            Field::Reason => "reason",
            Field::Arguments => "arguments",
        }
    }
}

/// What the page says besides the list.
enum Note {
    Notice(String),
    Field {
        ticket: String,
        field: Field,
        message: String,
        /// What the reviewer typed, shown again.
        value: String,
    },
}

/// `<`, `>`, `&`, `"` and `'` as entities: safe in element text and in quoted attributes.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// How long ago, in the largest whole unit.
fn age(asked_at_ms: u64, now_ms: u64) -> String {
    let s = now_ms.saturating_sub(asked_at_ms) / 1000;
    match s {
        0..=59 => format!("{s} s"),
        60..=3599 => format!("{} min", s / 60),
        3600..=172_799 => format!("{} h", s / 3600),
        _ => format!("{} days", s / 86_400),
    }
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// The arguments pretty-printed for reading (as stored if they are not JSON).
fn pretty(arguments: &str) -> String {
    serde_json::from_str::<serde_json::Value>(arguments)
        .ok()
        .and_then(|v| serde_json::to_string_pretty(&v).ok())
        .unwrap_or_else(|| arguments.to_owned())
}

async fn render(
    review: &Review,
    filters: &Filters,
    note: Option<Note>,
    status: StatusCode,
) -> Response {
    let page = match review.approvals.waiting(&filters.query()).await {
        Ok(page) => page,
        Err(e) => {
            let body = layout(
                "Approvals",
                "",
                &format!(
                    "<p class=\"error\" role=\"alert\">The store cannot be reached: {}</p>",
                    escape(&e.to_string())
                ),
            );
            return (StatusCode::SERVICE_UNAVAILABLE, Html(body)).into_response();
        }
    };
    let mut main = String::new();
    main.push_str(&filter_form(filters));
    let on_page = |id: &str| page.tickets.iter().any(|t| t.id == id);
    match &note {
        Some(Note::Notice(text)) => {
            let _ = write!(
                main,
                "<p class=\"notice\" role=\"status\">{}</p>",
                escape(text)
            );
        }
        // An error about a ticket no longer listed (decided elsewhere) goes on top.
        Some(Note::Field {
            ticket, message, ..
        }) if !on_page(ticket) => {
            let _ = write!(
                main,
                "<p class=\"error\" role=\"alert\">{}</p>",
                escape(message)
            );
        }
        _ => {}
    }
    if page.tickets.is_empty() {
        main.push_str("<p class=\"empty\">Nothing is waiting for a decision.</p>");
    }
    let now = now_ms();
    for ticket in &page.tickets {
        let note = match &note {
            Some(Note::Field {
                ticket: id,
                field,
                message,
                value,
            }) if *id == ticket.id => Some((*field, message.as_str(), value.as_str())),
            _ => None,
        };
        main.push_str(&ticket_html(ticket, filters, now, note));
    }
    if let Some(next) = page.next {
        let mut more = Filters {
            after: next,
            ..Filters::default()
        };
        more.tool.clone_from(&filters.tool);
        more.principal.clone_from(&filters.principal);
        let href = format!(
            "{}{}after={next}",
            more.href(),
            if more.href().contains('?') { "&" } else { "?" }
        );
        let _ = write!(
            main,
            "<p><a href=\"{}\">Older tickets</a></p>",
            escape(&href)
        );
    }
    let data = format!(
        "data-version=\"{}\" data-self=\"{}\"",
        escape(&version_of(&page.tickets)),
        escape(&filters.href())
    );
    let body = layout("Approvals", &data, &main);
    (status, Html(body)).into_response()
}

fn filter_form(filters: &Filters) -> String {
    format!(
        "<form class=\"filters\" method=\"get\" action=\"/\">\
         <label>Tool <input name=\"tool\" value=\"{}\"></label> \
         <label>Principal <input name=\"principal\" value=\"{}\"></label> \
         <button>Filter</button></form>",
        escape(filters.tool.as_deref().unwrap_or("")),
        escape(filters.principal.as_deref().unwrap_or("")),
    )
}

fn ticket_html(
    ticket: &Ticket,
    filters: &Filters,
    now: u64,
    note: Option<(Field, &str, &str)>,
) -> String {
    let id = escape(&ticket.id);
    // The forms post back with the filters, so the list after a decision is the same list.
    let q = filters.href().strip_prefix('/').unwrap_or("").to_owned();
    let action = |verb: &str| escape(&format!("/tickets/{}/{verb}{q}", urlencode(&ticket.id)));
    let error_for = |field: Field| match note {
        Some((f, message, _)) if f == field => {
            format!(
                "<p class=\"error\" role=\"alert\" data-field=\"{}\">{}</p>",
                field.name(),
                escape(message).replace('\n', "<br>")
            )
        }
        _ => String::new(),
    };
    let typed = |field: Field| match note {
        Some((f, _, value)) if f == field && !value.is_empty() => Some(value.to_owned()),
        _ => None,
    };
    let arguments = typed(Field::Arguments).unwrap_or_else(|| pretty(&ticket.arguments));
    let reason = typed(Field::Reason).unwrap_or_default();
    format!(
        "<section class=\"ticket\" data-ticket=\"{id}\">\
         <h2><span class=\"tool\">{tool}</span> <small>{id}</small></h2>\
         <dl><dt>Principal</dt><dd class=\"principal\">{principal}</dd>\
         <dt>Conversation</dt><dd>{conversation}</dd>\
         <dt>Asked</dt><dd class=\"age\">{age} ago</dd></dl>\
         <pre class=\"arguments\">{shown}</pre>\
         <div class=\"actions\">\
         <form method=\"post\" action=\"{approve}\"><button class=\"approve\">Approve</button>{approve_error}</form>\
         <form method=\"post\" action=\"{deny}\"><label>Reason <input class=\"reason\" name=\"reason\" value=\"{reason}\"></label>\
         <button class=\"deny\">Deny</button>{reason_error}</form>\
         <form method=\"post\" action=\"{edit}\"><label>Edit arguments<br>\
         <textarea class=\"arguments\" name=\"arguments\" rows=\"7\" cols=\"60\" spellcheck=\"false\">{arguments}</textarea></label>\
         {arguments_error}<button class=\"edit\">Approve with these arguments</button></form>\
         </div></section>",
        tool = escape(&ticket.tool),
        principal = escape(ticket.principal.as_deref().unwrap_or("(none)")),
        conversation = escape(&ticket.conversation),
        age = age(ticket.asked_at_ms, now),
        shown = escape(&pretty(&ticket.arguments)),
        approve = action("approve"),
        deny = action("deny"),
        edit = action("edit"),
        approve_error = error_for(Field::Approve),
        reason = escape(&reason),
        reason_error = error_for(Field::Reason),
        arguments = escape(&arguments),
        arguments_error = error_for(Field::Arguments),
    )
}

fn urlencode(text: &str) -> String {
    form_urlencoded::byte_serialize(text.as_bytes()).collect()
}

/// Reloads when the waiting tickets change, unless a field has focus or was typed in.
const SCRIPT: &str = r#"
const body = document.body;
setInterval(async () => {
  const typing = document.activeElement && document.activeElement.matches('input, textarea');
  const edited = [...document.querySelectorAll('input, textarea')].some(e => e.value !== e.defaultValue);
  if (typing || edited) return;
  const here = new URL(body.dataset.self, location.origin);
  const r = await fetch('/version' + here.search, { credentials: 'same-origin' });
  if (r.ok && (await r.text()) !== body.dataset.version) location.assign(body.dataset.self);
}, 2000);
"#;

const STYLE: &str = "body{font:15px/1.4 system-ui,sans-serif;margin:1.5em auto;max-width:60em;\
color:#222}h1{font-size:1.4em}h2{font-size:1.1em;margin:0 0 .3em}small{color:#777;\
font-weight:normal}.ticket{border:1px solid #ccc;border-radius:6px;padding:.8em 1em;\
margin:1em 0}dl{display:grid;grid-template-columns:8em 1fr;margin:.2em 0}dd{margin:0}\
pre{background:#f6f6f6;padding:.5em;overflow:auto}.actions{display:grid;gap:.6em}\
.error{color:#b00020;white-space:pre-wrap;margin:.3em 0}.notice{background:#e8f5e9;\
padding:.4em .8em}textarea{font:13px monospace;width:100%}.approve{font-weight:bold}";

fn layout(title: &str, body_attributes: &str, main: &str) -> String {
    // Only the list polls; the page that asks for the token has nothing to refresh.
    let script = if body_attributes.is_empty() {
        ""
    } else {
        SCRIPT
    };
    format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width\"><title>{title}</title>\
         <style>{STYLE}</style></head><body {body_attributes}><h1>{title}</h1>{main}\
         <script>{script}</script></body></html>",
        title = escape(title),
    )
}
