use toolwright::prelude::*;

/// Look up an order.
#[tool(timeout_ms = 0)]
async fn get_order(order_id: String) -> Result<String, ToolError> {
    Ok(order_id)
}

fn main() {}
