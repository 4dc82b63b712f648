use toolwright::prelude::*;

/// Ship an order to an address (the type's name is misspelt).
#[tool]
async fn ship_order(order_id: String, address: Adress) -> Result<String, ToolError> {
    let _ = address;
    Ok(order_id)
}

fn main() {}
