//! What a tool asks of its client, inside the agent loop: the agent's own model answers a
//! sampling request, the agent's roots a request for roots, and a tool's log lines are run
//! events; with no roots the tool gets a classified refusal.

use std::sync::{Arc, Mutex};

use toolwright::ask::{LogLevel, Root, Sampling};
use toolwright::prelude::*;
use toolwright_agent::{Agent, AgentEvent, End, Message, ScriptedModel, Turn};

/// Summarise a file of the workspace, with the model's help.
#[tool(read_only)]
async fn summarise(ctx: ToolContext, file: String) -> Result<String, ToolError> {
    let roots = ctx.roots().await?;
    ctx.log(LogLevel::Notice, format!("summarising {file}"));
    let summary = ctx
        .sample(Sampling::new(format!("Summarise {file}")).with_system("One line."))
        .await?;
    Ok(format!("{} ({})", summary.text(), roots[0].uri()))
}

fn agent(model: &Arc<ScriptedModel>) -> toolwright_agent::AgentBuilder {
    let registry = Registry::builder()
        .tool(Summarise)
        .build()
        .expect("the registry builds");
    Agent::builder(Arc::clone(model), registry)
}

#[tokio::test(start_paused = true)]
async fn the_agents_model_answers_a_tools_sampling_request_and_its_roots_a_roots_request() {
    let model = Arc::new(ScriptedModel::new([
        Turn::calls([ToolCall::new("c1", "summarise", r#"{"file":"notes.md"}"#)]),
        // The tool's sampling request, answered by the same model.
        Turn::text("Notes about the launch."),
        Turn::text("Done."),
    ]));
    let logged = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&logged);
    let agent = agent(&model)
        .roots([Root::new("file:///srv/work")])
        .on_event(move |event| {
            if let AgentEvent::ToolLog { record } = event {
                seen.lock()
                    .unwrap()
                    .push((record.level(), record.data().clone()));
            }
        })
        .build()
        .unwrap();
    let run = agent
        .run(
            &Session::new("s1"),
            vec![Message::user("Summarise notes.md")],
        )
        .await;
    assert!(
        matches!(run.end(), End::Final(t) if t == "Done."),
        "{:?}",
        run.end()
    );
    let outcome = &run.steps()[0].outcomes[0];
    assert_eq!(outcome.status(), Status::Success, "{outcome:?}");
    assert_eq!(
        outcome.data().map(|d| d.get().to_owned()).as_deref(),
        Some(r#""Notes about the launch. (file:///srv/work)""#)
    );
    let sent = model.requests();
    assert_eq!(sent.len(), 3);
    assert_eq!(
        sent[1].system, "One line.",
        "the sampling request's own prompt"
    );
    assert_eq!(sent[1].messages.len(), 1);
    assert!(
        sent[1].tools.as_array().is_some_and(Vec::is_empty),
        "no tools to sample with"
    );
    assert_eq!(
        *logged.lock().unwrap(),
        [(LogLevel::Notice, serde_json::json!("summarising notes.md"))]
    );
}

#[tokio::test(start_paused = true)]
async fn without_roots_the_tool_gets_a_classified_refusal_the_model_reads() {
    let model = Arc::new(ScriptedModel::new([
        Turn::calls([ToolCall::new("c1", "summarise", r#"{"file":"notes.md"}"#)]),
        Turn::text("I could not."),
    ]));
    let run = agent(&model)
        .build()
        .unwrap()
        .run(
            &Session::new("s2"),
            vec![Message::user("Summarise notes.md")],
        )
        .await;
    let outcome = &run.steps()[0].outcomes[0];
    assert_eq!(outcome.status(), Status::Error);
    assert_eq!(
        outcome.error_kind(),
        Some(ErrorKind::BadRequest),
        "{outcome:?}"
    );
    let message = outcome.message().unwrap_or_default();
    assert!(message.contains("roots"), "{message}");
}
