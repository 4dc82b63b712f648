//! Fault fixtures (seed 000, "Test the failure paths"): a real HTTP server on loopback that
//! misbehaves on purpose, tools that call it with reqwest, and the real pipeline in between.
//! Each fixture asserts the classification, how many attempts reached the server, and the
//! envelope the model reads.
//!
//! These run on real time (a network round trip cannot run on paused time: tokio's paused clock
//! jumps to the next timer whenever the runtime is idle, which it is while a request is on the
//! wire), so the backoff base is 10 ms and only the hang fixture waits for a timeout. That
//! timeout is 1 s, not less: each of its three attempts must reach the server before it fires
//! (the test counts them), which a loaded two-core machine does not promise within 200 ms.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::State as AxumState;
use axum::http::{header, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::Router;
use serde::{Deserialize, Serialize};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use toolwright::execute::{classify::check_response, RetryPolicy};
use toolwright::prelude::*;
use toolwright::RetryStop;

/// How often each path was requested.
#[derive(Default)]
struct Hits(Mutex<HashMap<String, u32>>);

impl Hits {
    fn hit(&self, path: &str) -> u32 {
        let mut hits = self.0.lock().unwrap();
        let n = hits.entry(path.to_owned()).or_default();
        *n += 1;
        *n
    }

    fn of(&self, path: &str) -> u32 {
        self.0.lock().unwrap().get(path).copied().unwrap_or(0)
    }
}

async fn misbehave(AxumState(hits): AxumState<Arc<Hits>>, uri: Uri) -> Response {
    let path = uri.path();
    let n = hits.hit(path);
    match path {
        "/orders" => r#"[{"id":"A1"}]"#.into_response(),
        "/hang" => std::future::pending().await,
        "/throttled-once" if n == 1 => (
            StatusCode::TOO_MANY_REQUESTS,
            [(header::RETRY_AFTER, "1")],
            "slow down",
        )
            .into_response(),
        "/throttled-once" => "[]".into_response(),
        "/throttled-long" => (
            StatusCode::TOO_MANY_REQUESTS,
            [(header::RETRY_AFTER, "30")],
            "slow down",
        )
            .into_response(),
        "/redirect-loop" => (
            StatusCode::FOUND,
            [(header::LOCATION, "/redirect-loop")],
            "",
        )
            .into_response(),
        "/empty" => (StatusCode::OK, "").into_response(),
        "/malformed" => r#"[{"id": "A1", "#.into_response(),
        _ => {
            let code = path
                .strip_prefix("/status/")
                .and_then(|c| c.parse().ok())
                .and_then(|c| StatusCode::from_u16(c).ok())
                .unwrap_or(StatusCode::IM_A_TEAPOT);
            (code, "scripted status").into_response()
        }
    }
}

/// The misbehaving service on an ephemeral loopback port.
async fn serve() -> (String, Arc<Hits>) {
    let hits = Arc::new(Hits::default());
    let app = Router::new()
        .fallback(misbehave)
        .with_state(Arc::clone(&hits));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (base, hits)
}

/// A server that starts a response, then resets the connection (RST, not FIN) mid-body.
async fn serve_resets() -> (String, Arc<Hits>) {
    let hits = Arc::new(Hits::default());
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let counter = Arc::clone(&hits);
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            counter.hit("/reset");
            let mut request = Vec::new();
            let mut buf = [0u8; 1024];
            while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                match stream.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => request.extend_from_slice(&buf[..n]),
                }
            }
            let head = "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 400\r\n\r\n[{\"id\":\"A1\"},";
            let _ = stream.write_all(head.as_bytes()).await;
            let _ = stream.flush().await;
            tokio::time::sleep(Duration::from_millis(20)).await;
            let _ = stream.set_zero_linger();
            drop(stream);
        }
    });
    (base, hits)
}

/// A loopback address nothing listens on.
async fn refused() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    drop(listener);
    base
}

struct Http {
    client: reqwest::Client,
    base: String,
}

#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
struct Order {
    id: String,
}

/// List orders from the orders service.
#[tool(read_only)]
async fn list_orders(http: State<Http>, path: String) -> Result<Vec<Order>, ToolError> {
    let response = http
        .client
        .get(format!("{}{path}", http.base))
        .send()
        .await?;
    Ok(check_response(response)?.json().await?)
}

/// Create an order (not idempotent, and it sends no idempotency key).
#[tool(idempotent = false)]
async fn create_order(http: State<Http>, path: String) -> Result<Vec<Order>, ToolError> {
    let response = http
        .client
        .post(format!("{}{path}", http.base))
        .send()
        .await?;
    Ok(check_response(response)?.json().await?)
}

