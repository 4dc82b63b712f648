//! The replay evaluation: the corpus replayed under a repair policy, and its table.
//!
//! Each trace is a `replay::RecordedCall` line (the conversation, the call, the envelope the model
//! read) plus its label, the latency of the model turn that proposed it, and for a malformed
//! call the model's recorded answer to the repair prompt. Calls run in order, each in its
//! recorded conversation, a turn's calls together; the model policy's repairer looks the
//! answer up by call id and counts the round trip. Latency is the recorded model turn, plus the
//! pipeline's own time (tools run on tokio's paused clock, so a timeout costs its virtual
//! seconds, the same on every run), plus the recorded repair turn when the model was asked.

#![allow(dead_code)]

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::sync::{Arc, Mutex};

use serde::Deserialize;
use toolwright::repair::{parse_reply, Fix, Repair, RepairRequest};
use toolwright::replay::RecordedCall;
use toolwright::{Outcome, Session};

use crate::tools::{self, Policy};

/// The model's recorded answer to the repair prompt of one call.
#[derive(Debug, Clone, Deserialize)]
pub struct ModelRepair {
    pub reply: String,
    pub ms: u64,
}

/// One trace of the corpus. Only the `RecordedCall` fields are required, so plain
/// `replay::Recorder` output replays too (unlabelled, each call on its own, no model answers).
#[derive(Debug, Clone, Deserialize)]
pub struct Trace {
    #[serde(flatten)]
    pub recorded: RecordedCall,
    /// Calls of one conversation with the same turn were proposed together and run together.
    #[serde(default)]
    pub turn: Option<u32>,
    #[serde(default)]
    pub class: String,
    /// `valid`, `mechanical`, `form` or `other`.
    #[serde(default)]
    pub group: String,
    /// The latency of the model turn that proposed the call.
    #[serde(default)]
    pub turn_ms: u64,
    #[serde(default)]
    pub model_repair: Option<ModelRepair>,
}

/// Reads the corpus: one trace per line; a line that is not one is an error naming it.
pub fn read(text: &str) -> Result<Vec<Trace>, String> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| serde_json::from_str(l).map_err(|e| format!("line {}: {e}", i + 1)))
        .collect()
}

/// One tool's row.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolRow {
    pub calls: usize,
    /// Calls whose arguments failed on their form as sent: they needed a repair.
    pub needed_repair: usize,
    pub passed_after_repair: usize,
    pub hard_failures: usize,
}

/// What one policy came to on the corpus.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    pub policy: Policy,
    pub calls: usize,
    pub passed: usize,
    pub passed_after_repair: usize,
    pub hard_failures: usize,
    pub p50_ms: u64,
    pub p95_ms: u64,
    pub model_round_trips: usize,
    /// Mechanical malformations that passed without a model round trip, of all of them.
    pub mechanical_by_rules: usize,
    pub mechanical: usize,
    /// Malformed calls (mechanical and form) that passed, of all of them.
    pub malformed_passed: usize,
    pub malformed: usize,
    /// Repairs per rule (and `model`).
    pub by_fix: BTreeMap<&'static str, usize>,
    pub tools: BTreeMap<String, ToolRow>,
    /// Recorded envelopes whose status, error type or data differ on this replay.
    pub changed: usize,
}

impl Report {
    pub fn pass_rate(&self) -> f64 {
        self.passed as f64 / self.calls.max(1) as f64
    }
}

fn form_failure(envelope: &serde_json::Value) -> bool {
    matches!(
        envelope["error_type"].as_str(),
        Some("invalid_json" | "unknown_argument" | "schema_mismatch")
    )
}

fn verdict(
    envelope: &serde_json::Value,
) -> (&serde_json::Value, &serde_json::Value, &serde_json::Value) {
    (
        &envelope["status"],
        &envelope["error_type"],
        &envelope["data"],
    )
}

/// Replays the corpus under `policy`. Run it on tokio's paused clock for the same latencies
/// on every run.
pub async fn evaluate(traces: &[Trace], policy: Policy) -> Report {
    let answers: Arc<HashMap<String, ModelRepair>> = Arc::new(
        traces
            .iter()
            .filter_map(|t| Some((t.recorded.call.id().to_owned(), t.model_repair.clone()?)))
            .collect(),
    );
    let asked: Arc<Mutex<HashMap<String, u64>>> = Arc::default();
    let model = {
        let answers = Arc::clone(&answers);
        let asked = Arc::clone(&asked);
        move |request: &RepairRequest<'_>| match answers.get(request.call_id()) {
            Some(answer) => {
                if let Ok(mut asked) = asked.lock() {
                    asked.insert(request.call_id().to_owned(), answer.ms);
                }
                parse_reply(&answer.reply)
            }
            None => Repair::Abort,
        }
    };
    let registry = tools::registry(policy, Some(model));
    let mut sessions: HashMap<String, Session> = HashMap::new();
    let mut outcomes: Vec<Outcome> = Vec::with_capacity(traces.len());
    let mut i = 0;
    while i < traces.len() {
        let first = &traces[i];
        let mut j = i + 1;
        while j < traces.len()
            && traces[j].recorded.session == first.recorded.session
            && first.turn.is_some()
            && traces[j].turn == first.turn
        {
            j += 1;
        }
        for t in &traces[i..j] {
            sessions
                .entry(t.recorded.session.clone())
                .or_insert_with(|| tools::session(&t.recorded.session));
        }
        let batch = traces[i..j]
            .iter()
            .map(|t| registry.call_in(&sessions[&t.recorded.session], t.recorded.call.clone()));
        outcomes.extend(futures_util::future::join_all(batch).await);
        i = j;
    }
    let asked = asked.lock().map(|a| a.clone()).unwrap_or_default();
    summarize(policy, traces, &outcomes, &asked)
}

