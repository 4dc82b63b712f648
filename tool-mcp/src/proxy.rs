//! Tools of another MCP server, run through the whole pipeline (the `proxy` feature).
//!
//! [`Upstream`] connects to an MCP server with rmcp's client (a child process over stdio, or
//! streamable HTTP), lists its tools and turns each into a
//! [`DynamicTool`]: every call to it gets validation against the tool's input schema with every
//! violation reported, its timeout, classified retries, the breaker, an idempotency key for a
//! tool the server does not mark idempotent or read-only, approval, and the envelope. The
//! server's `readOnlyHint` and `idempotentHint` annotations choose the effect.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use toolwright::Registry;
//! use toolwright::mcp::proxy::Upstream;
//!
//! let upstream = Upstream::spawn(tokio::process::Command::new("some-mcp-server")).await?;
//! let proxied = upstream.tools();
//! for (name, why) in &proxied.refused {
//!     eprintln!("{name} is not proxied: {why}");
//! }
//! let registry = proxied
//!     .tools
//!     .into_iter()
//!     .fold(Registry::builder(), |b, tool| b.dynamic_tool(tool))
//!     .build()?;
//! # let _ = registry; Ok(()) }
//! ```
//!
//! How the upstream's answers are classified:
//!
//! | upstream answer | outcome |
//! |---|---|
//! | a result | success: its `structuredContent`, or its text (as JSON when it is JSON) |
//! | a result with `isError: true` | `bad_request`, the server's text as the message (the model may try other arguments) |
//! | JSON-RPC invalid params (-32602) | `bad_request` |
//! | JSON-RPC method or tool not found (-32601) | `not_found` |
//! | another JSON-RPC error, a closed connection, a send failure | `unavailable` (transient: retried when the tool's effect allows) |
//! | no answer within the tool's timeout | `timeout` |
//! | an answer that is not a result (malformed) | `invalid_result` |
//! | an answer over the limit ([`UpstreamBuilder::max_answer_bytes`], 16 MiB by default) | `invalid_result` at once, not retried (the upstream was asked once), naming the limit |
//! | a call to a tool the upstream changed (input schema, output schema, annotations) or removed since it was listed | `not_found` before anything is sent: rebuild the registry from [`Upstream::tools`] |
//! | a name the upstream lists twice or more | not proxied: every copy in [`Proxied::refused`] (`BuildError::ListedMoreThanOnce`) |
//!
//! **Answers over the limit.** Over [`spawn`](Upstream::spawn) and
//! [`connect_io`](Upstream::connect_io), the proxy reads the upstream's lines through a
//! bounded reader of its own: a line over the limit is discarded as it arrives (memory stays
//! within the limit), its JSON-RPC `id` is recovered from its first and last 4 KiB, and the
//! waiting call gets the error at once. An oversize line whose id cannot be recovered (not
//! among its first members, nor among the last ones after the big value), or that is a
//! request or notification from the upstream, is dropped, and a call waiting for it ends in
//! `timeout`. Over [`connect_http`](Upstream::connect_http), the limit is rmcp's
//! `max_json_response_size` and `max_sse_event_size`: a JSON response body over it fails that
//! request at once, which the proxy classifies `invalid_result`; an SSE event over it ends the
//! response stream, which rmcp answers with a "response stream closed before its final
//! response" error that cannot be told from a dropped stream, so that call is `unavailable`
//! (transient: retried when the tool's effect allows). [`connect`](Upstream::connect) with a
//! transport of your own has that transport's bound (rmcp's `AsyncRwTransport` drops a line
//! over 16 MiB silently: `timeout`).
//!
//! **What an upstream tool asks.** Connected at 2026-07-28
//! ([`UpstreamBuilder::revision`]), the proxy declares forms, sampling and roots to the
//! upstream, and an upstream tool's input-required result is passed to the proxy's own client
//! through the call's `ToolContext`: every question of a round together (a form as a form, a
//! sampling request of text messages as a sampling request, a roots request as one), then the
//! call is sent on with the answers and the upstream's `requestState`, at most
//! [`MAX_INPUT_ROUNDS`] rounds. The downstream client sees the questions as a local tool's,
//! in its own revision. Not passed on: URL elicitations and sampling of images or tool use
//! (the call fails `invalid_result`, naming them), and an upstream tool's log lines (rmcp's
//! client does not tie a notification to the call it belongs to).
//!
//! **Upstream tasks.** At 2026-07-28 the proxy also declares the tasks extension. An upstream
//! call answered with a task is followed to its end within the attempt: `tasks/get` at the
//! interval the upstream asks (between 50 ms and 5 s), its status messages as the call's
//! progress, its questions passed on as above and answered by `tasks/update`, its result as the
//! call's; a `failed` or `cancelled` task is `unavailable`. A call that stops following it
//! first (its timeout, its deadline, the downstream client's cancellation) cancels the task
//! upstream. Downstream, a proxied tool named in [`UpstreamBuilder::task_tools`] is a task
//! tool (a client that takes tasks gets a task); any other is an ordinary tool that waits for
//! the upstream's task within its [`Upstream::timeout`].
//!
//! **Tool list changes.** An upstream that sends `notifications/tools/list_changed` is listed
//! again; every proxied tool whose definition changed or that vanished (or whose name is now
//! listed twice) is stale from then on, and a call to it is refused before it is sent, while
//! unchanged tools keep working. The notification is counted as the transport reads it, so
//! every call that starts after that waits for the re-list to finish before it is checked and
//! sent (one re-list at a time); if re-listing fails, the call is `unavailable` (retried when
//! the tool's effect allows: the next attempt lists again). A call already sent gets its own
//! answer, routed by its JSON-RPC id. A call sent before the notification was read was, from
//! the upstream's side too, sent before the change reached the proxy. A tool renamed and its
//! name reused with the same definition cannot be told apart and keeps working.
//! [`Upstream::changed`] lists the stale tools.

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use rmcp::handler::client::ClientHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ClientCapabilities, ClientConfig, ContentBlock,
    ErrorCode, Implementation, JsonRpcMessage, ProtocolVersion, RequestMetaObject,
    ServerNotification,
};
use rmcp::service::{
    ClientLifecycleMode, ClientServiceExt, NotificationContext, Peer, RunningService,
    RxJsonRpcMessage, ServiceError,
};
use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::transport::{IntoTransport, Transport};
use rmcp::{RoleClient, ServiceExt};
use serde_json::{json, Value};
use tokio::io::{AsyncRead, AsyncWrite};
use toolwright_core::dynamic::DynamicTool;
use toolwright_core::{BuildError, Effect, ToolContext, ToolError};

