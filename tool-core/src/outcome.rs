//! What a call came to, and the envelope the model reads.
//!
//! An [`Outcome`] is produced for every [`ToolCall`](crate::ToolCall), whatever happened: a
//! success, an empty result, a classified error, or a call waiting for approval. Nothing in the
//! pipeline panics or returns early with a bare error; the model always gets an envelope it can
//! act on ([`Outcome::to_model_string`], the text a provider's tool-result message carries), and
//! the application always gets the typed facts
//! ([`Outcome::status`], [`Outcome::error_kind`], [`Outcome::seam`], [`Outcome::attempts`]).
//!
//! The `error_type` strings of [`ErrorKind`] are a contract with the model and with the code
//! outside this crate that reads them: they never change.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

mod envelope;
pub(crate) mod fixes;
mod record;
mod schema;
mod text;

pub(crate) use fixes::{Fix, Fixes};
pub(crate) use schema::ToolSchema;

/// One attempt of a call: its number, the wait before it, how long it ran, and how it ended.
/// The attempts of a call, in order, are [`Outcome::attempt_history`](crate::Outcome::attempt_history).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AttemptRecord {
    pub(crate) number: u32,
    pub(crate) waited: Duration,
    pub(crate) elapsed: Duration,
    pub(crate) error: Option<ErrorKind>,
}

impl AttemptRecord {
    /// 1 for the first attempt, 2 for the first retry, ...
    pub fn number(&self) -> u32 {
        self.number
    }

    /// The backoff (or `Retry-After`) wait before this attempt; zero for the first.
    pub fn waited(&self) -> Duration {
        self.waited
    }

    /// How long the attempt ran. A result that came without waiting (the body's first poll) is
    /// timed up to when the outcome was ready, its interpretation included, and so is a first
    /// attempt that answered.
    pub fn elapsed(&self) -> Duration {
        self.elapsed
    }

    /// How the attempt failed, `None` if the tool body returned a result.
    pub fn error(&self) -> Option<ErrorKind> {
        self.error
    }
}

/// The attempts an [`Outcome`](crate::Outcome) keeps, behind one thin pointer so that every
/// outcome stays small.
#[derive(Debug, Clone)]
pub(crate) struct Attempts(pub(crate) Vec<AttemptRecord>);

/// The attempts of one call. One record lives inline, so the success path allocates nothing.
#[derive(Debug, Clone, Default)]
pub(crate) enum History {
    #[default]
    Empty,
    One(AttemptRecord),
    Many(Vec<AttemptRecord>),
}

impl History {
    pub(crate) fn push(&mut self, record: AttemptRecord) {
        match self {
            History::Empty => *self = History::One(record),
            History::One(first) => *self = History::Many(vec![*first, record]),
            History::Many(all) => all.push(record),
        }
    }

    /// What the outcome keeps: nothing for one attempt that answered (the outcome rebuilds it).
    pub(crate) fn into_kept(self) -> Option<Box<Attempts>> {
        match self {
            History::Empty => None,
            History::One(only) if only.number == 1 && only.error.is_none() => None,
            History::One(only) => Some(Box::new(Attempts(vec![only]))),
            History::Many(all) => Some(Box::new(Attempts(all))),
        }
    }

    pub(crate) fn as_slice(&self) -> &[AttemptRecord] {
        match self {
            History::Empty => &[],
            History::One(record) => std::slice::from_ref(record),
            History::Many(all) => all,
        }
    }

    /// Sets the elapsed of the last record, left open by the success path.
    pub(crate) fn close(&mut self, elapsed: Duration) {
        match self {
            History::Empty => {}
            History::One(last) => last.elapsed = elapsed,
            History::Many(all) => {
                if let Some(last) = all.last_mut() {
                    last.elapsed = elapsed;
                }
            }
        }
    }

    pub(crate) fn last_error(&self) -> Option<ErrorKind> {
        self.as_slice().last().and_then(|r| r.error)
    }
}

