use toolwright::prelude::*;

/// Book seats.
#[tool]
async fn book_seats(
    /// Number of passengers.
    #[arg(length(max = 9))]
    passengers: u32,
) -> Result<u32, ToolError> {
    Ok(passengers)
}

fn main() {}
