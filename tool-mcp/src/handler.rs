//! One MCP session: its toolwright [`Session`], the tools it may see, and `tools/call` through
//! the registry.

use std::borrow::Cow;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, OnceLock};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams, ClientCapabilities,
    ContentBlock, CustomRequest, CustomResult, ErrorCode, GetTaskParams, GetTaskResult,
    InputRequiredResult, ListToolsResult, PaginatedRequestParams, ProtocolVersion,
    RequestMetaObject, ResultType, ServerCapabilities, ServerConfig, SubscriptionFilter,
    UpdateTaskParams,
};
use rmcp::service::{NotificationContext, RequestContext, SubscriptionContext, SubscriptionSink};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::{json, Value};
use toolwright_core::approval::Approver;
use toolwright_core::registry::Inadmissible;
use toolwright_core::{providers, Outcome, Session, Status, ToolCall};

use crate::approval::ElicitingApprover;
use crate::conversations::{self, Named, CALL_KEY, CONVERSATION_KEY};
use crate::input::{
    level_code, log_level, Client, ElicitingAsker, Input, Level, EVERY_LEVEL, NO_LEVEL,
};
use crate::streamable::{Disconnected, Grant};
use crate::tasks::declares_tasks;
use crate::Served;

/// The registry's tools for one MCP session: `tools/list` and `tools/call` through the pipeline,
/// as an rmcp [`ServerHandler`].
///
/// [`McpServer`](crate::McpServer) makes one per stdio connection and one per streamable-HTTP
/// session, so everything a client's conversation owns (grounded ids, recovery budget,
/// idempotency scope) lives in it and ends with it. On its own it is the whole server
/// (what [`McpServer::new`](crate::McpServer::new) serves). Beside your resources, prompts and
/// completions, it is a field of your own [`ServerHandler`], which
/// [`McpServer::with_handler`](crate::McpServer::with_handler) builds around it per session, and
/// your handler forwards these methods to it, one line each:
///
/// | your [`ServerHandler`] method | forward to `Tools` | what it brings |
/// |---|---|---|
/// | `list_tools` | `self.tools.list_tools(request, context).await` | the tools this session is shown (scopes, `visible_when`), with their schemas |
/// | `call_tool` | `self.tools.call_tool(request, context).await` | the call through the pipeline in the session's [`Session`] (bound to its principal), the envelope, approval by elicitation, progress, cancellation |
/// | `on_initialized` | `self.tools.on_initialized(context).await` | `notifications/tools/list_changed` after each change of the registry's tool set |
/// | `on_custom_request` | `self.tools.on_custom_request(request, context).await` | `-32602` naming the field for `tools/call` params rmcp cannot read (after your own custom methods) |
/// | `supported_protocol_versions` | `self.tools.supported_protocol_versions()` | revisions up to 2026-07-28: 2025-11-25 with sessions, 2026-07-28 without |
/// | `get_tool` | `self.tools.get_tool(name)` | the tool's schema, against which rmcp checks a 2026-07-28 request's `Mcp-Param-*` headers |
/// | `accepted_subscription_filter` | `self.tools.accepted_subscription_filter(requested)` | a 2026-07-28 `subscriptions/listen` may ask for `tools/list_changed` (add your own kinds to the filter) |
/// | `listen` | `self.tools.listen(subscription).await` | `tools/list_changed` on that subscription ([`Tools::send_tool_changes`] beside your own notifications) |
/// | `get_task`, `cancel_task`, `update_task` | `self.tools.get_task(request, context).await`, and so on | the tasks of tools declared `task`: a call that runs past its request, polled and cancelled by the client that started it |
/// | `get_info` | `self.tools.get_info()`, then add your capabilities | the server's name, version and instructions, and the `tools` capability with `listChanged` |
///
/// rmcp cannot make a handler forward them: a handler that does not forward `list_tools`
/// gets rmcp's default, an empty list, and one that does not forward `call_tool` answers every
/// call "method not found"; without `on_initialized` the client is not told when the tools
/// change.
///
/// A request names its conversation with the `_meta` field [`CONVERSATION_KEY`]; without it a
/// 2026-07-28 request, which has no session, is a conversation of its own.
///
/// ```
/// use std::borrow::Cow;
///
/// use toolwright::Registry;
/// use toolwright::mcp::rmcp::model::{
///     CallToolRequestParams, CallToolResponse, CustomRequest, CustomResult, ListResourcesResult,
///     ListToolsResult, PaginatedRequestParams, ProtocolVersion, Resource, ResourcesCapability,
///     ServerConfig, SubscriptionFilter, Tool,
/// };
/// use toolwright::mcp::rmcp::service::{NotificationContext, RequestContext, SubscriptionContext};
/// use toolwright::mcp::rmcp::{ErrorData, RoleServer, ServerHandler};
/// use toolwright::mcp::{McpServer, Tools};
///
/// /// Your server: the registry's tools and a resource of your own.
/// struct Notes {
///     tools: Tools,
/// }
///
/// impl ServerHandler for Notes {
///     fn get_info(&self) -> ServerConfig {
///         let mut info = self.tools.get_info();
///         info.capabilities.resources = Some(ResourcesCapability::default());
///         info
///     }
///
///     fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
///         self.tools.supported_protocol_versions()
///     }
///
///     fn get_tool(&self, name: &str) -> Option<Tool> {
///         self.tools.get_tool(name)
///     }
///
///     fn accepted_subscription_filter(
///         &self,
///         requested: &SubscriptionFilter,
///     ) -> Option<SubscriptionFilter> {
///         self.tools.accepted_subscription_filter(requested)
///     }
///
///     async fn listen(&self, subscription: SubscriptionContext) -> Result<(), ErrorData> {
///         self.tools.listen(subscription).await
///     }
///
///     async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
///         self.tools.on_initialized(context).await
///     }
///
///     async fn on_custom_request(
///         &self,
///         request: CustomRequest,
///         context: RequestContext<RoleServer>,
///     ) -> Result<CustomResult, ErrorData> {
///         self.tools.on_custom_request(request, context).await
///     }
///
///     async fn list_tools(
///         &self,
///         request: Option<PaginatedRequestParams>,
///         context: RequestContext<RoleServer>,
///     ) -> Result<ListToolsResult, ErrorData> {
///         self.tools.list_tools(request, context).await
///     }
///
///     async fn call_tool(
///         &self,
///         request: CallToolRequestParams,
///         context: RequestContext<RoleServer>,
///     ) -> Result<CallToolResponse, ErrorData> {
///         self.tools.call_tool(request, context).await
///     }
///
///     // Yours, as rmcp does them:
///     async fn list_resources(
///         &self,
///         _request: Option<PaginatedRequestParams>,
///         _context: RequestContext<RoleServer>,
///     ) -> Result<ListResourcesResult, ErrorData> {
///         let readme = Resource::new("notes://readme", "readme");
///         Ok(ListResourcesResult::with_all_items(vec![readme]))
///     }
/// }
///
/// let registry = Registry::builder().build().unwrap();
/// let server = McpServer::new(registry).with_handler(|tools| Notes { tools });
/// # let _ = server;
/// ```
pub struct Tools {
    shared: Arc<Served>,
    /// Made at the first request, when the peer (for elicitation) and the caller's grant are
    /// known.
    session: OnceLock<Opened>,
    /// The task that tells this client when the registry's tool set changes; stopped when the
    /// session ends (rmcp drops its handler).
    watcher: OnceLock<AbortOnDrop>,
    /// The least level of log line this session's client takes (`logging/setLevel`).
    log_level: Arc<AtomicU8>,
}

