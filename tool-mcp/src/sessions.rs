//! Who owns each streamable-HTTP session, how many there may be, and when an idle one ends.
//!
//! rmcp's [`LocalSessionManager`] keeps the sessions; [`OwnedSessions`] wraps it so that the
//! guard in front of the transport can ask, for every HTTP request that names an
//! `Mcp-Session-Id`, whether the request's principal opened that session, and so that a
//! session the table forgets (idle, deleted, ended) is closed in rmcp too. Its transport,
//! [`HiddenIds`], gives every server-to-client request (an elicitation) a random id and lets
//! through only an answer to a request still waiting.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use futures_core::Stream;
use rmcp::model::{
    ClientJsonRpcMessage, JsonRpcMessage, RequestId, ServerJsonRpcMessage, ServerNotification,
};
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionManager, LocalSessionManagerError, LocalSessionWorker,
};
use rmcp::transport::streamable_http_server::session::{
    EventStore, ServerSseMessage, SessionId, SessionManager,
};
use rmcp::transport::{Transport, WorkerTransport};
use rmcp::RoleServer;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// The caps of one server's sessions.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    pub(crate) max_sessions: usize,
    pub(crate) max_sessions_per_principal: usize,
    pub(crate) idle_timeout: Duration,
}

/// Why a new session was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Full {
    /// The server holds its maximum of sessions.
    Server(usize),
    /// This principal holds its maximum.
    Principal(String, usize),
}

struct Entry {
    owner: Option<String>,
    /// HTTP requests of the session whose response is still open (a call running, a stream).
    in_flight: usize,
    idle_since: Instant,
}

#[derive(Default)]
struct State {
    sessions: HashMap<Arc<str>, Entry>,
    /// Sessions and reservations per principal.
    per_principal: HashMap<String, usize>,
    /// `initialize` requests admitted whose session does not exist yet.
    reserved: usize,
}

/// The live sessions: their owners, their activity, and the caps.
pub(crate) struct SessionTable {
    limits: Limits,
    state: Mutex<State>,
}

impl SessionTable {
    pub(crate) fn new(limits: Limits) -> Arc<Self> {
        Arc::new(SessionTable {
            limits,
            state: Mutex::new(State::default()),
        })
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Room for one more session of `owner`, or why not.
    pub(crate) fn reserve(self: &Arc<Self>, owner: Option<&str>) -> Result<Reservation, Full> {
        let mut state = self.state();
        if state.sessions.len() + state.reserved >= self.limits.max_sessions {
            return Err(Full::Server(self.limits.max_sessions));
        }
        if let Some(owner) = owner {
            let held = state.per_principal.get(owner).copied().unwrap_or(0);
            if held >= self.limits.max_sessions_per_principal {
                return Err(Full::Principal(
                    owner.to_owned(),
                    self.limits.max_sessions_per_principal,
                ));
            }
            *state.per_principal.entry(owner.to_owned()).or_insert(0) += 1;
        }
        state.reserved += 1;
        Ok(Reservation {
            table: Arc::clone(self),
            owner: owner.map(str::to_owned),
            committed: false,
        })
    }

    /// One request of `owner` on session `id`: `None` when there is no such session or
    /// another principal opened it (the two look the same to the caller).
    pub(crate) fn enter(self: &Arc<Self>, id: &str, owner: Option<&str>) -> Option<Activity> {
        let mut state = self.state();
        let entry = state.sessions.get_mut(id)?;
        if entry.owner.as_deref() != owner {
            return None;
        }
        entry.in_flight += 1;
        Some(Activity {
            table: Arc::clone(self),
            id: Arc::from(id),
        })
    }

    /// Forgets a session (closed, deleted or idle).
    pub(crate) fn remove(&self, id: &str) {
        let mut state = self.state();
        if let Some(entry) = state.sessions.remove(id) {
            if let Some(owner) = entry.owner {
                release(&mut state.per_principal, &owner);
            }
        }
    }

    /// The sessions idle for at least the idle timeout at `now`.
    fn expired(&self, now: Instant) -> Vec<Arc<str>> {
        self.state()
            .sessions
            .iter()
            .filter(|(_, e)| {
                e.in_flight == 0 && now.duration_since(e.idle_since) >= self.limits.idle_timeout
            })
            .map(|(id, _)| Arc::clone(id))
            .collect()
    }

    /// How many sessions are live.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.state().sessions.len()
    }

