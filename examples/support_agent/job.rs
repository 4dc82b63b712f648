//! The support agent's job, callable in-process (the example's `main` and
//! `tests/it/agent_support_job.rs` both run it): an order-and-payment HTTP service on loopback with a
//! fault schedule drawn from a seed, the tools that call it with reqwest, and the scripted
//! conversations through the agent loop, printing one line per call as it ends, then the
//! per-tool stats and what the breakers did.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::{Path, Query, State as Shared};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::serve::ListenerExt;
use axum::{Json, Router};
use toolwright::agent::{Agent, AgentEvent, ChatModel, End, Message, Run, ScriptedModel, Turn};
use toolwright::approval::{Approval, ApprovalQueue, ApprovalRequest, Approver};
use toolwright::execute::{BreakerPolicy, SeededRandom};
use toolwright::observe::Stats;
use toolwright::prelude::*;
use toolwright_core::execute::classify::check_response;

/// The seed of `cargo run --example support_agent` without `--seed`.
pub const DEFAULT_SEED: u64 = 7;

/// One order in the shop's database.
#[toolwright::data]
#[derive(Debug, Clone)]
pub struct Order {
    id: String,
    customer: String,
    item: String,
    total: f64,
    status: String,
}

/// A refund the payment service accepted.
#[toolwright::data]
#[derive(Debug, Clone)]
pub struct Refund {
    refund_id: String,
    order_id: String,
    amount: f64,
    idempotency_key: String,
}

/// Units of an item in the warehouse.
#[toolwright::data]
#[derive(Debug, Clone)]
pub struct Stock {
    item: String,
    units: u32,
}

// ---------------------------------------------------------------------------------------------
// The service: orders, stock, parcels and refunds on loopback, misbehaving on schedule.

/// Which request of an endpoint misbehaves (numbered from 1), drawn from the seed.
#[derive(Debug, Clone, Copy)]
pub struct Schedule {
    /// `GET /orders`: 429 with `Retry-After: 1`.
    pub search_429: u32,
    /// `GET /orders/{id}`: 500.
    pub order_500: u32,
    /// `GET /orders/{id}`: 200 with a body cut off mid-JSON.
    pub order_malformed: u32,
    /// `GET /stock/{item}`: no answer for 4 s, far past the tool's 1 s timeout.
    pub stock_hang: u32,
}

impl Schedule {
    pub fn from_seed(seed: u64) -> Schedule {
        let mut rng = fastrand::Rng::with_seed(seed);
        let search_429 = rng.u32(1..=2);
        let order_500 = rng.u32(1..=3);
        let mut order_malformed = rng.u32(1..=2);
        if order_malformed >= order_500 {
            order_malformed += 1;
        }
        Schedule {
            search_429,
            order_500,
            order_malformed,
            stock_hang: rng.u32(1..=2),
        }
    }
}

/// What the service saw: requests per endpoint, and refunds committed per idempotency key.
#[derive(Debug, Clone, Default)]
pub struct ServiceLog {
    pub requests: BTreeMap<&'static str, u32>,
    /// `POST /refunds` requests per `Idempotency-Key`.
    pub refund_requests: BTreeMap<String, u32>,
    /// Refunds committed per `Idempotency-Key`: a retry under the same key commits nothing.
    pub refunds_committed: BTreeMap<String, u32>,
}

struct Backend {
    orders: Vec<Order>,
    schedule: Schedule,
    log: Mutex<ServiceLog>,
    refunds: Mutex<BTreeMap<String, Refund>>,
}

impl Backend {
    /// Counts a request of `endpoint`; its number, from 1.
    fn arrived(&self, endpoint: &'static str) -> u32 {
        let mut log = self.log.lock().unwrap_or_else(|e| e.into_inner());
        let n = log.requests.entry(endpoint).or_default();
        *n += 1;
        *n
    }
}

/// The service, running on a loopback port until dropped.
pub struct Service {
    pub base: String,
    backend: Arc<Backend>,
    task: tokio::task::JoinHandle<()>,
}

