//! Long-running tools as MCP tasks (the `io.modelcontextprotocol/tasks` extension): a call of a
//! tool declared `task` that passed its checks is answered with a task the client polls
//! (`tasks/get`) and may cancel (`tasks/cancel`), while the call runs on past its request.
//!
//! This module keeps the tasks of one server: a task is its principal's (another principal's
//! `tasks/get` is answered as for an unknown task); a call takes a slot under the caps
//! (per principal and per server) before its checks run, given back when it is refused or its
//! task ends; a call re-sent under the same identity (principal, conversation, call key, tool
//! and arguments) attaches to the task already running it; a working task is stopped by a timer
//! at its TTL; finished tasks and their results are bounded in count and bytes, per principal
//! and per server, the oldest finished forgotten first.
//!
//! With a store ([`McpServer::task_store`](crate::McpServer::task_store)) every task is also
//! kept there, under a hold the replica running it renews (a fifth of the lease, and at once
//! when it ends): another replica answers `tasks/get` from the store, and its `tasks/cancel`
//! leaves a request the running replica reads at its next renewal. A task whose replica stopped
//! renewing is reported `failed` once the hold passes, never `working` forever. The caps are
//! then decided in the store too ([`ConversationStore::hold_slot`]): each call under admission
//! or working holds a place there, renewed with its task and given back when it ends, so the
//! caps count the tasks of every replica sharing the store, and the places of a replica that
//! stopped lapse with their lease.

mod ask;
mod call;

pub use ask::{MAX_INPUT_RESPONSE_BYTES, MAX_PENDING_INPUTS_PER_TASK};
pub(crate) use call::{call_as_task, declares_tasks};

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, OnceLock, PoisonError, Weak};
use std::time::Duration;

use rmcp::model::{
    CallToolResult, DetailedTask, InputResponses, JsonObject, Task, TaskPayload, TaskStatus,
};
use rmcp::task_manager::current_timestamp;
use rmcp::ErrorData;
use serde::{Deserialize, Serialize};
use serde_json::json;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use toolwright_core::conversation::{ConversationStore, RunClaim, SlotCap, SlotHold};
use toolwright_core::progress::{Progress, ProgressSink};

use ask::{answer_key, Gate, TaskInputs};

/// How long a task lives by default: 1 hour from when it was created, working or done; a task
/// still working then is stopped and reported `failed`, and a finished one is forgotten an hour
/// after it finished.
pub const DEFAULT_TASK_TTL: Duration = Duration::from_secs(60 * 60);

/// The poll interval a task suggests to its client by default: 1 second.
pub const DEFAULT_TASK_POLL_INTERVAL: Duration = Duration::from_secs(1);

/// The most tasks one principal has working at once by default: 100. A call past it is refused
/// before anything runs, telling the client to wait for one to end.
pub const DEFAULT_MAX_TASKS_PER_PRINCIPAL: usize = 100;

/// The most tasks one server has working at once by default, whoever started them: 10,000. A
/// call past it is refused before anything runs.
pub const DEFAULT_MAX_TASKS: usize = 10_000;

/// How long a replica's hold on a task it runs lasts by default, when tasks are kept in a store:
/// 10 seconds, renewed every 2. A task whose replica stopped is reported `failed` this long
/// after its last renewal.
pub const DEFAULT_TASK_LEASE: Duration = Duration::from_secs(10);

/// The most finished tasks a server keeps for one principal: 256. Past it (or past
/// [`MAX_FINISHED_TASK_BYTES_PER_PRINCIPAL`]) that principal's oldest finished task is
/// forgotten, and polling it is answered as for an unknown task.
pub const MAX_FINISHED_TASKS_PER_PRINCIPAL: usize = 256;

/// The most bytes of finished tasks' results a server keeps for one principal: 8 MiB. A single
/// result larger than this is not kept: its task reads `failed`, saying so.
pub const MAX_FINISHED_TASK_BYTES_PER_PRINCIPAL: usize = 8 * 1024 * 1024;

/// The most finished tasks a server keeps, all principals together: 10,000; past it (or past
/// [`MAX_FINISHED_TASK_BYTES`]) the oldest finished task is forgotten.
pub const MAX_FINISHED_TASKS: usize = 10_000;

/// The most bytes of finished tasks' results a server keeps, all principals together: 256 MiB.
pub const MAX_FINISHED_TASK_BYTES: usize = 256 * 1024 * 1024;

/// How tasks are served: their TTL, the poll interval they suggest, the cap per principal, and
/// where (besides this process) they are kept.
#[derive(Clone)]
pub(crate) struct TaskRules {
    pub(crate) ttl: Duration,
    pub(crate) poll_interval: Duration,
    pub(crate) per_principal: usize,
    pub(crate) max: usize,
    pub(crate) store: Option<Arc<dyn ConversationStore>>,
    pub(crate) lease: Duration,
}

