//! The main job: a customer-support agent's tool set, run through the agent loop
//! (`toolwright::agent::Agent`), printing every model-facing envelope, the model's final answer
//! and a table of the steps.
//!
//! ```text
//! cargo run --example support_agent                       # a scripted model: no key, no network
//! cargo run --example support_agent --features agent -- --model openai:gpt-4.1-mini
//! cargo run --example support_agent --features agent -- --model openai:qwen2.5:7b --base-url http://127.0.0.1:11434/v1
//! ```
//!
//! By default the model is scripted: a fixed list of turns, the kind a real model produces on a
//! long day: correct calls, a hallucinated tool name, a number sent as a string, an
//! out-of-range and an over-long value in one call, an invented argument, truncated JSON, a
//! business rule broken, an id that does not exist, a call re-delivered, a tool that panics, a
//! flaky dependency retried, one that is down, answered by the tool's fallback, a refund too
//! large for the policy that waits for a person's approval (the run pauses, a person approves,
//! the run resumes), and an invented order id; then, in a guest's conversation, an action it
//! may not take. Each comes back to the model as an envelope it can act on; none crashes the
//! agent.
//!
//! With `--model PROVIDER:NAME` (`openai`, `responses`, `anthropic`, `gemini`; the `agent`
//! feature) the same tools run against a real model, streamed for `openai`. `--base-url`
//! points the OpenAI client at any OpenAI-compatible server (vLLM, llama.cpp's server,
//! Ollama); then strict function calling is off, which not all of them accept.

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use toolwright::agent::{Agent, AgentEvent, ChatModel, End, Message, Run, ScriptedModel, Turn};
use toolwright::approval::{Approval, ApprovalQueue, ApprovalRequest, Approver};
use toolwright::prelude::*;

/// One order in the shop's database.
#[toolwright::data]
#[derive(Debug, Clone)]
struct Order {
    id: String,
    customer: String,
    item: String,
    total: f64,
    status: String,
}

/// The shop's orders and the refunds issued, shared by the tools through `State<Shop>`.
struct Shop {
    orders: Vec<Order>,
    refunds: Mutex<HashMap<String, Refund>>,
}

/// A refund the payment system accepted.
#[toolwright::data(output)]
#[derive(Debug, Clone)]
struct Refund {
    refund_id: String,
    order_id: String,
    amount: f64,
    idempotency_key: String,
}

/// Search orders by customer name or item. Returns at most `max_results` orders, newest first.
#[tool(timeout_ms = 2000, read_only, grounds(order = "id"))]
async fn search_orders(
    shop: State<Shop>,
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
    let query = query.to_lowercase();
    Ok(shop
        .orders
        .iter()
        .filter(|o| {
            o.customer.to_lowercase().contains(&query) || o.item.to_lowercase().contains(&query)
        })
        .filter(|o| status.as_deref().is_none_or(|s| s == o.status))
        .take(max_results as usize)
        .cloned()
        .collect())
}

/// Fetch one order by its id (ids look like `A1001`).
#[tool(timeout_ms = 1000, read_only, grounds(order = "id"))]
async fn get_order(
    shop: State<Shop>,
    /// The order id, as returned by `search_orders`.
    #[arg(pattern = "^A[0-9]{4}$")]
    order_id: String,
) -> Result<Order, ToolError> {
    shop.orders
        .iter()
        .find(|o| o.id == order_id)
        .cloned()
        .ok_or_else(|| {
            ToolError::not_found(format!(
                "there is no order `{order_id}`; search for the customer's orders first"
            ))
        })
}

