//! A registry as a [`tower::Service`](tower_service::Service), so the middleware an application
//! already runs (concurrency and rate limits, load shedding, timeouts of its own, its own
//! layers) composes in front of every tool call.
//!
//! [`Registry`] is a `Service<ToolCall>` that calls outside any conversation, as
//! [`Registry::call`] does; [`Registry::service_in`] gives one bound to a [`Session`], as
//! [`Registry::call_in`] does. The error type is [`Infallible`]: every failure of a call (bad
//! arguments, a timeout, a refusal) is an [`Outcome`] the model can read, never a service error,
//! and `poll_ready` is always ready (the registry has no capacity of its own to wait for; put a
//! limit layer in front of it for that).
//!
//! ```
//! # #[cfg(feature = "tower")] {
//! use toolwright::{Registry, Session, ToolCall};
//! use tower_service::Service;
//!
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! let registry = Registry::builder().build().unwrap();
//! let mut service = registry.service_in(Session::new("conv-1"));
//! std::future::poll_fn(|cx| service.poll_ready(cx)).await.unwrap();
//! let outcome = service.call(ToolCall::new("c1", "nope", "{}")).await.unwrap();
//! assert_eq!(outcome.error_kind().map(|k| k.as_str()), Some("unknown_tool"));
//! # });
//! # }
//! ```

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use tower_service::Service;

use crate::call::ToolCall;
use crate::outcome::Outcome;
use crate::registry::Registry;
use crate::session::Session;

/// The future of a call through the [`Service`] implementations: owned, so a layer can hold it
/// past the borrow of the service.
pub type ServiceFuture = Pin<Box<dyn Future<Output = Result<Outcome, Infallible>> + Send>>;

impl Service<ToolCall> for Registry {
    type Response = Outcome;
    type Error = Infallible;
    type Future = ServiceFuture;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, call: ToolCall) -> ServiceFuture {
        let registry = self.clone();
        Box::pin(async move { Ok(registry.call(call).await) })
    }
}

/// A registry bound to a [`Session`]: a `Service<ToolCall>` whose calls run in that
/// conversation, from [`Registry::service_in`]. Cloning it is cheap (two reference counts) and
/// every clone serves the same conversation.
#[derive(Clone)]
pub struct SessionService {
    pub(crate) registry: Registry,
    pub(crate) session: Session,
}

impl std::fmt::Debug for SessionService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionService")
            .field("session", &self.session.id())
            .finish_non_exhaustive()
    }
}

impl SessionService {
    /// The session its calls run in.
    pub fn session(&self) -> &Session {
        &self.session
    }

    /// The registry it calls.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }
}

impl Service<ToolCall> for SessionService {
    type Response = Outcome;
    type Error = Infallible;
    type Future = ServiceFuture;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, call: ToolCall) -> ServiceFuture {
        let (registry, session) = (self.registry.clone(), self.session.clone());
        Box::pin(async move { Ok(registry.call_in(&session, call).await) })
    }
}
