//! [`StoredOutcome`]: what an idempotency store keeps of a finished call, to replay it.

use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::outcome::{ErrorKind, Failure, Outcome, Status};

/// The replayable part of an [`Outcome`]: status, error kind and message, the data, how many
/// attempts the original call took. Serializable (the Redis store keeps it as JSON).
///
/// Not kept: the call id and elapsed time (a replay answers its own call), argument
/// violations and the raw argument text (validation failures are never stored, see
/// [`Disposition`](super::Disposition)).
///
/// ```
/// use toolwright::idempotency::StoredOutcome;
/// use toolwright::{ErrorKind, Status};
///
/// let stored: StoredOutcome = serde_json::from_str(
///     r#"{"status":"error","error_type":"not_found","message":"order A1 does not exist","attempts":1}"#,
/// ).unwrap();
/// let replay = stored.into_outcome("call_2", "refund_order");
/// assert_eq!(replay.status(), Status::Error);
/// assert_eq!(replay.error_kind(), Some(ErrorKind::NotFound));
/// assert_eq!(replay.call_id(), "call_2");
/// assert!(replay.is_replayed());
/// assert!(!replay.retryable()); // the kind's default, as it was when stored
/// ```
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StoredOutcome {
    status: Status,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    error_type: Option<ErrorKind>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    message: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    retryable: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    retry_after_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    data: Option<Box<RawValue>>,
    #[serde(default)]
    attempts: u32,
    /// Answered by a fallback, for this failure of the tool (never stored today: a degraded
    /// outcome is released, the tool itself did not act).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    degraded: Option<ErrorKind>,
}

impl StoredOutcome {
    /// What a store keeps of `outcome`.
    pub fn from_outcome(outcome: &Outcome) -> StoredOutcome {
        let failure = outcome.failure.as_deref();
        StoredOutcome {
            status: outcome.status,
            error_type: failure.map(|f| f.kind),
            message: failure.map(|f| f.message.clone()),
            retryable: failure.map(|f| f.retryable),
            retry_after_ms: failure
                .and_then(|f| f.retry_after)
                .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
            data: outcome.data.clone(),
            attempts: u32::from(outcome.attempts),
            degraded: outcome.degraded,
        }
    }

    /// The outcome to hand back for a replayed call: the stored status, error and data, under the
    /// id of the call that asked again, marked [replayed](Outcome::is_replayed). `attempts` is
    /// the original call's count.
    pub fn into_outcome(self, call_id: impl Into<String>, tool: impl Into<Arc<str>>) -> Outcome {
        let call_id = call_id.into();
        let tool = tool.into();
        let mut outcome = match (self.status, self.error_type) {
            (Status::Error, kind) => {
                // A record without a kind cannot come from `from_outcome`; answer it as a
                // result we cannot use rather than as a success.
                let kind = kind.unwrap_or(ErrorKind::InvalidResult);
                let mut failure = Failure::new(
                    kind,
                    self.message
                        .unwrap_or_else(|| format!("`{tool}` failed earlier ({kind})")),
                );
                if let Some(retryable) = self.retryable {
                    failure.retryable = retryable;
                }
                failure.retry_after = self.retry_after_ms.map(Duration::from_millis);
                let mut outcome = Outcome::failed(call_id, tool, failure);
                outcome.data = self.data;
                outcome
            }
            (status, _) => {
                let had_data = self.data.is_some();
                let data = match self.data {
                    Some(data) => data,
                    None => RawValue::NULL.to_owned(),
                };
                let mut outcome = Outcome::success(call_id, tool, status, data);
                if !had_data {
                    outcome.data = None;
                }
                outcome
            }
        };
        outcome.attempts = u16::try_from(self.attempts).unwrap_or(u16::MAX);
        outcome.degraded = self.degraded;
        outcome.marks.set(crate::outcome::Marks::REPLAYED);
        outcome
    }

    /// The stored status.
    pub fn status(&self) -> Status {
        self.status
    }

    /// The stored error kind, for a failed call.
    pub fn error_kind(&self) -> Option<ErrorKind> {
        self.error_type
    }

    /// The stored failure message.
    pub fn message(&self) -> Option<&str> {
        self.message.as_deref()
    }

    /// The stored data (JSON), for a success or an empty result.
    pub fn data(&self) -> Option<&RawValue> {
        self.data.as_deref()
    }

    /// How many attempts the original call made.
    pub fn attempts(&self) -> u32 {
        self.attempts
    }

    /// The JSON text a store keeps.
    pub fn to_json(&self) -> String {
        // Every field is plain data: serialization cannot fail. Never panic all the same.
        serde_json::to_string(self).unwrap_or_else(|_| r#"{"status":"error"}"#.to_owned())
    }

    /// Reads what [`StoredOutcome::to_json`] wrote.
    pub fn from_json(text: &str) -> Result<StoredOutcome, serde_json::Error> {
        serde_json::from_str(text)
    }

    /// The bytes it holds on the heap (its message and data), to bound a store by memory: its
    /// weight inside a structure that holds it inline.
    pub(crate) fn heap_bytes(&self) -> usize {
        self.message.as_ref().map_or(0, String::len)
            + self.data.as_ref().map_or(0, |d| d.get().len())
    }
}

impl PartialEq for StoredOutcome {
    fn eq(&self, other: &Self) -> bool {
        self.status == other.status
            && self.error_type == other.error_type
            && self.message == other.message
            && self.retryable == other.retryable
            && self.retry_after_ms == other.retry_after_ms
            && self.data.as_deref().map(RawValue::get) == other.data.as_deref().map(RawValue::get)
            && self.attempts == other.attempts
            && self.degraded == other.degraded
    }
}

impl Eq for StoredOutcome {}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn success(data: &str) -> Outcome {
        let mut outcome = Outcome::success(
            "call_1".into(),
            Arc::from("refund_order"),
            Status::Success,
            RawValue::from_string(data.to_owned()).unwrap(),
        );
        outcome.attempts = 2;
        outcome
    }

