//! The server a user configures: [`McpServer`], its defaults, and what every session shares.

use std::fmt;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use rmcp::model::Implementation;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ServerHandler, ServiceExt};
use tokio_util::sync::CancellationToken;
use toolwright_core::approval::Approver;
use toolwright_core::conversation::ConversationStore;
use toolwright_core::providers::{Export, ExportError, Provider};
use toolwright_core::validate::DEFAULT_MAX_ARGUMENT_BYTES;
use toolwright_core::{Registry, Session};

use crate::handler::Tools;
use crate::streamable::{Authorizer, HttpServer, ProtectedResource};
use crate::{conversations, input, listen, sessions, streamable, tasks};

/// The default cap on live streamable-HTTP sessions: 1,000.
pub const DEFAULT_MAX_SESSIONS: usize = 1_000;

/// The default cap on one principal's live sessions: 100.
pub const DEFAULT_MAX_SESSIONS_PER_PRINCIPAL: usize = 100;

/// The default time after which a session with nothing in flight ends: 60 seconds.
pub const DEFAULT_SESSION_IDLE_TIMEOUT: Duration = Duration::from_secs(60);

/// The default time after which a named conversation ([`CONVERSATION_KEY`]) that no request
/// used is forgotten: 30 minutes.
///
/// [`CONVERSATION_KEY`]: crate::CONVERSATION_KEY
pub const DEFAULT_CONVERSATION_IDLE_TIMEOUT: Duration = Duration::from_secs(30 * 60);

/// The default cap on open HTTP connections of [`McpServer::bind_http`]: 1,024.
pub const DEFAULT_MAX_CONNECTIONS: usize = 1_024;

/// The default time a client has to send a request's headers: 10 seconds.
pub const DEFAULT_HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// The default time a client has to send a request's whole body: 30 seconds.
pub const DEFAULT_BODY_READ_TIMEOUT: Duration = Duration::from_secs(30);

/// The default least time between two `notifications/progress` of one call: 50 ms
/// ([`toolwright::progress::DEFAULT_INTERVAL`](toolwright_core::progress::DEFAULT_INTERVAL)).
pub const DEFAULT_PROGRESS_INTERVAL: Duration = toolwright_core::progress::DEFAULT_INTERVAL;

/// Serves `registry` over stdio with the defaults: `McpServer::new(registry).serve_stdio()`.
///
/// ```no_run
/// # async fn demo(registry: toolwright::Registry) -> Result<(), toolwright::mcp::ServeError> {
/// toolwright::mcp::serve_stdio(registry).await
/// # }
/// ```
pub async fn serve_stdio(registry: Registry) -> Result<(), ServeError> {
    McpServer::new(registry).serve_stdio().await
}

type SessionFactory = dyn Fn(Session) -> Session + Send + Sync;

/// An MCP server for a registry: configure, then serve over stdio ([`McpServer::serve_stdio`]),
/// streamable HTTP ([`McpServer::serve_http`], [`McpServer::bind_http`],
/// [`McpServer::router`]) or any rmcp transport ([`McpServer::serve`]).
///
/// `F` makes each session's rmcp handler from the session's [`Tools`]. By default the handler
/// is the `Tools` itself, a server of tools alone; [`McpServer::with_handler`] serves your own
/// [`ServerHandler`] (your resources, prompts, completions) around it, with every transport and
/// protection of this type.
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use toolwright::approval::Approval;
/// use toolwright::Registry;
/// use toolwright::mcp::{Grant, McpServer};
///
/// let registry = Registry::builder().build().unwrap();
/// let server = McpServer::new(registry)
///     .name("support-tools", "1.2.0")
///     .instructions("Look an order up before refunding it.")
///     .max_argument_bytes(64 * 1024)
///     // each MCP session's toolwright session, after the server set its id, principal and
///     // scopes (from the grant) and its eliciting approver:
///     .session_factory(|session| session.with_idempotency_scope("support"))
///     // for clients that cannot elicit:
///     .approver(Arc::new(|_: &toolwright::approval::ApprovalRequest<'_>| {
///         Approval::Denied { reason: "no reviewer on this channel".into() }
///     }))
///     .approval_timeout(Duration::from_secs(120))
///     .authorize(|token: &str| (token == "secret").then(|| Grant::new("ops")))
///     // bounds of the HTTP server (the defaults shown):
///     .max_sessions(1_000)
///     .max_sessions_per_principal(100)
///     .session_idle_timeout(Duration::from_secs(60))
///     .max_connections(1_024)
///     .header_read_timeout(Duration::from_secs(10))
///     .body_read_timeout(Duration::from_secs(30));
/// # let _ = server;
/// ```
pub struct McpServer<F = fn(Tools) -> Tools> {
    registry: Registry,
    export: Export,
    implementation: Implementation,
    instructions: Option<String>,
    max_argument_bytes: usize,
    session_factory: Option<Arc<SessionFactory>>,
    fallback_approver: Option<Arc<dyn Approver>>,
    approval_timeout: Duration,
    authorizer: Option<Arc<dyn Authorizer>>,
    protected_resource: Option<ProtectedResource>,
    allowed_origins: Vec<String>,
    allowed_hosts: Option<Vec<String>>,
    remote: bool,
    sse_keep_alive: Duration,
    max_sessions: usize,
    max_sessions_per_principal: usize,
    session_idle_timeout: Duration,
    conversation_idle_timeout: Duration,
    request_state_key: Option<Arc<[u8]>>,
    request_state_store: Option<Arc<dyn ConversationStore>>,
    max_connections: usize,
    header_read_timeout: Duration,
    body_read_timeout: Duration,
    progress_interval: Duration,
    tasks: tasks::TaskRules,
    handler: F,
}

