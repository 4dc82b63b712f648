//! What a tool asks of its client, in process: with no asker every request is a classified
//! `bad_request` naming what was asked; with one, several questions awaited together are asked
//! together; a tool's `tracing` events reach the asker inside `forward_tracing` where the
//! subscriber has `ClientLogLayer`.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use serde_json::json;
use toolwright::ask::{
    Answer, Asker, ClientLogLayer, Kind, LogLevel, LogRecord, Question, Root, Sampled, Sampling,
};
use toolwright::prelude::*;
use tracing_subscriber::layer::SubscriberExt;

/// Asks the model and the roots together.
#[tool(read_only)]
async fn both(ctx: ToolContext) -> Result<String, ToolError> {
    let (sampled, roots) = tokio::try_join!(ctx.sample(Sampling::new("hi")), ctx.roots())?;
    Ok(format!("{} {}", sampled.text(), roots.len()))
}

/// Logs through `tracing`, forwarded.
#[tool(read_only)]
async fn noisy(ctx: ToolContext) -> Result<u32, ToolError> {
    ctx.forward_tracing(async {
        tracing::warn!(rows = 3, "skipped rows");
        tracing::info!("done");
    })
    .await;
    tracing::info!("not forwarded");
    ctx.log(LogLevel::Notice, "direct");
    Ok(1)
}

/// Answers at once, keeping what it was asked and what it was sent.
#[derive(Default)]
struct Recorder {
    asked: Mutex<Vec<String>>,
    logged: Mutex<Vec<(LogLevel, serde_json::Value)>>,
}

impl Asker for Recorder {
    fn ask<'a>(
        &'a self,
        question: &'a Question,
    ) -> Pin<Box<dyn Future<Output = Answer> + Send + 'a>> {
        self.asked
            .lock()
            .unwrap()
            .push(question.kind().capability().to_owned());
        let answer = match question.kind() {
            Kind::Sampling(_) => Answer::Sampled(Sampled::new("hello", "m")),
            Kind::Roots => Answer::Roots(vec![Root::new("file:///a"), Root::new("file:///b")]),
            _ => Answer::Unavailable("no forms".to_owned()),
        };
        Box::pin(std::future::ready(answer))
    }

    fn log(&self, record: &LogRecord) {
        self.logged
            .lock()
            .unwrap()
            .push((record.level(), record.data().clone()));
    }
}

fn registry() -> Registry {
    Registry::builder()
        .tool(Both)
        .tool(Noisy)
        .build()
        .expect("builds")
}

#[tokio::test]
async fn without_an_asker_a_request_of_the_client_is_a_bad_request_naming_it() {
    let outcome = registry().call(ToolCall::new("c1", "both", "{}")).await;
    assert_eq!(
        outcome.error_kind(),
        Some(ErrorKind::BadRequest),
        "{outcome:?}"
    );
    let message = outcome.message().unwrap_or_default();
    assert!(message.contains("sampling"), "{message}");
}

#[tokio::test]
async fn questions_awaited_together_are_each_asked_once() {
    let recorder = Arc::new(Recorder::default());
    let session = Session::new("s").with_asker(Arc::clone(&recorder));
    let outcome = registry()
        .call_in(&session, ToolCall::new("c1", "both", "{}"))
        .await;
    assert_eq!(
        outcome.data_as::<String>().as_deref(),
        Some("hello 2"),
        "{outcome:?}"
    );
    assert_eq!(*recorder.asked.lock().unwrap(), ["sampling", "roots"]);
}

#[tokio::test]
async fn a_tools_tracing_events_reach_its_client_only_inside_forward_tracing() {
    let recorder = Arc::new(Recorder::default());
    let session = Session::new("s").with_asker(Arc::clone(&recorder));
    let subscriber = tracing_subscriber::registry().with(ClientLogLayer);
    let _guard = tracing::subscriber::set_default(subscriber);
    let outcome = registry()
        .call_in(&session, ToolCall::new("c1", "noisy", "{}"))
        .await;
    assert!(outcome.is_ok(), "{outcome:?}");
    assert_eq!(
        *recorder.logged.lock().unwrap(),
        [
            (
                LogLevel::Warning,
                json!({"message": "skipped rows", "rows": 3})
            ),
            (LogLevel::Info, json!("done")),
            (LogLevel::Notice, json!("direct")),
        ]
    );
}
