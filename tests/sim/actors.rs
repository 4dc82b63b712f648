//! What the clients of the simulated replicas do. Each actor draws its whole plan from its own
//! random stream, then runs it on the paused clock beside the others, against the replicas of
//! its surface; every answer it gets goes into the history.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use tokio::task::JoinHandle;
use tokio::time::sleep;
use toolwright::agent::{
    Agent, BoxFuture, ChatModel, End, Message, ModelError, ModelRequest, RunError, ScriptedModel,
    Turn, RUN_LEASE_MARGIN,
};
use toolwright::approval::{Approval, ApprovalRequest, Approvals, Approver};
use toolwright::conversation::{ConversationStore, MemoryConversationStore, MAX_MEMORY_RUNS};
use toolwright::mcp::{McpServer, CALL_KEY, CONVERSATION_KEY};
use toolwright::prelude::*;
use toolwright::providers::Export;
use toolwright::DynamicTool;

use super::history::Event;
use super::mcp::{self, Server};
use super::store::mangle;
use super::{drive, pause, Crash, World};

async fn join(handles: Vec<JoinHandle<()>>) {
    for handle in handles {
        // A panic in a spawned client is in the history already (the panic hook saw it).
        let _ = handle.await;
    }
}

fn envelope(answer: &Value) -> &Value {
    &answer["result"]["structuredContent"]
}

// ---------------------------------------------------------------------------------------------
// Non-idempotent calls under one key, sent again, at once, to any replica
// ---------------------------------------------------------------------------------------------

/// Two or three registries share one idempotency store; each key's call is delivered one to
/// four times, to any replica, at overlapping moments, some with other arguments, some
/// dropped mid-call.
pub async fn idempotency(world: Arc<World>, mut rng: fastrand::Rng) {
    let n = rng.usize(2..=3);
    let replicas: Vec<Registry> = (0..n).map(|i| world.registry(i, None)).collect();
    let mut handles = Vec::new();
    for k in 0..rng.usize(1..=4) {
        let principal = if rng.bool() { "alice" } else { "bob" };
        let ms = rng.u64(..=3000);
        for _ in 0..rng.usize(1..=4) {
            let registry = replicas[rng.usize(..n)].clone();
            let world = Arc::clone(&world);
            let delay = rng.u64(..=4000);
            let crash = Crash::draw(&mut rng, 4);
            let order = if rng.u8(..8) == 0 {
                format!("o{k}-other")
            } else {
                format!("o{k}")
            };
            handles.push(tokio::spawn(async move {
                sleep(Duration::from_millis(delay)).await;
                let session = Session::new(format!("conv-{principal}")).with_principal(principal);
                let arguments = json!({"order": order, "ms": ms}).to_string();
                let call = ToolCall::new(format!("k{k}"), "charge", arguments);
                let answered = drive(&world.history, crash, registry.call_in(&session, call)).await;
                if answered.is_some_and(|o| o.status() == Status::Success) {
                    world.history.push(Event::Completed {
                        surface: "idempotency",
                        what: format!("charge:conv-{principal}/k{k}"),
                    });
                }
            }));
        }
    }
    join(handles).await;
}

// ---------------------------------------------------------------------------------------------
// Approvals decided in the shared store, redeemed on any replica
// ---------------------------------------------------------------------------------------------

