//! toolwright beside rmcp, rig and the jsonschema crate, interleaved in one process.
//!
//! **Dispatch.** Two tools (`quote_shipping`: three arguments, three strings back;
//! `create_shipment`: six arguments with nested objects, an array of objects and enums), each
//! called with a valid argument text and with a malformed one (several violations), by every
//! side in turn: A, B, C, ... per round over hundreds of rounds of N calls each, so drift on a
//! shared machine (other processes, frequency changes) hits every side alike. Each round's times
//! are divided by that round's hand-written floor; the median of those per-round ratios is
//! printed with its p10 and p90, as `benches/dispatch_interleaved.rs` does. The order of the
//! sides rotates from round to round so none always runs on a warmer cache.
//!
//! - floor: `serde_json::from_str::<Args>` + a direct call + `serde_json::to_string` of the
//!   result (on malformed text: the serde error's message);
//! - structural floor (valid calls): the floor inside a boxed `dyn Future` with two clock reads
//!   and the owned call's strings freed, what any type-erased dispatcher with toolwright's
//!   contract pays before doing anything of its own;
//! - toolwright: `registry.call(ToolCall)` rendered with `Outcome::to_model_string()`, and with
//!   `to_model_json().to_string()`;
//! - rmcp: `ToolRouter::call` with a `ToolCallContext`, arguments parsed into rmcp's
//!   `JsonObject`, the `CallToolResponse` serialized;
//! - rig: `ErasedTool::execute` from a name map, and the effect bus (`serve_inline` on a
//!   `ToolAdapter`), the `ToolResult` serialized.
//!
//! Owned inputs (a `ToolCall`, rig's `String`s) are built before a round's timer starts, and
//! every output is dropped after it stops, for every side alike.
//!
//! **Validation.** The schemas of both tools and of three more (nested objects, enums, bounds,
//! patterns, arrays of objects), each with a valid and an invalid argument text, checked by
//! toolwright and by a compiled `jsonschema::validator_for` of the same schema (the one the
//! registry exports), parse included on both sides. See `validation.rs` for what each side
//! times.
//!
//! `cargo bench --manifest-path benches/peers/Cargo.toml` (optionally `-- ROUNDS N`; `-- profile
//! CASE N` runs only N toolwright calls of one case, for a profiler (`-- profile rig CASE N`,
//! `rmcp` or `floor`, that side's calls), `-- profile json CASE N` the same rendered with
//! `to_model_json().to_string()`; `-- show` prints each case's envelope; `-- keep` keeps a
//! round's outputs until its timer stops instead of dropping each as it comes).

mod rig_side;
mod rmcp_side;
mod tools;
mod validation;

use std::future::Future;
use std::hint::black_box;
use std::pin::Pin;
use std::time::{Duration, Instant};

use serde::de::DeserializeOwned;
use toolwright::{Registry, ToolCall};

use crate::rig_side::Rig;
use crate::rmcp_side::Rmcp;
use crate::tools::{CreateShipmentArgs, Quote, QuoteShippingArgs};

pub fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    if values.len().is_multiple_of(2) {
        (values[mid - 1] + values[mid]) / 2.0
    } else {
        values[mid]
    }
}

/// A value of an already sorted slice.
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    let i = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[i]
}

/// One tool and one argument text.
#[derive(Clone, Copy)]
struct Case {
    label: &'static str,
    tool: &'static str,
    text: &'static str,
    valid: bool,
    /// The hand-written floor for this tool.
    floor: fn(&str) -> String,
}

/// Parse, call, serialize; a parse failure answers with serde's message.
fn floor_of<A: DeserializeOwned>(text: &str, run: impl FnOnce(A) -> Quote) -> String {
    match serde_json::from_str::<A>(text) {
        Ok(args) => serde_json::to_string(&run(args)).unwrap_or_else(|e| e.to_string()),
        Err(e) => e.to_string(),
    }
}

fn quote_floor(text: &str) -> String {
    floor_of(text, |a: QuoteShippingArgs| {
        tools::quote(&a.country, a.weight_grams, &a.speed)
    })
}