/// Why the framework stopped retrying a transient failure, told by
/// [`Outcome::retry_stop`](crate::Outcome::retry_stop) and in the failure's message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RetryStop {
    /// The tool is not idempotent and takes no idempotency key, and the failure does not prove
    /// the action never started: repeating it could repeat its side effect.
    NotIdempotent,
    /// Every attempt allowed was made.
    Attempts,
    /// The next attempt could not start before the call's deadline.
    Deadline,
    /// The tool's retry budget was spent.
    Budget,
    /// The tool's circuit breaker opened between attempts.
    CircuitOpen,
}

impl RetryStop {
    /// A short name: `not_idempotent`, `attempts`, `deadline`, `budget`, `circuit_open`.
    pub const fn as_str(self) -> &'static str {
        match self {
            RetryStop::NotIdempotent => "not_idempotent",
            RetryStop::Attempts => "attempts",
            RetryStop::Deadline => "deadline",
            RetryStop::Budget => "budget",
            RetryStop::CircuitOpen => "circuit_open",
        }
    }
}

impl fmt::Display for RetryStop {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The coarse result of a call, the envelope's `status` field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// The tool ran and returned data.
    Success,
    /// The tool ran and found nothing (an empty list, `None`). Distinct from success so the
    /// model does not mistake "no matches" for an answer, nor for a fault. An empty JSON object
    /// is a success: a struct without fields looks the same.
    Empty,
    /// The call failed; [`Outcome::error_kind`] says how.
    Error,
    /// The call waits on something outside the model's control, such as a human approval.
    Pending,
}

impl Status {
    /// The envelope string: `success`, `empty`, `error` or `pending`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Status::Success => "success",
            Status::Empty => "empty",
            Status::Error => "error",
            Status::Pending => "pending",
        }
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The handoff of a tool call where a failure happened.
///
/// The proposal seam belongs to the model; every failure toolwright classifies happens in one of
/// these three.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Seam {
    /// The proposed call was checked before anything ran.
    Validation,
    /// The tool ran against a real dependency under a timeout.
    Execution,
    /// The tool's result was classified before it went back to the model.
    Interpretation,
}

impl Seam {
    /// The envelope string: `validation`, `execution` or `interpretation`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Seam::Validation => "validation",
            Seam::Execution => "execution",
            Seam::Interpretation => "interpretation",
        }
    }
}