mod input;
mod lines;
mod task;

/// The most input-required rounds one proxied call goes through with the upstream: 8.
pub const MAX_INPUT_ROUNDS: usize = 8;

/// The `_meta` key under which a side-effecting call's idempotency key is sent upstream, the
/// same on every attempt of one call, so a server that deduplicates can.
pub const IDEMPOTENCY_META_KEY: &str = "io.toolwright/idempotency-key";

/// The default bound on one answer from the upstream, 16 MiB: rmcp's own line limit over
/// stdio and its JSON and SSE limits over streamable HTTP.
pub const DEFAULT_MAX_ANSWER_BYTES: usize = 16 * 1024 * 1024;

/// The smallest bound [`UpstreamBuilder::max_answer_bytes`] takes (smaller values are raised
/// to it): 4 KiB, room for the error answer the proxy puts in place of an oversize one.
pub const MIN_ANSWER_BYTES: usize = lines::PEEK;

/// How long re-listing the upstream's tools after it says they changed may take.
const RELIST_TIMEOUT: Duration = Duration::from_secs(30);

/// A connected MCP server whose tools can be proxied. The connection (and, for
/// [`spawn`](Upstream::spawn), the child process) lives as long as this value or any tool
/// made from it.
pub struct Upstream {
    inner: Arc<Inner>,
    tools: Vec<rmcp::model::Tool>,
    timeout: Option<Duration>,
}