/// The session as the first request made it, and the scopes its grant carried then (told apart
/// from those the session factory added, which every request keeps).
struct Opened {
    session: Session,
    granted: Vec<String>,
    /// Whether its approver asks the client (not the session factory's own).
    elicits: bool,
}

/// The session a request runs in, and whether the client named it ([`CONVERSATION_KEY`]).
struct Resolved<'a> {
    session: Cow<'a, Session>,
    named: bool,
    /// Whether its approver asks the client (not the session factory's own).
    elicits: bool,
}

/// `session` with the scopes of this request's `grant` in place of those it was opened with
/// (`granted`), keeping those the session factory added.
fn with_grant(session: &Session, granted: &[String], grant: &Grant) -> Session {
    let kept = session
        .scopes()
        .iter()
        .filter(|scope| !granted.contains(scope) && !grant.scopes().contains(scope));
    let scopes: Vec<String> = kept.chain(grant.scopes()).cloned().collect();
    session.clone().with_scopes(scopes)
}

/// A task aborted when its owner is dropped.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl std::fmt::Debug for Tools {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tools")
            .field("tools", &self.shared.registry.names())
            .field("session", &self.session.get().map(|o| o.session.id()))
            .finish_non_exhaustive()
    }
}

impl Tools {
    pub(crate) fn new(shared: Arc<Served>) -> Self {
        Tools {
            shared,
            session: OnceLock::new(),
            watcher: OnceLock::new(),
            log_level: Arc::new(AtomicU8::new(EVERY_LEVEL)),
        }
    }

