//! A registry of 1,000 tools: what it costs to build, to hold, to export, and whether a call
//! gets slower with the number of tools beside it.
//!
//! The tools are generated runtime tools ([`DynamicTool`]): a name, a one-sentence description
//! from a few dozen verbs and nouns, and an input schema of two to five typed parameters (ids
//! with a pattern, bounded integers, enums, dates, tag lists, flags), each documented. Prints:
//!
//! - build time of a registry of 10, 100 and 1,000 such tools (median of interleaved rounds);
//! - the live heap a built 1,000-tool registry holds (a counting allocator), per tool;
//! - per provider, the export of all 1,000 definitions: median time and compact JSON size;
//! - a successful call of one tool in a 10-tool and in a 1,000-tool registry, interleaved
//!   (A, B, A, B ... rounds of 200 calls), as the median ratio of the two;
//! - the same 1,000 tools, 990 of them deferred (found by search): build time against the
//!   plain registry (interleaved), the heap the search index adds, what a session is shown
//!   before it searched (Anthropic export size), and the search's latency: `Registry::search`
//!   and a whole `search_tools` call in a conversation, over 20 queries.
//!
//! `cargo bench --all-features --bench large_registry` (optionally `-- ROUNDS N`, the call
//! rounds, default 400).

// A counting global allocator measures the heap: `GlobalAlloc` is an unsafe trait.
#![allow(unsafe_code)]

#[path = "common/median.rs"]
mod median;
use median::median;
use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::sync::atomic::{AtomicIsize, Ordering};
use std::time::Instant;

use serde_json::{json, Value};
use toolwright::providers::Provider;
use toolwright::{DynamicTool, Effect, Registry, ToolCall};

/// Counts the live heap, to weigh a built registry.
struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);

// SAFETY: every method forwards to the system allocator with the caller's arguments; the
// counter is only arithmetic beside it.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_add(
            new_size as isize - layout.size() as isize,
            Ordering::Relaxed,
        );
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

const VERBS: &[&str] = &[
    "Look up", "List", "Create", "Cancel", "Update", "Archive", "Restore", "Count", "Export",
    "Assign", "Close", "Reopen", "Rename", "Tag", "Schedule", "Refund", "Approve", "Reject",
    "Merge", "Split",
];
const NOUNS: &[&str] = &[
    "order",
    "invoice",
    "customer",
    "ticket",
    "shipment",
    "subscription",
    "refund",
    "product",
    "warehouse",
    "supplier",
    "contract",
    "payment",
    "coupon",
    "review",
    "return",
    "employee",
    "meeting",
    "project",
    "repository",
    "incident",
    "alert",
    "dashboard",
    "report",
    "budget",
    "campaign",
    "lead",
    "account",
    "device",
    "license",
    "policy",
    "document",
    "folder",
    "task",
    "sprint",
    "release",
    "build",
    "deployment",
    "cluster",
    "database",
    "backup",
    "certificate",
    "domain",
    "mailbox",
    "calendar",
    "room",
    "vehicle",
    "route",
    "flight",
    "booking",
    "patient",
];

/// Parameter `k` of a generated tool: its name and its schema.
fn parameter(noun: &str, k: usize) -> (String, Value) {
    match k % 6 {
        0 => (
            format!("{noun}_id"),
            json!({"type": "string", "pattern": "^[A-Z]{2}-[0-9]{4,10}$",
                   "description": format!("The {noun}'s id, as shown to the user.")}),
        ),
        1 => (
            "limit".into(),
            json!({"type": "integer", "minimum": 1, "maximum": 100,
                   "description": "How many results at most."}),
        ),
        2 => (
            "status".into(),
            json!({"type": "string", "enum": ["open", "pending", "closed", "archived"],
                   "description": format!("Only {noun}s in this state.")}),
        ),
        3 => (
            "since".into(),
            json!({"type": "string", "format": "date-time",
                   "description": "Only what changed after this instant (RFC 3339)."}),
        ),
        4 => (
            "tags".into(),
            json!({"type": "array", "items": {"type": "string", "maxLength": 40}, "maxItems": 10,
                   "description": "Labels to match, all of them."}),
        ),
        _ => (
            "dry_run".into(),
            json!({"type": "boolean",
                   "description": "Check what would happen without doing it."}),
        ),
    }
}

