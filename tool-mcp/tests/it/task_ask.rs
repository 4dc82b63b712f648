//! Tasks that ask their client (`io.modelcontextprotocol/tasks` with input requests), tools
//! that run only as tasks, and tasks that fail: over streamable HTTP on 127.0.0.1, as raw
//! 2026-07-28 requests, on real time with a short poll interval.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use toolwright::ask::Reply;
use toolwright::conversation::{ConversationStore, MemoryConversationStore};
use toolwright::prelude::*;
use toolwright_mcp::{Grant, HttpServer, McpServer};

/// Whether to go ahead.
#[toolwright::data]
struct GoAhead {
    /// Yes to go ahead.
    confirm: bool,
}

/// A name the user gives.
#[toolwright::data]
struct Named {
    /// The name.
    name: String,
}

/// Refund an order once the user confirms (asks mid-task).
#[tool(idempotent = true, task, timeout_ms = 20000)]
async fn confirm_refund(
    ctx: ToolContext,
    /// The order to refund.
    order: String,
) -> Result<String, ToolError> {
    tokio::time::sleep(Duration::from_millis(20)).await;
    match ctx
        .ask_named::<GoAhead>("confirm", format!("Refund {order}?"))
        .await?
    {
        Reply::Accepted(GoAhead { confirm: true }) => Ok(format!("refunded {order}")),
        _ => Ok(format!("kept {order}")),
    }
}

/// Name two things at once (both questions wait together).
#[tool(read_only, task, timeout_ms = 20000)]
async fn name_two(ctx: ToolContext) -> Result<String, ToolError> {
    tokio::time::sleep(Duration::from_millis(20)).await;
    let (first, second) = tokio::join!(
        ctx.ask_named::<Named>("first", "The first name?"),
        ctx.ask_named::<Named>("second", "The second name?"),
    );
    let name = |reply: Reply<Named>| match reply {
        Reply::Accepted(Named { name }) => name,
        _ => "nobody".to_owned(),
    };
    Ok(format!("{} and {}", name(first?), name(second?)))
}

/// Asks one question more at once than a task holds: the one past the bound is refused.
#[tool(read_only, task, timeout_ms = 20000)]
async fn ask_too_many(ctx: ToolContext) -> Result<String, ToolError> {
    tokio::time::sleep(Duration::from_millis(20)).await;
    let mut asks = tokio::task::JoinSet::new();
    for n in 0..=toolwright_mcp::MAX_PENDING_INPUTS_PER_TASK {
        let ctx = ctx.clone();
        asks.spawn(async move {
            ctx.ask_named::<Named>(format!("q{n}"), "A name?")
                .await
                .map(|_| ())
        });
    }
    match asks.join_next().await {
        Some(Ok(Err(refused))) => Ok(format!("{refused:?}")),
        other => Err(ToolError::bad_request(format!("{other:?}"))),
    }
}

#[derive(Clone, Default)]
struct Runs(Arc<AtomicU64>);

/// Rebuild the index: over MCP only as a task.
#[tool(read_only, task = "required", timeout_ms = 20000)]
async fn rebuild_index(runs: State<Runs>) -> Result<String, ToolError> {
    runs.0 .0.fetch_add(1, Ordering::SeqCst);
    Ok("rebuilt".to_owned())
}

/// Greets the user by the name it asks first: over MCP only as a task.
#[tool(read_only, task = "required", timeout_ms = 20000)]
async fn greet_later(ctx: ToolContext) -> Result<String, ToolError> {
    match ctx
        .ask_named::<Named>("user_name", "What is your name?")
        .await?
    {
        Reply::Accepted(Named { name }) => {
            tokio::time::sleep(Duration::from_millis(20)).await;
            Ok(format!("Hello, {name}!"))
        }
        _ => Ok("Hello, stranger!".to_owned()),
    }
}

/// Breaks while it runs.
#[tool(read_only, task, timeout_ms = 20000)]
async fn broken_job() -> Result<String, ToolError> {
    tokio::time::sleep(Duration::from_millis(20)).await;
    panic!("the job broke");
}

/// Fails as tools fail: its input is missing.
#[tool(read_only, task, timeout_ms = 20000)]
async fn missing_input_job() -> Result<String, ToolError> {
    tokio::time::sleep(Duration::from_millis(20)).await;
    Err(ToolError::not_found("the job's input does not exist"))
}