impl fmt::Display for Seam {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

macro_rules! error_kinds {
    ($( $(#[$doc:meta])* $variant:ident => $name:literal, $seam:ident, model_retryable = $mr:literal, transient = $tr:literal; )*) => {
        /// Every classified failure, one `error_type` string each.
        ///
        /// The strings (see [`ErrorKind::as_str`]) are the model-facing contract of the
        /// taxonomy and never change. Each kind belongs to one [`Seam`]; each has a default for
        /// the envelope's `retryable` ("may the model usefully call again?") and says whether the
        /// framework itself may retry it ([`ErrorKind::is_transient`]).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum ErrorKind {
            $( $(#[$doc])* $variant, )*
        }

        impl ErrorKind {
            /// Every kind, in taxonomy order.
            pub const ALL: &'static [ErrorKind] = &[$(ErrorKind::$variant),*];

            /// The `error_type` string the model sees, for example `"schema_mismatch"`.
            pub const fn as_str(self) -> &'static str {
                match self { $(ErrorKind::$variant => $name,)* }
            }

            /// The seam this kind of failure belongs to.
            pub const fn seam(self) -> Seam {
                match self { $(ErrorKind::$variant => Seam::$seam,)* }
            }

            /// The default of the envelope's `retryable`: whether the model may usefully call
            /// again, possibly with corrected arguments. A [`ToolError`](crate::ToolError) can
            /// override it per error.
            pub const fn model_retryable(self) -> bool {
                match self { $(ErrorKind::$variant => $mr,)* }
            }

            /// Whether the failure is transient, so that the framework's own attempt loop may
            /// repeat the call when that is safe (`timeout`, `rate_limited`, `unavailable`).
            pub const fn is_transient(self) -> bool {
                match self { $(ErrorKind::$variant => $tr,)* }
            }
        }

        impl FromStr for ErrorKind {
            type Err = UnknownErrorKind;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                match s {
                    $($name => Ok(ErrorKind::$variant),)*
                    _ => Err(UnknownErrorKind(s.to_owned())),
                }
            }
        }
    };
}

error_kinds! {
    /// The argument text is not JSON (or is nested too deeply to parse).
    InvalidJson => "invalid_json", Validation, model_retryable = true, transient = false;
    /// The model named a tool that is not registered. Never routed to a similar name.
    UnknownTool => "unknown_tool", Validation, model_retryable = true, transient = false;
    /// The arguments contain a field the tool does not define.
    UnknownArgument => "unknown_argument", Validation, model_retryable = true, transient = false;
    /// A field is missing, has the wrong type, or breaks a declared rule.
    SchemaMismatch => "schema_mismatch", Validation, model_retryable = true, transient = false;
    /// The values are well-formed but break a business rule (start after end).
    SemanticInvalid => "semantic_invalid", Validation, model_retryable = true, transient = false;
    /// An identifier argument was never returned by an earlier tool call.
    UngroundedIdentifier => "ungrounded_identifier", Validation, model_retryable = true, transient = false;
    /// The caller may not invoke this tool with these arguments.
    Unauthorized => "unauthorized", Validation, model_retryable = false, transient = false;
    /// A human declined the action.
    ApprovalDenied => "approval_denied", Validation, model_retryable = false, transient = false;
    /// The idempotency key was used before with different arguments.
    IdempotencyMismatch => "idempotency_mismatch", Execution, model_retryable = false, transient = false;
    /// The same action is already running under the same idempotency key.
    DuplicateInFlight => "duplicate_in_flight", Execution, model_retryable = false, transient = false;
    /// The tool's circuit breaker is open: it fails fast until its cooldown ends.
    CircuitOpen => "circuit_open", Execution, model_retryable = true, transient = false;
    /// An attempt ran past the tool's timeout and was cancelled.
    Timeout => "timeout", Execution, model_retryable = true, transient = true;
    /// The dependency asked us to slow down (HTTP 429), possibly saying for how long.
    RateLimited => "rate_limited", Execution, model_retryable = true, transient = true;
    /// The dependency could not be reached or failed (network, 5xx, connection errors).
    Unavailable => "unavailable", Execution, model_retryable = true, transient = true;
    /// The credentials expired (HTTP 401).
    AuthExpired => "auth_expired", Execution, model_retryable = false, transient = false;
    /// The dependency refused the action (HTTP 403).
    PermissionDenied => "permission_denied", Execution, model_retryable = false, transient = false;
    /// The record does not exist (HTTP 404); a different identifier may work.
    NotFound => "not_found", Execution, model_retryable = false, transient = false;
    /// The action conflicts with the current state (HTTP 409).
    Conflict => "conflict", Execution, model_retryable = false, transient = false;
    /// The dependency rejected the request (other 4xx).
    BadRequest => "bad_request", Execution, model_retryable = false, transient = false;
    /// The tool panicked; the panic was contained and the registry keeps serving.
    ToolPanicked => "tool_panicked", Execution, model_retryable = false, transient = false;
    /// The tool answered something that is not a usable result.
    InvalidResult => "invalid_result", Interpretation, model_retryable = false, transient = false;
}

impl ErrorKind {
    /// Whether this failure says something about the health of the tool's dependency, so that
    /// it counts against the tool's circuit breaker. Validation failures, client errors and
    /// cancellations never do.
    pub const fn counts_against_breaker(self) -> bool {
        matches!(
            self,
            ErrorKind::Timeout
                | ErrorKind::RateLimited
                | ErrorKind::Unavailable
                | ErrorKind::ToolPanicked
                | ErrorKind::InvalidResult
        )
    }
}

impl ErrorKind {
    /// Whether a failed attempt that ended with this kind may have acted on its dependency, so
    /// that the call's effect is unknown: a timeout, a 5xx, a throttled or panicked attempt,
    /// unless the tool's error proved the request never left (`never_started`). Every other
    /// failure either happened before anything ran (validation, an open breaker, the
    /// idempotency store's refusals) or is the dependency's definite answer (404, 409, ...).
    ///
    /// The one rule both the retry guard (may this attempt be repeated?) and the idempotency
    /// store (record an unknown effect, or release the key?) follow.
    ///
    /// ```
    /// use toolwright::ErrorKind;
    ///
    /// assert!(ErrorKind::Timeout.may_have_acted(false));
    /// assert!(!ErrorKind::Timeout.may_have_acted(true));
    /// assert!(!ErrorKind::NotFound.may_have_acted(false));
    /// ```
    pub const fn may_have_acted(self, never_started: bool) -> bool {
        matches!(
            self,
            ErrorKind::Timeout
                | ErrorKind::RateLimited
                | ErrorKind::Unavailable
                | ErrorKind::ToolPanicked
        ) && !never_started
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for ErrorKind {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for ErrorKind {
    /// Reads an `error_type` string (stored outcomes, logged envelopes).
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// The error of [`ErrorKind::from_str`]: the string is not an `error_type` of the taxonomy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownErrorKind(pub String);

impl fmt::Display for UnknownErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "`{}` is not an error_type of the toolwright taxonomy",
            self.0
        )
    }
}

impl std::error::Error for UnknownErrorKind {}

/// One problem with one argument: where it is, which rule it broke, what was expected and what
/// came. Serialized into the envelope's `errors` array.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Violation {
    /// JSON Pointer to the offending value, `""` for the whole argument object
    /// (for example `/legs/0/from`).
    pub path: String,
    /// The rule that was broken: `type`, `required`, `unknown_argument`, `range`, `length`,
    /// `pattern`, `one_of`, `custom`, `json`, ...
    pub rule: &'static str,
    /// What the tool expects there, in words (`integer`, `at most 20`).
    pub expected: String,
    /// What came instead, abbreviated when long; absent for a missing field.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub got: Option<String>,
    /// One sentence for the model that names the field, the expectation and what came.
    pub message: String,
}

/// Collects every argument problem of one call, so the model can fix them all in one turn.
#[derive(Debug, Default)]
pub struct Violations(Vec<Violation>);

impl Violations {
    /// An empty report.
    pub fn new() -> Self {
        Violations(Vec::new())
    }

    /// Records a problem.
    pub fn push(&mut self, violation: Violation) {
        self.0.push(violation);
    }

    /// Records a problem with a top-level field, building the message from its parts:
    /// "`field` must be {expected}, got {got}".
    pub fn field(&mut self, field: &str, rule: &'static str, expected: String, got: String) {
        let message = crate::wording::must_be(field, &expected, &got);
        self.0.push(Violation {
            path: crate::wording::concat(&["/", &escape_pointer(field)]),
            rule,
            expected,
            got: Some(got),
            message,
        });
    }

    /// Whether nothing was found.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// How many problems were found.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// The problems found.
    pub fn as_slice(&self) -> &[Violation] {
        &self.0
    }

    /// The problems found, by value.
    pub fn into_vec(self) -> Vec<Violation> {
        self.0
    }
}

/// Escapes one JSON Pointer token (RFC 6901).
pub(crate) fn escape_pointer(token: &str) -> String {
    let mut out = String::with_capacity(token.len());
    push_escaped_pointer(&mut out, token);
    out
}

/// [`escape_pointer`], written at the end of `out`: a token with nothing to escape (nearly
/// every key) is copied as it is.
#[inline]
pub(crate) fn push_escaped_pointer(out: &mut String, token: &str) {
    // By bytes: a char-set pattern cost several times as much on the short keys of a report.
    if !token.bytes().any(|b| b == b'~' || b == b'/') {
        out.push_str(token);
        return;
    }
    for c in token.chars() {
        match c {
            '~' => out.push_str("~0"),
            '/' => out.push_str("~1"),
            c => out.push(c),
        }
    }
}

/// The failure half of an [`Outcome`].
#[derive(Debug, Clone)]
pub struct Failure {
    pub(crate) kind: ErrorKind,
    pub(crate) message: String,
    pub(crate) retryable: bool,
    pub(crate) violations: Vec<Violation>,
    pub(crate) available_tools: Option<Arc<[String]>>,
    pub(crate) expected_schema: Option<Arc<ToolSchema>>,
    pub(crate) retry_after: Option<Duration>,
}

impl Failure {
    pub(crate) fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Failure {
            kind,
            message: message.into(),
            retryable: kind.model_retryable(),
            violations: Vec::new(),
            available_tools: None,
            expected_schema: None,
            retry_after: None,
        }
    }
}

/// What a tool call came to. Produced by [`Registry::call`](crate::Registry::call) for every
/// call; never a Rust error, never a panic.
///
/// ```
/// use toolwright::{Outcome, Status};
///
/// fn log(outcome: &Outcome) {
///     match outcome.status() {
///         Status::Error => eprintln!("{} failed: {}", outcome.tool(), outcome.to_model_string()),
///         status => println!("{} -> {status}", outcome.tool()),
///     }
/// }
/// ```
#[derive(Debug, Clone)]
pub struct Outcome {
    pub(crate) call_id: String,
    pub(crate) tool: Arc<str>,
    pub(crate) status: Status,
    pub(crate) failure: Option<Box<Failure>>,
    /// A `u16` (attempts are capped far below it) keeps an `Outcome` under 128 bytes.
    pub(crate) attempts: u16,
    pub(crate) elapsed: Duration,
    pub(crate) data: Option<Box<RawValue>>,
    /// Answered by the tool's fallback, standing in for this failure of the tool itself.
    pub(crate) degraded: Option<ErrorKind>,
    /// Replayed from the idempotency store.
    pub(crate) marks: Marks,
    /// What repaired the arguments before the call ran; empty when they were not repaired.
    pub(crate) repaired_by: Fixes,
    pub(crate) raw_arguments: Option<String>,
    /// The attempts, when there is more to tell than "one attempt, and it answered" (which
    /// [`Outcome::attempt_history`] rebuilds): kept off the success path and out of the size of
    /// every `Outcome`.
    pub(crate) history: Option<Box<Attempts>>,
    pub(crate) retry_stop: Option<RetryStop>,
}

impl Outcome {
    pub(crate) fn success(
        call_id: String,
        tool: Arc<str>,
        status: Status,
        data: Box<RawValue>,
    ) -> Self {
        Outcome {
            call_id,
            tool,
            status,
            failure: None,
            attempts: 1,
            elapsed: Duration::ZERO,
            data: Some(data),
            degraded: None,
            marks: Marks::default(),
            repaired_by: Fixes::EMPTY,
            raw_arguments: None,
            history: None,
            retry_stop: None,
        }
    }