/// A call waits for approval on one replica; a person approves its ticket; the call is proposed
/// again, one to four times, on either replica, under its call id or a new one, sometimes by
/// another principal in the same conversation.
pub async fn approval_ticket(world: Arc<World>, mut rng: fastrand::Rng) {
    let replicas = [world.registry(0, None), world.registry(1, None)];
    let store = world.conversations();
    let mut handles = Vec::new();
    for i in 0..rng.usize(1..=3) {
        let what = format!("wire:t{i}");
        world.history.push(Event::Owns {
            what: what.clone(),
            owner: "alice".into(),
        });
        let conversation = format!("conv-wire-{i}");
        let arguments = json!({"transfer": format!("t{i}"), "ms": rng.u64(..=2000)}).to_string();
        let session = Session::new(conversation.clone())
            .with_principal("alice")
            .with_store(Arc::clone(&store));
        let first = replicas[rng.usize(..2)]
            .call_in(
                &session,
                ToolCall::new(format!("w{i}-0"), "wire", arguments.clone()),
            )
            .await;
        let Some(ticket) = first.to_model_json()["data"]["ticket"]
            .as_str()
            .map(str::to_owned)
        else {
            continue;
        };
        pause(&mut rng, 3000).await;
        // A lost reply may have approved it all the same: the proposals go ahead either way.
        let _ = Approvals::new(Arc::clone(&store)).approve(&ticket).await;
        for r in 0..rng.usize(1..=4) {
            let registry = replicas[rng.usize(..2)].clone();
            let id = if rng.bool() {
                format!("w{i}-0")
            } else {
                format!("w{i}-{}", r + 1)
            };
            let principal = if rng.u8(..6) == 0 { "eve" } else { "alice" };
            let session = Session::new(conversation.clone())
                .with_principal(principal)
                .with_store(Arc::clone(&store));
            let (world, arguments, what) = (Arc::clone(&world), arguments.clone(), what.clone());
            let delay = rng.u64(..=2000);
            let crash = Crash::draw(&mut rng, 5);
            handles.push(tokio::spawn(async move {
                sleep(Duration::from_millis(delay)).await;
                let call = ToolCall::new(id, "wire", arguments);
                let answered = drive(&world.history, crash, registry.call_in(&session, call)).await;
                if principal == "alice" && answered.is_some_and(|o| o.status() == Status::Success) {
                    world.history.push(Event::Completed {
                        surface: "approval-ticket",
                        what,
                    });
                }
            }));
        }
    }
    join(handles).await;
}

// ---------------------------------------------------------------------------------------------
// Approvals over 2026-07-28: an input-required result, answered on any replica
// ---------------------------------------------------------------------------------------------

/// Two MCP servers share `request_state_key` and, as its docs ask of replicas, the store their
/// used approvals are marked in; alice's call of a tool that requires approval is answered with
/// an input-required result; the accepted answer and its `requestState` are sent one to three
/// times, to either server, at once or apart, sometimes by another principal.
pub async fn approval_request_state(world: Arc<World>, mut rng: fastrand::Rng) {
    let key = vec![7u8; 32];
    let servers: Vec<Arc<Server>> = (0..2)
        .map(|i| {
            let server = McpServer::new(world.registry(10 + i, None))
                .request_state_key(key.clone())
                .request_state_store(world.conversations());
            Arc::new(Server::new(server))
        })
        .collect();
    let mut handles = Vec::new();
    for y in 0..rng.usize(1..=2) {
        let year = 2000 + y as u32;
        let what = format!("purge:{year}");
        world.history.push(Event::Owns {
            what: what.clone(),
            owner: "alice".into(),
        });
        let meta = if rng.bool() {
            json!({ CONVERSATION_KEY: "chat-purge", CALL_KEY: format!("purge-{year}") })
        } else {
            json!({})
        };
        let call = json!({"name": "purge", "arguments": {"year": year}});
        let asked = servers[rng.usize(..2)]
            .request(
                "alice",
                "tools/call",
                call.clone(),
                mcp::forms(),
                meta.clone(),
            )
            .await;
        let Some(state) = asked["result"]["requestState"].as_str() else {
            continue;
        };
        let mut answer = call;
        answer["requestState"] = json!(state);
        answer["inputResponses"] = json!({"toolwright_approval": {"action": "accept"}});
        let round = Round {
            answer,
            meta,
            surface: "approval-request-state",
            what,
        };
        send_again(&world, &servers, &mut rng, &round, &mut handles).await;
    }
    join(handles).await;
}

/// An answered round of an input-required call, and what it does when it runs.
struct Round {
    answer: Value,
    meta: Value,
    surface: &'static str,
    what: String,
}