    /// The toolwright session this request runs in. A request whose `_meta` names a
    /// conversation ([`CONVERSATION_KEY`]) gets that conversation of its principal, on any
    /// revision and any transport. Otherwise it is this handler's session: for a connection
    /// (stdio) or a streamable-HTTP session of 2025-11-25, bound to the principal of its first
    /// request (a request of another principal is refused; over HTTP the guard has already
    /// answered it 404); for a stateless 2026-07-28 request, which gets a handler of its own,
    /// a conversation of that request alone. Either way with the scopes of *this* request's
    /// grant, so a narrower token gets the narrower tools.
    fn session_for(
        &self,
        context: &RequestContext<RoleServer>,
        call_meta: Option<&RequestMetaObject>,
    ) -> Result<Resolved<'_>, ErrorData> {
        self.session_in(context, call_meta, is_stateless(context))
    }

    /// [`Tools::session_for`], told whether the request is stateless ([`is_stateless`]).
    fn session_in(
        &self,
        context: &RequestContext<RoleServer>,
        call_meta: Option<&RequestMetaObject>,
        stateless: bool,
    ) -> Result<Resolved<'_>, ErrorData> {
        let grant = context
            .extensions
            .get::<http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<Grant>());
        let metas = call_meta
            .into_iter()
            .chain([&context.meta])
            .map(|meta| &***meta);
        if let Some(key) = conversations::key_in(metas, CONVERSATION_KEY)? {
            let principal = grant.map(Grant::principal);
            let named = self
                .shared
                .conversations
                .get_or_open(principal, key, |id| {
                    let (opened, elicits) = self.open(id, grant, context);
                    Named {
                        session: opened.session,
                        granted: opened.granted,
                        elicits,
                    }
                })?;
            let mut session = match grant {
                Some(grant) => with_grant(&named.session, &named.granted, grant),
                None => named.session,
            };
            if named.elicits {
                // The client of this request is the one to ask.
                session = session
                    .with_approver(self.eliciting(context))
                    .with_asker(Arc::new(ElicitingAsker::new(
                        self.client(context, None),
                        self.shared.approval_timeout,
                    )));
            }
            return Ok(Resolved {
                session: Cow::Owned(session),
                named: true,
                elicits: named.elicits,
            });
        }
        let fresh = || self.open(conversations::fresh_id("mcp-"), grant, context).0;
        if stateless {
            // No session: a conversation of this request alone, over HTTP (where the request
            // has a handler of its own) and over stdio (where the connection has one) alike.
            let opened = fresh();
            return Ok(Resolved {
                elicits: opened.elicits,
                session: Cow::Owned(opened.session),
                named: false,
            });
        }
        let opened = self.session.get_or_init(fresh);
        let session = &opened.session;
        let Some(grant) = grant else {
            return Ok(Resolved {
                session: Cow::Borrowed(session),
                named: false,
                elicits: opened.elicits,
            });
        };
        if session.principal() != Some(grant.principal()) {
            return Err(ErrorData::invalid_request(
                "this MCP session belongs to another principal; start a new session",
                None,
            ));
        }
        let session = if grant.scopes() == opened.granted.as_slice() {
            Cow::Borrowed(session)
        } else {
            Cow::Owned(with_grant(session, &opened.granted, grant))
        };
        Ok(Resolved {
            session,
            named: false,
            elicits: opened.elicits,
        })
    }

    /// This MCP session's toolwright [`Session`] as `context`'s request may use it, for your
    /// own handlers (a resource only a principal may read, a prompt per scope): the principal
    /// that opened the MCP session (over HTTP with [`McpServer::authorize`]), the scopes of this
    /// request's token, the session factory's additions. It is the session `tools/call` runs
    /// in; the first request that asks makes it. A request of another principal is
    /// `-32600` (over HTTP the server has already answered it 404).
    ///
    /// [`McpServer::authorize`]: crate::McpServer::authorize
    ///
    /// ```
    /// use toolwright::mcp::rmcp::model::{ListResourcesResult, PaginatedRequestParams};
    /// use toolwright::mcp::rmcp::service::RequestContext;
    /// use toolwright::mcp::rmcp::{ErrorData, RoleServer};
    /// use toolwright::mcp::Tools;
    ///
    /// async fn list_resources(
    ///     tools: &Tools,
    ///     context: RequestContext<RoleServer>,
    /// ) -> Result<ListResourcesResult, ErrorData> {
    ///     let session = tools.session(&context)?;
    ///     if !session.scopes().iter().any(|s| s == "notes:read") {
    ///         return Ok(ListResourcesResult::default());
    ///     }
    ///     // ... the notes `session.principal()` may read
    ///     # Ok(ListResourcesResult::default())
    /// }
    /// ```
    pub fn session(&self, context: &RequestContext<RoleServer>) -> Result<Session, ErrorData> {
        self.session_for(context, None)
            .map(|resolved| resolved.session.into_owned())
    }

    /// A new conversation `id` for `grant`'s principal and scopes, asking approvals of
    /// `context`'s client, through the session factory; and whether its approver is still that
    /// one (the factory may set its own).
    fn open(
        &self,
        id: String,
        grant: Option<&Grant>,
        context: &RequestContext<RoleServer>,
    ) -> (Opened, bool) {
        let mut session = Session::new(id);
        if let Some(grant) = grant {
            session = session
                .with_principal(grant.principal())
                .with_scopes(grant.scopes().iter().cloned());
        }
        let eliciting = self.eliciting(context);
        session = session
            .with_approver(Arc::clone(&eliciting))
            .with_asker(Arc::new(ElicitingAsker::new(
                self.client(context, None),
                self.shared.approval_timeout,
            )));
        let session = match &self.shared.session_factory {
            Some(factory) => factory(session),
            None => session,
        };
        let elicits = session.approver().is_some_and(|approver| {
            std::ptr::addr_eq(
                approver as *const dyn Approver,
                Arc::as_ptr(&eliciting) as *const dyn Approver,
            )
        });
        let opened = Opened {
            session,
            granted: grant.map(|g| g.scopes().to_vec()).unwrap_or_default(),
            elicits,
        };
        (opened, elicits)
    }

    /// The client of `context`'s request, as a tool's questions and log lines reach it: a
    /// session's client takes log lines at or above the level it set (`logging/setLevel`, every
    /// line until it does), a 2026-07-28 request's at or above its `logLevel` (none without).
    fn client(
        &self,
        context: &RequestContext<RoleServer>,
        capabilities: Option<&ClientCapabilities>,
    ) -> Client {
        let level = if is_stateless(context) {
            Level::Request(
                context
                    .meta
                    .log_level()
                    .map_or(NO_LEVEL, |level| level_code(log_level(level))),
            )
        } else {
            Level::Session(Arc::clone(&self.log_level))
        };
        Client::new(context.peer.clone(), capabilities, level)
    }

    /// The approver that asks `context`'s client (by elicitation), or the fallback.
    fn eliciting(&self, context: &RequestContext<RoleServer>) -> Arc<ElicitingApprover> {
        Arc::new(ElicitingApprover::new(
            context.peer.clone(),
            self.shared.fallback_approver.clone(),
            self.shared.approval_timeout,
        ))
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

    /// The core's refusal of a call before it runs, as JSON-RPC `-32602`.
    fn inadmissible(&self, session: &Session, name: &str, refused: &Inadmissible) -> ErrorData {
        match refused {
            Inadmissible::UnknownTool => self.unknown_tool(session, name),
            Inadmissible::ArgumentsTooLarge { size, limit } => ErrorData::invalid_params(
                format!(
                    "the arguments of '{name}' are {size} bytes, over this server's limit of {limit} bytes; send less data"
                ),
                Some(json!({
                    "error_type": "arguments_too_large",
                    "size_bytes": size,
                    "limit_bytes": limit,
                })),
            ),
            other => ErrorData::invalid_params(other.to_string(), None),
        }
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

impl Tools {
    /// Sends `notifications/tools/list_changed` on `sink` after each change of the registry's
    /// tool set, until the subscription ends; for a `listen` of your own handler that also
    /// sends its prompts' or resources' changes:
    ///
    /// ```
    /// use toolwright::mcp::rmcp::service::SubscriptionContext;
    /// use toolwright::mcp::rmcp::ErrorData;
    /// use toolwright::mcp::Tools;
    ///
    /// async fn listen(tools: &Tools, subscription: SubscriptionContext) -> Result<(), ErrorData> {
    ///     let prompts = async {
    ///         // ... `subscription.sink().notify_prompt_list_changed().await` when yours change
    ///         std::future::pending::<()>().await
    ///     };
    ///     tokio::select! {
    ///         () = subscription.cancelled() => {}
    ///         () = tools.send_tool_changes(subscription.sink().clone()) => {}
    ///         () = prompts => {}
    ///     }
    ///     Ok(())
    /// }
    /// ```
    pub async fn send_tool_changes(&self, sink: SubscriptionSink) {
        let mut changes = self.shared.registry.subscribe();
        changes.mark_unchanged();
        while changes.changed().await.is_ok() {
            if sink.notify_tool_list_changed().await.is_err() {
                break;
            }
        }
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
        if let Ok(mut result) =
            serde_json::from_value::<CallToolResult>(providers::mcp::call_tool_result(outcome))
        {
            // What rmcp's constructors set; rmcp removes it for a peer of an older revision.
            result.result_type = Some(ResultType::COMPLETE);
            return result;
        }
    }
    // The envelope is written once, as text; `structuredContent` is read back from it rather
    // than built again through serde (which measured the envelope a second time for a failed
    // call and copied its schema node by node).
    let text = outcome.to_model_string();
    let structured = serde_json::from_str(&text).unwrap_or_else(|_| outcome.to_model_json());
    let text = vec![ContentBlock::text(text)];
    let mut result = if outcome.status() == Status::Error {
        CallToolResult::error(text)
    } else {
        CallToolResult::success(text)
    };
    result.structured_content = Some(structured);
    result
}

impl ServerHandler for Tools {
    /// The server's name and version and its `instructions` (from
    /// [`McpServer::name`](crate::McpServer::name) and
    /// [`McpServer::instructions`](crate::McpServer::instructions)), and the `tools`
    /// capability with `listChanged`. A handler of yours starts from this and adds its own
    /// capabilities (`info.capabilities.resources = Some(..)`).
    #[allow(deprecated)] // logging is in both revisions served
    fn get_info(&self) -> ServerConfig {
        let mut capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_tool_list_changed()
            .enable_logging()
            .build();
        // Tasks are offered while the registry has a tool that runs as one.
        if self.shared.tools().tasks {
            capabilities
                .extensions
                .get_or_insert_with(Default::default)
                .insert(
                    rmcp::model::TASKS_EXTENSION_ID.to_owned(),
                    serde_json::Map::new(),
                );
        }
        let mut config =
            ServerConfig::new(capabilities).with_server_info(self.shared.implementation.clone());
        if let Some(instructions) = &self.shared.instructions {
            config = config.with_instructions(instructions.clone());
        }
        config
    }

    /// Sets the least level of the log lines this session's tools send its client
    /// ([`ToolContext::log`](toolwright_core::ToolContext::log)). A 2026-07-28 request sets its
    /// own in `_meta` instead.
    #[allow(deprecated)] // logging is in both revisions served
    async fn set_level(
        &self,
        request: rmcp::model::SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.log_level
            .store(level_code(log_level(request.level)), Ordering::Relaxed);
        Ok(())
    }

    /// Every revision rmcp knows up to 2026-07-28: 2025-11-25 and earlier with sessions
    /// (`initialize`, `Mcp-Session-Id`), 2026-07-28 without (each request carries its version
    /// and capabilities, and names its conversation in `_meta`, see [`CONVERSATION_KEY`]).
    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(ProtocolVersion::known_up_to(&ProtocolVersion::V_2026_07_28))
    }

    /// The tool `name` as `tools/list` shows it to a client that may see every tool: rmcp
    /// checks a 2026-07-28 request's `Mcp-Param-*` headers against its input schema. Which
    /// tools a session may call is decided by `call_tool`.
    fn get_tool(&self, name: &str) -> Option<rmcp::model::Tool> {
        let listed = self.shared.tools();
        listed
            .tools
            .iter()
            .find(|tool| tool.name == name)
            .map(|tool| tool.tool.clone())
    }

    /// A 2026-07-28 `subscriptions/listen` gets `notifications/tools/list_changed`, what the
    /// `listChanged` capability promises; other notifications are your handler's to accept.
    fn accepted_subscription_filter(
        &self,
        _requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        Some(SubscriptionFilter::builder().tools_list_changed().build())
    }

    /// Sends `notifications/tools/list_changed` on the subscription after each change of the
    /// registry's tool set ([`Tools::send_tool_changes`]), until the client cancels it or the
    /// stream closes.
    async fn listen(&self, subscription: SubscriptionContext) -> Result<(), ErrorData> {
        // Boxed: rmcp's future for every request has room for the largest handler future it
        // may run, so a large one here would be copied with every `tools/call`.
        Box::pin(async {
            tokio::select! {
                () = subscription.cancelled() => {}
                () = self.send_tool_changes(subscription.sink().clone()) => {}
            }
        })
        .await;
        Ok(())
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

    /// rmcp hands a request it cannot read as one of its methods over as a custom request: for
    /// `tools/call` (non-object `arguments`, a missing `name`), that is invalid params naming
    /// the field, not "method not found".
    async fn on_custom_request(
        &self,
        request: CustomRequest,
        _context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        if request.method == "tools/call" {
            return Err(invalid_call_params(request.params.as_ref()));
        }
        Err(ErrorData::new(
            ErrorCode::METHOD_NOT_FOUND,
            request.method,
            None,
        ))
    }

    /// The tools this session is shown ([`Registry::is_visible`](toolwright_core::Registry::is_visible):
    /// its scopes, `visible_when`, `tool_filter`), all in one page. For a 2026-07-28 request,
    /// what a new conversation of its principal is shown: that revision's list varies by
    /// authorization only, never by the conversation the request names.
    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        if is_stateless(&context) {
            // 2026-07-28: the list varies by authorization only, not by the conversation a
            // request names, so it is what a new conversation of this principal is shown.
            let grant = context
                .extensions
                .get::<http::request::Parts>()
                .and_then(|parts| parts.extensions.get::<Grant>());
            let fresh = self
                .open(conversations::fresh_id("mcp-"), grant, &context)
                .0;
            return Ok(ListToolsResult::with_all_items(
                self.visible(&fresh.session),
            ));
        }
        let resolved = self.session_for(&context, None)?;
        Ok(ListToolsResult::with_all_items(
            self.visible(&resolved.session),
        ))
    }

    /// `tasks/get` for a task of this caller's: its status, and once done the call's result
    /// (the envelope, as `tools/call` would have answered it). Another caller's task is
    /// answered as an unknown one.
    async fn get_task(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        let resolved = self.session_for(&context, request.meta.as_ref())?;
        let task = self
            .shared
            .tasks
            .get(resolved.session.principal(), &request.task_id)
            .await?;
        Ok(GetTaskResult::new(task))
    }

    /// `tasks/cancel` for a task of this caller's: the call's future is dropped, with its
    /// attempt; the task ends `cancelled` (a side-effecting tool's effect is then unknown, and
    /// its status message says so).
    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let resolved = self.session_for(&context, request.meta.as_ref())?;
        self.shared
            .tasks
            .cancel(resolved.session.principal(), &request.task_id)
            .await
    }

    /// `tasks/update` for a task of this caller's: the client's answers to the questions its
    /// tool waits for (`inputResponses`, under the keys `tasks/get` showed), on any replica.
    async fn update_task(
        &self,
        request: UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let resolved = self.session_for(&context, request.meta.as_ref())?;
        self.shared
            .tasks
            .update(
                resolved.session.principal(),
                &request.task_id,
                request.input_responses,
            )
            .await
    }

    /// The call through the registry in this session's [`Session`]: every outcome a result
    /// with the envelope (`isError` when it failed; a tool whose scopes the session lacks is
    /// `unauthorized`, as in process), a tool that does not exist for the session (none such,
    /// or hidden by a predicate) or arguments over the limit `-32602`; approval by
    /// elicitation, progress for a `progressToken`, cancellation by `notifications/cancelled`
    /// or a dropped stream.
    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let stateless = is_stateless(&context);
        let resolved = self.session_in(&context, request.meta.as_ref(), stateless)?;
        let name = request.name;
        let arguments = match &request.arguments {
            Some(arguments) => serde_json::to_string(arguments)
                .map_err(|e| ErrorData::invalid_params(e.to_string(), None))?,
            None => "{}".to_owned(),
        };
        // The core decides what is refused before the call (a name that does not exist for this
        // session, arguments over this server's limit); this maps its verdict to JSON-RPC. Every
        // other call is the registry's to answer, as in process: a tool whose scopes the
        // session lacks is `unauthorized`, and a deferred tool the session has not been seen to
        // find may have been found on another replica (if it was not, `unknown_tool` telling
        // the model to search).
        let registry = &self.shared.registry;
        let limit = self.shared.max_argument_bytes;
        if let Err(refused) = registry.admit(&name, &arguments, &resolved.session, limit) {
            return Err(self.inadmissible(&resolved.session, &name, &refused));
        }
        // Read once: rmcp copies them out of the request or the session on every read.
        let capabilities = context.client_capabilities();
        // A tool that runs only as a task is refused, before anything runs, to a client that
        // does not take tasks: it is told the extension to declare (SEP-2663).
        if !declares_tasks(capabilities.as_ref())
            && registry.spec(&name).is_some_and(|spec| spec.is_task_only())
        {
            return Err(ErrorData::missing_required_client_capability(
                ClientCapabilities::builder().enable_tasks().build(),
            ));
        }
        // A search that finds tools changes what this session's `tools/list` holds.
        let searching = !stateless && registry.search_tool() == Some(name.as_ref());
        let listed_before = searching.then(|| registry.specs_for(&resolved.session).count());
        // A 2026-07-28 client that can answer a form is asked (for approval, for a tool's
        // questions) by an input-required result, and sends the call again with the answer;
        // a session's client is asked at once (the session's own asker and approver).
        if let Some(refused) = registry
            .spec(&name)
            .and_then(|spec| missing_capability(spec.requires_client(), capabilities.as_ref()))
        {
            return Err(refused);
        }
        let input = (stateless && answers_input(capabilities.as_ref())).then(|| {
            Arc::new(
                Input::new(
                    Arc::clone(&self.shared.sealing),
                    self.shared.approval_timeout,
                    (resolved.session.principal(), &name, &arguments),
                    request.request_state.as_deref(),
                    request.input_responses.clone(),
                )
                .with_client(self.client(&context, capabilities.as_ref())),
            )
        });
        if input.as_ref().is_some_and(|input| input.forged()) {
            // The spec's rule: state that fails its integrity check is a protocol error.
            return Err(ErrorData::invalid_params(
                format!("`requestState` of tools/call: {}", crate::input::FORGED),
                Some(json!({"error_type": "schema_mismatch", "path": "/params/requestState"})),
            ));
        }
        let session = match &input {
            Some(input) => {
                let mut session = resolved
                    .session
                    .as_ref()
                    .clone()
                    .with_asker(Arc::clone(input));
                if resolved.elicits && answers_forms(capabilities.as_ref()) {
                    session = session.with_approver(Arc::clone(input));
                }
                Cow::Owned(session)
            }
            None => resolved.session,
        };
        let session = session.as_ref();
        let named_call = if resolved.named {
            // The client's JSON-RPC ids are not the conversation's: another client of the
            // same conversation, or the same request sent again, may use any id.
            let metas = request
                .meta
                .iter()
                .chain([&context.meta])
                .map(|meta| &***meta);
            conversations::key_in(metas, CALL_KEY)?.map(|call| format!("call:{call}"))
        } else {
            None
        };
        // A call sent again with the answers of a sealed round is the same call each time it
        // is sent with them: keyed by the round, so a side-effecting tool that asked runs once
        // and the same request sent again is replayed (in the idempotency store the replicas
        // share, when they share one).
        let round = input.as_ref().and_then(|input| input.round_key());
        let mut session = Cow::Borrowed(session);
        let call_id = match (named_call, &round) {
            (Some(call), _) => call,
            (None, Some(round)) => {
                if !resolved.named {
                    let scope = format!("mcp-input:{}", resolved_principal(&session));
                    session = Cow::Owned(session.as_ref().clone().with_idempotency_scope(scope));
                }
                format!("input:{round}")
            }
            (None, None) if resolved.named => conversations::fresh_id("request:"),
            (None, None) => request_id(&context),
        };
        let session = session.as_ref();
        let call = ToolCall::new(call_id, name, arguments);
        // A long-running tool's call, from a client that takes tasks: a task once it passed
        // its checks.
        if declares_tasks(capabilities.as_ref()) {
            if let Some(spec) = registry.spec(call.name()).filter(|spec| spec.is_task()) {
                let side_effecting = !spec.idempotent();
                let task_only = spec.is_task_only();
                // Boxed: the future rmcp spawns for every request holds this one's state only
                // for the calls that take this path.
                return Box::pin(crate::tasks::call_as_task(
                    &self.shared,
                    call,
                    session,
                    resolved.named,
                    input,
                    &context,
                    (side_effecting, task_only),
                ))
                .await;
            }
        }
        let progress_token = request
            .meta
            .as_ref()
            .and_then(|meta| meta.get_progress_token())
            .or_else(|| context.meta.get_progress_token());
        // rmcp cancels `ct` on `notifications/cancelled`, on a dropped HTTP response stream and
        // when the connection ends; dropping the registry future here drops the attempt.
        tokio::select! {
            biased;
            () = context.ct.cancelled() => Err(cancelled()),
            () = disconnected(&context) => Err(cancelled()),
            outcome = crate::progress::call_reporting(
                &self.shared.registry,
                session,
                call,
                progress_token,
                self.shared.progress_interval,
                &context.peer,
            ) => {
                let answer = answered(&outcome, input);
                if matches!(answer, CallToolResponse::Complete(_))
                    && listed_before.is_some_and(|before| registry.specs_for(session).count() > before)
                {
                    // Best effort: a client that is gone gets the tools in its next list.
                    // Boxed, as it is rare, to keep every call's future small.
                    let _ = Box::pin(context.peer.notify_tool_list_changed()).await;
                }
                Ok(answer)
            }
        }
    }
}

