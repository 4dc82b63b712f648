use toolwright::prelude::*;

/// Search orders.
#[tool(read_only, grounds(order = "lines..sku", customer))]
async fn search_orders(query: String) -> Result<Vec<String>, ToolError> {
    Ok(vec![query])
}

fn main() {}