    /// The seconds a refused client should wait: about when an idle session may have ended.
    pub(crate) fn retry_after_secs(&self) -> u64 {
        self.limits.idle_timeout.as_secs().clamp(1, 60)
    }
}

fn release(per_principal: &mut HashMap<String, usize>, owner: &str) {
    if let Some(count) = per_principal.get_mut(owner) {
        *count = count.saturating_sub(1);
        if *count == 0 {
            per_principal.remove(owner);
        }
    }
}

/// A place for a session being opened; given back unless [`Reservation::commit`] names the
/// session it became.
pub(crate) struct Reservation {
    table: Arc<SessionTable>,
    owner: Option<String>,
    committed: bool,
}

impl Reservation {
    /// The session `id` opened by the reservation's owner.
    pub(crate) fn commit(mut self, id: &str) {
        let mut state = self.table.state();
        state.reserved = state.reserved.saturating_sub(1);
        state.sessions.insert(
            Arc::from(id),
            Entry {
                owner: self.owner.take(),
                in_flight: 0,
                idle_since: Instant::now(),
            },
        );
        self.committed = true;
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        if self.committed {
            return;
        }
        let mut state = self.table.state();
        state.reserved = state.reserved.saturating_sub(1);
        if let Some(owner) = &self.owner {
            release(&mut state.per_principal, owner);
        }
    }
}

/// One HTTP request at work on a session; the session is idle again from its drop on.
pub(crate) struct Activity {
    table: Arc<SessionTable>,
    id: Arc<str>,
}

impl Drop for Activity {
    fn drop(&mut self) {
        let mut state = self.table.state();
        if let Some(entry) = state.sessions.get_mut(&self.id) {
            entry.in_flight = entry.in_flight.saturating_sub(1);
            entry.idle_since = Instant::now();
        }
    }
}

/// rmcp's local session manager, with every session's end reported to the table and every
/// session's transport hiding its server-to-client request ids.
pub(crate) struct OwnedSessions {
    inner: LocalSessionManager,
    pub(crate) table: Arc<SessionTable>,
}

impl OwnedSessions {
    pub(crate) fn new(limits: Limits) -> Arc<Self> {
        let mut inner = LocalSessionManager::default();
        // The table ends idle sessions itself, counting a running call as activity; rmcp's own
        // keep-alive would end a session whose call waits longer on an approval.
        inner.session_config.keep_alive = None;
        Arc::new(OwnedSessions {
            inner,
            table: SessionTable::new(limits),
        })
    }

    /// Closes the sessions idle past the timeout.
    async fn reap(&self) {
        for id in self.table.expired(Instant::now()) {
            let session: SessionId = Arc::clone(&id);
            tracing::debug!(target: "toolwright::mcp", session = %id, "closing an idle MCP session");
            let _ = self.close_session(&session).await;
        }
    }

    /// Ends idle sessions, about four times per idle timeout, until `stop` or until the
    /// manager is dropped. Needs a tokio runtime; without one, nothing is started.
    pub(crate) fn spawn_reaper(self: &Arc<Self>, stop: CancellationToken) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            tracing::warn!(target: "toolwright::mcp", "no tokio runtime: idle MCP sessions are not ended");
            return;
        };
        let tick = (self.table.limits.idle_timeout / 4)
            .clamp(Duration::from_millis(10), Duration::from_secs(5));
        let manager: Weak<Self> = Arc::downgrade(self);
        runtime.spawn(async move {
            loop {
                tokio::select! {
                    () = stop.cancelled() => return,
                    () = tokio::time::sleep(tick) => {}
                }
                let Some(manager) = manager.upgrade() else {
                    return;
                };
                manager.reap().await;
            }
        });
    }
}

