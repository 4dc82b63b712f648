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
//! use toolwright_core::Registry;
//! use toolwright_mcp::proxy::Upstream;
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

use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{CallToolRequestParams, ContentBlock, ErrorCode, RequestMetaObject};
use rmcp::service::{RunningService, ServiceError};
use rmcp::{RoleClient, ServiceExt};
use serde_json::{json, Value};
use toolwright_core::dynamic::DynamicTool;
use toolwright_core::{BuildError, Effect, ToolContext, ToolError};

/// The `_meta` key under which a side-effecting call's idempotency key is sent upstream, the
/// same on every attempt of one call, so a server that deduplicates can.
pub const IDEMPOTENCY_META_KEY: &str = "io.toolwright/idempotency-key";

/// A connected MCP server whose tools can be proxied. The connection lives as long as this
/// value or any tool made from it.
pub struct Upstream {
    service: Arc<RunningService<RoleClient, ()>>,
    tools: Vec<rmcp::model::Tool>,
    timeout: Option<Duration>,
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
/// JSON Schema, a name a provider refuses), each with why.
#[derive(Debug)]
pub struct Proxied {
    /// Ready for [`RegistryBuilder::dynamic_tool`](toolwright_core::RegistryBuilder::dynamic_tool).
    pub tools: Vec<DynamicTool>,
    /// Tools left out: name and reason.
    pub refused: Vec<(String, BuildError)>,
}

impl Upstream {
    /// Starts `command` and speaks MCP with it over its stdin and stdout.
    pub async fn spawn(command: tokio::process::Command) -> Result<Upstream, ProxyError> {
        let transport =
            rmcp::transport::TokioChildProcess::new(command).map_err(ProxyError::Spawn)?;
        Upstream::connect(transport).await
    }

    /// Connects to a streamable-HTTP MCP server at `url`.
    pub async fn connect_http(url: &str) -> Result<Upstream, ProxyError> {
        let transport = rmcp::transport::StreamableHttpClientTransport::from_uri(url.to_owned());
        Upstream::connect(transport).await
    }

    /// Connects over any rmcp client transport (a pair of async streams, a child process).
    pub async fn connect<T, E, A>(transport: T) -> Result<Upstream, ProxyError>
    where
        T: rmcp::transport::IntoTransport<RoleClient, E, A>,
        E: std::error::Error + Send + Sync + 'static,
    {
        let service = ().serve(transport).await.map_err(|e| ProxyError::Connect(e.to_string()))?;
        let tools = service
            .list_all_tools()
            .await
            .map_err(|e| ProxyError::List(e.to_string()))?;
        Ok(Upstream {
            service: Arc::new(service),
            tools,
            timeout: None,
        })
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

    /// Each upstream tool as a [`DynamicTool`] calling it through this connection.
    pub fn tools(&self) -> Proxied {
        let mut proxied = Proxied {
            tools: Vec::new(),
            refused: Vec::new(),
        };
        for tool in &self.tools {
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
        let service = Arc::clone(&self.service);
        let upstream_name = name.clone();
        let mut builder = DynamicTool::builder(&name)
            .description(tool.description.as_deref().unwrap_or_default())
            .input_schema(Value::Object((*tool.input_schema).clone()))
            .effect(effect)
            .handler(move |args, ctx| {
                let service = Arc::clone(&service);
                let name = upstream_name.clone();
                async move { call(&service, name, args, &ctx, effect).await }
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

/// One attempt: `tools/call` upstream, its answer classified.
async fn call(
    service: &RunningService<RoleClient, ()>,
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
    match service.call_tool(params).await {
        Ok(result) if result.is_error == Some(true) => Err(ToolError::bad_request(format!(
            "the upstream tool `{name}` answered with an error: {}",
            text_of(&result.content)
        ))
        .with_retryable(true)),
        Ok(result) => Ok(match result.structured_content {
            Some(structured) => structured,
            None => value_of(&result.content),
        }),
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
