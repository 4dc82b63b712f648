//! Prints one tool set as a provider's `tools` field.
//!
//! ```text
//! cargo run --example export_schemas -- openai|openai-responses|anthropic|anthropic-strict|gemini|gemini-json|mcp
//! ```
//!
//! The tools cover what trips providers up: nested structs, documented enums, optional fields,
//! lists of structs, a tagged union and numeric bounds. A last tool takes a map, which some
//! providers cannot express: for those the example prints the export error (what, where, why)
//! on stderr instead of a silently wrong schema.

use std::collections::BTreeMap;
use std::process::ExitCode;

use toolwright::prelude::*;
use toolwright::providers::{Export, Provider};

/// Seat class.
#[toolwright::data]
#[derive(Debug, Clone, Copy)]
#[serde(rename_all = "snake_case")]
enum Cabin {
    /// The cheapest seats.
    Economy,
    /// More room, better food.
    Business,
    /// The front of the plane.
    First,
}

/// A flight offer.
#[toolwright::data(output)]
#[derive(Debug)]
struct Offer {
    id: String,
    price: f64,
}

/// Search flights between two airports on a date.
#[tool(timeout_ms = 3000, read_only)]
async fn search_flights(
    /// IATA code of the departure airport.
    #[arg(pattern = "^[A-Z]{3}$")]
    from: String,
    /// IATA code of the arrival airport.
    #[arg(pattern = "^[A-Z]{3}$")]
    to: String,
    /// Departure date, YYYY-MM-DD.
    date: String,
    /// How many people travel.
    #[arg(range(min = 1, max = 9), default = 1)]
    passengers: u8,
    /// Seat class; any class when absent.
    cabin: Option<Cabin>,
    /// Highest acceptable price per person, in euros.
    #[arg(range(min = 1.0, max = 20000.0))]
    max_price: Option<f64>,
) -> Result<Vec<Offer>, ToolError> {
    let _ = (from, to, date, passengers, cabin, max_price);
    Ok(Vec::new())
}

/// One person on the booking.
#[toolwright::data(input)]
#[derive(Debug)]
#[serde(deny_unknown_fields)]
struct Traveller {
    /// Full name as on the passport.
    name: String,
    /// Age in years.
    age: u32,
    /// Preferred cabin, if any.
    cabin: Option<Cabin>,
}

/// How the booking is paid.
#[toolwright::data(input)]
#[derive(Debug)]
#[serde(tag = "method", rename_all = "snake_case", deny_unknown_fields)]
enum Payment {
    /// A card already on file.
    Card {
        /// The card's last four digits.
        last4: String,
    },
    /// A voucher code.
    Voucher {
        /// The code printed on the voucher.
        code: String,
    },
}

/// A confirmed booking.
#[toolwright::data(output)]
#[derive(Debug)]
struct Booking {
    booking_id: String,
    total: f64,
}

/// Book an offer for a group of travellers.
#[tool(timeout_ms = 8000, idempotent = false)]
async fn book_offer(
    key: IdempotencyKey,
    /// The offer's id, from search_flights.
    offer_id: String,
    /// Everyone travelling.
    #[arg(length(min = 1, max = 9))]
    travellers: Vec<Traveller>,
    /// How to pay.
    payment: Payment,
    /// A note for the airline.
    #[arg(length(max = 500))]
    note: Option<String>,
) -> Result<Booking, ToolError> {
    // A real body would call the airline; this one only reads what it was given.
    let seats = travellers
        .iter()
        .filter(|t| {
            !t.name.is_empty() && t.age < 130 && t.cabin.is_none_or(|c| !matches!(c, Cabin::First))
        })
        .count();
    let reference = match &payment {
        Payment::Card { last4 } => last4.clone(),
        Payment::Voucher { code } => code.clone(),
    };
    Ok(Booking {
        booking_id: format!(
            "{key}-{offer_id}-{reference}-{}",
            note.map_or(0, |n| n.len())
        ),
        total: 100.0 * seats as f64,
    })
}

/// Save display preferences as free-form key/value pairs.
#[tool(idempotent = true)]
async fn save_preferences(
    /// Preference name to value.
    preferences: BTreeMap<String, String>,
) -> Result<(), ToolError> {
    let _ = preferences;
    Ok(())
}

fn export_for(arg: &str) -> Option<Export> {
    Some(match arg {
        "openai" => Provider::OpenAi.into(),
        "openai-responses" => Provider::OpenAiResponses.into(),
        "anthropic" => Provider::Anthropic.into(),
        "anthropic-strict" => Provider::Anthropic.strict(true),
        "gemini" => Provider::Gemini.into(),
        "gemini-json" => Provider::GeminiJsonSchema.into(),
        "mcp" => Provider::Mcp.into(),
        _ => return None,
    })
}

fn main() -> ExitCode {
    let arg = std::env::args().nth(1).unwrap_or_default();
    let Some(export) = export_for(&arg) else {
        eprintln!("usage: export_schemas openai|openai-responses|anthropic|anthropic-strict|gemini|gemini-json|mcp");
        return ExitCode::from(2);
    };
    let registry = match Registry::builder()
        .tool(SearchFlights)
        .tool(BookOffer)
        .tool(SavePreferences)
        .build()
    {
        Ok(registry) => registry,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    // Export what the provider can express; report the rest.
    let mut exportable = Vec::new();
    for spec in registry.specs() {
        match export.tool(spec) {
            Ok(_) => exportable.push(spec),
            Err(e) => eprintln!("skipped: {e}"),
        }
    }
    match export.tools(exportable) {
        Ok(tools) => {
            match toolwright::serde_json::to_string_pretty(&tools) {
                Ok(text) => println!("{text}"),
                Err(e) => eprintln!("{e}"),
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{e}");
            ExitCode::FAILURE
        }
    }
}
