//! The 22 tools of the replay corpus: a support desk's tools of different shapes (nested
//! objects, enums, arrays, optional fields and defaults, bounds, patterns, grounded ids), and
//! the registry and sessions the corpus is recorded and replayed with.
//!
//! Each tool is a deterministic test double: its answer depends only on its arguments, and a
//! few arguments make it fail on purpose (a report of a whole year times out, `SKU-9999` is
//! throttled, postcode `99999` is unreachable, ...) so every `error_type` occurs.

#![allow(dead_code)] // each binary that includes this module uses part of it

use std::sync::Arc;
use std::time::Duration;

use toolwright::approval::{Approval, ApprovalRequest};
use toolwright::execute::{BreakerPolicy, SeededRandom};
use toolwright::prelude::*;
use toolwright::repair::{DeterministicRepair, Repairer};

/// An order's state.
#[data]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum OrderStatus {
    Placed,
    Shipped,
    Delivered,
}

/// One order.
#[data(output)]
pub struct Order {
    id: &'static str,
    customer: &'static str,
    item: &'static str,
    total: f64,
    status: OrderStatus,
}

const ORDERS: &[(&str, &str, &str, f64, OrderStatus)] = &[
    ("A1001", "Ada Lovelace", "lamp", 39.0, OrderStatus::Shipped),
    (
        "A1002",
        "Grace Hopper",
        "usb cable",
        12.5,
        OrderStatus::Placed,
    ),
    (
        "A1003",
        "Alan Turing",
        "standing desk",
        499.0,
        OrderStatus::Delivered,
    ),
    (
        "A1004",
        "Edsger Dijkstra",
        "chair",
        149.0,
        OrderStatus::Placed,
    ),
    (
        "A1005",
        "Barbara Liskov",
        "monitor",
        229.0,
        OrderStatus::Shipped,
    ),
    (
        "A1006",
        "Ada Lovelace",
        "desk mat",
        19.0,
        OrderStatus::Delivered,
    ),
];

/// The customers: id, name, email.
pub const CUSTOMERS: &[(&str, &str, &str)] = &[
    ("C10001", "Ada Lovelace", "ada@example.com"),
    ("C10002", "Grace Hopper", "grace@example.com"),
    ("C10003", "Alan Turing", "alan@example.com"),
    ("C10004", "Edsger Dijkstra", "edsger@example.com"),
    ("C10005", "Barbara Liskov", "barbara@example.com"),
];

/// The order ids of a customer.
pub fn orders_of(customer: &str) -> Vec<&'static str> {
    ORDERS
        .iter()
        .filter(|o| o.1 == customer)
        .map(|o| o.0)
        .collect()
}

