use serde::Serialize;
use toolwright::prelude::*;

#[derive(Serialize, schemars::JsonSchema)]
struct Booking {
    id: String,
    seats: u32,
}

/// Book a flight between two airports.
#[tool(timeout_ms = 2000, idempotent = false)]
async fn book_flight(
    key: IdempotencyKey,
    /// Origin airport code.
    #[arg(pattern = "^[A-Z]{3}$")]
    from: String,
    /// Number of passengers.
    #[arg(range(min = 1, max = 9), default = 1)]
    passengers: u32,
    /// Cabin class.
    #[arg(one_of = ["economy", "business", "first"])]
    cabin: Option<String>,
) -> Result<Booking, ToolError> {
    Ok(Booking {
        id: format!("{key}-{from}-{cabin:?}"),
        seats: passengers,
    })
}

#[tokio::main]
async fn main() {
    let r = Registry::builder().tool(BookFlight).build().unwrap();
    println!(
        "{}",
        serde_json::to_string_pretty(r.specs()[0].input_schema()).unwrap()
    );
    for a in [
        r#"{"from":"SFO"}"#,
        r#"{"from":"sf","passengers":50,"cabin":"premium"}"#,
        r#"{"from":"SFO","passengers":"2"}"#,
        r#"{"from":"SFO","x":1}"#,
        "",
        "null",
        "[1]",
        "{",
    ] {
        let o = r.call(ToolCall::new("c1", "book_flight", a)).await;
        println!(
            "{a:>50} => {}",
            o.to_model_string().chars().take(400).collect::<String>()
        );
    }
    println!("{:?}", Registry::from_collected().unwrap().names());
}
