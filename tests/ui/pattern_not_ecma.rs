use toolwright::prelude::*;

/// Find a word.
#[tool(read_only)]
async fn find_word(
    /// The text.
    #[arg(pattern = "\\border\\b")]
    text: String,
) -> Result<String, ToolError> {
    Ok(text)
}

fn main() {
    let _args = FindWordArgs { text: String::new() };
}
