use toolwright::prelude::*;

/// Search orders.
#[tool]
async fn search_orders(
    /// How many orders to return.
    #[arg(maximum = 20)]
    limit: u32,
) -> Result<Vec<String>, ToolError> {
    Ok(vec![limit.to_string()])
}

fn main() {}
