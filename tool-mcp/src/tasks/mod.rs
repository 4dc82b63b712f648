//! Long-running tools as MCP tasks (the `io.modelcontextprotocol/tasks` extension): a call of a
//! tool declared `task` that passed its checks is answered with a task the client polls
//! (`tasks/get`) and may cancel (`tasks/cancel`), while the call runs on past its request.
//!
//! The lifecycle (working, then completed, failed or cancelled; the result inlined once done;
//! expiry after the TTL) is rmcp's [`TaskManager`]. This module adds what a served registry
//! needs on top: a task is its principal's (another principal's `tasks/get` is answered as for
//! an unknown task), a principal has a bounded number of live tasks, and a call re-issued under
//! the same call identity attaches to the task already running it.
//!
//! With a store ([`McpServer::task_store`](crate::McpServer::task_store)) every task is also
//! kept there, under a hold the replica running it renews (a fifth of the lease, and at once
//! when it ends): another replica answers `tasks/get` from the store, and its `tasks/cancel`
//! leaves a request the running replica reads at its next renewal. A task whose replica stopped
//! renewing is reported `failed` once the hold passes, never `working` forever.

mod call;

pub(crate) use call::{call_as_task, declares_tasks};

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use rmcp::model::{CallToolResult, DetailedTask, Task, TaskPayload};
use rmcp::task_manager::{TaskContext, TaskExit, TaskManager, TaskOptions};
use rmcp::ErrorData;
use serde::{Deserialize, Serialize};
use serde_json::json;
use toolwright_core::conversation::{ConversationStore, RunClaim};
use toolwright_core::progress::{Progress, ProgressSink};

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
    manager: TaskManager,
    rules: TaskRules,
    book: Mutex<Book>,
    /// This replica, as the holder of the tasks it runs.
    holder: String,
    /// Dropped with the server: the renewals of its tasks stop, as they would if it died.
    alive: Arc<()>,
}

