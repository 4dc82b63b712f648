#![deny(
    missing_docs,
    missing_debug_implementations,
    missing_copy_implementations,
    unit_bindings,
    unused_results,
    unreachable_pub,
    unused_lifetimes,
    single_use_lifetimes,
    unused_qualifications,
    trivial_casts,
    elided_lifetimes_in_paths
)]

//! The lints a user may deny on their crate hold for what `#[tool]` generates: its items stand
//! at the function's `fn` token, where rustc treats them as the user's own code.

use toolwright::prelude::*;

/// Look up an order.
#[tool(timeout_ms = 2000, read_only, fallback = cached_order)]
pub async fn get_order(
    /// The order's id.
    #[arg(length(min = 1, max = 20), pattern = "^A[0-9]+$")]
    order_id: String,
    /// How many lines.
    #[arg(range(min = 1, max = 50), default = 5)]
    limit: u32,
    /// Only open orders.
    open: Option<bool>,
) -> Result<Vec<String>, ToolError> {
    Ok(vec![format!("{order_id}{limit}{open:?}")])
}

/// The order as last seen.
pub async fn cached_order(
    order_id: String,
    limit: u32,
    open: Option<bool>,
) -> Result<Vec<String>, ToolError> {
    Ok(vec![format!("{order_id}{limit}{open:?}")])
}

/// Nothing to ask.
#[tool]
pub fn ping() -> String {
    "pong".to_owned()
}

fn main() {
    let registry = Registry::builder().tool(GetOrder).tool(Ping).build();
    assert!(registry.is_ok());
}
