use toolwright::prelude::*;

fn cached_refund() {}

/// Refund an order.
#[tool(requires_approval, fallback = cached_refund)]
async fn refund_order(order_id: String) -> Result<String, ToolError> {
    Ok(order_id)
}

fn main() {}
