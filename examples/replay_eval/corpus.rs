//! The deterministic generator of the replay corpus (`tests/replay_corpus/traces.jsonl`):
//! synthetic conversations with the tools of `tools.rs`, each call run through the registry
//! with no repair and recorded with `replay::Recorder`, labelled with its class, and, for a
//! malformed call, the answer a model gave to the repair prompt.
//!
//! Proportions (the corpus README says where they come from): 600 calls; 16.5% fail without
//! repair (a published production report: 83.5% pass on 200 replayed traces); of the failures about 70% are
//! malformed arguments and 30% are not a matter of form (timeouts, wrong tool choices,
//! infrastructure), split like that report's production failures (22 : 9 : 8), with every
//! `error_type` at least once. The model fixes a malformed call in its one repair with
//! probability 0.87 (the same report: one repair recovered 20 of the 23 calls that more repairs
//! eventually recovered).

#![allow(dead_code)]

use std::collections::HashMap;

use serde_json::{json, Map, Value};
use toolwright::replay::Recorder;
use toolwright::{Registry, Session, ToolCall};

use crate::tools::{self, Policy, CUSTOMERS};

/// splitmix64: a tiny, seeded, portable generator, so the corpus is the same on every machine.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n.max(1) as u64) as usize
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }

    pub fn chance(&mut self, p: f64) -> bool {
        self.unit() < p
    }

    /// A model turn's latency: log-normal, median `median` ms, spread `sigma` (Box-Muller).
    pub fn latency_ms(&mut self, median: f64, sigma: f64) -> u64 {
        let u1 = self.unit().max(1e-12);
        let u2 = self.unit();
        let normal = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
        (median * (sigma * normal).exp()).round() as u64
    }

    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = self.below(i + 1);
            items.swap(i, j);
        }
    }
}

/// Median and spread of a model turn: a median of 700 ms and a p95 near 1.8 s, close to seed
/// 003's end-to-end 740 ms and 1.9 s without repair. A repair is one more such turn.
pub const TURN_MEDIAN_MS: f64 = 700.0;
pub const TURN_SIGMA: f64 = 0.57;

/// How often the model's one repair fixes a malformed call.
pub const MODEL_FIX_RATE: f64 = 0.87;

/// Calls in the corpus, and conversations.
pub const CALLS: usize = 600;
pub const CONVERSATIONS: usize = 75;

/// Which kind of trace a class is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Group {
    Valid,
    /// A slip the deterministic rules are meant for (some of them unfixable on purpose).
    Mechanical,
    /// A malformation of form no rule may fix (a missing field, a bound, a name).
    Form,
    /// Not a matter of form: the `error_type` itself is the class.
    Other,
}

impl Group {
    pub fn as_str(self) -> &'static str {
        match self {
            Group::Valid => "valid",
            Group::Mechanical => "mechanical",
            Group::Form => "form",
            Group::Other => "other",
        }
    }
}

/// The malformation classes and how many traces of each (69 in all: 48 mechanical, 21 form).
/// No published evaluation breaks malformed arguments down this finely (see the README): the
/// split is this corpus's assumption, weighted to what the cited reports name most often
/// (numbers sent as strings, JSON wrapped in prose or fences, trailing commas).
pub const MALFORMED: &[(&str, Group, usize)] = &[
    ("number_as_string", Group::Mechanical, 8),
    ("number_as_string_not_whole", Group::Mechanical, 3),
    ("code_fence", Group::Mechanical, 5),
    ("code_fence_two_blocks", Group::Mechanical, 1),
    ("surrounding_prose", Group::Mechanical, 4),
    ("trailing_comma", Group::Mechanical, 6),
    ("single_quotes", Group::Mechanical, 3),
    ("unquoted_keys", Group::Mechanical, 2),
    ("double_encoded", Group::Mechanical, 3),
    ("bool_as_string", Group::Mechanical, 4),
    ("single_for_array", Group::Mechanical, 4),
    ("null_optional", Group::Mechanical, 3),
    ("null_required", Group::Mechanical, 1),
    ("fence_and_number_as_string", Group::Mechanical, 1),
    ("missing_required", Group::Form, 4),
    ("out_of_range", Group::Form, 4),
    ("bad_enum", Group::Form, 3),
    ("pattern_mismatch", Group::Form, 2),
    ("hallucinated_argument", Group::Form, 3),
    ("argument_name_case", Group::Form, 2),
    ("wrong_nesting", Group::Form, 1),
    ("truncated", Group::Form, 2),
];

