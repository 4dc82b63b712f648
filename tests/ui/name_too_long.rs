use toolwright::prelude::*;

/// Look up an order.
#[tool(name = "get_order_by_its_identifier_and_return_every_detail_the_store_keeps")]
async fn get_order(order_id: String) -> Result<String, ToolError> {
    Ok(order_id)
}

fn main() {}