impl<F> fmt::Debug for McpServer<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpServer")
            .field("tools", &self.registry.names())
            .field("max_argument_bytes", &self.max_argument_bytes)
            .field("authorized", &self.authorizer.is_some())
            .finish_non_exhaustive()
    }
}

/// A tool as `tools/list` shows it (to the sessions [`Registry::is_visible`] allows).
pub(crate) struct Listed {
    pub(crate) name: String,
    pub(crate) tool: rmcp::model::Tool,
}

/// The tools as `tools/list` shows them, for one version of the registry's tool set.
pub(crate) struct ListedTools {
    pub(crate) version: u64,
    pub(crate) tools: Vec<Listed>,
    /// Whether one of them runs as a task (the server then offers tasks).
    pub(crate) tasks: bool,
}

/// The MCP definition of every tool of the registry's current tool set. At start an export
/// error stops the server; after a change (the registry serving already) a tool that cannot be
/// exported is left out of the list and logged, and the rest are listed.
fn list(registry: &Registry, export: &Export, strict: bool) -> Result<ListedTools, ServeError> {
    let version = registry.version();
    let mut tools = Vec::with_capacity(registry.specs().len());
    let tasks = registry.specs().iter().any(|spec| spec.is_task());
    for spec in registry.specs() {
        let listed = export
            .tool(spec)
            .map_err(ServeError::Export)
            .and_then(|definition| {
                serde_json::from_value(definition)
                    .map_err(|e| ServeError::Protocol(format!("tool '{}': {e}", spec.name())))
            });
        match listed {
            Ok(tool) => tools.push(Listed {
                name: spec.name().to_owned(),
                tool,
            }),
            Err(e) if strict => return Err(e),
            Err(e) => {
                tracing::warn!(target: "toolwright::mcp", tool = spec.name(), error = %e, "a tool added to the registry cannot be listed over MCP; it is left out")
            }
        }
    }
    Ok(ListedTools {
        version,
        tools,
        tasks,
    })
}

/// What one server serves, shared by every session: the registry, its listed tools, the settings.
pub(crate) struct Served {
    pub(crate) registry: Registry,
    export: Export,
    listed: std::sync::Mutex<Arc<ListedTools>>,
    pub(crate) implementation: Implementation,
    pub(crate) instructions: Option<String>,
    pub(crate) max_argument_bytes: usize,
    pub(crate) session_factory: Option<Arc<SessionFactory>>,
    pub(crate) fallback_approver: Option<Arc<dyn Approver>>,
    pub(crate) approval_timeout: Duration,
    pub(crate) progress_interval: Duration,
    pub(crate) conversations: conversations::Conversations,
    pub(crate) sealing: Arc<input::Sealing>,
    pub(crate) tasks: tasks::Tasks,
}

impl Served {
    /// The tools of the registry's current tool set, listed again after a change.
    pub(crate) fn tools(&self) -> Arc<ListedTools> {
        let mut listed = self
            .listed
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if listed.version != self.registry.version() {
            if let Ok(fresh) = list(&self.registry, &self.export, false) {
                *listed = Arc::new(fresh);
            }
        }
        Arc::clone(&listed)
    }
}

impl McpServer {
    /// A server for `registry`: named `toolwright`, arguments up to 1 MiB, approval asked by
    /// elicitation for up to 5 minutes, no authorization (stdio's trust model: the client
    /// started the process), HTTP on loopback only. It serves the registry's tools alone; see
    /// [`McpServer::with_handler`] to serve them beside your resources and prompts.
    pub fn new(registry: Registry) -> Self {
        McpServer {
            registry,
            export: Export::new(Provider::Mcp),
            implementation: Implementation::new("toolwright", env!("CARGO_PKG_VERSION")),
            instructions: None,
            max_argument_bytes: DEFAULT_MAX_ARGUMENT_BYTES,
            session_factory: None,
            fallback_approver: None,
            approval_timeout: Duration::from_secs(300),
            authorizer: None,
            protected_resource: None,
            allowed_origins: Vec::new(),
            allowed_hosts: None,
            remote: false,
            sse_keep_alive: Duration::from_secs(5),
            max_sessions: DEFAULT_MAX_SESSIONS,
            max_sessions_per_principal: DEFAULT_MAX_SESSIONS_PER_PRINCIPAL,
            session_idle_timeout: DEFAULT_SESSION_IDLE_TIMEOUT,
            conversation_idle_timeout: DEFAULT_CONVERSATION_IDLE_TIMEOUT,
            request_state_key: None,
            request_state_store: None,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            header_read_timeout: DEFAULT_HEADER_READ_TIMEOUT,
            body_read_timeout: DEFAULT_BODY_READ_TIMEOUT,
            progress_interval: DEFAULT_PROGRESS_INTERVAL,
            tasks: tasks::TaskRules::default(),
            handler: std::convert::identity,
        }
    }
}