/// The connection shared by the upstream and its tools.
struct Inner {
    service: RunningService<RoleClient, Handler>,
    watch: Arc<Watch>,
    max_answer_bytes: usize,
    /// Tools proxied as task tools ([`UpstreamBuilder::task_tools`]).
    task_tools: BTreeSet<String>,
    /// The spawned server, killed when the last tool made from it is dropped (after the
    /// connection, which is declared first).
    _child: Option<tokio::process::Child>,
}

/// Why an upstream could not be used.
#[derive(Debug)]
#[non_exhaustive]
pub enum ProxyError {
    /// The command could not be started.
    Spawn(std::io::Error),
    /// The MCP handshake failed.
    Connect(String),
    /// `tools/list` failed.
    List(String),
}

impl std::fmt::Display for ProxyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ProxyError::Spawn(e) => write!(f, "the upstream MCP server could not be started: {e}"),
            ProxyError::Connect(e) => write!(f, "the upstream MCP server did not initialize: {e}"),
            ProxyError::List(e) => write!(f, "the upstream MCP server did not list its tools: {e}"),
        }
    }
}

impl std::error::Error for ProxyError {}

/// The upstream's tools as runtime tools, and those that could not be (a schema that is not
/// JSON Schema, a name a provider refuses, a name the upstream lists more than once), each
/// with why.
#[derive(Debug)]
pub struct Proxied {
    /// Ready for [`RegistryBuilder::dynamic_tool`](toolwright_core::RegistryBuilder::dynamic_tool).
    pub tools: Vec<DynamicTool>,
    /// Tools left out: name and reason.
    pub refused: Vec<(String, BuildError)>,
}

/// Connection options, before connecting: [`Upstream::builder`].
///
/// ```no_run
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// use toolwright::mcp::proxy::Upstream;
///
/// let upstream = Upstream::builder()
///     .max_answer_bytes(1024 * 1024)
///     .spawn(tokio::process::Command::new("some-mcp-server"))
///     .await?;
/// # let _ = upstream; Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct UpstreamBuilder {
    max_answer_bytes: usize,
    revision: Option<ProtocolVersion>,
    task_tools: BTreeSet<String>,
}

impl Default for UpstreamBuilder {
    fn default() -> Self {
        UpstreamBuilder {
            max_answer_bytes: DEFAULT_MAX_ANSWER_BYTES,
            revision: None,
            task_tools: BTreeSet::new(),
        }
    }
}

impl UpstreamBuilder {
    /// The bound on one message from the upstream, in bytes ([`DEFAULT_MAX_ANSWER_BYTES`]
    /// when not given; at least [`MIN_ANSWER_BYTES`]). A `tools/call` answer over it ends the
    /// call at once in `invalid_result`, not retried, with the upstream asked once; it is
    /// discarded as it arrives, never held whole. It applies to [`spawn`](Self::spawn),
    /// [`connect_io`](Self::connect_io) and [`connect_http`](Self::connect_http) (see the
    /// [module docs](self) for HTTP), not to [`connect`](Self::connect)'s own transports.
    pub fn max_answer_bytes(mut self, bytes: usize) -> Self {
        self.max_answer_bytes = bytes.max(MIN_ANSWER_BYTES);
        self
    }

    /// The protocol revision to speak with the upstream: rmcp's default (2025-11-25, a
    /// session) when not given. From `2026-07-28` on there is no session, and what an
    /// upstream tool asks of its client (a form, a completion of the client's model, the
    /// client's roots) comes back as an input-required result that the proxy passes to its
    /// own client through the call's [`ToolContext`] (every question of a round together),
    /// then sends the call on with the answers: for the downstream client the upstream tool
    /// asks as a local one would. At 2025-11-25 the proxy declares no such capability, so an
    /// upstream tool that asks is told it cannot.
    pub fn revision(mut self, revision: ProtocolVersion) -> Self {
        self.revision = Some(revision);
        self
    }

