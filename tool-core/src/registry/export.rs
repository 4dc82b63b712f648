//! A registry's tools exported for a provider's request ([`Registry::export`]): the providers
//! write the definitions of the specs the registry hands them.

use serde_json::Value;

use super::Registry;
use crate::providers::{Export, ExportError};
use crate::session::Session;

impl Registry {
    /// Every tool's definition for a provider: the value of its `tools` request field, each
    /// tool's examples as Anthropic's `input_examples` or, elsewhere, a last `Examples:`
    /// paragraph of its description ([`Provider`](crate::providers::Provider)).
    ///
    /// ```
    /// # use toolwright::{Registry, providers::Provider};
    /// # fn demo(registry: &Registry) -> Result<(), toolwright::providers::ExportError> {
    /// let openai = registry.export(Provider::OpenAi)?;                 // strict
    /// let anthropic = registry.export(Provider::Anthropic.strict(true))?;
    /// let gemini = registry.export(Provider::Gemini)?;
    /// let mcp = registry.export(Provider::Mcp)?;
    /// # let _ = (openai, anthropic, gemini, mcp); Ok(()) }
    /// ```
    pub fn export(&self, export: impl Into<Export>) -> Result<Value, ExportError> {
        self.export_seen(None, export.into())
    }

    /// The definitions a session's model should see: every tool whose scopes the session
    /// holds, none it could not call. A model shown a tool it may not call wastes a turn on
    /// it; the tool list is also the model's whole picture of what exists.
    ///
    /// ```
    /// # use toolwright::{Registry, Session, providers::Provider};
    /// # fn demo(registry: &Registry) -> Result<(), toolwright::providers::ExportError> {
    /// let support = Session::new("conv-1").with_scopes(["orders:read"]);
    /// let tools = registry.export_for(&support, Provider::Anthropic)?;
    /// # let _ = tools; Ok(()) }
    /// ```
    pub fn export_for(
        &self,
        session: &Session,
        export: impl Into<Export>,
    ) -> Result<Value, ExportError> {
        self.export_seen(Some(session), export.into())
    }

    /// The tools `session` is shown (every tool for `None`), or with the provider's own search
    /// every tool it may see.
    fn export_seen(&self, session: Option<&Session>, export: Export) -> Result<Value, ExportError> {
        match (self.search_tool(), session) {
            (Some(search), _) if export.uses_native_tool_search() => {
                export.tools_searched_natively(self.natively_searched(session), search)
            }
            (_, Some(session)) => export.tools(self.specs_for(session)),
            (_, None) => export.tools(self.specs()),
        }
    }
}
