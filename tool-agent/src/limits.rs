//! What one run may use: model requests, tool calls, tokens and money ([`UsageLimits`]), so a
//! run is bounded the way a call is, by what it spends and not only by its steps and its clock.
//!
//! The design follows Pydantic AI's `UsageLimits`: a request or a tool call is counted before it
//! is made, so the limit is never passed; tokens are known only once the provider answered, so a
//! token or cost limit ends the run after the answer that passed it.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::message::Usage;

/// Limits on what one run uses; every limit is off unless set. Set them with
/// [`AgentBuilder::usage_limits`](crate::AgentBuilder::usage_limits); a run that would pass one
/// ends [`End::UsageLimit`](crate::End::UsageLimit).
///
/// | limit | counted | checked |
/// |---|---|---|
/// | [`max_requests`](Self::max_requests) | every model request, retries included | before each request: the one that would pass it is not sent |
/// | [`max_tool_calls`](Self::max_tool_calls) | every call that runs (not those refused by the per-turn cap or answered from the run's record) | before a turn's calls run: a turn that would pass it runs none of them |
/// | [`max_input_tokens`](Self::max_input_tokens), [`max_output_tokens`](Self::max_output_tokens), [`max_total_tokens`](Self::max_total_tokens) | as each provider reports them | after each answer: the answer that passed it ends the run, its calls not run |
/// | [`max_cost`](Self::max_cost) | tokens times the [`Prices`] given | after each answer, as tokens |
///
/// A call that does not run because of a limit is answered with a `rate_limited` refusal, not
/// retryable, that names the limit, so the transcript pairs every call with a result.
///
/// The counts belong to the run ([`Run::model_requests`](crate::Run::model_requests),
/// [`Run::tool_calls`](crate::Run::tool_calls), [`Run::usage`](crate::Run::usage)): a run
/// resumed after approval, or a kept run resumed after a crash, goes on counting from them, so
/// no restart resets a limit. A model client that reports no tokens leaves the token and cost
/// limits nothing to count.
///
/// ```
/// use toolwright::agent::{Agent, Prices, ScriptedModel, UsageLimits};
/// use toolwright::Registry;
///
/// let limits = UsageLimits::new()
///     .max_requests(20)
///     .max_tool_calls(40)
///     .max_output_tokens(50_000)
///     // $2.00 per million input tokens, $8.00 per million output tokens, at most $0.50.
///     .max_cost(0.50, Prices::per_million_tokens(2.0, 8.0));
/// let agent = Agent::builder(ScriptedModel::new([]), Registry::builder().build().unwrap())
///     .usage_limits(limits)
///     .build()
///     .unwrap();
/// # let _ = agent;
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct UsageLimits {
    requests: Option<u64>,
    tool_calls: Option<u64>,
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    total_tokens: Option<u64>,
    cost: Option<(u64, Prices)>,
}

/// What a model's tokens cost, per million, in any one currency: the unit of
/// [`UsageLimits::max_cost`].
///
/// ```
/// use toolwright::agent::{Prices, Usage};
///
/// let prices = Prices::per_million_tokens(2.0, 8.0);
/// let usage = Usage { input_tokens: 500_000, output_tokens: 100_000 };
/// assert!((prices.cost(usage) - 1.8).abs() < 1e-9);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Prices {
    input: f64,
    output: f64,
}

impl Prices {
    /// The price of a million input tokens and of a million output tokens. A negative or
    /// non-finite price counts as 0.
    pub fn per_million_tokens(input: f64, output: f64) -> Prices {
        let clean = |p: f64| if p.is_finite() && p > 0.0 { p } else { 0.0 };
        Prices {
            input: clean(input),
            output: clean(output),
        }
    }

    /// What `usage` costs at these prices.
    pub fn cost(&self, usage: Usage) -> f64 {
        // u64 -> f64 rounds past 2^53 tokens, far past any bill.
        (usage.input_tokens as f64 * self.input + usage.output_tokens as f64 * self.output)
            / 1_000_000.0
    }

    /// The cost in millionths of the currency, rounded up, saturating.
    fn micros(&self, usage: Usage) -> u64 {
        to_micros(self.cost(usage))
    }
}

/// An amount in millionths, rounded up; `as` saturates (NaN is 0).
fn to_micros(amount: f64) -> u64 {
    (amount * 1_000_000.0).ceil() as u64
}

impl UsageLimits {
    /// No limits (the default).
    pub fn new() -> Self {
        UsageLimits::default()
    }

    /// Model requests a run may make, retries included (Pydantic AI's `request_limit`). The
    /// request that would pass it is not sent.
    pub fn max_requests(mut self, requests: u64) -> Self {
        self.requests = Some(requests);
        self
    }

