//! Whatever a model sends, `registry.call` answers with a classified outcome and never panics.
//!
//! The input's first byte picks the tool name (real ones, near misses, garbage), the rest is the
//! argument text. `cargo +nightly fuzz run call -- -max_total_time=300`.

#![no_main]

use std::collections::HashMap;
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use toolwright::prelude::*;

/// A delivery address.
#[toolwright::data]
struct Address {
    /// Street and number.
    street: String,
    /// Two-letter country code.
    country: String,
    /// Floors above ground.
    floor: Option<i8>,
}

/// How fast.
#[toolwright::data]
#[serde(rename_all = "snake_case")]
enum Speed {
    /// A few days.
    Standard,
    /// The next working day.
    NextDay,
}

/// An offer.
#[toolwright::data(output)]
struct Offer {
    cents: u64,
    days: u8,
}

/// Quote a shipment.
#[tool(read_only, validate = sane)]
async fn quote(
    /// The order.
    #[arg(pattern = "^A[0-9]{4}$", length(max = 5))]
    order_id: String,
    /// Where to.
    to: Address,
    /// How fast.
    speed: Speed,
    /// Weight in grams.
    #[arg(range(min = 1, max = 30000))]
    grams: u32,
    /// Parcel sizes in cm.
    #[arg(length(min = 1, max = 3))]
    sizes: Vec<f64>,
    /// Labels.
    labels: HashMap<String, String>,
    /// The carrier.
    #[arg(one_of = ["dhl", "ups"], default = "dhl")]
    carrier: String,
    /// A note.
    note: Option<String>,
) -> Result<Offer, ToolError> {
    let _ = (to, labels, carrier, note, order_id);
    Ok(Offer {
        cents: u64::from(grams)
            * if matches!(speed, Speed::NextDay) {
                3
            } else {
                1
            },
        days: sizes.len() as u8,
    })
}

fn sane(args: &QuoteArgs) -> Result<(), ToolError> {
    if args.sizes.iter().any(|s| !s.is_finite() || *s <= 0.0) {
        return Err(ToolError::invalid("every size must be a positive number"));
    }
    Ok(())
}

/// Refund an order.
#[tool(idempotent = true)]
async fn refund(
    /// The order, as a tool returned it.
    #[arg(grounded = "order")]
    order_id: String,
    /// Cents.
    #[arg(range(min = 1))]
    cents: i64,
) -> Result<String, ToolError> {
    Ok(format!("{order_id} {cents}"))
}

/// Nothing to send.
#[tool(read_only)]
async fn ping() -> Result<(), ToolError> {
    Ok(())
}

const NAMES: &[&str] = &[
    "quote", "refund", "ping", "quot", "", "quote\0", "💥", "QUOTE",
];

struct World {
    runtime: tokio::runtime::Runtime,
    registry: Registry,
    session: Session,
}

fn world() -> &'static World {
    static WORLD: OnceLock<World> = OnceLock::new();
    WORLD.get_or_init(|| {
        let session = Session::new("fuzz");
        session.ground("order", "A1001");
        World {
            runtime: tokio::runtime::Builder::new_current_thread()
                .enable_time()
                .build()
                .expect("a runtime"),
            registry: Registry::builder()
                .tool(Quote)
                .tool(Refund)
                .tool(Ping)
                .build()
                .expect("the registry builds"),
            session,
        }
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let name = NAMES[usize::from(pick) % NAMES.len()];
    let text = String::from_utf8_lossy(rest).into_owned();
    let world = world();
    let outcome = world.runtime.block_on(
        world
            .registry
            .call_in(&world.session, ToolCall::new("c", name, text)),
    );
    // The envelope always serializes, and a failure always says what kind it is.
    let envelope = outcome.to_model_string();
    assert!(envelope.starts_with("{\"status\":"));
    if outcome.status() == Status::Error {
        assert!(outcome.error_kind().is_some());
        assert!(!outcome.message().unwrap_or_default().is_empty());
    }
});
