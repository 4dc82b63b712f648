//! Captures the `tracing` events of a test: every field as text, per target.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// One captured event: its target, level and every field as text.
#[derive(Debug, Clone)]
#[allow(dead_code)] // each test binary reads what it needs
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

#[derive(Clone, Default)]
pub struct Capture(Arc<Mutex<Vec<Event>>>);

impl Capture {
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
    #[allow(dead_code)]
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

/// The process-wide subscriber: it hands each event to the capture of the thread that emitted
/// it. Global rather than scoped (`set_default`), because with scoped subscribers a test thread
/// that hits a call site first, with none installed, can leave it cached as uninteresting for
/// everyone (tracing's interest cache), and a capture then misses events.
struct Router;

thread_local! {
    static SINK: std::cell::RefCell<Option<Capture>> = const { std::cell::RefCell::new(None) };
}

impl tracing::Subscriber for Router {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        SINK.with(|sink| {
            if let Some(capture) = &*sink.borrow() {
                let mut fields = BTreeMap::new();
                event.record(&mut Visitor(&mut fields));
                capture.0.lock().unwrap().push(Event {
                    target: event.metadata().target().to_owned(),
                    level: *event.metadata().level(),
                    fields,
                });
            }
        });
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

/// Captures the events `f` emits on this thread (run it on a current-thread runtime).
#[allow(dead_code)]
pub async fn capture<F: std::future::Future<Output = ()>>(f: F) -> Capture {
    let (capture, guard) = install();
    f.await;
    drop(guard);
    capture
}

/// Captures the events this thread emits until the guard is dropped (run the test on a
/// current-thread runtime, `#[tokio::test]`'s default).
#[allow(dead_code)]
pub fn install() -> (Capture, Guard) {
    static INSTALL: std::sync::Once = std::sync::Once::new();
    INSTALL.call_once(|| {
        // A test binary may have installed nothing else: the first capture installs the router.
        let _ = tracing::subscriber::set_global_default(Router);
    });
    let capture = Capture::default();
    SINK.with(|sink| *sink.borrow_mut() = Some(capture.clone()));
    (capture, Guard)
}

/// Ends this thread's capture when dropped.
pub struct Guard;

impl Drop for Guard {
    fn drop(&mut self) {
        SINK.with(|sink| *sink.borrow_mut() = None);
    }
}