    /// Upstream tools that run as tasks, proxied as task tools
    /// ([`DynamicToolBuilder::task`](toolwright_core::dynamic::DynamicToolBuilder::task)): a
    /// downstream client that takes tasks gets a task of its own, which the proxy works by
    /// following the upstream's (at 2026-07-28, see [`revision`](Self::revision)). MCP's tool
    /// list does not say which tools run as tasks, so the proxy is told. Give them an
    /// [`Upstream::timeout`] as long as their work.
    pub fn task_tools<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.task_tools = names.into_iter().map(Into::into).collect();
        self
    }

    /// Starts `command` (its stdin and stdout piped, its stderr as the command says, killed
    /// when the upstream and its tools are dropped) and speaks MCP with it over them.
    pub async fn spawn(self, mut command: tokio::process::Command) -> Result<Upstream, ProxyError> {
        command
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .kill_on_drop(true);
        let mut child = command.spawn().map_err(ProxyError::Spawn)?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(ProxyError::Spawn(std::io::Error::other(
                "the child's stdin and stdout are not piped",
            )));
        };
        self.io(stdout, stdin, Some(child)).await
    }

    /// Speaks MCP over a pair of async streams, one JSON-RPC message a line, reading through
    /// the answer bound.
    pub async fn connect_io<R, W>(self, read: R, write: W) -> Result<Upstream, ProxyError>
    where
        R: AsyncRead + Send + Unpin + 'static,
        W: AsyncWrite + Send + Unpin + 'static,
    {
        self.io(read, write, None).await
    }

    async fn io<R, W>(
        self,
        read: R,
        write: W,
        child: Option<tokio::process::Child>,
    ) -> Result<Upstream, ProxyError>
    where
        R: AsyncRead + Send + Unpin + 'static,
        W: AsyncWrite + Send + Unpin + 'static,
    {
        let limit = self.max_answer_bytes;
        let transport = AsyncRwTransport::new_client(lines::BoundedLines::new(read, limit), write)
            .with_max_line_length(limit);
        self.connect_with(transport, child).await
    }

    /// Connects to a streamable-HTTP MCP server at `url`, with the answer bound as rmcp's
    /// JSON response and SSE event limits.
    pub async fn connect_http(self, url: &str) -> Result<Upstream, ProxyError> {
        let config =
            rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig::with_uri(
                url.to_owned(),
            )
            .max_json_response_size(self.max_answer_bytes)
            .max_sse_event_size(self.max_answer_bytes);
        let transport = rmcp::transport::StreamableHttpClientTransport::from_config(config);
        self.connect_with(transport, None).await
    }

    /// Connects over any rmcp client transport. The answer bound is the transport's own
    /// (rmcp's `AsyncRwTransport` silently drops a line over its limit, so such an answer
    /// ends in `timeout`); use [`connect_io`](Self::connect_io) for a pair of streams.
    pub async fn connect<T, E, A>(self, transport: T) -> Result<Upstream, ProxyError>
    where
        T: IntoTransport<RoleClient, E, A>,
        E: std::error::Error + Send + Sync + 'static,
    {
        self.connect_with(transport, None).await
    }

    async fn connect_with<T, E, A>(
        mut self,
        transport: T,
        child: Option<tokio::process::Child>,
    ) -> Result<Upstream, ProxyError>
    where
        T: IntoTransport<RoleClient, E, A>,
        E: std::error::Error + Send + Sync + 'static,
    {
        let watch = Arc::new(Watch::default());
        let transport = Watched {
            inner: transport.into_transport(),
            watch: Arc::clone(&watch),
        };
        let task_tools = std::mem::take(&mut self.task_tools);
        let stateless = self
            .revision
            .as_ref()
            .is_some_and(|r| *r >= ProtocolVersion::V_2026_07_28);
        let handler = Handler {
            watch: Arc::clone(&watch),
            revision: self.revision.clone(),
            asks: stateless,
        };
        let service = match self.revision {
            Some(revision) if stateless => {
                let lifecycle = ClientLifecycleMode::Discover {
                    preferred_versions: vec![revision],
                };
                handler.serve_with_lifecycle(transport, lifecycle).await
            }
            _ => handler.serve(transport).await,
        }
        .map_err(|e| ProxyError::Connect(e.to_string()))?;
        let tools = service
            .list_all_tools()
            .await
            .map_err(|e| ProxyError::List(e.to_string()))?;
        let _ = watch.listed.set(definitions(&tools));
        Ok(Upstream {
            inner: Arc::new(Inner {
                service,
                watch,
                max_answer_bytes: self.max_answer_bytes,
                task_tools,
                _child: child,
            }),
            tools,
            timeout: None,
        })
    }
}