impl<F> McpServer<F> {
    /// Serves your own rmcp [`ServerHandler`] (resources, prompts, completions, logging, as
    /// rmcp does them) with the registry's tools inside it: `factory` builds one per session
    /// (each stdio connection, each streamable-HTTP session, each 2026-07-28 request) around
    /// that session's [`Tools`], and every transport and protection of the server applies to
    /// it (the authorizer, each session bound to its principal, the caps, the timeouts). Your
    /// handler forwards `list_tools`, `call_tool`, `get_tool`, `on_initialized`,
    /// `on_custom_request`, `accepted_subscription_filter`, `listen`,
    /// `supported_protocol_versions` and `get_info` to the `Tools`, one line each (see
    /// [`Tools`]); rmcp's defaults would list no tools and refuse every call.
    ///
    /// Configure the server before or after: every other setting is kept.
    ///
    /// ```no_run
    /// use toolwright::Registry;
    /// use toolwright::mcp::rmcp::model::{
    ///     CallToolRequestParams, CallToolResponse, ListToolsResult, PaginatedRequestParams,
    ///     ServerConfig,
    /// };
    /// use toolwright::mcp::rmcp::service::{NotificationContext, RequestContext};
    /// use toolwright::mcp::rmcp::{ErrorData, RoleServer, ServerHandler};
    /// use toolwright::mcp::{McpServer, Tools};
    ///
    /// struct MyServer {
    ///     tools: Tools,
    ///     greeting: String,
    /// }
    ///
    /// impl ServerHandler for MyServer {
    ///     fn get_info(&self) -> ServerConfig {
    ///         let mut info = self.tools.get_info();
    ///         info.capabilities.prompts = Some(Default::default());
    ///         info
    ///     }
    ///     // The seven other forwards the same way (see `Tools`), and your prompts.
    ///     async fn list_tools(
    ///         &self,
    ///         request: Option<PaginatedRequestParams>,
    ///         context: RequestContext<RoleServer>,
    ///     ) -> Result<ListToolsResult, ErrorData> {
    ///         self.tools.list_tools(request, context).await
    ///     }
    ///     async fn call_tool(
    ///         &self,
    ///         request: CallToolRequestParams,
    ///         context: RequestContext<RoleServer>,
    ///     ) -> Result<CallToolResponse, ErrorData> {
    ///         self.tools.call_tool(request, context).await
    ///     }
    /// }
    ///
    /// # async fn demo(registry: Registry) -> Result<(), toolwright::mcp::ServeError> {
    /// let greeting = String::from("hello");
    /// McpServer::new(registry)
    ///     .name("notes", "1.0.0")
    ///     .with_handler(move |tools| MyServer { tools, greeting: greeting.clone() })
    ///     .serve_stdio()
    ///     .await
    /// # }
    /// ```
    pub fn with_handler<G, H>(self, factory: G) -> McpServer<G>
    where
        G: Fn(Tools) -> H + Send + Sync + 'static,
        H: ServerHandler,
    {
        McpServer {
            registry: self.registry,
            export: self.export,
            implementation: self.implementation,
            instructions: self.instructions,
            max_argument_bytes: self.max_argument_bytes,
            session_factory: self.session_factory,
            fallback_approver: self.fallback_approver,
            approval_timeout: self.approval_timeout,
            authorizer: self.authorizer,
            protected_resource: self.protected_resource,
            allowed_origins: self.allowed_origins,
            allowed_hosts: self.allowed_hosts,
            remote: self.remote,
            sse_keep_alive: self.sse_keep_alive,
            max_sessions: self.max_sessions,
            max_sessions_per_principal: self.max_sessions_per_principal,
            session_idle_timeout: self.session_idle_timeout,
            conversation_idle_timeout: self.conversation_idle_timeout,
            request_state_key: self.request_state_key,
            request_state_store: self.request_state_store,
            max_connections: self.max_connections,
            header_read_timeout: self.header_read_timeout,
            body_read_timeout: self.body_read_timeout,
            progress_interval: self.progress_interval,
            tasks: self.tasks,
            handler: factory,
        }
    }

