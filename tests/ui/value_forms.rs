use toolwright::prelude::*;

/// Find free appointment slots.
#[tool(idempotent = "yes")]
async fn search_slots(
    /// The kind of visit.
    #[arg(one_of = "gp")]
    visit: String,
) -> Result<String, ToolError> {
    Ok(visit)
}

fn main() {}