    #[test]
    fn a_success_round_trips_through_json() {
        let stored = StoredOutcome::from_outcome(&success(r#"{"refund_id":"R9","amount":5}"#));
        let text = stored.to_json();
        assert_eq!(
            text,
            r#"{"status":"success","data":{"refund_id":"R9","amount":5},"attempts":2}"#
        );
        let back = StoredOutcome::from_json(&text).unwrap();
        assert_eq!(back, stored);
        let replay = back.into_outcome("call_7", "refund_order");
        assert_eq!(replay.call_id(), "call_7");
        assert_eq!(replay.status(), Status::Success);
        assert_eq!(replay.attempts(), 2);
        assert_eq!(replay.error_kind(), None);
        assert!(replay.is_replayed());
        assert_eq!(
            replay.to_model_string(),
            r#"{"status":"success","data":{"refund_id":"R9","amount":5},"attempts":2,"replayed":true}"#
        );
    }

    #[test]
    fn an_error_round_trips_with_its_envelope() {
        let mut failure = Failure::new(ErrorKind::RateLimited, "slow down");
        failure.retry_after = Some(Duration::from_millis(1500));
        failure.retryable = false;
        let mut original = Outcome::failed("c1".into(), Arc::from("refund_order"), failure);
        original.attempts = 3;
        let stored =
            StoredOutcome::from_json(&StoredOutcome::from_outcome(&original).to_json()).unwrap();
        let replay = stored.into_outcome("c1", "refund_order");
        let mut envelope = original.to_model_json();
        envelope["replayed"] = true.into();
        assert_eq!(replay.to_model_json(), envelope);
        assert_eq!(replay.retry_after(), Some(Duration::from_millis(1500)));
    }

    #[test]
    fn the_views_of_a_stored_error_are_what_the_call_answered() {
        let mut failure = Failure::new(ErrorKind::NotFound, "order Z9 does not exist");
        failure.retryable = false;
        let mut original = Outcome::failed("c1".into(), Arc::from("refund_order"), failure);
        original.attempts = 3;
        original.data = Some(RawValue::from_string(r#"{"hint":1}"#.into()).unwrap());
        let stored = StoredOutcome::from_outcome(&original);
        assert_eq!(stored.status(), Status::Error);
        assert_eq!(stored.error_kind(), Some(ErrorKind::NotFound));
        assert_eq!(stored.message(), Some("order Z9 does not exist"));
        assert_eq!(stored.data().map(RawValue::get), Some(r#"{"hint":1}"#));
        assert_eq!(stored.attempts(), 3);
    }

    #[test]
    fn a_record_weighs_its_message_and_data() {
        let record = |message: &str, data: &str| {
            StoredOutcome::from_json(&format!(
                r#"{{"status":"error","error_type":"not_found","message":"{message}","data":"{data}"}}"#
            ))
            .unwrap()
            .heap_bytes()
        };
        let (message, data) = (1_000, 3_000);
        let weight = record(&"m".repeat(message), &"d".repeat(data));
        // The bytes of both (data as JSON text: its quotes too).
        let floor = message + data + 2;
        assert!(
            (floor..floor + 512).contains(&weight),
            "{weight} bytes for {message} of message and {data} of data"
        );
    }

    #[test]
    fn two_records_are_equal_only_when_every_field_is() {
        let base = json!({
            "status": "error", "error_type": "rate_limited", "message": "m", "retryable": true,
            "retry_after_ms": 5, "data": {"a": 1}, "attempts": 2, "degraded": "timeout"
        });
        let parse = |v: &serde_json::Value| StoredOutcome::from_json(&v.to_string()).unwrap();
        assert_eq!(parse(&base), parse(&base));
        for (field, other) in [
            ("status", json!("success")),
            ("error_type", json!("timeout")),
            ("message", json!("n")),
            ("retryable", json!(false)),
            ("retry_after_ms", json!(6)),
            ("data", json!({"a": 2})),
            ("attempts", json!(3)),
            ("degraded", json!("unavailable")),
        ] {
            let mut changed = base.clone();
            changed[field] = other;
            assert_ne!(parse(&base), parse(&changed), "{field}");
        }
    }

    #[test]
    fn an_error_record_without_a_kind_is_not_a_success() {
        let stored = StoredOutcome::from_json(r#"{"status":"error"}"#).unwrap();
        let replay = stored.into_outcome("c", "t");
        assert_eq!(replay.error_kind(), Some(ErrorKind::InvalidResult));
    }
}