/// The name of the `i`-th generated tool.
fn name_of(i: usize) -> String {
    let verb = VERBS[i % VERBS.len()];
    let noun = NOUNS[(i / VERBS.len()) % NOUNS.len()];
    format!("{}_{noun}_{i:04}", verb.to_lowercase().replace(' ', "_"))
}

/// The `i`-th generated tool.
fn generated(i: usize) -> DynamicTool {
    let verb = VERBS[i % VERBS.len()];
    let noun = NOUNS[(i / VERBS.len()) % NOUNS.len()];
    let name = name_of(i);
    let count = 2 + i % 4;
    let mut properties = serde_json::Map::new();
    for k in 0..count {
        let (key, schema) = parameter(noun, k);
        properties.insert(key, schema);
    }
    let required = vec![Value::String(format!("{noun}_id"))];
    DynamicTool::builder(name)
        .description(format!(
            "{verb} a {noun} of the user's organisation. Answers with the {noun}'s current record."
        ))
        .input_schema(json!({
            "type": "object",
            "properties": properties,
            "required": required,
            "additionalProperties": false,
        }))
        .effect(Effect::ReadOnly)
        .handler(|_args, _ctx| async { Ok(json!({"ok": true})) })
        .build()
        .expect("a generated tool is valid")
}

fn registry_of(n: usize) -> Registry {
    builder_of(n)
        .build()
        .expect("the generated registry builds")
}

fn builder_of(n: usize) -> toolwright::RegistryBuilder {
    (0..n).fold(Registry::builder(), |builder, i| {
        builder.dynamic_tool(generated(i))
    })
}

/// The generated tools, all but the first 10 deferred.
fn deferred_of(n: usize) -> Registry {
    let names: Vec<String> = (10..n).map(name_of).collect();
    builder_of(n)
        .deferred(names)
        .build()
        .expect("the deferred registry builds")
}

/// Requests a model might search with.
const QUERIES: &[&str] = &[
    "cancel a subscription",
    "refund an order",
    "list open invoices",
    "approve the pending contract",
    "archive old tickets",
    "restore a deleted backup",
    "schedule a meeting in a room",
    "count incidents this week",
    "export the sales report",
    "assign a task to the sprint",
    "close the support ticket",
    "reopen a release",
    "rename the dashboard",
    "tag a document",
    "merge two customer accounts",
    "split the shipment",
    "reject a supplier review",
    "update the flight booking",
    "look up a patient",
    "create a certificate for the domain",
];

