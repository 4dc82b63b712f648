//! Tools and clients the MCP tests share: a small shop, rmcp clients that answer elicitation.
#![allow(dead_code)]

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, ElicitRequestParams,
    ElicitResult, ElicitationAction, Implementation, ProgressNotificationParam,
};
use rmcp::service::{NotificationContext, RequestContext, RunningService};
use rmcp::{ClientHandler, ErrorData, RoleClient, ServerHandler, ServiceExt};
use serde_json::{json, Value};
use toolwright::prelude::*;
use toolwright::Registry;
use toolwright_mcp::{McpServer, Tools};

/// Counters the slow tool moves, so a test sees whether it stopped.
#[derive(Default, Clone)]
pub struct Counters {
    pub started: Arc<AtomicU64>,
    pub steps: Arc<AtomicU64>,
    pub finished: Arc<AtomicU64>,
    pub refunds: Arc<AtomicU64>,
}

impl Counters {
    pub fn get(counter: &AtomicU64) -> u64 {
        counter.load(Ordering::SeqCst)
    }
}

/// One order.
#[toolwright::data]
#[derive(Debug, Clone)]
pub struct Order {
    id: String,
    total: f64,
}

/// Find orders.
#[tool(timeout_ms = 2000, read_only, grounds(order = "id"))]
async fn search_orders(
    /// Words to look for.
    #[arg(length(min = 1, max = 100))]
    query: String,
) -> Result<Vec<Order>, ToolError> {
    let _ = query;
    Ok(vec![Order {
        id: "A1001".into(),
        total: 129.0,
    }])
}

/// Fetch one order.
#[tool(timeout_ms = 1000, read_only)]
async fn get_order(
    /// The order id.
    #[arg(pattern = "^A[0-9]{4}$")]
    order_id: String,
) -> Result<Order, ToolError> {
    if order_id == "A1001" {
        Ok(Order {
            id: order_id,
            total: 129.0,
        })
    } else {
        Err(ToolError::not_found(format!(
            "there is no order `{order_id}`"
        )))
    }
}

/// Refund an order.
#[tool(timeout_ms = 2000, idempotent = false, scopes = ["refunds:write"], requires_approval)]
async fn refund_order(
    key: IdempotencyKey,
    counters: State<Counters>,
    /// The order.
    #[arg(grounded = "order")]
    order_id: String,
    /// Dollars.
    #[arg(range(min = 0.01, max = 500.0))]
    amount: f64,
) -> Result<String, ToolError> {
    let _ = key;
    counters.refunds.fetch_add(1, Ordering::SeqCst);
    Ok(format!("refunded {amount} on {order_id}"))
}

/// A slow report, in 50 ms steps, reporting progress after each.
#[tool(timeout_ms = 30000, read_only)]
async fn slow_report(
    counters: State<Counters>,
    ctx: ToolContext,
    steps: u32,
) -> Result<String, ToolError> {
    counters.started.fetch_add(1, Ordering::SeqCst);
    for step in 1..=steps {
        tokio::time::sleep(Duration::from_millis(50)).await;
        counters.steps.fetch_add(1, Ordering::SeqCst);
        ctx.progress(
            f64::from(step),
            Some(f64::from(steps)),
            format!("step {step}"),
        );
    }
    counters.finished.fetch_add(1, Ordering::SeqCst);
    Ok("done".into())
}

/// Count to `to` as fast as it can, reporting every number (a tight loop of progress).
#[tool(timeout_ms = 5000, read_only)]
async fn count(ctx: ToolContext, to: u32) -> Result<u32, ToolError> {
    for n in 1..=to {
        ctx.progress(f64::from(n), Some(f64::from(to)), "");
    }
    Ok(to)
}

/// Echo a text back (for size and load tests).
#[tool(timeout_ms = 5000, read_only)]
pub async fn echo(text: String) -> Result<usize, ToolError> {
    Ok(text.len())
}

