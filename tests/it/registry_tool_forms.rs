//! The forms `#[tool]` takes besides `async fn .. -> Result<T, E>`, end to end through
//! `Registry::call`: plain return types (`T`, `Option<T>`, `()`), sync functions (on the blocking
//! pool, or inline), and methods of a `#[toolset]` impl sharing one instance.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread::ThreadId;
use std::time::Duration;

use serde_json::{json, Value};
use toolwright::prelude::*;
use toolwright::providers::Provider;
use toolwright::toolset;

// ---------------------------------------------------------------------------------------------
// Plain return types

#[allow(missing_docs)] // a doc comment would become the schema's description
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct Order {
    pub id: String,
    pub total: f64,
}

/// Add two numbers.
#[tool(read_only)]
async fn add(a: i64, b: i64) -> i64 {
    a + b
}

/// Look an order up; nothing when there is no such order.
#[tool(read_only)]
async fn find_order(order_id: String) -> Option<Order> {
    let found = order_id == "A1";
    found.then_some(Order {
        id: order_id,
        total: 12.5,
    })
}

/// Forget the cached orders.
#[tool(idempotent = true)]
async fn clear_cache() {}

/// Say the order was received.
#[tool(idempotent = true)]
#[allow(clippy::unused_unit)] // `-> ()` written out is the form under test.
async fn acknowledge(order_id: String) -> () {
    let _ = order_id;
}

async fn call(registry: &Registry, name: &str, args: Value) -> Outcome {
    registry
        .call(ToolCall::new("c1", name, args.to_string()))
        .await
}

fn plain_registry() -> Registry {
    Registry::builder()
        .tool(Add)
        .tool(FindOrder)
        .tool(ClearCache)
        .tool(Acknowledge)
        .build()
        .unwrap_or_else(|e| panic!("{e}"))
}

#[tokio::test]
async fn a_plain_value_is_a_success_with_that_value() {
    let registry = plain_registry();
    let outcome = call(&registry, "add", json!({"a": 2, "b": 40})).await;
    assert_eq!(outcome.status(), Status::Success);
    assert_eq!(outcome.to_model_json()["data"], json!(42));
    let schema = registry.spec("add").map(|s| s.output_schema().clone());
    assert_eq!(schema, Some(json!({"type": "integer", "format": "int64"})));
}

#[tokio::test]
async fn an_option_is_a_success_when_some_and_empty_when_none() {
    let registry = plain_registry();
    let found = call(&registry, "find_order", json!({"order_id": "A1"})).await;
    assert_eq!(found.status(), Status::Success);
    assert_eq!(
        found.data_as::<Order>(),
        Some(Order {
            id: "A1".into(),
            total: 12.5
        })
    );
    let missing = call(&registry, "find_order", json!({"order_id": "Z9"})).await;
    assert_eq!(missing.status(), Status::Empty);
    assert_eq!(missing.to_model_json()["status"], "empty");
    // The output schema says the result may be null, and what it is otherwise.
    let schema = registry
        .spec("find_order")
        .map(|s| s.output_schema().clone())
        .unwrap_or_default();
    let text = schema.to_string();
    assert!(text.contains("\"null\""), "{text}");
    assert!(text.contains("\"total\""), "{text}");
}

#[tokio::test]
async fn unit_with_or_without_the_arrow_is_a_success_without_data() {
    let registry = plain_registry();
    for (name, args) in [
        ("clear_cache", json!({})),
        ("acknowledge", json!({"order_id": "A1"})),
    ] {
        let outcome = call(&registry, name, args).await;
        assert_eq!(outcome.status(), Status::Success, "{name}");
        assert_eq!(outcome.error_kind(), None, "{name}");
        assert_eq!(
            registry.spec(name).map(|s| s.output_schema().clone()),
            Some(json!({"type": "null"})),
            "{name}"
        );
    }
}

#[tokio::test]
async fn a_plain_tool_still_validates_its_arguments() {
    let registry = plain_registry();
    let outcome = call(&registry, "add", json!({"a": 2, "b": "forty"})).await;
    assert_eq!(outcome.error_kind(), Some(ErrorKind::SchemaMismatch));
}

// ---------------------------------------------------------------------------------------------
// Sync functions

/// Which thread ran the tool.
#[tool(read_only)]
fn thread_of_blocking() -> String {
    format!("{:?}", std::thread::current().id())
}

