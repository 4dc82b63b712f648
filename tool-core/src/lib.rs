//! Runtime of [toolwright](https://docs.rs/toolwright): the registry, the call pipeline
//! (Validate -> Bound -> Classify -> Recover) and the model-facing outcomes.
//!
//! Most users depend on the `toolwright` facade crate and write tools with `#[tool]`; this
//! crate holds everything that is not a macro. The module layout follows the life of a call:
//!
//! | module | stage | owns |
//! |---|---|---|
//! | [`call`] | proposal | [`ToolCall`], [`Session`], what a tool body sees ([`Invocation`], [`ToolContext`], [`State`]) |
//! | [`validate`] | validation | shape errors with paths, field rules, the argument size cap |
//! | [`repair`] | validation | the repair pass: deterministic fixes, then a model's, re-validated |
//! | [`guard`] | validation | scopes and authorization, the application's call and result guards |
//! | [`provenance`] | validation | identifier arguments a tool returned earlier in the conversation |
//! | [`approval`] | validation | a person's approval before a call runs |
//! | [`idempotency`] | execution | [`IdempotencyKey`], [`KeyMode`], the [`IdempotencyStore`] ([`MemoryStore`], `RedisStore`) |
//! | [`execute`] | execution | timeouts, one deadline per call, retries with jittered backoff and a budget, circuit breakers, panic containment, fallbacks |
//! | `interpret` | interpretation | result shape, empty vs success |
//! | [`outcome`] | return | [`Outcome`], [`Status`], [`ErrorKind`], [`Seam`], attempt records, the envelope |
//! | [`content`] | return | [`Content`]: results of text, images, audio and resource links |
//! | [`progress`] | execution | a tool's progress reports, rate-limited, to the sink its caller attached |
//! | [`ask`] | execution | a question a tool asks its user mid-call |
//! | [`observe`] | all | the `tracing` events, per-tool stats, quarantine, redaction of arguments |
//! | [`conversation`] | all | what a conversation remembers: grounded ids, recovery counts, the recovery budget, approval tickets |
//! | `pipeline` | all | the stages in order, and the finalizer every call ends with |
//! | [`registry`] | all | [`Registry`], its builder, auto-collection |
//! | [`tool`] | all | the [`Tool`] trait, [`ToolSpec`], [`ToolMeta`], [`Effect`], field metadata |
//! | [`dynamic`] | all | [`DynamicTool`](dynamic::DynamicTool): a tool defined at run time |
//! | [`error`] | all | [`ToolError`]: how a tool body says what went wrong |
//! | [`providers`] | proposal, return | export to OpenAI, Anthropic, Gemini and MCP; parse their calls; format outcomes back |
//! | [`replay`] | all | record calls, replay them against a changed registry |
//!
//! Every type has one public path: its module's, and for the types above, the crate root's.

#![warn(missing_docs)]
#![forbid(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]
#![deny(unreachable_pub)]

// The stages of a call, in call order: what a call is; Validate (shape and field rules, then
// repair); the guards (scopes and the application's, provenance, approval); Bound
// (idempotency, then timeouts, retries and the breaker); Classify (the result's shape); and
// Recover, into the outcome the model reads.
pub mod call;
mod context;
mod session;
// Validate.
pub mod validate;
// Repair.
pub mod repair;
// Guards.
pub mod guard;
// Provenance.
pub mod provenance;
// Approval.
pub mod approval;
// Bound: idempotency.
pub mod idempotency;
// Bound: attempts.
pub mod execute;
// Classify.
mod interpret;
// Recover: the outcome.
pub mod outcome;
// The outcome's content.
pub mod content;
// What a running tool reaches.
pub mod ask;
pub mod progress;
// Around every call.
pub mod conversation;
pub mod observe;
mod pipeline;
// What a registry is built from.
pub mod dynamic;
pub mod error;
pub mod registry;
pub mod tool;
// Providers, replay, tower.
pub mod providers;
pub mod replay;
#[cfg(feature = "tower")]
#[cfg_attr(docsrs, doc(cfg(feature = "tower")))]
pub mod service;
// Leaves every stage imports.
mod runtime;
mod wording;

/// The redis crate the Redis-backed stores are built on (the `redis` feature), for building the
/// [`ConnectionManager`](redis::aio::ConnectionManager) they take, at the version they take.
#[cfg(feature = "redis")]
#[cfg_attr(docsrs, doc(cfg(feature = "redis")))]
pub use redis;

pub use call::{Invocation, Session, State, ToolCall, ToolContext};
pub use content::Content;
pub use error::ToolError;
pub use idempotency::{IdempotencyKey, IdempotencyStore, KeyMode, MemoryStore};
pub use observe::ArgumentLog;
pub use outcome::{AttemptRecord, ErrorKind, Outcome, RetryStop, Seam, Status, Violation};
pub use registry::{BuildError, Registry, RegistryBuilder, Toolset};
pub use tool::{Effect, Tool, ToolMeta, ToolSpec};

/// A system-prompt paragraph that teaches a model to read toolwright's result envelope: a model
/// recovers from tool errors far more often when the error contract is stated up front than
/// when it has to guess what each field means.
///
/// ```
/// let system_prompt = format!("You are a support agent.\n\n{}", toolwright::ERROR_CONTRACT);
/// assert!(system_prompt.contains("error_type"));
/// ```
pub const ERROR_CONTRACT: &str = "\
Every tool result is a JSON object with a \"status\" field.
- \"success\": the tool ran; use \"data\". If \"degraded\" is true the data came from a fallback and may be stale: say so.
- \"empty\": the tool ran and found nothing. That is an answer, not a failure: do not invent data, and do not retry the same call.
- \"pending\": the action is waiting for a human approval. Tell the user; do not call it again.
- \"error\": the call failed. \"error_type\" says why, \"message\" says what to change, and \"retryable\" says whether calling again can help.
  - invalid_json, schema_mismatch, unknown_argument: your arguments were wrong. \"errors\" lists every problem with its \"path\", what was \"expected\" and what you sent (\"got\"); \"expected_schema\" is the schema. Fix all of them and call again once.
  - unknown_tool: that tool does not exist. Choose one of \"available_tools\"; never guess a name.
  - semantic_invalid: the values break a business rule. Fix them as the message says, or ask the user.
  - ungrounded_identifier: an id you used was never returned by a tool. Look it up with a tool first; never invent ids.
  - unauthorized, approval_denied, permission_denied, auth_expired: not allowed. Do not retry; explain to the user.
  - not_found: the record does not exist. A different id may work; do not repeat the same one.
  - conflict, idempotency_mismatch, duplicate_in_flight: the action already happened or is in progress. Do not repeat it; check its state instead.
  - timeout, unavailable, rate_limited, circuit_open: the tool is temporarily failing and was already retried where safe. You may try later (\"retry_after_ms\" says when), or tell the user it is unavailable. If \"retryable\" is false after a timeout or unavailable, the action may already have happened: check its result before calling again. Never pretend it succeeded.
  - bad_request, tool_panicked, invalid_result: the tool failed in a way you cannot fix. Do not retry; tell the user.
- Whatever the error, when \"retryable\" is false, do not make the same call again: the message says why (you may have retried too often already).
Never state a fact a failed tool call was supposed to confirm.";