impl Upstream {
    /// Connection options (the answer bound), then one of its ways to connect.
    pub fn builder() -> UpstreamBuilder {
        UpstreamBuilder::default()
    }

    /// Starts `command` and speaks MCP with it over its stdin and stdout, with the default
    /// answer bound ([`UpstreamBuilder::spawn`]).
    pub async fn spawn(command: tokio::process::Command) -> Result<Upstream, ProxyError> {
        Upstream::builder().spawn(command).await
    }

    /// Speaks MCP over a pair of async streams, with the default answer bound
    /// ([`UpstreamBuilder::connect_io`]).
    pub async fn connect_io<R, W>(read: R, write: W) -> Result<Upstream, ProxyError>
    where
        R: AsyncRead + Send + Unpin + 'static,
        W: AsyncWrite + Send + Unpin + 'static,
    {
        Upstream::builder().connect_io(read, write).await
    }

    /// Connects to a streamable-HTTP MCP server at `url`, with the default answer bound
    /// ([`UpstreamBuilder::connect_http`]).
    pub async fn connect_http(url: &str) -> Result<Upstream, ProxyError> {
        Upstream::builder().connect_http(url).await
    }

    /// Connects over any rmcp client transport (a pair of async streams, a child process).
    /// The answer bound is the transport's own: see [`UpstreamBuilder::connect`].
    pub async fn connect<T, E, A>(transport: T) -> Result<Upstream, ProxyError>
    where
        T: IntoTransport<RoleClient, E, A>,
        E: std::error::Error + Send + Sync + 'static,
    {
        Upstream::builder().connect(transport).await
    }

    /// The timeout of every proxied tool's attempts (the registry's default when not given).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// The names of the upstream's tools, as it listed them.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.tools.iter().map(|t| t.name.as_ref())
    }

    /// The tools, as listed at connect, that the upstream has since changed (input schema,
    /// output schema or annotations) or removed, as of its last `list_changed` notification
    /// the proxy has re-listed after. Calls to them are refused (`not_found`); rebuild the
    /// registry from a new upstream's [`tools`](Self::tools) to serve their new definitions.
    pub fn changed(&self) -> Vec<String> {
        self.inner.watch.stale().into_iter().collect()
    }

    /// Each upstream tool as a [`DynamicTool`] calling it through this connection. A name the
    /// upstream lists more than once is refused in every copy (a call by that name would be
    /// ambiguous).
    pub fn tools(&self) -> Proxied {
        let mut proxied = Proxied {
            tools: Vec::new(),
            refused: Vec::new(),
        };
        let mut times: HashMap<&str, usize> = HashMap::new();
        for tool in &self.tools {
            *times.entry(tool.name.as_ref()).or_default() += 1;
        }
        for tool in &self.tools {
            let listed = times[tool.name.as_ref()];
            if listed > 1 {
                proxied.refused.push((
                    tool.name.to_string(),
                    BuildError::ListedMoreThanOnce {
                        name: tool.name.to_string(),
                        times: listed,
                    },
                ));
                continue;
            }
            match self.tool(tool) {
                Ok(made) => proxied.tools.push(made),
                Err(e) => proxied.refused.push((tool.name.to_string(), e)),
            }
        }
        proxied
    }

    fn tool(&self, tool: &rmcp::model::Tool) -> Result<DynamicTool, BuildError> {
        let hints = tool.annotations.as_ref();
        let effect = if hints.and_then(|h| h.read_only_hint) == Some(true) {
            Effect::ReadOnly
        } else if hints.and_then(|h| h.idempotent_hint) == Some(true) {
            Effect::Idempotent
        } else {
            Effect::SideEffecting
        };
        let name = tool.name.to_string();
        let inner = Arc::clone(&self.inner);
        let upstream_name = name.clone();
        let mut builder = DynamicTool::builder(&name)
            .description(tool.description.as_deref().unwrap_or_default())
            .input_schema(Value::Object((*tool.input_schema).clone()))
            .effect(effect)
            .handler(move |args, ctx| {
                let inner = Arc::clone(&inner);
                let name = upstream_name.clone();
                async move { call(&inner, name, args, &ctx, effect).await }
            });
        if let Some(output) = &tool.output_schema {
            builder = builder.output_schema(Value::Object((**output).clone()));
        }
        if effect == Effect::SideEffecting {
            builder = builder.takes_idempotency_key();
        }
        if let Some(timeout) = self.timeout {
            builder = builder.timeout(timeout);
        }
        if self.inner.task_tools.contains(&name) {
            builder = builder.task();
        }
        builder.build()
    }
}