pub fn builder(counters: Counters) -> toolwright::RegistryBuilder {
    Registry::builder()
        .tool(SearchOrders)
        .tool(GetOrder)
        .tool(RefundOrder)
        .tool(SlowReport)
        .tool(Count)
        .tool(Echo)
        .state(counters)
}

pub fn registry(counters: Counters) -> Registry {
    builder(counters).build().expect("the test registry builds")
}

/// A client that answers every elicitation with `action` and records the messages.
#[derive(Clone)]
pub struct Elicitor {
    pub action: Option<ElicitationAction>,
    pub asked: Arc<Mutex<Vec<String>>>,
    /// Every `notifications/progress` received, in order.
    pub progress: Arc<Mutex<Vec<ProgressNotificationParam>>>,
    /// Each `notifications/tools/list_changed` received.
    pub list_changed: Arc<tokio::sync::Notify>,
}

impl Elicitor {
    /// A client that supports elicitation and answers `action`.
    pub fn answering(action: ElicitationAction) -> Self {
        Elicitor {
            action: Some(action),
            asked: Arc::default(),
            progress: Arc::default(),
            list_changed: Arc::default(),
        }
    }

    /// A client without the elicitation capability.
    pub fn without_elicitation() -> Self {
        Elicitor {
            action: None,
            asked: Arc::default(),
            progress: Arc::default(),
            list_changed: Arc::default(),
        }
    }

    pub fn asked(&self) -> Vec<String> {
        self.asked.lock().map(|a| a.clone()).unwrap_or_default()
    }

    pub fn progress(&self) -> Vec<ProgressNotificationParam> {
        self.progress.lock().map(|p| p.clone()).unwrap_or_default()
    }
}

impl ClientHandler for Elicitor {
    fn get_info(&self) -> ClientConfig {
        let capabilities = if self.action.is_some() {
            ClientCapabilities::builder().enable_elicitation().build()
        } else {
            ClientCapabilities::default()
        };
        ClientConfig::new(capabilities, Implementation::new("toolwright-test", "0"))
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        if let Ok(mut progress) = self.progress.lock() {
            progress.push(params);
        }
    }

    async fn on_tool_list_changed(&self, _context: rmcp::service::NotificationContext<RoleClient>) {
        self.list_changed.notify_one();
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        if let ElicitRequestParams::FormElicitationParams { message, .. } = request {
            if let Ok(mut asked) = self.asked.lock() {
                asked.push(message);
            }
        }
        let action = self.action.clone().unwrap_or(ElicitationAction::Decline);
        Ok(match action {
            ElicitationAction::Accept => ElicitResult::new(action).with_content(json!({})),
            other => ElicitResult::new(other),
        })
    }
}

pub type Client = RunningService<RoleClient, Elicitor>;

/// A server on one end of an in-process pipe (what stdio is), an rmcp client on the other.
pub async fn duplex<F, H>(server: McpServer<F>, client: Elicitor) -> Client
where
    F: Fn(Tools) -> H + Send + Sync + 'static,
    H: ServerHandler,
{
    let (server_io, client_io) = tokio::io::duplex(64 << 20);
    let (server_read, server_write) = tokio::io::split(server_io);
    tokio::spawn(async move {
        let _ = server.serve((server_read, server_write)).await;
    });
    let (client_read, client_write) = tokio::io::split(client_io);
    client
        .serve((client_read, client_write))
        .await
        .expect("the client connects")
}

pub fn call(name: &str, arguments: Value) -> CallToolRequestParams {
    let params = CallToolRequestParams::new(name.to_owned());
    match arguments {
        Value::Object(map) => params.with_arguments(map),
        _ => params,
    }
}

/// The envelope of a result.
pub fn envelope(result: &CallToolResult) -> Value {
    result.structured_content.clone().unwrap_or(Value::Null)
}

/// `ping`, answered with an empty result.
pub async fn ping(client: &Client) -> Result<(), rmcp::ServiceError> {
    let request = rmcp::model::ClientRequest::PingRequest(Default::default());
    client.send_request(request).await.map(|_| ())
}