impl Service {
    pub async fn start(seed: u64) -> std::io::Result<Service> {
        let backend = Arc::new(Backend {
            orders: orders(),
            schedule: Schedule::from_seed(seed),
            log: Mutex::new(ServiceLog::default()),
            refunds: Mutex::new(BTreeMap::new()),
        });
        let app = Router::new()
            .route("/orders", get(search))
            .route("/orders/{id}", get(order))
            .route("/stock/{item}", get(stock))
            .route("/parcels/{id}", get(parcel))
            .route("/refunds", post(refund))
            .with_state(Arc::clone(&backend));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let base = format!("http://{}", listener.local_addr()?);
        let listener = listener.tap_io(|tcp| {
            let _ = tcp.set_nodelay(true);
        });
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok(Service {
            base,
            backend,
            task,
        })
    }

    pub fn schedule(&self) -> Schedule {
        self.backend.schedule
    }

    pub fn log(&self) -> ServiceLog {
        self.backend
            .log
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn orders() -> Vec<Order> {
    let order = |id: &str, customer: &str, item: &str, total: f64, status: &str| Order {
        id: id.into(),
        customer: customer.into(),
        item: item.into(),
        total,
        status: status.into(),
    };
    vec![
        order(
            "A1001",
            "Ada Lovelace",
            "mechanical keyboard",
            129.0,
            "delivered",
        ),
        order("A1002", "Ada Lovelace", "usb-c cable", 12.5, "shipped"),
        order("A1003", "Grace Hopper", "standing desk", 499.0, "placed"),
    ]
}

#[derive(serde::Deserialize)]
struct SearchQuery {
    query: String,
    status: Option<String>,
    limit: usize,
}

async fn search(Shared(b): Shared<Arc<Backend>>, Query(q): Query<SearchQuery>) -> Response {
    if b.arrived("GET /orders") == b.schedule.search_429 {
        return (
            StatusCode::TOO_MANY_REQUESTS,
            [("retry-after", "1")],
            "slow down",
        )
            .into_response();
    }
    let query = q.query.to_lowercase();
    let found: Vec<&Order> = b
        .orders
        .iter()
        .filter(|o| {
            o.customer.to_lowercase().contains(&query) || o.item.to_lowercase().contains(&query)
        })
        .filter(|o| q.status.as_deref().is_none_or(|s| s == o.status))
        .take(q.limit)
        .collect();
    Json(found).into_response()
}

async fn order(Shared(b): Shared<Arc<Backend>>, Path(id): Path<String>) -> Response {
    let n = b.arrived("GET /orders/{id}");
    if n == b.schedule.order_500 {
        return (StatusCode::INTERNAL_SERVER_ERROR, "database failover").into_response();
    }
    if n == b.schedule.order_malformed {
        return (
            [("content-type", "application/json")],
            r#"{"id":"A10"#.to_owned(),
        )
            .into_response();
    }
    match b.orders.iter().find(|o| o.id == id) {
        Some(order) => Json(order).into_response(),
        None => (StatusCode::NOT_FOUND, "no such order").into_response(),
    }
}

async fn stock(Shared(b): Shared<Arc<Backend>>, Path(item): Path<String>) -> Response {
    if b.arrived("GET /stock/{item}") == b.schedule.stock_hang {
        tokio::time::sleep(Duration::from_secs(4)).await;
    }
    let units = if item.contains("desk") { 2 } else { 40 };
    Json(Stock { item, units }).into_response()
}

async fn parcel(Shared(b): Shared<Arc<Backend>>, Path(_id): Path<String>) -> Response {
    // The carrier's tracking API is down all day.
    b.arrived("GET /parcels/{id}");
    (StatusCode::INTERNAL_SERVER_ERROR, "carrier API down").into_response()
}

#[derive(serde::Deserialize)]
struct RefundBody {
    order_id: String,
    amount: f64,
}

/// Stripe-style: a key seen before gets its stored refund back and commits nothing; the
/// first refund of the day commits, then answers 1.5 s late (past the tool's 1 s timeout).
async fn refund(
    Shared(b): Shared<Arc<Backend>>,
    headers: HeaderMap,
    Json(body): Json<RefundBody>,
) -> Response {
    b.arrived("POST /refunds");
    let Some(key) = headers.get("idempotency-key").and_then(|k| k.to_str().ok()) else {
        return (StatusCode::BAD_REQUEST, "Idempotency-Key required").into_response();
    };
    match commit(&b, key, &body) {
        Ok((refund, late)) => {
            if late {
                tokio::time::sleep(Duration::from_millis(1500)).await;
            }
            Json(refund).into_response()
        }
        Err(refused) => refused.into_response(),
    }
}

/// The refund under `key`: the stored one, or a new one committed (and whether it is the
/// day's first, which answers late).
fn commit(
    b: &Backend,
    key: &str,
    body: &RefundBody,
) -> Result<(Refund, bool), (StatusCode, &'static str)> {
    let mut log = b.log.lock().unwrap_or_else(|e| e.into_inner());
    *log.refund_requests.entry(key.to_owned()).or_default() += 1;
    let mut refunds = b.refunds.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(done) = refunds.get(key) {
        return Ok((done.clone(), false));
    }
    let order = b
        .orders
        .iter()
        .find(|o| o.id == body.order_id)
        .ok_or((StatusCode::NOT_FOUND, "no such order"))?;
    if body.amount > order.total {
        return Err((
            StatusCode::UNPROCESSABLE_ENTITY,
            "more than the order total",
        ));
    }
    let refund = Refund {
        refund_id: format!("R-{}", order.id.trim_start_matches('A')),
        order_id: order.id.clone(),
        amount: body.amount,
        idempotency_key: key.to_owned(),
    };
    refunds.insert(key.to_owned(), refund.clone());
    let first = log.refunds_committed.is_empty();
    *log.refunds_committed.entry(key.to_owned()).or_default() += 1;
    Ok((refund, first))
}

// ---------------------------------------------------------------------------------------------
// The tools: each one request to the service, `?` on reqwest for the classification.

/// Where the service is, and the client the tools share.
pub struct Api {
    base: String,
    client: reqwest::Client,
}

/// Search orders by customer name or item. Returns at most `max_results` orders, newest first.
#[tool(timeout_ms = 2000, read_only, grounds(order = "id"))]
async fn search_orders(
    api: State<Api>,
    /// Words to look for in the customer name or the item.
    #[arg(length(min = 1, max = 100))]
    query: String,
    /// Only orders in this state.
    #[arg(one_of = ["placed", "shipped", "delivered", "refunded"])]
    status: Option<String>,
    /// How many orders to return.
    #[arg(range(min = 1, max = 20), default = 5)]
    max_results: u32,
) -> Result<Vec<Order>, ToolError> {
    let mut params = vec![("query", query), ("limit", max_results.to_string())];
    params.extend(status.map(|s| ("status", s)));
    let request = api
        .client
        .get(format!("{}/orders", api.base))
        .query(&params);
    Ok(check_response(request.send().await?)?.json().await?)
}

/// Fetch one order by its id (ids look like `A1001`).
#[tool(timeout_ms = 1000, read_only, grounds(order = "id"))]
async fn get_order(
    api: State<Api>,
    /// The order id, as returned by `search_orders`.
    #[arg(pattern = "^A[0-9]{4}$")]
    order_id: String,
) -> Result<Order, ToolError> {
    let url = format!("{}/orders/{order_id}", api.base);
    Ok(check_response(api.client.get(url).send().await?)?
        .json()
        .await?)
}

/// Refund part or all of an order. Each refund happens once, whatever the retries.
#[tool(
    timeout_ms = 1000,
    idempotent = false,
    scopes = ["refunds:write"],
    requires_approval
)]
async fn refund_order(
    key: IdempotencyKey,
    api: State<Api>,
    /// The order to refund.
    #[arg(pattern = "^A[0-9]{4}$", grounded = "order")]
    order_id: String,
    /// Amount in dollars.
    #[arg(range(min = 0.01, max = 500.0))]
    amount: f64,
    /// Why the customer wants a refund.
    #[arg(length(max = 300))]
    reason: Option<String>,
) -> Result<Refund, ToolError> {
    let body = toolwright::serde_json::json!({
        "order_id": order_id, "amount": amount, "reason": reason,
    });
    let request = api
        .client
        .post(format!("{}/refunds", api.base))
        .header("idempotency-key", key.as_str())
        .json(&body);
    Ok(check_response(request.send().await?)?.json().await?)
}

