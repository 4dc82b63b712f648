#![deny(unused_lifetimes, single_use_lifetimes, elided_lifetimes_in_paths, unused_qualifications)]

//! Every supported parameter kind in one tool: numbers, bool, strings, options, lists, maps, a
//! user struct, and the three injected kinds, which never appear in the schema.

use std::collections::HashMap;

use toolwright::prelude::*;

#[derive(serde::Deserialize, serde::Serialize, schemars::JsonSchema)]
struct Address {
    street: String,
    city: String,
}

#[derive(serde::Serialize, schemars::JsonSchema)]
struct Summary {
    fields: usize,
}

struct Pricing {
    currency: &'static str,
}

/// Accept one argument of every supported kind.
#[tool(timeout_ms = 500, idempotent = true, retries = 2)]
async fn every_kind(
    key: IdempotencyKey,
    context: ToolContext,
    pricing: State<Pricing>,
    /// A signed integer.
    a: i8,
    b: i16,
    c: i32,
    d: i64,
    e: u8,
    f: u16,
    g: u32,
    h: u64,
    i: usize,
    j: f32,
    k: f64,
    l: bool,
    m: String,
    n: Option<u32>,
    o: Option<String>,
    p: Vec<String>,
    q: Vec<u32>,
    r: HashMap<String, u32>,
    s: HashMap<String, Vec<String>>,
    t: Address,
    u: Option<Address>,
    v: Vec<Address>,
    r#type: String,
) -> Result<Summary, ToolError> {
    let _ = (key.as_str(), context.call_id(), pricing.currency);
    let _ = (a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p, q, r, s, t, u, v, r#type);
    Ok(Summary { fields: 23 })
}

/// Injected parameters only: the model sends `{}`.
#[tool(read_only)]
pub async fn no_arguments(context: ToolContext) -> Result<Vec<String>, ToolError> {
    Ok(vec![context.tool().to_owned()])
}

fn main() {
    let registry = Registry::builder()
        .tool(EveryKind)
        .tool(NoArguments)
        .state(Pricing { currency: "EUR" })
        .build()
        .unwrap();
    // Injected parameters never reach the schema; `r#type` is the property `type`.
    let schema = registry.spec("every_kind").unwrap().input_schema();
    let properties = schema["properties"].as_object().unwrap();
    assert_eq!(properties.len(), 23);
    for injected in ["key", "context", "pricing"] {
        assert!(!properties.contains_key(injected), "{injected} leaked into the schema");
    }
    assert!(properties.contains_key("type"));
    let schema = registry.spec("no_arguments").unwrap().input_schema();
    assert!(schema["properties"].as_object().map_or(true, |p| p.is_empty()));
    // The functions stay callable as written.
    let _ = every_kind;
    let _ = no_arguments;
}