/// Sends alice's answered `round` one to three times, to either server, at once or apart,
/// sometimes as eve, sometimes by a caller that crashes; alice's successes are recorded as
/// completions of what it does.
async fn send_again(
    world: &Arc<World>,
    servers: &[Arc<Server>],
    rng: &mut fastrand::Rng,
    round: &Round,
    handles: &mut Vec<JoinHandle<()>>,
) {
    let concurrent = rng.bool();
    for _ in 0..rng.usize(1..=3) {
        let server = Arc::clone(&servers[rng.usize(..2)]);
        let token = if rng.u8(..6) == 0 { "eve" } else { "alice" };
        let (world, answer, meta, what) = (
            Arc::clone(world),
            round.answer.clone(),
            round.meta.clone(),
            round.what.clone(),
        );
        let surface = round.surface;
        let crash = Crash::draw(rng, 6);
        let delay = rng.u64(..=1500);
        let sent = async move {
            let request = server.request(token, "tools/call", answer, mcp::forms(), meta);
            let answered = drive(&world.history, crash, request).await;
            if token == "alice" && answered.is_some_and(|a| envelope(&a)["status"] == "success") {
                world.history.push(Event::Completed { surface, what });
            }
        };
        if concurrent {
            handles.push(tokio::spawn(async move {
                sleep(Duration::from_millis(delay)).await;
                sent.await;
            }));
        } else {
            sleep(Duration::from_millis(delay)).await;
            sent.await;
        }
    }
}

// ---------------------------------------------------------------------------------------------
// A tool's questions over 2026-07-28: the answered round sent again, to any replica
// ---------------------------------------------------------------------------------------------

/// Two MCP servers share `request_state_key` and the idempotency store; alice's call of a
/// side-effecting tool that asks where to ship is answered with an input-required result; the
/// answered round is sent one to three times, to either server, at once or apart, sometimes
/// by another principal, sometimes by a caller that crashes.
pub async fn questions(world: Arc<World>, mut rng: fastrand::Rng) {
    let key = vec![9u8; 32];
    let servers: Vec<Arc<Server>> = (0..2)
        .map(|i| {
            let server = McpServer::new(world.registry(20 + i, None))
                .request_state_key(key.clone())
                .request_state_store(world.conversations());
            Arc::new(Server::new(server))
        })
        .collect();
    let mut handles = Vec::new();
    for n in 0..rng.usize(1..=2) {
        let order = format!("o{n}");
        let what = format!("ship:{order}");
        world.history.push(Event::Owns {
            what: what.clone(),
            owner: "alice".into(),
        });
        let call = json!({"name": "ship", "arguments": {"order": order}});
        let asked = servers[rng.usize(..2)]
            .request("alice", "tools/call", call.clone(), mcp::forms(), json!({}))
            .await;
        let Some(state) = asked["result"]["requestState"].as_str() else {
            continue;
        };
        let Some(key) = asked["result"]["inputRequests"]
            .as_object()
            .and_then(|requests| requests.keys().next().cloned())
        else {
            continue;
        };
        let mut answer = call;
        answer["requestState"] = json!(state);
        answer["inputResponses"] =
            json!({ key: {"action": "accept", "content": {"city": "Springfield"}} });
        let round = Round {
            answer,
            meta: json!({}),
            surface: "request-state-answers",
            what,
        };
        send_again(&world, &servers, &mut rng, &round, &mut handles).await;
    }
    join(handles).await;
}

// ---------------------------------------------------------------------------------------------
// Tasks: caps, re-sends from another conversation, TTLs, other principals
// ---------------------------------------------------------------------------------------------

/// Decides every call approved, after a person's delay.
struct SlowApprover(Duration);

impl Approver for SlowApprover {
    fn review<'a>(
        &'a self,
        _request: &'a ApprovalRequest<'a>,
    ) -> Pin<Box<dyn Future<Output = Approval> + Send + 'a>> {
        Box::pin(async move {
            sleep(self.0).await;
            Approval::Approved
        })
    }
}