fn shipment_floor(text: &str) -> String {
    floor_of(text, |a: CreateShipmentArgs| tools::ship(&a))
}

const CASES: [Case; 4] = [
    Case {
        label: "3 arguments, valid",
        tool: "quote_shipping",
        text: tools::QUOTE_VALID,
        valid: true,
        floor: quote_floor,
    },
    Case {
        label: "3 arguments, malformed (3 violations)",
        tool: "quote_shipping",
        text: tools::QUOTE_MALFORMED,
        valid: false,
        floor: quote_floor,
    },
    Case {
        label: "6 arguments, nested, valid",
        tool: "create_shipment",
        text: tools::SHIPMENT_VALID,
        valid: true,
        floor: shipment_floor,
    },
    Case {
        label: "6 arguments, nested, malformed (4 violations)",
        tool: "create_shipment",
        text: tools::SHIPMENT_MALFORMED,
        valid: false,
        floor: shipment_floor,
    },
];

/// Every side of the dispatch comparison, in the order they are printed.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Side {
    Floor,
    Structural,
    ToolwrightString,
    ToolwrightJson,
    Rmcp,
    RigExecute,
    RigBus,
}

const SIDES: [Side; 7] = [
    Side::Floor,
    Side::Structural,
    Side::ToolwrightString,
    Side::ToolwrightJson,
    Side::Rmcp,
    Side::RigExecute,
    Side::RigBus,
];

impl Side {
    fn label(self) -> &'static str {
        match self {
            Side::Floor => "hand-written floor",
            Side::Structural => "structural floor",
            Side::ToolwrightString => "toolwright registry.call + to_model_string()",
            Side::ToolwrightJson => "toolwright registry.call + to_model_json().to_string()",
            Side::Rmcp => "rmcp ToolRouter::call (JsonObject in, response serialized)",
            Side::RigExecute => "rig ErasedTool::execute (name map, ToolResult serialized)",
            Side::RigBus => "rig bus serve_inline(ToolAdapter) (ToolResult serialized)",
        }
    }
}

struct Peers {
    registry: Registry,
    rmcp: Rmcp,
    rig: Rig,
}

/// Where the timed calls' outputs go: dropped one by one as they come, each side paying for its
/// own output's free, as a server that writes an answer and frees it does (the default); or, with
/// `-- keep`, kept until the round's timer stops. Keeping them grows the heap by a round's outputs
/// (200 of toolwright's 3.7 KB envelopes are 0.7 MB) and glibc gives it back to the kernel when the
/// round ends, so the next round pays page faults that outputs of a few hundred bytes do not: a
/// cost of the batch, not of a call.
struct Out {
    kept: Vec<String>,
    keep: bool,
}

fn out_kept() -> bool {
    std::env::args().any(|a| a == "keep")
}

impl Out {
    fn new(n: usize) -> Self {
        let keep = out_kept();
        Out {
            kept: Vec::with_capacity(if keep { n } else { 0 }),
            keep,
        }
    }

    fn push(&mut self, output: String) {
        if self.keep {
            self.kept.push(output);
        } else {
            drop(black_box(output));
        }
    }

    fn clear(&mut self) {
        self.kept.clear();
    }
}

