//! Per-tool stats: what every call of each tool came to, counted where every call ends, and
//! read with [`Registry::stats`](crate::Registry::stats).
//!
//! See [`Stats`] for what is counted and what it costs.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::Duration;

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use crate::execute::BreakerHandle;
use crate::outcome::{ErrorKind, Fix, Outcome, RetryStop, Status};

/// The highest latency the histogram tells apart (longer calls count as this): one hour.
const MAX_MICROS: u64 = 3_600_000_000;

const KINDS: usize = ErrorKind::ALL.len();
const FIXES: usize = Fix::ALL.len();

/// The live counters of one tool, held by its registry entry.
pub(crate) struct ToolStats {
    /// Success, empty, error, pending.
    statuses: [AtomicU64; 4],
    error_types: [AtomicU64; KINDS],
    first_attempt: AtomicU64,
    recovered_after_retry: AtomicU64,
    repaired: AtomicU64,
    repaired_by: [AtomicU64; FIXES],
    model_retried: AtomicU64,
    recovery_required: AtomicU64,
    degraded: AtomicU64,
    replayed: AtomicU64,
    retries: AtomicU64,
    budget_refused: AtomicU64,
    /// Made on the tool's first recorded call: a histogram over these bounds is about 27 KB,
    /// which a registry of a thousand tools would otherwise hold for every tool never called.
    /// `None` inside only if it could not be built (it cannot with these bounds).
    latency: OnceLock<Option<Mutex<Histogram<u64>>>>,
}

impl Default for ToolStats {
    fn default() -> Self {
        ToolStats {
            statuses: [const { AtomicU64::new(0) }; 4],
            error_types: [const { AtomicU64::new(0) }; KINDS],
            first_attempt: AtomicU64::new(0),
            recovered_after_retry: AtomicU64::new(0),
            repaired: AtomicU64::new(0),
            repaired_by: [const { AtomicU64::new(0) }; FIXES],
            model_retried: AtomicU64::new(0),
            recovery_required: AtomicU64::new(0),
            degraded: AtomicU64::new(0),
            replayed: AtomicU64::new(0),
            retries: AtomicU64::new(0),
            budget_refused: AtomicU64::new(0),
            latency: OnceLock::new(),
        }
    }
}

fn status_index(status: Status) -> usize {
    match status {
        Status::Success => 0,
        Status::Empty => 1,
        Status::Error => 2,
        Status::Pending => 3,
    }
}

fn bump(counter: &AtomicU64) {
    counter.fetch_add(1, Relaxed);
}

impl ToolStats {
    /// Counts one finished call. `model_retry`: it succeeded after failures of the tool that
    /// the conversation still remembers.
    pub(crate) fn record(&self, outcome: &Outcome, model_retry: bool) {
        bump(&self.statuses[status_index(outcome.status())]);
        let ok = outcome.is_ok();
        let replayed = outcome.is_replayed();
        let fixes = outcome.repaired_by();
        if let Some(kind) = outcome.error_kind() {
            self.count_error(kind, outcome.retry_stop());
        }
        if replayed {
            bump(&self.replayed);
        } else {
            let attempts = u64::from(outcome.attempts());
            if attempts > 1 {
                self.retries.fetch_add(attempts - 1, Relaxed);
            }
            if ok {
                if outcome.is_degraded() {
                    bump(&self.degraded);
                } else if attempts > 1 {
                    bump(&self.recovered_after_retry);
                } else if fixes.is_empty() {
                    bump(&self.first_attempt);
                }
            }
        }
        if !fixes.is_empty() {
            self.count_repair(fixes.iter());
        }
        if ok && (model_retry || !fixes.is_empty()) {
            if model_retry {
                bump(&self.model_retried);
            }
            bump(&self.recovery_required);
        }
        let latency = self.latency.get_or_init(|| {
            Histogram::new_with_bounds(1, MAX_MICROS, 2)
                .ok()
                .map(Mutex::new)
        });
        if let Some(latency) = latency {
            let micros = u64::try_from(outcome.elapsed().as_micros()).unwrap_or(u64::MAX);
            latency
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .saturating_record(micros.min(MAX_MICROS));
        }
        #[cfg(feature = "metrics")]
        export(outcome, model_retry);
    }

