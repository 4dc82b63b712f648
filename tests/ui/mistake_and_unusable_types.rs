use toolwright::prelude::*;

struct Order {
    id: String,
}

struct Filter;

// Beside a mistake in the attribute, unusable parameter and result types are still reported,
// once each at the type, as when the attribute is right.
/// Look up an order.
#[tool(timeout_ms = 0)]
async fn get_order(order_id: String, filter: Filter) -> Result<Vec<Order>, ToolError> {
    let _ = filter;
    Ok(vec![Order { id: order_id }])
}

fn main() {
    let _args = GetOrderArgs { order_id: "A1".to_string(), filter: Filter };
}
