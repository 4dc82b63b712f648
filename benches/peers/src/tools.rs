//! The tools every framework serves, their argument texts, and the work their bodies do.
//!
//! The argument structs are the ones `#[tool]` generates (`QuoteShippingArgs`,
//! `CreateShipmentArgs`): rmcp's `Parameters<..>`, rig's `Tool::Args` and the hand-written floor
//! deserialize into the same types, so every side runs the same serde code and the differences
//! are the frameworks' own. The `#[arg(...)]` rules exist only on toolwright's side: rmcp and rig
//! check types, not bounds, patterns or enumerations written as strings.

use toolwright::prelude::*;

/// A shipping quote: three strings.
#[data(output)]
#[derive(Debug, Clone)]
pub struct Quote {
    /// Who carries the parcel.
    pub carrier: String,
    /// The price, formatted.
    pub price: String,
    /// When it arrives.
    pub eta: String,
}

/// The body of the 3-argument tool, shared by every framework.
pub fn quote(country: &str, weight_grams: u32, speed: &str) -> Quote {
    let express = speed == "express";
    let cents = 450 + weight_grams / 10 * if express { 3 } else { 1 };
    Quote {
        carrier: if country == "US" { "usps" } else { "dhl" }.to_owned(),
        price: format!("{}.{:02} EUR", cents / 100, cents % 100),
        eta: if express { "1 day" } else { "4 days" }.to_owned(),
    }
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
    Ok(quote(&country, weight_grams, &speed))
}

/// How fast a shipment travels.
#[data]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Speed {
    /// Three to five working days.
    Standard,
    /// Two days.
    Express,
    /// The next working day.
    NextDay,
}

/// A postal address.
#[data(input)]
#[derive(Debug, Clone)]
pub struct Address {
    /// Street and number.
    pub street: String,
    /// City.
    pub city: String,
    /// Two-letter country code.
    pub country: String,
}

/// A parcel's size in centimetres.
#[data(input)]
#[derive(Debug, Clone)]
pub struct Dimensions {
    /// Length.
    pub length_cm: u32,
    /// Width.
    pub width_cm: u32,
    /// Height.
    pub height_cm: u32,
}

/// One parcel of a shipment.
#[data(input)]
#[derive(Debug, Clone)]
pub struct Parcel {
    /// Weight in grams.
    pub weight_grams: u32,
    /// Its size, when known.
    pub dimensions: Option<Dimensions>,
}

/// A currency the insurer accepts.
#[data]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "UPPERCASE")]
pub enum Currency {
    /// Euro.
    Eur,
    /// US dollar.
    Usd,
}

/// Insurance bought with a shipment.
#[data(input)]
#[derive(Debug, Clone)]
pub struct Insurance {
    /// Insured value in cents.
    pub amount_cents: u64,
    /// Its currency.
    pub currency: Currency,
}

/// The body of the 6-argument tool, shared by every framework.
pub fn shipment(
    order_id: &str,
    from: &Address,
    to: &Address,
    parcels: &[Parcel],
    speed: Speed,
    insurance: Option<&Insurance>,
) -> Quote {
    // The billed weight: the larger of the real and the volumetric (length x width x height / 5).
    let grams: u32 = parcels
        .iter()
        .map(|p| {
            let volumetric = p
                .dimensions
                .as_ref()
                .map_or(0, |d| d.length_cm * d.width_cm * d.height_cm / 5);
            p.weight_grams.max(volumetric)
        })
        .sum();
    let insured = insurance.map_or(String::new(), |i| {
        format!(", insured {} {:?}", i.amount_cents / 100, i.currency)
    });
    let local = from.country == to.country && from.street.len() + to.street.len() < 200;
    Quote {
        carrier: if local { "post" } else { "dhl" }.to_owned(),
        price: format!("{order_id}: {grams} g{insured}"),
        eta: match speed {
            Speed::Standard => "4 days",
            Speed::Express => "2 days",
            Speed::NextDay => "1 day",
        }
        .to_owned(),
    }
}

/// [`shipment`] of the generated argument struct: what rmcp's, rig's and the floor's bodies call.
pub fn ship(args: &CreateShipmentArgs) -> Quote {
    shipment(
        &args.order_id,
        &args.from,
        &args.to,
        &args.parcels,
        args.speed,
        args.insurance.as_ref(),
    )
}

/// Book a shipment of one or more parcels for an order.
#[tool(idempotent = true, timeout_ms = 5000)]
pub async fn create_shipment(
    /// The order being shipped.
    #[arg(pattern = "^A[0-9]{4}$")]
    order_id: String,
    /// Where the parcels are picked up.
    from: Address,
    /// Where they go.
    to: Address,
    /// The parcels.
    #[arg(length(min = 1, max = 10))]
    parcels: Vec<Parcel>,
    /// How fast.
    speed: Speed,
    /// Optional insurance.
    insurance: Option<Insurance>,
) -> Result<Quote, ToolError> {
    Ok(shipment(
        &order_id,
        &from,
        &to,
        &parcels,
        speed,
        insurance.as_ref(),
    ))
}

/// A valid call of `quote_shipping`.
pub const QUOTE_VALID: &str = r#"{"country":"DE","weight_grams":1200,"speed":"express"}"#;

/// Three violations: a 3-letter country, a negative weight (a type error for `u32`), an unknown
/// speed. rmcp, rig and serde stop at the weight; toolwright reports all three.
pub const QUOTE_MALFORMED: &str = r#"{"country":"DEU","weight_grams":-5,"speed":"overnight"}"#;

/// A valid call of `create_shipment`.
pub const SHIPMENT_VALID: &str = r#"{"order_id":"A1234","from":{"street":"Hauptstr. 1","city":"Berlin","country":"DE"},"to":{"street":"1 Main St","city":"Boston","country":"US"},"parcels":[{"weight_grams":1200,"dimensions":{"length_cm":30,"width_cm":20,"height_cm":10}},{"weight_grams":800}],"speed":"next_day","insurance":{"amount_cents":25000,"currency":"EUR"}}"#;

/// Four violations: the order id's pattern, a number where the city's string belongs, a string
/// where a parcel's weight belongs, an unknown speed.
pub const SHIPMENT_MALFORMED: &str = r#"{"order_id":"B12","from":{"street":"Hauptstr. 1","city":"Berlin","country":"DE"},"to":{"street":"1 Main St","city":7,"country":"US"},"parcels":[{"weight_grams":"heavy"}],"speed":"warp"}"#;

/// The registry toolwright's sides call.
pub fn registry() -> Registry {
    Registry::builder()
        .tool(QuoteShipping)
        .tool(CreateShipment)
        .build()
        .unwrap_or_else(|e| panic!("the bench registry builds: {e}"))
}
