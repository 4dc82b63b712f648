//! Conversations kept in a store: one conformance suite run against the in-memory store (on
//! paused tokio time) and against a real `redis-server` on loopback; then whole registries as
//! replicas sharing one Redis, a restart, an unreachable store, round trips counted from the
//! server, and a soak with a Redis restart in the middle.
//!
//! Time differs between the harnesses as in tests/it/idempotency_store.rs: the memory store reads
//! tokio's clock (`advance` is `tokio::time::advance`); the Redis store keeps time only as key
//! TTLs, so `advance` shortens every TTL of the test's keys by the same amount.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use toolwright::approval::{Approvals, DecideError};
use toolwright::conversation::{
    CallRecord, ConversationStore, Decided, Decision, FailureCategory, MemoryConversationStore,
    Prepare, Redeemed, Review, SlotCap, SlotHold, TicketRequest, TicketState, WaitingQuery,
};
use toolwright::prelude::*;

#[cfg(feature = "redis")]
use crate::support::redis_commands;
#[cfg(feature = "redis")]
use crate::support::redis_server;

const IDLE: Duration = Duration::from_secs(3600);
const MAX_IDS: usize = 3;

/// What differs between stores: the store, and how time passes for it.
trait Harness {
    type Store: ConversationStore + Clone;
    fn store(&self) -> Self::Store;
    fn advance(&self, by: Duration) -> impl Future<Output = ()>;
}

fn pairs(ids: &[(&str, &str)]) -> Prepare {
    Prepare {
        ids: ids
            .iter()
            .map(|(k, i)| ((*k).to_owned(), (*i).to_owned()))
            .collect(),
        edited_for: None,
    }
}

async fn grounded<S: ConversationStore>(store: &S, conv: &str, ids: &[(&str, &str)]) -> Vec<bool> {
    store.prepare(conv, &pairs(ids)).await.unwrap().grounded
}

fn ground(kind: &str, ids: &[&str]) -> CallRecord {
    CallRecord {
        ids: vec![(
            kind.to_owned(),
            ids.iter().map(|s| (*s).to_owned()).collect(),
        )],
        ..CallRecord::default()
    }
}

fn request(conv: &str, principal: Option<&str>, fingerprint: &str) -> TicketRequest {
    TicketRequest {
        conversation: conv.to_owned(),
        principal: principal.map(str::to_owned),
        tool: "refund_order".to_owned(),
        call_id: "call_1".to_owned(),
        fingerprint: fingerprint.to_owned(),
        arguments: r#"{"order_id":"A1","amount":5}"#.to_owned(),
        expire_after: Duration::from_secs(600),
    }
}

fn pending(review: Review) -> String {
    match review {
        Review::Pending(ticket) => ticket,
        other => panic!("expected a pending ticket, got {other:?}"),
    }
}

// ---------------------------------------------------------------------------------------------
// The suite
// ---------------------------------------------------------------------------------------------

async fn grounded_ids_are_known_per_kind_and_conversation(h: impl Harness) {
    let store = h.store();
    store
        .record("c1", &ground("order", &["A1", "A2"]))
        .await
        .unwrap();
    assert_eq!(
        grounded(
            &store,
            "c1",
            &[("order", "A1"), ("order", "A3"), ("customer", "A1")]
        )
        .await,
        [true, false, false]
    );
    assert_eq!(grounded(&store, "c2", &[("order", "A1")]).await, [false]);
}

async fn the_oldest_ids_are_forgotten_beyond_the_bound(h: impl Harness) {
    let store = h.store();
    store
        .record("c1", &ground("order", &["A1", "A2", "A3"]))
        .await
        .unwrap();
    // Grounding A1 again does not make it younger than A2: it was first seen first.
    store
        .record("c1", &ground("order", &["A1", "A4"]))
        .await
        .unwrap();
    assert_eq!(
        grounded(
            &store,
            "c1",
            &[
                ("order", "A1"),
                ("order", "A2"),
                ("order", "A3"),
                ("order", "A4")
            ]
        )
        .await,
        [false, true, true, true]
    );
}

async fn failures_count_in_a_row_and_a_success_clears_them(h: impl Harness) {
    let store = h.store();
    let fail = |tool: &str, category| CallRecord {
        failures: vec![(tool.to_owned(), category)],
        ..CallRecord::default()
    };
    let count = |turn: CallRecord| {
        let store = store.clone();
        async move { store.record("c1", &turn).await.unwrap().counts }
    };
    assert_eq!(count(fail("a", FailureCategory::Schema)).await, [1]);
    assert_eq!(count(fail("a", FailureCategory::Schema)).await, [2]);
    assert_eq!(count(fail("a", FailureCategory::Semantic)).await, [1]);
    assert_eq!(count(fail("b", FailureCategory::Schema)).await, [1]);
    assert_eq!(count(fail("", FailureCategory::UnknownTool)).await, [1]);
    let cleared = store
        .record(
            "c1",
            &CallRecord {
                cleared: Some("a".to_owned()),
                ..CallRecord::default()
            },
        )
        .await
        .unwrap();
    assert!(cleared.had_failures);
    assert_eq!(count(fail("a", FailureCategory::Schema)).await, [1]);
    assert_eq!(count(fail("b", FailureCategory::Schema)).await, [2]);
    assert_eq!(count(fail("", FailureCategory::UnknownTool)).await, [1]);
    // Another conversation counts on its own.
    let other = store
        .record("c2", &fail("a", FailureCategory::Schema))
        .await
        .unwrap();
    assert_eq!(other.counts, [1]);
}

async fn an_idle_conversation_is_forgotten_and_a_busy_one_is_not(h: impl Harness) {
    let store = h.store();
    store
        .record("idle", &ground("order", &["A1"]))
        .await
        .unwrap();
    store
        .record("busy", &ground("order", &["B1"]))
        .await
        .unwrap();
    h.advance(IDLE / 2).await;
    // Reading the busy conversation keeps it alive.
    assert_eq!(grounded(&store, "busy", &[("order", "B1")]).await, [true]);
    h.advance(IDLE / 2 + Duration::from_secs(1)).await;
    assert_eq!(grounded(&store, "idle", &[("order", "A1")]).await, [false]);
    assert_eq!(grounded(&store, "busy", &[("order", "B1")]).await, [true]);
}

