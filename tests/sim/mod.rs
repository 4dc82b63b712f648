//! The simulated world: the stores every replica shares, the tools each replica serves (they
//! record what they do into the history), and crashes at await points.

pub mod actors;
pub mod history;
pub mod mcp;
pub mod store;

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use toolwright::conversation::{ConversationStore, MemoryConversationStore};
use toolwright::prelude::*;
use toolwright::MemoryStore;

use history::{Event, History, Slot};
use store::{Faults, FaultyKeys, FaultyStore};

/// One seed's world: the stores the replicas share and the history they write.
pub struct World {
    pub seed: u64,
    pub history: History,
    pub store: Arc<FaultyStore>,
    pub idempotency: Arc<FaultyKeys>,
}

impl World {
    pub fn new(seed: u64, rng: &mut fastrand::Rng) -> World {
        let faults = Faults::draw(rng);
        let history = History::new();
        World {
            seed,
            store: Arc::new(FaultyStore::new(
                Arc::new(MemoryConversationStore::new()),
                faults,
                rng.u64(..),
            )),
            idempotency: Arc::new(FaultyKeys::new(
                MemoryStore::new(),
                faults,
                rng.u64(..),
                history.clone(),
            )),
            history,
        }
    }

    /// The shared conversation store, as replicas see it (faults and all).
    pub fn conversations(&self) -> Arc<dyn ConversationStore> {
        Arc::clone(&self.store) as Arc<dyn ConversationStore>
    }

    /// Replica `replica`'s registry: every tool, the shared idempotency store, and the state
    /// its tools record through. `caps` are the task caps of the server it is served by (per
    /// principal, per server, and the group of servers that share them).
    pub fn registry(&self, replica: usize, caps: Option<(usize, usize, usize)>) -> Registry {
        Registry::builder()
            .tool(Charge)
            .tool(Wire)
            .tool(Purge)
            .tool(Report)
            .tool(Archive)
            .tool(Pay)
            .tool(PayApproved)
            .tool(Ship)
            .tool(Pick)
            .idempotency_store(Arc::clone(&self.idempotency))
            .state(Sim {
                history: self.history.clone(),
                replica,
                caps,
            })
            .build()
            .expect("the simulated registry builds")
    }
}

/// What each tool body reaches: the history, and where it runs.
pub struct Sim {
    history: History,
    replica: usize,
    caps: Option<(usize, usize, usize)>,
}

tokio::task_local! {
    /// Which caller a body runs under, so an effect is tied to the drive that may crash.
    static DRIVE: u64;
}

static NEXT_DRIVE: AtomicU64 = AtomicU64::new(1);

/// Numbers drives from 1 again, so a replayed seed's history reads the same.
pub fn reset_drives() {
    NEXT_DRIVE.store(1, Ordering::Relaxed);
}

impl Sim {
    /// A body that acts: it starts, waits `ms` (a dependency's latency), then takes its
    /// effect, with no await between the effect and the body's return.
    async fn act(&self, surface: &'static str, what: String, ctx: &ToolContext, ms: u64) {
        // Replicas from 90 on resume changed copies of records: what they do promises nothing.
        let surface = if self.replica >= 90 {
            "scratch"
        } else {
            surface
        };
        let drive = DRIVE.try_with(|d| *d).unwrap_or(0);
        let principal = ctx.session().principal().unwrap_or("-").to_owned();
        let slot = self.caps.map(|(per_principal, per_server, group)| Slot {
            group,
            principal: principal.clone(),
            per_principal,
            per_server,
        });
        self.history.push(Event::BodyStart {
            surface,
            what: what.clone(),
            slot: slot.clone(),
        });
        let _end = BodyEnd {
            history: self.history.clone(),
            what: what.clone(),
            slot,
        };
        tokio::time::sleep(Duration::from_millis(ms)).await;
        self.history.push(Event::Effect {
            surface,
            what,
            drive,
            principal,
        });
    }
}

/// Records a body's end, whether it returned or was dropped.
struct BodyEnd {
    history: History,
    what: String,
    slot: Option<Slot>,
}

