use toolwright::prelude::*;

struct Orders;

#[toolset]
impl Orders {
    /// Close the order book.
    #[tool(idempotent = true)]
    fn close(self) {}
}

fn main() {}