fn millis(start: Instant) -> f64 {
    start.elapsed().as_secs_f64() * 1e3
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let rounds = args
        .iter()
        .position(|a| a == "ROUNDS")
        .and_then(|i| args.get(i + 1))
        .and_then(|n| n.parse().ok())
        .unwrap_or(400);

    // Build time: the three sizes interleaved, tool definitions included.
    let sizes = [10, 100, 1_000];
    let mut builds: Vec<Vec<f64>> = vec![Vec::new(); sizes.len()];
    for _ in 0..7 {
        for (column, &n) in builds.iter_mut().zip(&sizes) {
            let start = Instant::now();
            black_box(registry_of(n));
            column.push(millis(start));
        }
    }
    println!("large_registry: generated runtime tools, 2 to 5 parameters each");
    for (column, n) in builds.iter_mut().zip(sizes) {
        let ms = median(column);
        println!(
            "  build {n:>5} tools: median {ms:8.2} ms ({:.1} us per tool)",
            ms * 1e3 / n as f64
        );
    }

    // Memory: the live heap a built registry holds.
    let before = LIVE.load(Ordering::Relaxed);
    let big = registry_of(1_000);
    let held = LIVE.load(Ordering::Relaxed) - before;
    println!(
        "  live heap of the 1,000-tool registry: {:.2} MiB ({:.1} KiB per tool)",
        held as f64 / (1024.0 * 1024.0),
        held as f64 / 1024.0 / 1_000.0
    );

    // Export: every provider, all 1,000 definitions.
    for &provider in Provider::ALL {
        let mut times = Vec::new();
        let mut size = 0;
        for _ in 0..9 {
            let start = Instant::now();
            let exported = big
                .export(provider)
                .expect("every provider exports these tools");
            times.push(millis(start));
            size = serde_json::to_string(&exported).map_or(0, |text| text.len());
        }
        println!(
            "  export {provider:?}: median {:7.2} ms, {:.2} MB compact ({} bytes per tool)",
            median(&mut times),
            size as f64 / 1e6,
            size / 1_000
        );
    }

    // A call: the same tool and arguments in a 10-tool and in the 1,000-tool registry.
    let small = registry_of(10);
    let tool = format!("{}_{}_0003", VERBS[3].to_lowercase(), NOUNS[0]);
    assert!(small.spec(&tool).is_some() && big.spec(&tool).is_some());
    let arguments = format!(r#"{{"{}_id":"AB-1234","limit":5}}"#, NOUNS[0]);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let side = |registry: &Registry| {
        let calls: Vec<_> = (0..200)
            .map(|i| ToolCall::new(format!("c{i}"), tool.as_str(), arguments.as_str()))
            .collect();
        rt.block_on(async {
            let start = Instant::now();
            for call in calls {
                let outcome = registry.call(black_box(call)).await;
                assert!(outcome.is_ok(), "{}", outcome.to_model_string());
                black_box(outcome);
            }
            start.elapsed().as_nanos() as f64 / 200.0
        })
    };
    for _ in 0..20 {
        side(&small);
        side(&big);
    }
    let (mut a, mut b, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..rounds {
        let ten = side(&small);
        let thousand = side(&big);
        a.push(ten);
        b.push(thousand);
        ratios.push(thousand / ten);
    }
    println!(
        "  call `{tool}`: 10 tools {:.0} ns, 1,000 tools {:.0} ns; median ratio {:.3} \
         ({rounds} interleaved rounds of 200 calls)",
        median(&mut a),
        median(&mut b),
        median(&mut ratios)
    );

    // Deferred: 990 of the 1,000 found by search.
    let (mut plain_ms, mut deferred_ms) = (Vec::new(), Vec::new());
    for _ in 0..7 {
        let start = Instant::now();
        black_box(registry_of(1_000));
        plain_ms.push(millis(start));
        let start = Instant::now();
        black_box(deferred_of(1_000));
        deferred_ms.push(millis(start));
    }
    println!(
        "  deferred (990 of 1,000): build {:.1} ms vs {:.1} ms plain (interleaved medians)",
        median(&mut deferred_ms),
        median(&mut plain_ms)
    );
    drop(big);
    let before = LIVE.load(Ordering::Relaxed);
    let plain = registry_of(1_000);
    let plain_heap = LIVE.load(Ordering::Relaxed) - before;
    let before = LIVE.load(Ordering::Relaxed);
    let deferred = deferred_of(1_000);
    let deferred_heap = LIVE.load(Ordering::Relaxed) - before;
    println!(
        "  the search index adds {:.2} MiB of live heap ({:.2} KiB per deferred tool)",
        (deferred_heap - plain_heap) as f64 / (1024.0 * 1024.0),
        (deferred_heap - plain_heap) as f64 / 1024.0 / 990.0
    );
    drop(plain);
    let session = toolwright::Session::new("bench");
    let shown = deferred
        .export_for(&session, Provider::Anthropic)
        .expect("exports");
    let all = deferred.export(Provider::Anthropic).expect("exports");
    let size = |v: &Value| serde_json::to_string(v).map_or(0, |t| t.len());
    println!(
        "  shown before a search: {} tools, {} bytes (Anthropic), against {} bytes for all {}",
        shown.as_array().map_or(0, Vec::len),
        size(&shown),
        size(&all),
        all.as_array().map_or(0, Vec::len)
    );
    let mut search_us = Vec::new();
    for _ in 0..50 {
        for query in QUERIES {
            let start = Instant::now();
            black_box(deferred.search(&session, black_box(query), 5));
            search_us.push(start.elapsed().as_secs_f64() * 1e6);
        }
    }
    let mut call_us = Vec::new();
    rt.block_on(async {
        for round in 0..50 {
            for (i, query) in QUERIES.iter().enumerate() {
                let conversation = toolwright::Session::new(format!("bench-{round}-{i}"));
                let arguments = json!({ "query": query }).to_string();
                let call = ToolCall::new("s", "search_tools", arguments);
                let start = Instant::now();
                let outcome = deferred.call_in(&conversation, call).await;
                call_us.push(start.elapsed().as_secs_f64() * 1e6);
                assert!(outcome.is_ok(), "{}", outcome.to_model_string());
            }
        }
    });
    println!(
        "  search over 990 deferred tools: Registry::search median {:.1} us; a search_tools \
         call in a new conversation (validation, ranking, grounding the 5 found) median {:.1} us \
         ({} searches each)",
        median(&mut search_us),
        median(&mut call_us),
        50 * QUERIES.len()
    );
}