    #[cold]
    fn count_error(&self, kind: ErrorKind, stop: Option<RetryStop>) {
        if let Some(i) = ErrorKind::ALL.iter().position(|k| *k == kind) {
            bump(&self.error_types[i]);
        }
        if stop == Some(RetryStop::Budget) {
            bump(&self.budget_refused);
        }
    }

    #[cold]
    fn count_repair(&self, fixes: impl Iterator<Item = Fix>) {
        bump(&self.repaired);
        for fix in fixes {
            if let Some(i) = Fix::ALL.iter().position(|f| *f == fix) {
                bump(&self.repaired_by[i]);
            }
        }
    }

    /// A snapshot of the counters, with the breaker's state and openings.
    pub(crate) fn snapshot(
        &self,
        tool: &str,
        breaker: Option<&BreakerHandle>,
    ) -> ToolStatsSnapshot {
        let load = |c: &AtomicU64| c.load(Relaxed);
        let by_status = StatusCounts {
            success: load(&self.statuses[0]),
            empty: load(&self.statuses[1]),
            error: load(&self.statuses[2]),
            pending: load(&self.statuses[3]),
        };
        let by_error_type = ErrorKind::ALL
            .iter()
            .zip(&self.error_types)
            .filter_map(|(kind, n)| {
                let n = load(n);
                (n > 0).then(|| (kind.as_str().to_owned(), n))
            })
            .collect();
        let repaired_by = Fix::ALL
            .iter()
            .zip(&self.repaired_by)
            .filter_map(|(fix, n)| {
                let n = load(n);
                (n > 0).then(|| (fix.as_str().to_owned(), n))
            })
            .collect();
        let successes = by_status.success + by_status.empty;
        let recovery_required = load(&self.recovery_required);
        let latency = self.latency.get().and_then(Option::as_ref).map(|h| {
            let h = h.lock().unwrap_or_else(PoisonError::into_inner);
            Latency {
                count: h.len(),
                p50_us: h.value_at_quantile(0.50),
                p95_us: h.value_at_quantile(0.95),
                p99_us: h.value_at_quantile(0.99),
                max_us: h.max(),
            }
        });
        ToolStatsSnapshot {
            tool: tool.to_owned(),
            calls: by_status.success + by_status.empty + by_status.error + by_status.pending,
            by_status,
            by_error_type,
            first_attempt_successes: load(&self.first_attempt),
            recovered_after_retry: load(&self.recovered_after_retry),
            repaired: load(&self.repaired),
            repaired_by,
            model_retried: load(&self.model_retried),
            recovery_required,
            recovery_required_rate: if successes == 0 {
                0.0
            } else {
                recovery_required as f64 / successes as f64
            },
            degraded: load(&self.degraded),
            replayed: load(&self.replayed),
            retries: load(&self.retries),
            retries_refused_by_budget: load(&self.budget_refused),
            breaker: breaker.map(|b| BreakerSummary {
                state: b.state().as_str().to_owned(),
                openings: b.openings(),
            }),
            latency: latency.unwrap_or_default(),
        }
    }
}

/// Every call reported to the `metrics` facade: counters and a histogram, labelled by tool.
#[cfg(feature = "metrics")]
fn export(outcome: &Outcome, model_retry: bool) {
    let tool = outcome.tool().to_owned();
    metrics::counter!(
        "toolwright_calls_total",
        "tool" => tool.clone(),
        "status" => outcome.status().as_str()
    )
    .increment(1);
    if let Some(kind) = outcome.error_kind() {
        metrics::counter!("toolwright_errors_total", "tool" => tool.clone(), "error_type" => kind.as_str())
            .increment(1);
    }
    if !outcome.is_replayed() && outcome.attempts() > 1 {
        metrics::counter!("toolwright_retries_total", "tool" => tool.clone())
            .increment(u64::from(outcome.attempts() - 1));
    }
    if outcome.is_repaired() {
        metrics::counter!("toolwright_repaired_total", "tool" => tool.clone()).increment(1);
    }
    if outcome.is_ok() && (model_retry || outcome.is_repaired()) {
        metrics::counter!("toolwright_recovery_required_total", "tool" => tool.clone())
            .increment(1);
    }
    if outcome.is_degraded() {
        metrics::counter!("toolwright_degraded_total", "tool" => tool.clone()).increment(1);
    }
    if outcome.is_replayed() {
        metrics::counter!("toolwright_replayed_total", "tool" => tool.clone()).increment(1);
    }
    metrics::histogram!("toolwright_call_duration_seconds", "tool" => tool)
        .record(outcome.elapsed().as_secs_f64());
}

