//! Tool search: tools a model finds when it needs them instead of being shown all of them up
//! front ([`RegistryBuilder::deferred`]).
//!
//! A deferred tool is left out of every listing and export until the model finds it with the
//! registry's search tool ([`ToolSearch`], `search_tools` by default). The search ranks the
//! deferred tools the session may see by BM25 over their names (split at `_`, `-`, `.` and
//! case changes), descriptions, parameter names, parameter descriptions and string enum
//! values, English words stemmed; no model is called. The tools it returns are grounded in the
//! conversation as found: shown to the session from then on and callable, in this process and,
//! for a session whose conversation lives in a
//! [`ConversationStore`](crate::conversation::ConversationStore), on every replica that
//! shares the store ([`Registry::refresh_found`]).

use std::sync::{Arc, OnceLock, Weak};

use bm25::{Embedder, EmbedderBuilder, Scorer};
use serde_json::{json, Value};

use super::{Inner, Registry, Slot};
use crate::call::Session;
use crate::conversation::{ConversationStoreError, Prepare, FOUND_KIND};
use crate::dynamic::DynamicTool;
use crate::tool::spec::ToolSpec;
use crate::tool::Effect;

/// The name of the search tool by default.
pub const DEFAULT_SEARCH_TOOL: &str = "search_tools";

/// How many tools a search returns when the model asks for no number.
pub const DEFAULT_SEARCH_RESULTS: usize = 5;

/// The most tools one search may return, whatever the model asks for.
pub const MAX_SEARCH_RESULTS: usize = 20;

/// The longest query the search tool accepts, in characters (its schema's `maxLength`).
pub const MAX_QUERY_CHARS: usize = 500;

/// The search tool of a registry with deferred tools: its name, how many tools it returns,
/// and whether its results carry each tool's input schema.
///
/// A registry with any [`deferred`](super::RegistryBuilder::deferred) tool gets the default
/// search tool; [`RegistryBuilder::tool_search`](super::RegistryBuilder::tool_search) changes
/// it.
///
/// ```
/// use toolwright_core::registry::ToolSearch;
///
/// // For MCP clients, which never list a deferred tool: they learn its schema from the search.
/// let search = ToolSearch::new().name("find_tools").results(8).with_schemas(true);
/// assert_eq!(search.tool_name(), "find_tools");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolSearch {
    name: String,
    results: usize,
    schemas: bool,
}

impl Default for ToolSearch {
    fn default() -> Self {
        ToolSearch {
            name: DEFAULT_SEARCH_TOOL.to_owned(),
            results: DEFAULT_SEARCH_RESULTS,
            schemas: false,
        }
    }
}

impl ToolSearch {
    /// The defaults: `search_tools`, [`DEFAULT_SEARCH_RESULTS`] tools, no schemas.
    pub fn new() -> Self {
        ToolSearch::default()
    }

    /// The search tool's name (default `search_tools`).
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// How many tools a search returns when the model asks for no number (default
    /// [`DEFAULT_SEARCH_RESULTS`]; at most [`MAX_SEARCH_RESULTS`]).
    pub fn results(mut self, results: usize) -> Self {
        self.results = results.clamp(1, MAX_SEARCH_RESULTS);
        self
    }

    /// Whether each tool found comes with its input schema (default `false`: the agent loop
    /// shows found tools in the next turn's tool list, so the schema would be sent twice). Turn
    /// it on for MCP clients, whose tool list never holds a deferred tool.
    pub fn with_schemas(mut self, schemas: bool) -> Self {
        self.schemas = schemas;
        self
    }

    /// The search tool's name.
    pub fn tool_name(&self) -> &str {
        &self.name
    }

    /// The search tool, reaching the registry it serves through `registry` (set once the
    /// registry is built). `Err`: a [`name`](ToolSearch::name) no provider accepts.
    pub(super) fn tool(
        &self,
        registry: Arc<OnceLock<Weak<Inner>>>,
    ) -> Result<DynamicTool, crate::BuildError> {
        let default = self.results;
        let schemas = self.schemas;
        DynamicTool::builder(self.name.clone())
            .description(
                "Searches the tools that are not shown yet. Describe what you need done in a few \
                 words; the tools found can be called from then on in this conversation.",
            )
            .input_schema(json!({
                "type": "object",
                "properties": {
                    "query": {
                        "type": "string",
                        "minLength": 1,
                        "maxLength": MAX_QUERY_CHARS,
                        "description": "What the tool should do, in a few words, for example \"refund an order\"."
                    },
                    "limit": {
                        "type": "integer",
                        "minimum": 1,
                        "maximum": MAX_SEARCH_RESULTS,
                        "description": format!("At most this many tools (default {default}).")
                    }
                },
                "required": ["query"],
                "additionalProperties": false
            }))
            .effect(Effect::ReadOnly)
            .grounds(FOUND_KIND, "tools.name")
            .internal()
            .handler(move |args, ctx| {
                let registry = registry
                    .get()
                    .and_then(Weak::upgrade)
                    .map(|inner| Registry { inner });
                async move {
                    let Some(registry) = registry else {
                        return Err(crate::ToolError::unavailable(
                            "the registry this search belongs to is gone",
                        ));
                    };
                    let query = args["query"].as_str().unwrap_or_default();
                    let limit = args["limit"]
                        .as_u64()
                        .map_or(default, |n| usize::try_from(n).unwrap_or(MAX_SEARCH_RESULTS));
                    let session = ctx.session();
                    let hits = registry.search(session, query, limit);
                    session.mark_found(hits.iter().map(|hit| hit.name.as_str()));
                    let tools: Vec<Value> = hits
                        .iter()
                        .filter_map(|hit| registry.spec(&hit.name))
                        .map(|spec| found(spec, schemas))
                        .collect();
                    let note = if tools.is_empty() {
                        "No tool matches; search again with other words."
                    } else {
                        "These tools can be called now, by name, in this conversation."
                    };
                    Ok(json!({ "tools": tools, "note": note }))
                }
            })
            .build()
    }
}

