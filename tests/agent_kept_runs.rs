//! Runs kept in the conversation store (`Agent::run_kept`, `Agent::resume_kept`): a run paused
//! for approval on one replica is resumed on another and its approved call runs once; two
//! resumes at once run it once; a replica that died mid-run gives the run up after its lease
//! (paused tokio time); a run written with serde and read back resumes; and, against a real
//! `redis-server`, a process paused on approval is killed, the call approved, and a fresh
//! process resumes the run: the tool ran once.

#[cfg(feature = "redis")]
#[path = "support/redis_server.rs"]
mod redis_server;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use toolwright::agent::{Agent, End, Message, Run, RunError, ScriptedModel, Turn};
use toolwright::approval::Approvals;
use toolwright::conversation::{ConversationStore, MemoryConversationStore, RunClaim};
use toolwright::prelude::*;

/// What the tools did: refunds, and quick lookups.
#[derive(Clone, Default)]
struct Ledger(Arc<Mutex<Vec<String>>>, Arc<Mutex<Vec<String>>>);

impl Ledger {
    fn refunds(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }

    fn lookups(&self) -> Vec<String> {
        self.1.lock().unwrap().clone()
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

fn registry(ledger: &Ledger) -> Registry {
    Registry::builder()
        .tool(RefundOrder)
        .tool(QuickLookup)
        .tool(SlowLookup)
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

/// Each test of the suite, once per store: `memory::NAME` on paused tokio time, `on_redis::NAME`
/// against a real `redis-server` (skipped, loudly, when it is not installed).
macro_rules! on_both_stores {
    ($($name:ident),* $(,)?) => {
        mod memory {
            use super::*;
            $(
                #[tokio::test(start_paused = true)]
                async fn $name() {
                    super::$name(Arc::new(MemoryConversationStore::new())).await;
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
        }
    };
}

on_both_stores!(
    paused_on_one_replica_resumed_on_another,
    two_resumes_at_once_run_the_call_once,
    a_run_is_its_principal_s,
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
/// keeps the hold, a run expires its TTL after its last save, and a body is bounded.
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
        let mut command = Command::new(std::env::current_exe().unwrap());
        command
            .args([
                "redis::kept_run_phase",
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