    /// The least time between two `notifications/progress` of one call (default
    /// [`DEFAULT_PROGRESS_INTERVAL`], 50 ms). A tool that reports on every item of a tight loop
    /// would otherwise send thousands of notifications a second, each a JSON-RPC message the
    /// client parses and usually renders; 50 ms is about what a progress bar can show, so a
    /// person loses nothing. Reports inside an interval replace each other and the newest is
    /// sent when it ends; the last report is always sent, before the result. Zero sends every
    /// report, in order (for a client that records them all; a tight loop then floods it).
    ///
    /// ```
    /// use std::time::Duration;
    /// # let registry = toolwright::Registry::builder().build().unwrap();
    /// let server = toolwright::mcp::McpServer::new(registry).progress_interval(Duration::from_millis(250));
    /// # let _ = server;
    /// ```
    pub fn progress_interval(mut self, interval: Duration) -> Self {
        self.progress_interval = interval;
        self
    }

    /// The name and version `initialize` reports.
    pub fn name(mut self, name: impl Into<String>, version: impl Into<String>) -> Self {
        self.implementation = Implementation::new(name.into(), version.into());
        self
    }

    /// The `instructions` `initialize` returns, for the client to give its model.
    pub fn instructions(mut self, instructions: impl Into<String>) -> Self {
        self.instructions = Some(instructions.into());
        self
    }

    /// The export `tools/list` is made with, for annotations a tool's metadata cannot know
    /// ([`Export::mcp_hints`]).
    pub fn export(mut self, export: Export) -> Self {
        self.export = export;
        self
    }

    /// The largest argument text a call may carry, in bytes; a larger one is refused with
    /// JSON-RPC `-32602` naming the limit, before anything parses it. Default:
    /// [`DEFAULT_MAX_ARGUMENT_BYTES`], 1 MiB, the registry's own default.
    pub fn max_argument_bytes(mut self, bytes: usize) -> Self {
        self.max_argument_bytes = bytes;
        self
    }

    /// Shapes each MCP session's [`Session`]. It receives the session the server made (a
    /// unique id, the [`Grant`]'s principal and scopes over HTTP, the eliciting approver) and
    /// returns the one calls run in: add scopes for stdio clients, an idempotency scope, a key
    /// mode, ids to ground. An approver set here replaces elicitation.
    ///
    /// [`Grant`]: crate::Grant
    pub fn session_factory(
        mut self,
        factory: impl Fn(Session) -> Session + Send + Sync + 'static,
    ) -> Self {
        self.session_factory = Some(Arc::new(factory));
        self
    }

    /// The approver for clients that cannot elicit (without one, their calls of tools that
    /// require approval are denied).
    pub fn approver<A: Approver>(mut self, approver: Arc<A>) -> Self {
        self.fallback_approver = Some(approver);
        self
    }

    /// How long an elicited approval may take before the call is denied (default 5 minutes).
    pub fn approval_timeout(mut self, timeout: Duration) -> Self {
        self.approval_timeout = timeout;
        self
    }

    /// Requires a bearer token on every HTTP request, mapped to a principal and scopes by
    /// `authorizer`; a missing or rejected token is HTTP 401 and nothing runs. The token is
    /// checked on every request, not only the first of a session: a session is its opening
    /// principal's (another principal's requests on it are 404), and each request runs with
    /// the scopes of its own token. Ignored over stdio, where the client started the server.
    pub fn authorize(mut self, authorizer: impl Authorizer) -> Self {
        self.authorizer = Some(Arc::new(authorizer));
        self
    }

    /// Publishes the protected-resource metadata document and names it in 401 challenges.
    pub fn protected_resource(mut self, resource: ProtectedResource) -> Self {
        self.protected_resource = Some(resource);
        self
    }

    /// Browser origins allowed to call over HTTP (exact, like `https://app.example.com`).
    /// Default: loopback origins only. A request with another `Origin` is refused with 403;
    /// one without `Origin` (not a browser) passes.
    pub fn allowed_origins<I, S>(mut self, origins: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.allowed_origins = origins.into_iter().map(Into::into).collect();
        self
    }

    /// `Host` values accepted over HTTP (default: `localhost`, `127.0.0.1`, `::1`), against
    /// DNS rebinding; set the public host names when serving beyond loopback.
    pub fn allowed_hosts<I, S>(mut self, hosts: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.allowed_hosts = Some(hosts.into_iter().map(Into::into).collect());
        self
    }

    /// Allows [`McpServer::serve_http`] to bind an address other than loopback. Pair it with
    /// [`McpServer::authorize`] and [`McpServer::allowed_hosts`].
    pub fn allow_remote(mut self, allow: bool) -> Self {
        self.remote = allow;
        self
    }

    /// How often an open HTTP response stream gets a keep-alive comment (default 5 s); a
    /// client that went away is noticed, and its call cancelled, within about this long.
    pub fn sse_keep_alive(mut self, interval: Duration) -> Self {
        self.sse_keep_alive = interval;
        self
    }

    /// The most streamable-HTTP sessions live at once (default [`DEFAULT_MAX_SESSIONS`],
    /// 1,000). An `initialize` past it is refused with HTTP 503 and `Retry-After`, before
    /// anything is allocated for it; a session frees its place when the client sends `DELETE`
    /// or when it has been idle for [`McpServer::session_idle_timeout`].
    pub fn max_sessions(mut self, sessions: usize) -> Self {
        self.max_sessions = sessions;
        self
    }

