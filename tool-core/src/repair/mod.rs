//! The repair pass: one more try at arguments that failed validation, before the call fails.
//!
//! Two repairers, in order. First the [`DeterministicRepair`] rules
//! ([`RegistryBuilder::deterministic_repair`](crate::RegistryBuilder::deterministic_repair)),
//! which fix mechanical slips (a code fence, a trailing comma, `"2"` for an integer, ...) from the
//! text and the tool's schema alone, in microseconds and without a model round trip; then, if
//! they did not make the call pass, the registry's [`Repairer`], usually one more model turn.
//! Either way the result is validated again, whole; the envelope says `"repaired": true` and
//! `"repaired_by"` names the rules that applied (or `"model"`).
//!
//! One repair pass recovers most calls that failed on their form; further passes add little
//! and cost another model round trip each (about a second), so the registry repairs at most
//! once. When a call fails with `invalid_json`, `unknown_argument` or
//! `schema_mismatch` and the registry has a [`Repairer`]
//! ([`RegistryBuilder::repairer`](crate::RegistryBuilder::repairer)), the repairer gets the
//! tool, its schema, the argument text and the one-sentence error. Arguments it returns are
//! validated again, whole; if they pass, the call runs with them and its envelope says
//! `"repaired": true`. If the repairer gives up ([`Repair::Abort`]), times out, panics, or
//! returns arguments that still fail, the model gets the failure of *its own* arguments, which
//! it can act on. Semantic, provenance and authorization failures are never repaired: they are
//! not a matter of form.
//!
//! A repairer is usually one more, short model turn: [`RepairRequest::prompt`] is a short
//! repair prompt, and [`parse_reply`] reads the model's answer.
//!
//! ```
//! use toolwright::repair::{Repair, RepairRequest};
//! use toolwright::Registry;
//!
//! // A deterministic repairer: numbers sent as strings become numbers.
//! let unquote_numbers = |request: &RepairRequest<'_>| {
//!     let Ok(serde_json::Value::Object(mut args)) = serde_json::from_str(request.arguments()) else {
//!         return Repair::Abort;
//!     };
//!     for value in args.values_mut() {
//!         if let Some(n) = value.as_str().and_then(|s| s.parse::<i64>().ok()) {
//!             *value = n.into();
//!         }
//!     }
//!     Repair::Arguments(serde_json::Value::Object(args).to_string())
//! };
//! let registry = Registry::builder().repairer(unquote_numbers).build().unwrap();
//! # let _ = registry;
//! ```

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use serde_json::Value;

use crate::outcome::{ErrorKind, Failure, Violation};
use crate::runtime::clock::ClockHandle;
use crate::runtime::contain;
use crate::tool::spec::ToolSpec;

mod deterministic;
pub(crate) mod stage;

pub use crate::outcome::fixes::{Fix, Fixes, FixesIter};
pub use deterministic::{DeterministicRepair, Repaired};

/// The instructions of the repair prompt: short on purpose, a repair is a narrow task.
pub const REPAIR_INSTRUCTIONS: &str = "You repair malformed tool arguments.
Return only the corrected arguments object.
Never add fields the schema does not define.";

/// What a repairer sees of a call that failed validation.
pub struct RepairRequest<'a> {
    pub(crate) spec: &'a ToolSpec,
    pub(crate) call_id: &'a str,
    pub(crate) arguments: &'a str,
    pub(crate) failure: &'a Failure,
}

