use toolwright::prelude::*;

/// Look up an order.
#[tool(timeout_ms = "2s")]
async fn get_order(order_id: String) -> Result<String, ToolError> {
    Ok(order_id)
}

/// Look up a customer.
#[tool(timeout = "1.5s")]
async fn get_customer(customer_id: String) -> Result<String, ToolError> {
    Ok(customer_id)
}

fn main() {}
