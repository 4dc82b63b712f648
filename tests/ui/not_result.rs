use toolwright::prelude::*;

/// Look up an order.
#[tool]
async fn get_order(order_id: String) -> String {
    order_id
}

fn main() {}
