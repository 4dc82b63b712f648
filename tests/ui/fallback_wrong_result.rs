use toolwright::prelude::*;

/// The cached price: a number, where the tool answers with text.
async fn cached_price(sku: String) -> Result<u32, ToolError> {
    Ok(sku.len() as u32)
}

/// The price of a SKU.
#[tool(read_only, fallback = cached_price)]
async fn price(sku: String) -> Result<String, ToolError> {
    Ok(sku)
}

fn main() {}
