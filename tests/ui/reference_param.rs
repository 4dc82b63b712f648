use toolwright::prelude::*;

/// Look up an order.
#[tool]
async fn get_order(order_id: &str) -> Result<String, ToolError> {
    Ok(order_id.to_owned())
}

fn main() {}