/// Offer the customer a callback window, in hours of the day (24 h clock).
#[tool(validate = window_is_ordered, idempotent = true)]
async fn schedule_callback(
    /// The order the callback is about.
    #[arg(pattern = "^A[0-9]{4}$")]
    order_id: String,
    /// First hour the customer can be called.
    #[arg(range(min = 0, max = 23))]
    earliest_hour: u8,
    /// Last hour the customer can be called.
    #[arg(range(min = 0, max = 23))]
    latest_hour: u8,
) -> Result<String, ToolError> {
    Ok(format!(
        "callback for {order_id} between {earliest_hour}:00 and {latest_hour}:00"
    ))
}

fn window_is_ordered(args: &ScheduleCallbackArgs) -> Result<(), ToolError> {
    if args.earliest_hour >= args.latest_hour {
        return Err(ToolError::invalid(format!(
            "`earliest_hour` ({}) must be before `latest_hour` ({})",
            args.earliest_hour, args.latest_hour
        )));
    }
    Ok(())
}

/// Estimate the delivery date of an order (the estimator has a known bug).
#[tool(timeout_ms = 500, read_only)]
async fn estimate_delivery(
    /// The order to estimate.
    #[arg(pattern = "^A[0-9]{4}$")]
    order_id: String,
) -> Result<String, ToolError> {
    let days: Vec<u32> = Vec::new();
    // A bug in the tool: indexing an empty list. toolwright contains the panic.
    let first = days[order_id.len() % 3];
    Ok(format!("{first} days"))
}

