use std::time::SystemTime;
use toolwright::prelude::*;

/// Book a slot.
#[tool]
async fn book_slot(room: String, at: SystemTime) -> Result<String, ToolError> {
    let _ = at;
    Ok(room)
}

/// Snooze a reminder, inside an `Option` and written as a path.
#[tool]
async fn snooze(until: Option<std::time::SystemTime>) -> Result<(), ToolError> {
    let _ = until;
    Ok(())
}

fn main() {
    let _registry = Registry::builder().tool(BookSlot).tool(Snooze).build();
}
