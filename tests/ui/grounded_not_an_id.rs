use toolwright::prelude::*;

/// Cancel an order.
#[tool]
async fn cancel_order(
    /// Whether to notify the customer.
    #[arg(grounded = "order")]
    notify: bool,
) -> Result<String, ToolError> {
    Ok(notify.to_string())
}

fn main() {}
