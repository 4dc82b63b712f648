use toolwright::prelude::*;

/// Refund an order.
#[tool(requires_approval)]
async fn refund_order(order_id: String) -> Result<String, ToolError> {
    Ok(order_id)
}

fn main() {}
