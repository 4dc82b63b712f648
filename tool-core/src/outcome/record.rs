//! An [`Outcome`] written out whole and read back: what a run kept in a store (or anywhere
//! else) holds of each call, so that a process that reads it tells the model, the caller and
//! the logs exactly what the first one would have.
//!
//! The written form is a JSON object of plain fields. It is not the model's envelope
//! ([`Outcome::to_model_string`]) and not an idempotency record (which keeps only what a
//! replay answers): it keeps the call id, the attempts, the repair and the raw arguments too.

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;
use serde_json::Value;

use super::{
    AttemptRecord, Attempts, ErrorKind, Failure, Fix, Fixes, Marks, Outcome, RetryStop, Status,
    ToolSchema, Violation,
};

/// The rule names the framework writes; a violation read back names one of them, and any other
/// name (a rule of the application's own) reads back as `custom`.
const RULES: &[&str] = &[
    "type",
    "required",
    "unknown_argument",
    "range",
    "length",
    "pattern",
    "one_of",
    "custom",
    "json",
    "duplicate",
    "grounded",
    "optional",
    "schema",
    "enum",
    "format",
    "const",
];

#[derive(Serialize, Deserialize)]
struct Record<'a> {
    call_id: Cow<'a, str>,
    tool: Cow<'a, str>,
    status: Status,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    failure: Option<FailureRecord<'a>>,
    attempts: u16,
    elapsed_us: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    data: Option<Cow<'a, RawValue>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    degraded: Option<ErrorKind>,
    #[serde(default, skip_serializing_if = "is_false")]
    replayed: bool,
    #[serde(default, skip_serializing_if = "is_false")]
    content: bool,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    repaired_by: Vec<Cow<'a, str>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    raw_arguments: Option<Cow<'a, str>>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    history: Vec<AttemptLine>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    retry_stop: Option<Cow<'a, str>>,
}

#[derive(Serialize, Deserialize)]
struct FailureRecord<'a> {
    kind: ErrorKind,
    message: Cow<'a, str>,
    retryable: bool,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    violations: Vec<ViolationLine<'a>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    available_tools: Option<Vec<Cow<'a, str>>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    expected_schema: Option<Cow<'a, Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    retry_after_ms: Option<u64>,
}

#[derive(Serialize, Deserialize)]
struct ViolationLine<'a> {
    path: Cow<'a, str>,
    rule: Cow<'a, str>,
    expected: Cow<'a, str>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    got: Option<Cow<'a, str>>,
    message: Cow<'a, str>,
}

#[derive(Serialize, Deserialize)]
struct AttemptLine {
    number: u32,
    waited_us: u64,
    elapsed_us: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    error: Option<ErrorKind>,
}

fn is_false(b: &bool) -> bool {
    !*b
}

fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// The outcome whole, as [`Deserialize`] reads it back: every field the outcome reports.
/// A violation's rule outside the framework's own names reads back as `custom`, and elapsed
/// times are kept to the microsecond.
///
/// ```
/// use toolwright::{Outcome, ErrorKind};
///
/// let outcome = Outcome::refused("call_1", "refund_order", ErrorKind::RateLimited, "slow down");
/// let text = serde_json::to_string(&outcome).unwrap();
/// let back: Outcome = serde_json::from_str(&text).unwrap();
/// assert_eq!(back.to_model_string(), outcome.to_model_string());
/// assert_eq!(back.call_id(), "call_1");
/// ```
impl Serialize for Outcome {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let failure = self.failure.as_deref().map(|f| FailureRecord {
            kind: f.kind,
            message: Cow::Borrowed(&f.message),
            retryable: f.retryable,
            violations: f
                .violations
                .iter()
                .map(|v| ViolationLine {
                    path: Cow::Borrowed(&v.path),
                    rule: Cow::Borrowed(v.rule),
                    expected: Cow::Borrowed(&v.expected),
                    got: v.got.as_deref().map(Cow::Borrowed),
                    message: Cow::Borrowed(&v.message),
                })
                .collect(),
            available_tools: f
                .available_tools
                .as_deref()
                .map(|names| names.iter().map(|n| Cow::Borrowed(n.as_str())).collect()),
            expected_schema: f.expected_schema.as_deref().map(|s| Cow::Borrowed(&**s)),
            retry_after_ms: f.retry_after.map(millis),
        });
        let history = self
            .history
            .as_deref()
            .map(|h| {
                h.0.iter()
                    .map(|r| AttemptLine {
                        number: r.number,
                        waited_us: micros(r.waited),
                        elapsed_us: micros(r.elapsed),
                        error: r.error,
                    })
                    .collect()
            })
            .unwrap_or_default();
        Record {
            call_id: Cow::Borrowed(&self.call_id),
            tool: Cow::Borrowed(&self.tool),
            status: self.status,
            failure,
            attempts: self.attempts,
            elapsed_us: micros(self.elapsed),
            data: self.data.as_deref().map(Cow::Borrowed),
            degraded: self.degraded,
            replayed: self.marks.has(Marks::REPLAYED),
            content: self.marks.has(Marks::CONTENT),
            repaired_by: self
                .repaired_by
                .iter()
                .map(|f| Cow::Borrowed(f.as_str()))
                .collect(),
            raw_arguments: self.raw_arguments.as_deref().map(Cow::Borrowed),
            history,
            retry_stop: self.retry_stop.map(|s| Cow::Borrowed(s.as_str())),
        }
        .serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Outcome {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Outcome, D::Error> {
        use serde::de::Error;

        let record = Record::deserialize(deserializer)?;
        let failure = record.failure.map(|f| {
            let violations = f
                .violations
                .into_iter()
                .map(|v| Violation {
                    path: v.path.into_owned(),
                    rule: RULES
                        .iter()
                        .copied()
                        .find(|known| *known == v.rule)
                        .unwrap_or("custom"),
                    expected: v.expected.into_owned(),
                    got: v.got.map(Cow::into_owned),
                    message: v.message.into_owned(),
                })
                .collect();
            Box::new(Failure {
                kind: f.kind,
                message: f.message.into_owned(),
                retryable: f.retryable,
                violations,
                available_tools: f
                    .available_tools
                    .map(|names| names.into_iter().map(Cow::into_owned).collect()),
                expected_schema: f
                    .expected_schema
                    .map(|s| Arc::new(ToolSchema::new(s.into_owned()))),
                retry_after: f.retry_after_ms.map(Duration::from_millis),
            })
        });
        if record.status == Status::Error && failure.is_none() {
            return Err(D::Error::custom(
                "an outcome of status `error` needs its `failure`",
            ));
        }
        let mut marks = Marks::default();
        if record.replayed {
            marks.set(Marks::REPLAYED);
        }
        if record.content {
            marks.set(Marks::CONTENT);
        }
        let mut repaired_by = Fixes::EMPTY;
        for name in &record.repaired_by {
            let fix: Fix = name
                .parse()
                .map_err(|_| D::Error::custom(format_args!("unknown repair `{name}`")))?;
            repaired_by.insert(fix);
        }
        let retry_stop = match record.retry_stop.as_deref() {
            None => None,
            Some("not_idempotent") => Some(RetryStop::NotIdempotent),
            Some("attempts") => Some(RetryStop::Attempts),
            Some("deadline") => Some(RetryStop::Deadline),
            Some("budget") => Some(RetryStop::Budget),
            Some("circuit_open") => Some(RetryStop::CircuitOpen),
            Some(other) => {
                return Err(D::Error::custom(format_args!(
                    "unknown retry stop `{other}`"
                )))
            }
        };
        let history = (!record.history.is_empty()).then(|| {
            Box::new(Attempts(
                record
                    .history
                    .iter()
                    .map(|line| AttemptRecord {
                        number: line.number,
                        waited: Duration::from_micros(line.waited_us),
                        elapsed: Duration::from_micros(line.elapsed_us),
                        error: line.error,
                    })
                    .collect(),
            ))
        });
        Ok(Outcome {
            call_id: record.call_id.into_owned(),
            tool: Arc::from(record.tool.as_ref()),
            status: record.status,
            failure,
            attempts: record.attempts,
            elapsed: Duration::from_micros(record.elapsed_us),
            data: record.data.map(Cow::into_owned),
            degraded: record.degraded,
            marks,
            repaired_by,
            raw_arguments: record.raw_arguments.map(Cow::into_owned),
            history,
            retry_stop,
        })
    }
}