/// Check how many units of an item the warehouse has.
#[tool(timeout_ms = 1000, read_only)]
async fn check_stock(
    api: State<Api>,
    /// The item, as named in the order.
    #[arg(length(min = 1, max = 100))]
    item: String,
) -> Result<Stock, ToolError> {
    let url = format!("{}/stock/{item}", api.base);
    Ok(check_response(api.client.get(url).send().await?)?
        .json()
        .await?)
}

/// Where a shipped order's parcel is now.
#[tool(timeout_ms = 1000, read_only, fallback = last_scan)]
async fn track_parcel(
    api: State<Api>,
    /// The shipped order.
    #[arg(pattern = "^A[0-9]{4}$")]
    order_id: String,
) -> Result<String, ToolError> {
    let url = format!("{}/parcels/{order_id}", api.base);
    Ok(check_response(api.client.get(url).send().await?)?
        .text()
        .await?)
}

/// The fallback of `track_parcel`: the last scan the shop recorded, possibly hours old.
async fn last_scan(_api: State<Api>, order_id: String) -> Result<String, ToolError> {
    Ok(format!("{order_id}: last scanned at the Leipzig hub"))
}

/// The registry over the service at `base`: retries jittered from `seed`, and a breaker on
/// `track_parcel` that opens after three failures (the default needs ten calls in its window).
pub fn registry(base: &str, seed: u64) -> Result<Registry, toolwright::BuildError> {
    let api = Api {
        base: base.to_owned(),
        client: reqwest::Client::new(),
    };
    Registry::builder()
        .tool(SearchOrders)
        .tool(GetOrder)
        .tool(RefundOrder)
        .tool(ScheduleCallback)
        .tool(EstimateDelivery)
        .tool(CheckStock)
        .tool(TrackParcel)
        .state(api)
        .random(SeededRandom::new(seed))
        .breaker_for(
            "track_parcel",
            BreakerPolicy::new()
                .min_calls(3)
                .cooldown(Duration::from_secs(30)),
        )
        .build()
}

// ---------------------------------------------------------------------------------------------
// The conversations.

/// Who approves refunds: up to $50 by policy, anything larger by a person (the queue).
pub struct RefundPolicy {
    pub queue: ApprovalQueue,
}

impl Approver for RefundPolicy {
    fn review<'a>(
        &'a self,
        request: &'a ApprovalRequest<'a>,
    ) -> Pin<Box<dyn Future<Output = Approval> + Send + 'a>> {
        let amount =
            toolwright::serde_json::from_str::<toolwright::serde_json::Value>(request.arguments())
                .ok()
                .and_then(|args| args["amount"].as_f64());
        match amount {
            Some(amount) if amount <= 50.0 => Box::pin(std::future::ready(Approval::Approved)),
            _ => self.queue.review(request),
        }
    }
}

