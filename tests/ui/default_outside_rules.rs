use toolwright::prelude::*;

/// Find free appointment slots.
#[tool(read_only)]
async fn search_slots(
    /// How many slots to return.
    #[arg(range(min = 1, max = 10), default = 50)]
    max_results: u32,
    /// The kind of visit.
    #[arg(one_of = ["gp", "nurse"], default = "dentist")]
    visit: String,
) -> Result<u32, ToolError> {
    let _ = visit;
    Ok(max_results)
}

fn main() {}