/// Ends when the request's HTTP response stream is dropped (never, over stdio).
pub(crate) async fn disconnected(context: &RequestContext<RoleServer>) {
    let token = context
        .extensions
        .get::<http::request::Parts>()
        .and_then(|parts| parts.extensions.get::<Disconnected>());
    match token {
        Some(Disconnected(token)) => token.cancelled().await,
        None => std::future::pending().await,
    }
}

/// What a call that finished within its request answers: the question it asked (2026-07-28,
/// a client that answers forms), or its result.
pub(crate) fn answered(outcome: &Outcome, input: Option<Arc<Input>>) -> CallToolResponse {
    if let Some((requests, state)) = input.and_then(|input| input.asked()) {
        return CallToolResponse::InputRequired(InputRequiredResult::new(
            Some(requests),
            Some(state),
        ));
    }
    call_tool_result(outcome).into()
}

/// Whether the request is of 2026-07-28 or later: no session, self-contained.
fn is_stateless(context: &RequestContext<RoleServer>) -> bool {
    context
        .protocol_version()
        .is_some_and(|version| version >= ProtocolVersion::V_2026_07_28)
}

/// Whether the request's client can answer a form (elicitation); for a request of 2026-07-28
/// or later, this means it is asked by an input-required result.
fn answers_forms(capabilities: Option<&ClientCapabilities>) -> bool {
    capabilities.is_some_and(|capabilities| capabilities.elicitation.is_some())
}

