//! Validation: toolwright's path against a compiled `jsonschema` validator, on the same schema
//! (the one the registry exports to the model) and the same argument text, parse included.
//!
//! - valid text, toolwright: what a registry call does before the tool runs, through the public
//!   `Tool` trait: `serde_json::from_str::<T::Args>` (the typed parse, which is also the shape
//!   check), `T::check_fields` (every `#[arg]` rule) and `T::check_semantics`. Provenance and
//!   authorization are no-ops for these tools and are left out.
//! - valid text, jsonschema: `serde_json::from_str::<Value>` + `Validator::is_valid`.
//! - invalid text, toolwright: a whole `registry.call` (the validation module's report path is
//!   crate-private): lookup, the typed parse, on its failure the slow path that re-reads the
//!   text against the schema for every violation, the field rules, and the `Outcome` with its
//!   report. It overstates validation by the lookup and the outcome's construction.
//! - invalid text, jsonschema: the parse + `Validator::iter_errors`, every error's message
//!   rendered (a report, as toolwright's is).
//!
//! The ratio printed is jsonschema's time over toolwright's, per round (> 1: toolwright faster).

use std::hint::black_box;
use std::time::{Duration, Instant};

use serde_json::Value;
use toolwright::prelude::*;
use toolwright::Tool;
use toolwright_core::outcome::Violations;

use crate::tools::{self, CreateShipment, Currency, QuoteShipping};
use crate::{median, percentile};

/// Where an order stands.
#[data]
#[derive(Debug, Clone, Copy)]
#[serde(rename_all = "snake_case")]
pub enum OrderStatus {
    /// Not yet paid.
    Pending,
    /// Paid, not shipped.
    Paid,
    /// On its way.
    Shipped,
    /// Refunded.
    Refunded,
}

/// Search the customer's orders.
#[tool(read_only)]
pub async fn search_orders(
    /// Words to look for in the order's items.
    #[arg(length(min = 1, max = 200))]
    query: String,
    /// Only orders in this state.
    status: Option<OrderStatus>,
    /// How many orders to return.
    #[arg(range(min = 1, max = 50))]
    limit: u32,
    /// Tags the orders must carry.
    #[arg(length(max = 5))]
    tags: Vec<String>,
) -> Result<Vec<String>, ToolError> {
    Ok(vec![format!("{query} {status:?} {limit} {tags:?}")])
}

/// Change where an order goes.
#[tool(idempotent = true)]
pub async fn update_address(
    /// The order.
    #[arg(pattern = "^A[0-9]{4}$")]
    order_id: String,
    /// The new address.
    address: tools::Address,
    /// A note for the courier.
    #[arg(length(max = 500))]
    note: Option<String>,
) -> Result<String, ToolError> {
    Ok(format!("{order_id} {} {note:?}", address.city))
}

/// One line of an invoice.
#[data(input)]
#[derive(Debug, Clone)]
pub struct InvoiceLine {
    /// The product's stock-keeping unit.
    pub sku: String,
    /// How many.
    pub quantity: u32,
    /// Price of one, in cents.
    pub unit_price_cents: u64,
}

/// Issue an invoice to a customer.
#[tool(idempotent = true)]
pub async fn create_invoice(
    /// The customer.
    #[arg(pattern = "^C-[0-9]{6}$")]
    customer_id: String,
    /// What is invoiced.
    #[arg(length(min = 1, max = 50))]
    lines: Vec<InvoiceLine>,
    /// The invoice's currency.
    currency: Currency,
    /// Days until payment is due.
    #[arg(range(min = 0, max = 90))]
    due_days: u16,
) -> Result<u64, ToolError> {
    Ok(lines
        .iter()
        .map(|l| u64::from(l.quantity) * l.unit_price_cents + l.sku.len() as u64)
        .sum::<u64>()
        + u64::from(due_days)
        + currency as u64
        + customer_id.len() as u64)
}

/// One schema and its two texts.
struct Schema {
    tool: &'static str,
    what: &'static str,
    valid: &'static str,
    invalid: &'static str,
    /// toolwright's pre-run checks of the valid text.
    checks: fn(&str) -> bool,
}

/// The typed parse, the field rules and the semantic rule of `T`: `true` when all pass.
fn checks<T: Tool>(text: &str) -> bool {
    let Ok(args) = serde_json::from_str::<T::Args>(text) else {
        return false;
    };
    let mut report = Violations::new();
    T::check_fields(&args, &mut report);
    report.is_empty() && T::check_semantics(&args).is_ok()
}