    /// The outcome of a call that was refused before any stage of the pipeline ran (by the
    /// code around the registry: an agent loop's per-turn cap, a gateway's own limit): `kind`,
    /// retryable when the model may act on it, with `message` for the model. Nothing was
    /// attempted.
    ///
    /// ```
    /// use toolwright::{ErrorKind, Outcome};
    ///
    /// let outcome = Outcome::refused(
    ///     "call_9",
    ///     "lookup",
    ///     ErrorKind::RateLimited,
    ///     "this call did not run: too many calls in one turn; make it again in the next turn",
    /// );
    /// assert_eq!(outcome.error_kind(), Some(ErrorKind::RateLimited));
    /// assert!(outcome.retryable());
    /// assert_eq!(outcome.attempts(), 0);
    /// ```
    pub fn refused(
        call_id: impl Into<String>,
        tool: impl Into<Arc<str>>,
        kind: ErrorKind,
        message: impl Into<String>,
    ) -> Self {
        Outcome::failed(call_id.into(), tool.into(), Failure::new(kind, message))
    }

    pub(crate) fn failed(call_id: String, tool: Arc<str>, failure: Failure) -> Self {
        Outcome::failed_boxed(call_id, tool, Box::new(failure))
    }

    /// [`Outcome::failed`] for a failure already boxed.
    pub(crate) fn failed_boxed(call_id: String, tool: Arc<str>, failure: Box<Failure>) -> Self {
        Outcome {
            call_id,
            tool,
            status: Status::Error,
            failure: Some(failure),
            attempts: 0,
            elapsed: Duration::ZERO,
            data: None,
            degraded: None,
            marks: Marks::default(),
            repaired_by: Fixes::EMPTY,
            raw_arguments: None,
            history: None,
            retry_stop: None,
        }
    }

