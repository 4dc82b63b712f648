use toolwright::prelude::*;

struct Orders;

#[toolset]
impl Orders {
    /// Look up an order.
    #[tool(read_only)]
    async fn get_order(&self, order_id: String) -> String {
        order_id
    }

    /// Look up an order, the old way.
    #[tool(read_only, name = "get_order")]
    async fn get_order_v1(&self, order_id: String) -> String {
        order_id
    }
}

fn main() {
    let _ = Registry::builder().toolset(Orders).build();
}
