//! What a tool asks of its client besides a form, over MCP with rmcp's client at each revision:
//! a completion of the client's model ([`ToolContext::sample`]), the client's roots
//! ([`ToolContext::roots`]), log lines ([`ToolContext::log`]), and a tool that cannot work
//! without a capability (`requires_client`, `-32021`).

#![allow(deprecated)] // sampling, roots and logging are in both revisions served

use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, CreateMessageRequestParams,
    CreateMessageResult, ErrorCode, Implementation, ListRootsResult, LoggingLevel,
    LoggingMessageNotificationParam, ProtocolVersion, Role, Root, SamplingMessage,
    SetLevelRequestParams,
};
use rmcp::service::{
    ClientLifecycleMode, ClientServiceExt, NotificationContext, RequestContext, RunningService,
};
use rmcp::{ClientHandler, ErrorData, RoleClient, ServiceExt};
use serde_json::json;
use toolwright::ask::{LogLevel, Sampling};
use toolwright::prelude::*;
use toolwright_mcp::McpServer;

/// Review a change: the client's model summarises it, within the client's roots.
#[tool(read_only, requires_client = ["sampling", "roots"])]
async fn review(ctx: ToolContext, diff: String) -> Result<String, ToolError> {
    ctx.log(LogLevel::Debug, "reading the roots");
    let roots = ctx.roots().await?;
    ctx.log(LogLevel::Warning, format!("{} roots", roots.len()));
    let summary = ctx
        .sample(
            Sampling::new(format!("Summarise: {diff}"))
                .with_system("Be terse.")
                .with_max_tokens(40),
        )
        .await?;
    Ok(format!(
        "{} [{}] in {}",
        summary.text(),
        summary.model(),
        roots[0].uri()
    ))
}

/// Asks the client's model, without declaring that it needs to.
#[tool(read_only)]
async fn guess(ctx: ToolContext) -> Result<String, ToolError> {
    Ok(ctx
        .sample(Sampling::new("Guess a number"))
        .await?
        .text()
        .to_owned())
}

/// A client that samples with a fixed answer, lists one root, and keeps the log lines it gets.
#[derive(Clone)]
struct Client {
    version: ProtocolVersion,
    capable: bool,
    sampled: Arc<Mutex<Vec<CreateMessageRequestParams>>>,
    logged: Arc<Mutex<Vec<LoggingMessageNotificationParam>>>,
}

impl ClientHandler for Client {
    fn get_info(&self) -> ClientConfig {
        let capabilities = if self.capable {
            ClientCapabilities::builder()
                .enable_roots()
                .enable_sampling()
                .build()
        } else {
            ClientCapabilities::default()
        };
        ClientConfig::new(capabilities, Implementation::new("toolwright-client", "0"))
            .with_protocol_version(self.version.clone())
    }

    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        self.sampled.lock().expect("not poisoned").push(params);
        Ok(CreateMessageResult::new(
            SamplingMessage::new(
                Role::Assistant,
                rmcp::model::SamplingMessageContentBlock::text("a small fix"),
            ),
            "test-model".to_owned(),
        ))
    }

    async fn list_roots(
        &self,
        _context: RequestContext<RoleClient>,
    ) -> Result<ListRootsResult, ErrorData> {
        Ok(ListRootsResult::new(vec![Root::new("file:///work/repo")]))
    }

    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.logged.lock().expect("not poisoned").push(params);
    }
}

async fn connect(
    version: ProtocolVersion,
    capable: bool,
) -> (RunningService<RoleClient, Client>, Client) {
    let registry = Registry::builder()
        .tool(Review)
        .tool(Guess)
        .build()
        .expect("the registry builds");
    let (server_io, client_io) = tokio::io::duplex(1 << 20);
    let (read, write) = tokio::io::split(server_io);
    tokio::spawn(async move {
        let _ = McpServer::new(registry).serve((read, write)).await;
    });
    let client = Client {
        version: version.clone(),
        capable,
        sampled: Arc::default(),
        logged: Arc::default(),
    };
    let (read, write) = tokio::io::split(client_io);
    let running = if version >= ProtocolVersion::V_2026_07_28 {
        let lifecycle = ClientLifecycleMode::Discover {
            preferred_versions: vec![version],
        };
        client
            .clone()
            .serve_with_lifecycle((read, write), lifecycle)
            .await
            .expect("connects")
    } else {
        client.clone().serve((read, write)).await.expect("connects")
    };
    (running, client)
}

fn call(name: &str, arguments: serde_json::Value) -> CallToolRequestParams {
    CallToolRequestParams::new(name.to_owned())
        .with_arguments(arguments.as_object().cloned().unwrap_or_default())
}

