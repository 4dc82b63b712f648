use toolwright::prelude::*;

/// Refund an order.
#[tool(idempotent = false)]
async fn refund_order(
    #[arg(pattern = "^[a-z]+$")]
    key: IdempotencyKey,
    /// The order to refund.
    order_id: String,
) -> Result<String, ToolError> {
    Ok(format!("{key}: {order_id}"))
}

fn main() {}
