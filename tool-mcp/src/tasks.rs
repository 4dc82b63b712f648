//! Long-running tools as MCP tasks (the `io.modelcontextprotocol/tasks` extension): a call of a
//! tool declared `task` that passed its checks is answered with a task the client polls
//! (`tasks/get`) and may cancel (`tasks/cancel`), while the call runs on past its request.
//!
//! The lifecycle (working, then completed, failed or cancelled; the result inlined once done;
//! expiry after the TTL) is rmcp's [`TaskManager`]. This module adds what a served registry
//! needs on top: a task is its principal's (another principal's `tasks/get` is answered as for
//! an unknown task), a principal has a bounded number of live tasks, and a call re-issued under
//! the same call identity attaches to the task already running it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use rmcp::model::{CallToolResult, DetailedTask, Task};
use rmcp::task_manager::{TaskContext, TaskExit, TaskManager, TaskOptions};
use rmcp::ErrorData;
use serde_json::json;
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

/// How tasks are served: their TTL, the poll interval they suggest, and the cap per principal.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TaskRules {
    pub(crate) ttl: Duration,
    pub(crate) poll_interval: Duration,
    pub(crate) per_principal: usize,
}

impl Default for TaskRules {
    fn default() -> Self {
        TaskRules {
            ttl: DEFAULT_TASK_TTL,
            poll_interval: DEFAULT_TASK_POLL_INTERVAL,
            per_principal: DEFAULT_MAX_TASKS_PER_PRINCIPAL,
        }
    }
}

/// The tasks of one server, across its sessions.
pub(crate) struct Tasks {
    manager: TaskManager,
    rules: TaskRules,
    book: Mutex<Book>,
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
    /// When the task is forgotten at the latest: its TTL after it was created, and again after
    /// it finished (rmcp keeps a finished task a TTL longer).
    forget_at: Instant,
}

impl Tasks {
    pub(crate) fn new(rules: TaskRules) -> Self {
        Tasks {
            manager: TaskManager::new(),
            rules,
            book: Mutex::new(Book::default()),
        }
    }

    fn book(&self) -> std::sync::MutexGuard<'_, Book> {
        self.book.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn live(&self, id: &str) -> bool {
        self.manager
            .get_task(id)
            .is_ok_and(|task| !task.status().is_terminal())
    }

    /// Forgets owners of tasks rmcp forgot.
    fn sweep(&self, book: &mut Book) {
        let now = Instant::now();
        let gone: Vec<String> = book
            .owners
            .iter()
            .filter(|(id, owner)| owner.forget_at <= now && self.manager.get_task(id).is_err())
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

    /// Refuses a call when its principal has as many tasks working as allowed.
    pub(crate) fn admit(&self, principal: Option<&str>) -> Result<(), ErrorData> {
        let mut book = self.book();
        self.sweep(&mut book);
        let working = book
            .owners
            .iter()
            .filter(|(id, owner)| owner.principal.as_deref() == principal && self.live(id))
            .count();
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
    /// `sink` learns the task's context, for progress; the task is cancelled by dropping `run`.
    pub(crate) fn open<F>(
        &self,
        principal: Option<&str>,
        call: Option<&str>,
        context: Arc<OnceLock<TaskContext>>,
        run: F,
        side_effecting: bool,
    ) -> Task
    where
        F: std::future::Future<Output = Result<CallToolResult, ErrorData>> + Send + 'static,
    {
        let options = TaskOptions::new()
            .with_ttl_ms(u64::try_from(self.rules.ttl.as_millis()).unwrap_or(u64::MAX))
            .with_poll_interval_ms(
                u64::try_from(self.rules.poll_interval.as_millis())
                    .unwrap_or(u64::MAX)
                    .max(1),
            );
        let task = self.manager.spawn(options, move |ctx| {
            let _ = context.set(ctx.clone());
            Box::pin(async move {
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
        let mut book = self.book();
        let principal = principal.map(str::to_owned);
        if let Some(call) = call {
            book.by_call
                .insert((principal.clone(), call.to_owned()), task.task_id.clone());
        }
        book.owners.insert(
            task.task_id.clone(),
            Owner {
                principal,
                call: call.map(str::to_owned),
                forget_at: Instant::now() + self.rules.ttl.saturating_mul(2),
            },
        );
        task
    }

    /// Whether `principal` owns task `id`; another's task is answered as an unknown one.
    fn owned(&self, principal: Option<&str>, id: &str) -> Result<(), ErrorData> {
        let book = self.book();
        match book.owners.get(id) {
            Some(owner) if owner.principal.as_deref() == principal => Ok(()),
            _ => Err(unknown_task(id)),
        }
    }

    /// `tasks/get`.
    pub(crate) fn get(&self, principal: Option<&str>, id: &str) -> Result<DetailedTask, ErrorData> {
        self.owned(principal, id)?;
        self.manager.get_task(id).map_err(|_| unknown_task(id))
    }

    /// `tasks/cancel`: the call's future is dropped (its attempt with it).
    pub(crate) fn cancel(&self, principal: Option<&str>, id: &str) -> Result<(), ErrorData> {
        self.owned(principal, id)?;
        self.manager.cancel_task(id).map_err(|_| unknown_task(id))
    }

    /// `tasks/update`: a served tool asks nothing of its client mid-task, so there is nothing
    /// to answer; the task must be the caller's all the same.
    pub(crate) fn update(
        &self,
        principal: Option<&str>,
        id: &str,
        responses: impl IntoIterator<Item = (String, serde_json::Value)>,
    ) -> Result<(), ErrorData> {
        self.owned(principal, id)?;
        self.manager
            .update_task(id, responses)
            .map_err(|_| unknown_task(id))
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