/// Calls by status.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct StatusCounts {
    /// `success`.
    pub success: u64,
    /// `empty`.
    pub empty: u64,
    /// `error`.
    pub error: u64,
    /// `pending` (awaiting approval).
    pub pending: u64,
}

/// Latency percentiles of whole calls, in microseconds (2 significant digits).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Latency {
    /// Calls recorded.
    pub count: u64,
    /// Median.
    pub p50_us: u64,
    /// 95th percentile.
    pub p95_us: u64,
    /// 99th percentile.
    pub p99_us: u64,
    /// Slowest.
    pub max_us: u64,
}

/// A tool's breaker, as the stats show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct BreakerSummary {
    /// `closed`, `open`, `half_open` or `forced_open`.
    pub state: String,
    /// How many times it opened on its own.
    pub openings: u64,
}

/// What one tool's calls came to (see [`Stats`] for what each count means).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ToolStatsSnapshot {
    /// The tool's name.
    pub tool: String,
    /// Every call that ended.
    pub calls: u64,
    /// Calls by status.
    pub by_status: StatusCounts,
    /// Failed calls by `error_type` (only those that happened).
    pub by_error_type: BTreeMap<String, u64>,
    /// Successes on the first attempt with the model's own arguments.
    pub first_attempt_successes: u64,
    /// Successes after more than one attempt.
    pub recovered_after_retry: u64,
    /// Calls whose arguments the repair pass fixed.
    pub repaired: u64,
    /// Repaired calls by fix (`trailing_comma`, `model`, ...); a call fixed by two rules counts
    /// under both.
    pub repaired_by: BTreeMap<String, u64>,
    /// Successes right after failures of the tool in the same conversation.
    pub model_retried: u64,
    /// Successes that needed a repair or a model retry.
    pub recovery_required: u64,
    /// `recovery_required` over successful calls (0 when there were none).
    pub recovery_required_rate: f64,
    /// Calls a fallback answered.
    pub degraded: u64,
    /// Calls the idempotency store answered with an earlier result.
    pub replayed: u64,
    /// Attempts after the first, over all calls.
    pub retries: u64,
    /// Calls whose retries the retry budget refused.
    pub retries_refused_by_budget: u64,
    /// The breaker, if the tool has one.
    pub breaker: Option<BreakerSummary>,
    /// Latency of whole calls.
    pub latency: Latency,
}

/// A snapshot of every tool's stats, from [`Registry::stats`](crate::Registry::stats):
/// serializable (serde), and shown as a compact table by `Display`.
///
/// What is counted, per tool:
///
/// - calls by [`Status`] and by `error_type`;
/// - *first-attempt successes*: the body answered on its first attempt, with the model's own
///   arguments (not repaired, not a fallback, not a replay);
/// - *recovered after retry*: a success after more than one attempt of the body;
/// - *repaired* calls, and by what ([`Outcome::repaired_by`]): one count per fix of each call;
/// - *model retries*: a success of the tool in a conversation whose memory still holds failures
///   of that tool counted by its recovery budget (`invalid_json`, `unknown_argument`,
///   `schema_mismatch`, `semantic_invalid`, `circuit_open`) — the model called again after such a
///   failure and got through. Only sessions with a
///   [`ConversationMemory`](crate::conversation::ConversationMemory) that reports its failures
///   ([`clear_failures`](crate::conversation::ConversationMemory::clear_failures) says whether it
///   cleared any) can tell; calls
///   outside a conversation never count as model retries;
/// - the *recovery-required rate*: successful calls that needed a repair or a model retry,
///   over all successful calls (replays and fallbacks included). A tool whose rate is
///   high has a description or schema the model keeps misreading;
/// - fallbacks (degraded answers), idempotent replays;
/// - retries the framework spent (attempts after the first) and retries the retry budget
///   refused;
/// - the breaker's state and how often it opened;
/// - latency percentiles of the whole call, from an HDR histogram (microseconds, 2 significant
///   digits).
///
/// The success path costs a few relaxed atomic increments and one uncontended lock around the
/// histogram's record; nothing is allocated.
///
/// ```
/// # use toolwright::Registry;
/// let registry = Registry::builder().build().unwrap();
/// let stats = registry.stats();
/// assert!(stats.tools.is_empty());
/// println!("{stats}");
/// ```
///
/// With the `metrics` feature, every call is also reported as it ends to the
/// [`metrics`](https://docs.rs/metrics) facade, so Prometheus or any other exporter installed
/// by the application receives it: counters `toolwright_calls_total` (labels `tool`,
/// `status`), `toolwright_errors_total` (`tool`, `error_type`), `toolwright_retries_total`,
/// `toolwright_repaired_total`, `toolwright_recovery_required_total`,
/// `toolwright_degraded_total`, `toolwright_replayed_total` (`tool`), and the histogram
/// `toolwright_call_duration_seconds` (`tool`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Stats {
    /// One entry per tool, sorted by name.
    pub tools: Vec<ToolStatsSnapshot>,
    /// Calls of names no tool has (`unknown_tool`).
    pub unknown_tool_calls: u64,
}

