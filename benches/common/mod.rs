//! The tool and the calls both dispatch benches measure.
//!
//! The tool takes three arguments with a rule each and is idempotent (`read_only`), so a
//! successful call runs the whole pipeline: lookup, typed parse, field rules, one bounded
//! attempt with panic containment, and interpretation of the result into the envelope's data.

use serde::Serialize;
use toolwright::prelude::*;

/// A shipping quote.
#[derive(Serialize, schemars::JsonSchema)]
pub struct Quote {
    pub carrier: &'static str,
    pub price_cents: u32,
    pub days: u8,
}

/// Quote the price of shipping a parcel.
#[tool(read_only, timeout_ms = 2000)]
pub async fn quote_shipping(
    /// Destination country code.
    #[arg(length(min = 2, max = 2))]
    country: String,
    /// Weight in grams.
    #[arg(range(min = 1, max = 30000))]
    weight_grams: u32,
    /// Delivery speed.
    #[arg(one_of = ["standard", "express"])]
    speed: String,
) -> Result<Quote, ToolError> {
    let express = speed == "express";
    Ok(Quote {
        carrier: if country == "US" { "usps" } else { "dhl" },
        price_cents: 450 + weight_grams / 10 * if express { 3 } else { 1 },
        days: if express { 1 } else { 4 },
    })
}

/// A valid call's argument text.
pub const VALID: &str = r#"{"country":"DE","weight_grams":1200,"speed":"express"}"#;

/// Two field-rule violations (typed parse succeeds, both rules fail, both reported).
pub const TWO_RULE_VIOLATIONS: &str = r#"{"country":"DEU","weight_grams":50000,"speed":"express"}"#;

/// One shape failure: a string where an integer belongs, found by the jsonschema slow path.
pub const SHAPE_FAILURE: &str = r#"{"country":"DE","weight_grams":"1200","speed":"express"}"#;

pub fn registry() -> Registry {
    Registry::builder()
        .tool(QuoteShipping)
        .build()
        .expect("the bench registry builds")
}

pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a current-thread runtime")
}

/// The floor: what any hand-written dispatcher must do at least. Parse the text into the typed
/// arguments, call the function, serialize its result.
pub async fn floor(text: &str) -> String {
    let args: QuoteShippingArgs = serde_json::from_str(text).expect("valid arguments");
    let QuoteShippingArgs {
        country,
        weight_grams,
        speed,
    } = args;
    let quote = quote_shipping(country, weight_grams, speed)
        .await
        .expect("the tool succeeds");
    serde_json::to_string(&quote).expect("a quote serializes")
}

/// The call a provider adapter hands over: owned strings, parsed from the provider's response.
pub fn tool_call(text: &str) -> ToolCall {
    ToolCall::new("call_1", "quote_shipping", text)
}

/// The same work through the registry, building the `ToolCall` from borrowed text first (three
/// small allocations a provider adapter has usually already paid for).
pub async fn through_registry(registry: &Registry, text: &str) -> Outcome {
    registry.call(tool_call(text)).await
}
