//! Streamable HTTP: who may call, in front of rmcp's transport.
//!
//! Every request to the MCP endpoint passes, in order: the `Origin` check (MCP's transport
//! section: a present, foreign `Origin` is a DNS-rebinding attempt, 403), the bearer token
//! through the application's [`Authorizer`] (missing or rejected: 401 with a
//! `WWW-Authenticate` challenge naming the protected-resource metadata, RFC 9728; nothing
//! runs), then rmcp's streamable HTTP service, whose `Host` check and session handling apply.

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Router;
use serde_json::json;
use tokio_util::sync::{CancellationToken, DropGuard};

/// What the [`Authorizer`] grants a credential: the session's principal and scopes.
///
/// ```
/// use toolwright_mcp::Grant;
///
/// let grant = Grant::new("user:alice").with_scopes(["orders:read"]);
/// assert_eq!(grant.principal(), "user:alice");
/// assert_eq!(grant.scopes(), ["orders:read"]);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    principal: String,
    scopes: Vec<String>,
}

impl Grant {
    /// A grant for `principal`, with no scopes.
    pub fn new(principal: impl Into<String>) -> Self {
        Grant {
            principal: principal.into(),
            scopes: Vec::new(),
        }
    }

    /// The scopes the credential carries; a tool declared `#[tool(scopes = [..])]` is listed
    /// to, and callable by, a session holding all of them.
    pub fn with_scopes<I, S>(mut self, scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.scopes = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// Who the credential belongs to.
    pub fn principal(&self) -> &str {
        &self.principal
    }

    /// The scopes it carries.
    pub fn scopes(&self) -> &[String] {
        &self.scopes
    }
}

/// Maps a request's bearer token to a [`Grant`], or `None` to refuse it (HTTP 401). Token
/// validation (a JWT's signature and audience, introspection at an authorization server) is
/// the application's; the server never issues tokens.
///
/// A closure `Fn(&str) -> Option<Grant>` is an authorizer:
///
/// ```
/// use toolwright_mcp::{Grant, McpServer};
/// # fn demo(registry: toolwright_core::Registry) {
/// let server = McpServer::new(registry).authorize(|token: &str| match token {
///     "alice-token" => Some(Grant::new("user:alice").with_scopes(["orders:read"])),
///     _ => None,
/// });
/// # let _ = server; }
/// ```
pub trait Authorizer: Send + Sync + 'static {
    /// The grant for `token`, or `None`.
    fn authorize<'a>(
        &'a self,
        token: &'a str,
    ) -> Pin<Box<dyn Future<Output = Option<Grant>> + Send + 'a>>;
}

impl<F> Authorizer for F
where
    F: Fn(&str) -> Option<Grant> + Send + Sync + 'static,
{
    fn authorize<'a>(
        &'a self,
        token: &'a str,
    ) -> Pin<Box<dyn Future<Output = Option<Grant>> + Send + 'a>> {
        Box::pin(std::future::ready(self(token)))
    }
}

/// The OAuth 2.0 protected-resource metadata (RFC 9728) MCP's authorization section asks a
/// protected server to publish, so a client learns where to get a token. Served at
/// `/.well-known/oauth-protected-resource` and `/.well-known/oauth-protected-resource/mcp`,
/// and named in every 401's `WWW-Authenticate`.
///
/// ```
/// use toolwright_mcp::ProtectedResource;
///
/// let metadata = ProtectedResource::new("https://tools.example.com/mcp")
///     .authorization_server("https://auth.example.com")
///     .scopes_supported(["orders:read", "orders:refund"]);
/// assert_eq!(
///     metadata.metadata_url(),
///     "https://tools.example.com/.well-known/oauth-protected-resource/mcp"
/// );
/// ```
#[derive(Debug, Clone)]
pub struct ProtectedResource {
    resource: String,
    authorization_servers: Vec<String>,
    scopes: Vec<String>,
}

