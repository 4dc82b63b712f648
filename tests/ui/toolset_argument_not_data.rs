use toolwright::prelude::*;

struct Address {
    street: String,
    city: String,
}

struct Shipping;

// A method of a toolset taking a plain struct: one error, at the parameter.
#[toolset]
impl Shipping {
    /// Ship an order to an address.
    #[tool]
    async fn ship_order(&self, order_id: String, address: Address) -> Result<String, ToolError> {
        Ok(format!("{order_id} to {}, {}", address.street, address.city))
    }
}

fn main() {
    let _registry = Registry::builder().toolset(Shipping).build();
}