impl Drop for Tasks {
    fn drop(&mut self) {
        self.manager.shutdown();
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

#[derive(Default)]
struct Book {
    /// Task id -> who owns it and under which call identity it runs.
    owners: HashMap<String, Owner>,
    /// (principal, call identity) -> the task running that call.
    by_call: HashMap<(Option<String>, String), String>,
}

struct Owner {
    principal: Option<String>,
    call: Option<String>,
    /// When the task is forgotten: its TTL after it was created, and again after it finished
    /// (a task still working at its TTL is stopped, and rmcp keeps a finished task a TTL longer).
    forget_at: Instant,
    /// Set when the call's future ends: finished, cancelled, or stopped at its TTL. Counting
    /// working tasks reads these flags, not rmcp's manager (whose every read walks every task).
    done: Arc<AtomicBool>,
}

/// Marks a task done when the future holding it is dropped, however it ends, and wakes its
/// renewal (which then saves the end at once).
struct Done {
    flag: Arc<AtomicBool>,
    ended: Arc<tokio::sync::Notify>,
}

impl Drop for Done {
    fn drop(&mut self) {
        self.flag.store(true, Ordering::Release);
        self.ended.notify_one();
    }
}

impl Tasks {
    pub(crate) fn new(rules: TaskRules) -> Self {
        Tasks {
            manager: TaskManager::new(),
            rules,
            book: Mutex::new(Book::default()),
            holder: format!("mcp-{}", uuid::Uuid::new_v4()),
            alive: Arc::new(()),
        }
    }

    fn book(&self) -> std::sync::MutexGuard<'_, Book> {
        self.book.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Forgets owners of tasks rmcp forgot.
    fn sweep(book: &mut Book) {
        let now = Instant::now();
        let gone: Vec<String> = book
            .owners
            .iter()
            .filter(|(_, owner)| owner.forget_at <= now)
            .map(|(id, _)| id.clone())
            .collect();
        for id in gone {
            if let Some(owner) = book.owners.remove(&id) {
                if let Some(call) = owner.call {
                    book.by_call.remove(&(owner.principal, call));
                }
            }
        }
    }

    /// The task already running this principal's call of this identity, if any: a request sent
    /// again (after its stream broke) is answered with it instead of running the call twice.
    pub(crate) fn running(&self, principal: Option<&str>, call: &str) -> Option<Task> {
        let book = self.book();
        let id = book
            .by_call
            .get(&(principal.map(str::to_owned), call.to_owned()))?;
        let task = self.manager.get_task(id).ok()?;
        (!task.status().is_terminal()).then_some(task.task)
    }

    /// Refuses a call when its principal, or the server, has as many tasks working as allowed.
    pub(crate) fn admit(&self, principal: Option<&str>) -> Result<(), ErrorData> {
        let mut book = self.book();
        Tasks::sweep(&mut book);
        let (mut working, mut all) = (0, 0);
        for owner in book.owners.values() {
            if !owner.done.load(Ordering::Acquire) {
                all += 1;
                if owner.principal.as_deref() == principal {
                    working += 1;
                }
            }
        }
        if all >= self.rules.max {
            return Err(ErrorData::invalid_request(
                format!(
                    "this server has {all} tasks working, at most {}; call again once some have ended",
                    self.rules.max
                ),
                Some(json!({
                    "error_type": "rate_limited",
                    "working_tasks": all,
                    "limit": self.rules.max,
                })),
            ));
        }
        let cap = self.rules.per_principal;
        if working >= cap {
            return Err(ErrorData::invalid_request(
                format!(
                    "this caller has {working} tasks working, at most {cap}; wait for one to end (tasks/get) or cancel one (tasks/cancel), then call again"
                ),
                Some(json!({
                    "error_type": "rate_limited",
                    "working_tasks": working,
                    "limit": cap,
                })),
            ));
        }
        Ok(())
    }

    /// Makes a task of a call already past its checks: `run` is the call's outcome, as a result;
    /// `context` learns the task's context, for progress; the task is cancelled by dropping
    /// `run`. With a store, the task is there before this returns.
    pub(crate) async fn open<F>(
        &self,
        principal: Option<&str>,
        call: Option<&str>,
        context: Arc<OnceLock<TaskContext>>,
        run: F,
        side_effecting: bool,
    ) -> Result<Task, ErrorData>
    where
        F: std::future::Future<Output = Result<CallToolResult, ErrorData>> + Send + 'static,
    {
        let options = TaskOptions::new()
            .with_ttl_ms(millis(self.rules.ttl))
            .with_poll_interval_ms(millis(self.rules.poll_interval).max(1));
        let ended = Arc::new(tokio::sync::Notify::new());
        let done = Arc::new(AtomicBool::new(false));
        let marks = Done {
            flag: Arc::clone(&done),
            ended: Arc::clone(&ended),
        };
        let task = self.manager.spawn(options, move |ctx| {
            let _ = context.set(ctx.clone());
            Box::pin(async move {
                let _marks = marks;
                tokio::select! {
                    biased;
                    () = ctx.cancelled() => {
                        if side_effecting {
                            ctx.set_status_message(
                                "cancelled while it ran: whether its effect happened is unknown",
                            );
                        }
                        Err(TaskExit::Cancelled)
                    }
                    result = run => result.map_err(TaskExit::Error),
                }
            })
        });
        let id = task.task_id.clone();
        {
            let mut book = self.book();
            let principal = principal.map(str::to_owned);
            if let Some(call) = call {
                book.by_call
                    .insert((principal.clone(), call.to_owned()), id.clone());
            }
            book.owners.insert(
                id.clone(),
                Owner {
                    principal,
                    call: call.map(str::to_owned),
                    forget_at: Instant::now() + self.rules.ttl.saturating_mul(2),
                    done,
                },
            );
        }
        if let Some(store) = &self.rules.store {
            let first = self.kept(principal, &id).unwrap_or_default();
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
                let _ = self.manager.cancel_task(&id);
                return Err(store_error(error));
            }
            tokio::spawn(renew(
                Arc::downgrade(&self.alive),
                self.manager.clone(),
                Arc::clone(store),
                Renewal {
                    id,
                    principal: principal.map(str::to_owned),
                    holder: self.holder.clone(),
                    lease: self.rules.lease,
                    ttl: self.rules.ttl,
                },
                ended,
            ));
        }
        Ok(task)
    }

    /// The task as the store keeps it, from this replica's manager.
    fn kept(&self, principal: Option<&str>, id: &str) -> Option<String> {
        let task = self.manager.get_task(id).ok()?;
        kept_body(principal.map(str::to_owned), task)
    }

    /// Whether task `id` is this replica's (`None`: ask the store), and then whether it is
    /// `principal`'s: another's task is answered as an unknown one.
    fn local(&self, principal: Option<&str>, id: &str) -> Option<Result<(), ErrorData>> {
        let book = self.book();
        let owner = book.owners.get(id)?;
        Some(if owner.principal.as_deref() == principal {
            Ok(())
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
            owned?;
            return self.manager.get_task(id).map_err(|_| unknown_task(id));
        }
        let Some(store) = &self.rules.store else {
            return Err(unknown_task(id));
        };
        let kept = self.kept_elsewhere(store, principal, id).await?;
        if kept.task.status().is_terminal() {
            return Ok(kept.task);
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
            return self.manager.cancel_task(id).map_err(|_| unknown_task(id));
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
        let kept: Kept = serde_json::from_str(&body).map_err(|_| unknown_task(id))?;
        if kept.principal.as_deref() != principal {
            return Err(unknown_task(id));
        }
        Ok(kept)
    }

    /// `tasks/update`: a served tool asks nothing of its client mid-task, so there is nothing
    /// to answer; the task must be the caller's all the same.
    pub(crate) fn update(
        &self,
        principal: Option<&str>,
        id: &str,
        responses: impl IntoIterator<Item = (String, serde_json::Value)>,
    ) -> Result<(), ErrorData> {
        self.local(principal, id)
            .unwrap_or_else(|| Err(unknown_task(id)))?;
        self.manager
            .update_task(id, responses)
            .map_err(|_| unknown_task(id))
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

fn error_object(error: &ErrorData) -> rmcp::model::JsonObject {
    match serde_json::to_value(error) {
        Ok(serde_json::Value::Object(map)) => map,
        _ => rmcp::model::JsonObject::new(),
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
    alive: std::sync::Weak<()>,
    manager: TaskManager,
    store: Arc<dyn ConversationStore>,
    task: Renewal,
    ended: Arc<tokio::sync::Notify>,
) {
    let key = task_key(&task.id);
    let beat = (task.lease / 5).max(Duration::from_millis(1));
    loop {
        let Some(_alive) = alive.upgrade() else {
            return;
        };
        let Ok(detailed) = manager.get_task(&task.id) else {
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
                let _ = manager.cancel_task(&task.id);
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
            let _ = manager.cancel_task(&task.id);
        }
        drop(_alive);
        tokio::select! {
            () = tokio::time::sleep(beat) => {}
            () = ended.notified() => {
                // The manager records the end just after the call's future returns.
                for _ in 0..64 {
                    tokio::task::yield_now().await;
                    if manager.get_task(&task.id).is_ok_and(|t| t.status().is_terminal()) {
                        break;
                    }
                }
            }
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
    started: Mutex<Option<tokio::sync::oneshot::Sender<()>>>,
    context: Arc<OnceLock<TaskContext>>,
}

impl TaskSink {
    pub(crate) fn new(
        started: tokio::sync::oneshot::Sender<()>,
        context: Arc<OnceLock<TaskContext>>,
    ) -> Self {
        TaskSink {
            started: Mutex::new(Some(started)),
            context,
        }
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
        if let Some(started) = self
            .started
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
        {
            let _ = started.send(());
        }
    }
}