    /// The id of the call this outcome answers (the provider's `tool_call_id`).
    pub fn call_id(&self) -> &str {
        &self.call_id
    }

    /// The tool name as the model proposed it.
    pub fn tool(&self) -> &str {
        &self.tool
    }

    /// Success, empty, error or pending.
    pub fn status(&self) -> Status {
        self.status
    }

    /// `true` for [`Status::Success`] and [`Status::Empty`].
    pub fn is_ok(&self) -> bool {
        matches!(self.status, Status::Success | Status::Empty)
    }

    /// The classified failure, if the call failed.
    pub fn error_kind(&self) -> Option<ErrorKind> {
        self.failure.as_ref().map(|f| f.kind)
    }

    /// The seam where the call failed, if it failed.
    pub fn seam(&self) -> Option<Seam> {
        self.failure.as_ref().map(|f| f.kind.seam())
    }

    /// The model-facing message of a failure.
    pub fn message(&self) -> Option<&str> {
        self.failure.as_ref().map(|f| f.message.as_str())
    }

    /// Every argument problem found, each with its path. Empty unless validation failed.
    pub fn violations(&self) -> &[Violation] {
        self.failure
            .as_ref()
            .map_or(&[], |f| f.violations.as_slice())
    }

    /// The envelope's `retryable`: may the model usefully call again (possibly with fixed
    /// arguments)? `false` for successes.
    pub fn retryable(&self) -> bool {
        self.failure.as_ref().is_some_and(|f| f.retryable)
    }

