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
//!   (A, B, A, B ... rounds of 200 calls), as the median ratio of the two.
//!
//! `cargo bench --all-features --bench large_registry` (optionally `-- ROUNDS N`, the call
//! rounds, default 400).

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

/// The `i`-th generated tool.
fn generated(i: usize) -> DynamicTool {
    let verb = VERBS[i % VERBS.len()];
    let noun = NOUNS[(i / VERBS.len()) % NOUNS.len()];
    let name = format!("{}_{noun}_{i:04}", verb.to_lowercase().replace(' ', "_"));
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
    (0..n)
        .fold(Registry::builder(), |builder, i| {
            builder.dynamic_tool(generated(i))
        })
        .build()
        .expect("the generated registry builds")
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    if values.len().is_multiple_of(2) {
        (values[mid - 1] + values[mid]) / 2.0
    } else {
        values[mid]
    }
}

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
}
