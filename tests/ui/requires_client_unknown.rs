use toolwright::prelude::*;

/// Summarise with the client's model.
#[tool(read_only, requires_client = ["sampling", "tools"])]
async fn summarise(ctx: ToolContext) -> Result<String, ToolError> {
    let _ = ctx;
    Ok(String::new())
}

/// Read the roots, twice required.
#[tool(read_only, requires_client = ["roots", "roots"])]
async fn roots(ctx: ToolContext) -> Result<String, ToolError> {
    let _ = ctx;
    Ok(String::new())
}

fn main() {}
