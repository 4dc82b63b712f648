use toolwright::prelude::*;

/// Book seats.
#[tool]
async fn book_seats(
    /// Number of passengers.
    #[arg(range(min = 9, max = 1))]
    passengers: u32,
) -> Result<u32, ToolError> {
    Ok(passengers)
}

fn main() {}