impl SessionManager for OwnedSessions {
    type Error = LocalSessionManagerError;
    type Transport = HiddenIds<WorkerTransport<LocalSessionWorker>>;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        let (id, transport) = self.inner.create_session().await?;
        Ok((id, HiddenIds::new(transport)))
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        self.inner.initialize_session(id, message).await
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        self.inner.has_session(id).await
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        self.table.remove(id);
        self.inner.close_session(id).await
    }

    fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> impl Future<
        Output = Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error>,
    > + Send {
        self.inner.create_stream(id, message)
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        self.inner.accept_message(id, message).await
    }

    fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> impl Future<
        Output = Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error>,
    > + Send {
        self.inner.create_standalone_stream(id)
    }

    fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> impl Future<
        Output = Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error>,
    > + Send {
        self.inner.resume(id, last_event_id)
    }

    fn event_store(&self) -> Option<Arc<dyn EventStore>> {
        self.inner.event_store()
    }
}

/// The server-to-client requests one session may have waiting at once; past it the oldest is
/// forgotten (its answer is then dropped, and its caller times out).
const MAX_WAITING: usize = 256;

/// A session's transport whose server-to-client requests go out under random ids (rmcp numbers
/// them 0, 1, 2...): an answer is delivered only when it names a request still waiting, once.
pub(crate) struct HiddenIds<T> {
    inner: T,
    /// (the id the client saw, rmcp's id), oldest first.
    waiting: Vec<(RequestId, RequestId)>,
}

impl<T> HiddenIds<T> {
    fn new(inner: T) -> Self {
        HiddenIds {
            inner,
            waiting: Vec::new(),
        }
    }

    /// Gives rmcp's request id `id` a random public one.
    fn hide(&mut self, id: &mut RequestId) {
        if self.waiting.len() >= MAX_WAITING {
            self.waiting.remove(0);
        }
        let public = RequestId::String(uuid::Uuid::new_v4().simple().to_string().into());
        let original = std::mem::replace(id, public.clone());
        self.waiting.push((public, original));
    }

    /// rmcp's id for a public `id` still waiting, forgetting it.
    fn answer(&mut self, id: &RequestId) -> Option<RequestId> {
        let at = self.waiting.iter().position(|(public, _)| public == id)?;
        Some(self.waiting.remove(at).1)
    }

    /// The public id of rmcp's request `id` (when rmcp cancels it), forgetting it.
    fn withdraw(&mut self, id: &RequestId) -> Option<RequestId> {
        let at = self
            .waiting
            .iter()
            .position(|(_, original)| original == id)?;
        Some(self.waiting.remove(at).0)
    }

    fn hide_outgoing(&mut self, item: &mut ServerJsonRpcMessage) {
        match item {
            JsonRpcMessage::Request(request) => self.hide(&mut request.id),
            JsonRpcMessage::Notification(notification) => {
                if let ServerNotification::CancelledNotification(cancelled) =
                    &mut notification.notification
                {
                    if let Some(id) = cancelled.params.request_id.as_mut() {
                        if let Some(public) = self.withdraw(id) {
                            *id = public;
                        }
                    }
                }
            }
            _ => {}
        }
    }

    /// The message as rmcp should see it, or `None` for an answer to no waiting request.
    fn reveal_incoming(&mut self, message: ClientJsonRpcMessage) -> Option<ClientJsonRpcMessage> {
        match message {
            JsonRpcMessage::Response(mut response) => {
                response.id = self.answer(&response.id)?;
                Some(JsonRpcMessage::Response(response))
            }
            JsonRpcMessage::Error(mut error) => {
                let id = error.id.as_ref()?;
                error.id = Some(self.answer(id)?);
                Some(JsonRpcMessage::Error(error))
            }
            other => Some(other),
        }
    }
}