impl Default for TaskRules {
    fn default() -> Self {
        TaskRules {
            ttl: DEFAULT_TASK_TTL,
            poll_interval: DEFAULT_TASK_POLL_INTERVAL,
            per_principal: DEFAULT_MAX_TASKS_PER_PRINCIPAL,
            max: DEFAULT_MAX_TASKS,
            store: None,
            lease: DEFAULT_TASK_LEASE,
        }
    }
}

/// The tasks of one server, across its sessions.
pub(crate) struct Tasks {
    rules: TaskRules,
    book: Arc<Mutex<Book>>,
    /// This replica, as the holder of the tasks it runs.
    holder: String,
    /// Dropped with the server: the renewals of its tasks stop, as they would if it died.
    alive: Arc<()>,
}

impl Drop for Tasks {
    fn drop(&mut self) {
        let book = lock(&self.book);
        for entry in book.entries.values() {
            if let Some(running) = &entry.running {
                running.abort();
            }
        }
    }
}

/// A task as a store keeps it.
#[derive(Serialize, Deserialize)]
struct Kept {
    principal: Option<String>,
    task: DetailedTask,
}

/// Why a task whose replica stopped renewing it failed.
const STOPPED: &str = "the server running this task stopped before it finished";

fn task_key(id: &str) -> String {
    format!("mcp-task:{id}")
}

fn cancel_key(id: &str) -> String {
    format!("mcp-task-cancel:{id}")
}

fn store_error(error: impl std::fmt::Display) -> ErrorData {
    ErrorData::internal_error(format!("the task store failed: {error}"), None)
}

fn lock(book: &Mutex<Book>) -> std::sync::MutexGuard<'_, Book> {
    book.lock().unwrap_or_else(PoisonError::into_inner)
}

/// What a re-sent call must match, all of it, to attach to the task running the first.
#[derive(Clone, PartialEq, Eq, Hash)]
pub(crate) struct CallIdentity {
    pub(crate) principal: Option<String>,
    pub(crate) conversation: String,
    pub(crate) call: String,
    pub(crate) tool: String,
    pub(crate) fingerprint: String,
}

#[derive(Default)]
struct Book {
    entries: HashMap<String, Entry>,
    /// The task running each call identity, while it works.
    by_call: HashMap<CallIdentity, String>,
    /// Slots taken by calls under admission and by working tasks.
    slots: usize,
    slots_by: HashMap<Option<String>, usize>,
    /// Finished tasks in the order they finished (ids of forgotten ones are skipped).
    finished: VecDeque<String>,
    finished_count: usize,
    finished_bytes: usize,
    finished_by: HashMap<Option<String>, Finished>,
}

/// One principal's finished tasks, oldest first, and their bytes.
#[derive(Default)]
struct Finished {
    order: VecDeque<String>,
    bytes: usize,
}

struct Entry {
    principal: Option<String>,
    call: Option<CallIdentity>,
    task: Task,
    payload: TaskPayload,
    /// The bytes of a finished task's result, as counted against the bounds.
    bytes: usize,
    finished_at: Option<Instant>,
    cancel: CancellationToken,
    running: Option<tokio::task::AbortHandle>,
    /// The questions its tool asks, while it works.
    inputs: Option<Arc<TaskInputs>>,
}

impl Entry {
    /// The task as `tasks/get` answers it: `input_required` with the questions waiting, while
    /// its tool waits for their answers.
    fn detailed(&self) -> DetailedTask {
        let waiting = match (&self.payload, &self.inputs) {
            (TaskPayload::Working, Some(inputs)) => inputs.requests(),
            _ => None,
        };
        let payload = match waiting {
            Some(input_requests) => TaskPayload::InputRequired { input_requests },
            None => self.payload.clone(),
        };
        DetailedTask::new(self.task.clone(), payload)
    }
}

impl Book {
    /// Forgets finished tasks past their TTL (they finished in order, so from the front).
    fn sweep(&mut self, ttl: Duration) {
        let now = Instant::now();
        while let Some(id) = self.finished.front() {
            match self.entries.get(id).and_then(|e| e.finished_at) {
                // A TTL past the clock's range never passes.
                Some(at) if at.checked_add(ttl).is_none_or(|end| end > now) => break,
                Some(_) => {
                    let id = id.clone();
                    self.forget(&id);
                    self.finished.pop_front();
                }
                None => {
                    self.finished.pop_front();
                }
            }
        }
    }