/// Refund part or all of an order. Each refund happens once, whatever the retries.
#[tool(
    timeout_ms = 8000,
    idempotent = false,
    scopes = ["refunds:write"],
    requires_approval
)]
async fn refund_order(
    key: IdempotencyKey,
    shop: State<Shop>,
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
    let _ = reason;
    let order = shop
        .orders
        .iter()
        .find(|o| o.id == order_id)
        .ok_or_else(|| ToolError::not_found(format!("there is no order `{order_id}`")))?;
    if amount > order.total {
        return Err(ToolError::invalid(format!(
            "`amount` {amount} is more than the order total {}; refund at most the total",
            order.total
        )));
    }
    let mut refunds = shop
        .refunds
        .lock()
        .map_err(|_| ToolError::unavailable("refund ledger unavailable"))?;
    let refund = refunds
        .entry(key.as_str().to_owned())
        .or_insert_with(|| Refund {
            refund_id: format!("R-{}", order_id.trim_start_matches('A')),
            order_id: order_id.clone(),
            amount,
            idempotency_key: key.to_string(),
        })
        .clone();
    Ok(refund)
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
    /// The item, as named in the order.
    #[arg(length(min = 1, max = 100))]
    item: String,
) -> Result<u32, ToolError> {
    // The warehouse API drops every other request with a 503: a read-only tool is retried
    // with jittered backoff, and the model never sees the first failure.
    static CALLS: AtomicU32 = AtomicU32::new(0);
    if CALLS.fetch_add(1, Ordering::Relaxed).is_multiple_of(2) {
        return Err(ToolError::from_status(
            503,
            "the warehouse API answered 503",
        ));
    }
    Ok(if item.contains("desk") { 2 } else { 40 })
}

/// Where a shipped order's parcel is now.
#[tool(timeout_ms = 1000, read_only, fallback = last_scan)]
async fn track_parcel(
    /// The shipped order.
    #[arg(pattern = "^A[0-9]{4}$")]
    order_id: String,
) -> Result<String, ToolError> {
    // The carrier's tracking API is down today: every request gets a 503.
    let _ = order_id;
    Err(ToolError::from_status(
        503,
        "the carrier's tracking API answered 503",
    ))
}

/// The fallback of `track_parcel`: the last scan the shop recorded, possibly hours old.
async fn last_scan(order_id: String) -> Result<String, ToolError> {
    Ok(format!("{order_id}: last scanned at the Leipzig hub"))
}

/// Who approves refunds: up to $50 by policy, anything larger by a person (the queue).
struct RefundPolicy {
    queue: ApprovalQueue,
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

fn shop() -> Shop {
    let order = |id: &str, customer: &str, item: &str, total: f64, status: &str| Order {
        id: id.into(),
        customer: customer.into(),
        item: item.into(),
        total,
        status: status.into(),
    };
    Shop {
        orders: vec![
            order(
                "A1001",
                "Ada Lovelace",
                "mechanical keyboard",
                129.0,
                "delivered",
            ),
            order("A1002", "Ada Lovelace", "usb-c cable", 12.5, "shipped"),
            order("A1003", "Grace Hopper", "standing desk", 499.0, "placed"),
        ],
        refunds: Mutex::new(HashMap::new()),
    }
}

const SYSTEM: &str = "You are the support agent of a small web shop. Look orders up before \
acting on them, refund only what the customer paid, and tell the customer what you did.";

const ASK: &str = "Hi, this is Ada Lovelace. My usb-c cable arrived broken, please refund it. \
Also: is the standing desk order A1003 in stock, where is my cable parcel, and can I get a \
callback about it?";

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // One line per contained panic instead of the default hook's report.
    std::panic::set_hook(Box::new(|info| {
        eprintln!("   (tool panic contained: {info})")
    }));

    let registry = Registry::collected().state(shop()).build()?;
    let approvals = Arc::new(RefundPolicy {
        queue: ApprovalQueue::new(),
    });
    let session = Session::new("conv-7")
        .with_principal("agent:support")
        .with_scopes(["refunds:write"])
        .with_approver(Arc::clone(&approvals));
    let guest = Session::new("conv-8").with_principal("agent:guest");
    // The order the guest has open on screen: an id the application grounds itself.
    guest.ground("order", "A1001");

    println!("toolwright support agent: {} tools", registry.specs().len());
    for spec in registry.specs() {
        println!(
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
        );
    }