/// The principal of `session`, length-prefixed, for a scope of keys no other principal shares.
fn resolved_principal(session: &Session) -> String {
    let principal = session.principal().unwrap_or("");
    format!("{}:{principal}", principal.len())
}

/// `-32021` naming what of `required` a client with `capabilities` did not declare, if any.
#[allow(deprecated)] // sampling and roots are in both revisions served
fn missing_capability(
    required: &[&str],
    capabilities: Option<&ClientCapabilities>,
) -> Option<ErrorData> {
    let missing: serde_json::Map<String, Value> = required
        .iter()
        .filter(|name| {
            !capabilities.is_some_and(|c| match **name {
                "elicitation" => c.elicitation.is_some(),
                "sampling" => c.sampling.is_some(),
                "roots" => c.roots.is_some(),
                _ => true,
            })
        })
        .map(|name| ((*name).to_owned(), json!({})))
        .collect();
    if missing.is_empty() {
        return None;
    }
    let names: Vec<&str> = missing.keys().map(String::as_str).collect();
    Some(ErrorData::new(
        rmcp::model::ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY,
        format!(
            "this tool needs a client that declares the {} capability; this one did not",
            names.join(" and ")
        ),
        Some(json!({"requiredCapabilities": missing})),
    ))
}

/// Whether a client answers any question a tool may ask: a form, a sampling request, roots.
#[allow(deprecated)] // sampling and roots are in both revisions served
fn answers_input(capabilities: Option<&ClientCapabilities>) -> bool {
    capabilities
        .is_some_and(|c| c.elicitation.is_some() || c.sampling.is_some() || c.roots.is_some())
}