    /// How long the caller should wait before trying again, when the failure said so.
    pub fn retry_after(&self) -> Option<Duration> {
        self.failure.as_ref().and_then(|f| f.retry_after)
    }

    /// How many attempts the framework made: 1 for a call that validation rejected (the
    /// tool body never ran), 0 for an unknown tool, for a call an open circuit breaker
    /// refused and for one the idempotency store refused (`duplicate_in_flight`,
    /// `idempotency_mismatch`, the store unreachable), and for a call that ran, how many times
    /// the tool body was started. A [replayed](Outcome::is_replayed) outcome reports the
    /// attempts of the call it replays.
    pub fn attempts(&self) -> u32 {
        u32::from(self.attempts)
    }

    /// Every attempt of the tool body, in order: its number, the wait before it, how long it
    /// ran and how it ended. Empty when the body never ran. A call whose only attempt answered
    /// is one record timed like the call itself. This is the story of the call: "the
    /// first attempt timed out after 8 s, the second, 310 ms later, succeeded".
    ///
    /// ```
    /// # fn show(outcome: &toolwright::Outcome) {
    /// for a in outcome.attempt_history() {
    ///     println!("#{} after {:?}: {:?} in {:?}", a.number(), a.waited(), a.error(), a.elapsed());
    /// }
    /// # }
    /// ```
    pub fn attempt_history(&self) -> Vec<AttemptRecord> {
        match &self.history {
            Some(attempts) => attempts.0.clone(),
            None if self.attempts == 1 && self.is_ok() => vec![AttemptRecord {
                number: 1,
                waited: Duration::ZERO,
                elapsed: self.elapsed,
                error: None,
            }],
            None => Vec::new(),
        }
    }

    /// Why the framework stopped retrying a transient failure (the tool is not idempotent, the
    /// attempts, the deadline or the retry budget ran out, the breaker opened). `None` for
    /// successes, for failures that are never retried, and for calls that never ran.
    pub fn retry_stop(&self) -> Option<RetryStop> {
        self.retry_stop
    }

    /// Wall time from the call entering the registry to the outcome.
    pub fn elapsed(&self) -> Duration {
        self.elapsed
    }

    /// The tool's serialized result, for successes and empty results.
    pub fn data(&self) -> Option<&RawValue> {
        self.data.as_deref()
    }