pub const SYSTEM: &str = "You are the support agent of a small web shop. Look orders up before \
acting on them, refund only what the customer paid, and tell the customer what you did.";

pub const ASK: &str = "Hi, this is Ada Lovelace. My usb-c cable arrived broken, please refund it. \
Also: is the standing desk order A1003 in stock, where is my cable parcel, and can I get a \
callback about it?";

/// Where the job's lines go: kept for the caller, and printed as they come when `echo`.
#[derive(Clone)]
pub struct Out {
    text: Arc<Mutex<String>>,
    echo: bool,
}

impl Out {
    pub fn new(echo: bool) -> Out {
        Out {
            text: Arc::new(Mutex::new(String::new())),
            echo,
        }
    }

    pub fn line(&self, line: impl AsRef<str>) {
        let line = line.as_ref();
        if self.echo {
            println!("{line}");
        }
        let mut text = self.text.lock().unwrap_or_else(|e| e.into_inner());
        text.push_str(line);
        text.push('\n');
    }

    pub fn text(&self) -> String {
        self.text.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

/// The support agent's conversation: it may refund, and a policy (or a person) approves.
pub fn support_session() -> (Session, Arc<RefundPolicy>) {
    let approvals = Arc::new(RefundPolicy {
        queue: ApprovalQueue::new(),
    });
    let session = Session::new("conv-7")
        .with_principal("agent:support")
        .with_scopes(["refunds:write"])
        .with_approver(Arc::clone(&approvals));
    (session, approvals)
}

/// What a run of the job came to.
pub struct Report {
    pub runs: Vec<Run>,
    pub stats: Stats,
    pub service: ServiceLog,
    pub output: String,
}

/// The whole job under `seed`: the service, both conversations, the summary.
pub async fn run(seed: u64, out: Out) -> Result<Report, Box<dyn std::error::Error>> {
    let service = Service::start(seed).await?;
    let registry = registry(&service.base, seed)?;
    header(&registry, &service, seed, &out);
    let (session, approvals) = support_session();
    let guest = Session::new("conv-8").with_principal("agent:guest");
    // The order the guest has open on screen: an id the application grounds itself.
    guest.ground("order", "A1001");

    let mut runs = Vec::new();
    let agent = agent(ScriptedModel::new(script()), registry.clone(), &out)?;
    out.line("\n== conversation conv-7 (scripted model)");
    out.line(format!("user: {ASK}"));
    runs.push(converse(&agent, &session, &approvals, ASK, &out).await);

    // Another conversation: a guest session may not refund.
    let model = ScriptedModel::new([
        Turn::calls([ToolCall::new(
            "call_21",
            "refund_order",
            r#"{"order_id":"A1001","amount":20}"#,
        )]),
        Turn::text("I'm sorry, refunds need a signed-in support agent; I have passed this on."),
    ]);
    let agent = self::agent(model, registry.clone(), &out)?;
    let ask = "Refund $20 on A1001, the order I have open.";
    out.line("\n== conversation conv-8 (scripted model, guest)");
    out.line(format!("user: {ask}"));
    runs.push(converse(&agent, &guest, &approvals, ask, &out).await);

    let stats = registry.stats();
    let log = service.log();
    summary(&runs, &stats, &log, &out);
    Ok(Report {
        runs,
        stats,
        service: log,
        output: out.text(),
    })
}

fn header(registry: &Registry, service: &Service, seed: u64, out: &Out) {
    out.line(format!(
        "toolwright support agent: {} tools",
        registry.specs().len()
    ));
    for spec in registry.specs() {
        out.line(format!(
            "  {:<18} timeout {:>5} ms  {:<14} {}",
            spec.name(),
            spec.timeout().as_millis(),
            if spec.read_only() {
                "read-only"
            } else if spec.idempotent() {
                "idempotent"
            } else {
                "side effects"
            },
            spec.description()
        ));
    }
    let s = service.schedule();
    out.line(format!(
        "\norder-and-payment service on loopback, fault schedule of seed {seed}:\n  \
         GET /orders #{}: 429 Retry-After 1 s; GET /orders/{{id}} #{}: 500, #{}: malformed 200 body; \
         GET /stock/{{item}} #{}: hangs 4 s;\n  GET /parcels/{{id}}: always 500; POST /refunds: \
         the first commits and answers 1.5 s late",
        s.search_429, s.order_500, s.order_malformed, s.stock_hang
    ));
}

/// The agent over a model: the shop's instructions, the error contract after them (the
/// default), room for the long scripted conversation.
pub fn agent(
    model: impl ChatModel,
    registry: Registry,
    out: &Out,
) -> Result<Agent, Box<dyn std::error::Error>> {
    let out = out.clone();
    Ok(Agent::builder(model, registry)
        .system(SYSTEM)
        .max_steps(24)
        .on_event(move |event| print_event(event, &out))
        .build()?)
}

/// Runs one conversation to its end; a refund waiting for a person is approved (by the
/// "person" below) and the run resumed, without repeating the calls that already ran.
pub async fn converse(
    agent: &Agent,
    session: &Session,
    approvals: &RefundPolicy,
    ask: &str,
    out: &Out,
) -> Run {
    let mut run = agent.run(session, vec![Message::user(ask)]).await;
    while let End::Pending { .. } = run.end() {
        for waiting in approvals.queue.waiting() {
            out.line(format!(
                "   (a person reviews {}: {} {}, and approves it)",
                waiting.ticket, waiting.tool, waiting.arguments
            ));
            approvals.queue.approve(&waiting.ticket);
        }
        run = agent.resume(session, run).await;
    }
    match run.end() {
        End::Final(text) => out.line(format!("\nassistant: {text}")),
        other => out.line(format!("\nthe run ended without an answer: {other:?}")),
    }
    run
}

/// What a call came to, in one word: its status, its `error_type`, or the fallback's reason.
pub fn label(outcome: &Outcome) -> String {
    match outcome.degraded_by() {
        Some(kind) => format!("fallback ({kind})"),
        None => outcome
            .error_kind()
            .map_or_else(|| outcome.status().to_string(), |k| k.to_string()),
    }
}

/// Every call as it ends: one line (tool, what it came to, attempts, latency), what the model
/// sent, the envelope it gets back, and each attempt of a retried call.
pub fn print_event(event: &AgentEvent<'_>, out: &Out) {
    let AgentEvent::ToolOutcome { call, outcome } = event else {
        return;
    };
    out.line(format!(
        "\n{} {:<17} {:<24} attempts {}  {} ms",
        call.id(),
        call.name(),
        label(outcome),
        outcome.attempts(),
        outcome.elapsed().as_millis()
    ));
    out.line(format!("-> {}", call.arguments()));
    out.line(format!("<- {}", without_schema(outcome)));
    if outcome.attempts() > 1 {
        for attempt in outcome.attempt_history() {
            out.line(format!(
                "   attempt {} after {} ms backoff: {}",
                attempt.number(),
                attempt.waited().as_millis(),
                attempt
                    .error()
                    .map_or("success".to_owned(), |k| k.to_string())
            ));
        }
    }
}

/// The envelope as the model sees it, minus `expected_schema` (it repeats the tool's schema,
/// which is long to print here).
pub fn without_schema(outcome: &Outcome) -> String {
    let mut envelope = outcome.to_model_json();
    if let Some(obj) = envelope.as_object_mut() {
        if obj.remove("expected_schema").is_some() {
            obj.insert(
                "expected_schema".into(),
                toolwright::serde_json::Value::String("{...}".into()),
            );
        }
    }
    envelope.to_string()
}

/// The calls by what they came to, the stats table, the breakers, the service's view.
fn summary(runs: &[Run], stats: &Stats, log: &ServiceLog, out: &Out) {
    let mut tally: BTreeMap<String, usize> = BTreeMap::new();
    let mut calls = 0;
    for outcome in runs.iter().flat_map(Run::outcomes) {
        calls += 1;
        *tally.entry(label(outcome)).or_default() += 1;
    }
    out.line(format!("\n{calls} calls, none crashed the agent:"));
    for (label, count) in &tally {
        out.line(format!("  {label:<24} {count}"));
    }
    out.line("\nstats (registry.stats()):");
    let mut table = String::new();
    let _ = write!(table, "{stats}");
    for line in table.lines() {
        out.line(line);
    }
    out.line("\nbreakers:");
    for tool in &stats.tools {
        if let Some(b) = tool.breaker.as_ref().filter(|b| b.openings > 0) {
            out.line(format!(
                "  {}: opened {} time(s), now {}; later calls got circuit_open and the fallback",
                tool.tool, b.openings, b.state
            ));
        }
    }
    let closed = stats
        .tools
        .iter()
        .filter(|t| t.breaker.as_ref().is_none_or(|b| b.openings == 0))
        .count();
    out.line(format!("  {closed} other breakers stayed closed"));
    let requests: Vec<String> = log
        .requests
        .iter()
        .map(|(endpoint, n)| format!("{endpoint} {n}"))
        .collect();
    out.line(format!("\nthe service saw: {}", requests.join(", ")));
    for (key, committed) in &log.refunds_committed {
        let sent = log.refund_requests.get(key).copied().unwrap_or(0);
        out.line(format!(
            "  refund {key}: {sent} request(s), committed {committed} time(s)"
        ));
    }
}

/// The scripted model's turns in conversation conv-7, one call each.
fn script() -> Vec<Turn> {
    let calls: &[(&str, &str, &str)] = &[
        ("call_01", "search_orders", r#"{"query":"ada"}"#),
        (
            "call_02",
            "search_orders",
            r#"{"query":"lamp","status":"shipped"}"#,
        ),
        ("call_03", "search_order", r#"{"query":"ada"}"#),
        (
            "call_04",
            "search_orders",
            r#"{"query":"ada","max_results":"2"}"#,
        ),
        (
            "call_05",
            "search_orders",
            r#"{"query":"","max_results":50}"#,
        ),
        (
            "call_06",
            "get_order",
            r#"{"order_id":"A1001","include_history":true}"#,
        ),
        ("call_07", "get_order", r#"{"order_id":"A1001""#),
        ("call_08", "get_order", r#"{"order_id":"A9999"}"#),
        (
            "call_09",
            "schedule_callback",
            r#"{"order_id":"A1002","earliest_hour":17,"latest_hour":9}"#,
        ),
        (
            "call_10",
            "refund_order",
            r#"{"order_id":"A1002","amount":12.5,"reason":"cable arrived broken"}"#,
        ),
        // The same call delivered again (a retried request): replayed, not refunded twice.
        (
            "call_10",
            "refund_order",
            r#"{"order_id":"A1002","amount":12.5,"reason":"cable arrived broken"}"#,
        ),
        ("call_11", "estimate_delivery", r#"{"order_id":"A1003"}"#),
        ("call_12", "get_order", r#"{"order_id":"A1003"}"#),
        ("call_13", "get_order", r#"{"order_id":"A1002"}"#),
        ("call_14", "check_stock", r#"{"item":"standing desk"}"#),
        ("call_15", "check_stock", r#"{"item":"usb-c cable"}"#),
        ("call_16", "track_parcel", r#"{"order_id":"A1002"}"#),
        ("call_17", "track_parcel", r#"{"order_id":"A1002"}"#),
        (
            "call_18",
            "refund_order",
            r#"{"order_id":"A1003","amount":499,"reason":"desk arrived damaged"}"#,
        ),
        (
            "call_19",
            "refund_order",
            r#"{"order_id":"A1009","amount":5}"#,
        ),
    ];
    let mut turns: Vec<Turn> = calls
        .iter()
        .map(|(id, name, arguments)| Turn::calls([ToolCall::new(*id, *name, *arguments)]))
        .collect();
    turns.push(Turn::text(
        "I refunded $12.50 for the broken cable (R-1002). The standing desk is in stock (2 left); \
         the carrier's tracking is down, and your cable parcel was last scanned at the Leipzig \
         hub. A callback needs a window that starts before it ends: when suits you?",
    ));
    turns
}
