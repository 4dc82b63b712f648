//! The conversation store every replica shares, behind a wrapper the seed drives: an operation
//! may fail before it reaches the store, or reach it and lose its reply; a run's save may be
//! handed a body over the store's bound, which the store refuses. Everything else goes to a real `MemoryConversationStore` (the code under
//! test), so the faults are the store's and the promises are the library's.

use std::io;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use toolwright::idempotency::{
    Begin, Fingerprint, IdempotencyStore, Lease, Settled, StoreError, StoreFuture, StoredOutcome,
};
use toolwright::{IdempotencyKey, MemoryStore};

use super::history::{Event, History};

use toolwright::conversation::{
    CallRecord, ConversationFuture, ConversationStore, ConversationStoreError, Decided, Decision,
    FailureCounts, MemoryConversationStore, Prepare, Prepared, Review, RunClaim, SlotCap, SlotHold,
    Ticket, TicketRequest, WaitingPage, WaitingQuery, MAX_RUN_BYTES,
};

/// How often each fault strikes, in thousandths of the operations it may strike.
#[derive(Debug, Clone, Copy, Default)]
pub struct Faults {
    /// The operation fails before it reaches the store (nothing written).
    pub fail: u32,
    /// The operation is applied and its reply lost (written, but the caller sees an error).
    pub lost_reply: u32,
    /// A save of a run (whose id starts with `run-`) carries a body over the store's bound.
    pub too_large: u32,
}

impl Faults {
    pub fn draw(rng: &mut fastrand::Rng) -> Faults {
        match rng.u8(..4) {
            0 | 1 => Faults::default(),
            2 => Faults {
                fail: 30,
                lost_reply: 10,
                too_large: 150,
            },
            _ => Faults {
                fail: 100,
                lost_reply: 30,
                too_large: 300,
            },
        }
    }
}

/// What the wrapper decided for one operation.
enum Fault {
    None,
    Fail,
    LostReply,
}

pub struct FaultyStore {
    inner: Arc<MemoryConversationStore>,
    faults: Faults,
    rng: Mutex<fastrand::Rng>,
}

impl FaultyStore {
    pub fn new(inner: Arc<MemoryConversationStore>, faults: Faults, seed: u64) -> Self {
        FaultyStore {
            inner,
            faults,
            rng: Mutex::new(fastrand::Rng::with_seed(seed)),
        }
    }

    /// The store under the faults, for what the schedule reads and writes directly.
    pub fn inner(&self) -> &Arc<MemoryConversationStore> {
        &self.inner
    }

    fn roll(&self, permille: u32) -> bool {
        permille > 0
            && self
                .rng
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .u32(..1000)
                < permille
    }

    fn fault(&self) -> Fault {
        if self.roll(self.faults.fail) {
            Fault::Fail
        } else if self.roll(self.faults.lost_reply) {
            Fault::LostReply
        } else {
            Fault::None
        }
    }

    /// Runs `op` on the inner store, or fails it, or runs it and loses its reply.
    fn around<'a, T: Send + 'a>(
        &'a self,
        what: &'static str,
        op: ConversationFuture<'a, T>,
    ) -> ConversationFuture<'a, T> {
        let fault = self.fault();
        Box::pin(async move {
            // A store's round trip: a yield, so other replicas may run in between.
            tokio::task::yield_now().await;
            match fault {
                Fault::None => op.await,
                Fault::Fail => Err(injected(what, "failed before it reached the store")),
                Fault::LostReply => {
                    let _ = op.await;
                    Err(injected(what, "applied, then its reply was lost"))
                }
            }
        })
    }
}

fn injected(what: &str, how: &str) -> ConversationStoreError {
    ConversationStoreError::backend(io::Error::other(format!("injected: {what} {how}")))
}

