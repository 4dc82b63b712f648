use toolwright::prelude::*;

/// Rebuild the search index.
#[tool(read_only, task = "always", timeout_ms = 600000)]
async fn reindex() -> Result<String, ToolError> {
    Ok("done".into())
}

/// Rebuild the search index (declared as MCP writes it).
#[tool(read_only, task = "optional")]
async fn reindex_optional() -> Result<String, ToolError> {
    Ok("done".into())
}

/// Rebuild the search index (as a boolean).
#[tool(read_only, task = true)]
async fn reindex_bool() -> Result<String, ToolError> {
    Ok("done".into())
}

fn main() {}
