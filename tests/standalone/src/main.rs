//! A user's tool crate as DESIGN.md promises it: Cargo.toml names `toolwright` and tokio only,
//! yet the tool takes and returns its own struct. Exits non-zero unless the call succeeds.

use std::process::ExitCode;

use toolwright::prelude::*;

/// How fast the parcel travels.
#[toolwright::data]
#[serde(rename_all = "snake_case")]
enum Speed {
    Standard,
    NextDay,
}

/// What to ship.
#[toolwright::data]
struct Shipment {
    /// The order whose goods are shipped.
    order_id: String,
    /// How fast it must arrive.
    speed: Speed,
}

/// The label the carrier issued.
#[toolwright::data(output)]
struct Label {
    tracking: String,
    carrier: &'static str,
}

/// Buy a shipping label for an order.
#[tool(idempotent = true)]
async fn ship(shipment: Shipment) -> Result<Label, ToolError> {
    let carrier = match shipment.speed {
        Speed::Standard => "post",
        Speed::NextDay => "courier",
    };
    Ok(Label {
        tracking: format!("T-{}", shipment.order_id),
        carrier,
    })
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let registry = match Registry::builder().tool(Ship).build() {
        Ok(registry) => registry,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    let arguments = r#"{"shipment":{"order_id":"A1","speed":"next_day"}}"#;
    let outcome = registry
        .call(ToolCall::new("call_1", "ship", arguments))
        .await;
    println!("{}", outcome.to_model_string());
    if outcome.status() == Status::Success {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