/// One or two MCP servers with task caps (sharing the task store or not) and a TTL that is an
/// hour or a few seconds; up to ten task calls of two principals land at nearly the same
/// moment, some sent again under a call key from another conversation, with other arguments
/// or for another tool; some clients poll, some never do; another principal asks for the task.
pub async fn tasks(world: Arc<World>, mut rng: fastrand::Rng) {
    let per_principal = rng.usize(1..=3);
    let per_server = rng.usize(per_principal..=per_principal + 3);
    let short_ttl = rng.bool();
    let ttl = if short_ttl {
        Duration::from_secs(rng.u64(2..=6))
    } else {
        Duration::from_secs(3600)
    };
    let shared = rng.bool();
    let approver = Duration::from_millis(rng.u64(..=400));
    let servers: Vec<Arc<Server>> = (0..rng.usize(1..=2))
        .map(|i| {
            // Servers sharing a task store share its caps: one group between them.
            let group = if shared { 20 } else { 20 + i };
            let caps = Some((per_principal, per_server, group));
            let mut server = McpServer::new(world.registry(20 + i, caps))
                .max_tasks_per_principal(per_principal)
                .max_tasks(per_server)
                .task_ttl(ttl)
                .approver(Arc::new(SlowApprover(approver)));
            if shared {
                server = server.task_store(world.conversations());
            }
            Arc::new(Server::new(server))
        })
        .collect();
    let mut sent: Vec<(String, String, Option<String>, String, Value)> = Vec::new();
    let mut handles = Vec::new();
    for c in 0..rng.usize(2..=10) {
        // Sometimes exactly a call sent before (a re-send after a broken stream), else a new one.
        // A call without a call key sent again is another call: only keyed ones are re-sent.
        let keyed: Vec<usize> = (0..sent.len()).filter(|&i| sent[i].2.is_some()).collect();
        let (token, conversation, key, tool, arguments) = match keyed.len() {
            n if n > 0 && rng.u8(..3) == 0 => sent[keyed[rng.usize(..n)]].clone(),
            _ => {
                let token = if rng.u8(..3) == 0 { "bob" } else { "alice" };
                let conversation = if rng.bool() { "c-one" } else { "c-two" };
                let key = (rng.u8(..3) == 0).then(|| "k1".to_owned());
                let tool = if rng.u8(..3) == 0 {
                    "archive"
                } else {
                    "report"
                };
                let ms = if short_ttl && rng.bool() {
                    ttl.as_millis() as u64 + rng.u64(500..=5000)
                } else {
                    rng.u64(..=10_000)
                };
                let arguments = json!({"tag": format!("{token}-{c}"), "ms": ms});
                (
                    token.to_owned(),
                    conversation.to_owned(),
                    key,
                    tool.to_owned(),
                    arguments,
                )
            }
        };
        sent.push((
            token.clone(),
            conversation.clone(),
            key.clone(),
            tool.clone(),
            arguments.clone(),
        ));
        let on = rng.usize(..servers.len());
        let server = Arc::clone(&servers[on]);
        let poller = if shared {
            Arc::clone(&servers[rng.usize(..servers.len())])
        } else {
            Arc::clone(&server)
        };
        let poll = rng.bool();
        let peek = rng.u8(..3) == 0;
        let delay = rng.u64(..=300);
        let world = Arc::clone(&world);
        handles.push(tokio::spawn(async move {
            sleep(Duration::from_millis(delay)).await;
            let mut meta = json!({ CONVERSATION_KEY: conversation });
            if let Some(key) = &key {
                meta[CALL_KEY] = json!(key);
            }
            let call = json!({"name": tool, "arguments": arguments});
            let answer = server
                .request(&token, "tools/call", call, mcp::tasks(), meta)
                .await;
            let Some(task) = answer["result"]["taskId"].as_str().map(str::to_owned) else {
                return;
            };
            let tag = arguments["tag"].as_str().unwrap_or_default().to_owned();
            world.history.push(Event::TaskAnswer {
                task: task.clone(),
                call: format!("{token}|{conversation}|{key:?}|{tool}|{arguments}"),
            });
            world.history.push(Event::TaskBegan {
                what: format!("task:{tag}"),
                ttl,
            });
            if peek {
                let other = if token == "alice" { "bob" } else { "alice" };
                let got = poller
                    .request(
                        other,
                        "tasks/get",
                        json!({"taskId": task}),
                        mcp::tasks(),
                        json!({}),
                    )
                    .await;
                if got.get("result").is_some() {
                    world.history.push(Event::Observed {
                        surface: "tasks",
                        owner: token.clone(),
                        observer: other.to_owned(),
                        what: task.clone(),
                    });
                }
            }
            if !poll {
                return;
            }
            for _ in 0..200 {
                sleep(Duration::from_secs(1)).await;
                let got = poller
                    .request(
                        &token,
                        "tasks/get",
                        json!({"taskId": task}),
                        mcp::tasks(),
                        json!({}),
                    )
                    .await;
                let status = &got["result"]["status"];
                if status == "working" {
                    continue;
                }
                if status == "completed" {
                    let data = &got["result"]["result"]["structuredContent"]["data"];
                    world.history.push(Event::TaskResult {
                        task: task.clone(),
                        expected: tag.clone(),
                        got: data
                            .as_str()
                            .map_or_else(|| data.to_string(), str::to_owned),
                    });
                }
                break;
            }
        }));
    }
    join(handles).await;
}

