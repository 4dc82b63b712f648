use toolwright::prelude::*;

/// Refund an order.
#[tool(timeout_ms = 2000)]
async fn refund_order(
    /// The order.
    #[arg(pattern = "^A[0-9]+$")]
    #[arg(length(max = 20, max = 30), pattern = "^B[0-9]+$")]
    order_id: String,
) -> Result<String, ToolError> {
    Ok(order_id)
}

fn main() {
    let _args = RefundOrderArgs { order_id: "A1".to_string() };
}