/// Failures that are not a matter of form, by `error_type` (35 with the outage's two: timeouts
/// and other transient failures 17, wrong tool choices 7, infrastructure and guard rails 11,
/// each at least once). `circuit_open`, `duplicate_in_flight` and `idempotency_mismatch` come from
/// the conversations' order (an outage at the end; a message sent twice in one turn, or
/// re-sent under its call id with other text).
pub const OTHER: &[(&str, usize)] = &[
    ("timeout", 9),
    ("unavailable", 3),
    ("rate_limited", 2),
    ("unknown_tool", 3),
    ("ungrounded_identifier", 2),
    ("semantic_invalid", 2),
    ("unauthorized", 1),
    ("approval_denied", 1),
    ("auth_expired", 1),
    ("permission_denied", 1),
    ("not_found", 1),
    ("conflict", 1),
    ("bad_request", 1),
    ("tool_panicked", 1),
    ("invalid_result", 1),
    ("idempotency_mismatch", 1),
    ("duplicate_in_flight", 1),
];

/// What a conversation knows: its customer, the ids grounded at its start.
struct Ctx {
    customer: &'static str,
    name: &'static str,
    email: &'static str,
    orders: Vec<&'static str>,
}

fn last_name(name: &str) -> &str {
    name.rsplit(' ').next().unwrap_or(name)
}

/// An intended, valid call of one tool for this conversation.
fn valid_call(rng: &mut Rng, ctx: &Ctx, tool: &str) -> Option<Value> {
    let order = *rng.pick(&ctx.orders);
    let undelivered: Vec<&str> = ctx
        .orders
        .iter()
        .copied()
        .filter(|o| !matches!(*o, "A1003" | "A1006"))
        .collect();
    let phone = format!("+49151{:07}", 1_000_000 + rng.below(8_999_999));
    let day = 1 + rng.below(27);
    Some(match tool {
        "search_orders" => {
            let mut args = json!({"query": last_name(ctx.name)});
            if rng.chance(0.3) {
                args["status"] = json!(rng.pick(&["placed", "shipped", "delivered"]));
            }
            if rng.chance(0.4) {
                args["max_results"] = json!(1 + rng.below(10));
            }
            args
        }
        "get_order" => json!({"order_id": order}),
        "refund_order" => {
            json!({"order_id": order, "amount": *rng.pick(&[5.0, 12.5, 19.99, 40.0]), "reason": rng.pick(&["arrived broken", "late delivery", "wrong colour"])})
        }
        "cancel_order" => {
            if undelivered.is_empty() {
                return None;
            }
            json!({"order_id": rng.pick(&undelivered).to_string(), "reason": rng.pick(&["customer_request", "duplicate"])})
        }
        "track_parcel" => {
            json!({"tracking_number": format!("RR{:09}DE", 100_000_000 + rng.below(899_999_999))})
        }
        "check_stock" => {
            let all = ["berlin", "leipzig", "munich"];
            let warehouses = &all[..1 + rng.below(3)];
            json!({"sku": format!("SKU-{:04}", 1000 + rng.below(8000)), "warehouses": warehouses})
        }
        "estimate_delivery" => {
            json!({"postcode": format!("{:05}", 10_000 + rng.below(80_000)), "speed": rng.pick(&["standard", "express"])})
        }
        "schedule_callback" => {
            let from = 8 + rng.below(6);
            json!({"order_id": order, "earliest_hour": from, "latest_hour": from + 2 + rng.below(4)})
        }
        "update_address" => {
            json!({"order_id": undelivered.first()?, "address": {"street": "Karl-Liebknecht-Str. 12", "city": "Leipzig", "postcode": "04107", "country": rng.pick(&["DE", "AT"])}})
        }
        "create_ticket" => {
            let tags = &["delivery", "damage"][..1 + rng.below(2)];
            json!({"customer_id": ctx.customer, "subject": "Parcel arrived damaged", "body": "The box was crushed and the lamp shade is bent.", "priority": rng.pick(&["low", "normal", "high"]), "tags": tags})
        }
        "list_tickets" => {
            let mut args = json!({"customer_id": ctx.customer});
            if rng.chance(0.5) {
                args["statuses"] = json!(["open"]);
            }
            if rng.chance(0.4) {
                args["page_size"] = json!(5 + rng.below(20));
            }
            args
        }
        "add_note" => {
            json!({"ticket_id": format!("T-{}", 1000 + rng.below(8000)), "text": "Customer called again; promised an update by Friday.", "internal": rng.chance(0.5)})
        }
        "apply_discount" => json!({"order_id": order, "percent": 5 + rng.below(16)}),
        "get_invoice" => json!({"invoice_id": format!("INV-{:06}", 100 + rng.below(99_000))}),
        "convert_currency" => {
            json!({"amount": 10 + rng.below(500), "from": "EUR", "to": rng.pick(&["USD", "CHF"])})
        }
        "search_products" => {
            let mut filters = Map::new();
            filters.insert("max_price".into(), json!(20 + rng.below(200)));
            if rng.chance(0.5) {
                filters.insert("in_stock".into(), json!(true));
            }
            if rng.chance(0.6) {
                filters.insert(
                    "categories".into(),
                    json!([rng.pick(&["furniture", "lighting", "cables"])]),
                );
            }
            json!({"query": rng.pick(&["desk lamp", "standing desk", "usb cable"]), "filters": filters, "sort": rng.pick(&["relevance", "price_asc"])})
        }
        "book_appointment" => {
            json!({"customer_id": ctx.customer, "slot": {"date": format!("2026-12-{day:02}"), "hour": 9 + rng.below(8)}, "attendees": [ctx.name]})
        }
        "set_preferences" => {
            json!({"customer_id": ctx.customer, "email_opt_in": rng.chance(0.5), "sms_opt_in": rng.chance(0.5), "language": rng.pick(&["en", "de", "fr"])})
        }
        "generate_report" => {
            json!({"kind": rng.pick(&["day", "week"]), "from": format!("2026-11-{day:02}"), "to": format!("2026-11-{:02}", day + 1), "include_refunds": rng.chance(0.5)})
        }
        "lookup_customer" => json!({"email": ctx.email}),
        "send_sms" => {
            json!({"to": phone, "message": rng.pick(&["Your refund is on its way.", "Your parcel ships today.", "We will call you back tomorrow."])})
        }
        "merge_tickets" => {
            let a = 1000 + rng.below(8000);
            json!({"ticket_ids": [format!("T-{a}"), format!("T-{}", a + 1)], "into": format!("T-{a}")})
        }
        _ => return None,
    })
}