const SCHEMAS: [Schema; 5] = [
    Schema {
        tool: "quote_shipping",
        what: "3 scalars: length, range, enum of strings",
        valid: tools::QUOTE_VALID,
        invalid: tools::QUOTE_MALFORMED,
        checks: checks::<QuoteShipping>,
    },
    Schema {
        tool: "create_shipment",
        what: "nested objects, array of objects, enums, pattern",
        valid: tools::SHIPMENT_VALID,
        invalid: tools::SHIPMENT_MALFORMED,
        checks: checks::<CreateShipment>,
    },
    Schema {
        tool: "search_orders",
        what: "optional enum, bounds, array of strings",
        valid: r#"{"query":"red shoes","status":"shipped","limit":10,"tags":["gift","sale"]}"#,
        // Rules only (the typed parse succeeds): an empty query, a limit past 50, six tags.
        invalid: r#"{"query":"","status":"paid","limit":80,"tags":["a","b","c","d","e","f"]}"#,
        checks: checks::<SearchOrders>,
    },
    Schema {
        tool: "update_address",
        what: "pattern, nested object, optional bounded string",
        valid: r#"{"order_id":"A1234","address":{"street":"1 Main St","city":"Boston","country":"US"},"note":"ring twice"}"#,
        // The pattern, a missing field of the nested object, an unknown argument.
        invalid: r#"{"order_id":"1234","address":{"street":"1 Main St","country":"US"},"urgent":true}"#,
        checks: checks::<UpdateAddress>,
    },
    Schema {
        tool: "create_invoice",
        what: "array of objects, enum, pattern, range",
        valid: r#"{"customer_id":"C-000123","lines":[{"sku":"SKU-1","quantity":2,"unit_price_cents":1999},{"sku":"SKU-2","quantity":1,"unit_price_cents":4999},{"sku":"SKU-3","quantity":5,"unit_price_cents":250}],"currency":"EUR","due_days":30}"#,
        // A quantity that is a string, an unknown currency, the pattern, a range.
        invalid: r#"{"customer_id":"C-12","lines":[{"sku":"SKU-1","quantity":"two","unit_price_cents":1999}],"currency":"GBP","due_days":120}"#,
        checks: checks::<CreateInvoice>,
    },
];

fn registry() -> Registry {
    Registry::builder()
        .tool(QuoteShipping)
        .tool(CreateShipment)
        .tool(SearchOrders)
        .tool(UpdateAddress)
        .tool(CreateInvoice)
        .build()
        .unwrap_or_else(|e| panic!("the validation registry builds: {e}"))
}

/// The four timed sides of one schema.
struct Sides<'a> {
    schema: &'a Schema,
    registry: &'a Registry,
    validator: &'a jsonschema::Validator,
}

impl Sides<'_> {
    fn toolwright_valid(&self, n: usize) -> f64 {
        let start = Instant::now();
        for _ in 0..n {
            black_box((self.schema.checks)(black_box(self.schema.valid)));
        }
        start.elapsed().as_nanos() as f64 / n as f64
    }

    fn jsonschema_valid(&self, n: usize) -> f64 {
        let start = Instant::now();
        for _ in 0..n {
            let value: Value =
                serde_json::from_str(black_box(self.schema.valid)).unwrap_or_default();
            black_box(self.validator.is_valid(&value));
        }
        start.elapsed().as_nanos() as f64 / n as f64
    }

    async fn toolwright_invalid(&self, n: usize, out: &mut Vec<Outcome>) -> f64 {
        out.clear();
        let calls: Vec<ToolCall> = (0..n)
            .map(|_| ToolCall::new("c", self.schema.tool, self.schema.invalid))
            .collect();
        let start = Instant::now();
        for call in calls {
            out.push(self.registry.call(black_box(call)).await);
        }
        let ns = start.elapsed().as_nanos() as f64 / n as f64;
        out.clear();
        ns
    }

    fn jsonschema_invalid(&self, n: usize, out: &mut Vec<Vec<String>>) -> f64 {
        out.clear();
        let start = Instant::now();
        for _ in 0..n {
            let report = match serde_json::from_str::<Value>(black_box(self.schema.invalid)) {
                Ok(value) => self
                    .validator
                    .iter_errors(&value)
                    .map(|e| format!("{}: {e}", e.instance_path()))
                    .collect(),
                Err(e) => vec![e.to_string()],
            };
            out.push(report);
        }
        let ns = start.elapsed().as_nanos() as f64 / n as f64;
        out.clear();
        ns
    }
}