impl Drop for BodyEnd {
    fn drop(&mut self) {
        self.history.push(Event::BodyEnd {
            what: std::mem::take(&mut self.what),
            slot: self.slot.take(),
        });
    }
}

/// Charge an order once under its idempotency key.
#[tool(idempotent = false, timeout_ms = 600000)]
async fn charge(
    key: IdempotencyKey,
    ctx: ToolContext,
    sim: State<Sim>,
    /// The order.
    order: String,
    /// How long the payment provider takes, in milliseconds.
    ms: u64,
) -> Result<String, ToolError> {
    let what = format!("charge:{}/{}", ctx.session().id(), ctx.call_id());
    sim.0.history.push(Event::KeyOf {
        key: key.to_string(),
        what: what.clone(),
    });
    sim.0.act("idempotency", what, &ctx, ms).await;
    Ok(format!("charged {order}"))
}

/// Wire a transfer (a person approves each).
#[tool(idempotent = false, requires_approval, timeout_ms = 600000)]
async fn wire(
    key: IdempotencyKey,
    ctx: ToolContext,
    sim: State<Sim>,
    /// The transfer.
    transfer: String,
    /// How long the bank takes, in milliseconds.
    ms: u64,
) -> Result<String, ToolError> {
    let _ = key;
    sim.0
        .act("approval-ticket", format!("wire:{transfer}"), &ctx, ms)
        .await;
    Ok(format!("wired {transfer}"))
}

/// Purge a year of the archive (a person approves).
#[tool(idempotent = false, requires_approval, timeout_ms = 600000)]
async fn purge(
    key: IdempotencyKey,
    ctx: ToolContext,
    sim: State<Sim>,
    /// The year.
    year: u32,
) -> Result<String, ToolError> {
    let _ = key;
    sim.0
        .act("approval-request-state", format!("purge:{year}"), &ctx, 20)
        .await;
    Ok(format!("purged {year}"))
}

/// Where an order goes.
#[toolwright::data(input)]
struct Destination {
    /// The city.
    city: String,
}

/// Ship an order where its owner says: asks, then ships (once).
#[tool(idempotent = false, timeout_ms = 600000)]
async fn ship(
    key: IdempotencyKey,
    ctx: ToolContext,
    sim: State<Sim>,
    /// The order.
    order: String,
) -> Result<String, ToolError> {
    let _ = key;
    let toolwright::ask::Reply::Accepted(to) = ctx
        .ask::<Destination>(format!("Where should {order} go?"))
        .await?
    else {
        return Err(ToolError::bad_request("the owner did not say where"));
    };
    sim.0
        .act("request-state-answers", format!("ship:{order}"), &ctx, 20)
        .await;
    Ok(format!("shipped {order} to {}", to.city))
}

/// Compile a report, as a task.
#[tool(read_only, task, timeout_ms = 36000000)]
async fn report(
    ctx: ToolContext,
    sim: State<Sim>,
    /// What the report is of.
    tag: String,
    /// How long it takes, in milliseconds.
    ms: u64,
) -> Result<String, ToolError> {
    sim.0
        .act("tasks-read", format!("task:{tag}"), &ctx, ms)
        .await;
    Ok(tag)
}

/// Archive a year, as a task (a person approves; each run archives again).
#[tool(idempotent = false, requires_approval, task, timeout_ms = 36000000)]
async fn archive(
    key: IdempotencyKey,
    ctx: ToolContext,
    sim: State<Sim>,
    /// What is archived.
    tag: String,
    /// How long it takes, in milliseconds.
    ms: u64,
) -> Result<String, ToolError> {
    let _ = key;
    sim.0.act("tasks", format!("task:{tag}"), &ctx, ms).await;
    Ok(tag)
}

/// What the user picks.
#[toolwright::data]
struct Choice {
    /// The value picked.
    value: String,
}