/// Tools valid calls are drawn from (everything but the grounding calls at a conversation's
/// start, which come first anyway).
const TOOLS: &[&str] = &[
    "search_orders",
    "get_order",
    "refund_order",
    "cancel_order",
    "track_parcel",
    "check_stock",
    "estimate_delivery",
    "schedule_callback",
    "update_address",
    "create_ticket",
    "list_tickets",
    "add_note",
    "apply_discount",
    "get_invoice",
    "convert_currency",
    "search_products",
    "book_appointment",
    "set_preferences",
    "generate_report",
    "lookup_customer",
    "send_sms",
    "merge_tickets",
];

/// JSON written the way some models write JavaScript: single-quoted strings and/or bare keys.
fn js_like(value: &Value, single: bool, bare: bool) -> String {
    match value {
        Value::Object(map) => {
            let fields: Vec<String> = map
                .iter()
                .map(|(k, v)| {
                    let key = if bare { k.clone() } else { quote(k, single) };
                    format!("{key}: {}", js_like(v, single, bare))
                })
                .collect();
            format!("{{{}}}", fields.join(", "))
        }
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(|v| js_like(v, single, bare)).collect();
            format!("[{}]", items.join(", "))
        }
        Value::String(s) => quote(s, single),
        other => other.to_string(),
    }
}

fn quote(s: &str, single: bool) -> String {
    if single {
        format!("'{}'", s.replace('\'', "\\'"))
    } else {
        Value::String(s.to_owned()).to_string()
    }
}

fn pretty(value: &Value) -> String {
    serde_json::to_string_pretty(value).unwrap_or_default()
}

/// Paths (top-level key, optional nested key) of leaves matching `keep`.
fn leaves(args: &Value, keep: &dyn Fn(&Value) -> bool) -> Vec<(String, Option<String>)> {
    let mut out = Vec::new();
    if let Value::Object(map) = args {
        for (k, v) in map {
            if keep(v) {
                out.push((k.clone(), None));
            } else if let Value::Object(inner) = v {
                for (k2, v2) in inner {
                    if keep(v2) {
                        out.push((k.clone(), Some(k2.clone())));
                    }
                }
            }
        }
    }
    out
}

