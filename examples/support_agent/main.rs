//! The main job: a customer-support agent's tool set against a real (and misbehaving)
//! order-and-payment HTTP service on loopback, run through the agent loop
//! (`toolwright::agent::Agent`), printing one line per call as it ends, the envelope the model
//! gets back, then the per-tool stats and what the breakers did.
//!
//! ```text
//! cargo run --example support_agent                       # a scripted model: no key, no network
//! cargo run --example support_agent -- --seed 11          # another fault schedule
//! cargo run --example support_agent --features agent -- --model openai:gpt-4.1-mini
//! cargo run --example support_agent --features agent -- --model openai:qwen2.5:7b --base-url http://127.0.0.1:11434/v1
//! ```
//!
//! The service (axum, in this process) answers the tools' reqwest calls, with faults drawn from
//! `--seed`: a 429 with `Retry-After`, 500s, a request that hangs past the tool's timeout, an
//! empty search, a 200 whose body is cut off, a tracking API that is down (its breaker opens
//! and the fallback answers), and a refund that commits and answers late (retried under the
//! same idempotency key, it is refunded once).
//!
//! By default the model is scripted: a fixed list of turns, the kind a real model produces on a
//! long day: correct calls, a hallucinated tool name, a number sent as a string, an
//! out-of-range and an over-long value in one call, an invented argument, truncated JSON, a
//! business rule broken, an id that does not exist, a call re-delivered, a tool that panics, a
//! refund too large for the policy that waits for a person's approval (the run pauses, a person
//! approves, the run resumes), and an invented order id; then, in a guest's conversation, an
//! action it may not take. Each comes back to the model as an envelope it can act on; none
//! crashes the agent.
//!
//! With `--model PROVIDER:NAME` (`openai`, `responses`, `anthropic`, `gemini`; the `agent`
//! feature) the same tools run against a real model, streamed for `openai`. `--base-url`
//! points the OpenAI client at any OpenAI-compatible server (vLLM, llama.cpp's server,
//! Ollama); then strict function calling is off, which not all of them accept.

// Shared with tests/it/agent_support_job.rs, which reads parts of its report this program does not.
#[allow(dead_code)]
mod job;

use job::{Out, RefundPolicy, Service};
use toolwright::prelude::*;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // One line per contained panic instead of the default hook's report.
    std::panic::set_hook(Box::new(|info| {
        eprintln!("   (tool panic contained: {info})")
    }));
    let args: Vec<String> = std::env::args().skip(1).collect();
    let flag = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1).cloned())
    };
    let seed = match flag("--seed") {
        Some(text) => text
            .parse()
            .map_err(|_| format!("--seed takes a whole number, got `{text}`"))?,
        None => job::DEFAULT_SEED,
    };
    if let Some(model) = flag("--model") {
        let service = Service::start(seed).await?;
        let registry = job::registry(&service.base, seed)?;
        let (session, approvals) = job::support_session();
        return live::run(&model, flag("--base-url"), registry, &session, &approvals).await;
    }
    let report = job::run(seed, Out::new(true)).await?;
    // What the example exists to show: every refund the service committed, it committed once.
    if let Some((key, n)) = report
        .service
        .refunds_committed
        .iter()
        .find(|(_, n)| **n != 1)
    {
        return Err(format!("refund {key} was committed {n} times").into());
    }
    Ok(())
}

/// A real model (the `agent` feature).
#[cfg(feature = "agent")]
mod live {
    use super::*;
    use job::{ASK, SYSTEM};
    use toolwright::agent::http::{AnthropicMessages, GeminiGenerate, OpenAiChat, OpenAiResponses};
    use toolwright::agent::{Agent, AgentEvent, ChatModel, Run};

    pub async fn run(
        spec: &str,
        base_url: Option<String>,
        registry: Registry,
        session: &Session,
        approvals: &RefundPolicy,
    ) -> Result<(), Box<dyn std::error::Error>> {
        let (provider, name) = spec
            .split_once(':')
            .ok_or("--model takes PROVIDER:NAME, e.g. openai:gpt-4.1-mini")?;
        let agent = match provider {
            "openai" => {
                let mut client = OpenAiChat::new(name).streaming(true);
                if let Some(url) = &base_url {
                    // Not every OpenAI-compatible server accepts strict function calling.
                    client = client.base_url(url.clone()).strict(false);
                }
                live_agent(client, registry)?
            }
            "responses" => {
                let mut client = OpenAiResponses::new(name);
                if let Some(url) = &base_url {
                    client = client.base_url(url.clone()).strict(false);
                }
                live_agent(client, registry)?
            }
            "anthropic" => live_agent(AnthropicMessages::new(name), registry)?,
            "gemini" => live_agent(GeminiGenerate::new(name), registry)?,
            other => {
                return Err(format!(
                    "unknown provider `{other}`: use openai, responses, anthropic or gemini"
                )
                .into())
            }
        };
        println!("\n== conversation conv-7 ({spec})");
        println!("user: {ASK}");
        let out = Out::new(true);
        let run = job::converse(&agent, session, approvals, ASK, &out).await;
        print_steps(&run);
        Ok(())
    }

    /// One line per step: its calls, what they came to, the time and tokens.
    fn print_steps(run: &Run) {
        println!(
            "\n  step  calls                        outcomes                          model ms  tools ms  tokens"
        );
        for step in run.steps() {
            let calls: Vec<&str> = step.calls.iter().map(|c| c.name()).collect();
            let outcomes: Vec<String> = step.outcomes.iter().map(job::label).collect();
            let calls = if calls.is_empty() {
                "(answer)".to_owned()
            } else {
                calls.join(",")
            };
            println!(
                "  {:>4}  {:<28} {:<33} {:>8} {:>9}  {}",
                step.number,
                calls,
                outcomes.join(","),
                step.model_time.as_millis(),
                step.tool_time.as_millis(),
                step.usage
                    .map_or_else(|| "-".to_owned(), |u| u.total().to_string())
            );
        }
        let usage = run.usage();
        if usage.total() > 0 {
            println!(
                "  tokens: {} in, {} out",
                usage.input_tokens, usage.output_tokens
            );
        }
    }

    fn live_agent(
        model: impl ChatModel,
        registry: Registry,
    ) -> Result<Agent, Box<dyn std::error::Error>> {
        let out = Out::new(true);
        Ok(Agent::builder(model, registry)
            .system(SYSTEM)
            .max_steps(12)
            .on_event(move |event| match event {
                AgentEvent::TextDelta(text) => {
                    use std::io::Write;
                    print!("{text}");
                    let _ = std::io::stdout().flush();
                }
                AgentEvent::ModelRetry { error, wait } => {
                    println!("\n   (model request failed: {error}; retrying in {wait:?})")
                }
                other => job::print_event(other, &out),
            })
            .build()?)
    }
}

#[cfg(not(feature = "agent"))]
mod live {
    use super::*;

    pub async fn run(
        _: &str,
        _: Option<String>,
        _: Registry,
        _: &Session,
        _: &RefundPolicy,
    ) -> Result<(), Box<dyn std::error::Error>> {
        Err("--model needs the HTTP clients: cargo run --example support_agent --features agent -- --model ...".into())
    }
}
