//! Exactly-once soak: two registries playing two replicas share one Redis idempotency store
//! and one payment service on loopback that injects faults at random (seeded): a timeout after
//! the payment committed, a 503 before it committed, a 429, a connection reset before or after
//! the commit. 2,000 logical payments, a fifth of them proposed twice at once (one proposal to
//! each replica, as a provider re-delivery racing the original would be).
//!
//! A logical call that did not end in a success is delivered again with the same call id (the
//! agent loop asking again), after the service has finished what it was doing, for a bounded
//! number of rounds; so is, once, every duplicate that was told `duplicate_in_flight` (it is
//! answered from the store: a replay).
//!
//! Two services, two tests:
//!
//! - `deduplicating`: the service itself recognizes an `Idempotency-Key` (a finished key gets
//!   its stored answer back, a running one 409), as Stripe does. "One payment per call" holds
//!   here even if the store did nothing but send a stable key, so the soak also asserts what
//!   only the store can do.
//! - `naive`: the service pays on every request it does not fail. Only the store stands between
//!   a re-delivery and a second payment. A payment whose answer was lost (a timeout or a reset
//!   after the commit) is an effect nobody knew about, so the retry pays again; what must hold
//!   is exactly-once for every effect the store knew had finished.
//!
//! What both assert, per logical call:
//!
//! - it has classified outcomes and finally succeeded, and every success (replays included)
//!   names the same charge;
//! - the service saw exactly one key for it (its call id's), from both replicas;
//! - the service's requests under that key equal the attempts of the call's outcomes that were
//!   not replayed: a replayed or `duplicate_in_flight` proposal sent nothing;
//! - the last request under that key is the one whose answer the store kept: once the store
//!   knew the payment had finished, nothing went downstream again.
//!
//! Skipped loudly without `redis-server` on PATH, unless `TOOLWRIGHT_REQUIRE_REDIS=1`.
//! Real time, loopback only; bounded in rounds, requests and wall time. The tool's timeout is
//! 2 s and a slow answer comes 4 s after its request, so "the answer came after the timeout" is
//! true by construction, and a request has 2 s to reach the service on a loaded machine.

#[path = "../../../tests/it/support/redis_server.rs"]
mod redis_server;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use toolwright::execute::{classify::check_response, BreakerPolicy, RetryPolicy, SeededRandom};
use toolwright::idempotency::RedisStore;
use toolwright::prelude::*;

const CALLS: usize = 2_000;
/// Percent of logical calls proposed twice at once, one proposal to each replica.
const DUPLICATED_PERCENT: u32 = 20;
const CONCURRENCY: usize = 32;
/// A "timeout after commit" answers this long after its request: twice the tool's 2 s timeout.
const SLOW_ANSWER: Duration = Duration::from_secs(4);
const MAX_ROUNDS: usize = 10;
/// The whole soak must end inside this (it takes about 10 to 20 s).
const WALL_LIMIT: Duration = Duration::from_secs(240);

// ---------------------------------------------------------------------------------------------
// The payment service: a small HTTP/1.1 server on raw TCP, so it can reset connections.
// ---------------------------------------------------------------------------------------------

#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
struct Payment {
    payment_id: String,
    amount_cents: u32,
    /// The service's number of this payment: unique per effect.
    charge: u64,
}

enum KeyState {
    InProgress,
    Done(String),
}

/// One request the service saw under a key.
#[derive(Debug, Clone, Copy)]
struct Request {
    /// The charge its answer carried (a fresh one, or a finished key's), if it had one.
    answered: Option<u64>,
    /// The deduplicating service answered it from its memory of the key (a finished key's
    /// answer, or 409 while it runs): the service, not the store, stopped a second payment.
    from_memory: bool,
}

#[derive(Default)]
struct Books {
    /// The deduplicating service's memory of keys.
    keys: HashMap<String, KeyState>,
    /// Payments made, per logical payment id.
    effects: HashMap<String, u32>,
    /// Keys seen per logical payment id: must be exactly one each.
    keys_by_payment: HashMap<String, HashSet<String>>,
    /// Every request per key, in the order the service decided them.
    requests_by_key: HashMap<String, Vec<Request>>,
    charges: u64,
    requests: u64,
    faults: BTreeMap<&'static str, u32>,
    /// Slow answers still sleeping (their payment is committed).
    in_progress: u32,
}

struct Service {
    /// Whether the service recognizes keys itself.
    deduplicates: bool,
    books: Mutex<Books>,
    rng: Mutex<fastrand::Rng>,
}

