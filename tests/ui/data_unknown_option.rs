use toolwright::prelude::*;

/// What the search returns.
#[data(result)]
struct Hit {
    id: String,
}

/// A filter the model sends.
#[toolwright::data(inputs)]
struct Filter {
    text: String,
}

fn main() {}
