use std::time::Duration;
use toolwright::prelude::*;

/// Wait for a job, up to a timeout.
#[tool]
async fn wait_for(job: String, timeout: Option<Duration>) -> Result<String, ToolError> {
    let _ = timeout;
    Ok(job)
}

/// Hold a seat, written as a path.
#[tool]
async fn hold(seat: String, hold_for: core::time::Duration) -> Result<String, ToolError> {
    let _ = hold_for;
    Ok(seat)
}

fn main() {
    let _registry = Registry::builder().tool(WaitFor).tool(Hold).build();
}
