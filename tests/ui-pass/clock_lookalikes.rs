//! Types named like std's clock types that are not std's: a `Duration` of another crate (here a
//! module standing in for chrono's) and a field of std's `Duration` that says how it is read.

use toolwright::prelude::*;

mod chrono_like {
    /// A span of time, as another crate defines it.
    #[toolwright::data]
    pub struct Duration {
        pub minutes: u32,
    }
}

use chrono_like::Duration;

/// Snooze for a while.
#[tool]
async fn snooze(how_long: Duration, again: Option<chrono_like::Duration>) -> Result<u32, ToolError> {
    Ok(how_long.minutes + again.map_or(0, |d| d.minutes))
}

fn millis<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<std::time::Duration, D::Error> {
    let ms = <u64 as serde::Deserialize>::deserialize(deserializer)?;
    Ok(std::time::Duration::from_millis(ms))
}

/// A field read its own way: milliseconds on the wire.
#[toolwright::data(input)]
struct Patience {
    #[serde(deserialize_with = "millis")]
    #[schemars(with = "u64")]
    timeout_ms: std::time::Duration,
}

/// Wait.
#[tool]
async fn wait(patience: Patience) -> Result<u64, ToolError> {
    Ok(patience.timeout_ms.as_millis() as u64)
}

fn main() {
    let _registry = Registry::builder().tool(Snooze).tool(Wait).build();
}