/// Questions of tasks, answered on any replica: two servers sharing a task store; alice's
/// tasks ask mid-task, and answers come to either replica, some sent twice or with another
/// value, some by bob (another principal), some never.
pub async fn task_questions(world: Arc<World>, mut rng: fastrand::Rng) {
    let servers: Vec<Arc<Server>> = (0..2)
        .map(|i| {
            let server = McpServer::new(world.registry(40 + i, None))
                .task_store(world.conversations())
                .task_ttl(Duration::from_secs(600));
            Arc::new(Server::new(server))
        })
        .collect();
    let mut handles = Vec::new();
    for c in 0..rng.usize(1..=4) {
        let tag = format!("ask-{c}");
        let ms = rng.u64(..=2000);
        let on = Arc::clone(&servers[rng.usize(..2)]);
        // Each answer: to which replica, by whom, after how long, which value.
        let answers: Vec<(usize, &'static str, u64, String)> = (0..rng.usize(0..=3))
            .map(|n| {
                let by = if rng.u8(..4) == 0 { "bob" } else { "alice" };
                (rng.usize(..2), by, rng.u64(..=1500), format!("{by}-{n}"))
            })
            .collect();
        let pollers = (rng.usize(..2), rng.usize(..2));
        let servers = servers.clone();
        let world = Arc::clone(&world);
        handles.push(tokio::spawn(async move {
            let call = json!({"name": "pick", "arguments": {"tag": tag, "ms": ms}});
            let answer = on
                .request("alice", "tools/call", call, mcp::tasks(), json!({}))
                .await;
            let Some(task) = answer["result"]["taskId"].as_str().map(str::to_owned) else {
                world
                    .history
                    .push(Event::Note(format!("pick {tag} answered: {answer}")));
                return;
            };
            // Its key, as `tasks/get` on either replica lists it.
            let mut key = None;
            for _ in 0..60 {
                let got = servers[pollers.0]
                    .request(
                        "alice",
                        "tasks/get",
                        json!({"taskId": task}),
                        mcp::tasks(),
                        json!({}),
                    )
                    .await;
                let result = &got["result"];
                if let Some(first) = result["inputRequests"]
                    .as_object()
                    .and_then(|keys| keys.keys().next())
                {
                    key = Some(first.clone());
                    break;
                }
                if ["completed", "failed", "cancelled"]
                    .contains(&result["status"].as_str().unwrap_or_default())
                {
                    break;
                }
                sleep(Duration::from_millis(500)).await;
            }
            let Some(key) = key else {
                world
                    .history
                    .push(Event::Note(format!("pick {tag}: no question listed")));
                return;
            };
            for (to, by, after, value) in answers {
                sleep(Duration::from_millis(after)).await;
                world.history.push(Event::AnswerSent {
                    tag: tag.clone(),
                    owner: "alice".to_owned(),
                    by: by.to_owned(),
                    value: value.clone(),
                });
                let responses = json!({ &key: {"action": "accept", "content": {"value": value}} });
                let ack = servers[to]
                    .request(
                        by,
                        "tasks/update",
                        json!({"taskId": task, "inputResponses": responses}),
                        mcp::tasks(),
                        json!({}),
                    )
                    .await;
                world.history.push(Event::Note(format!(
                    "tasks/update of {tag} by {by} on {to}: {ack}"
                )));
            }
            for _ in 0..60 {
                let got = servers[pollers.1]
                    .request(
                        "alice",
                        "tasks/get",
                        json!({"taskId": task}),
                        mcp::tasks(),
                        json!({}),
                    )
                    .await;
                let status = got["result"]["status"].as_str().unwrap_or_default();
                if ["completed", "failed", "cancelled"].contains(&status) {
                    break;
                }
                sleep(Duration::from_millis(500)).await;
            }
        }));
    }
    join(handles).await;
}

// ---------------------------------------------------------------------------------------------
// Kept runs: resumed on another replica, after crashes, refused saves and refused principals
// ---------------------------------------------------------------------------------------------

/// What the simulated model does in each turn of a run.
#[derive(Clone)]
enum Step {
    Pay(String, u64),
    PayApproved(String, u64),
}

/// A model that answers from the transcript, as a real one would: the turn after `n` tool
/// results is the plan's `n`-th step, and a text answer once the plan is done. Its call ids are
/// its own (`ids`), as a real model's are.
struct PlanModel {
    plan: Vec<Step>,
    ids: String,
    export: Export,
}

impl PlanModel {
    fn new(plan: Vec<Step>, ids: impl Into<String>) -> PlanModel {
        PlanModel {
            plan,
            ids: ids.into(),
            export: ScriptedModel::new(Vec::<Turn>::new()).export(),
        }
    }
}

impl ChatModel for PlanModel {
    fn export(&self) -> Export {
        self.export.clone()
    }

    fn complete<'a>(
        &'a self,
        request: ModelRequest<'a>,
    ) -> BoxFuture<'a, Result<Turn, ModelError>> {
        let done = request
            .messages
            .iter()
            .filter(|m| matches!(m, Message::ToolResults(_)))
            .count();
        let id = format!("{}-{done}", self.ids);
        let turn = match self.plan.get(done) {
            Some(Step::Pay(order, ms)) => Turn::calls([ToolCall::new(
                id,
                "pay",
                json!({"order": order, "ms": ms}).to_string(),
            )]),
            Some(Step::PayApproved(order, ms)) => Turn::calls([ToolCall::new(
                id,
                "pay_approved",
                json!({"order": order, "ms": ms}).to_string(),
            )]),
            None => Turn::text("All paid."),
        };
        Box::pin(async move {
            sleep(Duration::from_millis(5)).await;
            Ok(turn)
        })
    }
}