#[tokio::test]
async fn a_tool_samples_the_clients_model_and_reads_its_roots_at_each_revision() {
    for version in [ProtocolVersion::V_2025_11_25, ProtocolVersion::V_2026_07_28] {
        let (running, client) = connect(version.clone(), true).await;
        let result = running
            .call_tool(call("review", json!({"diff": "+ let x = 1;"})))
            .await
            .expect("answered");
        let envelope = result.structured_content.clone().unwrap_or_default();
        assert_eq!(
            envelope["data"], "a small fix [test-model] in file:///work/repo",
            "{version}: {envelope}"
        );
        let sampled = client.sampled.lock().expect("not poisoned").clone();
        assert_eq!(sampled.len(), 1, "{version}: sampled once");
        assert_eq!(sampled[0].max_tokens, 40);
        assert_eq!(sampled[0].system_prompt.as_deref(), Some("Be terse."));
        running.cancel().await.expect("closes");
    }
}

#[tokio::test]
async fn a_session_gets_the_tools_log_lines_at_or_above_the_level_it_set() {
    let (running, client) = connect(ProtocolVersion::V_2025_11_25, true).await;
    running
        .call_tool(call("review", json!({"diff": "+ a"})))
        .await
        .expect("answered");
    running
        .set_level(SetLevelRequestParams::new(LoggingLevel::Warning))
        .await
        .expect("level set");
    running
        .call_tool(call("review", json!({"diff": "+ b"})))
        .await
        .expect("answered");
    // Log lines go out behind the tool, not before its answer: wait for the last one.
    for _ in 0..100 {
        if client.logged.lock().expect("not poisoned").len() >= 3 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let logged: Vec<(LoggingLevel, serde_json::Value)> = client
        .logged
        .lock()
        .expect("not poisoned")
        .iter()
        .map(|line| (line.level, line.data.clone()))
        .collect();
    assert_eq!(
        logged,
        vec![
            (LoggingLevel::Debug, json!("reading the roots")),
            (LoggingLevel::Warning, json!("1 roots")),
            (LoggingLevel::Warning, json!("1 roots")),
        ],
        "every line before the level was set, then only warnings and above"
    );
    assert!(client
        .logged
        .lock()
        .expect("not poisoned")
        .iter()
        .all(|line| line.logger.as_deref() == Some("review")));
    running.cancel().await.expect("closes");
}

#[tokio::test]
async fn a_client_without_a_required_capability_is_refused_before_the_body_runs() {
    for version in [ProtocolVersion::V_2025_11_25, ProtocolVersion::V_2026_07_28] {
        let (running, client) = connect(version.clone(), false).await;
        let refused = running
            .call_tool(call("review", json!({"diff": "+ a"})))
            .await
            .expect_err("refused");
        let rmcp::ServiceError::McpError(error) = refused else {
            panic!("{version}: a JSON-RPC error, got {refused:?}");
        };
        assert_eq!(
            error.code,
            ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY,
            "{version}"
        );
        assert_eq!(
            error.data,
            Some(json!({"requiredCapabilities": {"roots": {}, "sampling": {}}})),
            "{version}"
        );
        assert!(
            client.logged.lock().expect("not poisoned").is_empty(),
            "the body never ran"
        );
        // A tool that did not declare the need is run, and its request refused as a
        // classified outcome the model reads.
        let result = running
            .call_tool(call("guess", json!({})))
            .await
            .expect("answered");
        let envelope = result.structured_content.clone().unwrap_or_default();
        assert_eq!(
            envelope["error_type"], "bad_request",
            "{version}: {envelope}"
        );
        let message = envelope["message"].as_str().unwrap_or_default();
        assert!(
            message.contains("`sampling` capability"),
            "{version}: {message}"
        );
        running.cancel().await.expect("closes");
    }
}

/// Ship an order where the user says, greeting them with the model's words.
#[tool(read_only)]
async fn ship(ctx: ToolContext, order: String) -> Result<String, ToolError> {
    let (to, roots) = tokio::try_join!(
        ctx.ask_named::<Destination>("destination", format!("Where should {order} go?")),
        ctx.roots_named("roots"),
    )?;
    let toolwright::ask::Reply::Accepted(Destination { city }) = to else {
        return Ok(format!("{order} stays"));
    };
    let note = ctx
        .sample(Sampling::new(format!("A note for {city}")))
        .await?;
    Ok(format!(
        "{order} to {city}: {} ({} roots)",
        note.text(),
        roots.len()
    ))
}

/// Where an order goes.
#[toolwright::data(input)]
struct Destination {
    /// The city.
    city: String,
}

impl ClientHandler for Asked {
    fn get_info(&self) -> ClientConfig {
        let capabilities = ClientCapabilities::builder()
            .enable_elicitation()
            .enable_roots()
            .enable_sampling()
            .build();
        ClientConfig::new(capabilities, Implementation::new("toolwright-asked", "0"))
            .with_protocol_version(self.0.version.clone())
    }

    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        self.0.create_message(params, context).await
    }

    async fn list_roots(
        &self,
        context: RequestContext<RoleClient>,
    ) -> Result<ListRootsResult, ErrorData> {
        self.0.list_roots(context).await
    }

    async fn create_elicitation(
        &self,
        request: rmcp::model::ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<rmcp::model::ElicitResult, ErrorData> {
        if let rmcp::model::ElicitRequestParams::FormElicitationParams { message, .. } = request {
            self.1.lock().expect("not poisoned").push(message);
        }
        Ok(
            rmcp::model::ElicitResult::new(rmcp::model::ElicitationAction::Accept)
                .with_content(json!({"city": "Springfield"})),
        )
    }
}

/// The capable client, answering forms too, keeping the forms it was asked.
#[derive(Clone)]
struct Asked(Client, Arc<Mutex<Vec<String>>>);

#[tokio::test]
async fn a_proxied_2026_upstream_tool_asks_the_downstream_client_as_a_local_one_would() {
    for version in [ProtocolVersion::V_2025_11_25, ProtocolVersion::V_2026_07_28] {
        // The upstream: a server whose tool asks a form, the roots and the model.
        let upstream = upstream(Registry::builder().tool(Ship).build().expect("builds")).await;
        let proxied = upstream.tools();
        assert!(proxied.refused.is_empty(), "{:?}", proxied.refused);
        let registry = proxied
            .tools
            .into_iter()
            .fold(Registry::builder(), |b, tool| b.dynamic_tool(tool))
            .build()
            .expect("builds");
        // The downstream: the proxy's own server and a client that answers everything.
        let (down_server, down_client) = tokio::io::duplex(1 << 20);
        let (read, write) = tokio::io::split(down_server);
        tokio::spawn(async move {
            let _ = McpServer::new(registry).serve((read, write)).await;
        });
        let client = Client {
            version: version.clone(),
            capable: true,
            sampled: Arc::default(),
            logged: Arc::default(),
        };
        let asked = Asked(client.clone(), Arc::default());
        let (read, write) = tokio::io::split(down_client);
        let running = if version >= ProtocolVersion::V_2026_07_28 {
            let lifecycle = ClientLifecycleMode::Discover {
                preferred_versions: vec![version.clone()],
            };
            asked
                .clone()
                .serve_with_lifecycle((read, write), lifecycle)
                .await
                .expect("connects")
        } else {
            asked.clone().serve((read, write)).await.expect("connects")
        };
        let result = running
            .call_tool(call("ship", json!({"order": "A1"})))
            .await
            .expect("answered");
        let envelope = result.structured_content.clone().unwrap_or_default();
        // The upstream's own envelope is the proxied tool's data.
        assert_eq!(
            envelope["data"]["data"], "A1 to Springfield: a small fix (1 roots)",
            "{version}: {envelope}"
        );
        assert_eq!(
            *asked.1.lock().expect("not poisoned"),
            ["Where should A1 go?"],
            "{version}: the downstream user was asked once"
        );
        assert_eq!(
            client.sampled.lock().expect("not poisoned").len(),
            1,
            "{version}"
        );
        running.cancel().await.expect("closes");
    }
}

/// A server of `registry` on one end of a pipe, and the proxy's connection to it at 2026-07-28.
async fn upstream(registry: Registry) -> toolwright_mcp::proxy::Upstream {
    upstream_with(registry, toolwright_mcp::proxy::Upstream::builder()).await
}

/// [`upstream`], connected by `builder`.
async fn upstream_with(
    registry: Registry,
    builder: toolwright_mcp::proxy::UpstreamBuilder,
) -> toolwright_mcp::proxy::Upstream {
    let (up_server, up_client) = tokio::io::duplex(1 << 20);
    let (read, write) = tokio::io::split(up_server);
    tokio::spawn(async move {
        let _ = McpServer::new(registry).serve((read, write)).await;
    });
    let (read, write) = tokio::io::split(up_client);
    builder
        .revision(ProtocolVersion::V_2026_07_28)
        .connect_io(read, write)
        .await
        .expect("the upstream connects")
}

/// Counts the upstream report bodies that started and that were dropped before their end.
#[derive(Default)]
struct Reports {
    started: std::sync::atomic::AtomicU32,
    dropped: std::sync::atomic::AtomicU32,
}

struct Dropped(Arc<Reports>, bool);

impl Drop for Dropped {
    fn drop(&mut self) {
        if !self.1 {
            self.0
                .dropped
                .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
    }
}

/// A long report: runs as a task for a client that takes tasks.
#[tool(read_only, task, timeout_ms = 60000)]
async fn long_report(
    reports: State<Arc<Reports>>,
    ctx: ToolContext,
    ms: u64,
) -> Result<String, ToolError> {
    reports
        .started
        .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let mut guard = Dropped(Arc::clone(&reports), false);
    ctx.progress(1.0, Some(2.0), "half way");
    tokio::time::sleep(Duration::from_millis(ms)).await;
    guard.1 = true;
    Ok(format!("report after {ms} ms"))
}

/// The proxy over an upstream whose `long_report` runs as a task, with a proxied timeout.
async fn task_proxy(timeout: Duration) -> (Registry, Arc<Reports>) {
    let reports = Arc::new(Reports::default());
    let upstream_registry = Registry::builder()
        .tool(LongReport)
        .state(Arc::clone(&reports))
        .build()
        .expect("builds");
    let upstream = upstream(upstream_registry).await.timeout(timeout);
    let registry = upstream
        .tools()
        .tools
        .into_iter()
        .fold(Registry::builder(), |b, tool| b.dynamic_tool(tool))
        .build()
        .expect("builds");
    (registry, reports)
}

#[tokio::test]
async fn a_proxied_upstream_task_is_followed_to_its_result() {
    let (registry, reports) = task_proxy(Duration::from_secs(30)).await;
    let outcome = registry
        .call(ToolCall::new("c1", "long_report", r#"{"ms": 300}"#))
        .await;
    assert!(outcome.is_ok(), "{outcome:?}");
    let data: serde_json::Value = outcome.data_as().unwrap_or_default();
    assert_eq!(data["data"], "report after 300 ms", "{data}");
    assert_eq!(reports.started.load(std::sync::atomic::Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_proxied_call_that_times_out_cancels_the_upstream_task() {
    let (registry, reports) = task_proxy(Duration::from_millis(400)).await;
    let outcome = registry
        .call(ToolCall::new("c1", "long_report", r#"{"ms": 20000}"#))
        .await;
    assert_eq!(
        outcome.error_kind(),
        Some(ErrorKind::Timeout),
        "{outcome:?}"
    );
    // The upstream's body is dropped when its task is cancelled (each attempt's: a read-only
    // call that timed out is tried again).
    for _ in 0..300 {
        let started = reports.started.load(std::sync::atomic::Ordering::SeqCst);
        if reports.dropped.load(std::sync::atomic::Ordering::SeqCst) == started {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let started = reports.started.load(std::sync::atomic::Ordering::SeqCst);
    let dropped = reports.dropped.load(std::sync::atomic::Ordering::SeqCst);
    assert!(started >= 1, "the upstream ran it");
    assert_eq!(
        dropped, started,
        "every upstream run was cancelled, none left working"
    );
}

/// Works as a task, logging as it goes.
#[tool(read_only, task, timeout_ms = 60000)]
async fn logged_job(ctx: ToolContext) -> Result<String, ToolError> {
    tokio::time::sleep(Duration::from_millis(30)).await;
    ctx.log(LogLevel::Info, "half way");
    tokio::time::sleep(Duration::from_millis(30)).await;
    Ok("done".to_owned())
}

/// A session's client that takes tasks and keeps the log lines it gets.
#[derive(Clone)]
struct TaskClient(Arc<Mutex<Vec<LoggingMessageNotificationParam>>>);

impl ClientHandler for TaskClient {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::builder().enable_tasks().build(),
            Implementation::new("toolwright-task-logs", "0"),
        )
        .with_protocol_version(ProtocolVersion::V_2025_11_25)
    }

    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.0.lock().expect("not poisoned").push(params);
    }
}

#[tokio::test]
async fn a_sessions_task_logs_to_its_client_while_it_works() {
    let registry = Registry::builder().tool(LoggedJob).build().expect("builds");
    let (server_io, client_io) = tokio::io::duplex(1 << 20);
    let (read, write) = tokio::io::split(server_io);
    tokio::spawn(async move {
        let _ = McpServer::new(registry).serve((read, write)).await;
    });
    let handler = TaskClient(Arc::default());
    let (read, write) = tokio::io::split(client_io);
    let client = handler
        .clone()
        .serve((read, write))
        .await
        .expect("connects");
    let created = client
        .peer()
        .call_tool_once(call("logged_job", json!({})))
        .await
        .expect("answered");
    let rmcp::model::CallToolResponse::Task(created) = created else {
        panic!("not a task: {created:?}");
    };
    let id = created.task.task_id.clone();
    for _ in 0..300 {
        let got = client
            .peer()
            .get_task(rmcp::model::GetTaskParams::new(id.clone()))
            .await
            .expect("tasks/get");
        if got.task.status() == rmcp::model::TaskStatus::Completed
            && !handler.0.lock().expect("not poisoned").is_empty()
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let logged: Vec<serde_json::Value> = handler
        .0
        .lock()
        .expect("not poisoned")
        .iter()
        .map(|line| line.data.clone())
        .collect();
    assert_eq!(logged, [json!("half way")]);
    client.cancel().await.expect("closes");
}

#[tokio::test]
async fn a_proxied_task_tool_is_a_task_downstream_following_the_upstreams() {
    let reports = Arc::new(Reports::default());
    let upstream_registry = Registry::builder()
        .tool(LongReport)
        .state(Arc::clone(&reports))
        .build()
        .expect("builds");
    let builder = toolwright_mcp::proxy::Upstream::builder().task_tools(["long_report"]);
    let upstream = upstream_with(upstream_registry, builder).await;
    let registry = upstream
        .timeout(Duration::from_secs(30))
        .tools()
        .tools
        .into_iter()
        .fold(Registry::builder(), |b, tool| b.dynamic_tool(tool))
        .build()
        .expect("builds");
    assert!(registry
        .spec("long_report")
        .is_some_and(|spec| spec.is_task()));
    // The downstream: the proxy's own server, and a 2025-11-25 session that takes tasks.
    let (down_server, down_client) = tokio::io::duplex(1 << 20);
    let (read, write) = tokio::io::split(down_server);
    tokio::spawn(async move {
        let _ = McpServer::new(registry).serve((read, write)).await;
    });
    let handler = TaskClient(Arc::default());
    let (read, write) = tokio::io::split(down_client);
    let client = handler.serve((read, write)).await.expect("connects");
    let created = client
        .peer()
        .call_tool_once(call("long_report", json!({"ms": 200})))
        .await
        .expect("answered");
    let rmcp::model::CallToolResponse::Task(created) = created else {
        panic!("not a task downstream: {created:?}");
    };
    let id = created.task.task_id.clone();
    let mut done = None;
    for _ in 0..300 {
        let got = client
            .peer()
            .get_task(rmcp::model::GetTaskParams::new(id.clone()))
            .await
            .expect("tasks/get");
        if got.task.status() == rmcp::model::TaskStatus::Completed {
            done = Some(serde_json::to_value(&got).unwrap_or_default());
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let done = done.expect("the downstream task completes");
    assert_eq!(
        done["result"]["structuredContent"]["data"]["data"], "report after 200 ms",
        "{done}"
    );
    assert_eq!(reports.started.load(std::sync::atomic::Ordering::SeqCst), 1);
    client.cancel().await.expect("closes");
}

/// Logs from a thread of its own, outside the runtime.
#[tool(read_only)]
async fn threaded_log(ctx: ToolContext) -> Result<String, ToolError> {
    let logger = ctx.clone();
    std::thread::spawn(move || logger.log(LogLevel::Info, "from a thread"))
        .join()
        .map_err(|_| ToolError::bad_request("logging from a thread panicked"))?;
    Ok("logged".to_owned())
}

#[tokio::test]
async fn a_line_logged_outside_the_runtime_is_dropped_never_a_panic() {
    let registry = Registry::builder()
        .tool(ThreadedLog)
        .build()
        .expect("builds");
    let (server_io, client_io) = tokio::io::duplex(1 << 20);
    let (read, write) = tokio::io::split(server_io);
    tokio::spawn(async move {
        let _ = McpServer::new(registry).serve((read, write)).await;
    });
    let client = Client {
        version: ProtocolVersion::V_2025_11_25,
        capable: true,
        sampled: Arc::default(),
        logged: Arc::default(),
    };
    let (read, write) = tokio::io::split(client_io);
    let running = client.clone().serve((read, write)).await.expect("connects");
    let result = running
        .call_tool(call("threaded_log", json!({})))
        .await
        .expect("answered");
    let envelope = result.structured_content.clone().unwrap_or_default();
    assert_eq!(envelope["data"], "logged", "{envelope}");
    running.cancel().await.expect("closes");
}