/// Ask the user to pick a value mid-task (after `ms` of work, so the call is a task by then);
/// the answer it gets is recorded.
#[tool(read_only, task, timeout_ms = 36000000)]
async fn pick(
    ctx: ToolContext,
    sim: State<Sim>,
    /// Which question this is.
    tag: String,
    /// How long the work before the question takes, in milliseconds.
    ms: u64,
) -> Result<String, ToolError> {
    tokio::time::sleep(Duration::from_millis(ms)).await;
    let reply = ctx
        .ask_named::<Choice>("pick", format!("Pick a value for {tag}"))
        .await?;
    let value = match reply {
        toolwright::ask::Reply::Accepted(Choice { value }) => value,
        _ => "-".to_owned(),
    };
    sim.0.history.push(Event::TaskGotAnswer {
        tag: tag.clone(),
        value: value.clone(),
    });
    Ok(value)
}

/// Pay an order.
#[tool(idempotent = false, timeout_ms = 60000)]
async fn pay(
    key: IdempotencyKey,
    ctx: ToolContext,
    sim: State<Sim>,
    /// The order.
    order: String,
    /// How long the payment takes, in milliseconds.
    ms: u64,
) -> Result<String, ToolError> {
    let _ = key;
    sim.0
        .act("kept-run", format!("pay:{order}"), &ctx, ms)
        .await;
    Ok(format!("paid {order}"))
}

/// Pay an order (a person approves).
#[tool(idempotent = false, requires_approval, timeout_ms = 60000)]
async fn pay_approved(
    key: IdempotencyKey,
    ctx: ToolContext,
    sim: State<Sim>,
    /// The order.
    order: String,
    /// How long the payment takes, in milliseconds.
    ms: u64,
) -> Result<String, ToolError> {
    let _ = key;
    sim.0
        .act("kept-run", format!("pay:{order}"), &ctx, ms)
        .await;
    Ok(format!("paid {order}"))
}

/// Where a caller's future is dropped, as a replica crashing at an await point would.
#[derive(Debug, Clone, Copy)]
pub enum Crash {
    /// Never.
    Never,
    /// After this many polls (the future is dropped instead of its next poll).
    AfterPolls(u32),
    /// At this instant from the drive's start, on the paused clock.
    At(Duration),
}

impl Crash {
    /// Most drives run to their end; one in `one_in` crashes, at a poll or at an instant.
    pub fn draw(rng: &mut fastrand::Rng, one_in: u8) -> Crash {
        if rng.u8(..one_in.max(1)) != 0 {
            return Crash::Never;
        }
        if rng.bool() {
            Crash::AfterPolls(rng.u32(1..=12))
        } else {
            Crash::At(Duration::from_millis(rng.u64(1..=8000)))
        }
    }
}

/// Drives `future` under a fresh drive id, unless the crash comes first: then the future is
/// dropped where it stood, the crash recorded, and `None` returned.
pub async fn drive<F: Future>(history: &History, crash: Crash, future: F) -> Option<F::Output> {
    let id = NEXT_DRIVE.fetch_add(1, Ordering::Relaxed);
    let polls = match crash {
        Crash::AfterPolls(n) => Some(n),
        _ => None,
    };
    let limited = DRIVE.scope(
        id,
        Polls {
            future: Some(Box::pin(future)),
            left: polls,
        },
    );
    let out = match crash {
        Crash::At(after) => tokio::time::timeout(after, limited).await.ok().flatten(),
        _ => limited.await,
    };
    if out.is_none() {
        history.push(Event::Crashed { drive: id });
    }
    out
}

/// A future dropped instead of its `left`-th poll.
struct Polls<F: Future> {
    future: Option<Pin<Box<F>>>,
    left: Option<u32>,
}

impl<F: Future> Future for Polls<F> {
    type Output = Option<F::Output>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        if let Some(left) = self.left.as_mut() {
            if *left == 0 {
                self.future = None;
                return Poll::Ready(None);
            }
            *left -= 1;
        }
        let Some(future) = self.future.as_mut() else {
            return Poll::Ready(None);
        };
        match future.as_mut().poll(cx) {
            Poll::Ready(out) => {
                self.future = None;
                Poll::Ready(Some(out))
            }
            Poll::Pending => Poll::Pending,
        }
    }
}

/// A seeded number of milliseconds, as a paused-clock sleep.
pub async fn pause(rng: &mut fastrand::Rng, max_ms: u64) {
    tokio::time::sleep(Duration::from_millis(rng.u64(..=max_ms))).await;
}