impl Stats {
    pub(crate) fn new(tools: Vec<ToolStatsSnapshot>, unknown_tool_calls: u64) -> Stats {
        Stats {
            tools,
            unknown_tool_calls,
        }
    }

    /// One tool's stats.
    pub fn tool(&self, name: &str) -> Option<&ToolStatsSnapshot> {
        self.tools.iter().find(|t| t.tool == name)
    }
}

fn ms(micros: u64) -> String {
    format!(
        "{:.1}",
        Duration::from_micros(micros).as_secs_f64() * 1000.0
    )
}

impl fmt::Display for Stats {
    /// One line per tool: calls, successes (on the first attempt, after retries), errors, the
    /// recovery-required rate, repairs, model retries, fallbacks, replays, retries (refused by
    /// the budget), the breaker (openings) and latency percentiles in milliseconds; then the
    /// error types of each tool that failed.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let width = self
            .tools
            .iter()
            .map(|t| t.tool.len())
            .chain([4])
            .max()
            .unwrap_or(4);
        writeln!(
            f,
            "{:<width$} {:>6} {:>6} {:>5} {:>5} {:>6} {:>6} {:>5} {:>5} {:>5} {:>6} {:>11} {:>14} {:>8} {:>8} {:>8}",
            "tool", "calls", "ok", "1st", "retry", "error", "recov%", "repd", "model", "fallb", "replay",
            "retries/ref", "breaker/opens", "p50 ms", "p95 ms", "p99 ms",
        )?;
        for t in &self.tools {
            let breaker = t
                .breaker
                .as_ref()
                .map_or_else(|| "-".to_owned(), |b| format!("{}/{}", b.state, b.openings));
            writeln!(
                f,
                "{:<width$} {:>6} {:>6} {:>5} {:>5} {:>6} {:>6.1} {:>5} {:>5} {:>5} {:>6} {:>11} {:>14} {:>8} {:>8} {:>8}",
                t.tool,
                t.calls,
                t.by_status.success + t.by_status.empty,
                t.first_attempt_successes,
                t.recovered_after_retry,
                t.by_status.error,
                t.recovery_required_rate * 100.0,
                t.repaired,
                t.model_retried,
                t.degraded,
                t.replayed,
                format!("{}/{}", t.retries, t.retries_refused_by_budget),
                breaker,
                ms(t.latency.p50_us),
                ms(t.latency.p95_us),
                ms(t.latency.p99_us),
            )?;
        }
        for t in self.tools.iter().filter(|t| !t.by_error_type.is_empty()) {
            let kinds: Vec<String> = t
                .by_error_type
                .iter()
                .map(|(k, n)| format!("{k} {n}"))
                .collect();
            writeln!(f, "  {} errors: {}", t.tool, kinds.join(", "))?;
        }
        if self.unknown_tool_calls > 0 {
            writeln!(f, "  unknown tool calls: {}", self.unknown_tool_calls)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outcome::{Outcome, Status};

    #[test]
    fn a_tool_holds_its_latency_histogram_from_its_first_call() {
        let stats = ToolStats::default();
        assert!(stats.latency.get().is_none(), "nothing held before a call");
        assert_eq!(stats.snapshot("t", None).latency, Latency::default());
        let data = serde_json::value::RawValue::from_string("1".into()).unwrap();
        let outcome = Outcome::success("c1".into(), "t".into(), Status::Success, data);
        stats.record(&outcome, false);
        stats.record(&outcome, false);
        assert_eq!(stats.snapshot("t", None).latency.count, 2);
    }
}