fn leaf_mut<'a>(args: &'a mut Value, path: &(String, Option<String>)) -> &'a mut Value {
    match &path.1 {
        None => &mut args[&path.0],
        Some(inner) => &mut args[&path.0][inner],
    }
}

const NUMBER_WORDS: &[&str] = &[
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
    "twenty",
];

/// The malformed text of `class` for an intended call, or `None` if the call has nothing the
/// class needs (no number, no array, ...).
fn malform(rng: &mut Rng, class: &str, args: &Value, schema: &Value) -> Option<String> {
    let compact = args.to_string();
    let props = schema.get("properties").and_then(Value::as_object)?;
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut changed = args.clone();
    Some(match class {
        "number_as_string" | "fence_and_number_as_string" | "number_as_string_not_whole" => {
            let numbers = leaves(args, &|v| v.is_number());
            if numbers.is_empty() {
                return None;
            }
            let path = rng.pick(&numbers).clone();
            let leaf = leaf_mut(&mut changed, &path);
            let shown = match class {
                "number_as_string_not_whole" => {
                    let n = leaf.as_f64()?;
                    if path.0.contains("amount") {
                        format!("${n:.2}")
                    } else if n.fract() == 0.0 && (n as usize) < NUMBER_WORDS.len() {
                        NUMBER_WORDS[n as usize].to_owned()
                    } else {
                        format!("about {n}")
                    }
                }
                _ => leaf.to_string(),
            };
            *leaf = Value::String(shown);
            if class == "fence_and_number_as_string" {
                format!("```json\n{}\n```", pretty(&changed))
            } else {
                changed.to_string()
            }
        }
        "code_fence" => {
            if rng.chance(0.4) {
                format!("Calling the tool now.\n```json\n{}\n```", pretty(args))
            } else {
                format!("```json\n{}\n```", pretty(args))
            }
        }
        "code_fence_two_blocks" => format!(
            "```json\n{}\n```\nOr, if you prefer:\n```json\n{}\n```",
            pretty(args),
            compact
        ),
        "surrounding_prose" => format!(
            "{} {compact}{}",
            rng.pick(&[
                "Here are the arguments:",
                "Sure! Using these arguments:",
                "Arguments ->"
            ]),
            rng.pick(&[
                "",
                " Let me know if anything else is needed.",
                "\n(I picked the defaults for the rest.)"
            ])
        ),
        "trailing_comma" => {
            if rng.chance(0.5) {
                let text = pretty(args);
                let close = text.rfind('}')?;
                format!("{},\n}}", text[..close].trim_end())
            } else {
                format!("{},}}", &compact[..compact.len() - 1])
            }
        }
        "single_quotes" => js_like(args, true, false),
        "unquoted_keys" => js_like(args, false, true),
        "double_encoded" => Value::String(compact).to_string(),
        "bool_as_string" => {
            let flags = leaves(args, &|v| v.is_boolean());
            let path = flags.get(rng.below(flags.len().max(1)))?.clone();
            let leaf = leaf_mut(&mut changed, &path);
            *leaf = Value::String(leaf.to_string());
            changed.to_string()
        }
        "single_for_array" => {
            let lists = leaves(args, &|v| v.as_array().is_some_and(|a| a.len() == 1));
            let path = lists.get(rng.below(lists.len().max(1)))?.clone();
            let leaf = leaf_mut(&mut changed, &path);
            *leaf = leaf.as_array()?.first()?.clone();
            changed.to_string()
        }
        "null_optional" => {
            let absent: Vec<&String> = props
                .iter()
                .filter(|(k, p)| {
                    !required.contains(&k.as_str())
                        && args.get(k.as_str()).is_none()
                        && p.get("default").is_some()
                })
                .map(|(k, _)| k)
                .collect();
            let key = (*absent.get(rng.below(absent.len().max(1)))?).clone();
            changed.as_object_mut()?.insert(key, Value::Null);
            changed.to_string()
        }
        "null_required" => {
            let key = (*rng.pick(&required)).to_owned();
            changed[&key] = Value::Null;
            changed.to_string()
        }
        "missing_required" => {
            let key = *rng.pick(&required);
            changed.as_object_mut()?.shift_remove(key);
            changed.to_string()
        }
        "out_of_range" => {
            let bounded: Vec<(&String, f64)> = props
                .iter()
                .filter(|(k, _)| args.get(k.as_str()).is_some_and(Value::is_number))
                .filter_map(|(k, p)| Some((k, p.get("maximum")?.as_f64()?)))
                .collect();
            let (key, max) = bounded.get(rng.below(bounded.len().max(1)))?;
            let over = if props[key.as_str()]["type"] == "integer" {
                json!(*max as i64 * 2 + 1)
            } else {
                json!(max * 2.0)
            };
            changed[key.as_str()] = over;
            changed.to_string()
        }
        "bad_enum" => {
            let enums = leaves(args, &|v| {
                v.as_str().is_some_and(|s| {
                    [
                        "standard",
                        "express",
                        "low",
                        "normal",
                        "high",
                        "customer_request",
                        "duplicate",
                        "en",
                        "de",
                        "fr",
                        "day",
                        "week",
                        "relevance",
                        "price_asc",
                        "DE",
                        "AT",
                        "EUR",
                        "USD",
                        "CHF",
                        "placed",
                        "shipped",
                        "delivered",
                    ]
                    .contains(&s)
                })
            });
            let path = enums.get(rng.below(enums.len().max(1)))?.clone();
            let leaf = leaf_mut(&mut changed, &path);
            let wrong = match leaf.as_str()? {
                "express" => "next_day".to_owned(),
                "high" => "urgent".to_owned(),
                "en" => "English".to_owned(),
                other => {
                    let mut c = other.chars();
                    c.next()
                        .map(|f| f.to_uppercase().collect::<String>() + c.as_str() + "s")
                        .unwrap_or_default()
                }
            };
            *leaf = Value::String(wrong);
            changed.to_string()
        }
        "pattern_mismatch" => {
            let patterned: Vec<&String> = props
                .iter()
                .filter(|(k, p)| {
                    p.get("pattern").is_some() && args.get(k.as_str()).is_some_and(Value::is_string)
                })
                .map(|(k, _)| k)
                .collect();
            let key = (*patterned.get(rng.below(patterned.len().max(1)))?).clone();
            let value = args[&key].as_str()?.to_owned();
            changed[&key] = Value::String(match value.find(|c: char| c.is_ascii_digit()) {
                Some(i) if i > 0 => value[i..].to_owned(),
                _ => format!("#{value}"),
            });
            changed.to_string()
        }
        "hallucinated_argument" => {
            let (key, value) = rng
                .pick(&[
                    ("include_history", json!(true)),
                    ("verbose", json!(true)),
                    ("customer_name", json!("Ada Lovelace")),
                    ("limit", json!(10)),
                ])
                .clone();
            changed.as_object_mut()?.insert(key.to_owned(), value);
            changed.to_string()
        }
        "argument_name_case" => {
            let snake: Vec<&String> = args
                .as_object()?
                .keys()
                .filter(|k| k.contains('_'))
                .collect();
            let key = (*snake.get(rng.below(snake.len().max(1)))?).clone();
            let camel: String = key
                .split('_')
                .enumerate()
                .map(|(i, part)| {
                    if i == 0 {
                        part.to_owned()
                    } else {
                        let mut c = part.chars();
                        c.next()
                            .map(|f| f.to_uppercase().collect::<String>() + c.as_str())
                            .unwrap_or_default()
                    }
                })
                .collect();
            let map = changed.as_object_mut()?;
            let value = map.shift_remove(&key)?;
            map.insert(camel, value);
            changed.to_string()
        }
        "wrong_nesting" => {
            let nested: Vec<&String> = args
                .as_object()?
                .iter()
                .filter(|(_, v)| v.is_object())
                .map(|(k, _)| k)
                .collect();
            let key = (*nested.first()?).clone();
            let map = changed.as_object_mut()?;
            let inner = map.shift_remove(&key)?;
            for (k, v) in inner.as_object()? {
                map.insert(k.clone(), v.clone());
            }
            changed.to_string()
        }
        "truncated" => {
            let cut = compact.len() * 3 / 5;
            compact.get(..cut)?.to_owned()
        }
        _ => return None,
    })
}