    /// The most sessions one principal (a [`Grant::principal`]) may hold at once (default
    /// [`DEFAULT_MAX_SESSIONS_PER_PRINCIPAL`], 100), so one token cannot take every place;
    /// past it, 503 with `Retry-After`. Without [`McpServer::authorize`] every client is the
    /// same anonymous principal and only [`McpServer::max_sessions`] applies.
    ///
    /// [`Grant::principal`]: crate::Grant::principal
    pub fn max_sessions_per_principal(mut self, sessions: usize) -> Self {
        self.max_sessions_per_principal = sessions;
        self
    }

    /// How long a session may sit with no request in flight and no response stream open
    /// before it ends (default [`DEFAULT_SESSION_IDLE_TIMEOUT`], 60 s); a later request naming
    /// it gets 404 and the client starts a new session, as the MCP transport specifies. A call
    /// that runs, or waits on its approval, longer than this keeps its session.
    pub fn session_idle_timeout(mut self, timeout: Duration) -> Self {
        self.session_idle_timeout = timeout;
        self
    }

    /// How long a conversation a client names in `_meta` ([`CONVERSATION_KEY`]) is kept after
    /// its last request (default [`DEFAULT_CONVERSATION_IDLE_TIMEOUT`], 30 minutes). Named
    /// conversations share the caps of sessions: [`McpServer::max_sessions`] on the server (a
    /// new one past it is refused, `-32600`, until one is idle) and
    /// [`McpServer::max_sessions_per_principal`] per principal (past it, that principal's
    /// least recently used one is forgotten). A forgotten conversation kept in a conversation
    /// store by [`McpServer::session_factory`] continues from the store.
    ///
    /// [`CONVERSATION_KEY`]: crate::CONVERSATION_KEY
    pub fn conversation_idle_timeout(mut self, timeout: Duration) -> Self {
        self.conversation_idle_timeout = timeout;
        self
    }

    /// The key that seals the `requestState` of an approval asked of a 2026-07-28 client (an
    /// input-required result: the client sends the call again with the user's answer and the
    /// state). By default a random key of this process; give every replica behind one address
    /// the same key (at least 32 random bytes, kept secret), so the answer may reach any of
    /// them, and the same [`McpServer::request_state_store`], so that an approved state runs
    /// one call across all of them. A state is bound to the call's principal, tool and
    /// arguments, expires after [`McpServer::approval_timeout`], and approves one call.
    pub fn request_state_key(mut self, key: impl Into<Vec<u8>>) -> Self {
        self.request_state_key = Some(Arc::from(key.into()));
        self
    }

    /// Where an approved `requestState` is marked used when its call runs
    /// ([`ConversationStore::redeem`]): give every replica sharing a
    /// [`McpServer::request_state_key`] the store they all share (a `RedisConversationStore`),
    /// so the same approved request sent to two replicas runs on one of them and is refused
    /// (`approval_denied`, "already used") on the other. Without it, used approvals are kept in
    /// this process, which holds for one replica only.
    ///
    /// Each principal may have at most 4,096 approvals used within the approval timeout; past
    /// that its next approved call is refused (retry later), and other principals' are not.
    /// In this process's own table (and in a `MemoryConversationStore`) at most 65,536 in all
    /// ([`MAX_MEMORY_REDEMPTIONS`](toolwright_core::conversation::MAX_MEMORY_REDEMPTIONS)).
    /// The store failing refuses the call, never runs it unrecorded.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use toolwright::conversation::MemoryConversationStore;
    /// # let registry = toolwright::Registry::builder().build().unwrap();
    /// # let secret = vec![7u8; 32];
    /// // In production, the RedisConversationStore every replica shares.
    /// let shared = Arc::new(MemoryConversationStore::new());
    /// let server = toolwright::mcp::McpServer::new(registry)
    ///     .request_state_key(secret)
    ///     .request_state_store(shared);
    /// # let _ = server;
    /// ```
    pub fn request_state_store(mut self, store: Arc<dyn ConversationStore>) -> Self {
        self.request_state_store = Some(store);
        self
    }

    /// The most HTTP connections [`McpServer::bind_http`] keeps open at once (default
    /// [`DEFAULT_MAX_CONNECTIONS`], 1,024). A connection past it is answered 503 with
    /// `Retry-After: 1` and closed. Not applied to [`McpServer::router`], whose server is
    /// yours.
    pub fn max_connections(mut self, connections: usize) -> Self {
        self.max_connections = connections;
        self
    }

    /// How long [`McpServer::bind_http`] waits for a request's headers (default
    /// [`DEFAULT_HEADER_READ_TIMEOUT`], 10 s) before closing the connection, so a client that
    /// opens connections and sends nothing cannot hold them. Not applied to
    /// [`McpServer::router`].
    pub fn header_read_timeout(mut self, timeout: Duration) -> Self {
        self.header_read_timeout = timeout;
        self
    }