impl std::fmt::Debug for Upstream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Upstream")
            .field("tools", &self.names().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

/// What a call is validated against: a tool's input schema, output schema and annotations.
type Definition = (Value, Value, Value);

/// Each tool's definition, by name, and how many times the name is listed.
fn definitions(tools: &[rmcp::model::Tool]) -> HashMap<String, (Definition, usize)> {
    let mut listed: HashMap<String, (Definition, usize)> = HashMap::new();
    for tool in tools {
        let definition = (
            Value::Object((*tool.input_schema).clone()),
            tool.output_schema
                .as_ref()
                .map_or(Value::Null, |o| Value::Object((**o).clone())),
            serde_json::to_value(&tool.annotations).unwrap_or(Value::Null),
        );
        listed
            .entry(tool.name.to_string())
            .and_modify(|(_, times)| *times += 1)
            .or_insert((definition, 1));
    }
    listed
}

/// The upstream's tool list, watched for changes.
///
/// The transport counts each `notifications/tools/list_changed` as it reads it (`seen`),
/// before rmcp hands it to the [`Handler`], so a call that starts after the notification was
/// read cannot miss it. Before sending, every call re-lists when the last re-list is older
/// than the last notification (one re-list at a time: later calls wait for it) and is refused
/// when its tool is stale. The handler re-lists eagerly on the notification too.
#[derive(Default)]
struct Watch {
    /// The definitions listed at connect (what the proxied tools validate against).
    listed: OnceLock<HashMap<String, (Definition, usize)>>,
    /// `list_changed` notifications read so far.
    seen: AtomicU64,
    /// The notifications the last re-list covers; held across a re-list.
    relisted: tokio::sync::Mutex<u64>,
    /// Tools changed or removed since connect (never cleared: rebuild the registry).
    stale: Mutex<BTreeSet<String>>,
}

impl Watch {
    fn stale(&self) -> BTreeSet<String> {
        self.stale.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Re-lists when a notification came since the last re-list.
    async fn refresh(&self, peer: &Peer<RoleClient>) -> Result<(), String> {
        let mut relisted = self.relisted.lock().await;
        let target = self.seen.load(Ordering::SeqCst);
        if *relisted >= target {
            return Ok(());
        }
        let Some(listed) = self.listed.get() else {
            return Ok(()); // still connecting: the first list is the one that counts
        };
        let tools = tokio::time::timeout(RELIST_TIMEOUT, peer.list_all_tools())
            .await
            .map_err(|_| format!("no answer to tools/list within {RELIST_TIMEOUT:?}"))?
            .map_err(|e| e.to_string())?;
        let now = definitions(&tools);
        let mut stale = self.stale.lock().unwrap_or_else(|e| e.into_inner());
        for (name, (before, _)) in listed {
            let same = matches!(now.get(name), Some((after, 1)) if after == before);
            if !same {
                stale.insert(name.clone());
            }
        }
        *relisted = target;
        Ok(())
    }

    /// Whether a call to `name` may be sent: after any pending re-list, not when stale.
    async fn ready(&self, peer: &Peer<RoleClient>, name: &str) -> Result<(), ToolError> {
        self.refresh(peer).await.map_err(|e| {
            ToolError::unavailable(format!(
                "the upstream changed its tools and the proxy could not list them again: {e}"
            ))
        })?;
        if self
            .stale
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .contains(name)
        {
            return Err(ToolError::not_found(format!(
                "the upstream changed or removed `{name}` after it was proxied; rebuild the registry from `Upstream::tools()`"
            )));
        }
        Ok(())
    }
}

/// The client handler: re-lists the upstream's tools when it says they changed.
struct Handler {
    watch: Arc<Watch>,
    revision: Option<ProtocolVersion>,
    /// Whether it declares what the proxy passes on to its own client (forms, sampling,
    /// roots): only where questions come back as results, tied to their call.
    asks: bool,
}

impl ClientHandler for Handler {
    #[allow(deprecated)] // sampling and roots are in both revisions the proxy speaks
    fn get_info(&self) -> ClientConfig {
        let capabilities = if self.asks {
            let mut capabilities = ClientCapabilities::builder()
                .enable_elicitation()
                .enable_sampling()
                .enable_roots()
                .build();
            capabilities
                .extensions
                .get_or_insert_with(Default::default)
                .insert(
                    rmcp::model::TASKS_EXTENSION_ID.to_owned(),
                    Default::default(),
                );
            capabilities
        } else {
            ClientCapabilities::default()
        };
        let mut config = ClientConfig::new(
            capabilities,
            Implementation::new("toolwright-proxy", env!("CARGO_PKG_VERSION")),
        );
        if let Some(revision) = &self.revision {
            config = config.with_protocol_version(revision.clone());
        }
        config
    }

    async fn on_tool_list_changed(&self, context: NotificationContext<RoleClient>) {
        if let Err(e) = self.watch.refresh(&context.peer).await {
            tracing::warn!("the upstream changed its tools and did not list them again: {e}");
        }
    }
}

/// A transport that counts the upstream's `list_changed` notifications as it reads them.
struct Watched<T> {
    inner: T,
    watch: Arc<Watch>,
}

impl<T: Transport<RoleClient>> Transport<RoleClient> for Watched<T> {
    type Error = T::Error;

    fn name() -> std::borrow::Cow<'static, str> {
        T::name()
    }

    fn send(
        &mut self,
        item: rmcp::service::TxJsonRpcMessage<RoleClient>,
    ) -> impl std::future::Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        let message = self.inner.receive().await;
        if let Some(JsonRpcMessage::Notification(notification)) = &message {
            if matches!(
                notification.notification,
                ServerNotification::ToolListChangedNotification(_)
            ) {
                self.watch.seen.fetch_add(1, Ordering::SeqCst);
            }
        }
        message
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.inner.close().await
    }
}