/// Nanoseconds per call of `side` over `n` calls of `case`; outputs go to `out`.
async fn time(peers: &Peers, side: Side, case: Case, n: usize, out: &mut Out) -> f64 {
    out.clear();
    let start;
    match side {
        Side::Floor => {
            start = Instant::now();
            for _ in 0..n {
                out.push((case.floor)(black_box(case.text)));
            }
        }
        Side::Structural => {
            let calls: Vec<(String, String)> = (0..n)
                .map(|_| (case.tool.to_owned(), case.text.to_owned()))
                .collect();
            start = Instant::now();
            for (name, arguments) in calls {
                let call: Pin<Box<dyn Future<Output = String> + Send>> = Box::pin(async move {
                    let started = tokio::time::Instant::now();
                    let data = (case.floor)(black_box(&arguments));
                    drop(name);
                    drop(arguments);
                    black_box(started.elapsed());
                    data
                });
                out.push(call.await);
            }
        }
        Side::ToolwrightString | Side::ToolwrightJson => {
            let calls: Vec<ToolCall> = (0..n)
                .map(|_| ToolCall::new("call_1", case.tool, case.text))
                .collect();
            start = Instant::now();
            for call in calls {
                let outcome = peers.registry.call(black_box(call)).await;
                out.push(if side == Side::ToolwrightString {
                    outcome.to_model_string()
                } else {
                    outcome.to_model_json().to_string()
                });
            }
        }
        Side::Rmcp => {
            start = Instant::now();
            for _ in 0..n {
                out.push(peers.rmcp.call(case.tool, black_box(case.text)).await);
            }
        }
        Side::RigExecute => {
            let calls: Vec<String> = (0..n).map(|_| case.text.to_owned()).collect();
            start = Instant::now();
            for arguments in calls {
                out.push(peers.rig.execute(case.tool, black_box(arguments)).await);
            }
        }
        Side::RigBus => {
            let calls: Vec<(String, String)> = (0..n)
                .map(|_| (case.tool.to_owned(), case.text.to_owned()))
                .collect();
            start = Instant::now();
            for (name, arguments) in calls {
                out.push(peers.rig.serve(name, black_box(arguments)).await);
            }
        }
    }
    let ns = start.elapsed().as_nanos() as f64 / n as f64;
    out.clear();
    ns
}