    /// How long a task lives (default [`DEFAULT_TASK_TTL`], 1 hour): a call of a tool declared
    /// `task` still working this long after it became a task is stopped by a timer (its
    /// future dropped, whether anyone polls or not) and reported `failed`, its status message
    /// naming the TTL; a finished task is forgotten this long after it finished. Set it above
    /// the longest of those tools' deadlines.
    ///
    /// Finished tasks and their results are also bounded, whatever the TTL: per principal
    /// [`MAX_FINISHED_TASKS_PER_PRINCIPAL`] (256) tasks and
    /// [`MAX_FINISHED_TASK_BYTES_PER_PRINCIPAL`] (8 MiB) of results, per server
    /// [`MAX_FINISHED_TASKS`] (10,000) and [`MAX_FINISHED_TASK_BYTES`] (256 MiB); past a bound
    /// the oldest finished task is forgotten first, and polling it is answered as for an
    /// unknown task. A result larger than a principal's byte bound is not kept: its task reads
    /// `failed`, saying so. With a [`task_store`](McpServer::task_store), another replica
    /// still reads a task this one forgot from the store, within the store's own bounds.
    ///
    /// ```
    /// use std::time::Duration;
    /// # let registry = toolwright::Registry::builder().build().unwrap();
    /// let server = toolwright::mcp::McpServer::new(registry)
    ///     .task_ttl(Duration::from_secs(6 * 3600))
    ///     .max_tasks_per_principal(20);
    /// # let _ = server;
    /// ```
    ///
    /// [`DEFAULT_TASK_TTL`]: crate::DEFAULT_TASK_TTL
    /// [`MAX_FINISHED_TASKS_PER_PRINCIPAL`]: crate::MAX_FINISHED_TASKS_PER_PRINCIPAL
    /// [`MAX_FINISHED_TASK_BYTES_PER_PRINCIPAL`]: crate::MAX_FINISHED_TASK_BYTES_PER_PRINCIPAL
    /// [`MAX_FINISHED_TASKS`]: crate::MAX_FINISHED_TASKS
    /// [`MAX_FINISHED_TASK_BYTES`]: crate::MAX_FINISHED_TASK_BYTES
    pub fn task_ttl(mut self, ttl: Duration) -> Self {
        self.tasks.ttl = ttl.max(Duration::from_millis(1));
        self
    }

    /// Keeps every task in `store` as well as in this process, so that `tasks/get` and
    /// `tasks/cancel` on any replica sharing the store answer for a task another replica runs
    /// (a cancellation reaches the running replica within a fifth of the lease). A replica that
    /// stops (a crash, a deploy) leaves its working tasks to be reported `failed` once their
    /// hold passes ([`McpServer::task_lease`]), never `working` forever. Use the
    /// `RedisConversationStore` every replica shares (the same store conversations use).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use toolwright::conversation::MemoryConversationStore;
    /// # let registry = toolwright::Registry::builder().build().unwrap();
    /// let store = Arc::new(MemoryConversationStore::new());
    /// let server = toolwright::mcp::McpServer::new(registry).task_store(store);
    /// # let _ = server;
    /// ```
    pub fn task_store(mut self, store: Arc<dyn ConversationStore>) -> Self {
        self.tasks.store = Some(store);
        self
    }

    /// How long a replica's hold on a task it runs lasts (default [`DEFAULT_TASK_LEASE`],
    /// 10 s), with a [`task_store`](McpServer::task_store): renewed every fifth of it, so a
    /// task whose replica stopped is reported `failed` at most this long after it stopped.
    ///
    /// [`DEFAULT_TASK_LEASE`]: crate::DEFAULT_TASK_LEASE
    pub fn task_lease(mut self, lease: Duration) -> Self {
        self.tasks.lease = lease.max(Duration::from_millis(5));
        self
    }

    /// The poll interval a task suggests to its client (default
    /// [`DEFAULT_TASK_POLL_INTERVAL`], 1 s).
    ///
    /// [`DEFAULT_TASK_POLL_INTERVAL`]: crate::DEFAULT_TASK_POLL_INTERVAL
    pub fn task_poll_interval(mut self, interval: Duration) -> Self {
        self.tasks.poll_interval = interval;
        self
    }

    /// The most tasks one principal may have working at once (default
    /// [`DEFAULT_MAX_TASKS_PER_PRINCIPAL`], 100). A task call takes its place before its
    /// checks (validation, approval) run, so calls still being checked count as working tasks
    /// do; past the cap it is refused with `-32600` before anything runs, telling the client
    /// to wait for one or cancel one. The place is given back when the call is answered
    /// without becoming a task, and when its task ends.
    ///
    /// With a [`task_store`](McpServer::task_store) the cap is decided in the store, for
    /// every replica sharing it: they admit up to it between them.
    ///
    /// [`DEFAULT_MAX_TASKS_PER_PRINCIPAL`]: crate::DEFAULT_MAX_TASKS_PER_PRINCIPAL
    pub fn max_tasks_per_principal(mut self, tasks: usize) -> Self {
        self.tasks.per_principal = tasks.max(1);
        self
    }