fn registry(base: &str, timeout: Duration) -> Registry {
    Registry::builder()
        .tool(ListOrders)
        .tool(CreateOrder)
        .state(Http {
            client: reqwest::Client::builder().no_proxy().build().unwrap(),
            base: base.to_owned(),
        })
        .default_timeout(timeout)
        .retry_policy(RetryPolicy::new().base(Duration::from_millis(10)))
        // Real time on a loaded machine: the default deadline (every timeout plus 30 ms of
        // waits) could cut the last attempt first. These tests are about timeouts; deadlines
        // are tested on paused time in tests/it/execute_attempts.rs.
        .call_deadline(Duration::from_secs(10))
        .build()
        .unwrap()
}

async fn fetch(registry: &Registry, tool: &str, path: &str) -> Outcome {
    let args = json!({ "path": path }).to_string();
    registry.call(ToolCall::new("call_1", tool, args)).await
}

/// The envelope of a failure, `message` checked separately.
fn without_message(outcome: &Outcome) -> serde_json::Value {
    let mut envelope = outcome.to_model_json();
    envelope.as_object_mut().unwrap().remove("message");
    envelope
}

const PATIENT: Duration = Duration::from_secs(10);
/// The hang fixture's timeout: long enough for a request to reach the server on a busy machine.
const HANG_TIMEOUT: Duration = Duration::from_secs(1);

#[tokio::test]
async fn a_200_with_data_is_a_success() {
    let (base, hits) = serve().await;
    let outcome = fetch(&registry(&base, PATIENT), "list_orders", "/orders").await;
    assert_eq!(
        outcome.to_model_json(),
        json!({"status": "success", "data": [{"id": "A1"}], "attempts": 1})
    );
    assert_eq!(hits.of("/orders"), 1);
}

#[tokio::test]
async fn a_hang_past_the_timeout_is_a_timeout_retried_when_safe() {
    let (base, hits) = serve().await;
    let registry = registry(&base, HANG_TIMEOUT);

    let outcome = fetch(&registry, "list_orders", "/hang").await;
    assert_eq!(outcome.error_kind(), Some(ErrorKind::Timeout));
    assert_eq!((outcome.attempts(), hits.of("/hang")), (3, 3));
    assert_eq!(
        without_message(&outcome),
        json!({"status": "error", "error_type": "timeout", "seam": "execution", "retryable": true, "attempts": 3})
    );
    assert!(outcome
        .message()
        .unwrap()
        .starts_with("`list_orders` did not answer within 1000 ms"));

    // The same hang on a tool that is not idempotent: the order may exist now. Once.
    let outcome = fetch(&registry, "create_order", "/hang").await;
    assert_eq!(outcome.error_kind(), Some(ErrorKind::Timeout));
    assert_eq!((outcome.attempts(), hits.of("/hang")), (1, 4));
    assert_eq!(outcome.retry_stop(), Some(RetryStop::NotIdempotent));
    assert_eq!(outcome.to_model_json()["retryable"], false);
}

#[tokio::test]
async fn a_refused_connection_never_started_so_even_a_non_idempotent_tool_retries() {
    let base = refused().await;
    let outcome = fetch(&registry(&base, PATIENT), "create_order", "/orders").await;
    assert_eq!(outcome.error_kind(), Some(ErrorKind::Unavailable));
    assert_eq!(outcome.attempts(), 3);
    assert_eq!(outcome.retry_stop(), Some(RetryStop::Attempts));
    assert_eq!(
        without_message(&outcome),
        json!({"status": "error", "error_type": "unavailable", "seam": "execution", "retryable": true, "attempts": 3})
    );
    let message = outcome.message().unwrap().to_lowercase();
    assert!(message.contains("refused"), "{message}");
    assert!(
        !message.contains("127.0.0.1"),
        "the URL stays out of the message: {message}"
    );
}

#[tokio::test]
async fn a_request_reqwest_cannot_build_or_follow_is_a_bad_request_never_retried() {
    // A URL that does not parse: refused before anything is sent, the error's sources joined.
    let outcome = fetch(&registry("http://[", PATIENT), "list_orders", "/orders").await;
    assert_eq!(outcome.error_kind(), Some(ErrorKind::BadRequest));
    assert_eq!((outcome.attempts(), outcome.retry_stop()), (1, None));
    assert_eq!(
        outcome.message(),
        Some("builder error: invalid IPv6 address")
    );
    // A redirect back to itself: reqwest follows it 10 times, then gives up.
    let (base, hits) = serve().await;
    let outcome = fetch(&registry(&base, PATIENT), "list_orders", "/redirect-loop").await;
    assert_eq!(outcome.error_kind(), Some(ErrorKind::BadRequest));
    assert_eq!((outcome.attempts(), outcome.retry_stop()), (1, None));
    assert_eq!(
        outcome.message(),
        Some("error following redirect: too many redirects")
    );
    assert_eq!(hits.of("/redirect-loop"), 11);
}

