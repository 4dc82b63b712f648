//! The JSON API: the same list and the same decisions as the page, for a command line or
//! another service (the table in the module's docs).

use axum::body::Bytes;
use axum::extract::{Path, RawQuery, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};
use toolwright_core::conversation::Ticket;

use super::decide::{decide, Filters, Refused, Verdict};
use super::Shared;

pub(super) async fn tickets(State(review): State<Shared>, RawQuery(q): RawQuery) -> Response {
    let filters = Filters::parse(q.as_deref());
    match review.approvals.waiting(&filters.query()).await {
        Ok(page) => {
            let tickets: Vec<Value> = page.tickets.iter().map(ticket_json).collect();
            Json(json!({ "tickets": tickets, "next": page.next })).into_response()
        }
        Err(e) => refusal(Refused {
            status: StatusCode::SERVICE_UNAVAILABLE,
            code: "store_unavailable",
            message: format!("The store cannot be reached: {e}"),
            violations: Vec::new(),
        }),
    }
}

/// A ticket as a reviewer may see it: the arguments redacted, as JSON when they are.
fn ticket_json(ticket: &Ticket) -> Value {
    let arguments = serde_json::from_str::<Value>(&ticket.arguments)
        .unwrap_or_else(|_| Value::String(ticket.arguments.clone()));
    json!({
        "id": ticket.id,
        "tool": ticket.tool,
        "principal": ticket.principal,
        "conversation": ticket.conversation,
        "call_id": ticket.call_id,
        "arguments": arguments,
        "asked_at_ms": ticket.asked_at_ms,
    })
}

pub(super) async fn approve(State(review): State<Shared>, Path(id): Path<String>) -> Response {
    decided(&review, &id, Verdict::Approve).await
}

pub(super) async fn deny(
    State(review): State<Shared>,
    Path(id): Path<String>,
    body: Bytes,
) -> Response {
    match body_field(&body, "reason") {
        Ok(Value::String(reason)) => decided(&review, &id, Verdict::Deny(reason)).await,
        Ok(_) => bad_request("`reason` is a string: why, in words the model tells the user"),
        Err(message) => bad_request(&message),
    }
}

pub(super) async fn edit(
    State(review): State<Shared>,
    Path(id): Path<String>,
    body: Bytes,
) -> Response {
    // The arguments as a JSON object, or as the text of one.
    let arguments = match body_field(&body, "arguments") {
        Ok(Value::String(text)) => text,
        Ok(value @ Value::Object(_)) => value.to_string(),
        Ok(_) => return bad_request("`arguments` is the call's arguments, a JSON object"),
        Err(message) => return bad_request(&message),
    };
    decided(&review, &id, Verdict::Edit(arguments)).await
}

/// The one field of a JSON object body.
fn body_field(body: &[u8], name: &str) -> Result<Value, String> {
    let mut value: Value = serde_json::from_slice(body)
        .map_err(|e| format!("the body is a JSON object with `{name}`: {e}"))?;
    value
        .get_mut(name)
        .map(Value::take)
        .ok_or_else(|| format!("the body is a JSON object with `{name}`"))
}

async fn decided(review: &Shared, id: &str, verdict: Verdict) -> Response {
    match decide(review, id, &verdict).await {
        Ok(what) => Json(json!({ "ticket": id, "decided": what })).into_response(),
        Err(refused) => refusal(refused),
    }
}

/// No token, or the wrong one: 401.
pub(super) fn unauthorized() -> Response {
    refusal(Refused {
        status: StatusCode::UNAUTHORIZED,
        code: "unauthorized",
        message: "send `Authorization: Bearer TOKEN` with the page's token".to_owned(),
        violations: Vec::new(),
    })
}

/// A decision signed in by the cookie from another origin: 403, nothing decided.
pub(super) fn other_origin() -> Response {
    refusal(Refused {
        status: StatusCode::FORBIDDEN,
        code: "other_origin",
        message: "this request did not come from the review page's own origin; nothing was \
                  decided"
            .to_owned(),
        violations: Vec::new(),
    })
}

fn bad_request(message: &str) -> Response {
    refusal(Refused {
        status: StatusCode::UNPROCESSABLE_ENTITY,
        code: "bad_request",
        message: message.to_owned(),
        violations: Vec::new(),
    })
}

fn refusal(refused: Refused) -> Response {
    let mut body = json!({ "error": refused.code, "message": refused.message });
    if !refused.violations.is_empty() {
        let violations: Vec<Value> = refused
            .violations
            .iter()
            .map(|(path, message)| json!({ "path": path, "message": message }))
            .collect();
        body["violations"] = Value::Array(violations);
    }
    (refused.status, Json(body)).into_response()
}
