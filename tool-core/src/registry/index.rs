//! The BM25 index a tool search ranks a table's deferred tools by: what each tool is found by
//! (its name, description and parameters), and how text is cut into words.

use std::sync::Arc;

use bm25::{Embedder, EmbedderBuilder, Scorer};
use serde_json::Value;

use crate::tool::spec::ToolSpec;

/// A tool a search found, and how well it matched ([`Registry::search`](crate::Registry::search)).
#[derive(Debug, Clone, PartialEq)]
pub struct SearchHit {
    /// The tool's name.
    pub name: String,
    /// Its BM25 score for the query: higher matches better; only comparable within one search.
    pub score: f32,
}

/// The BM25 index of one tool table's deferred tools.
pub(super) struct Index {
    embedder: Embedder<u32, Words>,
    scorer: Scorer<u32, u32>,
    names: Vec<Arc<str>>,
}

impl Index {
    /// The index of the deferred tools, or `None` when there are none.
    pub(super) fn new<'a>(deferred: impl Iterator<Item = &'a ToolSpec>) -> Option<Index> {
        let mut names = Vec::new();
        let mut texts = Vec::new();
        for spec in deferred {
            names.push(Arc::clone(&spec.name));
            texts.push(document(spec));
        }
        if names.is_empty() {
            return None;
        }
        let corpus: Vec<&str> = texts.iter().map(String::as_str).collect();
        let embedder =
            EmbedderBuilder::<u32, Words>::with_tokenizer_and_fit_to_corpus(Words::new(), &corpus)
                .build();
        let mut scorer = Scorer::new();
        for (id, text) in texts.iter().enumerate() {
            let id = u32::try_from(id).unwrap_or(u32::MAX);
            scorer.upsert(&id, embedder.embed(text));
        }
        Some(Index {
            embedder,
            scorer,
            names,
        })
    }

    /// The best `limit` tools for `query` that `allowed` lets through, best first (ties by
    /// name, so a search answers the same on every replica).
    pub(super) fn rank(
        &self,
        query: &str,
        limit: usize,
        allowed: impl Fn(&str) -> bool,
    ) -> Vec<SearchHit> {
        let query = self.embedder.embed(query);
        // Names are copied only for the tools returned, not for every tool that matched.
        let mut matched: Vec<(&Arc<str>, f32)> = self
            .scorer
            .matches(&query)
            .into_iter()
            .filter(|m| m.score > 0.0)
            .filter_map(|m| {
                let name = self.names.get(m.id as usize)?;
                allowed(name).then_some((name, m.score))
            })
            .collect();
        matched.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(b.0)));
        matched
            .into_iter()
            .take(limit)
            .map(|(name, score)| SearchHit {
                name: name.to_string(),
                score,
            })
            .collect()
    }
}

/// What a tool is found by: its name (twice: a word of the name weighs more than one of the
/// description), its description, and every parameter's name, description and string enum
/// values, nested objects and arrays included.
fn document(spec: &ToolSpec) -> String {
    let mut text = format!("{0} {0} {1}", spec.name(), spec.description());
    parameters(spec.input_schema(), &mut text, 0);
    text
}

/// Appends the parameter words of `schema` to `text`, at most 4 levels deep.
fn parameters(schema: &Value, text: &mut String, depth: usize) {
    if depth > 4 {
        return;
    }
    if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
        for (name, property) in properties {
            text.push(' ');
            text.push_str(name);
            if let Some(description) = property.get("description").and_then(Value::as_str) {
                text.push(' ');
                text.push_str(description);
            }
            if let Some(values) = property.get("enum").and_then(Value::as_array) {
                for value in values.iter().filter_map(Value::as_str) {
                    text.push(' ');
                    text.push_str(value);
                }
            }
            parameters(property, text, depth + 1);
        }
    }
    if let Some(items) = schema.get("items") {
        parameters(items, text, depth + 1);
    }
}

/// Words that say nothing about what a tool does, in a query or a description.
const STOP_WORDS: &[&str] = &[
    "a", "an", "and", "any", "are", "as", "at", "be", "by", "can", "could", "do", "does", "for",
    "from", "get", "give", "i", "in", "into", "is", "it", "its", "me", "my", "need", "of", "on",
    "or", "our", "please", "should", "so", "some", "that", "the", "their", "them", "then", "there",
    "this", "to", "tool", "tools", "us", "use", "want", "was", "we", "what", "when", "which",
    "will", "with", "would", "you", "your",
];

/// The tokenizer: words split at anything not a letter or digit and at case changes
/// (`refundOrder`, `HTTPServer`), lower-cased, stop words dropped, English stems.
pub(super) struct Words {
    stemmer: rust_stemmers::Stemmer,
}

impl Words {
    fn new() -> Words {
        Words {
            stemmer: rust_stemmers::Stemmer::create(rust_stemmers::Algorithm::English),
        }
    }
}

impl Default for Words {
    fn default() -> Self {
        Words::new()
    }
}

impl bm25::Tokenizer for Words {
    fn tokenize(&self, text: &str) -> Vec<String> {
        split(text)
            .into_iter()
            .map(|word| word.to_lowercase())
            .filter(|word| !STOP_WORDS.contains(&word.as_str()))
            .map(|word| self.stemmer.stem(&word).into_owned())
            .collect()
    }
}

/// The words of `text`: runs of letters and digits, also split where a lower-case letter or
/// digit is followed by an upper-case one (`refundOrder`) and before the last capital of a
/// run followed by a lower-case letter (`HTTPServer`).
fn split(text: &str) -> Vec<&str> {
    let mut words = Vec::new();
    let mut start = None;
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    for (i, &(at, c)) in chars.iter().enumerate() {
        if !c.is_alphanumeric() {
            if let Some(s) = start.take() {
                words.push(&text[s..at]);
            }
            continue;
        }
        match start {
            None => start = Some(at),
            Some(s) if c.is_uppercase() => {
                let before = chars[i - 1].1;
                let after_is_lower = chars.get(i + 1).is_some_and(|&(_, n)| n.is_lowercase());
                if before.is_lowercase()
                    || before.is_numeric()
                    || (before.is_uppercase() && after_is_lower)
                {
                    words.push(&text[s..at]);
                    start = Some(at);
                }
            }
            Some(_) => {}
        }
    }
    if let Some(s) = start {
        words.push(&text[s..]);
    }
    words
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_split_at_separators_and_case_changes() {
        assert_eq!(
            split("refund_order refundOrder HTTPServer v2Api a-b.c"),
            ["refund", "order", "refund", "Order", "HTTP", "Server", "v2", "Api", "a", "b", "c"]
        );
        assert_eq!(split(""), Vec::<&str>::new());
        assert_eq!(split("ÉtéCafé"), ["Été", "Café"]);
    }

    #[test]
    fn tokens_are_lower_case_stems_without_stop_words() {
        let words = Words::new();
        assert_eq!(
            bm25::Tokenizer::tokenize(&words, "I want to refund the Orders"),
            ["refund", "order"]
        );
    }
}
