use toolwright::prelude::*;

/// Set a password.
#[tool(timeout_ms = 2000)]
async fn set_password(
    /// At least one digit.
    #[arg(pattern = "^(?=.*[0-9]).{8,}$")]
    password: String,
) -> Result<String, ToolError> {
    Ok(password)
}

fn main() {}