    let args: Vec<String> = std::env::args().skip(1).collect();
    let flag = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1).cloned())
    };
    if let Some(model) = flag("--model") {
        return live::run(&model, flag("--base-url"), registry, &session, &approvals).await;
    }

    let mut runs = Vec::new();
    let model = ScriptedModel::new(script());
    let agent = agent(model, registry.clone())?;
    println!("\n== conversation conv-7 (scripted model)");
    println!("user: {ASK}");
    runs.push(converse(&agent, &session, &approvals, ASK).await);

    // Another conversation: a guest session may not refund.
    let model = ScriptedModel::new([
        Turn::calls([ToolCall::new(
            "call_11",
            "refund_order",
            r#"{"order_id":"A1001","amount":20}"#,
        )]),
        Turn::text("I'm sorry, refunds need a signed-in support agent; I have passed this on."),
    ]);
    let agent = self::agent(model, registry)?;
    let ask = "Refund $20 on A1001, the order I have open.";
    println!("\n== conversation conv-8 (scripted model, guest)");
    println!("user: {ask}");
    runs.push(converse(&agent, &guest, &approvals, ask).await);

    let mut tally: BTreeMap<String, usize> = BTreeMap::new();
    let mut calls = 0;
    for outcome in runs.iter().flat_map(Run::outcomes) {
        calls += 1;
        let label = match outcome.degraded_by() {
            Some(kind) => format!("fallback ({kind})"),
            None => outcome
                .error_kind()
                .map_or_else(|| outcome.status().to_string(), |k| k.to_string()),
        };
        *tally.entry(label).or_default() += 1;
    }
    println!("\n{calls} calls, none crashed the agent:");
    for (label, count) in &tally {
        println!("  {label:<24} {count}");
    }
    Ok(())
}

/// The agent over a model: the shop's instructions, the error contract after them (the
/// default), room for the long scripted conversation.
fn agent(model: impl ChatModel, registry: Registry) -> Result<Agent, Box<dyn std::error::Error>> {
    Ok(Agent::builder(model, registry)
        .system(SYSTEM)
        .max_steps(24)
        .on_event(print_event)
        .build()?)
}

/// Runs one conversation to its end; a refund waiting for a person is approved (by the
/// "person" below) and the run resumed, without repeating the calls that already ran.
async fn converse(agent: &Agent, session: &Session, approvals: &RefundPolicy, ask: &str) -> Run {
    let mut run = agent.run(session, vec![Message::user(ask)]).await;
    while let End::Pending { .. } = run.end() {
        for waiting in approvals.queue.waiting() {
            println!(
                "   (a person reviews {}: {} {}, and approves it)",
                waiting.ticket, waiting.tool, waiting.arguments
            );
            approvals.queue.approve(&waiting.ticket);
        }
        run = agent.resume(session, run).await;
    }
    match run.end() {
        End::Final(text) => println!("\nassistant: {text}"),
        other => println!("\nthe run ended without an answer: {other:?}"),
    }
    print_steps(&run);
    run
}

/// Every call as it finishes: what the model sent, the envelope it gets back, the attempts.
fn print_event(event: &AgentEvent<'_>) {
    let AgentEvent::ToolOutcome { call, outcome } = event else {
        return;
    };
    println!("\n-> {} {} {}", call.id(), call.name(), call.arguments());
    println!("<- {}", outcome.to_model_string_without_schema());
    if outcome.attempts() > 1 {
        for attempt in outcome.attempt_history() {
            println!(
                "   attempt {} after {:>3} ms backoff: {}",
                attempt.number(),
                attempt.waited().as_millis(),
                attempt
                    .error()
                    .map_or("success".to_owned(), |k| k.to_string())
            );
        }
    }
}

