use toolwright::prelude::*;

fn not_blank(value: &str) -> bool {
    !value.trim().is_empty()
}

/// Look up a customer.
#[tool]
async fn get_customer(
    /// The customer's email address.
    #[arg(validate = not_blank)]
    email: String,
) -> Result<String, ToolError> {
    Ok(email)
}

fn main() {}
