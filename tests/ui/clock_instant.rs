use std::time::Instant;
use toolwright::prelude::*;

/// Report the laps of a run.
#[tool]
async fn laps(run: String, marks: Vec<Instant>) -> Result<String, ToolError> {
    let _ = marks;
    Ok(run)
}

fn main() {
    let _registry = Registry::builder().tool(Laps).build();
}
