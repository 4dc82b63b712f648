use toolwright::prelude::*;

/// Refund an order.
#[tool(idempotent = false, retries = 2)]
async fn refund_order(order_id: String, amount: f64) -> Result<String, ToolError> {
    Ok(format!("{order_id}: {amount}"))
}

fn main() {}