/// Checks once, before timing, that every side answers what it should: a success carries the
/// tool's result, a malformed call an error, so no side is timed doing something else.
async fn check(peers: &Peers) {
    let mut out = Out::new(1);
    for case in CASES {
        for side in SIDES {
            if side == Side::Structural && !case.valid {
                continue;
            }
            time(peers, side, case, 1, &mut out).await;
        }
        let floor = (case.floor)(case.text);
        let ours = peers
            .registry
            .call(ToolCall::new("c", case.tool, case.text))
            .await;
        let rmcp = peers.rmcp.call(case.tool, case.text).await;
        let rig = peers.rig.execute(case.tool, case.text.to_owned()).await;
        let bus = peers
            .rig
            .serve(case.tool.to_owned(), case.text.to_owned())
            .await;
        let quoted = floor.starts_with('{');
        let ok = if case.valid {
            quoted
                && ours.status() == toolwright::Status::Success
                && rmcp.contains("structuredContent")
                && !rmcp.contains(r#""isError":true"#)
                && rig.contains("carrier")
                && bus.contains("carrier")
        } else {
            !quoted
                && ours.error_kind().is_some()
                && rmcp.contains(r#""isError":true"#)
                && !rig.contains("carrier")
                && !bus.contains("carrier")
        };
        assert!(
            ok,
            "{}: a side answered wrongly\nfloor {floor}\ntoolwright {}\nrmcp {rmcp}\nrig {rig}\nbus {bus}",
            case.label,
            ours.to_model_string()
        );
    }
}

fn main() {
    let numbers: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let rounds = numbers.first().copied().unwrap_or(400);
    let n = numbers.get(1).copied().unwrap_or(200);
    // `-- profile CASE N`: only N toolwright calls of case CASE (0 to 3, in the order printed),
    // rendered with `to_model_string()` (with `json` among the arguments,
    // `to_model_json().to_string()`; with `rig`, `rmcp` or `floor`, that side's calls instead),
    // for a profiler such as callgrind.
    let profile = std::env::args().any(|a| a == "profile");
    let json = std::env::args().any(|a| a == "json");
    // `-- show`: each case's envelope as toolwright answers it, and nothing timed.
    let show = std::env::args().any(|a| a == "show");

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap_or_else(|e| panic!("a current-thread runtime: {e}"));
    rt.block_on(async {
        let peers = Peers {
            registry: tools::registry(),
            rmcp: Rmcp::new(),
            rig: Rig::new(),
        };
        check(&peers).await;
        if show {
            for case in CASES {
                let call = ToolCall::new("call_1", case.tool, case.text);
                let outcome = peers.registry.call(call).await;
                println!("{}:\n{}\n", case.label, outcome.to_model_string());
            }
            return;
        }
        if profile {
            let case = CASES[rounds.min(CASES.len() - 1)];
            let mut out = Out::new(1);
            let side = if json {
                Side::ToolwrightJson
            } else if std::env::args().any(|a| a == "rig") {
                Side::RigExecute
            } else if std::env::args().any(|a| a == "rmcp") {
                Side::Rmcp
            } else if std::env::args().any(|a| a == "floor") {
                Side::Floor
            } else {
                Side::ToolwrightString
            };
            for _ in 0..n {
                time(&peers, side, case, 1, &mut out).await;
            }
            return;
        }
        println!(
            "peers: {rounds} rounds x {n} calls per side per case; x floor = median of per-round ratios; outputs {}",
            if out_kept() { "kept until a round's timer stops" } else { "dropped as they come" }
        );
        for case in CASES {
            dispatch(&peers, case, rounds, n).await;
        }
        validation::run(rounds, n).await;
    });
}

/// One case's interleaved rounds and its report.
async fn dispatch(peers: &Peers, case: Case, rounds: usize, n: usize) {
    let sides: Vec<Side> = SIDES
        .into_iter()
        .filter(|s| case.valid || *s != Side::Structural)
        .collect();
    let mut out = Out::new(n);
    let warm = Instant::now();
    while warm.elapsed() < Duration::from_millis(300) {
        for &side in &sides {
            time(peers, side, case, n, &mut out).await;
        }
    }
    let mut times = vec![Vec::with_capacity(rounds); sides.len()];
    let mut ratios = vec![Vec::with_capacity(rounds); sides.len()];
    // The registry's own work: its call over the structural floor, per round.
    let mut own = Vec::with_capacity(rounds);
    // toolwright's `to_model_string()` path over rig's `ErasedTool::execute` and over rmcp's
    // router, per round: the peers' figure in the same round, not the ratio of two medians.
    let at = |side: Side| sides.iter().position(|s| *s == side).unwrap_or(0);
    let (ours, rig, rmcp) = (
        at(Side::ToolwrightString),
        at(Side::RigExecute),
        at(Side::Rmcp),
    );
    let mut over_rig = Vec::with_capacity(rounds);
    let mut over_rmcp = Vec::with_capacity(rounds);
    for round in 0..rounds {
        let mut this = vec![0.0; sides.len()];
        for k in 0..sides.len() {
            let i = (round + k) % sides.len();
            this[i] = time(peers, sides[i], case, n, &mut out).await;
        }
        for i in 0..sides.len() {
            times[i].push(this[i]);
            ratios[i].push(this[i] / this[0]);
        }
        if case.valid {
            own.push(this[2] / this[1]);
        }
        over_rig.push(this[ours] / this[rig]);
        over_rmcp.push(this[ours] / this[rmcp]);
    }
    println!("\n{} ({}):", case.label, case.tool);
    for (i, side) in sides.iter().enumerate() {
        let ns = median(&mut times[i]);
        let ratio = median(&mut ratios[i]);
        println!(
            "  {:<60} {:>8.1} ns  x floor {ratio:>5.2}  (p10 {:.2}, p90 {:.2})",
            side.label(),
            ns,
            percentile(&ratios[i], 0.10),
            percentile(&ratios[i], 0.90)
        );
    }
    for (label, mut ratios) in [
        (
            "toolwright to_model_string() path / rig ErasedTool::execute",
            over_rig,
        ),
        (
            "toolwright to_model_string() path / rmcp ToolRouter::call",
            over_rmcp,
        ),
    ] {
        let ratio = median(&mut ratios);
        println!(
            "  {label:<60} same round {ratio:>4.2}  (p10 {:.2}, p90 {:.2})",
            percentile(&ratios, 0.10),
            percentile(&ratios, 0.90)
        );
    }
    if case.valid {
        let ratio = median(&mut own);
        println!(
            "  {:<60} x struct. {ratio:>4.2}  (p10 {:.2}, p90 {:.2})",
            "toolwright to_model_string() over the structural floor",
            percentile(&own, 0.10),
            percentile(&own, 0.90)
        );
    }
}
