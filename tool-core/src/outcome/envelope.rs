//! The envelope as the model reads it: the fields an [`Outcome`] shows, how its schema goes in,
//! how a failed call's envelope is cut down to its byte cap, and its JSON value
//! ([`Outcome::to_model_json`]; its text, [`Outcome::to_model_string`], is written in `text`).

use std::borrow::Cow;

use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::Value;

use super::{ErrorKind, Fixes, Outcome, Seam, Status, Violation, DEFAULT_MAX_ENVELOPE_BYTES};

impl Outcome {
    /// The data of a success whose envelope has nothing but its status, data and attempts
    /// (no fallback, replay or repair): most calls' outcome, written by
    /// [`text::success`](super::text::success).
    #[inline]
    pub(super) fn plain_success(&self) -> Option<&RawValue> {
        let plain = self.status == Status::Success
            && self.failure.is_none()
            && self.degraded.is_none()
            && !self.is_replayed()
            && self.repaired_by.is_empty();
        self.data.as_deref().filter(|_| plain)
    }

    pub(super) fn envelope(&self) -> Envelope<'_> {
        let failure = self.failure.as_deref();
        Envelope {
            status: self.status,
            degraded: self.degraded.map(|_| true),
            source: self.degraded.map(|_| "fallback"),
            error_type: failure.map(|f| f.kind),
            seam: failure.map(|f| f.kind.seam()),
            retryable: failure.map(|f| f.retryable),
            message: match (failure, self.status) {
                (Some(f), _) => Some(Cow::Borrowed(f.message.as_str())),
                (None, _) if self.degraded.is_some() => Some(Cow::Owned(format!(
                    "`{}` is unavailable right now; this answer comes from its fallback and may be stale or incomplete: say so",
                    self.tool
                ))),
                (None, Status::Empty) => Some(Cow::Borrowed("No results found.")),
                (None, Status::Pending) => Some(Cow::Owned(format!(
                    "`{}` is waiting for a person's approval; tell the user it is waiting and do not call it again",
                    self.tool
                ))),
                _ => None,
            },
            errors: failure
                .map(|f| Cow::Borrowed(f.violations.as_slice()))
                .filter(|v| !v.is_empty()),
            available_tools: failure
                .and_then(|f| f.available_tools.as_deref())
                .map(Cow::Borrowed),
            retry_after_ms: failure
                .and_then(|f| f.retry_after)
                .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
            // A failed call's envelope repeats its tool's schema: the text written once per
            // schema is copied rather than the tree escaped again for every failure.
            expected_schema: failure
                .and_then(|f| f.expected_schema.as_deref())
                .map(|schema| match schema.text() {
                    Some(text) => SchemaField::Text(text),
                    None => SchemaField::Tree(schema),
                }),
            data: self.data.as_deref(),
            attempts: (self.attempts > 0).then_some(u32::from(self.attempts)),
            replayed: self.is_replayed().then_some(true),
            repaired: self.is_repaired().then_some(true),
            repaired_by: (!self.repaired_by.is_empty()).then_some(self.repaired_by),
        }
    }

    /// The envelope the model reads, as a `serde_json::Value` tree: for code that inspects or
    /// edits it (`outcome.to_model_json()["error_type"]`) or embeds it in a larger JSON document
    /// (MCP's `structuredContent`, Gemini's `functionResponse`).
    ///
    /// ```json
    /// {"status":"error","error_type":"schema_mismatch","seam":"validation","retryable":true,
    ///  "message":"`max_results` must be at most 20, got 50","errors":[{"path":"/max_results",...}],
    ///  "expected_schema":{...}}
    /// ```
    ///
    /// To send the envelope as text, use [`Outcome::to_model_string`]: the same envelope, written
    /// without the tree. Building the tree parses the tool's result again and copies the schema of
    /// a failed call node by node, so `to_model_json().to_string()` took 1.6x to 4.2x the time of
    /// `to_model_string()` (measured beside each other in one process; the most for a failed call,
    /// whose schema `to_model_string` copies as text written once per tool).
    ///
    /// ```
    /// use toolwright::Outcome;
    ///
    /// /// The envelope for a log line, without the schema a failed call repeats.
    /// fn for_log(outcome: &Outcome) -> String {
    ///     let mut envelope = outcome.to_model_json();
    ///     if let Some(fields) = envelope.as_object_mut() {
    ///         fields.remove("expected_schema");
    ///     }
    ///     envelope.to_string()
    /// }
    /// ```
    pub fn to_model_json(&self) -> Value {
        let mut envelope = self.envelope();
        // Measured with the schema's text (see `envelope`), the envelope fits or is cut as
        // `to_model_string` cuts it.
        if self.failure.is_some() && serialized_len(&envelope) > DEFAULT_MAX_ENVELOPE_BYTES {
            fit(&mut envelope, DEFAULT_MAX_ENVELOPE_BYTES);
            return json_value(envelope);
        }
        let schema = self
            .failure
            .as_deref()
            .and_then(|f| f.expected_schema.as_deref());
        // The schema goes in as a clone of its tree, in its place, rather than built again
        // through the serializer.
        envelope.expected_schema = schema.map(|_| SchemaField::Later);
        let mut value = json_value(envelope);
        if let (Some(tree), Some(slot)) = (schema, value.get_mut("expected_schema")) {
            *slot = Value::clone(tree);
        }
        value
    }
}

/// The smallest cap [`Outcome::to_model_string_within`] honours: room for the envelope's fixed
/// fields and a cut message.
///
/// [`Outcome::to_model_string_within`]: super::Outcome::to_model_string_within
pub(super) const MIN_ENVELOPE_BYTES: usize = 1024;

