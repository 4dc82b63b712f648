use toolwright::prelude::*;

// Derives serde's `Deserialize` but not `JsonSchema`: still one error, at the parameter.
#[derive(serde::Deserialize)]
struct Address {
    street: String,
    city: String,
}

/// Ship an order to an address.
#[tool]
async fn ship_order(order_id: String, address: Address) -> Result<String, ToolError> {
    Ok(format!("{order_id} to {}, {}", address.street, address.city))
}

fn main() {}
