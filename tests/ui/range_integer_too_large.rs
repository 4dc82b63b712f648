use toolwright::prelude::*;

/// Count items.
#[tool(read_only)]
async fn count(
    /// How many.
    #[arg(range(max = 18446744073709551616))]
    n: u64,
) -> Result<u64, ToolError> {
    Ok(n)
}

fn main() {}