impl ConversationStore for FaultyStore {
    fn prepare<'a>(
        &'a self,
        conversation: &'a str,
        prepare: &'a Prepare,
    ) -> ConversationFuture<'a, Prepared> {
        self.around("prepare", self.inner.prepare(conversation, prepare))
    }

    fn record<'a>(
        &'a self,
        conversation: &'a str,
        turn: &'a CallRecord,
    ) -> ConversationFuture<'a, FailureCounts> {
        self.around("record", self.inner.record(conversation, turn))
    }

    fn review<'a>(&'a self, request: &'a TicketRequest) -> ConversationFuture<'a, Review> {
        self.around("review", self.inner.review(request))
    }

    fn decide<'a>(
        &'a self,
        ticket: &'a str,
        decision: &'a Decision,
    ) -> ConversationFuture<'a, Decided> {
        self.around("decide", self.inner.decide(ticket, decision))
    }

    fn ticket<'a>(&'a self, ticket: &'a str) -> ConversationFuture<'a, Option<Ticket>> {
        self.around("ticket", self.inner.ticket(ticket))
    }

    fn waiting<'a>(&'a self, query: &'a WaitingQuery) -> ConversationFuture<'a, WaitingPage> {
        self.around("waiting", self.inner.waiting(query))
    }

    fn create_run<'a>(
        &'a self,
        run: &'a str,
        holder: &'a str,
        body: &'a str,
        lease: Duration,
        ttl: Duration,
    ) -> ConversationFuture<'a, bool> {
        self.around(
            "create_run",
            self.inner.create_run(run, holder, body, lease, ttl),
        )
    }

    fn claim_run<'a>(
        &'a self,
        run: &'a str,
        holder: &'a str,
        lease: Duration,
    ) -> ConversationFuture<'a, RunClaim> {
        self.around("claim_run", self.inner.claim_run(run, holder, lease))
    }

    fn save_run<'a>(
        &'a self,
        run: &'a str,
        holder: &'a str,
        body: &'a str,
        ttl: Duration,
        hold: Option<Duration>,
    ) -> ConversationFuture<'a, bool> {
        // A run's result outgrew the store: the store itself is handed a body over its bound,
        // and refuses it as it would (marking the run outgrown in the same step).
        if run.starts_with("run-") && self.roll(self.faults.too_large) {
            return Box::pin(async move {
                let outgrown = format!("{body}{}", " ".repeat(MAX_RUN_BYTES + 1));
                self.inner.save_run(run, holder, &outgrown, ttl, hold).await
            });
        }
        self.around(
            "save_run",
            self.inner.save_run(run, holder, body, ttl, hold),
        )
    }

    fn load_run<'a>(&'a self, run: &'a str) -> ConversationFuture<'a, Option<String>> {
        self.around("load_run", self.inner.load_run(run))
    }

    fn hold_slot<'a>(
        &'a self,
        caps: &'a [SlotCap<'a>],
        slot: &'a str,
        lease: Duration,
    ) -> ConversationFuture<'a, SlotHold> {
        self.around("hold_slot", self.inner.hold_slot(caps, slot, lease))
    }

    fn release_slot<'a>(
        &'a self,
        scopes: &'a [&'a str],
        slot: &'a str,
    ) -> ConversationFuture<'a, ()> {
        self.around("release_slot", self.inner.release_slot(scopes, slot))
    }
}

/// Changes a stored JSON record the way another version or a torn write might: an array loses
/// or gains an element, a field is dropped, a value changes type, or the text is cut. The
/// result is what a replica then reads back.
pub fn mangle(body: &str, rng: &mut fastrand::Rng) -> String {
    let Ok(mut value) = serde_json::from_str::<serde_json::Value>(body) else {
        return body.to_owned();
    };
    match rng.u8(..8) {
        0 => {
            let cut = rng.usize(..body.len().max(1));
            return body.get(..cut).unwrap_or_default().to_owned();
        }
        _ => {
            for _ in 0..rng.usize(1..=3) {
                let mut nodes = Vec::new();
                collect(&value, String::new(), &mut nodes);
                if nodes.is_empty() {
                    break;
                }
                let pointer = &nodes[rng.usize(..nodes.len())];
                if let Some(node) = value.pointer_mut(pointer) {
                    change(node, rng);
                }
            }
        }
    }
    value.to_string()
}

/// JSON Pointers of every array and object in `value`.
fn collect(value: &serde_json::Value, at: String, out: &mut Vec<String>) {
    match value {
        serde_json::Value::Array(items) => {
            out.push(at.clone());
            for (i, item) in items.iter().enumerate() {
                collect(item, format!("{at}/{i}"), out);
            }
        }
        serde_json::Value::Object(map) => {
            out.push(at.clone());
            for (key, item) in map {
                let token = key.replace('~', "~0").replace('/', "~1");
                collect(item, format!("{at}/{token}"), out);
            }
        }
        _ => {}
    }
}

