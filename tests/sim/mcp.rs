//! MCP servers driven in-process: each replica's routes (`McpServer::router`) answer HTTP
//! requests built here, with no socket, so a schedule on the paused clock stays deterministic.
//! Only the 2026-07-28 revision is spoken (stateless requests).

use std::time::Duration;

use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;
use toolwright::mcp::{Grant, McpServer};
use tower::ServiceExt;

/// One replica's routes.
pub struct Server {
    router: axum::Router,
}

/// The principals the simulated clients authenticate as (the token is the principal).
pub const PRINCIPALS: [&str; 3] = ["alice", "bob", "eve"];

impl Server {
    pub fn new(server: McpServer) -> Server {
        let router = server
            .sse_keep_alive(Duration::from_secs(3600))
            .authorize(|token: &str| {
                PRINCIPALS
                    .contains(&token)
                    .then(|| Grant::new(token.to_owned()))
            })
            .router(CancellationToken::new())
            .expect("the simulated MCP server's routes");
        Server { router }
    }

    /// One 2026-07-28 request of `method`; `capabilities` are the client's, `meta` more
    /// `_meta`. Its answer (result or error), or an error naming what came back instead.
    pub async fn request(
        &self,
        token: &str,
        method: &str,
        params: Value,
        capabilities: Value,
        meta: Value,
    ) -> Value {
        let mut params = params;
        let mut all = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": capabilities,
            "io.modelcontextprotocol/clientInfo": {"name": "sim", "version": "0"},
        });
        if let (Some(all), Value::Object(extra)) = (all.as_object_mut(), meta) {
            all.extend(extra);
        }
        params["_meta"] = all;
        let name = params["name"]
            .as_str()
            .or(params["taskId"].as_str())
            .map(str::to_owned);
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        let mut request = axum::http::Request::builder()
            .method("POST")
            .uri("/mcp")
            .header("host", "127.0.0.1")
            .header("authorization", format!("Bearer {token}"))
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", method);
        if let Some(name) = name {
            request = request.header("mcp-name", name);
        }
        let request = request
            .body(axum::body::Body::from(body.to_string()))
            .expect("a request");
        let response = match self.router.clone().oneshot(request).await {
            Ok(response) => response,
            Err(never) => match never {},
        };
        let status = response.status();
        let text = match axum::body::to_bytes(response.into_body(), 64 << 20).await {
            Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
            Err(error) => format!("unreadable body: {error}"),
        };
        answer(&text).unwrap_or_else(
            || json!({"error": {"code": -1, "message": format!("HTTP {status}: {text}")}}),
        )
    }
}

/// The answer to request 1 in an SSE or JSON body.
fn answer(body: &str) -> Option<Value> {
    let mut all: Vec<Value> = body
        .lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .filter_map(|data| serde_json::from_str(data.trim()).ok())
        .collect();
    if let Ok(single) = serde_json::from_str::<Value>(body) {
        all.push(single);
    }
    all.into_iter()
        .find(|m| m["id"] == json!(1) && (m.get("result").is_some() || m.get("error").is_some()))
}

/// A client that answers forms (approvals as input-required results).
pub fn forms() -> Value {
    json!({"elicitation": {"form": {}}})
}

/// A client that takes tasks (and answers no forms).
pub fn tasks() -> Value {
    json!({"extensions": {"io.modelcontextprotocol/tasks": {}}})
}