const RUN_DEADLINE: Duration = Duration::from_secs(300);

fn agent(world: &World, replica: usize, plan: &[Step], ids: &str, ttl: Option<Duration>) -> Agent {
    let mut builder = Agent::builder(
        PlanModel::new(plan.to_vec(), ids),
        world.registry(replica, None),
    )
    .deadline(RUN_DEADLINE);
    if let Some(ttl) = ttl {
        builder = builder.run_ttl(ttl);
    }
    builder.build().expect("the simulated agent builds")
}

/// Records every payment a finished run reports as done.
fn completed_payments(world: &World, run: &toolwright::agent::Run) {
    if !matches!(run.end(), End::Final(_)) {
        return;
    }
    for outcome in run.outcomes() {
        if outcome.is_ok() && outcome.tool().starts_with("pay") {
            if let Some(order) = outcome
                .data_as::<String>()
                .and_then(|d| d.strip_prefix("paid ").map(str::to_owned))
            {
                world.history.push(Event::Completed {
                    surface: "kept-run",
                    what: format!("pay:{order}"),
                });
            }
        }
    }
}

/// Notes how a drive of a kept run ended.
fn note_run(world: &World, on: &str, ended: &Option<Result<toolwright::agent::Run, RunError>>) {
    let how = match ended {
        None => "crashed".to_owned(),
        // A ticket is random: its presence is what a replay compares.
        Some(Ok(run)) if matches!(run.end(), End::Pending { .. }) => "pending".to_owned(),
        Some(Ok(run)) => format!("{:?}", run.end()),
        Some(Err(RunError::NotSaved { error, .. })) => {
            world.history.push(Event::RunNotSaved);
            format!("not saved: {error:?}")
        }
        Some(Err(error)) => format!("{error}"),
    };
    world
        .history
        .push(Event::Note(format!("run on {on}: {how}")));
}

