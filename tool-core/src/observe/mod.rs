//! What the registry logs: one [`tracing`] event per call and one per attempt, with the fields
//! a trace needs to tell one real side effect from three (the call id, the attempt, the
//! idempotency key), and never the arguments unless asked.
//!
//! | target | level | when | fields |
//! |---|---|---|---|
//! | `toolwright::call` | `DEBUG` for a success, `INFO` otherwise | every call | `tool`, `call_id`, `status`, `error_type`, `seam`, `attempts`, `elapsed_ms`, `idempotency_key`, `degraded_by`, `replayed`, `retry_stop`, and `arguments` (see below) |
//! | `toolwright::attempt` | `DEBUG` | every attempt of a call that ran | `tool`, `call_id`, `attempt`, `waited_ms`, `elapsed_ms`, `result` (`success` or the `error_type`), `idempotency_key` |
//! | `toolwright::execute` | `ERROR` | a tool body panicked (the panic was contained) | `tool`, `panic` (the panic's message, with the values of the call's `#[arg(sensitive)]` fields replaced by `"[redacted]"`) |
//! | `toolwright::execute` | `DEBUG`, `INFO`, `WARN` | a retry is scheduled, retries stopped, a fallback answered or failed | `tool`, `attempt`, `error_type`, ... |
//! | `toolwright::approval`, `toolwright::repair`, `toolwright::idempotency` | `INFO`/`WARN`/`ERROR` | an approver panicked, a repair pass, a key taken over or not recorded | `tool`, ... |
//!
//! Fields that do not apply are left out (`error_type` of a success, `idempotency_key` of a tool
//! that takes none). The argument text is not logged by default: a spike in `schema_mismatch`
//! is a safe signal to share, the customer data inside a failed payload is not. With
//! [`RegistryBuilder::log_arguments`](crate::RegistryBuilder::log_arguments) set to
//! [`ArgumentLog::Redacted`], the events of failed calls carry the arguments with the value of
//! every `#[arg(sensitive)]` field, and of every key the tool's schema does not declare,
//! replaced by `"[redacted]"`. The raw text stays on the outcome
//! ([`Outcome::raw_arguments`]) for an access-controlled path of the application's own.
//!
//! ```
//! use toolwright::{ArgumentLog, Registry};
//! let registry = Registry::builder().log_arguments(ArgumentLog::Redacted).build().unwrap();
//! # let _ = registry;
//! ```
//!
//! # Spans
//!
//! Every call also runs inside one span named and attributed after the OpenTelemetry semantic
//! conventions for generative AI (<https://opentelemetry.io/docs/specs/semconv/gen-ai/>), so a
//! tool call shows up inside the model's turn in a tracing backend:
//!
//! | field | value |
//! |---|---|
//! | span name | `execute_tool`, and `otel.name` = `execute_tool {tool}`, the name the conventions give it |
//! | `otel.kind` | `internal` |
//! | `gen_ai.operation.name` | `execute_tool` |
//! | `gen_ai.tool.name` | the tool's name (for an unknown tool, the name the model sent) |
//! | `gen_ai.tool.call.id` | the call id |
//! | `gen_ai.tool.type` | `function` |
//! | `gen_ai.conversation.id` | the [`Session`](crate::Session)'s id, for a call inside a conversation |
//! | `error.type` | the `error_type` of a failed call (absent otherwise) |
//! | `otel.status_code` | `ERROR` for a failed call |
//! | `toolwright.status`, `toolwright.seam`, `toolwright.attempts`, `toolwright.degraded_by`, `toolwright.replayed` | what the outcome says |
//!
//! Its target is `toolwright::span`, its level `INFO`. The events above that a call causes land
//! inside it: the breaker's transitions, the repair pass, the retries, one `toolwright::attempt`
//! event per attempt (number, wait, elapsed, classification, idempotency key) and the
//! `toolwright::call` event. No span field carries an argument value. With
//! `tracing-opentelemetry`'s layer on an OpenTelemetry tracer, each span becomes an OTel span
//! and each event a span event; the `otel.*` fields set the OTel span's name, kind and status.
//!
//! When no subscriber wants the span (none is installed, or a filter leaves out
//! `toolwright::span` at `INFO`), a call runs exactly as it would without it: the check is the
//! callsite's cached interest, no field is evaluated and nothing is allocated.
//!
//! The span current where the call is made (where [`Registry::call`](crate::Registry::call) is
//! called) is its parent, for instance the model's turn:
//!
//! ```
//! use toolwright::{Registry, ToolCall};
//! use tracing::Instrument;
//!
//! # async fn turn(registry: &Registry) {
//! let turn = tracing::info_span!("chat", gen_ai.operation.name = "chat");
//! let call = ToolCall::new("call_1", "search_orders", r#"{"query":"ada"}"#);
//! let outcome = async { registry.call(call).await }.instrument(turn).await;
//! # let _ = outcome;
//! # }
//! ```