fn order(row: &(&'static str, &'static str, &'static str, f64, OrderStatus)) -> Order {
    Order {
        id: row.0,
        customer: row.1,
        item: row.2,
        total: row.3,
        status: row.4,
    }
}

/// Search orders by customer name or item. Returns at most `max_results` orders.
#[tool(read_only, timeout_ms = 2000, grounds(order = "id"))]
pub async fn search_orders(
    /// Words to look for in the customer name or the item.
    #[arg(length(min = 1, max = 200))]
    query: String,
    /// Only orders in this state.
    status: Option<OrderStatus>,
    /// How many orders to return.
    #[arg(range(min = 1, max = 20), default = 5)]
    max_results: u32,
) -> Result<Vec<Order>, ToolError> {
    let query = query.to_lowercase();
    Ok(ORDERS
        .iter()
        .filter(|o| o.1.to_lowercase().contains(&query) || o.2.to_lowercase().contains(&query))
        .filter(|o| status.is_none_or(|s| s == o.4))
        .take(max_results as usize)
        .map(order)
        .collect())
}

/// Fetch one order by its id.
#[tool(read_only, timeout_ms = 1000, grounds(order = "id"))]
pub async fn get_order(
    /// The order id, as returned by `search_orders`.
    #[arg(pattern = "^A[0-9]{4}$", grounded = "order")]
    order_id: String,
) -> Result<Order, ToolError> {
    ORDERS
        .iter()
        .find(|o| o.0 == order_id)
        .map(order)
        .ok_or_else(|| ToolError::not_found(format!("no order {order_id}")))
}

/// Refund part or all of an order. Refunds need a person's approval.
#[tool(timeout_ms = 8000, requires_approval)]
pub async fn refund_order(
    key: IdempotencyKey,
    /// The order to refund.
    #[arg(pattern = "^A[0-9]{4}$", grounded = "order")]
    order_id: String,
    /// Amount in dollars.
    #[arg(range(min = 0.01, max = 500.0))]
    amount: f64,
    /// Why the customer wants a refund.
    reason: Option<String>,
) -> Result<serde_json::Value, ToolError> {
    tokio::time::sleep(Duration::from_millis(250)).await;
    Ok(
        serde_json::json!({"refund_id": format!("R-{}", &order_id[1..]), "amount": amount, "reason": reason, "key": key.as_str()}),
    )
}

/// Why an order is cancelled.
#[data]
#[derive(Debug, Clone, Copy)]
#[serde(rename_all = "snake_case")]
pub enum CancelReason {
    CustomerRequest,
    Fraud,
    Duplicate,
}

/// Cancel an order that has not been delivered.
#[tool(idempotent = true, timeout_ms = 3000)]
pub async fn cancel_order(
    /// The order to cancel.
    #[arg(pattern = "^A[0-9]{4}$", grounded = "order")]
    order_id: String,
    /// Why.
    reason: CancelReason,
) -> Result<String, ToolError> {
    match ORDERS.iter().find(|o| o.0 == order_id) {
        Some(o) if o.4 == OrderStatus::Delivered => Err(ToolError::conflict(format!(
            "{order_id} was already delivered and cannot be cancelled"
        ))),
        _ => Ok(format!("{order_id} cancelled ({reason:?})")),
    }
}

/// Where a parcel is, by its tracking number.
#[tool(read_only, timeout_ms = 2000)]
pub async fn track_parcel(
    /// The carrier's tracking number, like `RR123456785DE`.
    #[arg(pattern = "^[A-Z]{2}[0-9]{9}[A-Z]{2}$")]
    tracking_number: String,
) -> Result<String, ToolError> {
    if tracking_number.starts_with("XX") {
        return Err(ToolError::unavailable(
            "the carrier's tracking API answered 503",
        ));
    }
    Ok(format!("{tracking_number}: in transit, last scan Leipzig"))
}

/// A warehouse.
#[data]
#[derive(Debug, Clone, Copy)]
#[serde(rename_all = "snake_case")]
pub enum Warehouse {
    Berlin,
    Leipzig,
    Munich,
}

/// How many items of a product are in stock, per warehouse.
#[tool(read_only, timeout_ms = 2000)]
pub async fn check_stock(
    /// The product, like `SKU-1234`.
    #[arg(pattern = "^SKU-[0-9]{4}$")]
    sku: String,
    /// Which warehouses to look in.
    #[arg(length(min = 1, max = 3))]
    warehouses: Vec<Warehouse>,
) -> Result<Vec<(String, u32)>, ToolError> {
    if sku == "SKU-9999" {
        return Err(ToolError::rate_limited(
            "the inventory service is throttling",
            Some(Duration::from_secs(1)),
        ));
    }
    Ok(warehouses
        .iter()
        .enumerate()
        .map(|(i, w)| (format!("{w:?}").to_lowercase(), (i as u32 + 1) * 3))
        .collect())
}

/// How fast a parcel travels.
#[data]
#[derive(Debug, Clone, Copy)]
#[serde(rename_all = "snake_case")]
pub enum Speed {
    Standard,
    Express,
}

/// Estimate when a parcel sent now arrives at a postcode.
#[tool(read_only, timeout_ms = 2000)]
pub async fn estimate_delivery(
    /// Five-digit postcode.
    #[arg(pattern = "^[0-9]{5}$")]
    postcode: String,
    /// Shipping speed.
    speed: Speed,
) -> Result<String, ToolError> {
    match postcode.as_str() {
        "00000" => panic!("the routing table has no entry for postcode 00000"),
        "99999" => Err(ToolError::unavailable("the routing service is down")),
        _ => Ok(match speed {
            Speed::Standard => "3 to 5 working days".to_owned(),
            Speed::Express => "next working day".to_owned(),
        }),
    }
}

/// Book a callback about an order between two hours of the day.
#[tool(idempotent = true, validate = callback_window)]
pub async fn schedule_callback(
    /// The order the callback is about.
    #[arg(pattern = "^A[0-9]{4}$", grounded = "order")]
    order_id: String,
    /// Earliest hour (0-23).
    #[arg(range(min = 0, max = 23))]
    earliest_hour: u8,
    /// Latest hour (0-23).
    #[arg(range(min = 0, max = 23))]
    latest_hour: u8,
) -> Result<String, ToolError> {
    Ok(format!(
        "callback about {order_id} between {earliest_hour}:00 and {latest_hour}:00"
    ))
}

fn callback_window(args: &ScheduleCallbackArgs) -> Result<(), ToolError> {
    if args.earliest_hour < args.latest_hour {
        Ok(())
    } else {
        Err(ToolError::invalid(format!(
            "`earliest_hour` ({}) must be before `latest_hour` ({})",
            args.earliest_hour, args.latest_hour
        )))
    }
}

/// A country we ship to.
#[data]
#[derive(Debug, Clone, Copy)]
#[serde(rename_all = "UPPERCASE")]
pub enum Country {
    De,
    At,
    Ch,
}

/// A postal address.
#[data(input)]
#[derive(Debug)]
pub struct Address {
    /// Street and number.
    street: String,
    /// City.
    city: String,
    /// Postcode.
    postcode: String,
    /// Country.
    country: Country,
}

/// Change the delivery address of an order that has not shipped.
#[tool(timeout_ms = 3000)]
pub async fn update_address(
    key: IdempotencyKey,
    /// The order.
    #[arg(pattern = "^A[0-9]{4}$", grounded = "order")]
    order_id: String,
    /// The new address.
    address: Address,
) -> Result<String, ToolError> {
    Ok(format!(
        "{order_id} now ships to {}, {} ({})",
        address.street,
        address.city,
        key.as_str()
    ))
}

/// How urgent a ticket is.
#[data]
#[derive(Debug, Clone, Copy)]
#[serde(rename_all = "snake_case")]
pub enum Priority {
    Low,
    Normal,
    High,
}

/// Open a support ticket for a customer.
#[tool(timeout_ms = 3000, grounds(ticket = "ticket_id"))]
pub async fn create_ticket(
    key: IdempotencyKey,
    /// The customer, like `C10001`.
    #[arg(pattern = "^C[0-9]{5}$", grounded = "customer")]
    customer_id: String,
    /// One line.
    #[arg(length(min = 1, max = 120))]
    subject: String,
    /// What happened.
    #[arg(length(min = 1, max = 2000))]
    body: String,
    /// How urgent.
    priority: Priority,
    /// Labels.
    #[arg(length(max = 5))]
    tags: Vec<String>,
) -> Result<serde_json::Value, ToolError> {
    let n = key
        .as_str()
        .bytes()
        .fold(0u32, |h, b| h.wrapping_mul(31).wrapping_add(u32::from(b)))
        % 9000
        + 1000;
    Ok(
        serde_json::json!({"ticket_id": format!("T-{n}"), "customer_id": customer_id, "subject": subject, "body_chars": body.len(), "priority": priority, "tags": tags}),
    )
}

/// A ticket's state.
#[data]
#[derive(Debug, Clone, Copy)]
#[serde(rename_all = "snake_case")]
pub enum TicketStatus {
    Open,
    Waiting,
    Closed,
}

/// List a customer's tickets, a page at a time.
#[tool(read_only)]
pub async fn list_tickets(
    /// The customer.
    #[arg(pattern = "^C[0-9]{5}$")]
    customer_id: String,
    /// Only tickets in these states.
    statuses: Option<Vec<TicketStatus>>,
    /// Page number.
    #[arg(range(min = 1, max = 100), default = 1)]
    page: u32,
    /// Tickets per page.
    #[arg(range(min = 1, max = 50), default = 10)]
    page_size: u32,
) -> Result<Vec<String>, ToolError> {
    if page > 1 {
        return Ok(Vec::new());
    }
    let n = statuses.map_or(3, |s| s.len() as u32).min(page_size);
    Ok((0..n).map(|i| format!("{customer_id}-T{i}")).collect())
}

/// Add a note to a ticket.
#[tool(idempotent = true)]
pub async fn add_note(
    /// The ticket, like `T-1234`.
    #[arg(pattern = "^T-[0-9]{4}$")]
    ticket_id: String,
    /// The note.
    #[arg(length(min = 1, max = 1000))]
    text: String,
    /// Hidden from the customer.
    #[arg(default = false)]
    internal: bool,
) -> Result<String, ToolError> {
    if ticket_id == "T-0400" {
        return Err(ToolError::bad_request(
            "ticket T-0400 is closed; notes are refused",
        ));
    }
    Ok(format!(
        "note on {ticket_id} ({} characters, internal: {internal})",
        text.len()
    ))
}

/// Give a discount on an order. More than 20% needs a supervisor.
#[tool(idempotent = true, authorize = discount_allowed)]
pub async fn apply_discount(
    /// The order.
    #[arg(pattern = "^A[0-9]{4}$", grounded = "order")]
    order_id: String,
    /// Percent off.
    #[arg(range(min = 1, max = 50))]
    percent: u32,
    /// A voucher code.
    #[arg(pattern = "^[A-Z0-9]{6}$")]
    code: Option<String>,
) -> Result<String, ToolError> {
    Ok(format!(
        "{percent}% off {order_id}{}",
        code.map(|c| format!(" ({c})")).unwrap_or_default()
    ))
}

fn discount_allowed(args: &ApplyDiscountArgs, _: &Session) -> Result<(), ToolError> {
    if args.percent > 20 {
        Err(ToolError::new(
            ErrorKind::Unauthorized,
            "discounts over 20% need a supervisor",
        ))
    } else {
        Ok(())
    }
}

/// Fetch an invoice.
#[tool(read_only)]
pub async fn get_invoice(
    /// The invoice, like `INV-000123`.
    #[arg(pattern = "^INV-[0-9]{6}$")]
    invoice_id: String,
) -> Result<String, ToolError> {
    match invoice_id.as_str() {
        "INV-401401" => Err(ToolError::from_status(401, "the billing token expired")),
        "INV-403403" => Err(ToolError::from_status(
            403,
            "this agent may not read that invoice",
        )),
        "INV-404404" => Err(ToolError::from_status(404, "no such invoice")),
        _ => Ok(format!("{invoice_id}: paid")),
    }
}

/// A currency.
#[data]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "UPPERCASE")]
pub enum Currency {
    Eur,
    Usd,
    Chf,
    Xau,
}

/// An exchange rate; a feed that has no rate sends NaN, which is no JSON number.
#[derive(schemars::JsonSchema)]
pub struct Rate(f64);

impl serde::Serialize for Rate {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if self.0.is_finite() {
            serializer.serialize_f64(self.0)
        } else {
            Err(serde::ser::Error::custom("the rate is not a number"))
        }
    }
}

