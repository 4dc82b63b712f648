use toolwright::prelude::*;

/// Look up an order.
#[tool]
fn get_order(order_id: String) -> Result<String, ToolError> {
    Ok(order_id)
}

fn main() {}
