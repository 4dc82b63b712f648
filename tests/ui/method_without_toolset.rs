use toolwright::prelude::*;

struct Orders;

impl Orders {
    /// Look up an order.
    #[tool]
    async fn get_order(&self, order_id: String) -> Result<String, ToolError> {
        Ok(order_id)
    }
}

fn main() {}
