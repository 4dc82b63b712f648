use toolwright::prelude::*;

/// Rebuild the search index: over MCP it runs only as a task.
#[tool(read_only, task = "required", timeout_ms = 600000)]
async fn reindex() -> Result<String, ToolError> {
    Ok("done".into())
}

fn main() {
    let registry = Registry::builder().tool(Reindex).build().unwrap();
    let spec = registry.spec("reindex").unwrap();
    assert!(spec.is_task() && spec.is_task_only());
}