impl RepairRequest<'_> {
    /// The tool.
    pub fn tool(&self) -> &str {
        self.spec.name()
    }

    /// The id of the call being repaired (the provider's `tool_call_id`).
    pub fn call_id(&self) -> &str {
        self.call_id
    }

    /// The tool's input schema.
    pub fn input_schema(&self) -> &Value {
        self.spec.input_schema()
    }

    /// The argument text the model sent.
    pub fn arguments(&self) -> &str {
        self.arguments
    }

    /// `invalid_json`, `unknown_argument` or `schema_mismatch`.
    pub fn error_kind(&self) -> ErrorKind {
        self.failure.kind
    }

    /// The error, as the one sentence a person would write.
    pub fn error(&self) -> &str {
        &self.failure.message
    }

    /// Every problem found, each with its path, what was expected and what came.
    pub fn violations(&self) -> &[Violation] {
        &self.failure.violations
    }

    /// The repair prompt for this call: [`REPAIR_INSTRUCTIONS`] as the system
    /// part, and this user part (the tool, its schema, the error, what to return).
    pub fn prompt(&self) -> String {
        format!(
            "Your previous call to `{tool}` was rejected:\n\n  {error}\n\nThe arguments you sent:\n{arguments}\n\nThe schema of `{tool}`:\n{schema}\n\nReturn corrected arguments only. If the call cannot be repaired, return {{\"abort\": true}}.",
            tool = self.tool(),
            error = self.error(),
            arguments = self.arguments,
            schema = self.input_schema(),
        )
    }
}

/// A repairer's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Repair {
    /// Corrected argument text, to validate again.
    Arguments(String),
    /// The call cannot be repaired: the model gets its original failure.
    Abort,
}

/// One more try at arguments that failed validation ([module docs](self)). A closure
/// `Fn(&RepairRequest) -> Repair` is a repairer.
pub trait Repairer: Send + Sync + 'static {
    /// The repaired arguments, or [`Repair::Abort`].
    fn repair<'a>(
        &'a self,
        request: &'a RepairRequest<'a>,
    ) -> Pin<Box<dyn Future<Output = Repair> + Send + 'a>>;
}

impl<F> Repairer for F
where
    F: Fn(&RepairRequest<'_>) -> Repair + Send + Sync + 'static,
{
    fn repair<'a>(
        &'a self,
        request: &'a RepairRequest<'a>,
    ) -> Pin<Box<dyn Future<Output = Repair> + Send + 'a>> {
        let answer = self(request);
        Box::pin(std::future::ready(answer))
    }
}

/// Whether a failure is one the repair pass may fix: a matter of form.
pub(crate) fn repairable(kind: ErrorKind) -> bool {
    matches!(
        kind,
        ErrorKind::InvalidJson | ErrorKind::UnknownArgument | ErrorKind::SchemaMismatch
    )
}

/// The repair stage's question: the repairer's corrected text for a call that failed on its
/// form, bounded by `timeout` with panics contained; otherwise why not, as the word logged.
pub(crate) async fn ask(
    repairer: &dyn Repairer,
    request: &RepairRequest<'_>,
    clock: &ClockHandle,
    timeout: Duration,
) -> Result<String, &'static str> {
    let cut = clock.now() + timeout;
    match clock
        .run_until(cut, contain(|| repairer.repair(request)))
        .await
        .0
    {
        Some(Ok(Repair::Arguments(text))) => Ok(text),
        Some(Ok(Repair::Abort)) => Err("abort"),
        Some(Err(_)) => Err("the repairer panicked"),
        None => Err("the repairer did not answer in time"),
    }
}

/// The deterministic rules' repair of a call that failed on its form, when one applies.
/// Failures no rule can fix (a bound, a missing field) are not even tried.
pub(crate) fn by_rules(
    rules: &DeterministicRepair,
    spec: &ToolSpec,
    arguments: &str,
    failure: &Failure,
) -> Option<Repaired> {
    if !rules.may_fix(failure) {
        return None;
    }
    rules.repair(spec.input_schema(), arguments)
}

/// Logs one repair pass: every malformed call, recovered or not, so a tool whose calls often
/// need repair shows that its description needs work. `by`: `rules` or `model`; `fixes`: the
/// rules that applied (`model` for the model).
pub(crate) fn log(
    tool: &str,
    call_id: &str,
    kind: ErrorKind,
    (by, fixes): (&str, Fixes),
    result: &str,
) {
    tracing::info!(
        target: "toolwright::repair",
        tool,
        call_id,
        error_type = kind.as_str(),
        by,
        rules = %fixes,
        result,
        "malformed arguments; repair pass"
    );
}

