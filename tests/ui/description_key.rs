use toolwright::prelude::*;

// The description written as a key, without a doc comment: one mistake, one error, at the key.
#[tool(description = "Look up an order.")]
async fn get_order(order_id: String) -> Result<String, ToolError> {
    Ok(order_id)
}

fn main() {
    let _ = Registry::builder().tool(GetOrder).build();
}