/// Convert an amount between currencies at today's rate.
#[tool(read_only)]
pub async fn convert_currency(
    /// The amount.
    #[arg(range(min = 0.0, max = 1000000.0))]
    amount: f64,
    /// From this currency.
    from: Currency,
    /// To this currency.
    to: Currency,
) -> Result<Rate, ToolError> {
    let rate = match (from, to) {
        (a, b) if a == b => 1.0,
        (_, Currency::Xau) | (Currency::Xau, _) => f64::NAN,
        (Currency::Eur, Currency::Usd) => 1.08,
        _ => 0.95,
    };
    Ok(Rate(amount * rate))
}

/// A product category.
#[data]
#[derive(Debug, Clone, Copy)]
#[serde(rename_all = "snake_case")]
pub enum Category {
    Furniture,
    Lighting,
    Cables,
}

/// Narrowing a product search.
#[data(input)]
#[derive(Debug, Default)]
pub struct ProductFilters {
    /// Lowest price.
    min_price: Option<f64>,
    /// Highest price.
    max_price: Option<f64>,
    /// Only what is in stock.
    in_stock: Option<bool>,
    /// Only these categories.
    categories: Option<Vec<Category>>,
}

/// The order of results.
#[data]
#[derive(Debug, Clone, Copy)]
#[serde(rename_all = "snake_case")]
pub enum Sort {
    Relevance,
    PriceAsc,
    PriceDesc,
}