    /// The blocks of a tool that returned [`Content`](crate::content::Content); `None` for any
    /// other tool, or when the call did not succeed.
    pub fn content(&self) -> Option<crate::content::Content> {
        if !self.marks.has(Marks::CONTENT) {
            return None;
        }
        self.data_as()
    }

    /// The result deserialized into a type of your choice, for applications that call tools
    /// themselves. `None` when the call did not succeed or the data has another shape.
    pub fn data_as<T: serde::de::DeserializeOwned>(&self) -> Option<T> {
        self.data
            .as_deref()
            .and_then(|raw| serde_json::from_str(raw.get()).ok())
    }

    /// `true` when the data came from a fallback rather than the tool itself
    /// (`#[tool(fallback = path)]`); the envelope says `"degraded": true, "source": "fallback"`.
    pub fn is_degraded(&self) -> bool {
        self.degraded.is_some()
    }

    /// For a [degraded](Outcome::is_degraded) outcome, why the tool itself could not answer
    /// (`circuit_open`, `unavailable`, `timeout` or `rate_limited`).
    pub fn degraded_by(&self) -> Option<ErrorKind> {
        self.degraded
    }

    /// `true` when the outcome was answered from the idempotency store: an earlier call with the
    /// same idempotency key finished, and this one replays its result (errors included) without
    /// running the tool body. [`attempts`](Outcome::attempts) is the original call's count; the
    /// envelope says `"replayed": true`.
    pub fn is_replayed(&self) -> bool {
        self.marks.has(Marks::REPLAYED)
    }

    /// `true` when the model's arguments failed validation and the repair pass fixed them
    /// (the registry's deterministic rules,
    /// [`RegistryBuilder::deterministic_repair`](crate::RegistryBuilder::deterministic_repair),
    /// or its repairer, [`RegistryBuilder::repairer`](crate::RegistryBuilder::repairer)): the
    /// call ran with the repaired arguments. The envelope says `"repaired": true`.
    pub fn is_repaired(&self) -> bool {
        !self.repaired_by.is_empty()
    }

    /// What repaired the arguments: the deterministic rules that applied, or [`Fix::Model`].
    /// Empty when the arguments were not repaired. The envelope lists them as `"repaired_by"`.
    ///
    /// ```
    /// # fn show(outcome: &toolwright::Outcome) {
    /// for fix in outcome.repaired_by() {
    ///     println!("{} was repaired by {fix}", outcome.call_id());
    /// }
    /// # }
    /// ```
    pub fn repaired_by(&self) -> Fixes {
        self.repaired_by
    }

    /// The argument text of a call that failed (at any seam), kept for debugging; `None` for
    /// successes. It is never logged by toolwright and is not part of the model-facing envelope.
    pub fn raw_arguments(&self) -> Option<&str> {
        self.raw_arguments.as_deref()
    }
}

/// The most bytes a failed call's envelope takes ([`Outcome::to_model_string`],
/// [`Outcome::to_model_json`]): 64 KiB, whatever the schema (a 200,000-value `enum`, a schema of
/// megabytes) and whatever the arguments. Far above a real failure's envelope (a few hundred
/// bytes to a few KiB), far below what would fill a model's context with one tool result.
/// [`Outcome::to_model_string_within`] takes another cap.
pub const DEFAULT_MAX_ENVELOPE_BYTES: usize = 64 * 1024;

/// Facts about how an outcome came to be, one bit each (an `Outcome` stays under 128 bytes).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Marks(u8);

impl Marks {
    /// Answered from the idempotency store: the tool body did not run for this call.
    pub(crate) const REPLAYED: u8 = 1;
    /// The data is a [`Content`](crate::content::Content) the tool returned.
    pub(crate) const CONTENT: u8 = 2;

    pub(crate) fn has(self, mark: u8) -> bool {
        self.0 & mark != 0
    }

    pub(crate) fn set(&mut self, mark: u8) {
        self.0 |= mark;
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod size {
    /// clippy's `result_large_err` fires at 128 bytes, and every `Result<_, Outcome>` is moved
    /// around at this size: the attempt history stays behind a pointer.
    #[test]
    fn an_outcome_stays_under_128_bytes() {
        assert!(std::mem::size_of::<super::Outcome>() < 128);
    }
}