/// A server that reads requests and never answers.
async fn serve_silent() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = [0u8; 1024];
                while let Ok(1..) = stream.read(&mut buf).await {}
            });
        }
    });
    base
}

/// A report's upload failed reading the report: its message says the cause, as libraries
/// often do, and names it as its source too.
#[derive(Debug)]
struct ReadFailed(std::io::Error);

impl std::fmt::Display for ReadFailed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "reading the report failed: {}", self.0)
    }
}

impl std::error::Error for ReadFailed {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.0)
    }
}

/// A request body that sends one chunk, then fails.
struct FailingReport(u8);

impl http_body::Body for FailingReport {
    type Data = bytes::Bytes;
    type Error = ReadFailed;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<bytes::Bytes>, ReadFailed>>> {
        self.0 += 1;
        std::task::Poll::Ready(Some(match self.0 {
            1 => Ok(http_body::Frame::data(bytes::Bytes::from_static(
                b"{\"rows\": [",
            ))),
            _ => Err(ReadFailed(std::io::Error::other("the disk went away"))),
        }))
    }
}

/// Upload a report (its body streamed, read as it is sent).
#[tool(idempotent = false)]
async fn upload_report(http: State<Http>, path: String) -> Result<Vec<Order>, ToolError> {
    let response = http
        .client
        .post(format!("{}{path}", http.base))
        .body(reqwest::Body::wrap(FailingReport(0)))
        .send()
        .await?;
    Ok(check_response(response)?.json().await?)
}

#[tokio::test]
async fn a_request_body_that_fails_mid_upload_says_its_cause_once() {
    let base = serve_silent().await;
    let registry = Registry::builder()
        .tool(UploadReport)
        .state(Http {
            client: reqwest::Client::builder().no_proxy().build().unwrap(),
            base,
        })
        .build()
        .unwrap();
    let outcome = fetch(&registry, "upload_report", "/reports").await;
    assert_eq!(outcome.error_kind(), Some(ErrorKind::Unavailable));
    // Part of the body went out: the action may have started, so it is not repeated.
    assert_eq!(outcome.attempts(), 1);
    assert_eq!(outcome.retry_stop(), Some(RetryStop::NotIdempotent));
    // Every error in the chain once, in order; the cause that its wrapper already printed is
    // not printed again.
    let message = outcome.message().unwrap_or_default();
    assert!(
        message.starts_with(
            "error sending request: client error (SendRequest): error from user's Body stream: \
             request or response body error: reading the report failed: the disk went away. "
        ),
        "{message}"
    );
    assert_eq!(
        message.matches("the disk went away").count(),
        1,
        "{message}"
    );
}

#[tokio::test]
async fn a_connection_reset_mid_response_is_unavailable() {
    let (base, hits) = serve_resets().await;
    let registry = registry(&base, PATIENT);

    let outcome = fetch(&registry, "list_orders", "/orders").await;
    assert_eq!(
        outcome.error_kind(),
        Some(ErrorKind::Unavailable),
        "{:?}",
        outcome.message()
    );
    assert_eq!((outcome.attempts(), hits.of("/reset")), (3, 3));
    assert_eq!(
        without_message(&outcome),
        json!({"status": "error", "error_type": "unavailable", "seam": "execution", "retryable": true, "attempts": 3})
    );
    // reqwest files the body that stopped arriving under "decode"; the model is told what it is.
    let message = outcome.message().unwrap_or_default();
    assert!(
        message.starts_with("the transfer was cut short: "),
        "{message}"
    );

    // The request reached the server: a non-idempotent tool must not repeat it.
    let outcome = fetch(&registry, "create_order", "/orders").await;
    assert_eq!(outcome.error_kind(), Some(ErrorKind::Unavailable));
    assert_eq!((outcome.attempts(), hits.of("/reset")), (1, 4));
    assert_eq!(outcome.retry_stop(), Some(RetryStop::NotIdempotent));
}

