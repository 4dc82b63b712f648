//! The support agent's tools served to any MCP client, over stdio or streamable HTTP.
//!
//! ```text
//! cargo run --example mcp_server --features mcp                              # stdio
//! cargo run --example mcp_server --features mcp -- --http 127.0.0.1:8080     # HTTP
//! cargo run --example mcp_server --features mcp -- --http 127.0.0.1:8080 --auth
//! ```
//!
//! With `--auth`, HTTP requests need `Authorization: Bearer support-token` (may refund) or
//! `Bearer guest-token` (may only look up); anything else is a 401.
//!
//! `refund_order` requires approval: a client that supports elicitation asks its user; for one
//! that does not, refunds up to $50 are approved and larger ones denied. `slow_report` works in
//! 100 ms steps, reporting progress after each, and `report_stats` tells how many steps ran, so
//! a client can watch a call's progress, cancel it and see that the tool stopped.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use toolwright::approval::{Approval, ApprovalRequest};
use toolwright::mcp::{Grant, McpServer, ProtectedResource};
use toolwright::prelude::*;

/// One order in the shop's database.
#[toolwright::data]
#[derive(Debug, Clone)]
struct Order {
    id: String,
    customer: String,
    item: String,
    total: f64,
    status: String,
}

/// A refund the payment system accepted.
#[toolwright::data(output)]
#[derive(Debug, Clone)]
struct Refund {
    refund_id: String,
    order_id: String,
    amount: f64,
    idempotency_key: String,
}

/// How far the reports went.
#[toolwright::data(output)]
#[derive(Debug, Clone)]
struct Stats {
    started: u64,
    finished: u64,
    steps: u64,
}

/// The shop's orders, the refunds issued and the report counters, shared through `State<Shop>`.
struct Shop {
    orders: Vec<Order>,
    refunds: Mutex<HashMap<String, Refund>>,
    reports_started: AtomicU64,
    reports_finished: AtomicU64,
    report_steps: AtomicU64,
}

/// Search orders by customer name or item. Returns at most `max_results` orders, newest first.
#[tool(timeout_ms = 2000, read_only, grounds(order = "id"))]
async fn search_orders(
    shop: State<Shop>,
    /// Words to look for in the customer name or the item.
    #[arg(length(min = 1, max = 100))]
    query: String,
    /// Only orders in this state.
    #[arg(one_of = ["placed", "shipped", "delivered", "refunded"])]
    status: Option<String>,
    /// How many orders to return.
    #[arg(range(min = 1, max = 20), default = 5)]
    max_results: u32,
) -> Result<Vec<Order>, ToolError> {
    let query = query.to_lowercase();
    Ok(shop
        .orders
        .iter()
        .filter(|o| {
            o.customer.to_lowercase().contains(&query) || o.item.to_lowercase().contains(&query)
        })
        .filter(|o| status.as_deref().is_none_or(|s| s == o.status))
        .take(max_results as usize)
        .cloned()
        .collect())
}

/// Fetch one order by its id (ids look like `A1001`).
#[tool(timeout_ms = 1000, read_only, grounds(order = "id"))]
async fn get_order(
    shop: State<Shop>,
    /// The order id, as returned by `search_orders`.
    #[arg(pattern = "^A[0-9]{4}$")]
    order_id: String,
) -> Result<Order, ToolError> {
    shop.orders
        .iter()
        .find(|o| o.id == order_id)
        .cloned()
        .ok_or_else(|| {
            ToolError::not_found(format!(
                "there is no order `{order_id}`; search for the customer's orders first"
            ))
        })
}

/// Refund part or all of an order. Each refund happens once, whatever the retries.
#[tool(
    timeout_ms = 8000,
    idempotent = false,
    scopes = ["refunds:write"],
    requires_approval
)]
async fn refund_order(
    key: IdempotencyKey,
    shop: State<Shop>,
    /// The order to refund, as returned by `search_orders` or `get_order`.
    #[arg(pattern = "^A[0-9]{4}$", grounded = "order")]
    order_id: String,
    /// Amount in dollars.
    #[arg(range(min = 0.01, max = 500.0))]
    amount: f64,
    /// Why the customer wants a refund.
    #[arg(length(max = 300))]
    reason: Option<String>,
) -> Result<Refund, ToolError> {
    let _ = reason;
    let order = shop
        .orders
        .iter()
        .find(|o| o.id == order_id)
        .ok_or_else(|| ToolError::not_found(format!("there is no order `{order_id}`")))?;
    if amount > order.total {
        return Err(ToolError::invalid(format!(
            "`amount` {amount} is more than the order total {}; refund at most the total",
            order.total
        )));
    }
    let mut refunds = shop
        .refunds
        .lock()
        .map_err(|_| ToolError::unavailable("refund ledger unavailable"))?;
    let refund = refunds
        .entry(key.as_str().to_owned())
        .or_insert_with(|| Refund {
            refund_id: format!("R-{}", order_id.trim_start_matches('A')),
            order_id: order_id.clone(),
            amount,
            idempotency_key: key.to_string(),
        })
        .clone();
    Ok(refund)
}