    /// The most tasks this server has working at once, whoever started them (default
    /// [`DEFAULT_MAX_TASKS`], 10,000): each holds its call's future and, with a
    /// [`task_store`](McpServer::task_store), a renewal. Counted as
    /// [`McpServer::max_tasks_per_principal`] is (calls under their checks included, and with
    /// a task store every replica sharing it); a task call past it is refused with `-32600`
    /// before anything runs.
    ///
    /// [`DEFAULT_MAX_TASKS`]: crate::DEFAULT_MAX_TASKS
    pub fn max_tasks(mut self, tasks: usize) -> Self {
        self.tasks.max = tasks.max(1);
        self
    }

    /// How long a request's body may take to arrive whole (default
    /// [`DEFAULT_BODY_READ_TIMEOUT`], 30 s), counted from its headers; a slower body is
    /// refused and its connection closed. Applies to [`McpServer::router`] too.
    pub fn body_read_timeout(mut self, timeout: Duration) -> Self {
        self.body_read_timeout = timeout;
        self
    }

    fn shared(&self) -> Result<Arc<Served>, ServeError> {
        let listed = list(&self.registry, &self.export, true)?;
        Ok(Arc::new(Served {
            registry: self.registry.clone(),
            export: self.export.clone(),
            listed: std::sync::Mutex::new(Arc::new(listed)),
            implementation: self.implementation.clone(),
            instructions: self.instructions.clone(),
            max_argument_bytes: self.max_argument_bytes,
            session_factory: self.session_factory.clone(),
            fallback_approver: self.fallback_approver.clone(),
            approval_timeout: self.approval_timeout,
            progress_interval: self.progress_interval,
            conversations: conversations::Conversations::new(conversations::Limits {
                max: self.max_sessions,
                per_principal: self.max_sessions_per_principal,
                idle: self.conversation_idle_timeout,
            }),
            sealing: Arc::new(
                input::Sealing::new(
                    self.request_state_key.as_deref(),
                    self.request_state_store.clone(),
                )
                .map_err(|_| {
                    ServeError::RequestStateKey(
                        self.request_state_key.as_ref().map_or(0, |k| k.len()),
                    )
                })?,
            ),
            tasks: tasks::Tasks::new(self.tasks.clone()),
        }))
    }
}

