use toolwright::prelude::*;

type ApiResult<T> = Result<T, ToolError>;

/// Look up an order.
#[tool]
async fn get_order(order_id: String) -> ApiResult<String> {
    Ok(order_id)
}

fn main() {}
