use toolwright::prelude::*;

struct Order {
    id: String,
}

/// Look up an order.
#[tool]
async fn get_order(order_id: String) -> Result<Vec<Order>, ToolError> {
    Ok(vec![Order { id: order_id }])
}

fn main() {}
