//! English for messages to a model. A leaf: it imports nothing else of the crate.

/// "an order", "a customer".
pub(crate) fn article(kind: &str) -> String {
    let vowel = kind
        .chars()
        .next()
        .is_some_and(|c| "aeiouAEIOU".contains(c));
    format!("{} `{kind}`", if vowel { "an" } else { "a" })
}
