use toolwright::prelude::*;

struct Orders;

// One mistake in a toolset (a receiver the registry cannot lend) is one error: the set is still
// registered, its tools' arguments built and the registry called without a second error.
#[toolset]
impl Orders {
    /// Look up an order.
    #[tool(read_only)]
    async fn get_order(&self, order_id: String) -> String {
        order_id
    }

    /// Cancel an order.
    #[tool(idempotent = true)]
    async fn cancel(&mut self, order_id: String) -> Result<(), ToolError> {
        let _ = order_id;
        Ok(())
    }
}

fn main() {
    let registry = Registry::builder().toolset(Orders).build().unwrap();
    let _args = CancelArgs { order_id: "A1".to_string() };
    let _outcome = registry.call(ToolCall::new("c1", "cancel", "{}"));
}