    /// Forgets a finished task.
    fn forget(&mut self, id: &str) {
        let Some(entry) = self.entries.remove(id) else {
            return;
        };
        self.finished_count -= 1;
        self.finished_bytes -= entry.bytes;
        if let Some(mine) = self.finished_by.get_mut(&entry.principal) {
            mine.order.retain(|kept| kept != id);
            mine.bytes -= entry.bytes;
            if mine.order.is_empty() {
                self.finished_by.remove(&entry.principal);
            }
        }
    }

    /// Records task `id`'s end and forgets the oldest finished tasks past the bounds.
    fn finish(&mut self, id: &str, payload: TaskPayload, message: Option<String>) {
        let Some(entry) = self.entries.get_mut(id) else {
            return;
        };
        let mut payload = payload;
        let mut bytes = payload_bytes(&payload);
        if bytes > MAX_FINISHED_TASK_BYTES_PER_PRINCIPAL {
            payload = TaskPayload::Failed {
                error: error_object(&ErrorData::internal_error(
                    format!(
                        "the result was {bytes} bytes, more than a finished task keeps \
                         ({MAX_FINISHED_TASK_BYTES_PER_PRINCIPAL} bytes)"
                    ),
                    None,
                )),
            };
            bytes = payload_bytes(&payload);
        }
        entry.payload = payload;
        entry.task.status = entry.payload.status();
        if message.is_some() {
            entry.task.status_message = message;
        }
        entry.task.last_updated_at = current_timestamp();
        entry.bytes = bytes;
        entry.finished_at = Some(Instant::now());
        entry.running = None;
        entry.inputs = None;
        let principal = entry.principal.clone();
        if let Some(call) = entry.call.take() {
            self.by_call.remove(&call);
        }
        self.finished.push_back(id.to_owned());
        self.finished_count += 1;
        self.finished_bytes += bytes;
        let mine = self.finished_by.entry(principal.clone()).or_default();
        mine.order.push_back(id.to_owned());
        mine.bytes += bytes;
        self.bound(&principal);
    }

    /// Forgets the oldest finished tasks past `principal`'s bounds, then past the server's.
    fn bound(&mut self, principal: &Option<String>) {
        while let Some(mine) = self.finished_by.get(principal) {
            if mine.order.len() <= MAX_FINISHED_TASKS_PER_PRINCIPAL
                && mine.bytes <= MAX_FINISHED_TASK_BYTES_PER_PRINCIPAL
            {
                break;
            }
            let Some(oldest) = mine.order.front().cloned() else {
                break;
            };
            self.forget(&oldest);
        }
        while self.finished_count > MAX_FINISHED_TASKS
            || self.finished_bytes > MAX_FINISHED_TASK_BYTES
        {
            let Some(oldest) = self.finished.pop_front() else {
                break;
            };
            self.forget(&oldest);
        }
        // Ids of tasks forgotten by their principal's bound stay in the server's order until
        // reached; past twice the finished tasks kept, they are dropped at once.
        if self.finished.len() > 2 * self.finished_count + 64 {
            let entries = &self.entries;
            self.finished
                .retain(|id| entries.get(id).is_some_and(|e| e.finished_at.is_some()));
        }
    }
}

/// What a finished task's payload weighs, as its JSON.
fn payload_bytes(payload: &TaskPayload) -> usize {
    let object = match payload {
        TaskPayload::Completed { result } => result,
        TaskPayload::Failed { error } => error,
        _ => return 0,
    };
    serde_json::to_string(object).map_or(0, |text| text.len())
}

/// A place under the task caps, taken before a task call's checks and given back when dropped:
/// when the call is answered at once (refused by its checks, asking for approval), or when its
/// task ends.
pub(crate) struct Slot {
    book: Arc<Mutex<Book>>,
    principal: Option<String>,
    /// With a task store, the place the store holds for this slot under the caps shared by
    /// every replica, renewed until the slot is dropped.
    shared: Option<SharedSlot>,
}

/// A slot's place in the store: given back when the slot is dropped.
struct SharedSlot {
    store: Arc<dyn ConversationStore>,
    id: String,
    scopes: [String; 2],
    renewal: tokio::task::AbortHandle,
}

impl Drop for SharedSlot {
    fn drop(&mut self) {
        self.renewal.abort();
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            // No runtime to give it back on: the place lapses at the end of its lease.
            return;
        };
        let store = Arc::clone(&self.store);
        let id = std::mem::take(&mut self.id);
        let scopes = std::mem::take(&mut self.scopes);
        runtime.spawn(async move {
            let scopes = [scopes[0].as_str(), scopes[1].as_str()];
            if let Err(error) = store.release_slot(&scopes, &id).await {
                tracing::warn!(
                    target: "toolwright::mcp",
                    %error,
                    "could not give back a task's place in the task store; it lapses at the end of its lease"
                );
            }
        });
    }
}