/// One trace line before it runs.
struct Planned {
    session: String,
    turn: u32,
    call: ToolCall,
    class: String,
    group: Group,
    intended: Option<Value>,
}

/// A slot of a conversation: a class to fill.
#[derive(Clone)]
struct Slot {
    class: &'static str,
    group: Group,
}

/// The classes that need a conversation of a particular customer.
fn fits(class: &str, ctx: &Ctx) -> bool {
    match class {
        // A delivered order to cancel.
        "conflict" => ctx.orders.iter().any(|o| matches!(*o, "A1003" | "A1006")),
        _ => true,
    }
}

/// The call of a class that is not a matter of form, in a conversation.
fn other_call(rng: &mut Rng, ctx: &Ctx, class: &str) -> Vec<(String, Value, bool)> {
    let order = ctx.orders[0];
    let one = |tool: &str, args: Value| vec![(tool.to_owned(), args, false)];
    match class {
        "timeout" => one(
            "generate_report",
            json!({"kind": "year", "from": "2025-01-01", "to": "2025-12-31"}),
        ),
        "unavailable" => one(
            "estimate_delivery",
            json!({"postcode": "99999", "speed": "standard"}),
        ),
        "rate_limited" => one(
            "check_stock",
            json!({"sku": "SKU-9999", "warehouses": ["berlin"]}),
        ),
        "unknown_tool" => {
            let names: [&str; 3] = ["search_order", "issue_refund", "get_customer"];
            let name = names[rng.below(names.len())];
            one(name, json!({"query": last_name(ctx.name)}))
        }
        "ungrounded_identifier" => one(
            "get_order",
            json!({"order_id": rng.pick(&["A1999", "A2001"])}),
        ),
        "semantic_invalid" => one(
            "schedule_callback",
            json!({"order_id": order, "earliest_hour": 17, "latest_hour": 9}),
        ),
        "unauthorized" => one("apply_discount", json!({"order_id": order, "percent": 35})),
        "approval_denied" => one(
            "refund_order",
            json!({"order_id": order, "amount": 350.0, "reason": "customer is unhappy"}),
        ),
        "auth_expired" => one("get_invoice", json!({"invoice_id": "INV-401401"})),
        "permission_denied" => one("get_invoice", json!({"invoice_id": "INV-403403"})),
        "not_found" => one("get_invoice", json!({"invoice_id": "INV-404404"})),
        "conflict" => {
            let delivered = ctx
                .orders
                .iter()
                .find(|o| matches!(**o, "A1003" | "A1006"))
                .copied()
                .unwrap_or(order);
            one(
                "cancel_order",
                json!({"order_id": delivered, "reason": "customer_request"}),
            )
        }
        "bad_request" => one(
            "add_note",
            json!({"ticket_id": "T-0400", "text": "Customer asked again."}),
        ),
        "tool_panicked" => one(
            "estimate_delivery",
            json!({"postcode": "00000", "speed": "express"}),
        ),
        "invalid_result" => one(
            "convert_currency",
            json!({"amount": 100, "from": "EUR", "to": "XAU"}),
        ),
        // The same call id re-sent with other text: a valid send, then the mismatch.
        "idempotency_mismatch" => vec![
            (
                "send_sms".to_owned(),
                json!({"to": "+4915112345678", "message": "Your refund is on its way."}),
                false,
            ),
            (
                "send_sms".to_owned(),
                json!({"to": "+4915112345678", "message": "Your refund was sent today."}),
                true,
            ),
        ],
        // The same call twice in one parallel turn: a valid send, then the duplicate.
        "duplicate_in_flight" => vec![
            (
                "send_sms".to_owned(),
                json!({"to": "+4915187654321", "message": "Your parcel ships today."}),
                false,
            ),
            (
                "send_sms".to_owned(),
                json!({"to": "+4915187654321", "message": "Your parcel ships today."}),
                true,
            ),
        ],
        _ => Vec::new(),
    }
}

