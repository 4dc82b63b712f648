use toolwright::prelude::*;

/// Look up an airport.
#[tool]
async fn get_airport(
    /// IATA code.
    #[arg(pattern = "^[A-Z{3}$")]
    code: String,
) -> Result<String, ToolError> {
    Ok(code)
}

fn main() {}
