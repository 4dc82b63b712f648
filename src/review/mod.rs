//! The approval review page: the calls waiting for a person, with Approve, Deny and Edit, as an
//! axum [`Router`] a service mounts beside its own routes (the `review-page` feature; axum 0.8,
//! the version the service's own `axum` dependency must have to mount it).
//!
//! It lists the [`Approvals`] tickets waiting in a conversation store, oldest first, each with
//! its tool, who asked (the principal), the conversation, how long ago, and the arguments as a
//! reviewer may see them (sensitive fields `[redacted]`). Approve decides the call as asked;
//! Deny takes a reason the model is told; Edit takes new arguments, checked whole by the tool's
//! own validation ([`Registry::approve_with`]), every violation shown next to the field and
//! nothing decided while one remains. A small script polls the queue and reloads the page when
//! tickets arrive, unless the reviewer is typing. The HTML is server-rendered from maud
//! templates, which escape every value by construction: a tool argument reading `<script>` is
//! shown as that text.
//!
//! The same decisions are a JSON API under `api/`, for a command line or another service:
//!
//! | method and path | body | answer |
//! |---|---|---|
//! | `GET api/tickets?tool=&principal=&after=` | | `{"tickets": [..], "next": cursor or null}` |
//! | `POST api/tickets/{id}/approve` | | `{"ticket": id, "decided": "approved"}` |
//! | `POST api/tickets/{id}/deny` | `{"reason": ".."}` | `{"ticket": id, "decided": "denied"}` |
//! | `POST api/tickets/{id}/edit` | `{"arguments": {..}}` | `{"ticket": id, "decided": "approved with edits"}` |
//!
//! A refusal is `{"error": code, "message": ..}` with its status: `unauthorized` (401),
//! `other_origin` (403), `unknown_ticket` (404), `already_decided` (409), `invalid_arguments`
//! (422, with `violations`, each a `path` and a `message`), `redacted_value` and `bad_request`
//! (422), `store_unavailable` (503). A body over [`MAX_BODY_BYTES`] is 413.
//!
//! # Access
//!
//! Every route needs the page's [`Token`]: `?token=...` on the page's address once (answered
//! with an `HttpOnly`, `SameSite=Strict` cookie and a redirect that drops the token from the
//! address bar and its history), or `Authorization: Bearer ...` on every request. Tokens are
//! compared in constant time. Without it: 401, and nothing is read or decided.
//!
//! A decision (every `POST`) signed in by the cookie must come from the page itself: its
//! `Origin` must be the page's own (the scheme and the `Host` the request was sent to, port
//! included) or one given to [`ReviewPage::allow_origin`], or, from a browser that sent no
//! `Origin`, its `Sec-Fetch-Site` must be `same-origin`; otherwise 403 and nothing is decided.
//! `SameSite=Strict` alone does not do that: a page on another port of the same host is
//! "same-site", so the browser sends the cookie with that page's form. A request signed in by
//! `Authorization: Bearer` needs no such check: no browser attaches that header on another
//! page's behalf. Reading (`GET`) is open to the cookie from anywhere (a link, a bookmark).
//!
//! The token stands for one reviewer: [`ReviewPage::reviewer`] names them on the page and in a
//! `tracing` event for every decision taken (who decided which ticket, and how).
//!
//! Every answer carries `Cache-Control: no-store`, `Referrer-Policy: same-origin` and a
//! `Content-Security-Policy` that forbids framing the page (`frame-ancestors 'none'`) and posting
//! its forms anywhere but to itself.
//!
//! # Bounds
//!
//! - A page (and an `api/tickets` answer) lists at most [`TICKETS_PER_PAGE`] tickets; the next
//!   ones are a link (the `next` cursor) away.
//! - A request body (a form, or a JSON decision) is at most [`MAX_BODY_BYTES`]; a larger one is
//!   refused with 413 before it is read.
//! - A token is at least [`Token::MIN_LEN`] characters.
//!
//! # Mounting
//!
//! The router works at the root or nested under a path (`Router::nest("/approvals", ..)`): its
//! links, forms, redirects and the cookie's `Path` follow the path it is nested at. It sets no
//! listener, no TLS and no timeouts: those are the service's, as for its other routes. Behind
//! TLS or a proxy that rewrites `Host`, name the public origin with
//! [`allow_origin`](ReviewPage::allow_origin).
//!
//! ```no_run
//! use std::sync::Arc;
//! use toolwright::approval::Approvals;
//! use toolwright::conversation::{ConversationStore, MemoryConversationStore};
//! use toolwright::review::{ReviewPage, Token};
//! use toolwright::Registry;
//!
//! # async fn demo(registry: Registry) -> Result<(), Box<dyn std::error::Error>> {
//! let store: Arc<dyn ConversationStore> = Arc::new(MemoryConversationStore::new());
//! let approvals = Approvals::new(Arc::clone(&store));
//! let token = Token::random()?;
//! println!("review at http://127.0.0.1:7878/approvals?token={}", token.as_str());
//!
//! let page = ReviewPage::new(registry, approvals, token).router();
//! let app = axum::Router::new().nest("/approvals", page);
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:7878").await?;
//! axum::serve(listener, app).await?;
//! # Ok(()) }
//! ```