/// The corpus as JSON lines, generated from `seed`: every call run through `registry` (no
/// repair), recorded, labelled. Errors name the trace whose recorded outcome does not match its
/// label (the generator checks its own labels).
pub async fn generate(seed: u64) -> Result<String, String> {
    let mut rng = Rng::new(seed);
    let registry = tools::registry(
        Policy::None,
        None::<fn(&toolwright::repair::RepairRequest<'_>) -> toolwright::repair::Repair>,
    );
    let schemas: HashMap<String, Value> = registry
        .specs()
        .iter()
        .map(|s| (s.name().to_owned(), s.input_schema().clone()))
        .collect();

    // Slots after each conversation's two grounding calls; the outage conversation at the end
    // holds the calls `circuit_open` needs.
    let mut slots: Vec<Slot> = Vec::new();
    for (class, group, n) in MALFORMED {
        slots.extend(std::iter::repeat_n(
            Slot {
                class,
                group: *group,
            },
            *n,
        ));
    }
    for (class, n) in OTHER {
        slots.extend(std::iter::repeat_n(
            Slot {
                class,
                group: Group::Other,
            },
            *n,
        ));
    }
    // The pairs take two calls each; the outage conversation three.
    let pairs = 2;
    let outage = 2;
    let fixed = CONVERSATIONS * 2 + pairs + outage;
    let valid = CALLS - fixed - slots.len();
    slots.extend(std::iter::repeat_n(
        Slot {
            class: "valid",
            group: Group::Valid,
        },
        valid,
    ));
    rng.shuffle(&mut slots);

    let contexts: Vec<Ctx> = (0..CONVERSATIONS)
        .map(|i| {
            let (customer, name, email) = CUSTOMERS[i % CUSTOMERS.len()];
            Ctx {
                customer,
                name,
                email,
                orders: tools::orders_of(name),
            }
        })
        .collect();
    // Deal the slots to conversations round-robin by position, then move a slot whose class
    // needs another customer to a conversation that fits, in exchange for a valid one.
    let mut dealt: Vec<Vec<Slot>> = vec![Vec::new(); CONVERSATIONS];
    for (i, slot) in slots.into_iter().enumerate() {
        dealt[i % CONVERSATIONS].push(slot);
    }
    for c in 0..CONVERSATIONS {
        for s in 0..dealt[c].len() {
            let class = dealt[c][s].class;
            if fits(class, &contexts[c]) {
                continue;
            }
            let target = (0..CONVERSATIONS).find_map(|d| {
                if !fits(class, &contexts[d]) {
                    return None;
                }
                let t = dealt[d].iter().position(|x| x.group == Group::Valid)?;
                Some((d, t))
            });
            if let Some((d, t)) = target {
                let replacement = dealt[d][t].clone();
                let moved = std::mem::replace(&mut dealt[c][s], replacement);
                dealt[d][t] = moved;
            }
        }
    }

    let mut planned: Vec<Planned> = Vec::new();
    let mut next_id = 0usize;
    let mut id = || {
        next_id += 1;
        format!("call_{next_id:04}")
    };
    for (c, ctx) in contexts.iter().enumerate() {
        let session = format!("conv-{:03}", c + 1);
        let mut turn = 0u32;
        let push = |planned: &mut Vec<Planned>,
                    turn: u32,
                    call_id: String,
                    tool: &str,
                    text: String,
                    class: &str,
                    group: Group,
                    intended: Option<Value>| {
            planned.push(Planned {
                session: session.clone(),
                turn,
                call: ToolCall::new(call_id, tool, text),
                class: class.to_owned(),
                group,
                intended,
            });
        };
        for (tool, args) in [
            ("lookup_customer", json!({"email": ctx.email})),
            ("search_orders", json!({"query": last_name(ctx.name)})),
        ] {
            turn += 1;
            push(
                &mut planned,
                turn,
                id(),
                tool,
                args.to_string(),
                "valid",
                Group::Valid,
                None,
            );
        }
        for slot in &dealt[c] {
            turn += 1;
            match slot.group {
                Group::Valid => {
                    let (name, args) = loop {
                        let name = *rng.pick(TOOLS);
                        if let Some(args) = valid_call(&mut rng, ctx, name) {
                            break (name, args);
                        }
                    };
                    push(
                        &mut planned,
                        turn,
                        id(),
                        name,
                        args.to_string(),
                        "valid",
                        Group::Valid,
                        None,
                    );
                }
                Group::Mechanical | Group::Form => {
                    let mut made = None;
                    for _ in 0..200 {
                        let name = *rng.pick(TOOLS);
                        let Some(args) = valid_call(&mut rng, ctx, name) else {
                            continue;
                        };
                        let Some(schema) = schemas.get(name) else {
                            continue;
                        };
                        if let Some(text) = malform(&mut rng, slot.class, &args, schema) {
                            made = Some((name, text, args));
                            break;
                        }
                    }
                    let (name, text, args) =
                        made.ok_or_else(|| format!("no tool fits class {}", slot.class))?;
                    push(
                        &mut planned,
                        turn,
                        id(),
                        name,
                        text,
                        slot.class,
                        slot.group,
                        Some(args),
                    );
                }
                Group::Other => {
                    let calls = other_call(&mut rng, ctx, slot.class);
                    let call_id = id();
                    let parallel = slot.class == "duplicate_in_flight";
                    for (i, (tool, args, labelled)) in calls.iter().enumerate() {
                        if i > 0 && !parallel {
                            turn += 1;
                        }
                        let (class, group) = if *labelled || calls.len() == 1 {
                            (slot.class, Group::Other)
                        } else {
                            ("valid", Group::Valid)
                        };
                        push(
                            &mut planned,
                            turn,
                            call_id.clone(),
                            tool,
                            args.to_string(),
                            class,
                            group,
                            None,
                        );
                    }
                }
            }
        }
    }
    // The outage: the carrier's API fails three attempts in a row, which opens the breaker (3
    // failures in its 5 s window); the next lookup is refused.
    let session = "conv-outage".to_owned();
    for (turn, (number, class)) in [
        ("XX000000001DE", "unavailable"),
        ("RR123456785DE", "circuit_open"),
    ]
    .iter()
    .enumerate()
    {
        planned.push(Planned {
            session: session.clone(),
            turn: turn as u32 + 1,
            call: ToolCall::new(
                id(),
                "track_parcel",
                json!({"tracking_number": number}).to_string(),
            ),
            class: (*class).to_owned(),
            group: Group::Other,
            intended: None,
        });
    }

    run(&registry, planned, &mut rng).await
}

/// Runs the planned calls in order (a turn's calls together), records each with its label,
/// and checks the label against what happened.
async fn run(registry: &Registry, planned: Vec<Planned>, rng: &mut Rng) -> Result<String, String> {
    let mut sessions: HashMap<String, Session> = HashMap::new();
    let mut lines = Vec::new();
    let mut i = 0;
    while i < planned.len() {
        let mut j = i + 1;
        while j < planned.len()
            && planned[j].session == planned[i].session
            && planned[j].turn == planned[i].turn
        {
            j += 1;
        }
        let batch = &planned[i..j];
        for p in batch {
            sessions
                .entry(p.session.clone())
                .or_insert_with(|| tools::session(&p.session));
        }
        let futures = batch
            .iter()
            .map(|p| registry.call_in(&sessions[&p.session], p.call.clone()));
        let outcomes = futures_util::future::join_all(futures).await;
        for (p, outcome) in batch.iter().zip(outcomes) {
            check(p, &outcome)?;
            let recorded = Recorder::new(Vec::new());
            recorded.record(&sessions[&p.session], &p.call, &outcome);
            let mut line: Value =
                serde_json::from_slice(&recorded.into_inner()).map_err(|e| e.to_string())?;
            line["turn"] = json!(p.turn);
            line["class"] = json!(p.class);
            line["group"] = json!(p.group.as_str());
            line["turn_ms"] = json!(rng.latency_ms(TURN_MEDIAN_MS, TURN_SIGMA));
            if let Some(intended) = &p.intended {
                let ms = rng.latency_ms(TURN_MEDIAN_MS, TURN_SIGMA);
                let reply = if rng.chance(MODEL_FIX_RATE) {
                    if rng.chance(0.2) {
                        format!("```json\n{intended}\n```")
                    } else {
                        intended.to_string()
                    }
                } else if rng.chance(0.5) {
                    // Seed 003: past a failed repair the model "tends to restate the same
                    // malformed argument with different formatting".
                    p.call.arguments().to_owned()
                } else {
                    "{\"abort\": true}".to_owned()
                };
                line["model_repair"] = json!({"reply": reply, "ms": ms});
            }
            lines.push(line.to_string());
        }
        i = j;
    }
    Ok(lines.join("\n") + "\n")
}

/// The recorded outcome must be what the label says.
fn check(p: &Planned, outcome: &toolwright::Outcome) -> Result<(), String> {
    let got = outcome.error_kind().map_or("ok", |k| k.as_str());
    let fine = match p.group {
        Group::Valid => outcome.is_ok(),
        Group::Mechanical | Group::Form => {
            matches!(got, "invalid_json" | "unknown_argument" | "schema_mismatch")
        }
        Group::Other => got == p.class,
    };
    if fine {
        Ok(())
    } else {
        Err(format!(
            "{} {} {} is labelled {} but came out {got}: {}",
            p.session,
            p.call.id(),
            p.call.name(),
            p.class,
            outcome.to_model_json()
        ))
    }
}