impl<F, H> McpServer<F>
where
    F: Fn(Tools) -> H + Send + Sync + 'static,
    H: ServerHandler,
{
    /// Serves one client over this process's stdin and stdout until it disconnects.
    pub async fn serve_stdio(self) -> Result<(), ServeError> {
        self.serve(rmcp::transport::stdio()).await
    }

    /// Serves one client over any rmcp transport (a pair of async streams such as
    /// `tokio::io::duplex`, a child process's pipes) until it disconnects.
    pub async fn serve<T, E, A>(self, transport: T) -> Result<(), ServeError>
    where
        T: rmcp::transport::IntoTransport<rmcp::RoleServer, E, A>,
        E: std::error::Error + Send + Sync + 'static,
    {
        let handler = (self.handler)(Tools::new(self.shared()?));
        let running = handler
            .serve(transport)
            .await
            .map_err(|e| ServeError::Protocol(e.to_string()))?;
        running
            .waiting()
            .await
            .map(|_| ())
            .map_err(|e| ServeError::Protocol(e.to_string()))
    }

    /// Serves streamable HTTP at `http://{addr}/mcp` until the process ends.
    pub async fn serve_http(self, addr: impl tokio::net::ToSocketAddrs) -> Result<(), ServeError> {
        self.bind_http(addr)
            .await?
            .wait()
            .await
            .map_err(ServeError::Io)
    }

    /// Binds `addr` (port 0 picks one) and serves streamable HTTP in the background; the
    /// [`HttpServer`] tells the address and shuts it down.
    pub async fn bind_http(
        self,
        addr: impl tokio::net::ToSocketAddrs,
    ) -> Result<HttpServer, ServeError> {
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(ServeError::Io)?;
        let local_addr = listener.local_addr().map_err(ServeError::Io)?;
        if !self.remote && !local_addr.ip().is_loopback() {
            return Err(ServeError::NotLoopback(local_addr));
        }
        let shutdown = CancellationToken::new();
        let limits = listen::ConnectionLimits {
            max_connections: self.max_connections,
            header_read_timeout: self.header_read_timeout,
        };
        let router = self.router(shutdown.child_token())?;
        let task = tokio::spawn(listen::serve(listener, router, limits, shutdown.clone()));
        Ok(HttpServer {
            local_addr,
            shutdown,
            task,
        })
    }

    /// The HTTP routes (`/mcp` and, when configured, the metadata document) to serve with your
    /// own axum server; `shutdown` ends every session. The session checks and caps, and the
    /// body read timeout, are in the routes; the connection cap and the header read timeout
    /// are the server's (yours, here). Call it inside a tokio runtime: idle sessions are ended
    /// by a task it starts.
    ///
    /// Set `TCP_NODELAY` on the connections your server accepts, as [`McpServer::bind_http`]
    /// does: rmcp streams a response's body after its head, and with Nagle's algorithm on, that
    /// second write waits for the client's delayed acknowledgement, about 40 ms on every
    /// request of a kept-alive connection. With `axum::serve`:
    ///
    /// ```no_run
    /// use axum::serve::ListenerExt;
    /// use toolwright::Registry;
    /// use toolwright::mcp::McpServer;
    /// use tokio_util::sync::CancellationToken;
    ///
    /// # async fn demo(registry: Registry) -> Result<(), Box<dyn std::error::Error>> {
    /// let router = McpServer::new(registry).router(CancellationToken::new())?;
    /// let listener = tokio::net::TcpListener::bind("127.0.0.1:8080")
    ///     .await?
    ///     .tap_io(|tcp| {
    ///         let _ = tcp.set_nodelay(true);
    ///     });
    /// axum::serve(listener, router).await?;
    /// # Ok(()) }
    /// ```
    pub fn router(self, shutdown: CancellationToken) -> Result<axum::Router, ServeError> {
        let shared = self.shared()?;
        // Body limit: the argument limit plus room for the envelope, and never below rmcp's
        // own, so an oversized argument gets the JSON-RPC error naming the limit, not a 413.
        let body_limit = self
            .max_argument_bytes
            .saturating_mul(2)
            .saturating_add(1 << 20)
            .max(16 << 20);
        let mut config = StreamableHttpServerConfig::default()
            .with_cancellation_token(shutdown.clone())
            .with_sse_keep_alive(Some(self.sse_keep_alive))
            .with_max_request_body_bytes(body_limit);
        if let Some(hosts) = &self.allowed_hosts {
            config = config.with_allowed_hosts(hosts.clone());
        }
        let sessions = sessions::OwnedSessions::new(sessions::Limits {
            max_sessions: self.max_sessions,
            max_sessions_per_principal: self.max_sessions_per_principal,
            idle_timeout: self.session_idle_timeout,
        });
        sessions.spawn_reaper(shutdown.clone());
        let factory = self.handler;
        let service: StreamableHttpService<H, sessions::OwnedSessions> = StreamableHttpService::new(
            move || Ok(factory(Tools::new(Arc::clone(&shared)))),
            Arc::clone(&sessions),
            config,
        );
        let guard = Arc::new(streamable::Guard {
            allowed_origins: self.allowed_origins,
            authorizer: self.authorizer,
            protected_resource: self.protected_resource.clone(),
            sessions,
            body_read_timeout: self.body_read_timeout,
        });
        // Served through an `Arc`: axum clones a route's service for each request, and rmcp's
        // service clones itself again to answer it (its configuration, the allowed hosts among
        // it); `handle` answers from the shared one.
        let service = Arc::new(service);
        let endpoint = axum::handler::Handler::with_state(
            move |request: axum::extract::Request| {
                let service = Arc::clone(&service);
                async move { service.handle(request).await }
            },
            (),
        );
        let router = axum::Router::new().nest_service("/mcp", endpoint).layer(
            axum::middleware::from_fn_with_state(guard, streamable::guard),
        );
        Ok(match &self.protected_resource {
            Some(resource) => streamable::metadata_routes(router, resource),
            None => router,
        })
    }
}

/// Why a server could not start or stopped.
#[derive(Debug)]
#[non_exhaustive]
pub enum ServeError {
    /// A tool cannot be expressed in MCP (its name, most often).
    Export(ExportError),
    /// Binding or serving failed.
    Io(std::io::Error),
    /// The address is not loopback and [`McpServer::allow_remote`] was not set.
    NotLoopback(SocketAddr),
    /// The MCP session failed (the handshake, the transport).
    Protocol(String),
    /// The key of [`McpServer::request_state_key`] is shorter than 32 bytes; it holds how
    /// long it is.
    RequestStateKey(usize),
}

impl fmt::Display for ServeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ServeError::Export(e) => write!(f, "a tool cannot be served over MCP: {e}"),
            ServeError::Io(e) => write!(f, "MCP server I/O: {e}"),
            ServeError::NotLoopback(addr) => write!(
                f,
                "{addr} is not a loopback address; call `allow_remote(true)` (with `authorize` \
                 and `allowed_hosts`) to serve beyond this machine"
            ),
            ServeError::Protocol(e) => write!(f, "MCP session: {e}"),
            ServeError::RequestStateKey(len) => write!(
                f,
                "the request-state key is {len} bytes; it must be at least 32 (random bytes, \
                 the same on every replica)"
            ),
        }
    }
}

impl std::error::Error for ServeError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ServeError::Export(e) => Some(e),
            ServeError::Io(e) => Some(e),
            _ => None,
        }
    }
}
