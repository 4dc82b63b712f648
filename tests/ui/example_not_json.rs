use toolwright::prelude::*;

/// Search orders by free text.
#[tool(read_only, example = "{'query': 'late orders'}")]
async fn search_orders(query: String, max_results: u32) -> Result<String, ToolError> {
    Ok(format!("{query}{max_results}"))
}

fn main() {}