impl ProtectedResource {
    /// The MCP endpoint's public URL, as clients reach it (the token's audience).
    pub fn new(resource: impl Into<String>) -> Self {
        ProtectedResource {
            resource: resource.into(),
            authorization_servers: Vec::new(),
            scopes: Vec::new(),
        }
    }

    /// An authorization server that issues tokens for this resource.
    pub fn authorization_server(mut self, issuer: impl Into<String>) -> Self {
        self.authorization_servers.push(issuer.into());
        self
    }

    /// The scopes a client may request.
    pub fn scopes_supported<I, S>(mut self, scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.scopes = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// Where the document is served: the well-known path inserted between the resource's
    /// origin and its path (RFC 9728, section 3.1).
    pub fn metadata_url(&self) -> String {
        let (origin, path) = split_origin(&self.resource);
        format!("{origin}/.well-known/oauth-protected-resource{path}")
    }

    fn document(&self) -> serde_json::Value {
        let mut doc = json!({
            "resource": self.resource,
            "authorization_servers": self.authorization_servers,
            "bearer_methods_supported": ["header"],
        });
        if !self.scopes.is_empty() {
            doc["scopes_supported"] = json!(self.scopes);
        }
        doc
    }
}

/// `https://host:1/mcp` -> (`https://host:1`, `/mcp`).
fn split_origin(url: &str) -> (&str, &str) {
    let after_scheme = url.find("://").map_or(0, |i| i + 3);
    match url[after_scheme..].find('/') {
        Some(i) => url.split_at(after_scheme + i),
        None => (url, ""),
    }
}

/// What the guard in front of the MCP endpoint needs.
pub(crate) struct Guard {
    pub(crate) allowed_origins: Vec<String>,
    pub(crate) authorizer: Option<Arc<dyn Authorizer>>,
    pub(crate) protected_resource: Option<ProtectedResource>,
}

/// A token cancelled when the response to this HTTP request is dropped: the client went away.
/// rmcp keeps a session's request running across a dropped stream (the client may resume
/// it); a toolwright call is cancelled instead, so a disconnected client never leaves a call
/// with effects running unseen.
#[derive(Clone)]
pub(crate) struct Disconnected(pub(crate) CancellationToken);

pub(crate) async fn guard(
    State(guard): State<Arc<Guard>>,
    mut request: Request,
    next: Next,
) -> Response {
    if let Some(origin) = request.headers().get(header::ORIGIN) {
        let allowed = origin
            .to_str()
            .is_ok_and(|origin| origin_allowed(origin, &guard.allowed_origins));
        if !allowed {
            return refusal(
                StatusCode::FORBIDDEN,
                "this Origin may not call the MCP server",
                None,
            );
        }
    }
    if let Some(authorizer) = &guard.authorizer {
        let token = request
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| {
                v.strip_prefix("Bearer ")
                    .or_else(|| v.strip_prefix("bearer "))
            })
            .map(str::trim);
        let challenge = guard
            .protected_resource
            .as_ref()
            .map(|r| format!("Bearer resource_metadata=\"{}\"", r.metadata_url()))
            .unwrap_or_else(|| "Bearer".to_owned());
        let Some(token) = token else {
            return refusal(
                StatusCode::UNAUTHORIZED,
                "a bearer token is required",
                Some(challenge),
            );
        };
        match authorizer.authorize(token).await {
            Some(grant) => {
                request.extensions_mut().insert(grant);
            }
            None => {
                return refusal(
                    StatusCode::UNAUTHORIZED,
                    "the bearer token was rejected",
                    Some(format!("{challenge}, error=\"invalid_token\"")),
                )
            }
        }
    }
    let disconnected = CancellationToken::new();
    request
        .extensions_mut()
        .insert(Disconnected(disconnected.clone()));
    let response = next.run(request).await;
    let (parts, body) = response.into_parts();
    let body = Body::new(CancelOnDrop {
        inner: body,
        _guard: disconnected.drop_guard(),
    });
    Response::from_parts(parts, body)
}

