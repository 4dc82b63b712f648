//! One MCP session: its toolwright [`Session`], the tools it may see, and `tools/call` through
//! the registry.

use std::borrow::Cow;
use std::sync::{Arc, OnceLock};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ErrorCode,
    ListToolsResult, PaginatedRequestParams, ProtocolVersion, ServerCapabilities, ServerConfig,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::{json, Value};
use toolwright_core::{providers, Outcome, Session, Status, ToolCall};

use crate::approval::ElicitingApprover;
use crate::streamable::{Disconnected, Grant};
use crate::Shared;

/// The rmcp handler of one MCP session. rmcp builds one per stdio connection and one per
/// streamable-HTTP session (its service factory), so everything a client's conversation owns
/// (grounded ids, recovery budget, idempotency scope) lives in `session` and dies with it.
pub(crate) struct Handler {
    shared: Arc<Shared>,
    /// Made at the first request, when the peer (for elicitation) and the caller's grant are
    /// known.
    session: OnceLock<Session>,
    /// The task that tells this client when the registry's tool set changes; stopped when the
    /// session ends (rmcp drops its handler).
    watcher: OnceLock<AbortOnDrop>,
}

/// A task aborted when its owner is dropped.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl Handler {
    pub(crate) fn new(shared: Arc<Shared>) -> Self {
        Handler {
            shared,
            session: OnceLock::new(),
            watcher: OnceLock::new(),
        }
    }

    /// This MCP session's toolwright session, bound to the principal of its first request: a
    /// later request of another principal (a stolen or replayed `Mcp-Session-Id`) is refused.
    fn session(&self, context: &RequestContext<RoleServer>) -> Result<&Session, ErrorData> {
        let grant = context
            .extensions
            .get::<http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<Grant>());
        let session = self.session.get_or_init(|| self.open(grant, context));
        match grant {
            Some(grant) if session.principal() != Some(grant.principal()) => {
                Err(ErrorData::invalid_request(
                    "this MCP session belongs to another principal; start a new session",
                    None,
                ))
            }
            _ => Ok(session),
        }
    }

    fn open(&self, grant: Option<&Grant>, context: &RequestContext<RoleServer>) -> Session {
        let mut session = Session::new(format!("mcp-{}", uuid::Uuid::new_v4()));
        if let Some(grant) = grant {
            session = session
                .with_principal(grant.principal())
                .with_scopes(grant.scopes().iter().cloned());
        }
        session = session.with_approver(Arc::new(ElicitingApprover::new(
            context.peer.clone(),
            self.shared.fallback_approver.clone(),
            self.shared.approval_timeout,
        )));
        match &self.shared.session_factory {
            Some(factory) => factory(session),
            None => session,
        }
    }

    /// The tools this session is shown, as `tools/list` lists them.
    fn visible(&self, session: &Session) -> Vec<rmcp::model::Tool> {
        let listed = self.shared.tools();
        listed
            .tools
            .iter()
            .filter(|tool| self.shared.registry.is_visible(&tool.name, session))
            .map(|tool| tool.tool.clone())
            .collect()
    }

    /// `-32602` with the tools this session may call, in the message (clients often show only
    /// the message) and in `data`, so a model can still pick a real tool.
    fn unknown_tool(&self, session: &Session, name: &str) -> ErrorData {
        let available: Vec<String> = self
            .shared
            .registry
            .specs_for(session)
            .map(|spec| spec.name().to_owned())
            .collect();
        let shown: String = name.chars().take(64).collect();
        ErrorData::invalid_params(
            format!(
                "Unknown tool: '{shown}'. Available tools: {}",
                available.join(", ")
            ),
            Some(json!({
                "error_type": "unknown_tool",
                "tool": shown,
                "available_tools": available,
            })),
        )
    }
}