/// Search the product catalogue.
#[tool(read_only)]
pub async fn search_products(
    /// Words to look for.
    #[arg(length(min = 1, max = 200))]
    query: String,
    /// Filters.
    filters: Option<ProductFilters>,
    /// Order of results.
    sort: Option<Sort>,
) -> Result<Vec<String>, ToolError> {
    let filters = filters.unwrap_or_default();
    if query.contains("unicorn") {
        return Ok(Vec::new());
    }
    Ok(vec![format!(
        "{query}: 2 products (max {:?}, stock {:?}, {:?})",
        filters.max_price, filters.in_stock, sort
    )])
}

/// A time slot.
#[data(input)]
#[derive(Debug)]
pub struct Slot {
    /// The day, `YYYY-MM-DD`.
    date: String,
    /// The hour of the day.
    hour: u8,
}

/// Book an appointment with a specialist.
#[tool(idempotent = true)]
pub async fn book_appointment(
    /// The customer.
    #[arg(pattern = "^C[0-9]{5}$", grounded = "customer")]
    customer_id: String,
    /// When.
    slot: Slot,
    /// Who attends (names).
    #[arg(length(min = 1, max = 4))]
    attendees: Vec<String>,
    /// Anything the specialist should know.
    notes: Option<String>,
) -> Result<String, ToolError> {
    Ok(format!(
        "{customer_id}: {} at {}:00 for {} ({})",
        slot.date,
        slot.hour,
        attendees.join(", "),
        notes.unwrap_or_default()
    ))
}