async fn a_ticket_waits_then_its_decision_is_used_once(h: impl Harness) {
    let store = h.store();
    let ask = request("c1", Some("alice"), "fp-1");
    let ticket = pending(store.review(&ask).await.unwrap());
    // Asked again before a decision: the same ticket, still waiting.
    assert_eq!(pending(store.review(&ask).await.unwrap()), ticket);
    let shown = store.ticket(&ticket).await.unwrap().expect("the ticket");
    assert_eq!(shown.state, TicketState::Waiting);
    assert_eq!(shown.principal.as_deref(), Some("alice"));
    assert_eq!(shown.tool, "refund_order");
    assert_eq!(shown.conversation, "c1");
    assert_eq!(shown.fingerprint, "fp-1");
    assert!(shown.asked_at_ms > 0);
    // Another principal's identical call is another ticket.
    let bob = pending(
        store
            .review(&request("c1", Some("bob"), "fp-1"))
            .await
            .unwrap(),
    );
    assert_ne!(bob, ticket);

    assert_eq!(
        store.decide(&ticket, &Decision::Approve).await.unwrap(),
        Decided::Done
    );
    assert_eq!(store.review(&ask).await.unwrap(), Review::Approved);
    assert_eq!(
        store.ticket(&ticket).await.unwrap().unwrap().state,
        TicketState::Used
    );
    // Used up: the same call asks again.
    assert_ne!(pending(store.review(&ask).await.unwrap()), ticket);

    assert_eq!(
        store
            .decide(&bob, &Decision::Deny("over the limit".into()))
            .await
            .unwrap(),
        Decided::Done
    );
    assert_eq!(
        store
            .review(&request("c1", Some("bob"), "fp-1"))
            .await
            .unwrap(),
        Review::Denied("over the limit".into())
    );
}

async fn a_ticket_is_decided_at_most_once(h: impl Harness) {
    let store = h.store();
    let ticket = pending(store.review(&request("c1", None, "fp-1")).await.unwrap());
    let deny = Decision::Deny("no".into());
    let (a, b) = tokio::join!(
        store.decide(&ticket, &Decision::Approve),
        store.decide(&ticket, &deny),
    );
    let answers = [a.unwrap(), b.unwrap()];
    let done = answers.iter().filter(|d| **d == Decided::Done).count();
    assert_eq!(done, 1, "{answers:?}");
    assert!(answers
        .iter()
        .any(|d| matches!(d, Decided::AlreadyDecided(_))));
    assert_eq!(
        store.decide("t999-none", &Decision::Approve).await.unwrap(),
        Decided::Unknown
    );
}

async fn a_ticket_expires(h: impl Harness) {
    let store = h.store();
    let ask = request("c1", None, "fp-1");
    let ticket = pending(store.review(&ask).await.unwrap());
    h.advance(ask.expire_after + Duration::from_secs(1)).await;
    assert_eq!(store.ticket(&ticket).await.unwrap(), None);
    assert_eq!(
        store.decide(&ticket, &Decision::Approve).await.unwrap(),
        Decided::Unknown
    );
    assert!(store
        .waiting(&WaitingQuery::default())
        .await
        .unwrap()
        .tickets
        .is_empty());
    assert_ne!(pending(store.review(&ask).await.unwrap()), ticket);
}

async fn waiting_is_paginated_and_filtered(h: impl Harness) {
    let store = h.store();
    let mut ids = Vec::new();
    for i in 0..7 {
        let principal = if i % 2 == 0 { "alice" } else { "bob" };
        let mut ask = request(&format!("c{i}"), Some(principal), &format!("fp-{i}"));
        if i == 6 {
            ask.tool = "wire_money".into();
        }
        ids.push(pending(store.review(&ask).await.unwrap()));
    }
    // One decided ticket leaves the queue.
    store.decide(&ids[2], &Decision::Approve).await.unwrap();
    let mut seen = Vec::new();
    let mut query = WaitingQuery {
        limit: 2,
        ..WaitingQuery::default()
    };
    loop {
        let page = store.waiting(&query).await.unwrap();
        assert!(page.tickets.len() <= 2);
        seen.extend(page.tickets.iter().map(|t| t.id.clone()));
        match page.next {
            Some(next) => query.after = next,
            None => break,
        }
    }
    let expected: Vec<String> = ids
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != 2)
        .map(|(_, id)| id.clone())
        .collect();
    assert_eq!(seen, expected, "oldest first, each once");

    let alice = store
        .waiting(&WaitingQuery {
            principal: Some("alice".into()),
            ..WaitingQuery::default()
        })
        .await
        .unwrap();
    let alice: Vec<&str> = alice.tickets.iter().map(|t| t.id.as_str()).collect();
    assert_eq!(alice, [&ids[0], &ids[4], &ids[6]]);
    let wires = store
        .waiting(&WaitingQuery {
            tool: Some("wire_money".into()),
            principal: Some("alice".into()),
            ..WaitingQuery::default()
        })
        .await
        .unwrap();
    assert_eq!(wires.tickets.len(), 1);
    assert_eq!(wires.tickets[0].id, ids[6]);
}