/// The scope of the cap on every task working on the replicas sharing a task store.
const ALL_TASKS: &str = "mcp-tasks:all";

/// The scope of the cap on one principal's working tasks, in a task store.
fn principal_scope(principal: Option<&str>) -> String {
    match principal {
        Some(principal) => format!("mcp-tasks:of:{principal}"),
        None => "mcp-tasks:anonymous".to_owned(),
    }
}

/// The refusal of a call past the server's cap.
fn server_full(all: usize, max: usize) -> ErrorData {
    ErrorData::invalid_request(
        format!(
            "this server has {all} tasks working, at most {max}; call again once some have ended"
        ),
        Some(json!({
            "error_type": "rate_limited",
            "working_tasks": all,
            "limit": max,
        })),
    )
}

/// The refusal of a call past its principal's cap.
fn principal_full(working: usize, cap: usize) -> ErrorData {
    ErrorData::invalid_request(
        format!(
            "this caller has {working} tasks working, at most {cap}; wait for one to end (tasks/get) or cancel one (tasks/cancel), then call again"
        ),
        Some(json!({
            "error_type": "rate_limited",
            "working_tasks": working,
            "limit": cap,
        })),
    )
}

/// Renews a slot's place in the store every fifth of its lease while the server lives.
async fn renew_slot(
    alive: Weak<()>,
    store: Arc<dyn ConversationStore>,
    id: String,
    caps: [(String, usize); 2],
    lease: Duration,
) {
    let beat = (lease / 5).max(Duration::from_millis(1));
    loop {
        tokio::time::sleep(beat).await;
        if alive.upgrade().is_none() {
            return;
        }
        let caps = caps
            .each_ref()
            .map(|(scope, most)| SlotCap { scope, most: *most });
        // Held already, so never refused for the cap; a failure is retried at the next beat.
        if let Err(error) = store.hold_slot(&caps, &id, lease).await {
            tracing::warn!(
                target: "toolwright::mcp",
                %error,
                "could not renew a task's place in the task store"
            );
        }
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut book = lock(&self.book);
        book.slots = book.slots.saturating_sub(1);
        if let Some(mine) = book.slots_by.get_mut(&self.principal) {
            *mine = mine.saturating_sub(1);
            if *mine == 0 {
                book.slots_by.remove(&self.principal);
            }
        }
    }
}

/// The status message a task call's progress sets: the task's, once it is one.
pub(crate) struct TaskContext {
    id: String,
    book: Weak<Mutex<Book>>,
}

impl TaskContext {
    fn set_status_message(&self, message: String) {
        let Some(book) = self.book.upgrade() else {
            return;
        };
        let mut book = lock(&book);
        if let Some(entry) = book.entries.get_mut(&self.id) {
            if entry.finished_at.is_none() {
                entry.task.status_message = Some(message);
                entry.task.last_updated_at = current_timestamp();
            }
        }
    }
}

impl Tasks {
    pub(crate) fn new(rules: TaskRules) -> Self {
        Tasks {
            rules,
            book: Arc::new(Mutex::new(Book::default())),
            holder: format!("mcp-{}", uuid::Uuid::new_v4()),
            alive: Arc::new(()),
        }
    }