/// Never sent: rmcp drops the answer to a cancelled request, and a dropped stream has no
/// reader.
pub(crate) fn cancelled() -> ErrorData {
    ErrorData::new(ErrorCode::INTERNAL_ERROR, "the request was cancelled", None)
}

/// The JSON-RPC id as the call id, in its JSON form: `41` and `"41"` are distinct JSON-RPC ids
/// and stay distinct call ids (`41` and `"41"`). MCP forbids reusing a request id within a
/// session, and the session is the idempotency scope, so it keys a call once: a request
/// retried with the same id and arguments replays the first one's outcome.
fn request_id(context: &RequestContext<RoleServer>) -> String {
    serde_json::to_string(&context.id).unwrap_or_default()
}

/// `-32602` for `tools/call` params rmcp could not read (it hands them over as a custom
/// request): the field at fault, what it must be and what came.
fn invalid_call_params(params: Option<&Value>) -> ErrorData {
    let (field, expected, got) = match params {
        None => (
            "params",
            "an object with `name` and `arguments`",
            "nothing".to_owned(),
        ),
        Some(Value::Object(params)) => match (params.get("name"), params.get("arguments")) {
            (Some(Value::String(_)), Some(arguments))
                if !arguments.is_object() && !arguments.is_null() =>
            {
                (
                    "arguments",
                    "an object of the tool's parameters",
                    kind(arguments),
                )
            }
            (Some(Value::String(_)), _) => {
                let error =
                    serde_json::from_value::<CallToolRequestParams>(Value::Object(params.clone()))
                        .err()
                        .map(|e| e.to_string())
                        .unwrap_or_default();
                return ErrorData::invalid_params(
                    format!("invalid `tools/call` params: {error}"),
                    Some(json!({"error_type": "schema_mismatch"})),
                );
            }
            (name, _) => (
                "name",
                "the tool's name as a string",
                name.map_or("nothing".to_owned(), kind),
            ),
        },
        Some(other) => (
            "params",
            "an object with `name` and `arguments`",
            kind(other),
        ),
    };
    ErrorData::invalid_params(
        format!("`{field}` of tools/call must be {expected}, got {got}"),
        Some(json!({
            "error_type": "schema_mismatch",
            "path": format!("/params/{field}"),
            "expected": expected,
            "got": got,
        })),
    )
}

/// What a JSON value is, for a message: `a number (5)`, `an array`.
fn kind(value: &Value) -> String {
    let shown = |v: &Value| {
        let text = v.to_string();
        if text.len() > 40 {
            format!("{}...", text.chars().take(40).collect::<String>())
        } else {
            text
        }
    };
    match value {
        Value::Null => "null".to_owned(),
        Value::Bool(b) => format!("a boolean ({b})"),
        Value::Number(_) => format!("a number ({})", shown(value)),
        Value::String(_) => format!("a string ({})", shown(value)),
        Value::Array(_) => "an array".to_owned(),
        Value::Object(_) => "an object".to_owned(),
    }
}