async fn an_edited_approval_binds_to_the_edited_fingerprint(h: impl Harness) {
    let store = h.store();
    let ask = request("c1", Some("alice"), "fp-asked");
    let ticket = pending(store.review(&ask).await.unwrap());
    let edit = Decision::ApproveWith {
        arguments: r#"{"order_id":"A1","amount":2}"#.into(),
        fingerprint: "fp-edited".into(),
        redacted: r#"{"order_id":"A1","amount":2}"#.into(),
    };
    assert_eq!(store.decide(&ticket, &edit).await.unwrap(), Decided::Done);
    // The call as asked does not run: it is given the edit in its place ...
    assert_eq!(pending(store.review(&ask).await.unwrap()), ticket);
    let lookup = Prepare {
        ids: Vec::new(),
        edited_for: Some((Some("alice".into()), "fp-asked".into())),
    };
    let prepared = store.prepare("c1", &lookup).await.unwrap();
    assert_eq!(
        prepared.edited.as_deref(),
        Some(r#"{"order_id":"A1","amount":2}"#)
    );
    // ... and the edited call is the approved one, once.
    let edited = request("c1", Some("alice"), "fp-edited");
    assert_eq!(store.review(&edited).await.unwrap(), Review::Approved);
    let shown = store.ticket(&ticket).await.unwrap().unwrap();
    assert_eq!(shown.state, TicketState::Used);
    assert!(shown.edited_arguments.unwrap().contains("\"amount\":2"));
    // Another principal gets no edit.
    let bob = Prepare {
        ids: Vec::new(),
        edited_for: Some((Some("bob".into()), "fp-asked".into())),
    };
    assert_eq!(store.prepare("c1", &bob).await.unwrap().edited, None);
}

/// A single-use token is marked used once, in one step; a principal that used its share is
/// refused and no other principal is.
async fn a_token_is_used_once_and_each_principal_has_its_own_bound(h: impl Harness) {
    let store = h.store();
    let ttl = Duration::from_secs(60);
    assert_eq!(
        store.redeem(Some("eve"), "t1", ttl, 2).await.unwrap(),
        Redeemed::Now
    );
    assert_eq!(
        store.redeem(Some("eve"), "t1", ttl, 2).await.unwrap(),
        Redeemed::AlreadyUsed
    );
    assert_eq!(
        store.redeem(Some("eve"), "t2", ttl, 2).await.unwrap(),
        Redeemed::Now
    );
    assert_eq!(
        store.redeem(Some("eve"), "t3", ttl, 2).await.unwrap(),
        Redeemed::Full
    );
    assert_eq!(
        store.redeem(Some("ada"), "t3", ttl, 2).await.unwrap(),
        Redeemed::Now,
        "another principal's share"
    );
    assert_eq!(
        store.redeem(None, "t1", ttl, 2).await.unwrap(),
        Redeemed::Now
    );
}

/// A place is held under every cap asked for in one step, or under none: a full cap refuses it
/// whoever holds the other places; a place held already is renewed, not refused; a place given
/// back, or not renewed within its lease, frees its room.
async fn a_place_is_held_under_every_cap_or_none_and_lapses_with_its_lease(h: impl Harness) {
    let store = h.store();
    let lease = Duration::from_secs(10);
    let caps = |principal: &'static str| {
        [
            SlotCap {
                scope: principal,
                most: 2,
            },
            SlotCap {
                scope: "all",
                most: 3,
            },
        ]
    };
    let hold = |principal: &'static str, slot: &'static str| {
        let store = store.clone();
        async move {
            store
                .hold_slot(&caps(principal), slot, lease)
                .await
                .unwrap()
        }
    };
    assert_eq!(hold("eve", "e1").await, SlotHold::Held);
    assert_eq!(hold("eve", "e2").await, SlotHold::Held);
    assert_eq!(hold("eve", "e3").await, SlotHold::Full { cap: 0, held: 2 });
    assert_eq!(hold("eve", "e1").await, SlotHold::Held, "renewed");
    assert_eq!(hold("ada", "a1").await, SlotHold::Held);
    assert_eq!(
        hold("ada", "a2").await,
        SlotHold::Full { cap: 1, held: 3 },
        "the shared cap counts everyone's places"
    );
    // A refused place holds nothing: ada's own cap still has room for one once "all" has.
    store.release_slot(&["eve", "all"], "e2").await.unwrap();
    assert_eq!(hold("ada", "a2").await, SlotHold::Held);
    h.advance(Duration::from_secs(11)).await;
    assert_eq!(hold("eve", "e4").await, SlotHold::Held, "the rest lapsed");
}

// ---------------------------------------------------------------------------------------------
// The memory store, on paused tokio time
// ---------------------------------------------------------------------------------------------

#[derive(Clone)]
struct Memory(Arc<MemoryConversationStore>);

impl Memory {
    fn new() -> Memory {
        Memory(Arc::new(
            MemoryConversationStore::builder()
                .idle_ttl(IDLE)
                .max_ids_per_kind(MAX_IDS)
                .build(),
        ))
    }
}

impl Harness for Memory {
    type Store = Arc<MemoryConversationStore>;
    fn store(&self) -> Self::Store {
        Arc::clone(&self.0)
    }
    async fn advance(&self, by: Duration) {
        tokio::time::advance(by).await;
    }
}

/// Each test of the suite, once per store: `memory::NAME` on paused tokio time, `redis::NAME`
/// against a real server (skipped, loudly, when `redis-server` is not installed).
macro_rules! conformance {
    ($($name:ident),* $(,)?) => {
        mod memory {
            $(
                #[tokio::test(start_paused = true)]
                async fn $name() {
                    super::$name(super::Memory::new()).await;
                }
            )*
        }

        #[cfg(feature = "redis")]
        mod redis {
            $(
                #[tokio::test]
                async fn $name() {
                    let Some(redis) = super::redis_harness::Redis::start().await else { return };
                    super::$name(redis).await;
                }
            )*
        }
    };
}

conformance!(
    grounded_ids_are_known_per_kind_and_conversation,
    the_oldest_ids_are_forgotten_beyond_the_bound,
    failures_count_in_a_row_and_a_success_clears_them,
    an_idle_conversation_is_forgotten_and_a_busy_one_is_not,
    a_ticket_waits_then_its_decision_is_used_once,
    a_ticket_is_decided_at_most_once,
    a_ticket_expires,
    waiting_is_paginated_and_filtered,
    an_edited_approval_binds_to_the_edited_fingerprint,
    a_token_is_used_once_and_each_principal_has_its_own_bound,
    a_place_is_held_under_every_cap_or_none_and_lapses_with_its_lease,
);

// ---------------------------------------------------------------------------------------------
// The Redis store, against a real redis-server on loopback
// ---------------------------------------------------------------------------------------------

#[cfg(feature = "redis")]
mod redis_harness {
    use std::time::Duration;

    use toolwright::conversation::RedisConversationStore;
    use toolwright::redis::{self, aio::MultiplexedConnection};

    use super::redis_server::RedisServer;
    use super::{Harness, IDLE, MAX_IDS};

    pub struct Redis {
        pub store: RedisConversationStore,
        pub raw: MultiplexedConnection,
        /// Held: dropping it stops the server.
        pub _server: RedisServer,
    }

    impl Redis {
        pub async fn start() -> Option<Redis> {
            let server = RedisServer::start()?;
            let store = RedisConversationStore::builder()
                .prefix("test:conv:")
                .idle_ttl(IDLE)
                .max_ids_per_kind(MAX_IDS)
                .connect(&server.url())
                .await
                .expect("connect the store");
            let raw = redis::Client::open(server.url())
                .unwrap()
                .get_multiplexed_async_connection()
                .await
                .expect("connect");
            Some(Redis {
                store,
                raw,
                _server: server,
            })
        }
    }