/// Reads a model's reply to [`RepairRequest::prompt`]: a JSON object is the corrected
/// arguments (a fenced code block around it is fine); `{"abort": true}`, or anything that is
/// not a JSON object, is [`Repair::Abort`].
///
/// ```
/// use toolwright::repair::{parse_reply, Repair};
///
/// assert_eq!(parse_reply("```json\n{\"max_results\": 5}\n```"), Repair::Arguments(r#"{"max_results":5}"#.into()));
/// assert_eq!(parse_reply(r#"{"abort": true}"#), Repair::Abort);
/// assert_eq!(parse_reply("I cannot fix this."), Repair::Abort);
/// ```
pub fn parse_reply(reply: &str) -> Repair {
    let text = reply.trim();
    let text = text
        .strip_prefix("```json")
        .or_else(|| text.strip_prefix("```"))
        .map_or(text, |rest| rest.trim_end().trim_end_matches("```"))
        .trim();
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(map)) if map.get("abort") == Some(&Value::Bool(true)) => Repair::Abort,
        Ok(value @ Value::Object(_)) => Repair::Arguments(value.to_string()),
        _ => Repair::Abort,
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;

    use super::*;
    use crate::tool::spec::ToolMeta;

    #[test]
    fn a_reply_is_arguments_only_when_it_is_an_object_that_does_not_abort() {
        let args = |text: &str| Repair::Arguments(text.into());
        assert_eq!(
            parse_reply(r#"{"max_results": 5}"#),
            args(r#"{"max_results":5}"#)
        );
        assert_eq!(parse_reply("```\n{\"a\": 1}\n```"), args(r#"{"a":1}"#));
        assert_eq!(parse_reply(r#"{"abort": true}"#), Repair::Abort);
        // `abort` as an argument name with another value is an argument like any other.
        assert_eq!(
            parse_reply(r#"{"abort": false, "a": 1}"#),
            args(r#"{"abort":false,"a":1}"#)
        );
        assert_eq!(parse_reply("[1, 2]"), Repair::Abort);
        assert_eq!(parse_reply("I cannot fix this."), Repair::Abort);
    }

    #[test]
    fn a_repair_request_shows_the_repairer_the_rejected_call() {
        let schema = json!({"type": "object", "properties": {"amount": {"type": "number"}}});
        let spec = ToolSpec {
            name: Arc::from("refund_order"),
            meta: ToolMeta::new("refund_order", "Refund an order."),
            input_schema: Arc::new(crate::outcome::ToolSchema::new(schema.clone())),
            output_schema: Arc::new(json!({})),
            timeout: Duration::from_secs(1),
            returns_content: false,
            examples: Arc::from([]),
        };
        let mut failure = Failure::new(
            ErrorKind::SchemaMismatch,
            "`amount` must be a number, got string \"5\"",
        );
        failure.violations = vec![Violation {
            path: "/amount".into(),
            rule: "type",
            expected: "a number".into(),
            got: Some("string \"5\"".into()),
            message: failure.message.clone(),
        }];
        let request = RepairRequest {
            spec: &spec,
            call_id: "call_7",
            arguments: r#"{"amount":"5"}"#,
            failure: &failure,
        };
        assert_eq!(request.tool(), "refund_order");
        assert_eq!(request.call_id(), "call_7");
        assert_eq!(request.input_schema(), &schema);
        assert_eq!(request.arguments(), r#"{"amount":"5"}"#);
        assert_eq!(request.error_kind(), ErrorKind::SchemaMismatch);
        assert_eq!(request.error(), failure.message);
        assert_eq!(request.violations(), failure.violations.as_slice());
        let prompt = request.prompt();
        assert!(prompt.starts_with("Your previous call to `refund_order` was rejected:"));
        let schema_text = schema.to_string();
        for part in [failure.message.as_str(), r#"{"amount":"5"}"#, &schema_text] {
            assert!(prompt.contains(part), "{prompt}");
        }
    }
}
