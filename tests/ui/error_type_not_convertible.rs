use toolwright::prelude::*;

/// Parse a quantity.
#[tool]
async fn parse_quantity(text: String) -> Result<u32, std::num::ParseIntError> {
    text.parse()
}

fn main() {}