/// A byte count as the docs write it: `16 MiB`, `64 KiB`, or bytes.
fn size(bytes: usize) -> String {
    const MIB: usize = 1024 * 1024;
    if bytes >= MIB && bytes.is_multiple_of(MIB) {
        format!("{} MiB", bytes / MIB)
    } else if bytes >= 1024 && bytes.is_multiple_of(1024) {
        format!("{} KiB", bytes / 1024)
    } else {
        format!("{bytes} bytes")
    }
}

/// Whether a send failed because the HTTP client refused a response body over its limit
/// (rmcp's `StreamableHttpError::ResponseBodyTooLarge`, generic over the HTTP client's error
/// type, so known by its message).
fn body_too_large(error: &(dyn std::error::Error + 'static)) -> bool {
    let mut source = Some(error);
    while let Some(e) = source {
        if e.to_string()
            .starts_with("HTTP response body exceeded the maximum size")
        {
            return true;
        }
        source = e.source();
    }
    false
}

/// One attempt: `tools/call` upstream, its answer classified.
async fn call(
    inner: &Inner,
    name: String,
    args: Value,
    ctx: &ToolContext,
    effect: Effect,
) -> Result<Value, ToolError> {
    let mut params = CallToolRequestParams::new(name.clone());
    if let Value::Object(arguments) = args {
        params = params.with_arguments(arguments);
    }
    if effect == Effect::SideEffecting {
        let meta = json!({ IDEMPOTENCY_META_KEY: ctx.idempotency_key().to_string() });
        if let Ok(meta) = serde_json::from_value::<RequestMetaObject>(meta) {
            params.meta = Some(meta);
        }
    }
    let service = &inner.service;
    inner.watch.ready(service, &name).await?;
    let over_limit = || {
        ToolError::invalid_result(format!(
            "the upstream's answer to `{name}` was over {} (the proxy's limit) and was discarded",
            size(inner.max_answer_bytes)
        ))
    };
    let mut answered = None;
    for round in 0..MAX_INPUT_ROUNDS {
        match service.call_tool_once(params.clone()).await {
            Ok(CallToolResponse::Complete(result)) => {
                answered = Some(Ok(result));
                break;
            }
            Ok(CallToolResponse::InputRequired(asked)) => {
                let responses = input::answers(ctx, &name, round, &asked).await?;
                params.input_responses = Some(responses);
                params.request_state = asked.request_state;
            }
            Ok(CallToolResponse::Task(created)) => {
                answered = Some(Ok(task::follow(service, ctx, &name, created).await?));
                break;
            }
            Ok(_) => {
                return Err(ToolError::invalid_result(format!(
                    "the upstream answered `{name}` with something that is not a tool result"
                )))
            }
            Err(e) => {
                answered = Some(Err(e));
                break;
            }
        }
    }
    let Some(answered) = answered else {
        return Err(ToolError::invalid_result(format!(
            "the upstream asked for input {MAX_INPUT_ROUNDS} rounds running for `{name}` \
             without an answer (the proxy's bound)"
        )));
    };
    match answered {
        Ok(result) if result.is_error == Some(true) => Err(ToolError::bad_request(format!(
            "the upstream tool `{name}` answered with an error: {}",
            text_of(&result.content)
        ))
        .with_retryable(true)),
        Ok(result) => Ok(match result.structured_content {
            Some(structured) => structured,
            None => value_of(&result.content),
        }),
        Err(ServiceError::McpError(e))
            if e.code.0 == lines::OVERSIZE_CODE
                && e.data
                    .as_ref()
                    .is_some_and(|d| d.get(lines::OVERSIZE_DATA_KEY).is_some()) =>
        {
            Err(over_limit())
        }
        Err(ServiceError::TransportSend(e)) if body_too_large(&e) => Err(over_limit()),
        Err(ServiceError::McpError(e)) if e.code == ErrorCode::INVALID_PARAMS => {
            Err(ToolError::bad_request(format!(
                "the upstream server refused the arguments: {}",
                e.message
            )))
        }
        Err(ServiceError::McpError(e)) if e.code == ErrorCode::METHOD_NOT_FOUND => {
            Err(ToolError::not_found(format!(
                "the upstream server no longer has `{name}`: {}",
                e.message
            )))
        }
        Err(ServiceError::McpError(e)) => Err(ToolError::unavailable(format!(
            "the upstream server failed ({}): {}",
            e.code.0, e.message
        ))),
        Err(ServiceError::UnexpectedResponse) => Err(ToolError::invalid_result(
            "the upstream server answered with something that is not a tool result",
        )),
        Err(e) => Err(ToolError::unavailable(format!(
            "the upstream server could not be reached: {e}"
        ))),
    }
}

/// The text blocks of a result, joined (at most 2,000 characters).
fn text_of(content: &[ContentBlock]) -> String {
    let text: String = content
        .iter()
        .filter_map(|block| block.as_text().map(|t| t.text.as_str()))
        .collect::<Vec<_>>()
        .join("\n");
    text.chars().take(2000).collect()
}

/// A result without `structuredContent`: one text block is its JSON when it parses, its text
/// otherwise; anything else is the content blocks as MCP wrote them.
fn value_of(content: &[ContentBlock]) -> Value {
    match content {
        [only] => match only.as_text() {
            Some(text) => serde_json::from_str(&text.text).unwrap_or_else(|_| json!(text.text)),
            None => serde_json::to_value(content).unwrap_or(Value::Null),
        },
        [] => Value::Null,
        _ => serde_json::to_value(content).unwrap_or(Value::Null),
    }
}