    impl Harness for Redis {
        type Store = RedisConversationStore;
        fn store(&self) -> RedisConversationStore {
            self.store.clone()
        }
        async fn advance(&self, by: Duration) {
            super::redis_commands::advance(&self.raw, self.store.prefix(), by).await;
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Registries on a shared store
// ---------------------------------------------------------------------------------------------

/// How many refunds ran, per order id.
#[derive(Clone, Default)]
struct Ledger(Arc<std::sync::Mutex<std::collections::HashMap<String, u32>>>);

impl Ledger {
    fn ran(&self, order: &str) -> u32 {
        self.0.lock().unwrap().get(order).copied().unwrap_or(0)
    }
    fn add(&self, order: &str) {
        *self.0.lock().unwrap().entry(order.to_owned()).or_insert(0) += 1;
    }
    fn total(&self) -> u32 {
        self.0.lock().unwrap().values().sum()
    }
}

#[derive(serde::Serialize, schemars::JsonSchema)]
struct Order {
    id: String,
}

/// Find the customer's orders.
#[tool(read_only, grounds(order = "id"))]
async fn find_orders(
    /// The customer.
    customer: String,
) -> Result<Vec<Order>, ToolError> {
    Ok(vec![Order {
        id: format!("O-{customer}"),
    }])
}

/// Say which orders are late.
#[tool(read_only)]
async fn late_orders() -> Result<Vec<String>, ToolError> {
    Ok(vec!["none".into()])
}

/// Refund part of an order (a person approves each refund).
#[tool(requires_approval, idempotent = false, timeout_ms = 1000)]
async fn refund_order(
    _key: IdempotencyKey,
    /// The order to refund.
    #[arg(grounded = "order")]
    order_id: String,
    /// Amount in dollars.
    #[arg(range(min = 0.01, max = 500.0))]
    amount: f64,
    ledger: State<Ledger>,
) -> Result<String, ToolError> {
    ledger.add(&order_id);
    Ok(format!("refunded {amount} on {order_id}"))
}

fn replica(idempotency: impl toolwright::IdempotencyStore, ledger: &Ledger) -> Registry {
    Registry::builder()
        .tool(FindOrders)
        .tool(LateOrders)
        .tool(RefundOrder)
        .state(ledger.clone())
        .idempotency_store(idempotency)
        .approval_timeout(Duration::from_secs(2))
        .build()
        .unwrap()
}

fn find(id: &str, customer: &str) -> ToolCall {
    ToolCall::new(id, "find_orders", format!(r#"{{"customer":"{customer}"}}"#))
}

fn refund(id: &str, order: &str, amount: f64) -> ToolCall {
    ToolCall::new(
        id,
        "refund_order",
        format!(r#"{{"order_id":"{order}","amount":{amount}}}"#),
    )
}

fn ticket_of(outcome: &Outcome) -> String {
    assert_eq!(
        outcome.status(),
        Status::Pending,
        "{}",
        outcome.to_model_json()
    );
    outcome.to_model_json()["data"]["ticket"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// A session as the application keeps it between requests: written, and read back on the
/// replica that serves the next one.
fn restored(session: &Session, store: Arc<dyn ConversationStore>) -> Session {
    let saved = serde_json::to_string(session).unwrap();
    serde_json::from_str::<Session>(&saved)
        .unwrap()
        .with_store(store)
}

/// Two replicas, A and B, each with its own handle on the shared stores: an id grounded on A
/// is accepted on B, the model's budget spent on A is spent on B, a ticket filed on A is
/// approved through B and the re-sent call runs once, whichever replica it reaches.
async fn replicas_share_a_conversation(
    a: (Registry, Arc<dyn ConversationStore>),
    b: (Registry, Arc<dyn ConversationStore>),
    ledger: &Ledger,
) {
    let (registry_a, store_a) = a;
    let (registry_b, store_b) = b;
    let on_a = Session::new("conv-1")
        .with_principal("alice")
        .with_store(Arc::clone(&store_a));
    let on_b = restored(&on_a, Arc::clone(&store_b));

    // An id never grounded is refused on both.
    let refused = registry_b.call_in(&on_b, refund("c0", "O-bob", 5.0)).await;
    assert_eq!(
        refused.error_kind(),
        Some(ErrorKind::UngroundedIdentifier),
        "{}",
        refused.to_model_json()
    );

    let found = registry_a.call_in(&on_a, find("c1", "ann")).await;
    assert!(found.is_ok(), "{}", found.to_model_json());

    // Grounded on A, accepted on B: the refund waits for a person.
    let asked = registry_b.call_in(&on_b, refund("c2", "O-ann", 5.0)).await;
    let ticket = ticket_of(&asked);

    // Budget: schema violations twice on A, a third on B is one too many.
    for id in ["c3", "c4"] {
        let bad = registry_a.call_in(&on_a, refund(id, "O-ann", 900.0)).await;
        assert_eq!(bad.error_kind(), Some(ErrorKind::SchemaMismatch));
        assert!(bad.retryable());
    }
    let third = registry_b
        .call_in(&on_b, refund("c5", "O-ann", 900.0))
        .await;
    assert_eq!(third.error_kind(), Some(ErrorKind::SchemaMismatch));
    assert!(
        !third.retryable(),
        "the budget spent on A is spent on B: {}",
        third.to_model_json()
    );

    // The ticket filed on A's proposal is decided through B, and only once.
    let through_b = Approvals::new(Arc::clone(&store_b));
    let waiting = through_b
        .waiting(&WaitingQuery {
            principal: Some("alice".into()),
            ..WaitingQuery::default()
        })
        .await
        .unwrap();
    assert_eq!(waiting.tickets.len(), 1);
    assert_eq!(waiting.tickets[0].id, ticket);
    through_b.approve(&ticket).await.unwrap();
    let through_a = Approvals::new(Arc::clone(&store_a));
    assert!(matches!(
        through_a.deny(&ticket, "too late").await,
        Err(DecideError::AlreadyDecided(TicketState::Approved))
    ));
    assert_eq!(
        ledger.ran("O-ann"),
        0,
        "nothing runs before it is proposed again"
    );

    // The model proposes the same call again (same call id): it runs once, on either.
    let ran = registry_a.call_in(&on_a, refund("c2", "O-ann", 5.0)).await;
    assert!(ran.is_ok(), "{}", ran.to_model_json());
    let again = registry_b.call_in(&on_b, refund("c2", "O-ann", 5.0)).await;
    assert!(again.is_ok(), "{}", again.to_model_json());
    assert_eq!(ledger.ran("O-ann"), 1);
    assert_eq!(ledger.total(), 1, "nothing else ran");
}

#[tokio::test]
async fn replicas_share_a_conversation_in_one_process() {
    let ledger = Ledger::default();
    let store: Arc<dyn ConversationStore> = Arc::new(MemoryConversationStore::new());
    let idempotency = toolwright::MemoryStore::new();
    replicas_share_a_conversation(
        (replica(idempotency.clone(), &ledger), Arc::clone(&store)),
        (replica(idempotency, &ledger), store),
        &ledger,
    )
    .await;
}

/// A reviewer's edited arguments are checked whole (an ungrounded id and an amount out of
/// range are refused with the field), and the approved edit is what runs.
#[tokio::test]
async fn an_edit_is_validated_whole_and_is_what_runs() {
    let ledger = Ledger::default();
    let store: Arc<dyn ConversationStore> = Arc::new(MemoryConversationStore::new());
    let registry = replica(toolwright::MemoryStore::new(), &ledger);
    let session = Session::new("conv-e").with_store(Arc::clone(&store));
    assert!(registry.call_in(&session, find("c1", "ann")).await.is_ok());
    let ticket = ticket_of(
        &registry
            .call_in(&session, refund("c2", "O-ann", 50.0))
            .await,
    );
    let approvals = Approvals::new(Arc::clone(&store));

    let refused = registry
        .approve_with(&approvals, &ticket, r#"{"order_id":"O-ann","amount":900}"#)
        .await;
    let Err(DecideError::Invalid(outcome)) = &refused else {
        panic!("an amount out of range must be refused")
    };
    assert_eq!(outcome.error_kind(), Some(ErrorKind::SchemaMismatch));
    assert_eq!(outcome.violations()[0].path, "/amount");
    let shown = format!(
        "the edited arguments are invalid: {}",
        outcome.message().unwrap()
    );
    assert_eq!(refused.unwrap_err().to_string(), shown);
    let Err(DecideError::Invalid(outcome)) = registry
        .approve_with(&approvals, &ticket, r#"{"order_id":"O-zed","amount":20}"#)
        .await
    else {
        panic!("an id the conversation never saw must be refused")
    };
    assert_eq!(outcome.error_kind(), Some(ErrorKind::UngroundedIdentifier));
    assert_eq!(
        approvals.ticket(&ticket).await.unwrap().unwrap().state,
        TicketState::Waiting
    );

    registry
        .approve_with(&approvals, &ticket, r#"{"order_id":"O-ann","amount":20}"#)
        .await
        .unwrap();
    let ran = registry
        .call_in(&session, refund("c2", "O-ann", 50.0))
        .await;
    assert!(ran.is_ok(), "{}", ran.to_model_json());
    assert!(
        ran.data().unwrap().get().contains("refunded 20"),
        "{:?}",
        ran.data()
    );
    let again = registry
        .call_in(&session, refund("c2", "O-ann", 50.0))
        .await;
    assert!(again.is_ok(), "{}", again.to_model_json());
    assert_eq!(ledger.ran("O-ann"), 1);
    let used = approvals.approve(&ticket).await;
    assert!(matches!(
        used,
        Err(DecideError::AlreadyDecided(TicketState::Used))
    ));
    // What a review page shows the person whose decision was not taken.
    assert_eq!(
        used.unwrap_err().to_string(),
        "the ticket was already decided: Used"
    );
    assert_eq!(
        approvals
            .approve("approval-none")
            .await
            .unwrap_err()
            .to_string(),
        "no such ticket (never asked, or expired)"
    );
}

/// Counts the failures an unknown tool name makes, in the store.
#[tokio::test]
async fn invented_tool_names_spend_the_shared_budget() {
    let ledger = Ledger::default();
    let store: Arc<dyn ConversationStore> = Arc::new(MemoryConversationStore::new());
    let a = replica(toolwright::MemoryStore::new(), &ledger);
    let b = replica(toolwright::MemoryStore::new(), &ledger);
    let on_a = Session::new("conv-u").with_store(Arc::clone(&store));
    let on_b = restored(&on_a, Arc::clone(&store));
    let first = a
        .call_in(&on_a, ToolCall::new("c1", "refund_ordr", "{}"))
        .await;
    assert!(first.retryable());
    let second = b.call_in(&on_b, ToolCall::new("c2", "refnd", "{}")).await;
    assert_eq!(second.error_kind(), Some(ErrorKind::UnknownTool));
    assert!(!second.retryable(), "{}", second.to_model_json());
}

#[cfg(feature = "redis")]
mod replicas {
    use std::sync::Arc;
    use std::time::Duration;

    use toolwright::approval::Approvals;
    use toolwright::conversation::{ConversationStore, RedisConversationStore};
    use toolwright::idempotency::RedisStore;
    use toolwright::prelude::*;
    use toolwright::redis;
    use toolwright::redis::aio::ConnectionManagerConfig;

    use super::redis_server::RedisServer;
    use super::{find, refund, replica, ticket_of, Ledger};

    async fn conversations(url: &str) -> Arc<dyn ConversationStore> {
        Arc::new(
            RedisConversationStore::builder()
                .prefix("test:conv:")
                .connect(url)
                .await
                .unwrap(),
        )
    }

    pub(crate) async fn replica_on(
        url: &str,
        ledger: &Ledger,
    ) -> (Registry, Arc<dyn ConversationStore>) {
        // Reconnecting quickly after a server restart (the soak's).
        let config = ConnectionManagerConfig::new()
            .set_min_delay(Duration::from_millis(10))
            .set_max_delay(Duration::from_millis(200))
            .set_connection_timeout(Some(Duration::from_secs(1)))
            .set_response_timeout(Some(Duration::from_secs(5)));
        let idempotency = RedisStore::builder()
            .connection_config(config.clone())
            .connect(url)
            .await
            .unwrap();
        let conversations: Arc<dyn ConversationStore> = Arc::new(
            RedisConversationStore::builder()
                .prefix("test:conv:")
                .connect_with(url, config)
                .await
                .unwrap(),
        );
        (replica(idempotency, ledger), conversations)
    }

    #[tokio::test]
    async fn two_replicas_share_a_conversation_through_redis() {
        let Some(server) = RedisServer::start() else {
            return;
        };
        let ledger = Ledger::default();
        let a = replica_on(&server.url(), &ledger).await;
        let b = replica_on(&server.url(), &ledger).await;
        super::replicas_share_a_conversation(a, b, &ledger).await;
    }

    /// A replica dropped and built again finds grounded ids, the model's budget and tickets
    /// where it left them.
    #[tokio::test]
    async fn a_restarted_replica_keeps_ids_budget_and_tickets() {
        let Some(server) = RedisServer::start() else {
            return;
        };
        let ledger = Ledger::default();
        let saved = {
            let (registry, store) = replica_on(&server.url(), &ledger).await;
            let session = Session::new("conv-r")
                .with_principal("alice")
                .with_store(store);
            assert!(registry.call_in(&session, find("c1", "ann")).await.is_ok());
            let ticket = ticket_of(&registry.call_in(&session, refund("c2", "O-ann", 5.0)).await);
            for id in ["c3", "c4"] {
                let bad = registry.call_in(&session, refund(id, "O-ann", 900.0)).await;
                assert!(bad.retryable());
            }
            (serde_json::to_string(&session).unwrap(), ticket)
        };
        // Everything of the first replica is gone; a new one reads the session back.
        let (saved, ticket) = saved;
        let (registry, store) = replica_on(&server.url(), &ledger).await;
        let session = serde_json::from_str::<Session>(&saved)
            .unwrap()
            .with_store(Arc::clone(&store));
        let third = registry
            .call_in(&session, refund("c5", "O-ann", 900.0))
            .await;
        assert!(
            !third.retryable(),
            "the budget survived: {}",
            third.to_model_json()
        );
        let approvals = Approvals::new(Arc::clone(&store));
        assert_eq!(
            approvals.ticket(&ticket).await.unwrap().unwrap().tool,
            "refund_order"
        );
        approvals.approve(&ticket).await.unwrap();
        // The grounded id is still known, and the approved call runs.
        let ran = registry.call_in(&session, refund("c2", "O-ann", 5.0)).await;
        assert!(ran.is_ok(), "{}", ran.to_model_json());
        assert_eq!(ledger.ran("O-ann"), 1);
    }

    /// The store unreachable: calls that need it are refused `unavailable` before anything
    /// runs, and the breaker does not count them; calls that need none of it still run.
    #[tokio::test]
    async fn an_unreachable_store_fails_closed_only_for_calls_that_need_it() {
        let Some(mut server) = RedisServer::start() else {
            return;
        };
        let ledger = Ledger::default();
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(Duration::from_millis(200)))
            .set_response_timeout(Some(Duration::from_millis(200)))
            .set_number_of_retries(1);
        let store: Arc<dyn ConversationStore> = Arc::new(
            RedisConversationStore::builder()
                .prefix("test:conv:")
                .connect_with(&server.url(), config)
                .await
                .unwrap(),
        );
        let registry = replica(toolwright::MemoryStore::new(), &ledger);
        let session = Session::new("conv-down").with_store(Arc::clone(&store));
        assert!(registry.call_in(&session, find("c1", "ann")).await.is_ok());
        server.stop();

        for id in ["c2", "c3", "c4", "c5", "c6", "c7"] {
            let refused = registry.call_in(&session, refund(id, "O-ann", 5.0)).await;
            assert_eq!(
                refused.error_kind(),
                Some(ErrorKind::Unavailable),
                "{}",
                refused.to_model_json()
            );
            assert!(refused.retryable());
            assert!(refused.message().unwrap().contains("Nothing was done"));
        }
        assert_eq!(ledger.total(), 0, "nothing ran");
        let breaker = registry.breaker("refund_order").unwrap().stats();
        assert_eq!(breaker.calls, 0, "the breaker never saw them: {breaker:?}");

        // A call with no grounded argument and no approval runs.
        let late = registry
            .call_in(&session, ToolCall::new("c8", "late_orders", "{}"))
            .await;
        assert!(late.is_ok(), "{}", late.to_model_json());
        // A call outside a conversation too.
        let anonymous = registry
            .call(ToolCall::new("c9", "late_orders", "{}"))
            .await;
        assert!(anonymous.is_ok());
        // A lookup whose ids could not be remembered is answered `unavailable`, so the model
        // never holds an id the conversation does not know.
        let lookup = registry.call_in(&session, find("c10", "bea")).await;
        assert_eq!(lookup.error_kind(), Some(ErrorKind::Unavailable));
    }

    /// Redis round trips per call on the store-backed path, from the server's own
    /// `INFO commandstats` (scripts are `EVALSHA`; `HGETALL` reads a ticket).
    #[tokio::test]
    async fn round_trips_per_call_are_counted_by_the_server() {
        let Some(server) = RedisServer::start() else {
            return;
        };
        let ledger = Ledger::default();
        let store = conversations(&server.url()).await;
        // Idempotency kept in memory: only the conversation store's trips are counted.
        let registry = replica(toolwright::MemoryStore::new(), &ledger);
        let mut raw = redis::Client::open(server.url())
            .unwrap()
            .get_multiplexed_async_connection()
            .await
            .unwrap();
        let session = Session::new("conv-rt").with_store(Arc::clone(&store));
        let mut trips = Vec::new();
        let mut measure = |name: &'static str, outcome: Outcome, before: u64, after: u64| {
            println!(
                "{name}: {} round trips ({})",
                after - before,
                outcome.status()
            );
            trips.push((name, after - before));
        };
        // Scripts are `EVALSHA` (`EVAL` when one had to be loaded again); a ticket read is
        // `HGETALL`.
        let count = |raw: &mut redis::aio::MultiplexedConnection| {
            let raw = raw.clone();
            async move {
                let mut calls = 0;
                for name in ["evalsha", "eval", "hgetall"] {
                    calls += super::redis_commands::command_calls(&raw, name).await;
                }
                calls
            }
        };
        let before = count(&mut raw).await;
        let outcome = registry
            .call_in(&session, ToolCall::new("r1", "late_orders", "{}"))
            .await;
        measure("plain call", outcome, before, count(&mut raw).await);
        let before = count(&mut raw).await;
        let outcome = registry.call_in(&session, find("r2", "ann")).await;
        measure(
            "call that grounds ids",
            outcome,
            before,
            count(&mut raw).await,
        );
        let before = count(&mut raw).await;
        let outcome = registry.call_in(&session, refund("r3", "O-ann", 5.0)).await;
        let ticket = ticket_of(&outcome);
        measure(
            "grounded + approval, pending",
            outcome,
            before,
            count(&mut raw).await,
        );
        Approvals::new(Arc::clone(&store))
            .approve(&ticket)
            .await
            .unwrap();
        let before = count(&mut raw).await;
        let outcome = registry.call_in(&session, refund("r3", "O-ann", 5.0)).await;
        assert!(outcome.is_ok());
        measure(
            "grounded + approval, approved",
            outcome,
            before,
            count(&mut raw).await,
        );
        let before = count(&mut raw).await;
        let outcome = registry
            .call_in(&session, refund("r4", "O-ann", 900.0))
            .await;
        measure(
            "failed validation (counted)",
            outcome,
            before,
            count(&mut raw).await,
        );
        let before = count(&mut raw).await;
        let outcome = registry
            .call(ToolCall::new("r5", "late_orders", "{}"))
            .await;
        measure(
            "call outside a conversation",
            outcome,
            before,
            count(&mut raw).await,
        );
        assert_eq!(
            trips,
            [
                ("plain call", 1),
                ("call that grounds ids", 1),
                ("grounded + approval, pending", 2),
                ("grounded + approval, approved", 3),
                ("failed validation (counted)", 2),
                ("call outside a conversation", 0),
            ]
        );
    }
}

/// The soak: two replicas, 500 conversations, each grounding an order id on one replica and
/// asking for its refund on the other; reviewers on both replicas race to decide every ticket
/// (one in five denied); Redis is killed and started again (from its append-only file) half-way.
/// No approved refund runs twice, no denied or undecided one runs, and every grounded id is
/// still known at the end.
#[cfg(feature = "redis")]
mod soak {
    use std::collections::HashSet;
    use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    use tokio::sync::Notify;
    use toolwright::approval::{Approvals, DecideError};
    use toolwright::conversation::{ConversationStore, Prepare, WaitingQuery};
    use toolwright::prelude::*;

    use super::redis_server::RedisServer;
    use super::replicas::replica_on;
    use super::{find, refund, Ledger};

    const CONVERSATIONS: usize = 500;

    fn denied(i: usize) -> bool {
        i.is_multiple_of(5)
    }

    fn index_of(conversation: &str) -> usize {
        conversation
            .strip_prefix("soak-")
            .and_then(|n| n.parse().ok())
            .unwrap()
    }

    /// Calls until the outcome is not `unavailable` (Redis restarting) nor `duplicate_in_flight`:
    /// a key whose release was lost in the restart stays locked for the idempotency store's
    /// lock (the call's deadline, its approval wait and 5 s of slack), as a crashed call's would.
    async fn settled(registry: &Registry, session: &Session, call: &ToolCall) -> Outcome {
        let mut seen: Vec<(Duration, String)> = Vec::new();
        let began = std::time::Instant::now();
        while began.elapsed() < Duration::from_secs(150) {
            let outcome = registry.call_in(session, call.clone()).await;
            match outcome.error_kind() {
                Some(ErrorKind::Unavailable | ErrorKind::DuplicateInFlight) => {
                    let message = outcome.message().unwrap_or_default();
                    if seen.last().is_none_or(|(_, last)| last != message) {
                        seen.push((began.elapsed(), message.to_owned()));
                    }
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
                _ => return outcome,
            }
        }
        panic!("{} never settled: {seen:#?}", call.id());
    }

    /// One reviewer: decides every waiting ticket it sees, racing the other replica's.
    async fn reviewer(
        approvals: Approvals,
        stop: Arc<AtomicBool>,
        decided: Arc<Mutex<HashSet<usize>>>,
        told: Arc<Vec<Notify>>,
        lost_races: Arc<AtomicU64>,
        ledger: Ledger,
    ) {
        while !stop.load(Ordering::SeqCst) {
            let page = match approvals
                .waiting(&WaitingQuery {
                    limit: 100,
                    ..WaitingQuery::default()
                })
                .await
            {
                Ok(page) => page,
                Err(_) => {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                    continue;
                }
            };
            if page.tickets.is_empty() {
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
            for ticket in page.tickets {
                let i = index_of(&ticket.conversation);
                // One decision per conversation, unless its refund never ran: a call that took
                // its approval and then lost the store (the restart) before running is put to a
                // person again, and a person who sees in the payments (the ledger) that nothing
                // ran approves again. A refund that ran is never approved a second time.
                if decided.lock().unwrap().contains(&i) && ledger.ran(&format!("O-c{i}")) > 0 {
                    continue;
                }
                let result = if denied(i) {
                    approvals
                        .deny(&ticket.id, "refunds for this account need a manager")
                        .await
                } else {
                    approvals.approve(&ticket.id).await
                };
                match result {
                    Ok(()) => {
                        decided.lock().unwrap().insert(i);
                        told[i].notify_one();
                    }
                    Err(DecideError::AlreadyDecided(_)) => {
                        lost_races.fetch_add(1, Ordering::Relaxed);
                    }
                    Err(_) => {}
                }
            }
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn two_replicas_500_conversations_and_a_redis_restart() {
        let Some(server) = RedisServer::start_persistent() else {
            return;
        };
        let url = server.url();
        let ledger = Ledger::default();
        let replicas = Arc::new([
            replica_on(&url, &ledger).await,
            replica_on(&url, &ledger).await,
        ]);
        let stop = Arc::new(AtomicBool::new(false));
        let decided = Arc::new(Mutex::new(HashSet::new()));
        let lost_races = Arc::new(AtomicU64::new(0));
        // Each conversation is told when its ticket is decided, and proposes the call again.
        let told: Arc<Vec<Notify>> = Arc::new((0..CONVERSATIONS).map(|_| Notify::new()).collect());
        let started = std::time::Instant::now();
        let reviewers: Vec<_> = replicas
            .iter()
            .map(|(_, store)| {
                tokio::spawn(reviewer(
                    Approvals::new(Arc::clone(store)),
                    Arc::clone(&stop),
                    Arc::clone(&decided),
                    Arc::clone(&told),
                    Arc::clone(&lost_races),
                    ledger.clone(),
                ))
            })
            .collect();

        // Half-way, Redis is killed and started again.
        let finished = Arc::new(AtomicUsize::new(0));
        let half_way = Arc::new(Notify::new());
        let restarter = {
            let (finished, half_way) = (Arc::clone(&finished), Arc::clone(&half_way));
            tokio::spawn(async move {
                let mut server = server;
                while finished.load(Ordering::SeqCst) < CONVERSATIONS / 2 {
                    half_way.notified().await;
                }
                tokio::task::spawn_blocking(move || {
                    server.restart();
                    server
                })
                .await
                .unwrap()
            })
        };

        // 64 conversations at a time, interleaved, so a loaded test machine does not turn the
        // soak into a test of response timeouts.
        let running = Arc::new(tokio::sync::Semaphore::new(64));
        let conversations: Vec<_> = (0..CONVERSATIONS)
            .map(|i| {
                let running = Arc::clone(&running);
                let (replicas, finished, half_way) = (
                    Arc::clone(&replicas),
                    Arc::clone(&finished),
                    Arc::clone(&half_way),
                );
                let told = Arc::clone(&told);
                let ledger = ledger.clone();
                tokio::spawn(async move {
                    let _running = running.acquire_owned().await.unwrap();
                    let (first, second) = (&replicas[i % 2], &replicas[(i + 1) % 2]);
                    let on_first = Session::new(format!("soak-{i}"))
                        .with_principal(format!("user-{}", i % 7))
                        .with_store(Arc::clone(&first.1));
                    let on_second = super::restored(&on_first, Arc::clone(&second.1));
                    let lookup = settled(
                        &first.0,
                        &on_first,
                        &find(&format!("f-{i}"), &format!("c{i}")),
                    )
                    .await;
                    assert!(lookup.is_ok(), "{}", lookup.to_model_json());
                    let order = format!("O-c{i}");
                    let call = refund(&format!("r-{i}"), &order, 5.0);
                    let mut turn = 0usize;
                    let outcome = loop {
                        let on = if turn.is_multiple_of(2) {
                            (&second.0, &on_second)
                        } else {
                            (&first.0, &on_first)
                        };
                        turn += 1;
                        let outcome = settled(on.0, on.1, &call).await;
                        match outcome.status() {
                            Status::Pending if ledger.ran(&order) == 0 => {
                                // Bounded: a ticket filed again after a lost reply is never
                                // decided, and then the ledger says whether it ran.
                                let _ = tokio::time::timeout(
                                    Duration::from_secs(1),
                                    told[i].notified(),
                                )
                                .await;
                            }
                            _ => break outcome,
                        }
                    };
                    // Proposed again on the other replica: answered from the idempotency store,
                    // or, when the restart lost the record of its first answer, put to a person
                    // again (pending). Never run again: the ledger below says so.
                    if outcome.status() == Status::Success {
                        let again = settled(&first.0, &on_first, &call).await;
                        assert!(
                            again.is_ok() || again.status() == Status::Pending,
                            "{}",
                            again.to_model_json()
                        );
                    }
                    finished.fetch_add(1, Ordering::SeqCst);
                    half_way.notify_one();
                    (i, outcome.status(), outcome.error_kind())
                })
            })
            .collect();

        let mut outcomes = Vec::new();
        for conversation in conversations {
            outcomes.push(conversation.await.unwrap());
        }
        stop.store(true, Ordering::SeqCst);
        half_way.notify_one();
        for reviewer in reviewers {
            reviewer.await.unwrap();
        }
        let server = restarter.await.unwrap();

        for (i, status, kind) in &outcomes {
            let order = format!("O-c{i}");
            if denied(*i) {
                assert_eq!(*kind, Some(ErrorKind::ApprovalDenied), "conversation {i}");
                assert_eq!(
                    ledger.ran(&order),
                    0,
                    "a denied refund ran: conversation {i}"
                );
            } else {
                assert_eq!(
                    ledger.ran(&order),
                    1,
                    "conversation {i} ended {status} and ran {} times",
                    ledger.ran(&order)
                );
            }
        }
        let approved = (0..CONVERSATIONS).filter(|i| !denied(*i)).count();
        assert_eq!(
            ledger.total() as usize,
            approved,
            "no refund ran outside its approval"
        );

        // Every grounded id is still known, on both replicas.
        for (_, store) in replicas.iter() {
            for i in 0..CONVERSATIONS {
                let ask = Prepare {
                    ids: vec![("order".to_owned(), format!("O-c{i}"))],
                    edited_for: None,
                };
                let known = store.prepare(&format!("soak-{i}"), &ask).await.unwrap();
                assert_eq!(known.grounded, [true], "conversation {i} lost its order id");
            }
        }
        println!(
            "soak: {CONVERSATIONS} conversations in {:?}, {approved} approved ran once each, {} reviewer races lost",
            started.elapsed(),
            lost_races.load(Ordering::Relaxed)
        );
        drop(server);
    }
}

/// A tool defined at run time with a grounded argument checks it against the store too: an id
/// a `#[tool]` grounded on one replica is accepted by the runtime tool on the other.
#[tokio::test]
async fn a_runtime_tools_grounded_argument_is_checked_against_the_store() {
    let ledger = Ledger::default();
    let store: Arc<dyn ConversationStore> = Arc::new(MemoryConversationStore::new());
    let track = || {
        toolwright::dynamic::DynamicTool::builder("track_order")
            .description("Where an order is.")
            .input_schema(serde_json::json!({
                "type": "object",
                "properties": {"order_id": {"type": "string", "x-grounded": "order"}},
                "required": ["order_id"],
                "additionalProperties": false
            }))
            .handler(|_, _| async { Ok(serde_json::json!("in transit")) })
            .build()
            .unwrap()
    };
    let with_track = |ledger: &Ledger| {
        Registry::builder()
            .tool(FindOrders)
            .dynamic_tool(track())
            .state(ledger.clone())
            .build()
            .unwrap()
    };
    let (a, b) = (with_track(&ledger), with_track(&ledger));
    let on_a = Session::new("conv-d").with_store(Arc::clone(&store));
    let on_b = restored(&on_a, Arc::clone(&store));
    let track_call = |id: &str, order: &str| {
        ToolCall::new(id, "track_order", format!(r#"{{"order_id":"{order}"}}"#))
    };
    let refused = b.call_in(&on_b, track_call("t1", "O-ann")).await;
    assert_eq!(refused.error_kind(), Some(ErrorKind::UngroundedIdentifier));
    assert!(a.call_in(&on_a, find("f1", "ann")).await.is_ok());
    let tracked = b.call_in(&on_b, track_call("t2", "O-ann")).await;
    assert!(tracked.is_ok(), "{}", tracked.to_model_json());
}