/// The `CallToolResult` of an outcome: the envelope as text and as `structuredContent`;
/// `isError` when the call failed, so the model reads why and can recover.
///
/// A tool that returned [`Content`](toolwright_core::Content) answers with its blocks (text,
/// image, audio, resource link) as the result's `content`.
pub(crate) fn call_tool_result(outcome: &Outcome) -> CallToolResult {
    if outcome.content().is_some() {
        // The blocks have MCP's shapes: rmcp reads them as its own.
        if let Ok(result) = serde_json::from_value(providers::mcp::call_tool_result(outcome)) {
            return result;
        }
    }
    let text = vec![ContentBlock::text(outcome.to_model_string())];
    let mut result = if outcome.status() == Status::Error {
        CallToolResult::error(text)
    } else {
        CallToolResult::success(text)
    };
    result.structured_content = Some(outcome.to_model_json());
    result
}

impl ServerHandler for Handler {
    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_tool_list_changed()
            .build();
        let mut config =
            ServerConfig::new(capabilities).with_server_info(self.shared.implementation.clone());
        if let Some(instructions) = &self.shared.instructions {
            config = config.with_instructions(instructions.clone());
        }
        config
    }

    /// Up to 2025-11-25, the revisions with sessions: later ones serve every request
    /// statelessly, and a toolwright session is a conversation.
    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(ProtocolVersion::known_up_to(&ProtocolVersion::V_2025_11_25))
    }

    /// Tells the client `notifications/tools/list_changed` after each change of the registry's
    /// tool set ([`Registry::change`](toolwright_core::Registry::change)), for as long as the
    /// session lives.
    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        let peer = context.peer;
        let mut changes = self.shared.registry.subscribe();
        changes.mark_unchanged();
        let task = tokio::spawn(async move {
            while changes.changed().await.is_ok() {
                if peer.notify_tool_list_changed().await.is_err() {
                    break;
                }
            }
        });
        let _ = self.watcher.set(AbortOnDrop(task));
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let session = self.session(&context)?;
        Ok(ListToolsResult::with_all_items(self.visible(session)))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let session = self.session(&context)?;
        let name = request.name;
        if !self.shared.registry.is_visible(&name, session) {
            return Err(self.unknown_tool(session, &name));
        }
        let arguments = match &request.arguments {
            Some(arguments) => serde_json::to_string(arguments)
                .map_err(|e| ErrorData::invalid_params(e.to_string(), None))?,
            None => "{}".to_owned(),
        };
        let limit = self.shared.max_argument_bytes;
        if arguments.len() > limit {
            return Err(ErrorData::invalid_params(
                format!(
                    "the arguments of '{name}' are {} bytes, over this server's limit of {limit} bytes; send less data",
                    arguments.len()
                ),
                Some(json!({
                    "error_type": "arguments_too_large",
                    "size_bytes": arguments.len(),
                    "limit_bytes": limit,
                })),
            ));
        }
        let call = ToolCall::new(request_id(&context), name, arguments);
        let progress_token = request
            .meta
            .as_ref()
            .and_then(|meta| meta.get_progress_token())
            .or_else(|| context.meta.get_progress_token());
        let disconnected = context
            .extensions
            .get::<http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<Disconnected>())
            .map(|d| d.0.clone())
            .unwrap_or_default();
        // rmcp cancels `ct` on `notifications/cancelled`, on a dropped HTTP response stream and
        // when the connection ends; dropping the registry future here drops the attempt.
        tokio::select! {
            biased;
            () = context.ct.cancelled() => Err(cancelled()),
            () = disconnected.cancelled() => Err(cancelled()),
            outcome = crate::progress::call_reporting(
                &self.shared.registry,
                session,
                call,
                progress_token,
                &context.peer,
            ) => {
                Ok(call_tool_result(&outcome).into())
            }
        }
    }
}

/// Never sent: rmcp drops the answer to a cancelled request, and a dropped stream has no
/// reader.
fn cancelled() -> ErrorData {
    ErrorData::new(ErrorCode::INTERNAL_ERROR, "the request was cancelled", None)
}

/// The JSON-RPC id as the call id: MCP forbids reusing a request id within a session, and the
/// session is the idempotency scope, so it keys a call once.
fn request_id(context: &RequestContext<RoleServer>) -> String {
    match serde_json::to_value(&context.id) {
        Ok(Value::String(s)) => s,
        Ok(other) => other.to_string(),
        Err(_) => String::new(),
    }
}
