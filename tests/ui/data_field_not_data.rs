use toolwright::prelude::*;

// A `#[toolwright::data]` struct with a field of a plain struct: the field's type is the mistake.
struct Address {
    street: String,
    city: String,
}

#[toolwright::data(input)]
struct Shipment {
    order_id: String,
    address: Address,
}

/// Ship an order.
#[tool]
async fn ship_order(shipment: Shipment) -> Result<String, ToolError> {
    Ok(format!("{} to {}, {}", shipment.order_id, shipment.address.street, shipment.address.city))
}

fn main() {}