mod quarantine;
pub(crate) mod redact;
pub(crate) mod span;
mod stats;

pub use quarantine::{Quarantine, QuarantineEntry, QuarantinePolicy};
pub use redact::REDACTED;
pub(crate) use redact::{redacted, scrubbed};
pub(crate) use stats::ToolStats;
pub use stats::{BreakerSummary, Latency, Stats, StatusCounts, ToolStatsSnapshot};

use crate::idempotency::IdempotencyKey;
use crate::outcome::{Outcome, Status};
use crate::tool::spec::ToolSpec;

/// What the call events say of the arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum ArgumentLog {
    /// Nothing (the default).
    #[default]
    Off,
    /// The arguments of failed calls, the value of every `#[arg(sensitive)]` field and of every
    /// key the schema does not declare replaced by `"[redacted]"`; text that is not a JSON
    /// object is described, not shown.
    Redacted,
}

/// What one call came to, as `tracing` events (see the [module docs](self)).
pub(crate) fn call(
    outcome: &Outcome,
    key: Option<&IdempotencyKey>,
    arguments: Option<&str>,
    spec: Option<&ToolSpec>,
    mode: ArgumentLog,
) {
    let ok = matches!(outcome.status(), Status::Success | Status::Empty) && !outcome.is_degraded();
    if ok {
        if tracing::enabled!(target: "toolwright::call", tracing::Level::DEBUG) {
            emit(outcome, key, None, true);
        }
    } else if tracing::enabled!(target: "toolwright::call", tracing::Level::INFO) {
        let shown = match (mode, arguments, spec) {
            (ArgumentLog::Redacted, Some(text), Some(spec))
                if outcome.status() == Status::Error =>
            {
                Some(redacted(text, spec.input_schema(), spec.fields()))
            }
            _ => None,
        };
        emit(outcome, key, shown.as_deref(), false);
    }
    if outcome.attempts() > 0
        && !outcome.is_replayed()
        && tracing::enabled!(target: "toolwright::attempt", tracing::Level::DEBUG)
    {
        for attempt in outcome.attempt_history() {
            tracing::debug!(
                target: "toolwright::attempt",
                tool = outcome.tool(),
                call_id = outcome.call_id(),
                attempt = attempt.number(),
                waited_ms = millis(attempt.waited()),
                elapsed_ms = millis(attempt.elapsed()),
                result = attempt.error().map_or("success", |k| k.as_str()),
                idempotency_key = key.map(|k| k.as_str()),
                "attempt"
            );
        }
    }
}

fn emit(outcome: &Outcome, key: Option<&IdempotencyKey>, arguments: Option<&str>, ok: bool) {
    let kind = outcome.error_kind();
    // `tracing` fixes an event's level where it is written: one macro per level, same fields.
    macro_rules! event {
        ($level:expr) => {
            tracing::event!(
                target: "toolwright::call",
                $level,
                tool = outcome.tool(),
                call_id = outcome.call_id(),
                status = outcome.status().as_str(),
                error_type = kind.map(|k| k.as_str()),
                seam = outcome.seam().map(|s| s.as_str()),
                attempts = outcome.attempts(),
                elapsed_ms = millis(outcome.elapsed()),
                idempotency_key = key.map(|k| k.as_str()),
                degraded_by = outcome.degraded_by().map(|k| k.as_str()),
                replayed = outcome.is_replayed(),
                retry_stop = outcome.retry_stop().map(|s| s.as_str()),
                arguments,
                "tool call"
            )
        };
    }
    if ok {
        event!(tracing::Level::DEBUG);
    } else {
        event!(tracing::Level::INFO);
    }
}

/// Milliseconds with microsecond precision, for durations that are often under one.
fn millis(d: std::time::Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
