use toolwright::prelude::*;

/// Refund an order.
#[tool]
async fn refund_order(
    /// The order, as a tool returned it.
    #[arg(grounded = "order")]
    order_id: String,
) -> Result<String, ToolError> {
    Ok(order_id)
}

fn main() {}
