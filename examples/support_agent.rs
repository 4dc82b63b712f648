//! The main job: a customer-support agent's tool set, driven by a scripted model that proposes
//! good and malformed calls, printing every model-facing envelope.
//!
//! ```text
//! cargo run --example support_agent
//! ```
//!
//! The "model" here is a fixed list of proposals, the kind a real model produces on a long
//! day: correct calls, a hallucinated tool name, a number sent as a string, an out-of-range and
//! an over-long value in one call, an invented argument, truncated JSON, a business rule broken,
//! an id that does not exist, an action the conversation may not take, a tool that panics, a
//! flaky dependency retried, one that is down, answered by the tool's fallback, a refund too
//! large for the policy that waits for a person's approval, and an invented order id.
//! Each comes back as an envelope the model can act on; none crashes the agent.

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use toolwright::approval::{Approval, ApprovalQueue, ApprovalRequest, Approver};
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

/// The shop's orders and the refunds issued, shared by the tools through `State<Shop>`.
struct Shop {
    orders: Vec<Order>,
    refunds: Mutex<HashMap<String, Refund>>,
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
    /// The order to refund.
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

/// Offer the customer a callback window, in hours of the day (24 h clock).
#[tool(validate = window_is_ordered, idempotent = true)]
async fn schedule_callback(
    /// The order the callback is about.
    #[arg(pattern = "^A[0-9]{4}$")]
    order_id: String,
    /// First hour the customer can be called.
    #[arg(range(min = 0, max = 23))]
    earliest_hour: u8,
    /// Last hour the customer can be called.
    #[arg(range(min = 0, max = 23))]
    latest_hour: u8,
) -> Result<String, ToolError> {
    Ok(format!(
        "callback for {order_id} between {earliest_hour}:00 and {latest_hour}:00"
    ))
}

fn window_is_ordered(args: &ScheduleCallbackArgs) -> Result<(), ToolError> {
    if args.earliest_hour >= args.latest_hour {
        return Err(ToolError::invalid(format!(
            "`earliest_hour` ({}) must be before `latest_hour` ({})",
            args.earliest_hour, args.latest_hour
        )));
    }
    Ok(())
}

/// Estimate the delivery date of an order (the estimator has a known bug).
#[tool(timeout_ms = 500, read_only)]
async fn estimate_delivery(
    /// The order to estimate.
    #[arg(pattern = "^A[0-9]{4}$")]
    order_id: String,
) -> Result<String, ToolError> {
    let days: Vec<u32> = Vec::new();
    // A bug in the tool: indexing an empty list. toolwright contains the panic.
    let first = days[order_id.len() % 3];
    Ok(format!("{first} days"))
}

/// Check how many units of an item the warehouse has.
#[tool(timeout_ms = 1000, read_only)]
async fn check_stock(
    /// The item, as named in the order.
    #[arg(length(min = 1, max = 100))]
    item: String,
) -> Result<u32, ToolError> {
    // The warehouse API drops every other request with a 503: a read-only tool is retried
    // with jittered backoff, and the model never sees the first failure.
    static CALLS: AtomicU32 = AtomicU32::new(0);
    if CALLS.fetch_add(1, Ordering::Relaxed).is_multiple_of(2) {
        return Err(ToolError::from_status(
            503,
            "the warehouse API answered 503",
        ));
    }
    Ok(if item.contains("desk") { 2 } else { 40 })
}

/// Where a shipped order's parcel is now.
#[tool(timeout_ms = 1000, read_only, fallback = last_scan)]
async fn track_parcel(
    /// The shipped order.
    #[arg(pattern = "^A[0-9]{4}$")]
    order_id: String,
) -> Result<String, ToolError> {
    // The carrier's tracking API is down today: every request gets a 503.
    let _ = order_id;
    Err(ToolError::from_status(
        503,
        "the carrier's tracking API answered 503",
    ))
}

/// The fallback of `track_parcel`: the last scan the shop recorded, possibly hours old.
async fn last_scan(order_id: String) -> Result<String, ToolError> {
    Ok(format!("{order_id}: last scanned at the Leipzig hub"))
}

/// Who approves refunds: up to $50 by policy, anything larger by a person (the queue).
struct RefundPolicy {
    queue: ApprovalQueue,
}

impl Approver for RefundPolicy {
    fn review<'a>(
        &'a self,
        request: &'a ApprovalRequest<'a>,
    ) -> Pin<Box<dyn Future<Output = Approval> + Send + 'a>> {
        let amount =
            toolwright::serde_json::from_str::<toolwright::serde_json::Value>(request.arguments())
                .ok()
                .and_then(|args| args["amount"].as_f64());
        match amount {
            Some(amount) if amount <= 50.0 => Box::pin(std::future::ready(Approval::Approved)),
            _ => self.queue.review(request),
        }
    }
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
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // One line per contained panic instead of the default hook's report.
    std::panic::set_hook(Box::new(|info| {
        eprintln!("   (tool panic contained: {info})")
    }));

    let registry = Registry::collected().state(shop()).build()?;
    let approvals = Arc::new(RefundPolicy {
        queue: ApprovalQueue::new(),
    });
    let session = Session::new("conv-7")
        .with_principal("agent:support")
        .with_scopes(["refunds:write"])
        .with_approver(Arc::clone(&approvals));
    let guest = Session::new("conv-8").with_principal("agent:guest");
    // The order the guest has open on screen: an id the application grounds itself.
    guest.ground("order", "A1001");

    println!("toolwright support agent: {} tools", registry.specs().len());
    for spec in registry.specs() {
        println!(
            "  {:<18} timeout {:>5} ms  {:<14} {}",
            spec.name(),
            spec.timeout().as_millis(),
            if spec.read_only() {
                "read-only"
            } else if spec.idempotent() {
                "idempotent"
            } else {
                "side effects"
            },
            spec.description()
        );
    }

    let script: &[(&Session, &str, &str, &str)] = &[
        (&session, "call_01", "search_orders", r#"{"query":"ada"}"#),
        (
            &session,
            "call_02",
            "search_orders",
            r#"{"query":"lamp","status":"shipped"}"#,
        ),
        (&session, "call_03", "search_order", r#"{"query":"ada"}"#),
        (
            &session,
            "call_04",
            "search_orders",
            r#"{"query":"ada","max_results":"2"}"#,
        ),
        (
            &session,
            "call_05",
            "search_orders",
            r#"{"query":"","max_results":50}"#,
        ),
        (
            &session,
            "call_06",
            "get_order",
            r#"{"order_id":"A1001","include_history":true}"#,
        ),
        (&session, "call_07", "get_order", r#"{"order_id":"A1001""#),
        (&session, "call_08", "get_order", r#"{"order_id":"A9999"}"#),
        (
            &session,
            "call_09",
            "schedule_callback",
            r#"{"order_id":"A1002","earliest_hour":17,"latest_hour":9}"#,
        ),
        (
            &session,
            "call_10",
            "refund_order",
            r#"{"order_id":"A1002","amount":12.5,"reason":"cable arrived broken"}"#,
        ),
        (
            &session,
            "call_10",
            "refund_order",
            r#"{"order_id":"A1002","amount":12.5,"reason":"cable arrived broken"}"#,
        ),
        (
            &guest,
            "call_11",
            "refund_order",
            r#"{"order_id":"A1001","amount":20}"#,
        ),
        (
            &session,
            "call_12",
            "estimate_delivery",
            r#"{"order_id":"A1003"}"#,
        ),
        (&session, "call_13", "get_order", r#"{"order_id":"A1003"}"#),
        (
            &session,
            "call_14",
            "check_stock",
            r#"{"item":"standing desk"}"#,
        ),
        (
            &session,
            "call_15",
            "track_parcel",
            r#"{"order_id":"A1002"}"#,
        ),
        (
            &session,
            "call_16",
            "refund_order",
            r#"{"order_id":"A1003","amount":499,"reason":"desk arrived damaged"}"#,
        ),
        (
            &session,
            "call_16",
            "refund_order",
            r#"{"order_id":"A1003","amount":499,"reason":"desk arrived damaged"}"#,
        ),
        (
            &session,
            "call_17",
            "refund_order",
            r#"{"order_id":"A1009","amount":5}"#,
        ),
    ];

    let mut tally: BTreeMap<String, usize> = BTreeMap::new();
    for (session, id, name, arguments) in script {
        println!("\n-> {id} {name} {arguments}");
        let outcome = registry
            .call_in(session, ToolCall::new(*id, *name, *arguments))
            .await;
        println!("<- {}", outcome.to_model_string_without_schema());
        if outcome.attempts() > 1 {
            for attempt in outcome.attempt_history() {
                println!(
                    "   attempt {} after {:>3} ms backoff: {}",
                    attempt.number(),
                    attempt.waited().as_millis(),
                    attempt
                        .error()
                        .map_or("success".to_owned(), |k| k.to_string())
                );
            }
        }
        if outcome.status() == Status::Pending {
            // A person reviews the queue; the application re-sends the call once approved.
            for waiting in approvals.queue.waiting() {
                println!(
                    "   (a person reviews {}: {} {}, and approves it)",
                    waiting.ticket, waiting.tool, waiting.arguments
                );
                approvals.queue.approve(&waiting.ticket);
            }
        }
        let label = match outcome.degraded_by() {
            Some(kind) => format!("fallback ({kind})"),
            None => outcome
                .error_kind()
                .map_or_else(|| outcome.status().to_string(), |k| k.to_string()),
        };
        *tally.entry(label).or_default() += 1;
    }

    println!("\n{} calls, none crashed the agent:", script.len());
    for (label, count) in &tally {
        println!("  {label:<24} {count}");
    }
    Ok(())
}

/// The envelope as the model sees it, minus `expected_schema` (it repeats the tool's schema,
/// which is long to print here).
trait Printable {
    fn to_model_string_without_schema(&self) -> String;
}

impl Printable for Outcome {
    fn to_model_string_without_schema(&self) -> String {
        let mut envelope = self.to_model_json();
        if let Some(obj) = envelope.as_object_mut() {
            if obj.remove("expected_schema").is_some() {
                obj.insert(
                    "expected_schema".into(),
                    toolwright::serde_json::Value::String("{...}".into()),
                );
            }
        }
        envelope.to_string()
    }
}