#[tokio::test]
async fn a_429_with_retry_after_is_waited_out() {
    let (base, hits) = serve().await;
    let registry = registry(&base, PATIENT);
    let outcome = fetch(&registry, "list_orders", "/throttled-once").await;
    assert_eq!(outcome.status(), Status::Empty);
    assert_eq!((outcome.attempts(), hits.of("/throttled-once")), (2, 2));
    let story = outcome.attempt_history();
    assert_eq!(story[0].error(), Some(ErrorKind::RateLimited));
    assert_eq!(story[1].waited(), Duration::from_secs(1), "Retry-After: 1");
    assert!(outcome.elapsed() >= Duration::from_secs(1));
}

#[tokio::test]
async fn a_429_asking_for_longer_than_the_deadline_is_reported_with_its_retry_after() {
    let (base, hits) = serve().await;
    let registry = registry(&base, Duration::from_secs(5));
    let outcome = fetch(&registry, "list_orders", "/throttled-long").await;
    assert_eq!((outcome.attempts(), hits.of("/throttled-long")), (1, 1));
    assert_eq!(outcome.retry_stop(), Some(RetryStop::Deadline));
    assert_eq!(
        without_message(&outcome),
        json!({"status": "error", "error_type": "rate_limited", "seam": "execution", "retryable": true,
               "retry_after_ms": 30_000, "attempts": 1})
    );
}

async fn status_fixture(code: u16) -> (Outcome, u32) {
    let (base, hits) = serve().await;
    let path = format!("/status/{code}");
    let outcome = fetch(&registry(&base, PATIENT), "list_orders", &path).await;
    let hits = hits.of(&path);
    (outcome, hits)
}

#[tokio::test]
async fn a_500_is_unavailable_and_retried() {
    let (outcome, hits) = status_fixture(500).await;
    assert_eq!((outcome.attempts(), hits), (3, 3));
    assert_eq!(
        without_message(&outcome),
        json!({"status": "error", "error_type": "unavailable", "seam": "execution", "retryable": true, "attempts": 3})
    );
    assert_eq!(
        outcome.message(),
        Some("`/status/500` answered HTTP 500 Internal Server Error (failed 3 attempts: unavailable, unavailable, unavailable)")
    );
}

#[tokio::test]
async fn a_503_is_unavailable_and_retried() {
    let (outcome, hits) = status_fixture(503).await;
    assert_eq!((outcome.attempts(), hits), (3, 3));
    assert_eq!(outcome.error_kind(), Some(ErrorKind::Unavailable));
    assert_eq!(outcome.to_model_json()["attempts"], 3);
}

#[tokio::test]
async fn a_404_is_not_found_and_never_retried() {
    let (outcome, hits) = status_fixture(404).await;
    assert_eq!((outcome.attempts(), hits), (1, 1));
    assert_eq!(
        outcome.to_model_json(),
        json!({"status": "error", "error_type": "not_found", "seam": "execution", "retryable": false,
               "message": "`/status/404` answered HTTP 404 Not Found", "attempts": 1})
    );
}

#[tokio::test]
async fn a_409_is_a_conflict_and_never_retried() {
    let (outcome, hits) = status_fixture(409).await;
    assert_eq!((outcome.attempts(), hits), (1, 1));
    assert_eq!(
        outcome.to_model_json(),
        json!({"status": "error", "error_type": "conflict", "seam": "execution", "retryable": false,
               "message": "`/status/409` answered HTTP 409 Conflict", "attempts": 1})
    );
}

#[tokio::test]
async fn a_200_with_an_empty_body_is_an_invalid_result() {
    let (base, hits) = serve().await;
    let outcome = fetch(&registry(&base, PATIENT), "list_orders", "/empty").await;
    assert_eq!((outcome.attempts(), hits.of("/empty")), (1, 1));
    assert_eq!(
        without_message(&outcome),
        json!({"status": "error", "error_type": "invalid_result", "seam": "interpretation", "retryable": false, "attempts": 1})
    );
    assert!(
        outcome.message().unwrap().contains("EOF"),
        "{:?}",
        outcome.message()
    );
}

#[tokio::test]
async fn a_200_with_a_malformed_body_is_an_invalid_result() {
    let (base, hits) = serve().await;
    let outcome = fetch(&registry(&base, PATIENT), "list_orders", "/malformed").await;
    assert_eq!((outcome.attempts(), hits.of("/malformed")), (1, 1));
    assert_eq!(
        without_message(&outcome),
        json!({"status": "error", "error_type": "invalid_result", "seam": "interpretation", "retryable": false, "attempts": 1})
    );
}
