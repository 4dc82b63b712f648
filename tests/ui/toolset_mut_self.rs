use toolwright::prelude::*;

struct Counter {
    count: u64,
}

#[toolset]
impl Counter {
    /// Count one more.
    #[tool(idempotent = true)]
    async fn bump(&mut self) -> u64 {
        self.count += 1;
        self.count
    }
}

fn main() {}