/// The length of `value`'s compact JSON text, counted without keeping it.
pub(super) fn serialized_len<T: Serialize>(value: &T) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.len();
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    match serde_json::to_writer(&mut count, value) {
        Ok(()) => count.0,
        Err(_) => usize::MAX,
    }
}

/// `text` cut to about `max_chars` characters, saying how many were left out.
fn cut_text(text: &str, max_chars: usize) -> String {
    let count = text.chars().count();
    if count <= max_chars {
        return text.to_owned();
    }
    let head: String = text.chars().take(max_chars).collect();
    format!("{head}... ({} more characters left out)", count - max_chars)
}

/// Shrinks a failed call's envelope until its text is at most `max_bytes` long (see
/// [`Outcome::to_model_string_within`] for the order), noting in its message what was left out.
///
/// [`Outcome::to_model_string_within`]: super::Outcome::to_model_string_within
pub(super) fn fit(envelope: &mut Envelope<'_>, max_bytes: usize) {
    let mut notes: Vec<String> = Vec::new();
    let original = envelope.message.clone().unwrap_or_default().into_owned();
    let noted = |envelope: &mut Envelope<'_>, notes: &[String]| {
        let mut message = original.clone();
        for note in notes {
            message.push_str(" (");
            message.push_str(note);
            message.push(')');
        }
        envelope.message = Some(Cow::Owned(message));
    };
    let fits = |envelope: &Envelope<'_>| serialized_len(envelope) <= max_bytes;
    if let Some(schema) = envelope.expected_schema.take() {
        notes.push(format!(
            "expected_schema, {} bytes, is left out to keep this answer under {max_bytes} bytes: read the tool's definition for it",
            serialized_len(&schema)
        ));
        noted(envelope, &notes);
        if fits(envelope) {
            return;
        }
    }
    if let Some(tools) = envelope.available_tools.take() {
        let all = tools.len();
        let mut keep = all;
        let mut shown = tools;
        loop {
            keep /= 2;
            shown = Cow::Owned(shown[..keep].to_vec());
            let mut trial = notes.clone();
            trial.push(format!(
                "only {keep} of the {all} available tools are listed"
            ));
            envelope.available_tools = Some(shown.clone());
            noted(envelope, &trial);
            if fits(envelope) || keep == 0 {
                notes = trial;
                break;
            }
        }
        if fits(envelope) {
            return;
        }
    }
    if let Some(errors) = envelope.errors.take() {
        let all = errors.len();
        let mut keep = all;
        let mut shown = errors;
        loop {
            keep = (keep / 2).max(1);
            let mut kept = shown[..keep.min(shown.len())].to_vec();
            if keep == 1 {
                // One problem whose own text is too long (a custom check's message): cut it.
                let budget = max_bytes / 8;
                for violation in &mut kept {
                    violation.expected = cut_text(&violation.expected, budget);
                    violation.message = cut_text(&violation.message, budget);
                    violation.got = violation.got.as_deref().map(|g| cut_text(g, budget));
                    violation.path = cut_text(&violation.path, budget);
                }
            }
            shown = Cow::Owned(kept);
            let mut trial = notes.clone();
            if keep < all {
                trial.push(format!(
                    "only the first {keep} of the {all} problems are listed: fix them and call again"
                ));
            }
            envelope.errors = Some(shown.clone());
            noted(envelope, &trial);
            if fits(envelope) || keep == 1 {
                notes = trial;
                break;
            }
        }
        if fits(envelope) {
            return;
        }
    }
    // The message itself: cut to what is left of the budget, the notes kept whole.
    let rest =
        serialized_len(envelope).saturating_sub(envelope.message.as_ref().map_or(0, |m| m.len()));
    let budget = max_bytes.saturating_sub(rest).saturating_sub(256) / 4;
    let mut message = cut_text(&original, budget.max(64));
    for note in &notes {
        message.push_str(" (");
        message.push_str(note);
        message.push(')');
    }
    envelope.message = Some(Cow::Owned(message));
}

/// The envelope the model reads, borrowed from an [`Outcome`](super::Outcome): written by hand as
/// text (`text`), or through serde as a tree.
#[derive(Serialize)]
pub(super) struct Envelope<'a> {
    pub(super) status: Status,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) degraded: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) source: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) error_type: Option<ErrorKind>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) seam: Option<Seam>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) retryable: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) message: Option<Cow<'a, str>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) errors: Option<Cow<'a, [Violation]>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) available_tools: Option<Cow<'a, [String]>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) retry_after_ms: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) expected_schema: Option<SchemaField<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) data: Option<&'a RawValue>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) attempts: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) replayed: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) repaired: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) repaired_by: Option<Fixes>,
}

/// A failed call's schema in the envelope: the tree itself, or its compact text written once.
pub(super) enum SchemaField<'a> {
    Tree(&'a Value),
    Text(&'a RawValue),
    /// `null`, its place kept for the tree that [`Outcome::to_model_json`] puts there.
    ///
    /// [`Outcome::to_model_json`]: super::Outcome::to_model_json
    Later,
}

impl Serialize for SchemaField<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            SchemaField::Tree(tree) => tree.serialize(serializer),
            SchemaField::Text(text) => text.serialize(serializer),
            SchemaField::Later => serializer.serialize_unit(),
        }
    }
}

/// The envelope as a tree.
pub(super) fn json_value(envelope: Envelope<'_>) -> Value {
    serde_json::to_value(envelope).unwrap_or_else(|e| {
        // Unreachable in practice: every field is plain data. Still never panic.
        serde_json::json!({"status": "error", "error_type": "invalid_result", "message": e.to_string()})
    })
}