fn registry(runs: &Runs) -> Registry {
    Registry::builder()
        .tool(ConfirmRefund)
        .tool(NameTwo)
        .tool(RebuildIndex)
        .tool(GreetLater)
        .tool(BrokenJob)
        .tool(MissingInputJob)
        .tool(AskTooMany)
        .state(runs.clone())
        .build()
        .expect("the registry builds")
}

async fn bind(server: McpServer) -> HttpServer {
    server
        .task_poll_interval(Duration::from_millis(20))
        .authorize(|token: &str| match token {
            "alice" => Some(Grant::new("alice")),
            "bob" => Some(Grant::new("bob")),
            _ => None,
        })
        .bind_http("127.0.0.1:0")
        .await
        .expect("binds loopback")
}

async fn server(runs: &Runs) -> HttpServer {
    bind(McpServer::new(registry(runs))).await
}

/// What a client declares: `tasks` (the extension), `forms` (elicitation, so it answers
/// input-required rounds).
fn capabilities(tasks: bool, forms: bool) -> Value {
    let mut caps = json!({});
    if tasks {
        caps["extensions"] = json!({"io.modelcontextprotocol/tasks": {}});
    }
    if forms {
        caps["elicitation"] = json!({"form": {}});
    }
    caps
}

/// Raw 2026-07-28 requests to one server.
struct Client {
    http: reqwest::Client,
    url: String,
    capabilities: Value,
}

impl Client {
    fn new(server: &HttpServer, capabilities: Value) -> Self {
        Client {
            http: reqwest::Client::new(),
            url: server.url(),
            capabilities,
        }
    }