fn summarize(
    policy: Policy,
    traces: &[Trace],
    outcomes: &[Outcome],
    asked: &HashMap<String, u64>,
) -> Report {
    let mut report = Report {
        policy,
        calls: traces.len(),
        passed: 0,
        passed_after_repair: 0,
        hard_failures: 0,
        p50_ms: 0,
        p95_ms: 0,
        model_round_trips: asked.len(),
        mechanical_by_rules: 0,
        mechanical: 0,
        malformed_passed: 0,
        malformed: 0,
        by_fix: BTreeMap::new(),
        tools: BTreeMap::new(),
        changed: 0,
    };
    let mut latencies = Vec::with_capacity(traces.len());
    for (trace, outcome) in traces.iter().zip(outcomes) {
        let id = trace.recorded.call.id();
        let model_ms = asked.get(id).copied().unwrap_or(0);
        let elapsed = u64::try_from(outcome.elapsed().as_millis()).unwrap_or(u64::MAX);
        latencies.push(trace.turn_ms + elapsed + model_ms);
        let row = report
            .tools
            .entry(trace.recorded.call.name().to_owned())
            .or_default();
        row.calls += 1;
        row.needed_repair += usize::from(form_failure(&trace.recorded.envelope));
        let ok = outcome.is_ok();
        if ok {
            report.passed += 1;
        } else {
            report.hard_failures += 1;
            row.hard_failures += 1;
        }
        if ok && outcome.is_repaired() {
            report.passed_after_repair += 1;
            row.passed_after_repair += 1;
            for fix in outcome.repaired_by() {
                *report.by_fix.entry(fix.as_str()).or_default() += 1;
            }
        }
        match trace.group.as_str() {
            "mechanical" => {
                report.mechanical += 1;
                report.malformed += 1;
                report.malformed_passed += usize::from(ok);
                report.mechanical_by_rules +=
                    usize::from(ok && !outcome.repaired_by().contains(Fix::Model));
            }
            "form" => {
                report.malformed += 1;
                report.malformed_passed += usize::from(ok);
            }
            _ => {}
        }
        report.changed +=
            usize::from(verdict(&outcome.to_model_json()) != verdict(&trace.recorded.envelope));
    }
    latencies.sort_unstable();
    report.p50_ms = percentile(&latencies, 0.50);
    report.p95_ms = percentile(&latencies, 0.95);
    report
}

/// Nearest-rank percentile of sorted values.
fn percentile(sorted: &[u64], p: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = (p * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

fn ms(ms: u64) -> String {
    if ms >= 1000 {
        format!("{:.2} s", ms as f64 / 1000.0)
    } else {
        format!("{ms} ms")
    }
}

fn pct(n: usize, of: usize) -> String {
    format!("{n} ({:.1}%)", 100.0 * n as f64 / of.max(1) as f64)
}

/// One row's cell for a report.
type Cell<'a> = &'a dyn Fn(&Report) -> String;

/// Seed 003's table, one column per policy, then the repairs per rule and per tool.
pub fn render(reports: &[Report]) -> String {
    let mut out = String::new();
    let width = 16;
    let _ = write!(out, "{:<34}", "measure");
    for r in reports {
        let _ = write!(out, "{:>width$}", r.policy.as_str());
    }
    out.push('\n');
    let rows: [(&str, Cell); 9] = [
        ("calls", &|r| r.calls.to_string()),
        ("passed", &|r| pct(r.passed, r.calls)),
        ("passed after repair", &|r| {
            r.passed_after_repair.to_string()
        }),
        ("hard failures", &|r| r.hard_failures.to_string()),
        ("p50 latency", &|r| ms(r.p50_ms)),
        ("p95 latency", &|r| ms(r.p95_ms)),
        ("model round trips", &|r| r.model_round_trips.to_string()),
        ("mechanical fixed without model", &|r| {
            format!("{}/{}", r.mechanical_by_rules, r.mechanical)
        }),
        ("malformed calls passed", &|r| {
            format!("{}/{}", r.malformed_passed, r.malformed)
        }),
    ];
    for (name, cell) in rows {
        let _ = write!(out, "{name:<34}");
        for r in reports {
            let _ = write!(out, "{:>width$}", cell(r));
        }
        out.push('\n');
    }
    out.push_str("\nrepairs by rule\n");
    let mut fixes: Vec<&str> = reports
        .iter()
        .flat_map(|r| r.by_fix.keys().copied())
        .collect();
    fixes.sort_unstable();
    fixes.dedup();
    for fix in fixes {
        let _ = write!(out, "  {fix:<32}");
        for r in reports {
            let _ = write!(out, "{:>width$}", r.by_fix.get(fix).copied().unwrap_or(0));
        }
        out.push('\n');
    }
    out.push_str("\nper tool: recovery required (arguments failed on their form as sent); passed after repair / hard failures\n");
    let _ = write!(out, "  {:<18} {:>5} {:>7}", "tool", "calls", "needed");
    for r in reports {
        let _ = write!(out, "{:>width$}", r.policy.as_str());
    }
    out.push('\n');
    if let Some(first) = reports.first() {
        for (tool, row) in &first.tools {
            let _ = write!(
                out,
                "  {tool:<18} {:>5} {:>7}",
                row.calls,
                format!(
                    "{:.0}%",
                    100.0 * row.needed_repair as f64 / row.calls.max(1) as f64
                )
            );
            for r in reports {
                let other = r.tools.get(tool).cloned().unwrap_or_default();
                let _ = write!(
                    out,
                    "{:>width$}",
                    format!("{} / {}", other.passed_after_repair, other.hard_failures)
                );
            }
            out.push('\n');
        }
    }
    out
}
