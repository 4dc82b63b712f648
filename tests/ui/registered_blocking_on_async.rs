use toolwright::prelude::*;

// One mistake in the attribute (`blocking` on an `async fn`) is one error: the tool is still
// registered, its arguments built and the registry called without a second error at each use.
/// Refund an order.
#[tool(timeout_ms = 2000, blocking = false)]
async fn refund_order(order_id: String, amount: f64) -> Result<String, ToolError> {
    Ok(format!("{order_id}: {amount}"))
}

fn main() {
    let registry = Registry::builder().tool(RefundOrder).build().unwrap();
    let _args = RefundOrderArgs { order_id: "A1".to_string(), amount: 5.0 };
    let _outcome = registry.call(ToolCall::new("c1", "refund_order", "{}"));
}