/// Which thread ran the tool, inline.
#[tool(read_only, blocking = false)]
fn thread_of_inline() -> String {
    format!("{:?}", std::thread::current().id())
}

fn current_thread() -> String {
    let id: ThreadId = std::thread::current().id();
    format!("{id:?}")
}

#[tokio::test]
async fn a_sync_fn_runs_on_the_blocking_pool_and_an_inline_one_on_the_calling_task() {
    let registry = Registry::builder()
        .tool(ThreadOfBlocking)
        .tool(ThreadOfInline)
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    // A current-thread runtime: every task runs on this thread, the blocking pool elsewhere.
    let here = current_thread();
    let blocking = call(&registry, "thread_of_blocking", json!({})).await;
    let inline = call(&registry, "thread_of_inline", json!({})).await;
    assert_eq!(blocking.status(), Status::Success);
    assert_ne!(blocking.data_as::<String>(), Some(here.clone()));
    assert_eq!(inline.data_as::<String>(), Some(here));
}

/// Where the sync tool is held, and what it reports when it finishes.
struct Gate {
    release: Mutex<mpsc::Receiver<()>>,
    finished: Mutex<mpsc::Sender<&'static str>>,
}

/// Wait at the gate, then report.
#[tool(timeout_ms = 1000)]
fn wait_at_gate(gate: State<Gate>, key: IdempotencyKey) -> Result<String, ToolError> {
    let _ = key;
    let released = gate
        .release
        .lock()
        .map_err(|_| ToolError::unavailable("gate poisoned"))?
        .recv_timeout(Duration::from_secs(60));
    let _ = gate
        .finished
        .lock()
        .map_err(|_| ToolError::unavailable("gate poisoned"))?
        .send(if released.is_ok() {
            "ran to its end"
        } else {
            "gave up"
        });
    Ok("done".into())
}

#[tokio::test(start_paused = true)]
async fn past_the_timeout_the_caller_stops_waiting_and_the_thread_runs_to_its_end() {
    let (release, gate_release) = mpsc::channel();
    let (gate_finished, finished) = mpsc::channel();
    let registry = Registry::builder()
        .tool(WaitAtGate)
        .state(Gate {
            release: Mutex::new(gate_release),
            finished: Mutex::new(gate_finished),
        })
        .retry_policy(toolwright::execute::RetryPolicy::new().max_attempts(1))
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let pending = {
        let registry = registry.clone();
        tokio::spawn(async move { call(&registry, "wait_at_gate", json!({})).await })
    };
    // The thread is blocked at the gate; paused time moves past the tool's 1 s timeout.
    tokio::task::yield_now().await;
    tokio::time::advance(Duration::from_millis(1001)).await;
    let outcome = pending.await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(outcome.error_kind(), Some(ErrorKind::Timeout));
    assert!(
        outcome.message().unwrap_or_default().contains("1000 ms"),
        "{:?}",
        outcome.message()
    );
    // Nothing stopped the thread: released now, it finishes what it started.
    assert!(finished.try_recv().is_err(), "the thread finished early");
    release.send(()).unwrap_or_else(|e| panic!("{e}"));
    let end = tokio::task::spawn_blocking(move || finished.recv_timeout(Duration::from_secs(60)))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(end.ok(), Some("ran to its end"));
}

/// Divide, badly.
#[tool(read_only)]
fn divide(a: u32, b: u32) -> u32 {
    if b == 0 {
        panic!("attempt to divide by zero, on purpose");
    }
    a / b
}

/// Divide inline, badly.
#[tool(read_only, blocking = false)]
fn divide_inline(a: u32, b: u32) -> u32 {
    if b == 0 {
        panic!("attempt to divide by zero, on purpose");
    }
    a / b
}

#[tokio::test]
async fn a_panicking_sync_tool_is_contained_like_an_async_one() {
    let registry = Registry::builder()
        .tool(Divide)
        .tool(DivideInline)
        .retry_policy(toolwright::execute::RetryPolicy::new().max_attempts(1))
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    for name in ["divide", "divide_inline"] {
        let outcome = call(&registry, name, json!({"a": 1, "b": 0})).await;
        assert_eq!(
            outcome.error_kind(),
            Some(ErrorKind::ToolPanicked),
            "{name}"
        );
        assert_eq!(outcome.to_model_json()["error_type"], "tool_panicked");
        // The registry and its threads keep serving.
        let next = call(&registry, name, json!({"a": 9, "b": 3})).await;
        assert_eq!(next.data_as::<u32>(), Some(3), "{name}");
    }
}