/// Build the monthly sales report: slow, about `seconds` seconds of work in 100 ms steps. A
/// client that takes tasks gets a task to poll; any other waits for the report.
#[tool(timeout_ms = 60000, read_only, task)]
async fn slow_report(
    shop: State<Shop>,
    ctx: ToolContext,
    /// How long the report takes.
    #[arg(range(min = 1, max = 30))]
    seconds: u32,
) -> Result<String, ToolError> {
    shop.reports_started.fetch_add(1, Ordering::SeqCst);
    let steps = seconds * 10;
    for step in 1..=steps {
        tokio::time::sleep(Duration::from_millis(100)).await;
        shop.report_steps.fetch_add(1, Ordering::SeqCst);
        // A `notifications/progress` when the client sent a progressToken.
        ctx.progress(
            f64::from(step),
            Some(f64::from(steps)),
            format!("step {step} of {steps}"),
        );
    }
    shop.reports_finished.fetch_add(1, Ordering::SeqCst);
    Ok(format!("sales report: {} orders", shop.orders.len()))
}

/// How many reports started and finished, and how many 100 ms steps they ran.
#[tool(timeout_ms = 500, read_only)]
async fn report_stats(shop: State<Shop>) -> Result<Stats, ToolError> {
    Ok(Stats {
        started: shop.reports_started.load(Ordering::SeqCst),
        finished: shop.reports_finished.load(Ordering::SeqCst),
        steps: shop.report_steps.load(Ordering::SeqCst),
    })
}

fn shop() -> Shop {
    let order = |id: &str, customer: &str, item: &str, total: f64, status: &str| Order {
        id: id.into(),
        customer: customer.into(),
        item: item.into(),
        total,
        status: status.into(),
    };
    Shop {
        orders: vec![
            order(
                "A1001",
                "Ada Lovelace",
                "mechanical keyboard",
                129.0,
                "delivered",
            ),
            order("A1002", "Ada Lovelace", "usb-c cable", 12.5, "shipped"),
            order("A1003", "Grace Hopper", "standing desk", 499.0, "placed"),
        ],
        refunds: Mutex::new(HashMap::new()),
        reports_started: AtomicU64::new(0),
        reports_finished: AtomicU64::new(0),
        report_steps: AtomicU64::new(0),
    }
}

/// For clients that cannot ask their user: small refunds pass, large ones are refused.
fn refund_policy(request: &ApprovalRequest<'_>) -> Approval {
    let amount =
        toolwright::serde_json::from_str::<toolwright::serde_json::Value>(request.arguments())
            .ok()
            .and_then(|args| args["amount"].as_f64());
    match amount {
        Some(amount) if amount <= 50.0 => Approval::Approved,
        _ => Approval::Denied {
            reason: "refunds over $50 need a person's approval, and this client cannot ask one"
                .into(),
        },
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let http = args.iter().position(|a| a == "--http").map(|i| {
        args.get(i + 1)
            .cloned()
            .unwrap_or_else(|| "127.0.0.1:8080".into())
    });
    let auth = args.iter().any(|a| a == "--auth");

    let registry = Registry::builder()
        .tool(SearchOrders)
        .tool(GetOrder)
        .tool(RefundOrder)
        .tool(SlowReport)
        .tool(ReportStats)
        .state(shop())
        .build()?;
    let server = McpServer::new(registry)
        .name("toolwright-support", env!("CARGO_PKG_VERSION"))
        .instructions(
            "Customer-support tools. Find orders with search_orders before acting on them; \
             refund_order only accepts an order id a tool returned.",
        )
        .approver(Arc::new(refund_policy));

    match http {
        None => {
            // stdio: the client started this process, so it acts as the support agent.
            eprintln!("toolwright-support: serving MCP over stdio");
            server
                .session_factory(|session| {
                    session
                        .with_principal("agent:support")
                        .with_scopes(["refunds:write"])
                })
                .serve_stdio()
                .await?;
        }
        Some(addr) => {
            let server = if auth {
                let resource = format!("http://{addr}/mcp");
                server
                    .authorize(|token: &str| match token {
                        "support-token" => {
                            Some(Grant::new("agent:support").with_scopes(["refunds:write"]))
                        }
                        "guest-token" => Some(Grant::new("agent:guest")),
                        _ => None,
                    })
                    .protected_resource(
                        ProtectedResource::new(resource)
                            .authorization_server("https://auth.example.com")
                            .scopes_supported(["refunds:write"]),
                    )
            } else {
                server.session_factory(|session| {
                    session
                        .with_principal("agent:support")
                        .with_scopes(["refunds:write"])
                })
            };
            let running = server.bind_http(addr.as_str()).await?;
            eprintln!(
                "toolwright-support: serving MCP at {}{}",
                running.url(),
                if auth {
                    " (bearer tokens required)"
                } else {
                    ""
                }
            );
            running.wait().await?;
        }
    }
    Ok(())
}
