//! Captures the `tracing` events of one test with a subscriber scoped to the test's thread
//! (`tracing::subscriber::set_default`), never a global one: tests running in parallel each
//! see only their own events. Run the test on a current-thread runtime (`#[tokio::test]`'s
//! default) so every event of its calls is emitted on the thread that holds the guard.
//!
//! The subscriber answers `Interest::sometimes()` for every call site, and the interest cache is
//! rebuilt once it is installed: a call site first reached on another thread while no subscriber
//! was interested would otherwise stay cached as "never", and this capture would miss it.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use tracing::subscriber::{DefaultGuard, Interest};

/// One captured event: its target, level, message and every field as text.
#[derive(Debug, Clone)]
pub struct Event {
    pub target: String,
    pub level: tracing::Level,
    pub fields: BTreeMap<String, String>,
}

impl Event {
    pub fn get(&self, name: &str) -> Option<&str> {
        self.fields.get(name).map(String::as_str)
    }
}

/// The events captured so far.
#[derive(Clone, Default)]
pub struct Captured(Arc<Mutex<Vec<Event>>>);

impl Captured {
    /// The events of one target, in order.
    pub fn of(&self, target: &str) -> Vec<Event> {
        self.0
            .lock()
            .unwrap()
            .iter()
            .filter(|e| e.target == target)
            .cloned()
            .collect()
    }

    /// Every event, as debug text (to search for what must not be there).
    pub fn everything(&self) -> String {
        format!("{:?}", self.0.lock().unwrap())
    }
}

struct Visitor<'a>(&'a mut BTreeMap<String, String>);

impl tracing::field::Visit for Visitor<'_> {
    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
}

struct Recorder(Captured);

impl tracing::Subscriber for Recorder {
    fn register_callsite(&self, _: &'static tracing::Metadata<'static>) -> Interest {
        Interest::sometimes()
    }
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        let mut fields = BTreeMap::new();
        event.record(&mut Visitor(&mut fields));
        self.0 .0.lock().unwrap().push(Event {
            target: event.metadata().target().to_owned(),
            level: *event.metadata().level(),
            fields,
        });
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

/// Installs a capture for this thread until the guard is dropped.
pub fn install() -> (Captured, DefaultGuard) {
    let captured = Captured::default();
    let guard = tracing::subscriber::set_default(Recorder(captured.clone()));
    tracing::callsite::rebuild_interest_cache();
    (captured, guard)
}