mod access;
mod api;
mod decide;
mod html;
mod page;

use std::fmt;
use std::sync::Arc;

use axum::extract::DefaultBodyLimit;
use axum::middleware;
use axum::routing::{get, post};
use axum::Router;
use toolwright_core::approval::Approvals;
use toolwright_core::Registry;

/// How many tickets one page (and one `api/tickets` answer) lists, oldest first; the rest are
/// behind the `next` cursor.
pub const TICKETS_PER_PAGE: usize = 20;

/// The largest request body the page reads (a form, or a JSON decision): 256 KiB. An edit
/// carries the call's whole arguments; a larger body is refused with 413 before it is read, so
/// a call whose arguments are larger is approved or denied as asked, not edited in the page.
pub const MAX_BODY_BYTES: usize = 256 * 1024;

/// The name of the cookie the token is kept in after `?token=`.
pub const COOKIE: &str = "toolwright_review_token";

/// The secret a reviewer proves they hold, on every request: at least [`Token::MIN_LEN`]
/// characters, compared in constant time. Its `Debug` never shows it.
///
/// ```
/// use toolwright::review::Token;
///
/// let token = Token::random().expect("the system's randomness");
/// assert_eq!(token.as_str().len(), 32);
/// assert!(Token::new("correct-horse-battery-staple").is_ok());
/// assert!(Token::new("short").is_err());
/// assert!(Token::new("sixteen+chars&more").is_err()); // would not survive a query string
/// ```
#[derive(Clone)]
pub struct Token(Arc<str>);

impl Token {
    /// The shortest token accepted: 16 characters.
    pub const MIN_LEN: usize = 16;

    /// A fresh token of 128 random bits from the operating system, as 32 hex digits.
    pub fn random() -> Result<Token, TokenError> {
        let mut bytes = [0u8; 16];
        getrandom::fill(&mut bytes).map_err(|e| TokenError(format!("no randomness: {e}")))?;
        let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        Ok(Token(hex.into()))
    }

    /// A token of the application's own (from its configuration, say): at least
    /// [`Token::MIN_LEN`] characters, each an ASCII letter, digit, `-`, `.`, `_` or `~` (it
    /// travels as it is in a query string, a header and a cookie).
    pub fn new(token: impl Into<String>) -> Result<Token, TokenError> {
        let token = token.into();
        if token.len() < Self::MIN_LEN {
            return Err(TokenError(format!(
                "a review token has at least {} characters; this one has {}",
                Self::MIN_LEN,
                token.len()
            )));
        }
        let fits = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_' | '~');
        if !token.chars().all(fits) {
            return Err(TokenError(
                "a review token is ASCII letters, digits, `-`, `.`, `_` and `~` only".to_owned(),
            ));
        }
        Ok(Token(token.into()))
    }

    /// The token, to print the page's address (`?token=...`) or give to a client.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Token(..)")
    }
}

/// Why a [`Token`] was not made: too short, a character that cannot travel in a cookie, or no
/// randomness from the operating system.
#[derive(Debug, Clone)]
pub struct TokenError(String);

impl fmt::Display for TokenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for TokenError {}

