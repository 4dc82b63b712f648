//! `notifications/progress` to rmcp's own client: a call that carries a `progressToken` gets
//! the tool's reports under that token, in order, rate-limited, the last one before the result.
//! (rmcp's client puts a token on every request; `tests/it/http.rs` sends one without.)

use std::time::Duration;

use rmcp::model::{NumberOrString, ProgressToken, RequestMetaObject};
use serde_json::{json, Value};
use toolwright_mcp::McpServer;

use crate::common::{self, call, duplex, envelope, registry, Counters, Elicitor};

fn with_token(name: &str, arguments: Value, token: i64) -> rmcp::model::CallToolRequestParams {
    let mut params = call(name, arguments);
    params.meta = Some(RequestMetaObject::with_progress_token(ProgressToken(
        NumberOrString::Number(token),
    )));
    params
}

/// A client recording the notifications it receives, connected to the test server.
async fn connect() -> (Elicitor, common::Client) {
    let client_handler = Elicitor::without_elicitation();
    let client = duplex(
        McpServer::new(registry(Counters::default())),
        client_handler.clone(),
    )
    .await;
    (client_handler, client)
}

#[tokio::test]
async fn a_call_with_a_progress_token_receives_every_step_before_its_result() {
    let (client_handler, client) = connect().await;
    let result = client
        .call_tool(with_token("slow_report", json!({"steps": 6}), 7))
        .await
        .expect("tools/call");
    assert_eq!(envelope(&result)["status"], "success");
    let seen = client_handler.progress();
    // Steps are 50 ms apart, at the 50 ms interval: each may be sent, none is lost at the end.
    assert!(seen.len() >= 2, "{seen:?}");
    // rmcp's client replaces the token with one of its own: all of them carry that one.
    assert!(
        seen.iter()
            .all(|p| p.progress_token == seen[0].progress_token),
        "every notification carries the request's token: {seen:?}"
    );
    assert!(
        seen.windows(2).all(|w| w[0].progress < w[1].progress),
        "progress increases: {seen:?}"
    );
    let last = seen.last().expect("a notification");
    assert_eq!(last.progress, 6.0);
    assert_eq!(last.total, Some(6.0));
    assert_eq!(last.message.as_deref(), Some("step 6"));
}

#[tokio::test]
async fn a_tight_loop_of_reports_does_not_flood_the_client() {
    let (client_handler, client) = connect().await;
    let result = client
        .call_tool(with_token("count", json!({"to": 10000}), 8))
        .await
        .expect("tools/call");
    assert_eq!(envelope(&result)["data"], 10000);
    let seen = client_handler.progress();
    // The first report at once, then at most one per 50 ms while the loop runs (it takes far
    // less), and the last one.
    assert!(
        (2..=4).contains(&seen.len()),
        "{} notifications",
        seen.len()
    );
    assert_eq!(seen[0].progress, 1.0);
    assert_eq!(seen.last().map(|p| p.progress), Some(10000.0));
}

/// A client recording the notifications it receives from `server`.
async fn connect_to(server: McpServer) -> (Elicitor, common::Client) {
    let client_handler = Elicitor::without_elicitation();
    let client = duplex(server, client_handler.clone()).await;
    (client_handler, client)
}

#[tokio::test]
async fn an_interval_of_zero_sends_every_report() {
    let (client_handler, client) =
        connect_to(McpServer::new(registry(Counters::default())).progress_interval(Duration::ZERO))
            .await;
    let result = client
        .call_tool(with_token("count", json!({"to": 500}), 9))
        .await
        .expect("tools/call");
    assert_eq!(envelope(&result)["data"], 500);
    let seen: Vec<f64> = client_handler
        .progress()
        .iter()
        .map(|p| p.progress)
        .collect();
    // At the default interval the same loop sends two to four (the test above).
    let every: Vec<f64> = (1..=500).map(f64::from).collect();
    assert_eq!(seen, every);
}

#[tokio::test]
async fn a_long_interval_sends_the_first_report_and_the_last() {
    let (client_handler, client) = connect_to(
        McpServer::new(registry(Counters::default())).progress_interval(Duration::from_secs(60)),
    )
    .await;
    let result = client
        .call_tool(with_token("slow_report", json!({"steps": 6}), 10))
        .await
        .expect("tools/call");
    assert_eq!(envelope(&result)["status"], "success");
    // Six reports 50 ms apart: at the default interval most are sent (the first test); inside
    // one 60 s interval, only the first and, before the result, the last.
    let seen: Vec<f64> = client_handler
        .progress()
        .iter()
        .map(|p| p.progress)
        .collect();
    assert_eq!(seen, [1.0, 6.0]);
}
