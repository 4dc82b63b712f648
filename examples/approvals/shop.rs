//! The shop behind the review page: a refund tool that waits for a person's approval, the
//! ledger of the refunds that ran, and customers' calls left waiting so the page has work on
//! it. The browser test (tests/it/guard_approval_page.rs) includes this file too, so it re-sends the
//! very calls the page shows.
#![allow(dead_code)]

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use toolwright::conversation::ConversationStore;
use toolwright::prelude::*;
use toolwright::MemoryStore;

/// How many refunds ran, per order id: what the tool did, not what the page claims.
#[derive(Clone, Default)]
pub struct Ledger(Arc<Mutex<HashMap<String, u32>>>);

impl Ledger {
    /// How many times a refund of `order` ran.
    pub fn ran(&self, order: &str) -> u32 {
        self.lock().get(order).copied().unwrap_or(0)
    }

    fn add(&self, order: &str) {
        *self.lock().entry(order.to_owned()).or_insert(0) += 1;
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, u32>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[derive(serde::Serialize, schemars::JsonSchema)]
pub struct Order {
    id: String,
}

/// Find the customer's orders.
#[tool(read_only, grounds(order = "id"))]
pub async fn find_orders(
    /// The customer.
    customer: String,
) -> Result<Vec<Order>, ToolError> {
    Ok(vec![Order {
        id: format!("O-{customer}"),
    }])
}

/// Refund part of an order to the customer's card (a person approves each refund).
#[tool(requires_approval, idempotent = false)]
pub async fn refund_order(
    _key: IdempotencyKey,
    /// The order to refund, as `find_orders` returned it.
    #[arg(grounded = "order")]
    order_id: String,
    /// Amount in dollars.
    #[arg(range(min = 0.01, max = 500.0))]
    amount: f64,
    /// Why, in the customer's words.
    #[arg(length(max = 200))]
    reason: String,
    /// The card's last four digits; reviewers see it redacted.
    #[arg(sensitive, pattern = "^[0-9]{4}$")]
    card_last4: String,
    ledger: State<Ledger>,
) -> Result<String, ToolError> {
    ledger.add(&order_id);
    Ok(format!(
        "refunded {amount} on {order_id} to the card ending {card_last4}: {reason}"
    ))
}

/// The registry the page approves calls of.
pub fn registry(ledger: &Ledger) -> Registry {
    Registry::builder()
        .tool(FindOrders)
        .tool(RefundOrder)
        .state(ledger.clone())
        .idempotency_store(MemoryStore::new())
        .build()
        .expect("the shop's tools are valid")
}

/// A customer's conversation, kept in `store`.
pub fn session(store: &Arc<dyn ConversationStore>, conversation: &str, principal: &str) -> Session {
    Session::new(conversation)
        .with_principal(principal)
        .with_store(Arc::clone(store))
}

/// The model's refund call.
pub fn refund(call_id: &str, order: &str, amount: f64, reason: &str) -> ToolCall {
    let arguments = serde_json::json!({
        "order_id": order,
        "amount": amount,
        "reason": reason,
        "card_last4": "4242",
    });
    ToolCall::new(call_id, "refund_order", arguments.to_string())
}

/// A call waiting for a person: the session and call the model sends again once it is decided.
pub struct Asked {
    pub session: Session,
    pub call: ToolCall,
    pub ticket: String,
}

/// `customer` finds their order, then asks for a refund of `amount`: the call comes back
/// `pending` with a ticket.
pub async fn ask(
    registry: &Registry,
    store: &Arc<dyn ConversationStore>,
    customer: &str,
    amount: f64,
    reason: &str,
) -> Result<Asked, String> {
    let session = session(store, &format!("conv-{customer}"), customer);
    let find = ToolCall::new(
        "find-1",
        "find_orders",
        serde_json::json!({ "customer": customer }).to_string(),
    );
    let found = registry.call_in(&session, find).await;
    if !found.is_ok() {
        return Err(found.to_model_string());
    }
    let call = refund("refund-1", &format!("O-{customer}"), amount, reason);
    let outcome = registry.call_in(&session, call.clone()).await;
    match outcome.to_model_json()["data"]["ticket"].as_str() {
        Some(ticket) if outcome.status() == Status::Pending => Ok(Asked {
            session,
            call,
            ticket: ticket.to_owned(),
        }),
        _ => Err(outcome.to_model_string()),
    }
}

/// A few customers' refunds, waiting.
pub async fn seed(
    registry: &Registry,
    store: &Arc<dyn ConversationStore>,
) -> Result<Vec<Asked>, String> {
    let mut asked = Vec::new();
    for (customer, amount, reason) in [
        ("ann", 49.0, "the desk arrived damaged"),
        (
            "bob",
            480.0,
            "never delivered <b>twice</b> & \"lost\" <script>alert(1)</script>",
        ),
        ("cat", 120.0, "wrong colour"),
    ] {
        asked.push(ask(registry, store, customer, amount, reason).await?);
    }
    Ok(asked)
}