    /// The answer (result or error) to `method` with `params`.
    async fn request(&self, token: &str, method: &str, params: Value) -> Value {
        let mut params = params;
        params["_meta"] = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": self.capabilities,
            "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"},
        });
        let body = json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params});
        let mut request = self
            .http
            .post(&self.url)
            .bearer_auth(token)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", method);
        if let Some(name) = params["name"].as_str().or(params["taskId"].as_str()) {
            request = request.header("mcp-name", name);
        }
        let text = request
            .body(body.to_string())
            .send()
            .await
            .expect("answered")
            .text()
            .await
            .expect("a body");
        let found = text
            .lines()
            .filter_map(|line| line.strip_prefix("data:"))
            .chain([text.as_str()])
            .filter_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
            .find(|m| m["id"] == 7 && (m.get("result").is_some() || m.get("error").is_some()));
        found.unwrap_or_else(|| panic!("no answer in {text}"))
    }

    async fn call(&self, token: &str, name: &str, arguments: Value) -> Value {
        self.request(
            token,
            "tools/call",
            json!({"name": name, "arguments": arguments}),
        )
        .await
    }

    async fn start(&self, token: &str, name: &str, arguments: Value) -> String {
        let created = self.call(token, name, arguments).await;
        assert_eq!(created["result"]["resultType"], "task", "{created}");
        created["result"]["taskId"]
            .as_str()
            .expect("a task id")
            .to_owned()
    }

    async fn get(&self, token: &str, task: &str) -> Value {
        self.request(token, "tasks/get", json!({"taskId": task}))
            .await
    }

    async fn update(&self, token: &str, task: &str, responses: Value) -> Value {
        self.request(
            token,
            "tasks/update",
            json!({"taskId": task, "inputResponses": responses}),
        )
        .await
    }

    /// `tasks/get` until `done` says the task is where it should be (5 s at most).
    async fn until(&self, token: &str, task: &str, done: impl Fn(&Value) -> bool) -> Value {
        for _ in 0..250 {
            let got = self.get(token, task).await;
            if done(&got["result"]) {
                return got["result"].clone();
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        panic!(
            "task {task} never got there: {}",
            self.get(token, task).await
        );
    }

    async fn waiting(&self, token: &str, task: &str, keys: usize) -> Value {
        self.until(token, task, |t| {
            t["status"] == "input_required"
                && t["inputRequests"].as_object().map(|m| m.len()) == Some(keys)
        })
        .await
    }

    async fn settled(&self, token: &str, task: &str) -> Value {
        self.until(token, task, |t| {
            ["completed", "failed", "cancelled"].contains(&t["status"].as_str().unwrap_or(""))
        })
        .await
    }
}

fn accept(content: Value) -> Value {
    json!({"action": "accept", "content": content})
}

fn keys(task: &Value) -> Vec<String> {
    task["inputRequests"]
        .as_object()
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default()
}

/// A task whose tool asks waits `input_required` with the question under a key of the
/// server's; `tasks/update` with the answer is an empty ack, and the tool goes on to its end.
/// Another principal's update is answered as for an unknown task, an answer under an unknown
/// key is ignored (acked, the question still waiting), and one over `MAX_INPUT_RESPONSE_BYTES`
/// is refused naming its key.
#[tokio::test]
async fn a_task_that_asks_waits_input_required_and_resumes_with_the_answer() {
    let server = server(&Runs::default()).await;
    let client = Client::new(&server, capabilities(true, false));
    let task = client
        .start("alice", "confirm_refund", json!({"order": "A1"}))
        .await;
    let waiting = client.waiting("alice", &task, 1).await;
    let key = keys(&waiting).remove(0);
    assert_eq!(
        waiting["inputRequests"][&key]["method"], "elicitation/create",
        "{waiting}"
    );
    assert!(
        waiting["inputRequests"][&key]["params"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("Refund A1")),
        "{waiting}"
    );

    let bob = client
        .update(
            "bob",
            &task,
            json!({ &key: accept(json!({"confirm": true})) }),
        )
        .await;
    assert_eq!(bob["error"]["code"], -32602, "another's task: {bob}");
    let unknown = client
        .update("alice", &task, json!({"no-such-key": {"ignored": true}}))
        .await;
    assert_eq!(
        unknown["result"],
        json!({"resultType": "complete"}),
        "{unknown}"
    );
    let huge = "x".repeat(toolwright_mcp::MAX_INPUT_RESPONSE_BYTES);
    let too_large = client
        .update(
            "alice",
            &task,
            json!({ &key: accept(json!({"confirm": huge})) }),
        )
        .await;
    assert_eq!(too_large["error"]["code"], -32602, "{too_large}");
    assert_eq!(
        too_large["error"]["data"]["key"],
        key.as_str(),
        "{too_large}"
    );
    let still = client.get("alice", &task).await;
    assert_eq!(still["result"]["status"], "input_required", "{still}");

    let ack = client
        .update(
            "alice",
            &task,
            json!({ &key: accept(json!({"confirm": true})) }),
        )
        .await;
    assert_eq!(ack["result"], json!({"resultType": "complete"}), "{ack}");
    let done = client.settled("alice", &task).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(
        done["result"]["structuredContent"]["data"], "refunded A1",
        "{done}"
    );
}

/// Two questions asked at once wait together; answering one keeps the task `input_required`
/// with only the other's key, and the tool ends once both are answered.
#[tokio::test]
async fn a_partial_answer_keeps_the_task_waiting_for_the_other_question_only() {
    let server = server(&Runs::default()).await;
    let client = Client::new(&server, capabilities(true, false));
    let task = client.start("alice", "name_two", json!({})).await;
    let waiting = client.waiting("alice", &task, 2).await;
    let both = keys(&waiting);
    let ack = client
        .update(
            "alice",
            &task,
            json!({ &both[0]: accept(json!({"name": "Ada"})) }),
        )
        .await;
    assert_eq!(ack["result"], json!({"resultType": "complete"}), "{ack}");
    let partial = client.get("alice", &task).await["result"].clone();
    assert_eq!(partial["status"], "input_required", "{partial}");
    assert_eq!(keys(&partial), vec![both[1].clone()], "{partial}");

    client
        .update(
            "alice",
            &task,
            json!({ &both[1]: accept(json!({"name": "Grace"})) }),
        )
        .await;
    let done = client.settled("alice", &task).await;
    assert_eq!(done["status"], "completed", "{done}");
    let data = done["result"]["structuredContent"]["data"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        data.contains("Ada") && data.contains("Grace"),
        "both answers reached the tool: {done}"
    );
}

/// Two replicas sharing one store: the questions of a task replica A runs are listed by
/// `tasks/get` on B; an answer sent to B reaches the tool on A (B then lists only the question
/// still waiting), and the other answer, sent to A, ends the task, read on B.
#[tokio::test]
async fn an_answer_sent_to_another_replica_reaches_the_waiting_tool() {
    answers_reach_the_tool_on_any_replica(Arc::new(MemoryConversationStore::new())).await;
}

/// The same on a real `redis-server` (skipped where there is none).
#[cfg(feature = "redis")]
#[tokio::test]
async fn an_answer_sent_to_another_replica_reaches_the_waiting_tool_through_redis() {
    let Some(server) = redis_server::RedisServer::start() else {
        return;
    };
    let store = toolwright_core::conversation::RedisConversationStore::builder()
        .prefix("task-ask:")
        .connect(&server.url())
        .await
        .expect("connects");
    answers_reach_the_tool_on_any_replica(Arc::new(store)).await;
}

#[cfg(feature = "redis")]
use crate::revisions::redis_server;

async fn answers_reach_the_tool_on_any_replica(store: Arc<dyn ConversationStore>) {
    let runs = Runs::default();
    let replica = || {
        McpServer::new(registry(&runs))
            .task_store(Arc::clone(&store))
            .task_lease(Duration::from_secs(10))
    };
    let (a, b) = (bind(replica()).await, bind(replica()).await);
    let (on_a, on_b) = (
        Client::new(&a, capabilities(true, false)),
        Client::new(&b, capabilities(true, false)),
    );
    let task = on_a.start("alice", "name_two", json!({})).await;
    let waiting = on_b.waiting("alice", &task, 2).await;
    let both = keys(&waiting);
    let bob = on_b
        .update(
            "bob",
            &task,
            json!({ &both[0]: accept(json!({"name": "Eve"})) }),
        )
        .await;
    assert_eq!(bob["error"]["code"], -32602, "another's task, on B: {bob}");

    let ack = on_b
        .update(
            "alice",
            &task,
            json!({ &both[0]: accept(json!({"name": "Ada"})) }),
        )
        .await;
    assert_eq!(ack["result"], json!({"resultType": "complete"}), "{ack}");
    let on_b_now = on_b.get("alice", &task).await["result"].clone();
    assert_eq!(keys(&on_b_now), vec![both[1].clone()], "on B: {on_b_now}");
    let on_a_now = on_a.waiting("alice", &task, 1).await;
    assert_eq!(keys(&on_a_now), vec![both[1].clone()], "on A: {on_a_now}");

    on_a.update(
        "alice",
        &task,
        json!({ &both[1]: accept(json!({"name": "Grace"})) }),
    )
    .await;
    let done = on_b.settled("alice", &task).await;
    assert_eq!(done["status"], "completed", "{done}");
    let data = done["result"]["structuredContent"]["data"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(data.contains("Ada") && data.contains("Grace"), "{done}");
}

/// A tool declared `task = "required"` is refused, before its body runs, to a client that does
/// not take tasks: `-32021`, naming the extension to declare. A client that takes tasks gets a
/// task, even for a body that ends at once; a registry call simply runs it.
#[tokio::test]
async fn a_task_only_tool_is_refused_unrun_to_a_client_without_tasks() {
    let runs = Runs::default();
    let server = server(&runs).await;
    let plain = Client::new(&server, capabilities(false, true));
    let refused = plain.call("alice", "rebuild_index", json!({})).await;
    assert_eq!(refused["error"]["code"], -32021, "{refused}");
    assert_eq!(
        refused["error"]["data"]["requiredCapabilities"]["extensions"]
            ["io.modelcontextprotocol/tasks"],
        json!({}),
        "{refused}"
    );
    assert_eq!(runs.0.load(Ordering::SeqCst), 0, "refused before it ran");

    let tasks = Client::new(&server, capabilities(true, false));
    let task = tasks.start("alice", "rebuild_index", json!({})).await;
    let done = tasks.settled("alice", &task).await;
    assert_eq!(
        done["result"]["structuredContent"]["data"], "rebuilt",
        "{done}"
    );

    let outcome = registry(&runs)
        .call(ToolCall::new("c1", "rebuild_index", "{}"))
        .await;
    assert_eq!(
        outcome.status(),
        Status::Success,
        "outside MCP it simply runs"
    );
    assert_eq!(runs.0.load(Ordering::SeqCst), 2);
}

/// A task-only tool that asks before it first waits, called by a client that answers
/// input-required rounds: round one is an input-required result (no task yet); the call sent
/// again with the answer is a task (no `requestState`), whose result has the answer.
#[tokio::test]
async fn questions_before_the_first_wait_are_answered_by_a_round_then_the_call_is_a_task() {
    let server = server(&Runs::default()).await;
    let client = Client::new(&server, capabilities(true, true));
    let first = client.call("alice", "greet_later", json!({})).await;
    let round = &first["result"];
    assert_eq!(round["resultType"], "input_required", "{first}");
    assert!(round.get("taskId").is_none(), "{first}");
    let key = keys(round).remove(0);
    let state = round["requestState"].as_str().expect("a state").to_owned();

    let second = client
        .request(
            "alice",
            "tools/call",
            json!({
                "name": "greet_later",
                "arguments": {},
                "inputResponses": { &key: accept(json!({"name": "Alice"})) },
                "requestState": state,
            }),
        )
        .await;
    let created = &second["result"];
    assert_eq!(created["resultType"], "task", "{second}");
    assert!(created.get("requestState").is_none(), "{second}");
    let task = created["taskId"].as_str().expect("a task id").to_owned();
    let done = client.settled("alice", &task).await;
    assert_eq!(
        done["result"]["structuredContent"]["data"], "Hello, Alice!",
        "{done}"
    );
}

/// A tool body that panics while it runs as a task ends the task `failed`, the JSON-RPC error
/// inlined and no result; a tool's own failure (a `ToolError`) ends it `completed`, with the
/// `isError` envelope the model reads.
#[tokio::test]
async fn a_panicking_task_tool_ends_failed_and_a_tool_error_completed() {
    let server = server(&Runs::default()).await;
    let client = Client::new(&server, capabilities(true, false));
    let broken = client.start("alice", "broken_job", json!({})).await;
    let failed = client.settled("alice", &broken).await;
    assert_eq!(failed["status"], "failed", "{failed}");
    assert_eq!(failed["error"]["code"], -32603, "{failed}");
    assert!(failed["error"]["message"].is_string(), "{failed}");
    assert_eq!(
        failed["error"]["data"]["error_type"], "tool_panicked",
        "{failed}"
    );
    assert!(failed.get("result").is_none(), "{failed}");

    let missing = client.start("alice", "missing_input_job", json!({})).await;
    let completed = client.settled("alice", &missing).await;
    assert_eq!(completed["status"], "completed", "{completed}");
    assert_eq!(completed["result"]["isError"], true, "{completed}");
    assert_eq!(
        completed["result"]["structuredContent"]["error_type"], "not_found",
        "{completed}"
    );
}

/// A task holds at most `MAX_PENDING_INPUTS_PER_TASK` questions waiting at once: one more is
/// not asked, and the tool's `ask` fails saying so.
#[tokio::test]
async fn a_question_past_the_bound_of_a_task_is_refused() {
    let server = server(&Runs::default()).await;
    let client = Client::new(&server, capabilities(true, false));
    let task = client.start("alice", "ask_too_many", json!({})).await;
    let done = client.settled("alice", &task).await;
    assert_eq!(done["status"], "completed", "{done}");
    let data = done["result"]["structuredContent"]["data"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        data.contains("16 questions waiting already"),
        "the question past the bound: {done}"
    );
}

/// What a store gives back may be corrupt or another version's: a task record that does not
/// read is an error saying so, and an answer that does not read reaches the tool as a question
/// it could not ask (the task completes with the tool's `bad_request`), never a panic.
#[tokio::test]
async fn an_unreadable_record_or_answer_in_the_store_is_reported_never_a_panic() {
    let store: Arc<dyn ConversationStore> = Arc::new(MemoryConversationStore::new());
    let runs = Runs::default();
    let server = bind(
        McpServer::new(registry(&runs))
            .task_store(Arc::clone(&store))
            .task_lease(Duration::from_secs(10)),
    )
    .await;
    let client = Client::new(&server, capabilities(true, false));
    let hour = Duration::from_secs(3600);
    store
        .create_run("mcp-task:torn", "elsewhere", "{\"principal\":", hour, hour)
        .await
        .expect("written");
    let torn = client.get("alice", "torn").await;
    assert_eq!(torn["error"]["code"], -32603, "{torn}");
    assert!(
        torn["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("unreadable")),
        "{torn}"
    );

    let task = client
        .start("alice", "confirm_refund", json!({"order": "A2"}))
        .await;
    let waiting = client.waiting("alice", &task, 1).await;
    let key = keys(&waiting).remove(0);
    store
        .create_run(
            &format!("mcp-task-answer:{task}:{key}"),
            "elsewhere",
            "not json",
            hour,
            hour,
        )
        .await
        .expect("written");
    let done = client.settled("alice", &task).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["result"]["isError"], true, "{done}");
    assert_eq!(
        done["result"]["structuredContent"]["error_type"], "bad_request",
        "{done}"
    );
}

/// A 2025-11-25 session's client that takes tasks (declared at `initialize`) and answers forms.
#[derive(Clone)]
struct SessionClient {
    /// Forms it was sent by `elicitation/create` (a task's question never is).
    elicited: Arc<AtomicU64>,
}

impl rmcp::ClientHandler for SessionClient {
    fn get_info(&self) -> rmcp::model::ClientConfig {
        rmcp::model::ClientConfig::new(
            rmcp::model::ClientCapabilities::builder()
                .enable_elicitation()
                .enable_tasks()
                .build(),
            rmcp::model::Implementation::new("toolwright-task-session", "0"),
        )
        .with_protocol_version(rmcp::model::ProtocolVersion::V_2025_11_25)
    }

    async fn create_elicitation(
        &self,
        _request: rmcp::model::ElicitRequestParams,
        _context: rmcp::service::RequestContext<rmcp::RoleClient>,
    ) -> Result<rmcp::model::ElicitResult, rmcp::ErrorData> {
        self.elicited.fetch_add(1, Ordering::SeqCst);
        Ok(rmcp::model::ElicitResult::new(
            rmcp::model::ElicitationAction::Decline,
        ))
    }
}

/// Over a 2025-11-25 session (stdio), a task's question goes through the task as well: the
/// task waits `input_required` for `tasks/update`, and no `elicitation/create` is sent.
#[tokio::test]
async fn a_session_s_task_asks_through_the_task_not_by_elicitation() {
    use rmcp::model::{GetTaskParams, TaskPayload, TaskStatus, UpdateTaskParams};
    use rmcp::ServiceExt;

    let (server_io, client_io) = tokio::io::duplex(1 << 20);
    let (read, write) = tokio::io::split(server_io);
    let server =
        McpServer::new(registry(&Runs::default())).task_poll_interval(Duration::from_millis(20));
    tokio::spawn(async move {
        let _ = server.serve((read, write)).await;
    });
    let handler = SessionClient {
        elicited: Arc::default(),
    };
    let (read, write) = tokio::io::split(client_io);
    let client = handler
        .clone()
        .serve((read, write))
        .await
        .expect("connects");
    let params = rmcp::model::CallToolRequestParams::new("confirm_refund").with_arguments(
        json!({"order": "S1"})
            .as_object()
            .cloned()
            .unwrap_or_default(),
    );
    let created = client
        .peer()
        .call_tool_once(params)
        .await
        .expect("answered");
    let rmcp::model::CallToolResponse::Task(created) = created else {
        panic!("not a task: {created:?}");
    };
    let id = created.task.task_id.clone();
    let get = || client.peer().get_task(GetTaskParams::new(id.clone()));
    let mut key = None;
    for _ in 0..250 {
        let got = get().await.expect("tasks/get");
        if let TaskPayload::InputRequired { input_requests } = &got.task.payload {
            key = input_requests.keys().next().cloned();
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let key = key.expect("the task waits for its question");
    let mut responses = rmcp::model::InputResponses::new();
    responses.insert(key, accept(json!({"confirm": true})));
    client
        .peer()
        .update_task(UpdateTaskParams::new(id.clone(), responses))
        .await
        .expect("acked");
    let mut done = None;
    for _ in 0..250 {
        let got = get().await.expect("tasks/get");
        if got.task.status() == TaskStatus::Completed {
            done = Some(got);
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let done = done.expect("completed");
    let TaskPayload::Completed { result } = &done.task.payload else {
        panic!("{done:?}");
    };
    assert_eq!(
        result["structuredContent"]["data"], "refunded S1",
        "{result:?}"
    );
    assert_eq!(
        handler.elicited.load(Ordering::SeqCst),
        0,
        "asked in the task only"
    );
}