    fn book(&self) -> std::sync::MutexGuard<'_, Book> {
        let mut book = lock(&self.book);
        book.sweep(self.rules.ttl);
        book
    }

    /// The task already running this call (same principal, conversation, call key, tool and
    /// arguments), if any: a request sent again (after its stream broke) is answered with it
    /// instead of running the call twice.
    pub(crate) fn running(&self, call: &CallIdentity) -> Option<Task> {
        let book = self.book();
        let id = book.by_call.get(call)?;
        let entry = book.entries.get(id)?;
        entry.finished_at.is_none().then(|| entry.task.clone())
    }

    /// Takes a slot for a task call of `principal`, or refuses it when its principal, or the
    /// server, has as many tasks working (or under admission) as allowed. With a task store
    /// the caps are decided there, counting the tasks of every replica sharing it, after this
    /// replica's own count.
    pub(crate) async fn admit(&self, principal: Option<&str>) -> Result<Slot, ErrorData> {
        let mut slot = self.admit_here(principal)?;
        let Some(store) = &self.rules.store else {
            return Ok(slot);
        };
        let id = uuid::Uuid::new_v4().to_string();
        let caps = [
            (principal_scope(principal), self.rules.per_principal),
            (ALL_TASKS.to_owned(), self.rules.max),
        ];
        let asked = caps
            .each_ref()
            .map(|(scope, most)| SlotCap { scope, most: *most });
        match store.hold_slot(&asked, &id, self.rules.lease).await {
            Ok(SlotHold::Held) => {}
            Ok(SlotHold::Full { cap: 0, held }) => {
                return Err(principal_full(held, self.rules.per_principal))
            }
            Ok(SlotHold::Full { held, .. }) => return Err(server_full(held, self.rules.max)),
            Ok(other) => {
                return Err(store_error(format!(
                    "an answer this server does not know: {other:?}"
                )))
            }
            Err(error) => return Err(store_error(error)),
        }
        let renewal = tokio::spawn(renew_slot(
            Arc::downgrade(&self.alive),
            Arc::clone(store),
            id.clone(),
            caps.clone(),
            self.rules.lease,
        ));
        let [(mine, _), (all, _)] = caps;
        slot.shared = Some(SharedSlot {
            store: Arc::clone(store),
            id,
            scopes: [mine, all],
            renewal: renewal.abort_handle(),
        });
        Ok(slot)
    }

    /// Takes a slot under this replica's own count of its tasks.
    fn admit_here(&self, principal: Option<&str>) -> Result<Slot, ErrorData> {
        let mut book = self.book();
        let all = book.slots;
        if all >= self.rules.max {
            return Err(server_full(all, self.rules.max));
        }
        let key = principal.map(str::to_owned);
        let working = book.slots_by.get(&key).copied().unwrap_or(0);
        let cap = self.rules.per_principal;
        if working >= cap {
            return Err(principal_full(working, cap));
        }
        book.slots += 1;
        *book.slots_by.entry(key.clone()).or_default() += 1;
        Ok(Slot {
            book: Arc::clone(&self.book),
            principal: key,
            shared: None,
        })
    }

    /// Makes a task of a call already past its checks: `run` is the call's outcome, as a result;
    /// `context` learns the task's context, for progress; the task is cancelled by dropping
    /// `run`, and stopped so at its TTL. `slot` is held until it ends. `inputs`: the questions
    /// its tool asks, under the task's id ([`Tasks::inputs`]); without them the task gets a
    /// fresh id. With a store, the task is there before this returns.
    pub(crate) async fn open<F>(
        &self,
        slot: Slot,
        (call, inputs): (Option<CallIdentity>, Option<Arc<TaskInputs>>),
        context: Arc<OnceLock<TaskContext>>,
        run: F,
        side_effecting: bool,
    ) -> Result<Task, ErrorData>
    where
        F: std::future::Future<Output = Result<CallToolResult, ErrorData>> + Send + 'static,
    {
        let principal = slot.principal.clone();
        let id = inputs.as_ref().map_or_else(
            || uuid::Uuid::new_v4().to_string(),
            |inputs| inputs.id().to_owned(),
        );
        let now = current_timestamp();
        let mut task = Task::new(id.clone(), TaskStatus::Working, now.clone(), now);
        task.ttl_ms = Some(millis(self.rules.ttl));
        task.poll_interval_ms = Some(millis(self.rules.poll_interval).max(1));
        let cancel = CancellationToken::new();
        // Told when the task ends, and when its questions change: its record is saved then.
        let ended = inputs
            .as_ref()
            .map_or_else(|| Arc::new(tokio::sync::Notify::new()), |i| i.touched());
        let _ = context.set(TaskContext {
            id: id.clone(),
            book: Arc::downgrade(&self.book),
        });
        {
            let mut book = self.book();
            if let Some(call) = &call {
                book.by_call.insert(call.clone(), id.clone());
            }
            book.entries.insert(
                id.clone(),
                Entry {
                    principal: principal.clone(),
                    call,
                    task: task.clone(),
                    payload: TaskPayload::Working,
                    bytes: 0,
                    finished_at: None,
                    cancel: cancel.clone(),
                    running: None,
                    inputs,
                },
            );
        }
        let ttl = self.rules.ttl;
        let book = Arc::clone(&self.book);
        let task_id = id.clone();
        let ending = Arc::clone(&ended);
        let handle = tokio::spawn(async move {
            let _slot = slot;
            let unknown = side_effecting.then_some("whether its effect happened is unknown");
            let (payload, message) = tokio::select! {
                biased;
                () = cancel.cancelled() => (
                    TaskPayload::Cancelled,
                    unknown.map(|u| format!("cancelled while it ran: {u}")),
                ),
                // A call that ends at the very instant of its TTL completes.
                result = run => match result {
                    Ok(result) => (TaskPayload::Completed { result: result_object(&result) }, None),
                    Err(error) => (TaskPayload::Failed { error: error_object(&error) }, None),
                },
                () = tokio::time::sleep(ttl) => {
                    let why = format!(
                        "stopped at its TTL of {} ms before it finished",
                        millis(ttl)
                    );
                    let error = error_object(&ErrorData::internal_error(why.clone(), None));
                    let message = match unknown {
                        Some(unknown) => format!("{why}: {unknown}"),
                        None => why,
                    };
                    (TaskPayload::Failed { error }, Some(message))
                }
            };
            lock(&book).finish(&task_id, payload, message);
            ending.notify_one();
        });
        if let Some(entry) = lock(&self.book).entries.get_mut(&id) {
            if entry.finished_at.is_none() {
                entry.running = Some(handle.abort_handle());
            }
        }
        if let Some(store) = &self.rules.store {
            let first = self.kept(principal.as_deref(), &id).unwrap_or_default();
            let created = store
                .create_run(
                    &task_key(&id),
                    &self.holder,
                    &first,
                    self.rules.lease,
                    self.rules.ttl,
                )
                .await;
            if let Err(error) = created {
                self.cancel_here(&id);
                return Err(store_error(error));
            }
            tokio::spawn(renew(
                Arc::downgrade(&self.alive),
                Arc::downgrade(&self.book),
                Arc::clone(store),
                Renewal {
                    id,
                    principal,
                    holder: self.holder.clone(),
                    lease: self.rules.lease,
                    ttl: self.rules.ttl,
                },
                ended,
            ));
        }
        Ok(task)
    }

    /// The questions of a task call about to start, under the id its task will have: answered
    /// here at once, or from the store at the poll interval (or a fifth of the lease, if
    /// shorter) when sent to another replica.
    pub(crate) fn inputs(&self) -> Arc<TaskInputs> {
        let beat = self.rules.poll_interval.min(self.rules.lease / 5);
        Arc::new(TaskInputs::new(
            uuid::Uuid::new_v4().to_string(),
            self.rules.store.clone(),
            beat,
        ))
    }

    /// Cancels a task this replica runs: its call's future is dropped.
    fn cancel_here(&self, id: &str) {
        if let Some(entry) = lock(&self.book).entries.get(id) {
            entry.cancel.cancel();
        }
    }

    /// The task as the store keeps it, from this replica's book.
    fn kept(&self, principal: Option<&str>, id: &str) -> Option<String> {
        let task = self.book().entries.get(id)?.detailed();
        kept_body(principal.map(str::to_owned), task)
    }

    /// Task `id` of this replica's (`None`: ask the store), if it is `principal`'s: another's
    /// task is answered as an unknown one.
    fn local(&self, principal: Option<&str>, id: &str) -> Option<Result<DetailedTask, ErrorData>> {
        let book = self.book();
        let entry = book.entries.get(id)?;
        Some(if entry.principal.as_deref() == principal {
            Ok(entry.detailed())
        } else {
            Err(unknown_task(id))
        })
    }

    /// `tasks/get`: this replica's task, or, with a store, one another replica runs (or ran).
    pub(crate) async fn get(
        &self,
        principal: Option<&str>,
        id: &str,
    ) -> Result<DetailedTask, ErrorData> {
        if let Some(owned) = self.local(principal, id) {
            return owned;
        }
        let Some(store) = &self.rules.store else {
            return Err(unknown_task(id));
        };
        let mut kept = self.kept_elsewhere(store, principal, id).await?;
        if kept.task.status().is_terminal() {
            return Ok(kept.task);
        }
        if let TaskPayload::InputRequired { input_requests } = &mut kept.task.payload {
            // Answers sent to this replica or another are not in the record until the replica
            // running the task reads them: a question answered already is not shown.
            let mut answered = Vec::new();
            for key in input_requests.keys() {
                if store
                    .load_run(&answer_key(id, key))
                    .await
                    .map_err(store_error)?
                    .is_some()
                {
                    answered.push(key.clone());
                }
            }
            for key in &answered {
                input_requests.remove(key);
            }
            if input_requests.is_empty() {
                kept.task = DetailedTask::new(kept.task.task.clone(), TaskPayload::Working);
            }
        }
        // Working, says the store: so it is while its replica holds it.
        let key = task_key(id);
        let probe = format!("{}-probe", self.holder);
        match store
            .claim_run(&key, &probe, Duration::from_millis(1))
            .await
            .map_err(store_error)?
        {
            RunClaim::Busy => Ok(kept.task),
            RunClaim::Claimed(_) => {
                // No one renews it: its replica stopped.
                let mut task = kept.task.task.clone();
                task.status_message =
                    Some(format!("{STOPPED}; whether its effect happened is unknown"));
                let failed = DetailedTask::new(
                    task,
                    TaskPayload::Failed {
                        error: error_object(&ErrorData::internal_error(STOPPED, None)),
                    },
                );
                if let Some(body) = kept_body(kept.principal, failed.clone()) {
                    let _ = store
                        .save_run(&key, &probe, &body, self.rules.ttl, None)
                        .await;
                }
                Ok(failed)
            }
            _ => Err(unknown_task(id)),
        }
    }

    /// `tasks/cancel`: this replica's task is cancelled at once (the call's future dropped, its
    /// attempt with it); another replica's is asked to, and cancels at its next renewal.
    pub(crate) async fn cancel(&self, principal: Option<&str>, id: &str) -> Result<(), ErrorData> {
        if let Some(owned) = self.local(principal, id) {
            owned?;
            self.cancel_here(id);
            return Ok(());
        }
        let Some(store) = &self.rules.store else {
            return Err(unknown_task(id));
        };
        let kept = self.kept_elsewhere(store, principal, id).await?;
        if !kept.task.status().is_terminal() {
            store
                .create_run(
                    &cancel_key(id),
                    &self.holder,
                    "cancel",
                    self.rules.lease,
                    self.rules.ttl,
                )
                .await
                .map_err(store_error)?;
        }
        Ok(())
    }

    /// A task another replica keeps in the store, if it is `principal`'s.
    async fn kept_elsewhere(
        &self,
        store: &Arc<dyn ConversationStore>,
        principal: Option<&str>,
        id: &str,
    ) -> Result<Kept, ErrorData> {
        let body = store
            .load_run(&task_key(id))
            .await
            .map_err(store_error)?
            .ok_or_else(|| unknown_task(id))?;
        // A record another version wrote, or a corrupt one: reported, never a panic.
        let kept: Kept = serde_json::from_str(&body).map_err(|e| {
            ErrorData::internal_error(
                format!("the task store's record of task `{id}` is unreadable: {e}"),
                Some(json!({"taskId": id, "error_type": "unavailable"})),
            )
        })?;
        if kept.principal.as_deref() != principal {
            return Err(unknown_task(id));
        }
        Ok(kept)
    }

    /// `tasks/update`: the client's answers to the questions task `id` waits for, delivered
    /// at once when this replica runs it, else kept in the store for the replica that does. An
    /// answer under a key no question waits for (unknown, answered already) is ignored, as
    /// SEP-2663 says; another principal's task is answered as an unknown one; an answer over
    /// [`MAX_INPUT_RESPONSE_BYTES`] is refused, and nothing of the update delivered.
    pub(crate) async fn update(
        &self,
        principal: Option<&str>,
        id: &str,
        responses: InputResponses,
    ) -> Result<(), ErrorData> {
        let mut texts = Vec::with_capacity(responses.len());
        for (key, value) in responses {
            let text = serde_json::to_string(&value).unwrap_or_default();
            if text.len() > ask::MAX_INPUT_RESPONSE_BYTES {
                return Err(ErrorData::invalid_params(
                    format!(
                        "the answer `{key}` is {} bytes, more than a task takes \
                         ({} bytes)",
                        text.len(),
                        ask::MAX_INPUT_RESPONSE_BYTES
                    ),
                    Some(
                        json!({"taskId": id, "key": key, "limit_bytes": ask::MAX_INPUT_RESPONSE_BYTES}),
                    ),
                ));
            }
            texts.push((key, value, text));
        }
        let here = {
            let book = self.book();
            match book.entries.get(id) {
                Some(entry) if entry.principal.as_deref() != principal => {
                    return Err(unknown_task(id))
                }
                Some(entry) => Some(entry.inputs.clone()),
                None => None,
            }
        };
        if let Some(inputs) = here {
            if let Some(inputs) = inputs {
                for (key, value, _) in texts {
                    inputs.answer(&key, value);
                }
            }
            return Ok(());
        }
        let Some(store) = &self.rules.store else {
            return Err(unknown_task(id));
        };
        let kept = self.kept_elsewhere(store, principal, id).await?;
        let TaskPayload::InputRequired { input_requests } = &kept.task.payload else {
            return Ok(());
        };
        for (key, _, text) in texts {
            if !input_requests.contains_key(&key) {
                continue;
            }
            // Written once: of two answers to one key, sent to two replicas, one wins.
            store
                .create_run(
                    &answer_key(id, &key),
                    &self.holder,
                    &text,
                    self.rules.lease,
                    self.rules.ttl,
                )
                .await
                .map_err(store_error)?;
        }
        Ok(())
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

fn error_object(error: &ErrorData) -> JsonObject {
    match serde_json::to_value(error) {
        Ok(serde_json::Value::Object(map)) => map,
        _ => JsonObject::new(),
    }
}

fn result_object(result: &CallToolResult) -> JsonObject {
    match serde_json::to_value(result) {
        Ok(serde_json::Value::Object(map)) => map,
        _ => JsonObject::new(),
    }
}

fn kept_body(principal: Option<String>, task: DetailedTask) -> Option<String> {
    serde_json::to_string(&Kept { principal, task }).ok()
}

/// What the renewal of one task needs to know.
struct Renewal {
    id: String,
    principal: Option<String>,
    holder: String,
    lease: Duration,
    ttl: Duration,
}

/// Keeps a task's state in the store while this replica runs it: renewed every fifth of the
/// lease and at once when it ends, a cancellation asked on another replica read at each
/// renewal. Stops when the server is dropped (as it would if the process died), leaving the
/// hold to pass.
async fn renew(
    alive: Weak<()>,
    book: Weak<Mutex<Book>>,
    store: Arc<dyn ConversationStore>,
    task: Renewal,
    ended: Arc<tokio::sync::Notify>,
) {
    let key = task_key(&task.id);
    let beat = (task.lease / 5).max(Duration::from_millis(1));
    let read = |book: &Weak<Mutex<Book>>| {
        let book = book.upgrade()?;
        let book = lock(&book);
        let entry = book.entries.get(&task.id)?;
        Some((entry.detailed(), entry.cancel.clone()))
    };
    loop {
        let Some(_alive) = alive.upgrade() else {
            return;
        };
        let Some((detailed, cancel)) = read(&book) else {
            return;
        };
        let done = detailed.status().is_terminal();
        let Some(body) = kept_body(task.principal.clone(), detailed) else {
            return;
        };
        let hold = (!done).then_some(task.lease);
        match store
            .save_run(&key, &task.holder, &body, task.ttl, hold)
            .await
        {
            // Another replica found it unrenewed and reported it failed: it is not ours now.
            Ok(false) => {
                cancel.cancel();
                return;
            }
            Ok(true) if done => return,
            Ok(true) => {}
            Err(error) => tracing::warn!(
                target: "toolwright::mcp",
                task = %task.id,
                %error,
                "could not renew a task in the task store"
            ),
        }
        if let Ok(Some(_)) = store.load_run(&cancel_key(&task.id)).await {
            cancel.cancel();
        }
        drop(_alive);
        tokio::select! {
            () = tokio::time::sleep(beat) => {}
            () = ended.notified() => {}
        }
    }
}

fn unknown_task(id: &str) -> ErrorData {
    ErrorData::invalid_params(
        format!("no task `{id}`: never created, expired, or not this caller's"),
        Some(json!({"taskId": id})),
    )
}

/// What a task call's progress handle tells: that the body starts (the call becomes a task),
/// and each progress report, as the task's status message.
pub(crate) struct TaskSink {
    gate: Arc<Gate>,
    context: Arc<OnceLock<TaskContext>>,
}

impl TaskSink {
    pub(crate) fn new(gate: Arc<Gate>, context: Arc<OnceLock<TaskContext>>) -> Self {
        TaskSink { gate, context }
    }
}

impl ProgressSink for TaskSink {
    fn report(&self, progress: Progress) {
        let Some(context) = self.context.get() else {
            return;
        };
        let done = match progress.total {
            Some(total) => format!("{} of {}", progress.done, total),
            None => progress.done.to_string(),
        };
        context.set_status_message(match progress.message {
            Some(message) => format!("{done}: {message}"),
            None => done,
        });
    }

    fn started(&self) {
        self.gate.start();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(ttl: Duration) -> TaskRules {
        TaskRules {
            ttl,
            ..TaskRules::default()
        }
    }

    /// A task that ends after 30 s of a 60 s TTL is still answered 40 s after it was created
    /// (its TTL counts from when it finished), and forgotten once 60 s have passed since then.
    #[tokio::test(start_paused = true)]
    async fn a_finished_task_is_forgotten_its_ttl_after_it_finished() {
        let tasks = Tasks::new(rules(Duration::from_secs(60)));
        let slot = tasks.admit(Some("alice")).await.expect("a slot");
        let run = async {
            tokio::time::sleep(Duration::from_secs(30)).await;
            Ok(CallToolResult::success(Vec::new()))
        };
        let task = tasks
            .open(slot, (None, None), Arc::new(OnceLock::new()), run, false)
            .await
            .expect("a task");
        let id = task.task_id.clone();

        tokio::time::sleep(Duration::from_secs(40)).await;
        let done = tasks.get(Some("alice"), &id).await.expect("kept");
        assert_eq!(done.status(), TaskStatus::Completed);

        tokio::time::sleep(Duration::from_secs(49)).await;
        assert!(
            tasks.get(Some("alice"), &id).await.is_ok(),
            "59 s after it finished"
        );
        tokio::time::sleep(Duration::from_secs(2)).await;
        let gone = tasks.get(Some("alice"), &id).await;
        assert!(gone.is_err(), "61 s after it finished: forgotten");
    }
}
