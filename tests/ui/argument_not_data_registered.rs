use toolwright::prelude::*;

struct Address {
    street: String,
    city: String,
}

/// Ship an order to an address.
#[tool]
async fn ship_order(order_id: String, address: Address) -> Result<String, ToolError> {
    Ok(format!("{order_id} to {}, {}", address.street, address.city))
}

// Registered and its arguments built by hand, as a user's main would: still the one error.
fn main() {
    let _registry = Registry::builder().tool(ShipOrder).build();
    let _args = ShipOrderArgs {
        order_id: "A1".to_string(),
        address: Address { street: "1 Main St".to_string(), city: "Springfield".to_string() },
    };
}
