use toolwright::prelude::*;

/// Look up an order.
#[tool]
async fn get_order(
    /// The order id.
    #[arg(range(min = 1, max = 9))]
    order_id: String,
) -> Result<String, ToolError> {
    Ok(order_id)
}

fn main() {}