/// Ada's run pays two orders (the second approved, in some seeds) on replica A, which may crash
/// or have a save refused; another principal may try to resume it; the run is approved and
/// resumed on B (and C at once), after its hold passed or before.
pub async fn kept_runs(world: Arc<World>, mut rng: fastrand::Rng) {
    let store = world.conversations();
    let run_id = format!("run-{}", world.seed);
    let second = format!("{run_id}-o2");
    let plan = vec![
        Step::Pay(format!("{run_id}-o1"), rng.u64(..=3000)),
        if rng.bool() {
            Step::PayApproved(second, rng.u64(..=3000))
        } else {
            Step::Pay(second, rng.u64(..=3000))
        },
    ];
    for step in &plan {
        let (Step::Pay(order, _) | Step::PayApproved(order, _)) = step;
        world.history.push(Event::Owns {
            what: format!("pay:{order}"),
            owner: "ada".into(),
        });
    }
    let ada = Session::new("conv-run")
        .with_principal("ada")
        .with_store(Arc::clone(&store));
    let a = agent(&world, 30, &plan, "a", None);
    let crash = Crash::draw(&mut rng, 3);
    let first = drive(
        &world.history,
        crash,
        a.run_kept(&ada, &run_id, vec![Message::user("pay both orders")]),
    )
    .await;
    note_run(&world, "A", &first);
    if let Some(Ok(run)) = &first {
        completed_payments(&world, run);
    }

    if rng.u8(..3) == 0 {
        let before = a.kept_run(&ada, &run_id).await;
        let eve = Session::new("conv-run")
            .with_principal("eve")
            .with_store(Arc::clone(&store));
        let theirs = agent(&world, 33, &plan, "e", Some(Duration::from_secs(1)));
        for read in [
            theirs.resume_kept(&eve, &run_id).await.is_ok(),
            matches!(theirs.kept_run(&eve, &run_id).await, Ok(Some(_))),
        ] {
            if read {
                world.history.push(Event::Observed {
                    surface: "kept-run",
                    owner: "ada".into(),
                    observer: "eve".into(),
                    what: run_id.clone(),
                });
            }
        }
        sleep(Duration::from_secs(2)).await;
        if matches!(before, Ok(Some(_)))
            && matches!(
                a.kept_run(&ada, &run_id).await,
                Ok(None) | Err(RunError::Unknown(_))
            )
        {
            world.history.push(Event::Interfered {
                surface: "kept-run",
                what: run_id.clone(),
            });
        }
    }

    for round in 0..2 {
        // Approve whatever waits: the ticket of the run as stored.
        if let Ok(Some(run)) = a.kept_run(&ada, &run_id).await {
            if let End::Pending { ticket } = run.end() {
                pause(&mut rng, 2000).await;
                let _ = Approvals::new(Arc::clone(&store)).approve(ticket).await;
            }
        }
        if rng.bool() || round == 1 {
            sleep(RUN_DEADLINE + RUN_LEASE_MARGIN).await;
        } else {
            pause(&mut rng, 5000).await;
        }
        let mut handles = Vec::new();
        for (replica, ids) in [(31, "b"), (32, "c")].into_iter().take(rng.usize(1..=2)) {
            let world = Arc::clone(&world);
            let plan = plan.clone();
            let ada = ada.clone();
            let run_id = run_id.clone();
            let crash = Crash::draw(&mut rng, 4);
            let ids = format!("{ids}{round}");
            handles.push(tokio::spawn(async move {
                let replica = agent(&world, replica, &plan, &ids, None);
                let resumed =
                    drive(&world.history, crash, replica.resume_kept(&ada, &run_id)).await;
                note_run(&world, &ids, &resumed);
                if let Some(Ok(run)) = resumed {
                    completed_payments(&world, &run);
                }
            }));
        }
        join(handles).await;
    }
}

// ---------------------------------------------------------------------------------------------
// Records read back changed: another version, a torn write
// ---------------------------------------------------------------------------------------------

