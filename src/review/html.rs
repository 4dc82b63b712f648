//! The page's HTML, from maud templates: every value spliced in with `(..)` is escaped by
//! construction, in element text and in attributes alike. The only text that is not escaped is
//! the page's own style sheet and script below, constants of this file.

use std::time::{SystemTime, UNIX_EPOCH};

use axum::http::StatusCode;
use axum::response::{Html, IntoResponse, Response};
use maud::{html, Markup, PreEscaped, DOCTYPE};
use toolwright_core::conversation::{Ticket, WaitingPage};

use super::decide::{Base, Filters};

/// Which control of a ticket an error belongs next to.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Field {
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
pub(super) enum Note {
    Notice(String),
    Field {
        ticket: String,
        field: Field,
        message: String,
        /// What the reviewer typed, shown again.
        value: String,
    },
}

/// The list of waiting tickets, with `note` on top or next to its ticket's field.
pub(super) fn list(
    base: &Base,
    filters: &Filters,
    page: &WaitingPage,
    note: Option<&Note>,
    reviewer: Option<&str>,
    status: StatusCode,
) -> Response {
    let on_page = |id: &str| page.tickets.iter().any(|t| t.id == id);
    let version = version_of(&page.tickets);
    let own = base.home(&filters.encoded(&[]));
    let poll = format!("{}/version?{}", base.0, filters.encoded(&[]));
    let older = page.next.map(|next| {
        let after = next.to_string();
        base.home(&filters.encoded(&[("after", &after)]))
    });
    let now = now_ms();
    let main = html! {
        @if let Some(name) = reviewer {
            p.reviewer { "Reviewing as " strong { (name) } }
        }
        form.filters method="get" action=(base.home("")) {
            label { "Tool " input name="tool" value=(filters.tool.as_deref().unwrap_or("")); }
            " "
            label { "Principal " input name="principal" value=(filters.principal.as_deref().unwrap_or("")); }
            " "
            button { "Filter" }
        }
        @match note {
            Some(Note::Notice(text)) => p.notice role="status" { (text) },
            // An error about a ticket no longer listed (decided elsewhere) goes on top.
            Some(Note::Field { ticket, message, .. }) if !on_page(ticket) => {
                p.error role="alert" { (message) }
            }
            _ => {}
        }
        @if page.tickets.is_empty() {
            p.empty { "Nothing is waiting for a decision." }
        }
        @for ticket in &page.tickets {
            (ticket_section(base, filters, ticket, now, note))
        }
        @if let Some(href) = older {
            p { a href=(href) { "Older tickets" } }
        }
    };
    let body = layout("Approvals", Some((&version, &own, &poll)), main);
    (status, Html(body.into_string())).into_response()
}

