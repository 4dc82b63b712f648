//! A tool's own `tracing` events to its client: [`ClientLogLayer`] in the application's
//! subscriber, and [`ToolContext::forward_tracing`](crate::ToolContext::forward_tracing)
//! around the part of a tool whose events should go.

use std::fmt;
use std::future::Future;

use serde_json::{Map, Value};
use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::layer::{Context, Layer};

use crate::ask::client::{LogLevel, LogRecord};
use crate::ToolContext;

tokio::task_local! {
    /// The call whose events go to its client, while its forwarded future runs.
    static FORWARDING: ToolContext;
}

/// A [`tracing_subscriber::Layer`] that sends the `tracing` events of a tool, emitted inside
/// [`ToolContext::forward_tracing`], to the tool's client as log lines (the same way as
/// [`ToolContext::log`]): over MCP `notifications/message`, at or above the level the client
/// set; in the agent loop, run events. An event's `message` is the line; with other fields,
/// the line is a JSON object of them all. `TRACE` is sent as `debug`.
///
/// Add it once to the subscriber the application has; events outside a forwarded future, and
/// the `toolwright::tool_log` events [`ToolContext::log`] makes itself, pass it by.
///
/// ```
/// use toolwright::ask::ClientLogLayer;
/// use tracing_subscriber::layer::SubscriberExt;
///
/// /// The application's subscriber, with its tools' events sent to their clients too.
/// fn with_client_logs<S>(subscriber: S) -> impl tracing::Subscriber
/// where
///     S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
/// {
///     subscriber.with(ClientLogLayer)
/// }
/// ```
///
/// [`ToolContext::log`]: crate::ToolContext::log
#[derive(Debug, Clone, Copy, Default)]
pub struct ClientLogLayer;

impl<S: Subscriber> Layer<S> for ClientLogLayer {
    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        let metadata = event.metadata();
        if metadata.target() == "toolwright::tool_log" {
            return;
        }
        let _ = FORWARDING.try_with(|ctx| {
            let mut fields = Fields(Map::new());
            event.record(&mut fields);
            let data = match fields.0.len() {
                1 if fields.0.contains_key("message") => {
                    fields.0.remove("message").unwrap_or_default()
                }
                _ => Value::Object(fields.0),
            };
            let level = match *metadata.level() {
                Level::ERROR => LogLevel::Error,
                Level::WARN => LogLevel::Warning,
                Level::INFO => LogLevel::Info,
                _ => LogLevel::Debug,
            };
            if let Some(asker) = ctx.session().asker() {
                asker.log(&LogRecord {
                    tool: ctx.tool().to_owned(),
                    call_id: ctx.call_id().to_owned(),
                    level,
                    logger: Some(metadata.target().to_owned()),
                    data,
                });
            }
        });
    }
}

/// An event's fields as JSON.
struct Fields(Map<String, Value>);

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.0
            .insert(field.name().to_owned(), Value::String(format!("{value:?}")));
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.into());
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.0.insert(field.name().to_owned(), value.into());
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        self.0.insert(field.name().to_owned(), value.into());
    }

    fn record_f64(&mut self, field: &Field, value: f64) {
        self.0.insert(field.name().to_owned(), value.into());
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        self.0.insert(field.name().to_owned(), value.into());
    }
}

/// Runs `fut` with `ctx`'s call as the one whose events go to its client.
pub(crate) async fn forwarding<F: Future>(ctx: ToolContext, fut: F) -> F::Output {
    FORWARDING.scope(ctx, fut).await
}
