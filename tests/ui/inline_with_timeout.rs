use toolwright::prelude::*;

/// Add two numbers.
#[tool(read_only, blocking = false, timeout_ms = 100)]
fn add(a: i64, b: i64) -> i64 {
    a + b
}

fn main() {}