// ---------------------------------------------------------------------------------------------
// Methods

/// Where order data comes from.
trait Db: Send + Sync + 'static {
    fn total(&self, order_id: &str) -> Option<f64>;
}

struct Fixed(f64);

impl Db for Fixed {
    fn total(&self, order_id: &str) -> Option<f64> {
        (order_id != "missing").then_some(self.0)
    }
}

/// A service holding its client and counting its calls: its tools are methods.
struct Orders<D: Db> {
    db: D,
    calls: AtomicUsize,
    /// The address of `self` as each call saw it.
    seen_at: Mutex<Vec<usize>>,
}

impl<D: Db> Orders<D> {
    fn new(db: D) -> Self {
        Orders {
            db,
            calls: AtomicUsize::new(0),
            seen_at: Mutex::new(Vec::new()),
        }
    }

    fn saw(&self) {
        self.calls.fetch_add(1, Ordering::SeqCst);
        if let Ok(mut seen) = self.seen_at.lock() {
            seen.push(self as *const Self as usize);
        }
    }
}

/// The currency amounts are in.
struct Currency(&'static str);

#[toolset]
impl<D: Db> Orders<D> {
    /// Look up an order's total.
    #[tool(read_only, timeout_ms = 2000, grounds(order = "id"))]
    async fn get_order(
        &self,
        /// The order id.
        #[arg(pattern = "^[A-Z][0-9]+$")]
        order_id: String,
    ) -> Result<Order, ToolError> {
        self.saw();
        match self.db.total(&order_id) {
            Some(total) => Ok(Order {
                id: order_id,
                total,
            }),
            None => Err(ToolError::not_found(format!("no order {order_id}"))),
        }
    }

    /// Refund part of an order.
    #[tool(retries = 2, validate = Self::refund_rule, authorize = Self::may_refund)]
    async fn refund(
        &self,
        key: IdempotencyKey,
        context: ToolContext,
        currency: State<Currency>,
        /// An order a tool returned.
        #[arg(grounded = "order")]
        order_id: String,
        /// How much.
        #[arg(range(min = 0.01, max = 500.0), validate = Self::whole_cents)]
        amount: f64,
    ) -> Result<String, ToolError> {
        self.saw();
        Ok(format!(
            "{} {amount} {} on {order_id} (key {}, attempt {})",
            "refunded",
            currency.0 .0,
            key.as_str().len(),
            context.attempt()
        ))
    }

    /// Count the calls so far (sync, on the blocking pool).
    #[tool(read_only)]
    fn call_count(&self) -> usize {
        self.saw();
        self.calls.load(Ordering::SeqCst)
    }

    /// Today's rate, with a fallback.
    #[tool(read_only, fallback = Self::last_rate)]
    async fn rate(&self, currency: String) -> Result<f64, ToolError> {
        self.saw();
        Err(ToolError::unavailable(format!("no feed for {currency}")))
    }

    async fn last_rate(&self, currency: String) -> Result<f64, ToolError> {
        Ok(if currency == "EUR" { 1.08 } else { 1.0 })
    }

    /// The version of the service: a tool without `self`.
    #[tool(read_only, name = "service_version")]
    fn version() -> &'static str {
        "1.0"
    }

    fn refund_rule(args: &RefundArgs) -> Result<(), ToolError> {
        if args.order_id.starts_with('X') {
            return Err(ToolError::invalid(
                "orders starting with X cannot be refunded",
            ));
        }
        Ok(())
    }

    fn may_refund(_: &RefundArgs, session: &Session) -> Result<(), ToolError> {
        if session.principal() == Some("mallory") {
            return Err(ToolError::unauthorized("mallory may not refund"));
        }
        Ok(())
    }

    fn whole_cents(amount: &f64) -> Result<(), String> {
        let cents = amount * 100.0;
        if (cents - cents.round()).abs() > 1e-6 {
            return Err(format!("{amount} is not a whole number of cents"));
        }
        Ok(())
    }
}

fn orders_registry(orders: Arc<Orders<Fixed>>) -> Registry {
    Registry::builder()
        .toolset_shared(orders)
        .state(Currency("EUR"))
        .build()
        .unwrap_or_else(|e| panic!("{e}"))
}

