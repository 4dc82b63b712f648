//! Runs kept in the conversation store (`Agent::run_kept`, `Agent::resume_kept`): a run paused
//! for approval on one replica is resumed on another and its approved call runs once; two
//! resumes at once run it once; a replica that died mid-run gives the run up after its lease
//! (paused tokio time), sooner with a shorter lease margin; a run written with serde and read
//! back resumes; a run of an inconsistent shape is unreadable, a run that outgrew the store is
//! not resumed from an earlier turn, and a resume refused writes nothing; the memory store's
//! bound on runs is hard; and, against a real `redis-server`, a process paused on approval is
//! killed, the call approved, and a fresh process resumes the run: the tool ran once.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use toolwright::agent::{Agent, End, Message, Run, RunError, ScriptedModel, Turn};
use toolwright::approval::Approvals;
use toolwright::conversation::{
    ConversationStore, ConversationStoreError, MemoryConversationStore, RunClaim,
};
use toolwright::prelude::*;

#[cfg(feature = "redis")]
use crate::support::redis_server;

/// What the tools did: refunds, and quick lookups; and payments.
#[derive(Clone, Default)]
struct Ledger(
    Arc<Mutex<Vec<String>>>,
    Arc<Mutex<Vec<String>>>,
    Arc<Mutex<Vec<String>>>,
);

impl Ledger {
    fn refunds(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }

    fn lookups(&self) -> Vec<String> {
        self.1.lock().unwrap().clone()
    }

    fn payments(&self) -> Vec<String> {
        self.2.lock().unwrap().clone()
    }
}

/// Refund an order (a person approves each refund).
#[tool(requires_approval, idempotent = false, timeout_ms = 60000)]
async fn refund_order(
    _key: IdempotencyKey,
    /// The order to refund.
    order_id: String,
    ledger: State<Ledger>,
) -> Result<String, ToolError> {
    // Long enough that a second resume started meanwhile finds the run held.
    tokio::time::sleep(Duration::from_millis(50)).await;
    ledger.0 .0.lock().unwrap().push(order_id.clone());
    Ok(format!("refunded {order_id}"))
}

/// Look an order up, at once.
#[tool(read_only)]
async fn quick_lookup(
    /// The order.
    order_id: String,
    ledger: State<Ledger>,
) -> Result<String, ToolError> {
    ledger.0 .1.lock().unwrap().push(order_id.clone());
    Ok(format!("{order_id}: packed"))
}

/// Look an order up, slowly.
#[tool(read_only, timeout_ms = 600000)]
async fn slow_lookup(
    /// The order.
    order_id: String,
) -> Result<String, ToolError> {
    tokio::time::sleep(Duration::from_secs(120)).await;
    Ok(format!("{order_id}: shipped"))
}

/// Pay an invoice (a side effect, counted).
#[tool(idempotent = false)]
async fn pay_invoice(
    _key: IdempotencyKey,
    /// The invoice.
    invoice: String,
    ledger: State<Ledger>,
) -> Result<String, ToolError> {
    ledger.0 .2.lock().unwrap().push(invoice.clone());
    Ok(format!("paid {invoice}"))
}

/// The month's report: larger than a store keeps a run.
#[tool(read_only)]
async fn month_report() -> Result<String, ToolError> {
    Ok("r".repeat(toolwright::conversation::MAX_RUN_BYTES + 1024))
}

fn registry(ledger: &Ledger) -> Registry {
    Registry::builder()
        .tool(RefundOrder)
        .tool(QuickLookup)
        .tool(SlowLookup)
        .tool(PayInvoice)
        .tool(MonthReport)
        .state(ledger.clone())
        .build()
        .unwrap()
}