/// A language.
#[data]
#[derive(Debug, Clone, Copy)]
#[serde(rename_all = "lowercase")]
pub enum Language {
    En,
    De,
    Fr,
}

/// Set how a customer wants to be contacted.
#[tool(idempotent = true)]
pub async fn set_preferences(
    /// The customer.
    #[arg(pattern = "^C[0-9]{5}$", grounded = "customer")]
    customer_id: String,
    /// Email newsletters.
    email_opt_in: bool,
    /// Text messages.
    sms_opt_in: bool,
    /// Language of messages.
    language: Language,
) -> Result<String, ToolError> {
    Ok(format!(
        "{customer_id}: email {email_opt_in}, sms {sms_opt_in}, {language:?}"
    ))
}

/// A kind of report.
#[data]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum ReportKind {
    Day,
    Week,
    Year,
}

/// Build a sales report. A year takes far longer than the tool's timeout.
#[tool(read_only, timeout_ms = 2000)]
pub async fn generate_report(
    /// Which report.
    kind: ReportKind,
    /// First day, `YYYY-MM-DD`.
    #[arg(pattern = "^[0-9]{4}-[0-9]{2}-[0-9]{2}$")]
    from: String,
    /// Last day, `YYYY-MM-DD`.
    #[arg(pattern = "^[0-9]{4}-[0-9]{2}-[0-9]{2}$")]
    to: String,
    /// Count refunds in.
    #[arg(default = false)]
    include_refunds: bool,
) -> Result<String, ToolError> {
    let work = if kind == ReportKind::Year {
        30_000
    } else {
        400
    };
    tokio::time::sleep(Duration::from_millis(work)).await;
    Ok(format!("{kind:?} {from}..{to}, refunds: {include_refunds}"))
}

/// Find a customer by email address.
#[tool(read_only, grounds(customer = "id"))]
pub async fn lookup_customer(
    /// The customer's email address.
    #[arg(length(min = 3, max = 200))]
    email: String,
) -> Result<Option<serde_json::Value>, ToolError> {
    Ok(CUSTOMERS
        .iter()
        .find(|c| c.2 == email)
        .map(|c| serde_json::json!({"id": c.0, "name": c.1})))
}

