//! [`Changes`]: tools added, replaced and removed while a registry serves.

use super::builder::{add, defer, pending_dynamic, pending_tool, Pending};
use super::*;

/// A change to the tools of a registry that is serving: tools to add, replace or remove, made
/// with [`Registry::change`]. The whole change applies at once, or (on an error) not at all.
#[derive(Default)]
#[must_use = "a change does nothing until `Registry::change` applies it"]
pub struct Changes {
    pending: Vec<(String, usize, Pending)>,
    removed: Vec<String>,
    shown_to: HashMap<String, ShownTo>,
    deferred: Vec<String>,
}

impl Changes {
    /// Adds a `#[tool]`. To replace a tool of the same name, [`remove`](Changes::remove) it in
    /// the same change.
    pub fn tool<T: Tool>(mut self, tool: T) -> Self {
        self.pending
            .push((T::META.name.to_owned(), 0, pending_tool(tool)));
        self
    }

    /// Adds a tool defined at run time ([`DynamicTool`](crate::dynamic::DynamicTool)).
    pub fn dynamic_tool(mut self, tool: crate::dynamic::DynamicTool) -> Self {
        let name = tool.meta_name().to_owned();
        self.pending.push((name, 0, pending_dynamic(tool)));
        self
    }

    /// Removes the tool `name`: new calls of it are `unknown_tool`; calls already running
    /// finish. A name the registry does not have fails the change.
    pub fn remove(mut self, name: impl Into<String>) -> Self {
        self.removed.push(name.into());
        self
    }

    /// Shows the tool `name` (added by this change, or already there) only to sessions for
    /// which `predicate` holds, as [`RegistryBuilder::visible_when`].
    pub fn visible_when(
        mut self,
        name: impl Into<String>,
        predicate: impl Fn(&Session) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.shown_to.insert(name.into(), Arc::new(predicate));
        self
    }

    /// Marks tools (added by this change, or already there) as found by search, as
    /// [`RegistryBuilder::deferred`]: the tools an application loads while it serves (a plugin,
    /// an upstream MCP server's hundreds of tools) need not crowd every model's context. The
    /// registry must have a search tool ([`RegistryBuilder::tool_search`], or a deferred tool
    /// when it was built); a name the registry does not have fails the change.
    ///
    /// ```
    /// # use toolwright::{Registry, Session, DynamicTool, registry::ToolSearch};
    /// # use serde_json::json;
    /// let registry = Registry::builder().tool_search(ToolSearch::new()).build().unwrap();
    /// let export = DynamicTool::builder("export_ledger")
    ///     .description("Exports the ledger as CSV.")
    ///     .input_schema(json!({"type": "object", "properties": {}}))
    ///     .handler(|_args, _ctx| async { Ok(json!("ok")) })
    ///     .build()
    ///     .unwrap();
    /// registry.change(|c| c.dynamic_tool(export).deferred(["export_ledger"])).unwrap();
    /// assert!(registry.is_deferred("export_ledger"));
    /// assert!(!registry.is_visible("export_ledger", &Session::new("c1")));
    /// ```
    pub fn deferred<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.deferred.extend(names.into_iter().map(Into::into));
        self
    }
}

impl Registry {
    /// Adds, replaces and removes tools while the registry serves. Calls already running keep
    /// the table they started with and finish; calls that start after this returns see the new
    /// one. A tool that stays keeps its breaker, retry budget, stats and idempotency records; a
    /// replaced tool starts with fresh ones. The change is checked as
    /// [`RegistryBuilder::build`] checks a registry (duplicate names, missing state, unknown
    /// names) and applies whole or not at all. Subscribers ([`Registry::subscribe`]) are told;
    /// the MCP server sends its clients `notifications/tools/list_changed`.
    ///
    /// Changes apply one at a time. Each keeps the previous table (its map and specs, not the
    /// tools) until the registry is dropped, so a call never waits for a lock or counts a
    /// reference: change a registry when its tool set changes (a plugin loaded, a server
    /// connected), not per request.
    ///
    /// ```
    /// # use toolwright::{Registry, ToolCall, Status, DynamicTool};
    /// # use serde_json::json;
    /// # async fn demo() -> Result<(), toolwright::BuildError> {
    /// let registry = Registry::builder().build()?;
    /// let ping = DynamicTool::builder("ping")
    ///     .description("Answers pong.")
    ///     .input_schema(json!({"type": "object", "properties": {}}))
    ///     .handler(|_args, _ctx| async { Ok(json!("pong")) })
    ///     .build()?;
    /// registry.change(|c| c.dynamic_tool(ping))?;
    /// let outcome = registry.call(ToolCall::new("c1", "ping", "{}")).await;
    /// assert_eq!(outcome.status(), Status::Success);
    /// registry.change(|c| c.remove("ping"))?;
    /// assert!(registry.names().is_empty());
    /// # Ok(()) }
    /// ```
    pub fn change(&self, change: impl FnOnce(Changes) -> Changes) -> Result<u64, BuildError> {
        let Changes {
            pending,
            removed,
            mut shown_to,
            deferred,
        } = change(Changes::default());
        if let (Some(name), None) = (deferred.first(), &self.inner.search) {
            return Err(BuildError::NoToolSearch(name.clone()));
        }
        let making = self
            .inner
            .making
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let mut tools = self.table().tools.clone();
        for name in removed {
            if tools.remove(name.as_str()).is_none() {
                return Err(BuildError::UnknownTool {
                    setting: "remove",
                    name,
                });
            }
        }
        add(
            &mut tools,
            pending,
            &mut shown_to,
            &making,
            &self.inner.pipeline.state,
        )?;
        for (name, predicate) in shown_to {
            match tools.get_mut(name.as_str()) {
                Some(slot) => slot.shown_to = Some(predicate),
                None => {
                    return Err(BuildError::UnknownTool {
                        setting: "visible_when",
                        name,
                    })
                }
            }
        }
        defer(&mut tools, deferred)?;
        let table = Table::new(tools);
        *self
            .inner
            .pipeline
            .finders
            .write()
            .unwrap_or_else(PoisonError::into_inner) = Arc::new(pipeline::finders(&table.specs));
        let index = self.inner.tables.push(table);
        self.inner.current.store(index, Ordering::Release);
        let version = index as u64;
        self.inner.changed.send_replace(version);
        drop(making);
        Ok(version)
    }

    /// The version of the tool set: 0 when built, one more after each
    /// [`change`](Registry::change).
    pub fn version(&self) -> u64 {
        self.inner.current.load(Ordering::Acquire) as u64
    }

    /// A receiver that sees the version change after each [`change`](Registry::change) (a
    /// `tokio::sync::watch` channel: `changed().await`, then list the tools again).
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.inner.changed.subscribe()
    }
}
