use std::time::{Duration, Instant, SystemTime};

// Fields of a type the model sends: each clock type is one error, at the field's type.
#[toolwright::data(input)]
struct Booking {
    room: String,
    at: SystemTime,
    started: Option<Instant>,
    length: Duration,
}

// A result type may hold them: the model only reads it.
#[toolwright::data(output)]
struct Receipt {
    at: SystemTime,
    length: Duration,
}

fn main() {}
