//! Whatever a provider (or a proxy in front of it) answers, reading the tool calls out of it
//! gives calls or a classified `ParseError`, and never panics; every call read can be run and
//! its outcome formatted back for that provider.
//!
//! The input is JSON text (anything that does not parse is skipped: reading starts from a
//! `serde_json::Value`). `cargo +nightly fuzz run provider_replies -- -max_total_time=180`.

#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use toolwright::prelude::*;
use toolwright::providers::{anthropic, gemini, mcp, openai};
use toolwright::serde_json::Value;

/// Echo the text.
#[tool(read_only)]
async fn echo(text: String) -> Result<String, ToolError> {
    Ok(text)
}

struct World {
    runtime: tokio::runtime::Runtime,
    registry: Registry,
}

fn world() -> &'static World {
    static WORLD: OnceLock<World> = OnceLock::new();
    WORLD.get_or_init(|| World {
        runtime: tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .expect("a runtime"),
        registry: Registry::builder()
            .tool(Echo)
            .build()
            .expect("the registry builds"),
    })
}

fn run(call: ToolCall) -> Outcome {
    let world = world();
    world.runtime.block_on(world.registry.call(call))
}

fuzz_target!(|data: &[u8]| {
    let Ok(reply) = toolwright::serde_json::from_slice::<Value>(data) else {
        return;
    };
    if let Ok(calls) = openai::parse_calls(&reply) {
        for call in calls {
            let _ = openai::tool_message(&run(call));
        }
    }
    if let Ok(calls) = openai::parse_response_calls(&reply) {
        for call in calls {
            let _ = openai::function_call_output(&run(call));
        }
    }
    if let Ok(calls) = anthropic::parse_calls(&reply) {
        let outcomes: Vec<Outcome> = calls.into_iter().map(run).collect();
        let _ = anthropic::user_message(&outcomes);
    }
    if let Ok(calls) = gemini::parse_calls(&reply) {
        let _ = gemini::model_content(&calls);
        let outcomes: Vec<Outcome> = calls.into_iter().map(|c| run(c.into_call())).collect();
        let _ = gemini::user_content(&outcomes);
    }
    if let Ok(call) = mcp::parse_request(&reply) {
        let _ = mcp::call_tool_result(&run(call));
    }
});
