//! A scripted dependency for the execution-seam tests: each attempt of a tool takes the next
//! step of the script (fail with a kind, hang, panic, wait, answer), and the script remembers
//! what every attempt saw (its number, its idempotency key, when it started, its deadlines).

#![allow(dead_code)]

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::Semaphore;
use tokio::time::Instant;
use toolwright::prelude::*;

/// What one attempt does.
#[derive(Debug, Clone)]
pub enum Step {
    Answer,
    Fail(ErrorKind),
    /// `unavailable`, and the request provably never left.
    NeverStarted,
    /// `rate_limited` with a Retry-After.
    RateLimited(Duration),
    /// Never answers: only the timeout ends it.
    Hang,
    Panic,
    /// Answers after this long.
    Slow(Duration),
    /// Answers once the script's gate lets it through.
    Gated,
}

/// What one attempt saw.
#[derive(Debug, Clone)]
pub struct Seen {
    pub attempt: u32,
    pub key: String,
    pub at: Instant,
    pub remaining: Duration,
    pub attempt_deadline: Instant,
    pub deadline: Instant,
}

pub struct Script {
    steps: Mutex<VecDeque<Step>>,
    /// The step taken when the script has run out.
    otherwise: Step,
    pub entered: AtomicU32,
    pub seen: Mutex<Vec<Seen>>,
    pub gate: Semaphore,
}

impl Script {
    pub fn new(steps: impl IntoIterator<Item = Step>, otherwise: Step) -> Self {
        Script {
            steps: Mutex::new(steps.into_iter().collect()),
            otherwise,
            entered: AtomicU32::new(0),
            seen: Mutex::new(Vec::new()),
            gate: Semaphore::new(0),
        }
    }

    pub fn always(step: Step) -> Self {
        Script::new([], step)
    }

    pub fn entered(&self) -> u32 {
        self.entered.load(Ordering::SeqCst)
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    pub fn push(&self, step: Step) {
        self.steps.lock().unwrap().push_back(step);
    }

    pub async fn run(&self, ctx: &ToolContext) -> Result<String, ToolError> {
        self.entered.fetch_add(1, Ordering::SeqCst);
        self.seen.lock().unwrap().push(Seen {
            attempt: ctx.attempt(),
            key: ctx.idempotency_key().to_string(),
            at: Instant::now(),
            remaining: ctx.remaining(),
            attempt_deadline: ctx.attempt_deadline(),
            deadline: ctx.deadline(),
        });
        let step = self
            .steps
            .lock()
            .unwrap()
            .pop_front()
            .unwrap_or_else(|| self.otherwise.clone());
        match step {
            Step::Answer => Ok(format!("answer {}", ctx.attempt())),
            Step::Fail(kind) => Err(ToolError::new(kind, format!("scripted {kind}"))),
            Step::NeverStarted => Err(ToolError::unavailable("connection refused").never_started()),
            Step::RateLimited(wait) => Err(ToolError::rate_limited("slow down", Some(wait))),
            Step::Hang => std::future::pending().await,
            Step::Panic => panic!("scripted panic"),
            Step::Slow(d) => {
                tokio::time::sleep(d).await;
                Ok("slow answer".into())
            }
            Step::Gated => {
                let permit = self
                    .gate
                    .acquire()
                    .await
                    .map_err(|_| ToolError::unavailable("gate closed"))?;
                permit.forget(); // one permit lets one attempt through
                Ok("gated answer".into())
            }
        }
    }
}

/// Look a record up (idempotent, the framework may retry it freely).
#[tool(read_only, timeout_ms = 1000)]
pub async fn lookup(
    ctx: ToolContext,
    script: State<Arc<Script>>,
    id: String,
) -> Result<String, ToolError> {
    let _ = id;
    script.run(&ctx).await
}

/// Send a message (not idempotent, no key: a timeout must not be repeated).
#[tool(idempotent = false, timeout_ms = 1000)]
pub async fn send_message(
    ctx: ToolContext,
    script: State<Arc<Script>>,
    text: String,
) -> Result<String, ToolError> {
    let _ = text;
    script.run(&ctx).await
}

/// Refund an order (not idempotent, but sends an idempotency key downstream).
#[tool(idempotent = false, timeout_ms = 1000)]
pub async fn refund(
    key: IdempotencyKey,
    ctx: ToolContext,
    script: State<Arc<Script>>,
    order_id: String,
) -> Result<String, ToolError> {
    let _ = (key, order_id);
    script.run(&ctx).await
}

pub fn call(tool: &str, n: usize) -> ToolCall {
    let args = match tool {
        "send_message" => r#"{"text":"hi"}"#,
        "refund" => r#"{"order_id":"A1"}"#,
        "patient_lookup" => r#"{"id":"r1"}"#,
        _ => r#"{"id":"r1"}"#,
    };
    ToolCall::new(format!("call_{n}"), tool, args)
}

/// Look a record up, with its own attempt count: 1 + 5 retries.
#[tool(read_only, retries = 5, timeout_ms = 1000)]
pub async fn patient_lookup(
    ctx: ToolContext,
    script: State<Arc<Script>>,
    id: String,
) -> Result<String, ToolError> {
    let _ = id;
    script.run(&ctx).await
}
