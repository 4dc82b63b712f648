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

use serde_json::{json, Value};

use super::index::SearchHit;
use super::{Inner, Registry};
use crate::conversation::{ConversationStoreError, Prepare, FOUND_KIND};
use crate::dynamic::DynamicTool;
use crate::session::Session;
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
/// use toolwright::registry::ToolSearch;
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

impl Registry {
    /// The deferred tools `session` may see (its scopes, `visible_when`, `tool_filter`) that
    /// best match `query`, best first, at most `limit` (and [`MAX_SEARCH_RESULTS`]): what the
    /// search tool answers, without recording anything as found.
    ///
    /// ```
    /// # use toolwright::{Registry, Session, DynamicTool};
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
    /// # use toolwright::{Registry, Session, providers::Provider};
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
