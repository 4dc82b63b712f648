//! What a schedule observed, in order, and the invariants checked over it afterwards (the way
//! Jepsen's checkers read a recorded history): nothing is judged while the schedule runs, so a
//! check never changes the schedule it checks.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::time::Instant;

/// One thing a schedule saw.
#[derive(Debug, Clone)]
pub enum Event {
    /// A body that acts began; `what` names the action that must happen at most once.
    BodyStart {
        surface: &'static str,
        what: String,
        slot: Option<Slot>,
    },
    /// That body ended (returned or was dropped).
    BodyEnd { what: String, slot: Option<Slot> },
    /// The action took effect (the last thing a body does, with no await after it).
    Effect {
        surface: &'static str,
        what: String,
        drive: u64,
        principal: String,
    },
    /// A caller was told the action succeeded (run now or replayed).
    Completed { surface: &'static str, what: String },
    /// The caller driving `drive` was dropped at an await point (a crash).
    Crashed { drive: u64 },
    /// `what` belongs to `owner`: an effect of it by anyone else is another's work reached.
    Owns { what: String, owner: String },
    /// `observer` got `owner`'s task, run or conversation back.
    Observed {
        surface: &'static str,
        owner: String,
        observer: String,
        what: String,
    },
    /// A call was answered with task `task` for this call (principal, conversation, tool and
    /// arguments).
    TaskAnswer { task: String, call: String },
    /// A task's result read back: it should be its own call's.
    TaskResult {
        task: String,
        expected: String,
        got: String,
    },
    /// `by` sent `value` as the answer to the question of the task asked under `tag` (a
    /// `tasks/update`, to any replica), the task being `owner`'s.
    AnswerSent {
        tag: String,
        owner: String,
        by: String,
        value: String,
    },
    /// The tool of the task asked under `tag` got `value` as its answer.
    TaskGotAnswer { tag: String, value: String },
    /// A task began at this instant and must be stopped at its TTL.
    TaskBegan { what: String, ttl: Duration },
    /// A refused request by another principal took something of the owner's away.
    Interfered { surface: &'static str, what: String },
    /// A tool's output reached what only the registry may record.
    Reached { surface: &'static str, what: String },
    /// A store kept more records than its documented bound.
    Unbounded {
        surface: &'static str,
        kept: usize,
        bound: usize,
    },
    /// A panic anywhere in the schedule (a caller, a spawned task, a drop).
    Panic(String),
    /// The action under idempotency key `key` is `what` (a body says so when it starts).
    KeyOf { key: String, what: String },
    /// A settlement of `key` failed before it was written: the key stays held until its lock
    /// passes, then the action may run again under it (the documented takeover).
    SettleFailed { key: String },
    /// A kept run's drive ended with its last turn not saved.
    RunNotSaved,
    /// What a client was answered, for a reader of the history (no invariant reads it).
    #[allow(dead_code)] // read through `Debug`, in the printed history
    Note(String),
    /// The schedule did not end within its simulated day.
    Stalled,
}

/// The recorded events with the instant (on the paused clock) each was seen.
#[derive(Clone)]
pub struct History {
    inner: Arc<Mutex<Vec<(Instant, Event)>>>,
}

impl History {
    pub fn new() -> Self {
        History {
            inner: Arc::new(Mutex::new(Vec::new())),
        }
    }

    pub fn push(&self, event: Event) {
        let now = Instant::now();
        self.inner
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push((now, event));
    }

    pub fn take(&self) -> Vec<(Instant, Event)> {
        std::mem::take(&mut *self.inner.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

/// Where a task body runs and the caps it runs under: the servers that share the caps (one
/// replica, or every replica sharing a task store) and a principal.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Slot {
    pub group: usize,
    pub principal: String,
    pub per_principal: usize,
    pub per_server: usize,
}

/// A broken invariant: which, on which surface, and what was seen.
#[derive(Debug, Clone)]
pub struct Violation {
    pub invariant: &'static str,
    pub surface: &'static str,
    pub detail: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({}): {}", self.invariant, self.surface, self.detail)
    }
}

fn violation(invariant: &'static str, surface: &'static str, detail: String) -> Violation {
    Violation {
        invariant,
        surface,
        detail,
    }
}

/// Every invariant over one schedule's history.
pub fn check(events: &[(Instant, Event)]) -> Vec<Violation> {
    let mut found = Vec::new();
    effects_at_most_once(events, &mut found);
    completed_calls_took_effect(events, &mut found);
    one_body_per_action_at_once(events, &mut found);
    caps_hold_at_every_instant(events, &mut found);
    tasks_are_their_own_calls(events, &mut found);
    tasks_stop_at_their_ttl(events, &mut found);
    principals_stay_apart(events, &mut found);
    task_answers_are_their_owner_s(events, &mut found);
    for (_, event) in events {
        match event {
            Event::Panic(message) => found.push(violation(
                "no_panic",
                panic_surface(message),
                format!("a panic: {message}"),
            )),
            Event::Reached { surface, what } => {
                found.push(violation("internal_kinds_reserved", surface, what.clone()))
            }
            Event::Stalled => found.push(violation(
                "schedule_ends",
                "any",
                "the schedule was still running after a simulated day".into(),
            )),
            Event::Unbounded {
                surface,
                kept,
                bound,
            } => found.push(violation(
                "bounds_hold",
                surface,
                format!("{kept} records kept, bound {bound}"),
            )),
            _ => {}
        }
    }
    found
}

/// Where a panic happened, by file: `panicked at tool-agent/src/agent.rs:365:39: ...` is
/// `tool-agent/src/agent.rs` (lines move, files stay).
fn panic_surface(message: &str) -> &'static str {
    let at = message.strip_prefix("panicked at ").unwrap_or(message);
    let file = at.split(':').next().unwrap_or_default();
    if file.starts_with("tool-") || file.starts_with("src/") || file.starts_with("tests/") {
        // A handful of files at most per run: leaking them keeps `Violation` plain.
        Box::leak(file.to_owned().into_boxed_str())
    } else {
        "a dependency"
    }
}

/// The history as text, with the ids the library draws at random (task ids, keys of MCP
/// requests' own conversations) replaced by the order they first appear in: two runs of one
/// seed give the same text.
pub fn normalized(events: &[(Instant, Event)]) -> String {
    let start = events.first().map(|(at, _)| *at);
    let mut ids: HashMap<String, usize> = HashMap::new();
    let mut text = String::new();
    for (at, event) in events {
        let mut event = event.clone();
        let mut rename = |id: &mut String| {
            let n = ids.len();
            *id = format!("id#{}", ids.entry(id.clone()).or_insert(n));
        };
        match &mut event {
            Event::TaskAnswer { task, .. } | Event::TaskResult { task, .. } => rename(task),
            // An MCP request's own conversation is named at random, and its keys with it.
            Event::KeyOf { key, .. } | Event::SettleFailed { key } => rename(key),
            Event::Observed {
                surface: "tasks",
                what,
                ..
            } => rename(what),
            _ => {}
        }
        // Panics are gathered after the schedule, when its clock is gone: they have no instant.
        if let Event::Panic(_) = event {
            text.push_str(&format!("{:>10}     {event:?}\n", "end"));
            continue;
        }
        let ms = start.map_or(0, |s| at.duration_since(s).as_millis());
        text.push_str(&format!("{ms:>10} ms  {event:?}\n"));
    }
    text
}

/// Each action takes effect at most once: a second effect is allowed only when every earlier
/// one was made by a caller that crashed before it could record it (the documented takeover
/// of a crashed call, which re-sends its key downstream).
fn effects_at_most_once(events: &[(Instant, Event)], found: &mut Vec<Violation>) {
    let crashed: HashSet<u64> = events
        .iter()
        .filter_map(|(_, e)| match e {
            Event::Crashed { drive } => Some(*drive),
            _ => None,
        })
        .collect();
    let mut earlier: HashMap<&str, Vec<u64>> = HashMap::new();
    let mut not_saved = false;
    let mut whats: HashMap<&str, &str> = HashMap::new();
    let mut unsettled: HashSet<&str> = HashSet::new();
    for (_, event) in events {
        match event {
            Event::RunNotSaved => not_saved = true,
            Event::KeyOf { key, what } => {
                whats.insert(key, what);
            }
            Event::SettleFailed { key } => {
                if let Some(what) = whats.get(key.as_str()) {
                    unsettled.insert(what);
                }
            }
            _ => {}
        }
        let Event::Effect {
            surface,
            what,
            drive,
            ..
        } = event
        else {
            continue;
        };
        // A read-only task may run again for a call sent again; it promises no once.
        if *surface == "tasks-read" || *surface == "scratch" {
            continue;
        }
        let before = earlier.entry(what.as_str()).or_default();
        let excused = unsettled.contains(what.as_str())
            || before.iter().all(|d| *d != 0 && crashed.contains(d));
        if !before.is_empty() && !excused {
            let invariant = if surface.starts_with("approval") {
                "approval_runs_one_call"
            } else {
                "effect_at_most_once"
            };
            // A run whose save was refused, resumed from an earlier turn, is a surface of its
            // own: its repeat is told apart from one after a crash or two resumes at once.
            let surface = if *surface == "kept-run" && not_saved {
                "kept-run-after-not-saved"
            } else {
                surface
            };
            found.push(violation(
                invariant,
                surface,
                format!("`{what}` took effect {} times", before.len() + 1),
            ));
        }
        before.push(*drive);
    }
}

/// A caller told "done" means the action took effect (exactly once, with the check above).
fn completed_calls_took_effect(events: &[(Instant, Event)], found: &mut Vec<Violation>) {
    let effected: HashSet<&str> = events
        .iter()
        .filter_map(|(_, e)| match e {
            Event::Effect { what, .. } => Some(what.as_str()),
            _ => None,
        })
        .collect();
    let mut said = HashSet::new();
    for (_, event) in events {
        if let Event::Completed { surface, what } = event {
            if !effected.contains(what.as_str()) && said.insert(what.as_str()) {
                found.push(violation(
                    "effect_once_when_completed",
                    surface,
                    format!("`{what}` was answered done but never took effect"),
                ));
            }
        }
    }
}

/// No two bodies of one action run at once (a concurrent duplicate waits or is refused).
fn one_body_per_action_at_once(events: &[(Instant, Event)], found: &mut Vec<Violation>) {
    let mut running: HashMap<&str, usize> = HashMap::new();
    let mut said = HashSet::new();
    for (_, event) in events {
        match event {
            Event::BodyStart {
                surface: "idempotency",
                what,
                ..
            } => {
                let n = running.entry(what.as_str()).or_default();
                *n += 1;
                if *n > 1 && said.insert(what.as_str()) {
                    found.push(violation(
                        "one_body_per_action",
                        "idempotency",
                        format!("{n} bodies of `{what}` ran at once"),
                    ));
                }
            }
            Event::BodyEnd { what, .. } => {
                if let Some(n) = running.get_mut(what.as_str()) {
                    *n = n.saturating_sub(1);
                }
            }
            _ => {}
        }
    }
}

/// The working task bodies of the servers sharing caps (one replica, or every replica sharing
/// a task store) never exceed the caps, per principal and in all.
fn caps_hold_at_every_instant(events: &[(Instant, Event)], found: &mut Vec<Violation>) {
    let mut per_principal: HashMap<(usize, &str), usize> = HashMap::new();
    let mut per_server: HashMap<usize, usize> = HashMap::new();
    let mut worst: BTreeMap<(&'static str, usize), (usize, usize)> = BTreeMap::new();
    for (_, event) in events {
        match event {
            Event::BodyStart {
                slot: Some(slot), ..
            } => {
                let mine = per_principal
                    .entry((slot.group, slot.principal.as_str()))
                    .or_default();
                *mine += 1;
                let all = per_server.entry(slot.group).or_default();
                *all += 1;
                if *mine > slot.per_principal {
                    let w = worst
                        .entry(("per principal", slot.group))
                        .or_insert((0, slot.per_principal));
                    w.0 = w.0.max(*mine);
                }
                if *all > slot.per_server {
                    let w = worst
                        .entry(("per server", slot.group))
                        .or_insert((0, slot.per_server));
                    w.0 = w.0.max(*all);
                }
            }
            Event::BodyEnd {
                slot: Some(slot), ..
            } => {
                if let Some(n) = per_principal.get_mut(&(slot.group, slot.principal.as_str())) {
                    *n = n.saturating_sub(1);
                }
                if let Some(n) = per_server.get_mut(&slot.group) {
                    *n = n.saturating_sub(1);
                }
            }
            _ => {}
        }
    }
    for ((which, replica), (seen, cap)) in worst {
        found.push(violation(
            "caps_hold",
            "tasks",
            format!(
                "{seen} task bodies working at once on server group {replica}, cap {cap} {which}"
            ),
        ));
    }
}

/// A task answers only its own call: one task id is never the answer to two different calls,
/// and its result is its call's.
fn tasks_are_their_own_calls(events: &[(Instant, Event)], found: &mut Vec<Violation>) {
    let mut calls: HashMap<&str, &str> = HashMap::new();
    for (_, event) in events {
        match event {
            Event::TaskAnswer { task, call } => match calls.get(task.as_str()) {
                Some(first) if first != call => found.push(violation(
                    "task_is_its_own_call",
                    "tasks",
                    format!("task {task} answered `{first}` and `{call}`"),
                )),
                Some(_) => {}
                None => {
                    calls.insert(task, call);
                }
            },
            Event::TaskResult {
                task,
                expected,
                got,
            } if expected != got => found.push(violation(
                "task_is_its_own_call",
                "tasks",
                format!("task {task} read back `{got}`, its call was `{expected}`"),
            )),
            _ => {}
        }
    }
}

/// A task still working at its TTL is stopped then: its body takes no effect after it.
fn tasks_stop_at_their_ttl(events: &[(Instant, Event)], found: &mut Vec<Violation>) {
    let mut began: HashMap<&str, (Instant, Duration)> = HashMap::new();
    for (at, event) in events {
        match event {
            Event::TaskBegan { what, ttl } => {
                began.insert(what, (*at, *ttl));
            }
            Event::Effect { what, .. } => {
                if let Some((start, ttl)) = began.get(what.as_str()) {
                    let late = at.duration_since(*start);
                    // A second of slack: the timer may fire on the next tick.
                    if late > *ttl + Duration::from_secs(1) {
                        found.push(violation(
                            "task_stopped_at_ttl",
                            "tasks",
                            format!(
                                "`{what}` took effect {late:?} after its task began, TTL {ttl:?}"
                            ),
                        ));
                    }
                }
            }
            _ => {}
        }
    }
}

/// No principal observes or acts on another's task, run, conversation or approval, and a
/// request refused as another's changes nothing of the owner's.
fn principals_stay_apart(events: &[(Instant, Event)], found: &mut Vec<Violation>) {
    let mut owners: HashMap<&str, &str> = HashMap::new();
    for (_, event) in events {
        match event {
            Event::Owns { what, owner } => {
                owners.insert(what, owner);
            }
            Event::Effect {
                surface,
                what,
                principal,
                ..
            } => {
                if let Some(owner) = owners.get(what.as_str()) {
                    if owner != principal {
                        found.push(violation(
                            "principals_stay_apart",
                            surface,
                            format!("{principal} ran `{what}`, which is {owner}'s"),
                        ));
                    }
                }
            }
            Event::Observed {
                surface,
                owner,
                observer,
                what,
            } if owner != observer => found.push(violation(
                "principals_stay_apart",
                surface,
                format!("{observer} read {owner}'s `{what}`"),
            )),
            Event::Interfered { surface, what } => found.push(violation(
                "refusal_changes_nothing",
                surface,
                format!("a refused request took away `{what}`"),
            )),
            _ => {}
        }
    }
}

/// A task's question gets one answer, and it is one its owner sent (to any replica) before:
/// never another principal's, never one made up, never two.
fn task_answers_are_their_owner_s(events: &[(Instant, Event)], found: &mut Vec<Violation>) {
    let mut sent: HashSet<(&str, &str)> = HashSet::new();
    let mut got: HashMap<&str, usize> = HashMap::new();
    for (_, event) in events {
        match event {
            Event::AnswerSent {
                tag,
                owner,
                by,
                value,
            } if owner == by => {
                sent.insert((tag, value));
            }
            Event::TaskGotAnswer { tag, value } => {
                let times = got.entry(tag).or_default();
                *times += 1;
                if *times == 2 {
                    found.push(violation(
                        "one_answer_per_question",
                        "task-questions",
                        format!("the question of `{tag}` was answered twice"),
                    ));
                }
                if !sent.contains(&(tag.as_str(), value.as_str())) {
                    found.push(violation(
                        "principals_stay_apart",
                        "task-questions",
                        format!(
                            "the question of `{tag}` got `{value}`, which its owner never sent"
                        ),
                    ));
                }
            }
            _ => {}
        }
    }
}