/// A run paused on approval is kept; copies of its record, changed the way another version or a
/// torn write would change them, are stored beside it and resumed and read (kept, and as a
/// `Run` read with serde): each is read or reported unreadable, never a panic.
pub async fn changed_records(world: Arc<World>, mut rng: fastrand::Rng) {
    let inner: Arc<dyn ConversationStore> = Arc::clone(world.store.inner()) as _;
    let plan = vec![
        Step::Pay("scratch-o1".into(), 10),
        Step::PayApproved("scratch-o2".into(), 10),
    ];
    let a = agent(&world, 90, &plan, "s", None);
    let cora = Session::new("conv-scratch")
        .with_principal("cora")
        .with_store(Arc::clone(&inner));
    let source = format!("src-{}", world.seed);
    if a.run_kept(&cora, &source, vec![Message::user("pay")])
        .await
        .is_err()
    {
        return;
    }
    let Ok(Some(body)) = inner.load_run(&source).await else {
        return;
    };
    for i in 0..rng.usize(1..=4) {
        let changed = mangle(&body, &mut rng);
        let id = format!("crpt-{i}");
        let created = inner
            .create_run(
                &id,
                "gone",
                &changed,
                Duration::from_millis(1),
                Duration::from_secs(3600),
            )
            .await;
        if !matches!(created, Ok(true)) {
            continue;
        }
        sleep(Duration::from_millis(2)).await;
        let _ = a.resume_kept(&cora, &id).await;
        let _ = a.kept_run(&cora, &id).await;
        if let Ok(run) = serde_json::from_str::<toolwright::agent::Run>(&changed) {
            let _ = a.resume(&cora, run).await;
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The memory store's bound on runs
// ---------------------------------------------------------------------------------------------

/// One more run than the memory store's bound, every one held: it keeps at most its bound.
pub async fn memory_runs_bound(world: Arc<World>) {
    let store = MemoryConversationStore::new();
    let hour = Duration::from_secs(3600);
    let n = MAX_MEMORY_RUNS + 1;
    for i in 0..n {
        let _ = store
            .create_run(&format!("m{i}"), "h", "{}", hour, hour)
            .await;
    }
    let mut kept = 0;
    for i in 0..n {
        if let Ok(Some(_)) = store.load_run(&format!("m{i}")).await {
            kept += 1;
        }
    }
    if kept > MAX_MEMORY_RUNS {
        world.history.push(Event::Unbounded {
            surface: "memory-runs",
            kept,
            bound: MAX_MEMORY_RUNS,
        });
    }
}

// ---------------------------------------------------------------------------------------------
// Kinds the registry keeps for itself, reached from a tool's output
// ---------------------------------------------------------------------------------------------

/// A runtime tool whose output is grounded under the kind found tools are recorded under echoes
/// a name the model chose; the deferred tool of that name is then called without a search. A
/// registry that takes the declaration must not let its output stand for a search.
pub async fn reserved_kinds(world: Arc<World>, mut rng: fastrand::Rng) {
    let echo = DynamicTool::builder("echo_name")
        .description("Echo a name back.")
        .input_schema(json!({"type": "object", "properties": {"name": {"type": "string"}}}))
        .grounds("toolwright.found_tool", "name")
        .handler(|args, _ctx| async move { Ok(json!({"name": args["name"].clone()})) })
        .build();
    let secret = DynamicTool::builder("secret_op")
        .description("An operation found only by search.")
        .input_schema(json!({"type": "object", "properties": {}}))
        .handler(|_args, _ctx| async move { Ok(json!("done")) })
        .build();
    let (Ok(echo), Ok(secret)) = (echo, secret) else {
        return;
    };
    let Ok(registry) = Registry::builder()
        .dynamic_tool(echo)
        .dynamic_tool(secret)
        .deferred(["secret_op"])
        .build()
    else {
        // Refused at build time: the kind is reserved.
        return;
    };
    let mut session = Session::new("conv-kinds").with_principal("mallory");
    if rng.bool() {
        session = session.with_store(world.conversations());
    }
    let echoed = ToolCall::new("e1", "echo_name", r#"{"name":"secret_op"}"#);
    if registry.call_in(&session, echoed).await.status() != Status::Success {
        return;
    }
    let called = registry
        .call_in(&session, ToolCall::new("s1", "secret_op", "{}"))
        .await;
    if called.status() == Status::Success {
        world.history.push(Event::Reached {
            surface: "registry",
            what: "secret_op called without a search, found by a tool's output".into(),
        });
    }
}
