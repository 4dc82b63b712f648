use toolwright::prelude::*;

/// Run a tool the conversation found.
#[tool]
async fn run_found(
    /// The tool's name.
    #[arg(grounded = "toolwright.found_tool")]
    tool: String,
) -> Result<String, ToolError> {
    Ok(tool)
}

fn main() {}