fn refund(id: &str, order: &str) -> ToolCall {
    ToolCall::new(id, "refund_order", format!(r#"{{"order_id":"{order}"}}"#))
}

/// A replica: its own registry and model, the store shared. `turns` is what its model answers.
fn replica(ledger: &Ledger, turns: Vec<Turn>) -> Agent {
    Agent::builder(ScriptedModel::new(turns), registry(ledger))
        .deadline(Duration::from_secs(300))
        .build()
        .unwrap()
}

fn session(store: &Arc<dyn ConversationStore>) -> Session {
    Session::new("conv-1")
        .with_principal("alice")
        .with_store(Arc::clone(store))
}

fn ticket(run: &Run) -> String {
    match run.end() {
        End::Pending { ticket } => ticket.clone(),
        other => panic!("the run should wait for approval, it ended {other:?}"),
    }
}

/// Paused on A, approved, resumed on B: the refund runs once, the run ends with B's answer,
/// and resuming the ended run again changes nothing.
async fn paused_on_one_replica_resumed_on_another(store: Arc<dyn ConversationStore>) {
    let ledger = Ledger::default();
    let a = replica(&ledger, vec![Turn::calls([refund("c1", "O-7")])]);
    let b = replica(&ledger, vec![Turn::text("Refunded O-7.")]);
    let paused = a
        .run_kept(&session(&store), "run-1", vec![Message::user("refund O-7")])
        .await
        .unwrap();
    let ticket = ticket(&paused);
    assert!(ledger.refunds().is_empty());

    // Not decided yet: B resumes, the call still waits, nothing ran.
    let still = b.resume_kept(&session(&store), "run-1").await.unwrap();
    assert_eq!(self::ticket(&still), ticket);
    assert!(ledger.refunds().is_empty());

    Approvals::new(Arc::clone(&store))
        .approve(&ticket)
        .await
        .unwrap();
    let done = b.resume_kept(&session(&store), "run-1").await.unwrap();
    assert_eq!(done.final_text(), Some("Refunded O-7."), "{:?}", done.end());
    assert_eq!(ledger.refunds(), ["O-7"]);
    assert!(done
        .outcomes()
        .any(|o| o.is_ok() && o.tool() == "refund_order"));

    // Ended: a resume answers it as it is, and the tool does not run again.
    let again = a.resume_kept(&session(&store), "run-1").await.unwrap();
    assert_eq!(again.final_text(), Some("Refunded O-7."));
    assert_eq!(ledger.refunds(), ["O-7"]);
    let read = a
        .kept_run(&session(&store), "run-1")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(read.transcript().len(), done.transcript().len());
}

/// Two replicas resume the approved run at the same moment: one drives it, the other is told
/// the run is busy, and the refund runs once.
async fn two_resumes_at_once_run_the_call_once(store: Arc<dyn ConversationStore>) {
    let ledger = Ledger::default();
    let a = replica(&ledger, vec![Turn::calls([refund("c1", "O-8")])]);
    let paused = a
        .run_kept(&session(&store), "run-2", vec![Message::user("refund O-8")])
        .await
        .unwrap();
    Approvals::new(Arc::clone(&store))
        .approve(&ticket(&paused))
        .await
        .unwrap();
    let b = replica(&ledger, vec![Turn::text("Done.")]);
    let c = replica(&ledger, vec![Turn::text("Done.")]);
    let (on_b, on_c) = (session(&store), session(&store));
    let (from_b, from_c) =
        tokio::join!(b.resume_kept(&on_b, "run-2"), c.resume_kept(&on_c, "run-2"));
    let (won, lost) = match (from_b, from_c) {
        (Ok(run), Err(error)) | (Err(error), Ok(run)) => (run, error),
        (b, c) => panic!("one resume should win and one be refused: {b:?} / {c:?}"),
    };
    assert!(
        matches!(lost, RunError::Busy(ref id) if id == "run-2"),
        "{lost}"
    );
    assert_eq!(won.final_text(), Some("Done."));
    assert_eq!(ledger.refunds(), ["O-8"]);
}

/// A run belongs to its principal: another's session can neither read nor resume it; an
/// unknown id and an id taken are told apart.
async fn a_run_is_its_principal_s(store: Arc<dyn ConversationStore>) {
    let ledger = Ledger::default();
    let a = replica(&ledger, vec![Turn::calls([refund("c1", "O-9")])]);
    a.run_kept(&session(&store), "run-3", vec![Message::user("refund O-9")])
        .await
        .unwrap();
    let mallory = Session::new("conv-1")
        .with_principal("mallory")
        .with_store(Arc::clone(&store));
    let resumed = a.resume_kept(&mallory, "run-3").await;
    assert!(matches!(resumed, Err(RunError::NotYours(_))), "{resumed:?}");
    let read = a.kept_run(&mallory, "run-3").await;
    assert!(matches!(read, Err(RunError::NotYours(_))), "{read:?}");
    // Refusing mallory released the hold: alice still resumes.
    let ours = a.resume_kept(&session(&store), "run-3").await.unwrap();
    assert!(matches!(ours.end(), End::Pending { .. }));

    let unknown = a.resume_kept(&session(&store), "run-none").await;
    assert!(matches!(unknown, Err(RunError::Unknown(_))), "{unknown:?}");
    let taken = a
        .run_kept(&session(&store), "run-3", vec![Message::user("again")])
        .await;
    assert!(matches!(taken, Err(RunError::Exists(_))), "{taken:?}");
    let no_store = a
        .run_kept(&Session::new("conv-2"), "run-4", Vec::new())
        .await;
    assert!(matches!(no_store, Err(RunError::NoStore)), "{no_store:?}");
}

/// Edits the run kept under `id` as JSON and saves it back (no one holds it).
async fn edit_kept(store: &Arc<dyn ConversationStore>, id: &str, edit: impl FnOnce(&mut Value)) {
    let body = store.load_run(id).await.unwrap().unwrap();
    let mut kept: Value = serde_json::from_str(&body).unwrap();
    edit(&mut kept);
    let ttl = Duration::from_secs(3600);
    assert!(store
        .save_run(id, "editor", &kept.to_string(), ttl, None)
        .await
        .unwrap());
}

/// A kept run whose shape is inconsistent (a waiting turn with fewer or more outcome slots than
/// calls, no calls, a paused run with no waiting turn, a waiting turn that is not the last
/// model turn) is unreadable, named by its field, and nothing runs: never a panic. Counts read
/// back at their limits resume all the same.
async fn a_malformed_checkpoint_is_unreadable_never_a_panic(store: Arc<dyn ConversationStore>) {
    let ledger = Ledger::default();
    let a = replica(&ledger, vec![Turn::calls([refund("c1", "O-5")])]);
    let paused = a
        .run_kept(&session(&store), "run-m", vec![Message::user("refund O-5")])
        .await
        .unwrap();
    Approvals::new(Arc::clone(&store))
        .approve(&ticket(&paused))
        .await
        .unwrap();
    let good = store.load_run("run-m").await.unwrap().unwrap();

    type Edit = fn(&mut Value);
    let shapes: [(Edit, &str); 6] = [
        (
            |k| k["run"]["pending"]["outcomes"] = json!([]),
            "`pending.outcomes`: expected 1 (one slot per call",
        ),
        (
            |k| k["run"]["pending"]["outcomes"] = json!([null, null]),
            "got 2",
        ),
        (
            |k| k["run"]["pending"]["calls"] = json!([]),
            "`pending.calls`",
        ),
        (
            |k| {
                let run = k["run"].as_object_mut().unwrap();
                run.remove("pending");
            },
            "`pending`",
        ),
        (
            |k| {
                k["run"]["pending"] = Value::Null;
                k["run"]["end"] = json!({"end": "step_limit"});
            },
            "`run.pending`: a run kept as Paused holds a waiting turn, got none",
        ),
        (
            |k| {
                k["run"]["transcript"].as_array_mut().unwrap().pop();
            },
            "`transcript`",
        ),
    ];
    let b = replica(&ledger, vec![Turn::text("Refunded O-5.")]);
    for (edit, says) in shapes {
        store
            .save_run("run-m", "editor", &good, Duration::from_secs(3600), None)
            .await
            .unwrap();
        edit_kept(&store, "run-m", edit).await;
        let resumed = b.resume_kept(&session(&store), "run-m").await;
        match &resumed {
            Err(RunError::Unreadable { run, error }) => {
                assert_eq!(run, "run-m");
                assert!(error.contains(says), "{error} should say {says}");
            }
            other => panic!("{says}: {other:?}"),
        }
        let read = b.kept_run(&session(&store), "run-m").await;
        assert!(matches!(read, Err(RunError::Unreadable { .. })), "{read:?}");
        // A run written out by the application and read back is checked the same way.
        let body: Value =
            serde_json::from_str(&store.load_run("run-m").await.unwrap().unwrap()).unwrap();
        if let Err(error) = serde_json::from_value::<Run>(body["run"].clone()) {
            assert!(
                error.to_string().contains(says) || says.starts_with("`run."),
                "{error}"
            );
        } else {
            assert!(says.starts_with("`run."), "{says}: the run read back");
        }
    }
    assert!(ledger.refunds().is_empty());

    // Counts and times at their limits: the run resumes, saturating, without a panic.
    store
        .save_run("run-m", "editor", &good, Duration::from_secs(3600), None)
        .await
        .unwrap();
    edit_kept(&store, "run-m", |k| {
        k["run"]["usage"] = json!({"input_tokens": u64::MAX, "output_tokens": u64::MAX});
        k["run"]["steps"][0]["tool_time"] = json!({"secs": u64::MAX, "nanos": 999_999_999});
    })
    .await;
    let b = replica(&ledger, vec![Turn::text("Refunded O-5.").with_usage(10, 5)]);
    let done = b.resume_kept(&session(&store), "run-m").await.unwrap();
    assert_eq!(done.final_text(), Some("Refunded O-5."), "{:?}", done.end());
    assert_eq!(done.usage().total(), u64::MAX);
    assert_eq!(ledger.refunds(), ["O-5"]);
}

/// A replica pays in a run's second turn, then a result larger than the store keeps makes the
/// run unsaved. Once its hold has passed, another replica's resume is refused as outgrown: it
/// does not continue from the first turn's checkpoint, and the invoice is paid once.
async fn a_run_that_outgrew_the_store_is_not_resumed_from_an_earlier_turn(
    store: Arc<dyn ConversationStore>,
    wait: impl AsyncFn(Duration),
) {
    let ledger = Ledger::default();
    let pay = ToolCall::new("c2", "pay_invoice", r#"{"invoice":"I-1"}"#);
    let report = ToolCall::new("c3", "month_report", "{}");
    let (deadline, margin) = (Duration::from_secs(4), Duration::from_millis(500));
    let a = Agent::builder(
        ScriptedModel::new([
            Turn::calls([ToolCall::new("c1", "quick_lookup", r#"{"order_id":"O-1"}"#)]),
            Turn::calls([pay.clone(), report]),
            Turn::text("Paid I-1."),
        ]),
        registry(&ledger),
    )
    .deadline(deadline)
    .run_lease_margin(margin)
    .build()
    .unwrap();
    let unsaved = a
        .run_kept(&session(&store), "run-o", vec![Message::user("pay I-1")])
        .await;
    let Err(RunError::NotSaved {
        run,
        error: Some(ConversationStoreError::TooLarge { .. }),
    }) = unsaved
    else {
        panic!("the run should be too large to save: {unsaved:?}");
    };
    assert_eq!(run.final_text(), Some("Paid I-1."));
    assert_eq!(ledger.payments(), ["I-1"]);

    wait(deadline + margin).await;
    let b = replica(&ledger, vec![Turn::calls([pay]), Turn::text("Paid I-1.")]);
    let resumed = b.resume_kept(&session(&store), "run-o").await;
    match resumed {
        Err(RunError::Outgrown { run, bytes, limit }) => {
            assert_eq!(run, "run-o");
            assert!(bytes > limit, "{bytes} > {limit}");
            assert_eq!(limit, toolwright::conversation::MAX_RUN_BYTES);
        }
        other => panic!("the run should be outgrown: {other:?}"),
    }
    let read = b.kept_run(&session(&store), "run-o").await;
    assert!(matches!(read, Err(RunError::Outgrown { .. })), "{read:?}");
    assert_eq!(ledger.payments(), ["I-1"], "paid once");
}

/// Eve's agent keeps runs a second; her resume of Ada's paused run is refused, and refusing it
/// wrote nothing: 1.6 s later Ada's run is still there, unheld, and resumes.
async fn a_refused_resume_changes_nothing(
    store: Arc<dyn ConversationStore>,
    wait: impl AsyncFn(Duration),
) {
    let ledger = Ledger::default();
    let ada = Session::new("conv-1")
        .with_principal("ada")
        .with_store(Arc::clone(&store));
    let eve = Session::new("conv-1")
        .with_principal("eve")
        .with_store(Arc::clone(&store));
    let a = replica(&ledger, vec![Turn::calls([refund("c1", "O-6")])]);
    let paused = a
        .run_kept(&ada, "run-r", vec![Message::user("refund O-6")])
        .await
        .unwrap();
    let before = store.load_run("run-r").await.unwrap();

    let e = Agent::builder(ScriptedModel::new(Vec::<Turn>::new()), registry(&ledger))
        .run_ttl(Duration::from_secs(1))
        .build()
        .unwrap();
    let refused = e.resume_kept(&eve, "run-r").await;
    assert!(matches!(refused, Err(RunError::NotYours(_))), "{refused:?}");
    assert_eq!(store.load_run("run-r").await.unwrap(), before);

    wait(Duration::from_millis(1600)).await;
    let kept = a.kept_run(&ada, "run-r").await.unwrap();
    assert!(
        kept.is_some(),
        "Ada's run is gone after Eve's refused resume"
    );
    let still = a.resume_kept(&ada, "run-r").await.unwrap();
    assert_eq!(self::ticket(&still), ticket(&paused));
}

/// Each test of the suite, once per store: `memory::NAME` on paused tokio time, `on_redis::NAME`
/// against a real `redis-server` (skipped, loudly, when it is not installed). The tests after
/// `waiting:` also take how to let time pass: advanced on paused time, slept on Redis's clock.
macro_rules! on_both_stores {
    ($($name:ident),* $(,)? ; waiting: $($timed:ident),* $(,)?) => {
        mod memory {
            use super::*;
            $(
                #[tokio::test(start_paused = true)]
                async fn $name() {
                    super::$name(Arc::new(MemoryConversationStore::new())).await;
                }
            )*
            $(
                #[tokio::test(start_paused = true)]
                async fn $timed() {
                    super::$timed(Arc::new(MemoryConversationStore::new()), tokio::time::advance)
                        .await;
                }
            )*
        }
        #[cfg(feature = "redis")]
        mod on_redis {
            use super::*;
            $(
                #[tokio::test]
                async fn $name() {
                    let Some(server) = redis_server::RedisServer::start() else {
                        return;
                    };
                    super::$name(redis::store(&server, stringify!($name)).await).await;
                }
            )*
            $(
                #[tokio::test]
                async fn $timed() {
                    let Some(server) = redis_server::RedisServer::start() else {
                        return;
                    };
                    let store = redis::store(&server, stringify!($timed)).await;
                    super::$timed(store, tokio::time::sleep).await;
                }
            )*
        }
    };
}

on_both_stores!(
    paused_on_one_replica_resumed_on_another,
    two_resumes_at_once_run_the_call_once,
    a_run_is_its_principal_s,
    a_malformed_checkpoint_is_unreadable_never_a_panic;
    waiting:
    a_run_that_outgrew_the_store_is_not_resumed_from_an_earlier_turn,
    a_refused_resume_changes_nothing,
);

/// A replica dies in its run's second turn, while it waits on a two-minute tool (the drive
/// dropped): the run is held until the lease passes (the deadline and the margin, from the
/// last checkpoint), then another replica continues it after the last finished turn: the first
/// turn's call is not made again.
#[tokio::test(start_paused = true)]
async fn a_run_cut_off_by_a_crash_continues_after_its_last_turn() {
    let store: Arc<dyn ConversationStore> = Arc::new(MemoryConversationStore::new());
    let ledger = Ledger::default();
    let first = ToolCall::new("c1", "quick_lookup", r#"{"order_id":"O-1"}"#);
    let slow = ToolCall::new("c2", "slow_lookup", r#"{"order_id":"O-1"}"#);
    let a = replica(
        &ledger,
        vec![Turn::calls([first]), Turn::calls([slow.clone()])],
    );
    let on_a = session(&store);
    let drive = a.run_kept(&on_a, "run-5", vec![Message::user("where is O-1?")]);
    // The replica dies a minute into the slow lookup.
    assert!(tokio::time::timeout(Duration::from_secs(60), drive)
        .await
        .is_err());
    assert_eq!(ledger.lookups(), ["O-1"]);

    let b = replica(
        &ledger,
        vec![Turn::calls([slow]), Turn::text("O-1 has shipped.")],
    );
    let busy = b.resume_kept(&session(&store), "run-5").await;
    assert!(matches!(busy, Err(RunError::Busy(_))), "{busy:?}");
    tokio::time::advance(Duration::from_secs(300) + toolwright::agent::RUN_LEASE_MARGIN).await;
    let run = b.resume_kept(&session(&store), "run-5").await.unwrap();
    assert_eq!(
        run.final_text(),
        Some("O-1 has shipped."),
        "{:?}",
        run.end()
    );
    // A's first turn and its result were kept; B made the slow lookup again and answered.
    assert_eq!(run.steps().len(), 3);
    assert_eq!(run.steps()[0].calls[0].name(), "quick_lookup");
    assert!(matches!(&run.transcript()[2], Message::ToolResults(r) if r[0].is_ok()));
    assert_eq!(ledger.lookups(), ["O-1"], "the quick lookup ran once");
}

/// With a lease margin of 5 s, a replica that died mid-run gives its run up 5 s after its
/// deadline (from its last save), not a minute after.
#[tokio::test(start_paused = true)]
async fn a_shorter_lease_margin_gives_a_crashed_run_up_sooner() {
    let store: Arc<dyn ConversationStore> = Arc::new(MemoryConversationStore::new());
    let ledger = Ledger::default();
    let slow = ToolCall::new("c1", "slow_lookup", r#"{"order_id":"O-2"}"#);
    let a = Agent::builder(
        ScriptedModel::new([Turn::calls([slow.clone()])]),
        registry(&ledger),
    )
    .deadline(Duration::from_secs(300))
    .run_lease_margin(Duration::from_secs(5))
    .build()
    .unwrap();
    let on_a = session(&store);
    let drive = a.run_kept(&on_a, "run-l", vec![Message::user("O-2?")]);
    // The replica dies a minute into the slow lookup.
    assert!(tokio::time::timeout(Duration::from_secs(60), drive)
        .await
        .is_err());
    let b = replica(&ledger, vec![Turn::calls([slow]), Turn::text("Shipped.")]);
    // Held from the run's start: the deadline and the margin, less the minute gone.
    tokio::time::advance(Duration::from_secs(300 + 5 - 60 - 1)).await;
    let busy = b.resume_kept(&session(&store), "run-l").await;
    assert!(matches!(busy, Err(RunError::Busy(_))), "{busy:?}");
    tokio::time::advance(Duration::from_secs(1)).await;
    let run = b.resume_kept(&session(&store), "run-l").await.unwrap();
    assert_eq!(run.final_text(), Some("Shipped."), "{:?}", run.end());
}

/// The memory store's bound on runs is hard: with every one of its `MAX_MEMORY_RUNS` runs held,
/// creating one more is refused (`Full`, naming the bound), and once a run is released (saved)
/// the next is kept in its place.
#[tokio::test(start_paused = true)]
async fn the_memory_store_keeps_no_run_past_its_bound_when_every_run_is_held() {
    use toolwright::conversation::MAX_MEMORY_RUNS;
    let store = MemoryConversationStore::new();
    let (lease, ttl) = (Duration::from_secs(3600), Duration::from_secs(7200));
    for i in 0..MAX_MEMORY_RUNS {
        assert!(store
            .create_run(&format!("r{i}"), "h", "{}", lease, ttl)
            .await
            .unwrap());
    }
    let refused = store.create_run("one-more", "h", "{}", lease, ttl).await;
    match refused {
        Err(ref error @ ConversationStoreError::Full { what, limit }) => {
            assert_eq!((what, limit), ("runs", MAX_MEMORY_RUNS));
            assert!(error.to_string().contains("10000 runs"), "{error}");
        }
        other => panic!("the run past the bound should be refused: {other:?}"),
    }
    assert_eq!(store.load_run("one-more").await.unwrap(), None);
    // Saving a run no one holds makes the store full too: it is refused the same way.
    let saved = store.save_run("another", "h", "{}", ttl, None).await;
    assert!(
        matches!(saved, Err(ConversationStoreError::Full { .. })),
        "{saved:?}"
    );
    // A run released: the next takes its place, and it is the one forgotten.
    assert!(store.save_run("r7", "h", "{}", ttl, None).await.unwrap());
    assert!(store
        .create_run("one-more", "h", "{}", lease, ttl)
        .await
        .unwrap());
    assert_eq!(store.load_run("r7").await.unwrap(), None);
    assert_eq!(store.load_run("r8").await.unwrap().as_deref(), Some("{}"));
}

/// A paused run written with serde and read back (anywhere the application keeps it) resumes
/// with `Agent::resume`, and its outcomes read back whole.
#[tokio::test(start_paused = true)]
async fn a_run_written_and_read_back_resumes() {
    let store: Arc<dyn ConversationStore> = Arc::new(MemoryConversationStore::new());
    let ledger = Ledger::default();
    let a = replica(
        &ledger,
        vec![Turn::calls([
            ToolCall::new("c0", "refund_order", r#"{"order":"O-1"}"#),
            refund("c1", "O-2"),
        ])],
    );
    let paused = a
        .run(&session(&store), vec![Message::user("refund O-2")])
        .await;
    let ticket = ticket(&paused);
    let text = serde_json::to_string(&paused).unwrap();
    let back: Run = serde_json::from_str(&text).unwrap();
    assert_eq!(serde_json::to_string(&back).unwrap(), text);
    let bad = paused.outcomes().next().unwrap();
    let bad_back = back.outcomes().next().unwrap();
    assert_eq!(bad.error_kind(), Some(ErrorKind::SchemaMismatch));
    assert!(bad.violations().len() >= 2, "{}", bad.to_model_string());
    assert_eq!(bad_back.to_model_string(), bad.to_model_string());
    assert_eq!(bad_back.violations(), bad.violations());

    Approvals::new(Arc::clone(&store))
        .approve(&ticket)
        .await
        .unwrap();
    let b = replica(&ledger, vec![Turn::text("Refunded O-2.")]);
    let done = b.resume(&session(&store), back).await;
    assert_eq!(done.final_text(), Some("Refunded O-2."), "{:?}", done.end());
    assert_eq!(ledger.refunds(), ["O-2"]);
    // The first call's failure was not run again: it went to the model with the refund's result.
    let Some(Message::ToolResults(results)) = done.transcript().get(2) else {
        panic!("{:?}", done.transcript());
    };
    assert_eq!(results.len(), 2);
    assert_eq!(results[0].error_kind(), Some(ErrorKind::SchemaMismatch));
    assert!(results[1].is_ok());
}

/// The store's holds, directly: a claim by another holder is busy until its lease passes, a
/// holder whose lease passed and whose run another claimed cannot save over it, a checkpoint
/// keeps the hold, a run expires its TTL after its last save, and a body is bounded: a save
/// refused for its size leaves the run outgrown, unless another holds it.
async fn holds_pass_with_their_lease(
    store: Arc<dyn ConversationStore>,
    (lease, ttl): (Duration, Duration),
    wait: impl AsyncFn(Duration),
) {
    assert!(store.create_run("r", "a", "{}", lease, ttl).await.unwrap());
    assert!(!store.create_run("r", "b", "{}", lease, ttl).await.unwrap());
    assert_eq!(
        store.claim_run("r", "b", lease).await.unwrap(),
        RunClaim::Busy
    );
    wait(lease).await;
    assert_eq!(
        store.claim_run("r", "b", lease).await.unwrap(),
        RunClaim::Claimed("{}".into())
    );
    assert!(!store
        .save_run("r", "a", "{\"a\":1}", ttl, None)
        .await
        .unwrap());
    // A checkpoint keeps the hold, for a lease from now.
    wait(lease / 2).await;
    assert!(store
        .save_run("r", "b", "{}", ttl, Some(lease))
        .await
        .unwrap());
    wait(lease * 3 / 4).await;
    assert_eq!(
        store.claim_run("r", "c", lease).await.unwrap(),
        RunClaim::Busy
    );
    assert!(store
        .save_run("r", "b", "{\"b\":1}", ttl, None)
        .await
        .unwrap());
    assert_eq!(
        store.load_run("r").await.unwrap().as_deref(),
        Some("{\"b\":1}")
    );
    // Saved: no one holds it.
    assert_eq!(
        store.claim_run("r", "c", lease).await.unwrap(),
        RunClaim::Claimed("{\"b\":1}".into())
    );
    // A run expires its TTL after it was last saved.
    assert!(store.save_run("r", "c", "{}", ttl, None).await.unwrap());
    wait(ttl).await;
    assert_eq!(
        store.claim_run("r", "c", lease).await.unwrap(),
        RunClaim::Unknown
    );
    assert_eq!(store.load_run("r").await.unwrap(), None);
    // The size bound.
    let huge = "x".repeat(toolwright::conversation::MAX_RUN_BYTES + 1);
    let refused = store.save_run("big", "a", &huge, ttl, None).await;
    assert!(matches!(
        refused,
        Err(toolwright::conversation::ConversationStoreError::TooLarge { .. })
    ));
    // A save refused for its size leaves the run outgrown in the same step: its earlier body
    // is gone, and no one claims it, whoever held it.
    assert!(store
        .create_run("grown", "a", "{}", lease, ttl)
        .await
        .unwrap());
    let refused = store.save_run("grown", "a", &huge, ttl, Some(lease)).await;
    assert!(matches!(
        refused,
        Err(ConversationStoreError::TooLarge { bytes, .. }) if bytes == huge.len()
    ));
    let outgrown = RunClaim::Outgrown {
        bytes: huge.len(),
        limit: toolwright::conversation::MAX_RUN_BYTES,
    };
    wait(lease).await;
    assert_eq!(
        store.claim_run("grown", "b", lease).await.unwrap(),
        outgrown
    );
    assert_eq!(
        store.claim_run("grown", "a", lease).await.unwrap(),
        outgrown
    );
    let load = store.load_run("grown").await;
    assert!(
        matches!(load, Err(ConversationStoreError::TooLarge { bytes, .. }) if bytes == huge.len()),
        "{load:?}"
    );
    assert!(!store
        .create_run("grown", "b", "{}", lease, ttl)
        .await
        .unwrap());
    // A run held by another is not marked by a holder whose lease passed.
    assert!(store
        .create_run("held", "a", "{}", lease, ttl)
        .await
        .unwrap());
    wait(lease).await;
    assert!(matches!(
        store.claim_run("held", "b", lease).await.unwrap(),
        RunClaim::Claimed(_)
    ));
    assert!(!store.save_run("held", "a", &huge, ttl, None).await.unwrap());
    assert_eq!(store.load_run("held").await.unwrap().as_deref(), Some("{}"));
    // Its holder's later save that fits is the run again.
    assert!(store
        .save_run("grown", "a", "{\"g\":1}", ttl, None)
        .await
        .unwrap());
    assert_eq!(
        store.claim_run("grown", "b", lease).await.unwrap(),
        RunClaim::Claimed("{\"g\":1}".into())
    );
}

/// The holds of the memory store, on tokio's clock (paused).
#[tokio::test(start_paused = true)]
async fn a_hold_is_one_holder_s_until_its_lease_passes() {
    let store = Arc::new(MemoryConversationStore::new());
    let times = (Duration::from_secs(10), Duration::from_secs(3600));
    holds_pass_with_their_lease(store, times, tokio::time::advance).await;
}

#[cfg(feature = "redis")]
mod redis {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};

    use toolwright::conversation::RedisConversationStore;

    use super::redis_server::RedisServer;
    use super::*;

    pub(super) async fn store(server: &RedisServer, prefix: &str) -> Arc<dyn ConversationStore> {
        Arc::new(
            RedisConversationStore::builder()
                .prefix(prefix)
                .connect(&server.url())
                .await
                .unwrap(),
        )
    }

    /// The same holds on the server's clock (`TIME`), waited out in real time: a 200 ms lease,
    /// a 1 s TTL.
    #[tokio::test]
    async fn a_hold_passes_on_the_server_s_clock() {
        let Some(server) = RedisServer::start() else {
            return;
        };
        let times = (Duration::from_millis(200), Duration::from_secs(1));
        holds_pass_with_their_lease(store(&server, "t4:").await, times, tokio::time::sleep).await;
    }

    /// One phase of the killed-process test, run in a child process (this test binary, asked
    /// for this test alone): `pause` starts the run and waits to be killed; `resume` resumes it.
    #[tokio::test]
    #[ignore = "a phase of a_killed_process_s_paused_run_resumes_in_a_fresh_one, run in its child process"]
    async fn kept_run_phase() {
        let url = std::env::var("KEPT_RUN_REDIS").unwrap();
        let refunds = std::path::PathBuf::from(std::env::var("KEPT_RUN_LEDGER").unwrap());
        let store: Arc<dyn ConversationStore> = Arc::new(
            RedisConversationStore::builder()
                .prefix("killed:")
                .connect(&url)
                .await
                .unwrap(),
        );
        let ledger = Ledger::default();
        let on = session(&store);
        match std::env::var("KEPT_RUN_PHASE").unwrap().as_str() {
            "pause" => {
                let agent = replica(&ledger, vec![Turn::calls([refund("c1", "O-42")])]);
                let run = agent
                    .run_kept(&on, "run-k", vec![Message::user("refund O-42")])
                    .await
                    .unwrap();
                println!("TICKET {}", ticket(&run));
                // Wait to be killed.
                tokio::time::sleep(Duration::from_secs(120)).await;
            }
            "resume" => {
                let agent = replica(&ledger, vec![Turn::text("Refunded O-42.")]);
                let run = agent.resume_kept(&on, "run-k").await.unwrap();
                // The tool's effect, where the parent can count it across processes.
                for order in ledger.refunds() {
                    use std::io::Write;
                    let mut file = std::fs::OpenOptions::new()
                        .create(true)
                        .append(true)
                        .open(&refunds)
                        .unwrap();
                    writeln!(file, "{order}").unwrap();
                }
                println!("END {}", run.final_text().unwrap_or("-"));
            }
            other => panic!("unknown phase {other}"),
        }
    }

    fn phase(url: &str, ledger: &std::path::Path, phase: &str) -> Command {
        // The phase's test name in this binary, wherever this module sits: its module path
        // without the crate's name, as libtest names tests.
        let module = module_path!().split_once("::").map_or("", |(_, path)| path);
        let test = format!("{module}::kept_run_phase");
        let mut command = Command::new(std::env::current_exe().unwrap());
        command
            .args([
                test.as_str(),
                "--exact",
                "--include-ignored",
                "--nocapture",
                "--test-threads=1",
            ])
            .env("KEPT_RUN_REDIS", url)
            .env("KEPT_RUN_LEDGER", ledger)
            .env("KEPT_RUN_PHASE", phase)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        command
    }

    /// A process pauses a run on approval and is killed; the call is approved from here; a
    /// fresh process resumes the run and the refund runs, once; a second fresh process resumes
    /// it again and nothing runs.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_killed_process_s_paused_run_resumes_in_a_fresh_one() {
        let Some(server) = RedisServer::start() else {
            return;
        };
        let dir = std::env::temp_dir().join(format!("kept-run-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let ledger = dir.join("refunds.txt");
        let _ = std::fs::remove_file(&ledger);

        let mut first = phase(&server.url(), &ledger, "pause").spawn().unwrap();
        let mut lines = BufReader::new(first.stdout.take().unwrap()).lines();
        let ticket = loop {
            let line = lines
                .next()
                .expect("the first process ended before it paused")
                .unwrap();
            // The harness writes `test NAME ... ` first on the same line.
            if let Some((_, ticket)) = line.split_once("TICKET ") {
                break ticket.trim().to_owned();
            }
        };
        first.kill().unwrap();
        first.wait().unwrap();

        let approvals = Approvals::new(store(&server, "killed:").await);
        approvals.approve(&ticket).await.unwrap();

        for round in 0..2 {
            let out = phase(&server.url(), &ledger, "resume").output().unwrap();
            let stdout = String::from_utf8_lossy(&out.stdout);
            assert!(out.status.success(), "resume {round}: {stdout}");
            assert!(
                stdout.contains("END Refunded O-42."),
                "resume {round}: {stdout}"
            );
            let refunds = std::fs::read_to_string(&ledger).unwrap_or_default();
            assert_eq!(
                refunds.lines().collect::<Vec<_>>(),
                ["O-42"],
                "after resume {round}"
            );
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// Every way of driving a run can be spawned on a multi-threaded runtime: the futures are `Send`
/// for any lifetime of what they borrow, not for one only (a stream of borrowed calls inside a
/// turn once made them `Send` for one lifetime, and `tokio::spawn` refused them).
#[tokio::test]
async fn every_drive_of_a_run_can_be_spawned() {
    let store: Arc<dyn ConversationStore> = Arc::new(MemoryConversationStore::new());
    let agent = replica(
        &Ledger::default(),
        vec![Turn::text("done"), Turn::text("done")],
    );
    let session = session(&store);
    let (a, s) = (agent.clone(), session.clone());
    let kept =
        tokio::spawn(async move { a.run_kept(&s, "spawned", vec![Message::user("hi")]).await });
    let run = kept
        .await
        .expect("the spawned run ends")
        .expect("the run is kept");
    let (a, s) = (agent.clone(), session.clone());
    let resumed = tokio::spawn(async move { a.resume_kept(&s, "spawned").await });
    assert!(resumed.await.expect("the spawned resume ends").is_ok());
    let (a, s) = (agent.clone(), session.clone());
    let plain = tokio::spawn(async move { a.run(&s, vec![Message::user("hi")]).await });
    plain.await.expect("the spawned run ends");
    let (a, s) = (agent, session);
    let again = tokio::spawn(async move { a.resume(&s, run).await });
    again.await.expect("the spawned resume ends");
}
