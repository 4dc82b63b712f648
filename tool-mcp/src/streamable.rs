//! Streamable HTTP: who may call, in front of rmcp's transport.
//!
//! Every request to the MCP endpoint passes, in order: the `Origin` check (MCP's transport
//! section: a present, foreign `Origin` is a DNS-rebinding attempt, 403), the bearer token
//! through the application's [`Authorizer`] (missing or rejected: 401 with a
//! `WWW-Authenticate` challenge naming the protected-resource metadata, RFC 9728; nothing
//! runs), the session check (a request naming an `Mcp-Session-Id` that this principal did not
//! open is 404, exactly as for a session that does not exist, and nothing reaches the
//! session; a request that would open a session past a cap is 503 with `Retry-After`), then
//! rmcp's streamable HTTP service, whose `Host` check and session handling apply. The request
//! body must arrive within the body read timeout.

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Router;
use serde_json::json;
use tokio_util::sync::{CancellationToken, DropGuard};

use crate::sessions::{Activity, Full, OwnedSessions};

/// What the [`Authorizer`] grants a credential: who it is (the principal a session opened with
/// it belongs to) and the scopes the request carrying it may use.
///
/// ```
/// use toolwright::mcp::Grant;
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
/// use toolwright::mcp::{Grant, McpServer};
/// # fn demo(registry: toolwright::Registry) {
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
/// use toolwright::mcp::ProtectedResource;
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
    pub(crate) sessions: Arc<OwnedSessions>,
    pub(crate) body_read_timeout: Duration,
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
    let mut principal = None;
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
                principal = Some(grant.principal().to_owned());
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
    let table = &guard.sessions.table;
    let mut activity = None;
    let mut reservation = None;
    match request.headers().get(SESSION_ID) {
        Some(id) => match table.enter(id.to_str().unwrap_or_default(), principal.as_deref()) {
            Some(entered) => activity = Some(entered),
            None => {
                return refusal(
                    StatusCode::NOT_FOUND,
                    "no such MCP session; start a new one with `initialize`",
                    None,
                )
            }
        },
        None if request.method() == axum::http::Method::POST => {
            match table.reserve(principal.as_deref()) {
                Ok(reserved) => reservation = Some(reserved),
                Err(full) => return unavailable(&full, table.retry_after_secs()),
            }
        }
        None => {}
    }
    let disconnected = CancellationToken::new();
    request
        .extensions_mut()
        .insert(Disconnected(disconnected.clone()));
    let deadline = guard.body_read_timeout;
    let expired = Arc::new(AtomicBool::new(false));
    let request =
        request.map(|body| Body::new(ReadDeadline::new(body, deadline, Arc::clone(&expired))));
    let response = next.run(request).await;
    if expired.load(Ordering::Relaxed) {
        // rmcp answers a body that failed to arrive as its own error; say what happened.
        let mut response = refusal(
            StatusCode::REQUEST_TIMEOUT,
            &format!(
                "the request body did not arrive within {} ms",
                deadline.as_millis()
            ),
            None,
        );
        response
            .headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
        return response;
    }
    if let Some(reserved) = reservation {
        if let Some(id) = response.headers().get(SESSION_ID) {
            if let Ok(id) = id.to_str() {
                reserved.commit(id);
            }
        }
    }
    let (parts, body) = response.into_parts();
    let body = Body::new(CancelOnDrop {
        inner: body,
        _guard: disconnected.drop_guard(),
        _activity: activity,
    });
    Response::from_parts(parts, body)
}

/// A header name, not a `&str`: looked up by a string, a header's name is parsed again on
/// every request.
const SESSION_ID: header::HeaderName = header::HeaderName::from_static("mcp-session-id");

fn unavailable(full: &Full, retry_after: u64) -> Response {
    let message = match full {
        Full::Server(max) => format!(
            "this server holds its maximum of {max} MCP sessions; retry after {retry_after} s, or end an unused session with DELETE"
        ),
        Full::Principal(principal, max) => format!(
            "'{principal}' holds its maximum of {max} MCP sessions; end one with DELETE, or retry after {retry_after} s"
        ),
    };
    let mut response = refusal(StatusCode::SERVICE_UNAVAILABLE, &message, None);
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from(retry_after));
    response
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

/// The response body, holding the guard that cancels the call when hyper drops it, and the
/// session's activity (the session is not idle while a response of it is open).
struct CancelOnDrop {
    inner: Body,
    _guard: DropGuard,
    _activity: Option<Activity>,
}

/// A request body that must arrive whole before its deadline: a client that sends
/// `Content-Length: 100000` and one byte gets an error once the deadline passes, and its
/// connection is closed, instead of holding it open.
struct ReadDeadline {
    inner: Body,
    /// When the body must have arrived (the request's arrival plus the timeout).
    due: tokio::time::Instant,
    /// The timer, set only once the body is found still on its way (most bodies arrive with
    /// their headers, and never need one).
    deadline: Option<Pin<Box<tokio::time::Sleep>>>,
    timeout: Duration,
    /// Set when the deadline passed, so the guard answers 408 whatever the service made of it.
    expired: Arc<AtomicBool>,
}

impl ReadDeadline {
    fn new(inner: Body, timeout: Duration, expired: Arc<AtomicBool>) -> Self {
        ReadDeadline {
            inner,
            due: due(timeout),
            deadline: None,
            timeout,
            expired,
        }
    }
}

/// Now plus `timeout`, or about 30 years from now if that is past what an instant holds (what
/// `tokio::time::sleep` does).
fn due(timeout: Duration) -> tokio::time::Instant {
    let now = tokio::time::Instant::now();
    now.checked_add(timeout)
        .unwrap_or_else(|| now + Duration::from_secs(86_400 * 365 * 30))
}

impl http_body::Body for ReadDeadline {
    type Data = axum::body::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        if let Poll::Ready(frame) = Pin::new(&mut self.inner).poll_frame(cx) {
            return Poll::Ready(frame);
        }
        let due = self.due;
        let deadline = self
            .deadline
            .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(due)));
        match deadline.as_mut().poll(cx) {
            Poll::Ready(()) => {
                self.expired.store(true, Ordering::Relaxed);
                Poll::Ready(Some(Err(axum::Error::new(format!(
                    "the request body did not arrive within {} ms",
                    self.timeout.as_millis()
                )))))
            }
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
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
