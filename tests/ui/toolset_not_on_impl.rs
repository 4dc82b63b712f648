use toolwright::prelude::*;

#[toolset]
struct Orders;

fn main() {}
