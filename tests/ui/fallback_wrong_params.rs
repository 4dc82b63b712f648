use toolwright::prelude::*;

/// A fallback that forgot the tool's second parameter.
async fn cached_quote(country: String) -> Result<String, ToolError> {
    Ok(country)
}

/// Quote shipping to a country.
#[tool(read_only, fallback = cached_quote)]
async fn quote(country: String, weight_grams: u32) -> Result<String, ToolError> {
    Ok(format!("{country} {weight_grams}"))
}

fn main() {}
