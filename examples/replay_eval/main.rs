//! Replays a corpus of recorded tool calls under repair policies and prints, per policy:
//! calls, passed, passed after repair, hard failures, p50/p95 latency, model round trips, and
//! the recovery-required rate per tool.
//!
//! ```text
//! cargo run --example replay_eval -- tests/replay_corpus/traces.jsonl --policy all
//! cargo run --example replay_eval -- tests/replay_corpus/traces.jsonl --policy deterministic
//! ```
//!
//! Policies: `none` (the model gets its failure), `deterministic` (the rules only), `model`
//! (one model repair, answered from the traces), `both` (the rules, then the model), `all`.
//! The corpus is produced by `cargo run --example replay_corpus` (see its README).

mod eval;
mod tools;

use std::process::ExitCode;

use tools::Policy;

#[tokio::main(flavor = "current_thread", start_paused = true)]
async fn main() -> ExitCode {
    // One corpus tool panics on purpose (`tool_panicked`); the registry contains it, and its
    // message would only clutter the output.
    std::panic::set_hook(Box::new(|_| {}));
    let mut args = std::env::args().skip(1);
    let mut path = None;
    let mut policies = Policy::ALL.to_vec();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--policy" => {
                let name = args.next().unwrap_or_default();
                policies = match (name.as_str(), Policy::parse(&name)) {
                    ("all", _) => Policy::ALL.to_vec(),
                    (_, Some(policy)) => vec![policy],
                    _ => {
                        eprintln!(
                            "--policy takes none, deterministic, model, both or all; got `{name}`"
                        );
                        return ExitCode::FAILURE;
                    }
                };
            }
            _ => path = Some(arg),
        }
    }
    let Some(path) = path else {
        eprintln!("usage: replay_eval <traces.jsonl> [--policy none|deterministic|model|both|all]");
        return ExitCode::FAILURE;
    };
    let traces = match std::fs::read_to_string(&path)
        .map_err(|e| e.to_string())
        .and_then(|t| eval::read(&t))
    {
        Ok(traces) => traces,
        Err(e) => {
            eprintln!("{path}: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut reports = Vec::new();
    for policy in policies {
        reports.push(eval::evaluate(&traces, policy).await);
    }
    println!("{} traces from {path}\n", traces.len());
    print!("{}", eval::render(&reports));
    ExitCode::SUCCESS
}
