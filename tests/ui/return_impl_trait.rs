use toolwright::prelude::*;

/// Look up an order.
#[tool]
fn get_order(order_id: String) -> impl serde::Serialize {
    order_id
}

fn main() {}
