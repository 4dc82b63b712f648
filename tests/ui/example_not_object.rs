use toolwright::prelude::*;

/// Search orders by free text.
#[tool(read_only, example = r#"["late orders", 5]"#)]
async fn search_orders(query: String, max_results: u32) -> Result<String, ToolError> {
    Ok(format!("{query}{max_results}"))
}

fn main() {}