    /// Tool calls a run may run. A turn whose calls would pass it runs none of them.
    pub fn max_tool_calls(mut self, calls: u64) -> Self {
        self.tool_calls = Some(calls);
        self
    }

    /// Input (prompt) tokens over the whole run, as the provider reports them. Checked after
    /// each answer.
    pub fn max_input_tokens(mut self, tokens: u64) -> Self {
        self.input_tokens = Some(tokens);
        self
    }

    /// Output tokens over the whole run (reasoning tokens included where the provider counts
    /// them as output). Checked after each answer.
    pub fn max_output_tokens(mut self, tokens: u64) -> Self {
        self.output_tokens = Some(tokens);
        self
    }

    /// Input and output tokens together over the whole run. Checked after each answer.
    pub fn max_total_tokens(mut self, tokens: u64) -> Self {
        self.total_tokens = Some(tokens);
        self
    }

    /// The most the run's tokens may cost at `prices` (in their currency). Checked after each
    /// answer; [`End::UsageLimit`](crate::End::UsageLimit) reports a cost in millionths of the
    /// currency.
    pub fn max_cost(mut self, max: f64, prices: Prices) -> Self {
        let max = if max.is_finite() && max > 0.0 {
            max
        } else {
            0.0
        };
        self.cost = Some((to_micros(max), prices));
        self
    }

    /// Whether one more model request passes the request limit, with the count so far.
    pub(crate) fn before_request(&self, made: u64) -> Option<Exceeded> {
        let allowed = self.requests?;
        let used = made.saturating_add(1);
        (used > allowed).then_some(Exceeded {
            limit: Limit::Requests,
            used,
            allowed,
        })
    }

    /// Whether running `calls` more passes the tool-call limit, with the count so far.
    pub(crate) fn before_calls(&self, ran: u64, calls: u64) -> Option<Exceeded> {
        let allowed = self.tool_calls?;
        let used = ran.saturating_add(calls);
        (calls > 0 && used > allowed).then_some(Exceeded {
            limit: Limit::ToolCalls,
            used,
            allowed,
        })
    }

    /// The first token or cost limit `usage` passed.
    pub(crate) fn after_answer(&self, usage: Usage) -> Option<Exceeded> {
        let checks = [
            (Limit::InputTokens, self.input_tokens, usage.input_tokens),
            (Limit::OutputTokens, self.output_tokens, usage.output_tokens),
            (Limit::TotalTokens, self.total_tokens, usage.total()),
            (
                Limit::Cost,
                self.cost.map(|(max, _)| max),
                self.cost.map_or(0, |(_, prices)| prices.micros(usage)),
            ),
        ];
        checks.into_iter().find_map(|(limit, allowed, used)| {
            let allowed = allowed?;
            (used > allowed).then_some(Exceeded {
                limit,
                used,
                allowed,
            })
        })
    }
}

/// A limit passed: which, what the run would have used, and what it was allowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Exceeded {
    pub(crate) limit: Limit,
    pub(crate) used: u64,
    pub(crate) allowed: u64,
}

/// Which [`UsageLimits`] limit ended a run.
///
/// ```
/// use toolwright::agent::{End, Limit, Run};
///
/// fn explain(run: &Run) -> Option<String> {
///     match run.end() {
///         End::UsageLimit { limit: Limit::Cost, used, allowed } => Some(format!(
///             "stopped at ${:.2} of ${:.2}",
///             *used as f64 / 1e6,
///             *allowed as f64 / 1e6
///         )),
///         End::UsageLimit { limit, used, allowed } => {
///             Some(format!("stopped: {used} {limit} of {allowed} allowed"))
///         }
///         _ => None,
///     }
/// }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Limit {
    /// [`UsageLimits::max_requests`].
    Requests,
    /// [`UsageLimits::max_tool_calls`].
    ToolCalls,
    /// [`UsageLimits::max_input_tokens`].
    InputTokens,
    /// [`UsageLimits::max_output_tokens`].
    OutputTokens,
    /// [`UsageLimits::max_total_tokens`].
    TotalTokens,
    /// [`UsageLimits::max_cost`], in millionths of the prices' currency.
    Cost,
}

impl Limit {
    /// The name in a serialized [`End`](crate::End): `requests`, `tool_calls`, `input_tokens`,
    /// `output_tokens`, `total_tokens`, `cost`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Limit::Requests => "requests",
            Limit::ToolCalls => "tool_calls",
            Limit::InputTokens => "input_tokens",
            Limit::OutputTokens => "output_tokens",
            Limit::TotalTokens => "total_tokens",
            Limit::Cost => "cost",
        }
    }
}

impl fmt::Display for Limit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