/// The review page's settings: the tickets it decides, the registry whose validation checks an
/// edit, the token, the origins a decision may come from, and who the reviewer is. [`router`](ReviewPage::router)
/// makes the routes.
///
/// ```
/// use std::sync::Arc;
/// use toolwright::approval::Approvals;
/// use toolwright::conversation::MemoryConversationStore;
/// use toolwright::review::{ReviewPage, Token};
/// use toolwright::Registry;
///
/// let registry = Registry::builder().build().unwrap();
/// let approvals = Approvals::new(Arc::new(MemoryConversationStore::new()));
/// let token = Token::new("correct-horse-battery-staple").unwrap();
/// let router: axum::Router = ReviewPage::new(registry, approvals, token)
///     .allow_origin("https://review.example.com")
///     .reviewer("ann@example.com")
///     .router();
/// ```
#[derive(Clone, Debug)]
pub struct ReviewPage {
    registry: Registry,
    approvals: Approvals,
    token: Token,
    origins: Vec<String>,
    reviewer: Option<String>,
}

impl ReviewPage {
    /// The page over `approvals` (decided with `registry`'s validation), answering only to
    /// `token`. A decision signed in by the cookie is taken only from the page's own origin
    /// until [`allow_origin`](Self::allow_origin) names another.
    pub fn new(registry: Registry, approvals: Approvals, token: Token) -> ReviewPage {
        ReviewPage {
            registry,
            approvals,
            token,
            origins: Vec::new(),
            reviewer: None,
        }
    }

    /// Who holds this page's token: shown at the top of the page ("Reviewing as ..."), and
    /// recorded with every decision taken, in a `tracing` event at `INFO` (target
    /// `toolwright::review`, fields `reviewer`, `ticket`, `decided`), so a log says who
    /// approved what. The token is the reviewer's: give each reviewer a page of their own
    /// (nested at paths of their own) to tell them apart. Default: none, and the event's
    /// `reviewer` is empty.
    pub fn reviewer(mut self, name: impl Into<String>) -> ReviewPage {
        self.reviewer = Some(name.into());
        self
    }

    /// Also takes decisions from pages of `origin` (`scheme://host[:port]`, compared without
    /// case): the public address when a proxy in front rewrites `Host`, or TLS ends before the
    /// service. Repeatable.
    pub fn allow_origin(mut self, origin: impl Into<String>) -> ReviewPage {
        let origin = origin.into();
        self.origins
            .push(origin.trim_end_matches('/').to_ascii_lowercase());
        self
    }

    /// The page's routes: `/` (the list), `/version` (what the script polls),
    /// `/tickets/{id}/{approve,deny,edit}` (the forms) and the JSON API under `/api/`. Mount it
    /// with `Router::nest` (its links follow the path) or `Router::merge` (at the root).
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use toolwright::approval::Approvals;
    /// # use toolwright::conversation::MemoryConversationStore;
    /// use toolwright::review::{ReviewPage, Token};
    /// # let registry = toolwright::Registry::builder().build().unwrap();
    /// # let approvals = Approvals::new(Arc::new(MemoryConversationStore::new()));
    /// let page = ReviewPage::new(registry, approvals, Token::random().unwrap());
    /// let app = axum::Router::new()
    ///     .route("/health", axum::routing::get(|| async { "ok" }))
    ///     .nest("/approvals", page.router());
    /// # let _: axum::Router = app;
    /// ```
    pub fn router(self) -> Router {
        let review = Arc::new(self);
        // Everything but the front door (which takes the token once) needs it on every request.
        let guarded = Router::new()
            .route("/version", get(page::version))
            .route("/tickets/{id}/approve", post(page::approve))
            .route("/tickets/{id}/deny", post(page::deny))
            .route("/tickets/{id}/edit", post(page::edit))
            .route("/api/tickets", get(api::tickets))
            .route("/api/tickets/{id}/approve", post(api::approve))
            .route("/api/tickets/{id}/deny", post(api::deny))
            .route("/api/tickets/{id}/edit", post(api::edit))
            .route_layer(middleware::from_fn_with_state(
                Arc::clone(&review),
                access::require_token,
            ));
        guarded
            .route("/", get(page::index))
            .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
            .layer(middleware::map_response(access::hardened))
            .with_state(review)
    }
}

/// The shared state of the page's handlers.
type Shared = Arc<ReviewPage>;