fn refusal(status: StatusCode, message: &str, challenge: Option<String>) -> Response {
    let mut response = (
        status,
        axum::Json(json!({"error": status.canonical_reason(), "message": message})),
    )
        .into_response();
    if let Some(challenge) = challenge.and_then(|c| HeaderValue::from_str(&c).ok()) {
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, challenge);
    }
    response
}

/// An origin in the list, or, with an empty list, any loopback origin (a local server's own
/// pages and the MCP Inspector).
fn origin_allowed(origin: &str, allowed: &[String]) -> bool {
    if !allowed.is_empty() {
        return allowed.iter().any(|a| a.eq_ignore_ascii_case(origin));
    }
    let Some(rest) = origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"))
    else {
        return false;
    };
    let host = if let Some(v6) = rest.strip_prefix('[') {
        v6.split(']').next().unwrap_or("")
    } else {
        rest.split(':').next().unwrap_or("")
    };
    matches!(host, "localhost" | "127.0.0.1" | "::1")
}

/// The response body, holding the guard that cancels the call when hyper drops it.
struct CancelOnDrop {
    inner: Body,
    _guard: DropGuard,
}

impl http_body::Body for CancelOnDrop {
    type Data = axum::body::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

pub(crate) fn metadata_routes(router: Router, resource: &ProtectedResource) -> Router {
    let doc = resource.document();
    let (_, path) = split_origin(&resource.resource);
    let doc_at_root = doc.clone();
    let mut router = router.route(
        "/.well-known/oauth-protected-resource",
        axum::routing::get(move || std::future::ready(axum::Json(doc_at_root.clone()))),
    );
    if !path.is_empty() && path != "/" {
        router = router.route(
            &format!("/.well-known/oauth-protected-resource{path}"),
            axum::routing::get(move || std::future::ready(axum::Json(doc.clone()))),
        );
    }
    router
}

/// A running streamable-HTTP MCP server.
#[derive(Debug)]
pub struct HttpServer {
    pub(crate) local_addr: SocketAddr,
    pub(crate) shutdown: CancellationToken,
    pub(crate) task: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl HttpServer {
    /// The address it listens on (the port the OS chose, for port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The MCP endpoint: `http://{addr}/mcp`.
    pub fn url(&self) -> String {
        format!("http://{}/mcp", self.local_addr)
    }

    /// Stops accepting, ends every session and waits for the server to stop.
    pub async fn shutdown(self) -> std::io::Result<()> {
        self.shutdown.cancel();
        self.wait().await
    }

    /// Serves until the server stops (an I/O error, or [`HttpServer::shutdown`] elsewhere).
    pub async fn wait(self) -> std::io::Result<()> {
        match self.task.await {
            Ok(result) => result,
            Err(e) => Err(std::io::Error::other(e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_origins_pass_by_default() {
        assert!(origin_allowed("http://localhost:6274", &[]));
        assert!(origin_allowed("http://127.0.0.1", &[]));
        assert!(origin_allowed("http://[::1]:8080", &[]));
        assert!(!origin_allowed("http://evil.example", &[]));
        assert!(!origin_allowed("http://localhost.evil.example", &[]));
        assert!(!origin_allowed("null", &[]));
    }

    #[test]
    fn a_configured_list_replaces_the_loopback_default() {
        let allowed = vec!["https://app.example.com".to_owned()];
        assert!(origin_allowed("https://app.example.com", &allowed));
        assert!(!origin_allowed("http://localhost:6274", &allowed));
    }

    #[test]
    fn the_metadata_path_is_inserted_before_the_resource_path() {
        assert_eq!(
            split_origin("http://127.0.0.1:8080/mcp"),
            ("http://127.0.0.1:8080", "/mcp")
        );
        assert_eq!(split_origin("https://x.example"), ("https://x.example", ""));
    }
}