#[tokio::test]
async fn every_method_of_a_toolset_is_registered_and_shares_one_instance() {
    let orders = Arc::new(Orders::new(Fixed(30.0)));
    let registry = orders_registry(Arc::clone(&orders));
    assert_eq!(
        registry.names(),
        [
            "call_count",
            "get_order",
            "rate",
            "refund",
            "service_version"
        ]
    );
    // Five tools, each holding a clone of the one `Arc`; the value was never copied.
    assert_eq!(Arc::strong_count(&orders), 1 + 5);
    for args in [json!({"order_id": "A1"}), json!({"order_id": "B2"})] {
        let outcome = call(&registry, "get_order", args).await;
        assert_eq!(outcome.status(), Status::Success);
    }
    let count = call(&registry, "call_count", json!({})).await;
    assert_eq!(count.data_as::<usize>(), Some(3));
    assert_eq!(orders.calls.load(Ordering::SeqCst), 3);
    let address = Arc::as_ptr(&orders) as usize;
    let seen = orders.seen_at.lock().map(|s| s.clone()).unwrap_or_default();
    assert_eq!(seen, vec![address; 3]);
    drop(registry);
    assert_eq!(Arc::strong_count(&orders), 1);
}

#[tokio::test]
async fn a_method_tool_goes_through_every_seam() {
    let orders = Arc::new(Orders::new(Fixed(30.0)));
    let registry = orders_registry(Arc::clone(&orders));
    let session = Session::new("conv-1");
    let refund = |args: Value| ToolCall::new("r1", "refund", args.to_string());

    // Shape and field rules, including a rule that is a method of the impl.
    let bad = registry
        .call(ToolCall::new("g0", "get_order", r#"{"order_id":"a1"}"#))
        .await;
    assert_eq!(bad.error_kind(), Some(ErrorKind::SchemaMismatch));
    let cents = registry
        .call_in(&session, refund(json!({"order_id": "A1", "amount": 1.234})))
        .await;
    assert_eq!(cents.error_kind(), Some(ErrorKind::SchemaMismatch));
    assert!(
        cents
            .message()
            .unwrap_or_default()
            .contains("whole number of cents"),
        "{:?}",
        cents.message()
    );
    // Provenance: the order id must come from a tool first.
    let ungrounded = registry
        .call_in(&session, refund(json!({"order_id": "A1", "amount": 5.0})))
        .await;
    assert_eq!(
        ungrounded.error_kind(),
        Some(ErrorKind::UngroundedIdentifier)
    );
    let found = registry
        .call_in(
            &session,
            ToolCall::new("g1", "get_order", r#"{"order_id":"A1"}"#),
        )
        .await;
    assert_eq!(found.status(), Status::Success);
    // Semantic rule and authorization, both methods of the impl.
    session.ground("order", "X1");
    let semantic = registry
        .call_in(&session, refund(json!({"order_id": "X1", "amount": 5.0})))
        .await;
    assert_eq!(semantic.error_kind(), Some(ErrorKind::SemanticInvalid));
    let mallory = Session::new("conv-2").with_principal("mallory");
    mallory.ground("order", "A1");
    let refused = registry
        .call_in(&mallory, refund(json!({"order_id": "A1", "amount": 5.0})))
        .await;
    assert_eq!(refused.error_kind(), Some(ErrorKind::Unauthorized));
    // Injected parameters: the key, the context and the state.
    let done = registry
        .call_in(&session, refund(json!({"order_id": "A1", "amount": 5.0})))
        .await;
    assert_eq!(done.status(), Status::Success, "{:?}", done.message());
    let text = done.data_as::<String>().unwrap_or_default();
    assert!(text.starts_with("refunded 5 EUR on A1 (key "), "{text}");
    assert!(text.ends_with("attempt 1)"), "{text}");
    // The same call again is answered from the idempotency store, not run twice.
    let calls = orders.calls.load(Ordering::SeqCst);
    let again = registry
        .call_in(&session, refund(json!({"order_id": "A1", "amount": 5.0})))
        .await;
    assert!(again.is_replayed());
    assert_eq!(orders.calls.load(Ordering::SeqCst), calls);
    // Execution: a not_found from the body, classified.
    let not_found = Registry::builder()
        .toolset(Orders::new(NoOrders))
        .state(Currency("EUR"))
        .build()
        .unwrap_or_else(|e| panic!("{e}"))
        .call(ToolCall::new("g3", "get_order", r#"{"order_id":"A1"}"#))
        .await;
    assert_eq!(not_found.error_kind(), Some(ErrorKind::NotFound));
}

struct NoOrders;

impl Db for NoOrders {
    fn total(&self, _: &str) -> Option<f64> {
        None
    }
}

#[tokio::test(start_paused = true)]
async fn a_method_fallback_is_a_method_of_the_same_instance() {
    let registry = orders_registry(Arc::new(Orders::new(Fixed(1.0))));
    let outcome = call(&registry, "rate", json!({"currency": "EUR"})).await;
    assert!(outcome.is_degraded());
    assert_eq!(outcome.data_as::<f64>(), Some(1.08));
}

#[tokio::test]
async fn a_toolset_without_its_state_does_not_build() {
    let error = Registry::builder()
        .toolset(Orders::new(Fixed(1.0)))
        .build()
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(error.contains("refund"), "{error}");
    assert!(error.contains("Currency"), "{error}");
}

#[tokio::test]
async fn a_toolset_method_and_a_free_function_of_one_name_collide() {
    let error = Registry::builder()
        .toolset(Orders::new(Fixed(1.0)))
        .state(Currency("EUR"))
        .tool(twin::GetOrder)
        .build()
        .err();
    assert_eq!(
        error,
        Some(toolwright::BuildError::DuplicateTool("get_order".into()))
    );
}

/// The free-function twin of `Orders::get_order`, declared alike.
mod twin {
    use super::*;

    /// Look up an order's total.
    #[tool(read_only, timeout_ms = 2000, grounds(order = "id"))]
    pub async fn get_order(
        /// The order id.
        #[arg(pattern = "^[A-Z][0-9]+$")]
        order_id: String,
    ) -> Result<Order, ToolError> {
        Ok(Order {
            id: order_id,
            total: 0.0,
        })
    }
}

#[tokio::test]
async fn a_method_tool_exports_exactly_as_its_free_function_twin() {
    let method = Registry::builder()
        .tool(GetOrder(Arc::new(Orders::new(Fixed(1.0)))))
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let free = Registry::builder()
        .tool(twin::GetOrder)
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    for provider in Provider::ALL {
        let (a, b) = (method.export(*provider), free.export(*provider));
        assert!(a.is_ok(), "{provider:?}: {a:?}");
        assert_eq!(a.ok(), b.ok(), "{provider:?}");
    }
    assert_eq!(
        method.spec("get_order").map(|s| s.output_schema()),
        free.spec("get_order").map(|s| s.output_schema())
    );
}

// ---------------------------------------------------------------------------------------------
// Shared state, read back by a test

/// Reminders a tool has sent, as a fake mail service keeps them.
#[derive(Default)]
struct Outbox {
    sent: Mutex<Vec<String>>,
}

/// Send a reminder.
#[tool(idempotent = true)]
async fn send_reminder(to: String, outbox: State<Outbox>) -> Result<String, ToolError> {
    outbox
        .sent
        .lock()
        .map_err(|_| ToolError::unavailable("outbox poisoned"))?
        .push(to.clone());
    Ok(format!("sent to {to}"))
}

#[tokio::test]
async fn the_registry_hands_back_the_state_its_tools_wrote_to() {
    let registry = Registry::builder()
        .tool(SendReminder)
        .state(Outbox::default())
        .build()
        .unwrap();
    let first = ToolCall::new("c1", "send_reminder", r#"{"to":"ada@example.com"}"#);
    let outcome = registry.call(first).await;
    assert_eq!(outcome.status(), Status::Success);

    let outbox: State<Outbox> = registry.state::<Outbox>().expect("the registry's Outbox");
    assert_eq!(*outbox.sent.lock().unwrap(), ["ada@example.com"]);
    // The same value, not a copy: what the test writes the next call sees.
    outbox.sent.lock().unwrap().clear();
    let second = ToolCall::new("c2", "send_reminder", r#"{"to":"bo@example.com"}"#);
    assert_eq!(registry.call(second).await.status(), Status::Success);
    assert_eq!(
        *registry.state::<Outbox>().unwrap().sent.lock().unwrap(),
        ["bo@example.com"]
    );
    assert!(Arc::ptr_eq(
        &outbox.0,
        &registry.state::<Outbox>().unwrap().0
    ));
    assert!(registry.state::<String>().is_none(), "a type never given");
}
