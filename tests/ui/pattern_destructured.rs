use toolwright::prelude::*;

/// Add two numbers.
#[tool]
async fn add((a, b): (i64, i64)) -> Result<i64, ToolError> {
    Ok(a + b)
}

fn main() {}
