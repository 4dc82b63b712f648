use toolwright::prelude::*;

/// Echo a value back.
#[tool]
async fn echo<T: serde::de::DeserializeOwned>(value: T) -> Result<String, ToolError> {
    let _ = value;
    Ok(String::new())
}

fn main() {}
