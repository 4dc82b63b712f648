//! Seed 000's worked example, end to end: `refund_order` against a real payment service on
//! loopback that commits the refund but answers after the client's timeout, then answers 409
//! "refund already in progress", then confirms. Exactly one refund exists at the end, every
//! request carried the same `Idempotency-Key`, and the outcomes tell the story.
//!
//! # How the story maps onto the framework
//!
//! The seed's trace is "timeout, 409, success": three requests, one refund. Here:
//!
//! 1. The model proposes the refund (`call_1`). Attempt 1 times out at the client; the service
//!    has committed the refund and is still finishing it. The framework retries (the tool takes
//!    an [`IdempotencyKey`], so repeating it is safe): attempt 2 carries the same key, and the
//!    service answers 409 "refund already in progress". The taxonomy files a 409 as `conflict`,
//!    which the framework never retries (another request is in the way: the model must look
//!    first), so `call_1` ends `conflict` after `[timeout, conflict]`. Because attempt 1 may have
//!    acted, the store records the key's effect as *unknown* (a conflict alone would be
//!    forgotten): the key is neither replayed as a success that did not happen nor dropped.
//! 2. The model proposes the same refund again (`call_2`, a new call id). The session uses
//!    [`KeyMode::Fingerprint`], the mode meant for exactly this (one refund of one order for one
//!    amount is never legitimately repeated within the conversation), so `call_2` maps to the
//!    key of `call_1` and goes downstream again with it. The service recognizes the key and
//!    confirms the original refund (`Idempotent-Replayed: true`) instead of making a second one.
//! 3. The provider delivers `call_2` once more (a reconnect): the store replays its outcome
//!    (`"replayed": true`) and the service is not asked at all.
//!
//! The alternative, a tool that turns "409 in progress for my own key" into a transient
//! `unavailable` so the framework retries inside `call_1`, would compress the story into one
//! call but file the 409 under the wrong kind; the choice here keeps the seed's classification
//! (`conflict`) and shows the two halves of the mechanism: the key threaded through retries,
//! and the store carrying an unknown effect from one call to the next.
//!
//! Real time (a network round trip cannot run on paused time): the client timeout is 1 s and
//! the service takes 5 s to finish the first refund; the test waits for that on a signal, not a
//! sleep. The margins are for a loaded machine: attempt 1 must reach the service within its
//! 1 s (a timeout is then certain, the answer comes 5 s after the request), and attempt 2 must
//! arrive while the refund is still in progress, which leaves it 4 s.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::State as AxumState;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use serde::{Deserialize, Serialize};
use tokio::net::TcpListener;
use tokio::sync::Notify;
use toolwright::execute::{classify::check_response, RetryPolicy};
use toolwright::idempotency::{Fingerprint, KeyMode};
use toolwright::prelude::*;

/// How long the service takes to finish the first refund, far past the client's timeout.
const SLOW_COMMIT: Duration = Duration::from_secs(5);

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema, PartialEq)]
struct Refund {
    refund_id: String,
    order_id: String,
    amount_cents: u32,
    /// The service recognized the key and confirmed an earlier refund.
    #[serde(default)]
    confirmation: bool,
}

#[derive(Deserialize)]
struct RefundRequest {
    order_id: String,
    amount_cents: u32,
}

enum KeyState {
    InProgress,
    Done(Refund),
}

/// The payment service's books: refunds made, what each key came to, every request it saw.
#[derive(Default)]
struct Books {
    refunds: Vec<Refund>,
    keys: HashMap<String, KeyState>,
    /// (Idempotency-Key, HTTP status answered)
    requests: Vec<(String, u16)>,
}

#[derive(Default)]
struct PaymentService {
    books: Mutex<Books>,
    /// Signalled when the slow first refund has finished.
    finished: Notify,
}

/// `POST /refunds` with an `Idempotency-Key`, the way Stripe answers: a new key makes the
/// refund (slowly, the first time); a key in progress is 409; a finished key is the stored
/// refund again, marked `Idempotent-Replayed: true`.
async fn refunds(
    AxumState(service): AxumState<Arc<PaymentService>>,
    headers: HeaderMap,
    Json(request): Json<RefundRequest>,
) -> Response {
    let Some(key) = headers
        .get("idempotency-key")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
    else {
        return (StatusCode::BAD_REQUEST, "Idempotency-Key required").into_response();
    };
    // Decide under the lock, then let it go before anything awaits.
    let refund = {
        let mut books = service.books.lock().unwrap();
        match books.keys.get(&key) {
            Some(KeyState::InProgress) => {
                books.requests.push((key, 409));
                return (StatusCode::CONFLICT, "refund already in progress").into_response();
            }
            Some(KeyState::Done(refund)) => {
                let refund = refund.clone();
                books.requests.push((key, 200));
                return (
                    StatusCode::OK,
                    [("idempotent-replayed", "true")],
                    Json(refund),
                )
                    .into_response();
            }
            None => {
                // Commit now, answer later: the refund exists before the client gives up.
                let refund = Refund {
                    refund_id: format!("re_{}", books.refunds.len() + 1),
                    order_id: request.order_id,
                    amount_cents: request.amount_cents,
                    confirmation: false,
                };
                books.refunds.push(refund.clone());
                books.keys.insert(key.clone(), KeyState::InProgress);
                books.requests.push((key.clone(), 201));
                refund
            }
        }
    };
    // The rest runs even after the client hangs up (a dropped handler would not).
    let finishing = Arc::clone(&service);
    let done = tokio::spawn(async move {
        tokio::time::sleep(SLOW_COMMIT).await;
        let mut books = finishing.books.lock().unwrap();
        books.keys.insert(key, KeyState::Done(refund.clone()));
        drop(books);
        finishing.finished.notify_one();
        refund
    });
    match done.await {
        Ok(refund) => (StatusCode::CREATED, Json(refund)).into_response(),
        Err(_) => StatusCode::INTERNAL_SERVER_ERROR.into_response(),
    }
}

