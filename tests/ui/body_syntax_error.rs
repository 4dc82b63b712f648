use toolwright::prelude::*;

// A body that does not parse is the compiler's own error, once; the tool's uses are not.
/// Refund an order.
#[tool(timeout_ms = 2000)]
async fn refund_order(
    /// The order.
    #[arg(pattern = "^A[0-9]+$")]
    order_id: String,
) -> Result<String, ToolError> {
    let id = ;
    Ok(order_id)
}

fn main() {
    let registry = Registry::builder().tool(RefundOrder).build().unwrap();
    let _args = RefundOrderArgs { order_id: "A1".to_string() };
    let _outcome = registry.call(ToolCall::new("c1", "refund_order", "{}"));
}
