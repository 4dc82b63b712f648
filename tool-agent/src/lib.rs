//! The agent loop of toolwright: an [`Agent`] sends the conversation and the registry's tools to
//! a [`ChatModel`], runs the calls the model makes through
//! [`Registry::call_in`](toolwright_core::Registry::call_in) (every validation, guard and retry
//! of the registry in force), sends the outcomes back, and repeats until the model answers
//! without calls or a limit ends the run. The run's [`End`] is typed, and the [`Run`] keeps the
//! transcript, every step's outcomes and the token usage.
//!
//! ```
//! use toolwright::prelude::*;
//! use toolwright::agent::{Agent, End, Message, ScriptedModel, Turn};
//!
//! /// Repeat the text back.
//! #[tool(read_only)]
//! async fn echo(text: String) -> Result<String, ToolError> {
//!     Ok(text)
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let registry = Registry::builder().tool(Echo).build()?;
//! // A model that calls `echo`, then answers. With the `http` feature, a real one:
//! // `OpenAiChat::from_env("gpt-4.1-mini")`.
//! let model = ScriptedModel::new([
//!     Turn::calls([ToolCall::new("c1", "echo", r#"{"text":"hi"}"#)]),
//!     Turn::text("The tool said hi."),
//! ]);
//! let agent = Agent::builder(model, registry).system("You are terse.").build()?;
//!
//! let run = agent.run(&Session::new("conv-1"), vec![Message::user("Say hi")]).await;
//! assert!(matches!(run.end(), End::Final(text) if text == "The tool said hi."));
//! assert_eq!(run.steps().len(), 2);
//! assert!(run.steps()[0].outcomes[0].is_ok());
//! # Ok(()) }
//! ```
//!
//! # The rules of the loop
//!
//! - **The error contract** ([`ERROR_CONTRACT`](toolwright_core::ERROR_CONTRACT)) follows the
//!   system prompt, so the model reads `retryable`, `error_type` and `available_tools` in a failed
//!   call's envelope instead of guessing.
//! - **Failed calls are results.** An unknown tool, malformed arguments, a denied call: each goes
//!   back to the model as its call's result; none ends the run.
//! - **Parallel calls** of one turn run at once, up to
//!   [`tool_concurrency`](AgentBuilder::tool_concurrency), and their outcomes go back in the
//!   order of the calls.
//! - **Limits:** a step cap ([`End::StepLimit`], 10 turns by default), a wall-clock deadline for
//!   the run ([`AbortReason::Deadline`]), and the conversation's recovery budget: a model that
//!   makes the same failing call again after its envelope said to stop ends the run
//!   ([`AbortReason::RecoveryExhausted`]) instead of burning the remaining steps.
//! - **Usage limits** ([`UsageLimits`], none by default): model requests, tool calls, tokens
//!   and cost per run, counted across resumes; a run that would pass one ends
//!   [`End::UsageLimit`].
//! - **Repeated calls** ([`RepeatedCalls`]): the same tool with the same arguments past 3 runs
//!   (or 2 failures in a row) is not run again; the model gets the earlier answer or is told
//!   to change course.
//! - **Model requests are retried** on `rate_limited` (honouring `Retry-After`), `unavailable`
//!   (5xx, a stream cut short) and `timeout`, with the tools' capped full-jitter backoff, within
//!   the agent's own retry budget.
//! - **Approval:** a call that waits for a person ends the run [`End::Pending`] with the ticket;
//!   [`Agent::resume`] continues it once decided, without repeating the calls that already ran.
//! - **Steps:** each [`Step`] is one model turn: its `calls` in the model's order and its
//!   `outcomes` in the order they finished, each naming its call (`outcome.call_id()`); a call
//!   that waited for approval and ran after the resume has both outcomes in its step.
//! - **As it happens:** [`AgentBuilder::on_event`] receives each [`AgentEvent`] (text deltas, a
//!   call started, a call's outcome, a model retry, a step finished).
//!
//! # Model clients
//!
//! [`ScriptedModel`] needs nothing. With the `http` feature, the module `http` holds clients
//! for OpenAI Chat Completions (and any server speaking it: vLLM, llama.cpp's server, Ollama,
//! with a `base_url`), with streaming; the OpenAI Responses API; Anthropic Messages; and Gemini
//! `generateContent`. Keys come from `OPENAI_API_KEY`, `ANTHROPIC_API_KEY` and `GEMINI_API_KEY`.

#![cfg_attr(docsrs, feature(doc_cfg))]
#![forbid(unsafe_code)]
#![deny(unreachable_pub)]

mod agent;
mod asker;
mod kept;
mod limits;
mod message;
mod model;
mod repeats;
mod scripted;

#[cfg(feature = "http")]
#[cfg_attr(docsrs, doc(cfg(feature = "http")))]
pub mod http;

pub use agent::{
    AbortReason, Agent, AgentBuilder, End, Run, Step, DEFAULT_DEADLINE, DEFAULT_MAX_CALLS_PER_TURN,
    DEFAULT_MAX_STEPS, DEFAULT_MODEL_TIMEOUT,
};
pub use kept::{RunError, RUN_LEASE_MARGIN};
pub use limits::{Limit, Prices, UsageLimits};
pub use message::{AssistantTurn, Message, Usage};
pub use model::{AgentEvent, BoxFuture, ChatModel, Events, ModelError, ModelRequest, Turn};
pub use repeats::{
    RepeatedCalls, DEFAULT_MAX_IDENTICAL_CALLS, DEFAULT_MAX_IDENTICAL_FAILURES, REPEAT_RECORD_CAP,
};
pub use scripted::{ScriptedModel, ScriptedRequest};
