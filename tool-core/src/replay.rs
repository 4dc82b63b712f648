//! Record calls and what the model was told; replay them against a registry to see what a change
//! to a tool, a schema or a rule would have told the model instead.
//!
//! A tool loop stays honest when recorded traces are replayed on every change ("200 calls:
//! pass 187/200 · repaired 9 · hard-fail 4"). A [`Recorder`] writes one JSON line per call
//! ([`RecordedCall`]: the conversation, the call, the envelope); [`replay`] runs the recorded calls
//! again, in order and in their conversations (so provenance and recovery budgets evolve as
//! they did), and reports what changed.
//!
//! A call counts as unchanged when its `status`, its `error_type` and its `data` are the same;
//! messages, attempts and timings may differ. Tools with side effects run again: replay against
//! a registry whose tools talk to test doubles.
//!
//! ```
//! use toolwright::replay::{replay, Recorder};
//! use toolwright::{Registry, Session, ToolCall};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let registry = Registry::builder().build().unwrap();
//! let recorder = Recorder::new(Vec::new());
//! let session = Session::new("conv-1");
//! let call = ToolCall::new("call_1", "search_orders", "{}");
//! let outcome = registry.call_in(&session, call.clone()).await;
//! recorder.record(&session, &call, &outcome);
//!
//! let lines = String::from_utf8(recorder.into_inner()).unwrap();
//! let report = replay(&registry, lines.lines()).await;
//! assert_eq!(report.to_string(), "1 calls: pass 0/1 · repaired 0 · hard-fail 1 · changed 0 · unreadable 0");
//! # }
//! ```

use std::collections::HashMap;
use std::fmt;
use std::io::Write;
use std::sync::{Mutex, PoisonError};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::call::ToolCall;
use crate::observe::redact::without_sensitive;
use crate::outcome::Outcome;
use crate::registry::Registry;
use crate::session::Session;

/// One recorded call: the conversation it belonged to, the call, the envelope the model read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordedCall {
    /// The session id.
    pub session: String,
    /// The call as the model proposed it.
    pub call: ToolCall,
    /// The envelope the model read.
    pub envelope: Value,
}

/// Writes one [`RecordedCall`] JSON line per call to `W` (a file, a buffer). Thread-safe.
///
/// [`Recorder::new`] records the arguments as the model sent them; [`Recorder::redacting`]
/// replaces the values of `#[arg(sensitive)]` fields first, for recordings that are shared or
/// kept longer than the conversation's data. The envelope is always the model's, which never
/// quotes a sensitive value.
pub struct Recorder<W: Write> {
    out: Mutex<W>,
    redact_with: Option<Registry>,
}

impl<W: Write> Recorder<W> {
    /// A recorder writing to `out`, keeping the arguments as sent: keep its recordings where
    /// you keep other data of your users.
    pub fn new(out: W) -> Self {
        Recorder {
            out: Mutex::new(out),
            redact_with: None,
        }
    }

    /// A recorder writing to `out` that never writes the value of a `#[arg(sensitive)]` field
    /// of `registry`'s tools: the value becomes `"[redacted]"`, everything else is kept, so a
    /// replay still sends the same keys (a call whose outcome depended on the sensitive value
    /// may replay differently, and the report says so).
    ///
    /// ```
    /// use toolwright::replay::Recorder;
    /// use toolwright::Registry;
    ///
    /// let registry = Registry::builder().build().unwrap();
    /// let recorder = Recorder::redacting(&registry, Vec::new());
    /// # let _ = recorder;
    /// ```
    pub fn redacting(registry: &Registry, out: W) -> Self {
        Recorder {
            out: Mutex::new(out),
            redact_with: Some(registry.clone()),
        }
    }

    /// Records one call and its outcome.
    pub fn record(&self, session: &Session, call: &ToolCall, outcome: &Outcome) {
        let redacted = self
            .redact_with
            .as_ref()
            .and_then(|registry| registry.spec(call.name()))
            .and_then(|spec| without_sensitive(call.arguments(), spec.fields()));
        let call = match redacted {
            Some(arguments) => ToolCall::new(call.id(), call.name(), arguments),
            None => call.clone(),
        };
        let line = RecordedCall {
            session: session.id().to_owned(),
            call,
            envelope: outcome.to_model_json(),
        };
        let mut out = self.out.lock().unwrap_or_else(PoisonError::into_inner);
        let written = serde_json::to_writer(&mut *out, &line)
            .and_then(|()| out.write_all(b"\n").map_err(serde_json::Error::io));
        if let Err(e) = written {
            tracing::warn!(target: "toolwright::replay", error = %e, "a call could not be recorded");
        }
    }

    /// The writer back.
    pub fn into_inner(self) -> W {
        self.out
            .into_inner()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

/// One call whose envelope changed on replay.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    /// The recorded call.
    pub recorded: RecordedCall,
    /// The envelope it gets now.
    pub now: Value,
}

/// What a replay found.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ReplayReport {
    /// Calls replayed.
    pub calls: usize,
    /// Calls that succeeded now (`success` or `empty`), repaired ones included.
    pub passed: usize,
    /// Calls that succeeded now only after the repair pass.
    pub repaired: usize,
    /// Calls that failed now.
    pub failed: usize,
    /// Calls whose status, error type or data differ from the recording.
    pub changed: Vec<Change>,
    /// Lines that were not a [`RecordedCall`] call.
    pub unreadable: usize,
}

impl fmt::Display for ReplayReport {
    /// `200 calls: pass 187/200 · repaired 9 · hard-fail 4 · changed 3 · unreadable 0`
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} calls: pass {}/{} · repaired {} · hard-fail {} · changed {} · unreadable {}",
            self.calls,
            self.passed,
            self.calls,
            self.repaired,
            self.failed,
            self.changed.len(),
            self.unreadable
        )
    }
}

/// The fields that decide whether a replayed call changed.
fn verdict(envelope: &Value) -> (&Value, &Value, &Value) {
    (
        &envelope["status"],
        &envelope["error_type"],
        &envelope["data"],
    )
}

/// Replays recorded calls (JSON lines, as a [`Recorder`] writes them) against `registry`, in
/// order, each in a session of its recorded id.
pub async fn replay<'a>(
    registry: &Registry,
    lines: impl IntoIterator<Item = &'a str>,
) -> ReplayReport {
    let mut sessions: HashMap<String, Session> = HashMap::new();
    let mut report = ReplayReport::default();
    for line in lines {
        if line.trim().is_empty() {
            continue;
        }
        let Ok(recorded) = serde_json::from_str::<RecordedCall>(line) else {
            report.unreadable += 1;
            continue;
        };
        let session = sessions
            .entry(recorded.session.clone())
            .or_insert_with(|| Session::new(recorded.session.clone()));
        let outcome = registry.call_in(session, recorded.call.clone()).await;
        report.calls += 1;
        if outcome.is_ok() {
            report.passed += 1;
            report.repaired += usize::from(outcome.is_repaired());
        } else {
            report.failed += 1;
        }
        let now = outcome.to_model_json();
        if verdict(&now) != verdict(&recorded.envelope) {
            report.changed.push(Change { recorded, now });
        }
    }
    report
}