impl<T: Transport<RoleServer>> Transport<RoleServer> for HiddenIds<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        mut item: ServerJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.hide_outgoing(&mut item);
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<ClientJsonRpcMessage> {
        loop {
            let message = self.inner.receive().await?;
            match self.reveal_incoming(message) {
                Some(message) => return Some(message),
                None => {
                    tracing::debug!(target: "toolwright::mcp", "dropped an answer to no waiting server request");
                }
            }
        }
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> Limits {
        Limits {
            max_sessions: 3,
            max_sessions_per_principal: 2,
            idle_timeout: Duration::from_secs(60),
        }
    }

    #[test]
    fn a_reservation_not_committed_gives_its_place_back() {
        let table = SessionTable::new(limits());
        let first = table.reserve(Some("alice")).expect("room");
        let second = table.reserve(Some("alice")).expect("room");
        assert_eq!(
            table.reserve(Some("alice")).err(),
            Some(Full::Principal("alice".into(), 2))
        );
        drop(first);
        second.commit("s2");
        assert!(table.reserve(Some("alice")).is_ok());
        assert_eq!(table.len(), 1);
    }

    #[test]
    fn the_server_cap_counts_sessions_and_reservations() {
        let table = SessionTable::new(limits());
        table.reserve(Some("alice")).expect("room").commit("a");
        table.reserve(Some("bob")).expect("room").commit("b");
        let _pending = table.reserve(None).expect("room");
        assert_eq!(table.reserve(Some("carol")).err(), Some(Full::Server(3)));
        table.remove("a");
        assert!(table.reserve(Some("carol")).is_ok());
    }

    #[test]
    fn only_the_owner_enters_a_session() {
        let table = SessionTable::new(limits());
        table.reserve(Some("alice")).expect("room").commit("s");
        assert!(table.enter("s", Some("bob")).is_none());
        assert!(table.enter("s", None).is_none());
        assert!(table.enter("unknown", Some("alice")).is_none());
        assert!(table.enter("s", Some("alice")).is_some());
    }

    #[tokio::test(start_paused = true)]
    async fn a_session_is_idle_only_with_nothing_in_flight() {
        let table = SessionTable::new(limits());
        table.reserve(Some("alice")).expect("room").commit("s");
        let working = table.enter("s", Some("alice")).expect("hers");
        tokio::time::advance(Duration::from_secs(120)).await;
        assert!(
            table.expired(Instant::now()).is_empty(),
            "a call is running"
        );
        drop(working);
        tokio::time::advance(Duration::from_secs(59)).await;
        assert!(table.expired(Instant::now()).is_empty());
        tokio::time::advance(Duration::from_secs(1)).await;
        assert_eq!(table.expired(Instant::now()).len(), 1);
    }

    #[test]
    fn an_answer_is_delivered_once_and_only_for_a_waiting_request() {
        let mut ids = HiddenIds::new(());
        let mut id = RequestId::Number(0);
        ids.hide(&mut id);
        assert!(matches!(&id, RequestId::String(s) if s.len() == 32));
        assert_eq!(
            ids.answer(&RequestId::Number(0)),
            None,
            "rmcp's own id is not an answer"
        );
        assert_eq!(ids.answer(&id), Some(RequestId::Number(0)));
        assert_eq!(ids.answer(&id), None, "a second answer");
    }

    #[test]
    fn waiting_requests_are_bounded() {
        let mut ids = HiddenIds::new(());
        let mut first = RequestId::Number(0);
        ids.hide(&mut first);
        for n in 1..=MAX_WAITING as i64 {
            ids.hide(&mut RequestId::Number(n));
        }
        assert_eq!(ids.waiting.len(), MAX_WAITING);
        assert_eq!(ids.answer(&first), None, "the oldest was forgotten");
    }
}