/// Before timing: both sides agree on which text is valid, and both find every violation the
/// invalid text was written with (so neither is timed stopping early).
async fn agree(sides: &Sides<'_>) {
    let s = sides.schema;
    assert!(
        (s.checks)(s.valid),
        "{}: toolwright rejects the valid text",
        s.tool
    );
    let valid: Value = serde_json::from_str(s.valid).unwrap_or_default();
    let invalid: Value = serde_json::from_str(s.invalid).unwrap_or_default();
    assert!(
        sides.validator.is_valid(&valid),
        "{}: jsonschema rejects the valid text",
        s.tool
    );
    let theirs = sides.validator.iter_errors(&invalid).count();
    let outcome = sides
        .registry
        .call(ToolCall::new("c", s.tool, s.invalid))
        .await;
    let envelope = outcome.to_model_json();
    let ours = envelope["errors"].as_array().map_or(0, Vec::len);
    assert!(
        theirs >= 2 && ours >= 2,
        "{}: expected several violations, toolwright found {ours}, jsonschema {theirs}\n{envelope}",
        s.tool
    );
}

pub async fn run(rounds: usize, n: usize) {
    let registry = registry();
    println!(
        "\nvalidation: toolwright vs a compiled jsonschema 0.61 validator of the same schema, parse included"
    );
    println!(
        "  {:<16} {:<48} {:>9} {:>9}  {:>22}",
        "tool", "schema", "toolwright", "jsonschema", "jsonschema / toolwright"
    );
    for schema in &SCHEMAS {
        let Some(spec) = registry.spec(schema.tool) else {
            panic!("{} is registered", schema.tool);
        };
        let validator = jsonschema::validator_for(spec.input_schema())
            .unwrap_or_else(|e| panic!("{}: the schema compiles: {e}", schema.tool));
        let sides = Sides {
            schema,
            registry: &registry,
            validator: &validator,
        };
        agree(&sides).await;
        let mut outcomes = Vec::with_capacity(n);
        let mut reports = Vec::with_capacity(n);
        let warm = Instant::now();
        while warm.elapsed() < Duration::from_millis(200) {
            sides.toolwright_valid(n);
            sides.jsonschema_valid(n);
            sides.toolwright_invalid(n, &mut outcomes).await;
            sides.jsonschema_invalid(n, &mut reports);
        }
        let mut t = [(); 4].map(|_| Vec::with_capacity(rounds));
        let mut valid_ratio = Vec::with_capacity(rounds);
        let mut invalid_ratio = Vec::with_capacity(rounds);
        for round in 0..rounds {
            let mut this = [0.0; 4];
            for k in 0..4 {
                let i = (round + k) % 4;
                this[i] = match i {
                    0 => sides.toolwright_valid(n),
                    1 => sides.jsonschema_valid(n),
                    2 => sides.toolwright_invalid(n, &mut outcomes).await,
                    _ => sides.jsonschema_invalid(n, &mut reports),
                };
            }
            for i in 0..4 {
                t[i].push(this[i]);
            }
            valid_ratio.push(this[1] / this[0]);
            invalid_ratio.push(this[3] / this[2]);
        }
        let [tv, jv, ti, ji] = t.each_mut().map(|v| median(v));
        let rv = median(&mut valid_ratio);
        let ri = median(&mut invalid_ratio);
        println!(
            "  {:<16} {:<48} {:>7.0} ns {:>7.0} ns  {rv:>5.2} (p10 {:.2}, p90 {:.2})  valid",
            schema.tool,
            schema.what,
            tv,
            jv,
            percentile(&valid_ratio, 0.10),
            percentile(&valid_ratio, 0.90)
        );
        println!(
            "  {:<16} {:<48} {:>7.0} ns {:>7.0} ns  {ri:>5.2} (p10 {:.2}, p90 {:.2})  invalid, every violation",
            "",
            "",
            ti,
            ji,
            percentile(&invalid_ratio, 0.10),
            percentile(&invalid_ratio, 0.90)
        );
    }
}
