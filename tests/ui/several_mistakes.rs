use toolwright::prelude::*;

// Every mistake below is reported in one compile.
#[tool(name = "refund order", timeout_ms = 0, idempotnet = true)]
fn refund_order<T>(
    /// Amount in dollars.
    #[arg(range(min = 500, max = 1), lenght(max = 3))]
    amount: f64,
    /// The order.
    #[arg(pattern = "(")]
    order_id: String,
) -> Result<String, ToolError> {
    Ok(format!("{order_id}: {amount}"))
}

fn main() {}
