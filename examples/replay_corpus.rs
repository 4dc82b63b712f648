//! Writes the replay corpus: `cargo run --example replay_corpus [-- PATH]` (default
//! `tests/replay_corpus/traces.jsonl`). Deterministic: the same seed writes the same file.
//! How it is made and where its proportions come from: `tests/replay_corpus/README.md`.

#[path = "replay_eval/corpus.rs"]
mod corpus;
#[path = "replay_eval/tools.rs"]
mod tools;

use std::process::ExitCode;

/// The seed of the committed corpus.
const SEED: u64 = 3;

#[tokio::main(flavor = "current_thread", start_paused = true)]
async fn main() -> ExitCode {
    // One corpus tool panics on purpose (`tool_panicked`); the registry contains it, and its
    // message would only clutter the output.
    std::panic::set_hook(Box::new(|_| {}));
    let path = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "tests/replay_corpus/traces.jsonl".to_owned());
    match corpus::generate(SEED).await {
        Ok(text) => match std::fs::write(&path, &text) {
            Ok(()) => {
                println!("wrote {} traces to {path}", text.lines().count());
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("{path}: {e}");
                ExitCode::FAILURE
            }
        },
        Err(e) => {
            eprintln!("the corpus does not match its labels: {e}");
            ExitCode::FAILURE
        }
    }
}