/// Send a text message to a customer. Sent once per call id.
#[tool(timeout_ms = 3000)]
pub async fn send_sms(
    key: IdempotencyKey,
    /// Phone number in international form, like `+4915112345678`.
    #[arg(pattern = "^\\+[0-9]{8,15}$")]
    to: String,
    /// The message.
    #[arg(length(min = 1, max = 160))]
    message: String,
) -> Result<String, ToolError> {
    tokio::time::sleep(Duration::from_millis(200)).await;
    Ok(format!(
        "sent {} characters to {to} ({})",
        message.len(),
        key.as_str()
    ))
}

/// Merge tickets into one.
#[tool(idempotent = true)]
pub async fn merge_tickets(
    /// The tickets to merge.
    #[arg(length(min = 2, max = 5))]
    ticket_ids: Vec<String>,
    /// The ticket they merge into.
    #[arg(pattern = "^T-[0-9]{4}$")]
    into: String,
) -> Result<String, ToolError> {
    Ok(format!("merged {} tickets into {into}", ticket_ids.len()))
}

/// How the registry repairs malformed arguments: the policies the evaluation compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    /// No repair: the model gets its failure.
    None,
    /// The deterministic rules only.
    Deterministic,
    /// One model repair (the answers recorded in the traces).
    Model,
    /// The rules, then the model for what they could not fix.
    Both,
}

impl Policy {
    pub const ALL: [Policy; 4] = [
        Policy::None,
        Policy::Deterministic,
        Policy::Model,
        Policy::Both,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Policy::None => "none",
            Policy::Deterministic => "deterministic",
            Policy::Model => "model",
            Policy::Both => "both",
        }
    }

    pub fn parse(name: &str) -> Option<Policy> {
        Policy::ALL.into_iter().find(|p| p.as_str() == name)
    }
}

/// The registry of the corpus under a repair policy: every tool, a seeded jitter source (so
/// backoff waits are the same on every run), and a breaker on `track_parcel` that opens after
/// three failures in five seconds.
pub fn registry(policy: Policy, model: Option<impl Repairer>) -> Registry {
    let mut builder = Registry::builder()
        .tool(SearchOrders)
        .tool(GetOrder)
        .tool(RefundOrder)
        .tool(CancelOrder)
        .tool(TrackParcel)
        .tool(CheckStock)
        .tool(EstimateDelivery)
        .tool(ScheduleCallback)
        .tool(UpdateAddress)
        .tool(CreateTicket)
        .tool(ListTickets)
        .tool(AddNote)
        .tool(ApplyDiscount)
        .tool(GetInvoice)
        .tool(ConvertCurrency)
        .tool(SearchProducts)
        .tool(BookAppointment)
        .tool(SetPreferences)
        .tool(GenerateReport)
        .tool(LookupCustomer)
        .tool(SendSms)
        .tool(MergeTickets)
        .random(SeededRandom::new(2026))
        .breaker(BreakerPolicy::disabled())
        .breaker_for(
            "track_parcel",
            BreakerPolicy::new()
                .min_calls(3)
                .failure_rate(0.5)
                .window(Duration::from_secs(5), 5)
                .cooldown(Duration::from_secs(600)),
        );
    if matches!(policy, Policy::Deterministic | Policy::Both) {
        builder = builder.deterministic_repair(DeterministicRepair::default());
    }
    if matches!(policy, Policy::Model | Policy::Both) {
        if let Some(model) = model {
            builder = builder.repairer(model);
        }
    }
    match builder.build() {
        Ok(registry) => registry,
        Err(e) => panic!("the corpus registry does not build: {e}"),
    }
}

/// The session of one recorded conversation: a support agent with the `support` scope, whose
/// refunds a person approves up to $200.
pub fn session(id: &str) -> Session {
    let approver = |request: &ApprovalRequest<'_>| {
        let amount = serde_json::from_str::<serde_json::Value>(request.arguments())
            .ok()
            .and_then(|v| v["amount"].as_f64())
            .unwrap_or(f64::MAX);
        if amount <= 200.0 {
            Approval::Approved
        } else {
            Approval::Denied {
                reason: "refunds over $200 need the customer's receipt".into(),
            }
        }
    };
    Session::new(id)
        .with_principal("support-agent")
        .with_scopes(["support"])
        .with_approver(Arc::new(approver))
}