fn ticket_section(
    base: &Base,
    filters: &Filters,
    ticket: &Ticket,
    now: u64,
    note: Option<&Note>,
) -> Markup {
    let note = match note {
        Some(Note::Field {
            ticket: id,
            field,
            message,
            value,
        }) if *id == ticket.id => Some((*field, message.as_str(), value.as_str())),
        _ => None,
    };
    // The forms post back with the filters, so the list after a decision is the same list.
    let query = filters.encoded(&[]);
    let id: String = form_urlencoded::byte_serialize(ticket.id.as_bytes()).collect();
    let action = |verb: &str| {
        let path = format!("{}/tickets/{id}/{verb}", base.0);
        if query.is_empty() {
            path
        } else {
            format!("{path}?{query}")
        }
    };
    let error_for = |field: Field| match note {
        Some((f, message, _)) if f == field => html! {
            p.error role="alert" data-field=(field.name()) {
                @for (i, line) in message.lines().enumerate() {
                    @if i > 0 { br; }
                    (line)
                }
            }
        },
        _ => html! {},
    };
    let typed = |field: Field| match note {
        Some((f, _, value)) if f == field && !value.is_empty() => Some(value.to_owned()),
        _ => None,
    };
    let shown = pretty(&ticket.arguments);
    let arguments = typed(Field::Arguments).unwrap_or_else(|| shown.clone());
    let reason = typed(Field::Reason).unwrap_or_default();
    html! {
        section.ticket data-ticket=(ticket.id) {
            h2 { span.tool { (ticket.tool) } " " small { (ticket.id) } }
            dl {
                dt { "Principal" } dd.principal { (ticket.principal.as_deref().unwrap_or("(none)")) }
                dt { "Conversation" } dd { (ticket.conversation) }
                dt { "Asked" } dd.age { (age(ticket.asked_at_ms, now)) " ago" }
            }
            pre.arguments { (shown) }
            div.actions {
                form method="post" action=(action("approve")) {
                    button.approve { "Approve" }
                    (error_for(Field::Approve))
                }
                form method="post" action=(action("deny")) {
                    label { "Reason " input.reason name="reason" value=(reason); }
                    " "
                    button.deny { "Deny" }
                    (error_for(Field::Reason))
                }
                form method="post" action=(action("edit")) {
                    label {
                        "Edit arguments" br;
                        textarea.arguments name="arguments" rows="7" cols="60" spellcheck="false" { (arguments) }
                    }
                    (error_for(Field::Arguments))
                    button.edit { "Approve with these arguments" }
                }
            }
        }
    }
}

/// The ids of the waiting tickets on the first page: the script reloads when they change.
pub(super) fn version_of(tickets: &[Ticket]) -> String {
    let ids: Vec<&str> = tickets.iter().map(|t| t.id.as_str()).collect();
    ids.join(",")
}

/// The store could not be read: 503, with its error.
pub(super) fn unreachable(error: &str) -> Response {
    let main = html! {
        p.error role="alert" { "The store cannot be reached: " (error) }
    };
    let body = layout("Approvals", None, main);
    (StatusCode::SERVICE_UNAVAILABLE, Html(body.into_string())).into_response()
}

/// A decision from another origin: 403, nothing decided.
pub(super) fn other_origin() -> Response {
    let main = html! {
        p.error {
            "This request did not come from the review page itself (its " code { "Origin" }
            " is another site, or another port of this host); nothing was decided. Decide from \
             the page."
        }
    };
    let body = layout("Refused", None, main);
    (StatusCode::FORBIDDEN, Html(body.into_string())).into_response()
}

/// No token, or the wrong one: 401.
pub(super) fn unauthorized() -> Response {
    let main = html! {
        p.error {
            "Open the address the service printed for this page (it carries the token once), \
             or send " code { "Authorization: Bearer TOKEN" } "."
        }
    };
    let body = layout("Not signed in", None, main);
    (StatusCode::UNAUTHORIZED, Html(body.into_string())).into_response()
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

/// Reloads when the waiting tickets change, unless a field has focus or was typed in.
const SCRIPT: &str = r#"
const body = document.body;
setInterval(async () => {
  const typing = document.activeElement && document.activeElement.matches('input, textarea');
  const edited = [...document.querySelectorAll('input, textarea')].some(e => e.value !== e.defaultValue);
  if (typing || edited) return;
  const r = await fetch(body.dataset.poll, { credentials: 'same-origin' });
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

/// The page around `main`; `polled` (the version, the page's own address, the address to poll)
/// for the list, which reloads itself, `None` for a page that has nothing to refresh.
fn layout(title: &str, polled: Option<(&str, &str, &str)>, main: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width";
                title { (title) }
                style { (PreEscaped(STYLE)) }
            }
            @if let Some((version, own, poll)) = polled {
                body data-version=(version) data-self=(own) data-poll=(poll) {
                    h1 { (title) }
                    (main)
                    script { (PreEscaped(SCRIPT)) }
                }
            } @else {
                body {
                    h1 { (title) }
                    (main)
                }
            }
        }
    }
}