/// One line per step: its calls, what they came to, the time and tokens.
fn print_steps(run: &Run) {
    println!(
        "\n  step  calls                        outcomes                          model ms  tools ms  tokens"
    );
    for step in run.steps() {
        let calls: Vec<&str> = step.calls.iter().map(|c| c.name()).collect();
        let outcomes: Vec<String> = step
            .outcomes
            .iter()
            .map(|o| match o.degraded_by() {
                Some(_) => "fallback".to_owned(),
                None => o
                    .error_kind()
                    .map_or_else(|| o.status().to_string(), |k| k.to_string()),
            })
            .collect();
        let calls = if calls.is_empty() {
            "(answer)".to_owned()
        } else {
            calls.join(",")
        };
        println!(
            "  {:>4}  {:<28} {:<33} {:>8} {:>9}  {}",
            step.number,
            calls,
            outcomes.join(","),
            step.model_time.as_millis(),
            step.tool_time.as_millis(),
            step.usage
                .map_or_else(|| "-".to_owned(), |u| u.total().to_string())
        );
    }
    let usage = run.usage();
    if usage.total() > 0 {
        println!(
            "  tokens: {} in, {} out",
            usage.input_tokens, usage.output_tokens
        );
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
        ("call_12", "estimate_delivery", r#"{"order_id":"A1003"}"#),
        ("call_13", "get_order", r#"{"order_id":"A1003"}"#),
        ("call_14", "check_stock", r#"{"item":"standing desk"}"#),
        ("call_15", "track_parcel", r#"{"order_id":"A1002"}"#),
        (
            "call_16",
            "refund_order",
            r#"{"order_id":"A1003","amount":499,"reason":"desk arrived damaged"}"#,
        ),
        (
            "call_17",
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
         your cable parcel was last scanned at the Leipzig hub. A callback needs a window that \
         starts before it ends: when suits you?",
    ));
    turns
}

/// A real model (the `agent` feature).
#[cfg(feature = "agent")]
mod live {
    use super::*;
    use toolwright::agent::http::{AnthropicMessages, GeminiGenerate, OpenAiChat, OpenAiResponses};

    pub async fn run(
        spec: &str,
        base_url: Option<String>,
        registry: Registry,
        session: &Session,
        approvals: &RefundPolicy,
    ) -> Result<(), Box<dyn std::error::Error>> {
        let (provider, name) = spec
            .split_once(':')
            .ok_or("--model takes PROVIDER:NAME, e.g. openai:gpt-4.1-mini")?;
        let agent = match provider {
            "openai" => {
                let mut client = OpenAiChat::new(name).streaming(true);
                if let Some(url) = &base_url {
                    // Not every OpenAI-compatible server accepts strict function calling.
                    client = client.base_url(url.clone()).strict(false);
                }
                live_agent(client, registry)?
            }
            "responses" => {
                let mut client = OpenAiResponses::new(name);
                if let Some(url) = &base_url {
                    client = client.base_url(url.clone()).strict(false);
                }
                live_agent(client, registry)?
            }
            "anthropic" => live_agent(AnthropicMessages::new(name), registry)?,
            "gemini" => live_agent(GeminiGenerate::new(name), registry)?,
            other => {
                return Err(format!(
                    "unknown provider `{other}`: use openai, responses, anthropic or gemini"
                )
                .into())
            }
        };
        println!("\n== conversation conv-7 ({spec})");
        println!("user: {ASK}");
        converse(&agent, session, approvals, ASK).await;
        Ok(())
    }

    fn live_agent(
        model: impl ChatModel,
        registry: Registry,
    ) -> Result<Agent, Box<dyn std::error::Error>> {
        Ok(Agent::builder(model, registry)
            .system(SYSTEM)
            .max_steps(12)
            .on_event(|event| match event {
                AgentEvent::TextDelta(text) => {
                    use std::io::Write;
                    print!("{text}");
                    let _ = std::io::stdout().flush();
                }
                AgentEvent::ModelRetry { error, wait } => {
                    println!("\n   (model request failed: {error}; retrying in {wait:?})")
                }
                other => print_event(other),
            })
            .build()?)
    }
}

#[cfg(not(feature = "agent"))]
mod live {
    use super::*;

    pub async fn run(
        _: &str,
        _: Option<String>,
        _: Registry,
        _: &Session,
        _: &RefundPolicy,
    ) -> Result<(), Box<dyn std::error::Error>> {
        Err("--model needs the HTTP clients: cargo run --example support_agent --features agent -- --model ...".into())
    }
}

/// The envelope as the model sees it, minus `expected_schema` (it repeats the tool's schema,
/// which is long to print here).
trait Printable {
    fn to_model_string_without_schema(&self) -> String;
}

impl Printable for Outcome {
    fn to_model_string_without_schema(&self) -> String {
        let mut envelope = self.to_model_json();
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
}