fn change(node: &mut serde_json::Value, rng: &mut fastrand::Rng) {
    match node {
        serde_json::Value::Array(items) if !items.is_empty() => match rng.u8(..3) {
            0 => {
                items.pop();
            }
            1 => {
                let i = rng.usize(..items.len());
                items.remove(i);
            }
            _ => {
                let copy = items[rng.usize(..items.len())].clone();
                items.push(copy);
            }
        },
        serde_json::Value::Object(map) if !map.is_empty() => {
            let keys: Vec<String> = map.keys().cloned().collect();
            let key = &keys[rng.usize(..keys.len())];
            match rng.u8(..3) {
                0 => {
                    map.remove(key);
                }
                1 => {
                    map.insert(key.clone(), serde_json::Value::Null);
                }
                _ => {
                    map.insert(key.clone(), serde_json::json!(u64::MAX));
                }
            }
        }
        other => *other = serde_json::json!([]),
    }
}

/// The idempotency store every registry shares, behind the same kind of faults: `begin` may
/// fail, and a settlement may fail before it is written or be written and lose its reply. A
/// settlement that failed leaves its key held until the lock passes, so a later call may run
/// the action again under the same key (the documented takeover); such keys are recorded.
pub struct FaultyKeys {
    inner: MemoryStore,
    faults: Faults,
    rng: Mutex<fastrand::Rng>,
    history: History,
}

impl FaultyKeys {
    pub fn new(inner: MemoryStore, faults: Faults, seed: u64, history: History) -> Self {
        FaultyKeys {
            inner,
            faults,
            rng: Mutex::new(fastrand::Rng::with_seed(seed)),
            history,
        }
    }

    fn fault(&self) -> Fault {
        let mut rng = self.rng.lock().unwrap_or_else(PoisonError::into_inner);
        let fail = self.faults.fail > 0 && rng.u32(..1000) < self.faults.fail;
        let lost = self.faults.lost_reply > 0 && rng.u32(..1000) < self.faults.lost_reply;
        match (fail, lost) {
            (true, _) => Fault::Fail,
            (false, true) => Fault::LostReply,
            _ => Fault::None,
        }
    }

    fn settle<'a>(
        &'a self,
        lease: &'a Lease,
        what: &'static str,
        op: StoreFuture<'a, Settled>,
    ) -> StoreFuture<'a, Settled> {
        let fault = self.fault();
        Box::pin(async move {
            tokio::task::yield_now().await;
            match fault {
                Fault::None => op.await,
                Fault::Fail => {
                    self.history.push(Event::SettleFailed {
                        key: lease.key().to_string(),
                    });
                    Err(StoreError::backend(io::Error::other(format!(
                        "injected: {what} failed before it reached the store"
                    ))))
                }
                Fault::LostReply => {
                    let _ = op.await;
                    Err(StoreError::backend(io::Error::other(format!(
                        "injected: {what} applied, then its reply was lost"
                    ))))
                }
            }
        })
    }
}

impl IdempotencyStore for FaultyKeys {
    fn begin<'a>(
        &'a self,
        key: &'a IdempotencyKey,
        fingerprint: &'a Fingerprint,
        lock_ttl: Duration,
    ) -> StoreFuture<'a, Begin> {
        let fault = self.fault();
        Box::pin(async move {
            tokio::task::yield_now().await;
            match fault {
                Fault::None => self.inner.begin(key, fingerprint, lock_ttl).await,
                Fault::Fail => Err(StoreError::backend(io::Error::other(
                    "injected: begin failed before it reached the store",
                ))),
                Fault::LostReply => {
                    // Taken and never told: the key stays held until its lock passes.
                    let _ = self.inner.begin(key, fingerprint, lock_ttl).await;
                    Err(StoreError::backend(io::Error::other(
                        "injected: begin applied, then its reply was lost",
                    )))
                }
            }
        })
    }

    fn complete<'a>(
        &'a self,
        lease: &'a Lease,
        outcome: StoredOutcome,
    ) -> StoreFuture<'a, Settled> {
        self.settle(lease, "complete", self.inner.complete(lease, outcome))
    }

    fn record_unknown_effect<'a>(&'a self, lease: &'a Lease) -> StoreFuture<'a, Settled> {
        self.settle(
            lease,
            "record_unknown_effect",
            self.inner.record_unknown_effect(lease),
        )
    }

    fn release<'a>(&'a self, lease: &'a Lease) -> StoreFuture<'a, Settled> {
        self.settle(lease, "release", self.inner.release(lease))
    }
}