async fn serve() -> (String, Arc<PaymentService>) {
    let service = Arc::new(PaymentService::default());
    let app = Router::new()
        .route("/refunds", post(refunds))
        .with_state(Arc::clone(&service));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (base, service)
}

struct Payments {
    client: reqwest::Client,
    base: String,
}

/// Refund part of an order to the customer's original payment method.
#[tool(idempotent = false, timeout_ms = 1000)]
async fn refund_order(
    key: IdempotencyKey,
    payments: State<Payments>,
    /// The order to refund.
    order_id: String,
    /// The amount, in cents.
    amount_cents: u32,
) -> Result<Refund, ToolError> {
    let response = payments
        .client
        .post(format!("{}/refunds", payments.base))
        .header("Idempotency-Key", key.as_str())
        .json(&serde_json::json!({ "order_id": order_id, "amount_cents": amount_cents }))
        .send()
        .await?;
    if response.status() == reqwest::StatusCode::CONFLICT {
        let body = response.text().await.unwrap_or_default();
        return Err(ToolError::conflict(format!(
            "the payment service answered 409: {body}"
        )));
    }
    let confirmation = response.headers().contains_key("idempotent-replayed");
    let mut refund: Refund = check_response(response)?.json().await?;
    refund.confirmation = confirmation;
    Ok(refund)
}

#[tokio::test]
async fn one_refund_through_a_timeout_a_409_and_a_confirmation() {
    let (base, service) = serve().await;
    let registry = Registry::builder()
        .tool(RefundOrder)
        .state(Payments {
            client: reqwest::Client::builder().no_proxy().build().unwrap(),
            base,
        })
        .retry_policy(RetryPolicy::new().base(Duration::from_millis(10)))
        .build()
        .unwrap();
    let session = Session::new("support-conv-42").with_key_mode(KeyMode::Fingerprint);
    let arguments = r#"{"order_id":"A1","amount_cents":2500}"#;

    // 1. Timeout (the refund is committed server-side), then 409 for the same key.
    let first = registry
        .call_in(&session, ToolCall::new("call_1", "refund_order", arguments))
        .await;
    let kinds: Vec<_> = first.attempt_history().iter().map(|a| a.error()).collect();
    assert_eq!(
        kinds,
        [Some(ErrorKind::Timeout), Some(ErrorKind::Conflict)],
        "{:?}",
        first.message()
    );
    assert_eq!(first.error_kind(), Some(ErrorKind::Conflict));
    assert!(first
        .message()
        .unwrap()
        .contains("refund already in progress"));
    assert!(!first.is_replayed());

    // The service finishes the refund it committed during attempt 1.
    service.finished.notified().await;

    // 2. The model proposes the refund again, with a new call id: the same key goes downstream,
    //    and the service confirms the original refund instead of making another.
    let second = registry
        .call_in(
            &session,
            ToolCall::new(
                "call_2",
                "refund_order",
                r#"{"amount_cents":2500,"order_id":"A1"}"#,
            ),
        )
        .await;
    assert_eq!(second.status(), Status::Success, "{:?}", second.message());
    assert_eq!(second.attempts(), 1);
    assert!(!second.is_replayed());
    let confirmed: Refund = second.data_as().unwrap();
    assert!(confirmed.confirmation, "the service recognized the key");

    // 3. The provider delivers call_2 again: replayed from the store, the service not asked.
    let third = registry
        .call_in(&session, ToolCall::new("call_2", "refund_order", arguments))
        .await;
    assert!(third.is_replayed());
    assert_eq!(third.to_model_json()["replayed"], true);
    assert_eq!(third.data_as::<Refund>().unwrap(), confirmed);

    // Exactly one refund, and every request carried the same key.
    let books = service.books.lock().unwrap();
    assert_eq!(books.refunds.len(), 1, "one real side effect, not three");
    assert_eq!(
        books.refunds[0],
        Refund {
            confirmation: false,
            ..confirmed.clone()
        }
    );
    let key = KeyMode::Fingerprint.key(
        "support-conv-42",
        "refund_order",
        "call_1",
        &Fingerprint::of("refund_order", arguments),
    );
    let statuses: Vec<u16> = books.requests.iter().map(|(_, s)| *s).collect();
    assert_eq!(statuses, [201, 409, 200]);
    assert!(
        books.requests.iter().all(|(k, _)| k == key.as_str()),
        "{:?}",
        books.requests
    );

    // The story, as an operator reads it.
    println!(
        "call_1: attempts {:?} -> {}; call_2: 1 attempt -> success (confirmation of {}); \
         call_2 again: replayed; requests {:?}; refunds {}",
        kinds,
        first.error_kind().unwrap(),
        confirmed.refund_id,
        statuses,
        books.refunds.len()
    );
}