/// One tool in a search's result.
fn found(spec: &ToolSpec, schemas: bool) -> Value {
    let mut tool = json!({ "name": spec.name(), "description": spec.description() });
    if schemas {
        tool["input_schema"] = spec.input_schema().clone();
    }
    tool
}

/// A tool a search found, and how well it matched ([`Registry::search`]).
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
    /// The index of the deferred tools among `slots`, or `None` when there are none.
    pub(super) fn new<'a>(slots: impl Iterator<Item = &'a Slot>) -> Option<Index> {
        let mut names = Vec::new();
        let mut texts = Vec::new();
        for slot in slots.filter(|slot| slot.deferred) {
            let spec = slot.tool.spec();
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

impl Registry {
    /// The deferred tools `session` may see (its scopes, `visible_when`, `tool_filter`) that
    /// best match `query`, best first, at most `limit` (and [`MAX_SEARCH_RESULTS`]): what the
    /// search tool answers, without recording anything as found.
    ///
    /// ```
    /// # use toolwright_core::{Registry, Session, dynamic::DynamicTool};
    /// # use serde_json::json;
    /// let tool = |name: &str, description: &str| {
    ///     DynamicTool::builder(name)
    ///         .description(description)
    ///         .input_schema(json!({"type": "object", "properties": {}}))
    ///         .handler(|_args, _ctx| async { Ok(json!("done")) })
    ///         .build()
    ///         .unwrap()
    /// };
    /// let registry = Registry::builder()
    ///     .dynamic_tool(tool("refund_order", "Refunds a paid order to the card it was paid with."))
    ///     .dynamic_tool(tool("track_parcel", "Where a shipped parcel is now."))
    ///     .deferred(["refund_order", "track_parcel"])
    ///     .build()
    ///     .unwrap();
    /// let hits = registry.search(&Session::new("c1"), "give the customer their money back for an order", 5);
    /// assert_eq!(hits[0].name, "refund_order");
    /// ```
    pub fn search(&self, session: &Session, query: &str, limit: usize) -> Vec<SearchHit> {
        let table = self.table();
        let Some(index) = &table.index else {
            return Vec::new();
        };
        index.rank(query, limit.min(MAX_SEARCH_RESULTS), |name| {
            table
                .tools
                .get(name)
                .is_some_and(|slot| self.may_see(slot, session))
        })
    }

    /// Every tool `session` may see (all of them for `None`) but the registry's search tool,
    /// each with whether it is deferred: what a provider that searches itself is sent.
    pub(crate) fn natively_searched<'a>(
        &'a self,
        session: Option<&'a Session>,
    ) -> impl Iterator<Item = (&'a ToolSpec, bool)> + 'a {
        let table = self.table();
        let search = self.inner.search.as_deref();
        table.specs.iter().filter_map(move |spec| {
            let slot = table.tools.get(spec.name())?;
            let seen = session.is_none_or(|session| self.may_see(slot, session));
            (seen && Some(spec.name()) != search).then_some((spec, slot.deferred))
        })
    }

    /// Whether `name` is a deferred tool: left out of listings until a search finds it
    /// ([`RegistryBuilder::deferred`](super::RegistryBuilder::deferred)).
    pub fn is_deferred(&self, name: &str) -> bool {
        self.table()
            .tools
            .get(name)
            .is_some_and(|slot| slot.deferred)
    }

    /// The name of the registry's search tool, when it has deferred tools.
    pub fn search_tool(&self) -> Option<&str> {
        self.inner.search.as_deref()
    }

    /// Reads from the session's
    /// [`ConversationStore`](crate::conversation::ConversationStore) which deferred tools its
    /// conversation found (on any replica), so that listings in this process ([`Registry::specs_for`],
    /// [`Registry::export_for`], [`Registry::is_visible`]) show them. One round trip, and
    /// none for a session without a store or a registry without deferred tools. Calls do not
    /// need it: a call of a deferred tool this process has not seen found asks the store
    /// itself. The agent loop calls it before every model turn; a server that lists tools per
    /// request calls it before listing.
    ///
    /// ```no_run
    /// # use toolwright_core::{Registry, Session, providers::Provider};
    /// # async fn demo(registry: &Registry, session: &Session) -> Result<(), Box<dyn std::error::Error>> {
    /// registry.refresh_found(session).await?;
    /// let tools = registry.export_for(session, Provider::Anthropic)?;
    /// # let _ = tools; Ok(()) }
    /// ```
    pub async fn refresh_found(&self, session: &Session) -> Result<(), ConversationStoreError> {
        let Some(store) = session.store() else {
            return Ok(());
        };
        let table = self.table();
        let ids: Vec<(String, String)> = table
            .specs
            .iter()
            .filter(|spec| {
                table.tools.get(spec.name()).is_some_and(|slot| {
                    slot.deferred && !session.has_found(spec.name()) && self.may_see(slot, session)
                })
            })
            .map(|spec| (FOUND_KIND.to_owned(), spec.name().to_owned()))
            .collect();
        if ids.is_empty() {
            return Ok(());
        }
        let prepare = Prepare {
            ids,
            edited_for: None,
        };
        let prepared = store.prepare(session.id(), &prepare).await?;
        session.mark_found(
            prepare
                .ids
                .iter()
                .zip(&prepared.grounded)
                .filter(|(_, grounded)| **grounded)
                .map(|((_, name), _)| name.as_str()),
        );
        Ok(())
    }
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
