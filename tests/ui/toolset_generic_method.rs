use toolwright::prelude::*;

struct Orders;

#[toolset]
impl Orders {
    /// Echo a value back.
    #[tool(read_only)]
    async fn echo<T: serde::Serialize>(&self, value: String) -> String {
        value
    }
}

fn main() {}