enum Reply {
    Answer(u16, String, bool),
    Reset,
    /// Commit made; answer after `SLOW_ANSWER`.
    Slow(String, String),
}

impl Service {
    fn decide(&self, key: &str, payment: Option<(String, u32)>) -> Reply {
        let Some((payment_id, amount_cents)) = payment else {
            return Reply::Answer(400, r#"{"error":"bad request"}"#.into(), false);
        };
        let roll = self.rng.lock().unwrap().u32(0..100);
        let mut books = self.books.lock().unwrap();
        books.requests += 1;
        books
            .keys_by_payment
            .entry(payment_id.clone())
            .or_default()
            .insert(key.to_owned());
        let log = |books: &mut Books, answered: Option<u64>, from_memory: bool| {
            books
                .requests_by_key
                .entry(key.to_owned())
                .or_default()
                .push(Request {
                    answered,
                    from_memory,
                });
        };
        if self.deduplicates {
            match books.keys.get(key) {
                Some(KeyState::InProgress) => {
                    log(&mut books, None, true);
                    return Reply::Answer(409, r#"{"error":"payment in progress"}"#.into(), false);
                }
                Some(KeyState::Done(body)) => {
                    let body = body.clone();
                    log(&mut books, charge_of(&body), true);
                    return Reply::Answer(200, body, true);
                }
                None => {}
            }
        }
        let fault = match roll {
            0..=4 => Some("503_before_commit"),
            5..=9 => Some("429"),
            10..=12 => Some("reset_before_commit"),
            13..=17 => Some("timeout_after_commit"),
            18..=19 => Some("reset_after_commit"),
            _ => None,
        };
        if let Some(fault) = fault {
            *books.faults.entry(fault).or_default() += 1;
        }
        match fault {
            Some("503_before_commit") => {
                log(&mut books, None, false);
                return Reply::Answer(503, r#"{"error":"try later"}"#.into(), false);
            }
            Some("429") => {
                log(&mut books, None, false);
                return Reply::Answer(429, r#"{"error":"slow down"}"#.into(), false);
            }
            Some("reset_before_commit") => {
                log(&mut books, None, false);
                return Reply::Reset;
            }
            _ => {}
        }
        // Commit.
        books.charges += 1;
        let charge = books.charges;
        log(&mut books, Some(charge), false);
        *books.effects.entry(payment_id.clone()).or_default() += 1;
        let body = serde_json::to_string(&Payment {
            payment_id,
            amount_cents,
            charge,
        })
        .unwrap();
        match fault {
            Some("timeout_after_commit") => {
                books.keys.insert(key.to_owned(), KeyState::InProgress);
                books.in_progress += 1;
                Reply::Slow(key.to_owned(), body)
            }
            Some("reset_after_commit") => {
                books.keys.insert(key.to_owned(), KeyState::Done(body));
                Reply::Reset
            }
            _ => {
                books
                    .keys
                    .insert(key.to_owned(), KeyState::Done(body.clone()));
                Reply::Answer(201, body, false)
            }
        }
    }

    async fn connection(self: Arc<Self>, mut stream: TcpStream) {
        let Some((key, body)) = read_request(&mut stream).await else {
            return;
        };
        let payment = serde_json::from_slice::<serde_json::Value>(&body)
            .ok()
            .and_then(|v| {
                Some((
                    v.get("payment_id")?.as_str()?.to_owned(),
                    u32::try_from(v.get("amount_cents")?.as_u64()?).ok()?,
                ))
            });
        let (status, body, replayed) = match self.decide(&key, payment) {
            Reply::Answer(status, body, replayed) => (status, body, replayed),
            Reply::Reset => {
                let _ = stream.set_zero_linger();
                return;
            }
            Reply::Slow(key, body) => {
                tokio::time::sleep(SLOW_ANSWER).await;
                let mut books = self.books.lock().unwrap();
                books.keys.insert(key, KeyState::Done(body.clone()));
                books.in_progress -= 1;
                drop(books);
                (201, body, false)
            }
        };
        let replayed = if replayed {
            "idempotent-replayed: true\r\n"
        } else {
            ""
        };
        let head = format!(
            "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\
             connection: close\r\n{replayed}\r\n",
            body.len()
        );
        let _ = stream.write_all(head.as_bytes()).await;
        let _ = stream.write_all(body.as_bytes()).await;
        let _ = stream.shutdown().await;
    }
}

fn charge_of(body: &str) -> Option<u64> {
    serde_json::from_str::<Payment>(body).ok().map(|p| p.charge)
}

/// The `Idempotency-Key` and the body of one request.
async fn read_request(stream: &mut TcpStream) -> Option<(String, Vec<u8>)> {
    let mut data = Vec::new();
    let mut buf = [0u8; 4096];
    let head_end = loop {
        if let Some(at) = data.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
        let n = stream.read(&mut buf).await.ok()?;
        if n == 0 || data.len() > 64 * 1024 {
            return None;
        }
        data.extend_from_slice(&buf[..n]);
    };
    let head = String::from_utf8_lossy(&data[..head_end]).to_ascii_lowercase();
    let header = |name: &str| {
        head.lines()
            .find_map(|l| l.strip_prefix(name).map(|v| v.trim().to_owned()))
    };
    let length: usize = header("content-length:")?.parse().ok()?;
    let key = header("idempotency-key:").unwrap_or_default();
    while data.len() < head_end + length {
        let n = stream.read(&mut buf).await.ok()?;
        if n == 0 {
            return None;
        }
        data.extend_from_slice(&buf[..n]);
    }
    Some((key, data[head_end..head_end + length].to_vec()))
}

async fn serve(seed: u64, deduplicates: bool) -> (String, Arc<Service>) {
    let service = Arc::new(Service {
        deduplicates,
        books: Mutex::new(Books::default()),
        rng: Mutex::new(fastrand::Rng::with_seed(seed)),
    });
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let accepting = Arc::clone(&service);
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            tokio::spawn(Arc::clone(&accepting).connection(stream));
        }
    });
    (base, service)
}

// ---------------------------------------------------------------------------------------------
// The tool and the two replicas.
// ---------------------------------------------------------------------------------------------

struct Gateway {
    client: reqwest::Client,
    base: String,
}

/// Charge a payment (not idempotent; sends its idempotency key downstream).
#[tool(idempotent = false, timeout_ms = 2000)]
async fn pay(
    key: IdempotencyKey,
    gateway: State<Gateway>,
    payment_id: String,
    amount_cents: u32,
) -> Result<Payment, ToolError> {
    let response = gateway
        .client
        .post(format!("{}/payments", gateway.base))
        .header("Idempotency-Key", key.as_str())
        .json(&serde_json::json!({ "payment_id": payment_id, "amount_cents": amount_cents }))
        .send()
        .await?;
    if response.status() == reqwest::StatusCode::CONFLICT {
        return Err(ToolError::conflict("the payment is already in progress"));
    }
    Ok(check_response(response)?.json().await?)
}

async fn replica(redis_url: &str, base: &str, seed: u64) -> Registry {
    let store = RedisStore::connect(redis_url).await.unwrap();
    Registry::builder()
        .tool(Pay)
        .state(Gateway {
            client: reqwest::Client::builder().no_proxy().build().unwrap(),
            base: base.to_owned(),
        })
        .idempotency_store(store)
        // The soak is about exactly-once, not about shedding load: no breaker cooldowns.
        .breaker(BreakerPolicy::disabled())
        .retry_policy(RetryPolicy::new().base(Duration::from_millis(5)))
        .random(SeededRandom::new(seed))
        .build()
        .unwrap()
}

fn proposal(i: usize) -> ToolCall {
    let args = format!(r#"{{"payment_id":"p{i}","amount_cents":{}}}"#, 100 + i);
    ToolCall::new(format!("call_{i}"), "pay", args)
}

/// What the test keeps of one outcome.
#[derive(Clone, Debug)]
struct Seen {
    ok: bool,
    kind: &'static str,
    replayed: bool,
    attempts: u32,
    /// The charge a success names.
    charge: Option<u64>,
    /// Attempts that ended in a way that may have paid without the tool learning of it.
    unknown_effects: usize,
}

impl Seen {
    fn of(outcome: &Outcome) -> Seen {
        Seen {
            ok: outcome.is_ok(),
            kind: outcome.error_kind().map_or("success", ErrorKind::as_str),
            replayed: outcome.is_replayed(),
            attempts: outcome.attempts(),
            charge: outcome.data_as::<Payment>().map(|p| p.charge),
            unknown_effects: outcome
                .attempt_history()
                .iter()
                .filter(|a| a.error().is_some_and(|k| k.may_have_acted(false)))
                .count(),
        }
    }
}

/// What one soak saw: every outcome per logical call, and the service's books.
struct Soak {
    seen: Vec<Vec<Seen>>,
    service: Arc<Service>,
}

async fn soak(deduplicates: bool) -> Option<Soak> {
    let redis = redis_server::RedisServer::start()?; // when None, said loudly on stderr
    let wall = Instant::now();
    let (base, service) = serve(0x5eed_0000, deduplicates).await;
    let replicas = [
        replica(&redis.url(), &base, 1).await,
        replica(&redis.url(), &base, 2).await,
    ];
    let session = Session::new("soak");
    let mut rng = fastrand::Rng::with_seed(42);
    let duplicated: Vec<bool> = (0..CALLS)
        .map(|_| rng.u32(0..100) < DUPLICATED_PERCENT)
        .collect();

    let mut seen: Vec<Vec<Seen>> = vec![Vec::new(); CALLS];
    let mut pending: Vec<usize> = (0..CALLS).collect();
    let mut rounds = 0;
    while !pending.is_empty() && rounds < MAX_ROUNDS && wall.elapsed() < WALL_LIMIT {
        rounds += 1;
        let gate = Arc::new(Semaphore::new(CONCURRENCY));
        let mut tasks = JoinSet::new();
        for &i in &pending {
            let gate = Arc::clone(&gate);
            let session = session.clone();
            let first = replicas[i % 2].clone();
            let second = replicas[(i + 1) % 2].clone();
            let twice = rounds == 1 && duplicated[i];
            tasks.spawn(async move {
                let _permit = gate.acquire_owned().await.unwrap();
                let mut outcomes = vec![];
                if twice {
                    let (a, b) = tokio::join!(
                        first.call_in(&session, proposal(i)),
                        second.call_in(&session, proposal(i)),
                    );
                    outcomes.push(Seen::of(&a));
                    outcomes.push(Seen::of(&b));
                } else {
                    outcomes.push(Seen::of(&first.call_in(&session, proposal(i)).await));
                }
                (i, outcomes)
            });
        }
        while let Some(done) = tasks.join_next().await {
            let (i, outcomes) = done.unwrap();
            seen[i].extend(outcomes);
        }
        // Asked again: every call without a success, and (once) every duplicate that was told
        // `duplicate_in_flight`, re-delivered as a provider does after the wait it was given.
        pending = (0..CALLS)
            .filter(|&i| {
                let refused = seen[i].iter().any(|s| s.kind == "duplicate_in_flight");
                !seen[i].iter().any(|s| s.ok) || (rounds == 1 && refused)
            })
            .collect();
        // Let the service finish its slow answers before anyone asks again (bounded).
        let drain = Instant::now();
        while service.books.lock().unwrap().in_progress > 0 && drain.elapsed() < SLOW_ANSWER * 10 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    // The counts.
    let books = service.books.lock().unwrap();
    let proposals: usize = seen.iter().map(Vec::len).sum();
    let mut kinds: BTreeMap<&str, usize> = BTreeMap::new();
    for s in seen.iter().flatten() {
        *kinds.entry(s.kind).or_default() += 1;
    }
    let replays = seen.iter().flatten().filter(|s| s.replayed).count();
    let effects: u32 = books.effects.values().sum();
    println!(
        "exactly-once soak ({} service): {CALLS} logical calls ({} proposed twice at once), \
         {proposals} proposals over {rounds} rounds, {} requests to the service, {effects} \
         effects, {replays} replays, {} duplicate_in_flight; outcomes by error_type {kinds:?}; \
         injected faults {:?}; {:.1} s",
        if deduplicates {
            "deduplicating"
        } else {
            "naive"
        },
        duplicated.iter().filter(|d| **d).count(),
        books.requests,
        kinds.get("duplicate_in_flight").copied().unwrap_or(0),
        books.faults,
        wall.elapsed().as_secs_f64(),
    );
    assert!(wall.elapsed() < WALL_LIMIT, "{:?}", wall.elapsed());
    drop(books);
    Some(Soak { seen, service })
}

/// What only the store can do, asserted per logical call against the service's books.
fn assert_the_store_did_its_part(soak: &Soak) {
    let books = soak.service.books.lock().unwrap();
    let seen = &soak.seen;

    // No call lost: each has classified outcomes, and each finally succeeded.
    assert!(seen.iter().all(|s| !s.is_empty()));
    let unfinished: Vec<_> = (0..CALLS)
        .filter(|&i| !seen[i].iter().any(|s| s.ok))
        .map(|i| (i, seen[i].iter().map(|s| s.kind).collect::<Vec<_>>()))
        .collect();
    assert!(
        unfinished.is_empty(),
        "calls without a success: {unfinished:?}"
    );

    // A refused duplicate never ran.
    for s in seen
        .iter()
        .flatten()
        .filter(|s| s.kind == "duplicate_in_flight")
    {
        assert_eq!(s.attempts, 0, "{s:?}");
    }

    let mut total_attempts = 0;
    for (i, outcomes) in seen.iter().enumerate() {
        let payment = format!("p{i}");
        let key = format!("soak:pay:call_{i}");
        // One key per logical call, its call id's, from both replicas.
        let keys = &books.keys_by_payment[&payment];
        assert_eq!(keys.len(), 1, "{payment}: {keys:?}");
        assert!(keys.contains(&key), "{keys:?}");

        // Every success names the same charge: the one the store kept and replays.
        let charges: HashSet<u64> = outcomes
            .iter()
            .filter(|s| s.ok)
            .map(|s| s.charge.unwrap())
            .collect();
        assert_eq!(charges.len(), 1, "{payment}: {outcomes:?}");
        let kept = charges.into_iter().next().unwrap();

        // Replays and refused duplicates sent nothing: the service's requests under the key
        // are exactly the attempts of the outcomes that ran.
        let requests = &books.requests_by_key[&key];
        let ran: u32 = outcomes
            .iter()
            .filter(|s| !s.replayed)
            .map(|s| s.attempts)
            .sum();
        assert_eq!(
            requests.len(),
            ran as usize,
            "{payment}: {requests:?} vs {outcomes:?}"
        );
        total_attempts += u64::from(ran);

        // Once the store knew the payment had finished, nothing went downstream again.
        assert_eq!(
            requests.last().and_then(|r| r.answered),
            Some(kept),
            "{payment}: the last request must be the one whose answer was kept: {requests:?}"
        );
    }
    assert_eq!(books.requests, total_attempts);
    assert!(seen
        .iter()
        .flatten()
        .any(|s| s.kind == "duplicate_in_flight"));
    assert!(seen.iter().flatten().any(|s| s.replayed));
    // The faults were there to survive.
    for fault in [
        "503_before_commit",
        "429",
        "reset_before_commit",
        "timeout_after_commit",
        "reset_after_commit",
    ] {
        assert!(books.faults.get(fault).copied().unwrap_or(0) > 0, "{fault}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deduplicating_service_two_replicas_one_redis_every_payment_exactly_once() {
    let Some(soak) = soak(true).await else { return };
    assert_the_store_did_its_part(&soak);

    // With the service's help, exactly one effect per logical call.
    let books = soak.service.books.lock().unwrap();
    assert_eq!(books.effects.len(), CALLS);
    let mut rescued = 0;
    for (i, outcomes) in soak.seen.iter().enumerate() {
        let payment = format!("p{i}");
        assert_eq!(books.effects.get(&payment), Some(&1), "{payment}");
        // The service's own memory was needed only for calls with an attempt whose effect
        // nobody knew (a lost answer): a re-delivery after a known success, or a duplicate
        // while the call ran, never reached it. A store that only sent a stable key would fail
        // here.
        let from_memory = books.requests_by_key[&format!("soak:pay:call_{i}")]
            .iter()
            .filter(|r| r.from_memory)
            .count();
        let unknown: usize = outcomes
            .iter()
            .filter(|s| !s.replayed)
            .map(|s| s.unknown_effects)
            .sum();
        assert!(
            unknown > 0 || from_memory == 0,
            "{payment}: the service deduplicated {from_memory} requests of a call whose every \
             effect the store knew: {outcomes:?}"
        );
        rescued += from_memory;
    }
    println!("deduplicating service: {rescued} requests answered from its memory of the key");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn naive_service_pays_again_only_for_effects_nobody_knew_about() {
    let Some(soak) = soak(false).await else {
        return;
    };
    assert_the_store_did_its_part(&soak);

    // Every payment beyond the first of a call stands for an attempt that may have paid
    // without anyone learning of it (a timeout or a reset): the store cannot know of those, and
    // the service does not deduplicate. Everything else paid once.
    let books = soak.service.books.lock().unwrap();
    assert_eq!(books.effects.len(), CALLS);
    let mut extra = 0;
    for (i, outcomes) in soak.seen.iter().enumerate() {
        let payment = format!("p{i}");
        let effects = books.effects[&payment];
        let unknown: usize = outcomes
            .iter()
            .filter(|s| !s.replayed)
            .map(|s| s.unknown_effects)
            .sum();
        assert!(effects >= 1, "{payment}");
        assert!(
            (effects - 1) as usize <= unknown,
            "{payment}: {effects} payments, only {unknown} attempts whose effect was unknown: {outcomes:?}"
        );
        extra += effects - 1;
    }
    println!("naive service: {extra} payments beyond one per call, each after a lost answer");
    // The variant shows the case the store cannot rescue (a lost answer, paid again).
    assert!(extra > 0);
}
