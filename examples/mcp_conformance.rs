//! The server the official MCP conformance suite (`@modelcontextprotocol/conformance`) tests,
//! built on toolwright's public API: the tools its scenarios call, with `#[tool]` and runtime
//! tools, and the resources, prompts, completion and logging level of an rmcp `ServerHandler`
//! (`Everything`) that keeps the tools inside it (`McpServer::with_handler`). Served over
//! streamable HTTP on loopback, to 2025-11-25 clients (with sessions) and 2026-07-28 clients
//! (without). `.ci/run` starts it and runs the suite's scenarios of both revisions against it.
//!
//! ```text
//! cargo run --example mcp_conformance --features mcp -- 127.0.0.1:3001
//! npx @modelcontextprotocol/conformance server --url http://127.0.0.1:3001/mcp
//! ```

use std::borrow::Cow;
use std::sync::OnceLock;
use std::time::Duration;

use base64::Engine as _;
use toolwright::ask::{LogLevel, Reply, Sampling};
use toolwright::content::Content;
#[allow(deprecated)]
use toolwright::mcp::rmcp::model::SetLevelRequestParams;
use toolwright::mcp::rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, CompleteRequestParams,
    CompleteResult, ContentBlock, CustomRequest, CustomResult, ElicitRequest, ElicitRequestParams,
    GetPromptRequestParams, GetPromptResponse, GetPromptResult, GetTaskParams, GetTaskResult,
    InputRequest, InputRequests, InputRequiredResult, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, PaginatedRequestParams,
    Prompt, PromptArgument, PromptMessage, ProtocolVersion, ReadResourceRequestParams,
    ReadResourceResponse, ReadResourceResult, Resource, ResourceContents, ResourceTemplate,
    ResourcesCapability, Role, ServerConfig, SubscribeRequestParams, SubscriptionFilter, Tool,
    UnsubscribeRequestParams, UpdateTaskParams,
};
use toolwright::mcp::rmcp::service::{NotificationContext, RequestContext, SubscriptionContext};
use toolwright::mcp::rmcp::{ErrorData, RoleServer, ServerHandler};
use toolwright::mcp::{McpServer, Tools};
use toolwright::prelude::*;
use toolwright::providers::Provider;
use toolwright::serde_json::json;
use toolwright::{DynamicTool, Effect};

/// A 1x1 red pixel.
const PNG: &[u8] = &[
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x02, 0x00, 0x00, 0x00, 0x90, 0x77, 0x53,
    0xde, 0x00, 0x00, 0x00, 0x0c, 0x49, 0x44, 0x41, 0x54, 0x08, 0xd7, 0x63, 0xf8, 0xcf, 0xc0, 0x00,
    0x00, 0x03, 0x01, 0x01, 0x00, 0x18, 0xdd, 0x8d, 0xb0, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4e,
    0x44, 0xae, 0x42, 0x60, 0x82,
];

/// A WAV file of one silent sample (8 kHz, 8-bit, mono).
const WAV: &[u8] = &[
    b'R', b'I', b'F', b'F', 37, 0, 0, 0, b'W', b'A', b'V', b'E', b'f', b'm', b't', b' ', 16, 0, 0,
    0, 1, 0, 1, 0, 0x40, 0x1f, 0, 0, 0x40, 0x1f, 0, 0, 1, 0, 8, 0, b'd', b'a', b't', b'a', 1, 0, 0,
    0, 0x80,
];

/// Answers with one text block.
#[tool(read_only)]
async fn test_simple_text() -> Result<Content, ToolError> {
    Ok(Content::new().text("This is a simple text response for testing."))
}

/// Answers with an image.
#[tool(read_only)]
async fn test_image_content() -> Result<Content, ToolError> {
    Ok(Content::new().image(PNG, "image/png"))
}

/// Answers with a sound.
#[tool(read_only)]
async fn test_audio_content() -> Result<Content, ToolError> {
    Ok(Content::new().audio(WAV, "audio/wav"))
}

/// Answers with an embedded resource.
#[tool(read_only)]
async fn test_embedded_resource() -> Result<Content, ToolError> {
    Ok(Content::new().resource_text(
        "test://embedded-resource",
        "text/plain",
        "This is an embedded resource content.",
    ))
}

/// Answers with text, an image and an embedded resource.
#[tool(read_only)]
async fn test_multiple_content_types() -> Result<Content, ToolError> {
    Ok(Content::new()
        .text("Multiple content types test:")
        .image(PNG, "image/png")
        .resource_text(
            "test://mixed-content-resource",
            "application/json",
            r#"{"test":"data","value":123}"#,
        ))
}

/// Always fails.
#[tool(read_only)]
async fn test_error_handling() -> Result<String, ToolError> {
    Err(ToolError::bad_request(
        "This tool intentionally returns an error for testing",
    ))
}

/// Reports progress 0, 50 and 100 of 100, 50 ms apart.
#[tool(read_only)]
async fn test_tool_with_progress(ctx: ToolContext) -> Result<String, ToolError> {
    for (i, done) in [0.0, 50.0, 100.0].into_iter().enumerate() {
        if i > 0 {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        ctx.progress(done, Some(100.0), format!("{done} of 100"));
    }
    Ok("Progress test completed".to_owned())
}

/// The schema the `json-schema-2020-12` scenario checks is listed as written.
fn json_schema_tool() -> DynamicTool {
    DynamicTool::builder("json_schema_2020_12_tool")
        .description("Tool with JSON Schema 2020-12 features")
        .input_schema(json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "$defs": {
                "address": {
                    "$anchor": "addressDef",
                    "type": "object",
                    "properties": {"street": {"type": "string"}, "city": {"type": "string"}}
                }
            },
            "properties": {
                "name": {"type": "string"},
                "address": {"$ref": "#/$defs/address"},
                "contactMethod": {"type": "string", "enum": ["phone", "email"]},
                "phone": {"type": "string"},
                "email": {"type": "string"}
            },
            "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
            "if": {
                "properties": {"contactMethod": {"const": "phone"}},
                "required": ["contactMethod"]
            },
            "then": {"required": ["phone"]},
            "else": {"required": ["email"]},
            "additionalProperties": false
        }))
        // Served over MCP only: OpenAI's strict mode has no `if`/`then`/`else`.
        .providers([Provider::Mcp])
        .handler(|args, _| async move { Ok(json!({ "received": args })) })
        .effect(Effect::ReadOnly)
        .build()
        .expect("the scenario's schema is a valid tool")
}

/// Needs a person's approval: over 2026-07-28, which has no server-initiated requests, the
/// server sends no question on the response stream; it answers with an input-required result.
#[tool(requires_approval)]
async fn test_streaming_elicitation() -> Result<String, ToolError> {
    Ok("Streaming complete".to_owned())
}

/// Logs one line: a 2026-07-28 client gets it only when its request set a `logLevel`.
#[tool(read_only)]
async fn test_logging_tool(ctx: ToolContext) -> Result<String, ToolError> {
    ctx.log(LogLevel::Info, "Logging evaluated");
    Ok("Logging evaluated".to_owned())
}

/// Logs three lines to the client while it runs, 50 ms apart.
#[tool(read_only)]
async fn test_tool_with_logging(ctx: ToolContext) -> Result<String, ToolError> {
    ctx.log(LogLevel::Info, "Tool execution started");
    tokio::time::sleep(Duration::from_millis(50)).await;
    ctx.log(LogLevel::Info, "Tool processing data");
    tokio::time::sleep(Duration::from_millis(50)).await;
    ctx.log(LogLevel::Info, "Tool execution completed");
    Ok("Tool with logging executed successfully".to_owned())
}

/// Asks the client's model to answer `prompt`.
#[tool(read_only, requires_client = ["sampling"])]
async fn test_sampling(ctx: ToolContext, prompt: String) -> Result<String, ToolError> {
    let answer = ctx
        .sample(Sampling::new(prompt).with_max_tokens(100))
        .await?;
    Ok(format!("LLM response: {}", answer.text()))
}

/// Cannot work without the client's sampling: a client that did not declare it is refused
/// (`-32021`) before the body runs.
#[tool(read_only, requires_client = ["sampling"])]
async fn test_missing_capability(ctx: ToolContext) -> Result<String, ToolError> {
    let answer = ctx
        .sample(Sampling::new("Say hello").with_max_tokens(20))
        .await?;
    Ok(answer.text().to_owned())
}

/// A parameter mirrored into the `Mcp-Param-Region` header (2026-07-28): rmcp checks the
/// header against the body with the schema `get_tool` answers.
fn custom_headers_tool() -> DynamicTool {
    DynamicTool::builder("test_custom_headers")
        .description("Echoes the region it was sent, which clients mirror into a header")
        .input_schema(json!({
            "type": "object",
            "properties": {
                "region": {"type": "string", "x-mcp-header": "Region"}
            },
            "required": ["region"]
        }))
        .providers([Provider::Mcp])
        .handler(|args, _| async move { Ok(json!({ "region": args["region"] })) })
        .effect(Effect::ReadOnly)
        .build()
        .expect("a valid tool")
}

/// A form answered with one string.
#[toolwright::data]
struct Response {
    /// The user's response.
    response: String,
}

/// A form the user fills in; `T` its schema.
#[derive(serde::Deserialize, serde::Serialize)]
#[serde(transparent)]
struct Form<T> {
    fields: toolwright::serde_json::Value,
    #[serde(skip)]
    schema: std::marker::PhantomData<T>,
}

/// A form's schema, written out: the suite checks each keyword.
trait FormSchema {
    fn schema() -> toolwright::serde_json::Value;
}

impl<T: FormSchema> toolwright::schemars::JsonSchema for Form<T> {
    fn schema_name() -> Cow<'static, str> {
        "Form".into()
    }

    fn json_schema(_: &mut toolwright::schemars::SchemaGenerator) -> toolwright::schemars::Schema {
        toolwright::schemars::Schema::try_from(T::schema()).unwrap_or_default()
    }
}

/// Fields with default values.
struct Defaults;

impl FormSchema for Defaults {
    fn schema() -> toolwright::serde_json::Value {
        json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "User name", "default": "John Doe"},
                "age": {"type": "integer", "description": "User age", "default": 30},
                "score": {"type": "number", "description": "User score", "default": 95.5},
                "status": {
                    "type": "string",
                    "description": "User status",
                    "enum": ["active", "inactive", "pending"],
                    "default": "active"
                },
                "verified": {"type": "boolean", "description": "Verification status", "default": true}
            },
            "required": []
        })
    }
}

/// Enums with and without titles, single and multiple choice.
struct Enums;

impl FormSchema for Enums {
    fn schema() -> toolwright::serde_json::Value {
        let titled = |names: [&str; 3]| {
            names
                .iter()
                .enumerate()
                .map(|(i, title)| json!({"const": format!("value{}", i + 1), "title": title}))
                .collect::<Vec<_>>()
        };
        json!({
            "type": "object",
            "properties": {
                "untitledSingle": {
                    "type": "string",
                    "description": "Select one option",
                    "enum": ["option1", "option2", "option3"]
                },
                "titledSingle": {
                    "type": "string",
                    "description": "Select one option with titles",
                    "oneOf": titled(["First Option", "Second Option", "Third Option"])
                },
                "legacyEnum": {
                    "type": "string",
                    "description": "Select one option (legacy)",
                    "enum": ["opt1", "opt2", "opt3"],
                    "enumNames": ["Option One", "Option Two", "Option Three"]
                },
                "untitledMulti": {
                    "type": "array",
                    "description": "Select multiple options",
                    "minItems": 1,
                    "maxItems": 3,
                    "items": {"type": "string", "enum": ["option1", "option2", "option3"]}
                },
                "titledMulti": {
                    "type": "array",
                    "description": "Select multiple options with titles",
                    "minItems": 1,
                    "maxItems": 3,
                    "items": {"anyOf": titled(["First Choice", "Second Choice", "Third Choice"])}
                }
            },
            "required": []
        })
    }
}

/// The text the suite expects of an elicitation: the action and what came.
fn replied<T: serde::Serialize>(reply: Reply<T>) -> String {
    let (action, content) = match reply {
        Reply::Accepted(answer) => (
            "accept",
            toolwright::serde_json::to_value(answer).unwrap_or_default(),
        ),
        Reply::Declined => ("decline", json!({})),
        Reply::Dismissed => ("cancel", json!({})),
    };
    format!("action={action}, content={content}")
}

/// Asks the user for a response to `message`.
#[tool(read_only)]
async fn test_elicitation(ctx: ToolContext, message: String) -> Result<String, ToolError> {
    let reply = ctx.ask::<Response>(message).await?;
    Ok(format!("User response: {}", replied(reply)))
}

/// Asks the user a form whose fields have defaults.
#[tool(read_only)]
async fn test_elicitation_sep1034_defaults(ctx: ToolContext) -> Result<String, ToolError> {
    let reply = ctx
        .ask::<Form<Defaults>>("Please review and update the form fields with defaults")
        .await?;
    Ok(format!("Elicitation completed: {}", replied(reply)))
}

/// Asks the user to pick from enums.
#[tool(read_only)]
async fn test_elicitation_sep1330_enums(ctx: ToolContext) -> Result<String, ToolError> {
    let reply = ctx
        .ask::<Form<Enums>>("Please select options from the enum fields")
        .await?;
    Ok(format!("Elicitation completed: {}", replied(reply)))
}

/// A name.
#[toolwright::data]
struct Name {
    /// The user's name.
    name: String,
}

/// A color.
#[toolwright::data]
struct Color {
    /// The user's favorite color.
    color: String,
}

/// A confirmation.
#[toolwright::data]
struct Confirm {
    /// Whether the user confirms.
    ok: bool,
}

/// Asks the user's name (as `user_name`) and greets them.
#[tool(read_only)]
async fn test_input_required_result_elicitation(ctx: ToolContext) -> Result<String, ToolError> {
    match ctx
        .ask_named::<Name>("user_name", "What is your name?")
        .await?
    {
        Reply::Accepted(Name { name }) => Ok(format!("Hello, {name}!")),
        _ => Ok("Hello, stranger!".to_owned()),
    }
}

/// Asks two questions, one a round.
#[tool(read_only)]
async fn test_input_required_result_multi_round(ctx: ToolContext) -> Result<String, ToolError> {
    let Reply::Accepted(Name { name }) = ctx.ask::<Name>("Step 1: What is your name?").await?
    else {
        return Ok("Multi-round stopped at step 1".to_owned());
    };
    let Reply::Accepted(Color { color }) = ctx
        .ask::<Color>("Step 2: What is your favorite color?")
        .await?
    else {
        return Ok("Multi-round stopped at step 2".to_owned());
    };
    Ok(format!("Multi-round complete for {name} who likes {color}"))
}

/// Asks for a confirmation: the state of its round is sealed, and a tampered one refused.
#[tool(read_only)]
async fn test_input_required_result_tampered_state(ctx: ToolContext) -> Result<String, ToolError> {
    match ctx
        .ask_named::<Confirm>("confirm", "Please confirm")
        .await?
    {
        Reply::Accepted(Confirm { ok: true }) => Ok("integrity-ok: state verified".to_owned()),
        _ => Ok("not confirmed".to_owned()),
    }
}

/// Asks the client's model (as `capital_question`) and answers with what it said.
#[tool(read_only)]
async fn test_input_required_result_sampling(ctx: ToolContext) -> Result<String, ToolError> {
    let request = Sampling::new("What is the capital of France?").with_max_tokens(100);
    let answer = ctx.sample_named("capital_question", request).await?;
    Ok(format!("The model said: {}", answer.text()))
}

/// Reads the client's roots (as `client_roots`) and lists them.
#[tool(read_only)]
async fn test_input_required_result_list_roots(ctx: ToolContext) -> Result<String, ToolError> {
    let roots = ctx.roots_named("client_roots").await?;
    let uris: Vec<&str> = roots.iter().map(|root| root.uri()).collect();
    Ok(format!("The client's roots: {}", uris.join(", ")))
}

/// Asks for a confirmation: the answer counts only with the state its round was sealed in.
#[tool(read_only)]
async fn test_input_required_result_request_state(ctx: ToolContext) -> Result<String, ToolError> {
    match ctx
        .ask_named::<Confirm>("confirm", "Please confirm")
        .await?
    {
        Reply::Accepted(Confirm { ok: true }) => {
            Ok("state-ok: the round's state came back sealed".to_owned())
        }
        _ => Ok("state-ok, not confirmed".to_owned()),
    }
}

/// Asks three things in one round: a form, the client's model, and its roots.
#[tool(read_only)]
async fn test_input_required_result_multiple_inputs(ctx: ToolContext) -> Result<String, ToolError> {
    let (name, greeting, roots) = tokio::try_join!(
        ctx.ask_named::<Name>("user_name", "What is your name?"),
        ctx.sample_named(
            "greeting",
            Sampling::new("Generate a greeting").with_max_tokens(50)
        ),
        ctx.roots_named("client_roots"),
    )?;
    let name = match name {
        Reply::Accepted(Name { name }) => name,
        _ => "stranger".to_owned(),
    };
    Ok(format!("{} {name}; {} roots", greeting.text(), roots.len()))
}

/// Asks a form and the client's model in one round: a client that declared only sampling is
/// sent only the sampling request.
#[tool(read_only)]
async fn test_input_required_result_capabilities(ctx: ToolContext) -> Result<String, ToolError> {
    let (name, answer) = tokio::join!(
        ctx.ask_named::<Name>("user_name", "What is your name?"),
        ctx.sample_named(
            "greeting",
            Sampling::new("Generate a greeting").with_max_tokens(50)
        ),
    );
    let answer = answer?;
    let name = match name {
        Ok(Reply::Accepted(Name { name })) => name,
        _ => "someone this client cannot ask".to_owned(),
    };
    Ok(format!("{} {name}", answer.text()))
}

/// The registry, for `test_trigger_tool_change`.
static REGISTRY: OnceLock<Registry> = OnceLock::new();

/// Changes the server's tool set (adds `test_dynamic_tool`, or removes it again), so clients
/// listening for `tools/list_changed` are told.
#[tool(read_only)]
async fn test_trigger_tool_change() -> Result<String, ToolError> {
    let registry = REGISTRY
        .get()
        .ok_or_else(|| ToolError::unavailable("the server is starting"))?;
    let present = registry
        .names()
        .iter()
        .any(|name| name == "test_dynamic_tool");
    registry
        .change(|changes| {
            if present {
                changes.remove("test_dynamic_tool")
            } else {
                changes.dynamic_tool(dynamic_tool())
            }
        })
        .map_err(|e| ToolError::unavailable(e.to_string()))?;
    Ok("Mutation triggered".to_owned())
}

/// The tool `test_trigger_tool_change` adds.
fn dynamic_tool() -> DynamicTool {
    DynamicTool::builder("test_dynamic_tool")
        .description("Added by test_trigger_tool_change")
        .input_schema(json!({"type": "object", "properties": {}}))
        .handler(|_, _| async { Ok(json!("dynamic")) })
        .effect(Effect::ReadOnly)
        .build()
        .expect("a valid tool")
}

/// Says hello (answered within its request), as one text block.
#[tool(read_only)]
async fn greet(
    /// Who to greet.
    name: String,
) -> Result<Content, ToolError> {
    Ok(Content::new().text(format!("Hello, {name}!")))
}

/// Works for `seconds` seconds, then answers: a task for a client that takes tasks.
#[tool(read_only, task, timeout_ms = 600000)]
async fn slow_compute(
    /// How long the work takes, in seconds (0 for none).
    #[arg(range(min = 0, max = 600))]
    seconds: f64,
    /// A name for the run, echoed in the result.
    #[arg(default = String::new())]
    label: String,
) -> Result<String, ToolError> {
    tokio::time::sleep(Duration::from_secs_f64(seconds)).await;
    Ok(format!("computed {label} after {seconds} s"))
}

/// Fails after a second: a task that completes with a tool error. Over MCP it runs only as a
/// task: a client that does not take tasks is refused (-32021).
#[tool(read_only, task = "required", timeout_ms = 60000)]
async fn failing_job() -> Result<String, ToolError> {
    tokio::time::sleep(Duration::from_secs(1)).await;
    Err(ToolError::not_found("the job's input does not exist"))
}

/// Panics: the pipeline contains it, and its task ends `failed` with a JSON-RPC error.
#[tool(read_only, task, timeout_ms = 60000)]
async fn protocol_error_job() -> Result<String, ToolError> {
    tokio::time::sleep(Duration::from_millis(200)).await;
    panic!("the job broke");
}

// Tasks that ask their client (tasks-mrtr-input, tasks-mrtr-composition): a question asked
// once the call is a task (after its first wait) parks it `input_required` until `tasks/update`
// answers; one asked before (a client that answers input-required rounds) is answered by the
// round.

/// Whether to go ahead.
#[toolwright::data]
struct GoAhead {
    /// Yes to go ahead.
    confirm: bool,
}

/// An entry the user fills in.
#[toolwright::data]
struct EntryForm {
    /// A name for it.
    name: String,
    /// Whether it counts.
    confirm: bool,
}

/// Deletes a file once the user confirms: looks it up first (so the call is a task by then),
/// then asks mid-task.
#[tool(idempotent = true, task, timeout_ms = 60000)]
async fn confirm_delete(
    ctx: ToolContext,
    /// The file to delete.
    filename: String,
) -> Result<String, ToolError> {
    tokio::time::sleep(Duration::from_millis(50)).await;
    match ctx
        .ask_named::<GoAhead>("confirm", format!("Delete {filename}?"))
        .await?
    {
        Reply::Accepted(GoAhead { confirm: true }) => Ok(format!("deleted {filename}")),
        _ => Ok(format!("kept {filename}")),
    }
}

/// Asks two questions at once, mid-task: both wait together, answered in any order.
#[tool(read_only, task, timeout_ms = 60000)]
async fn multi_input(ctx: ToolContext) -> Result<String, ToolError> {
    tokio::time::sleep(Duration::from_millis(50)).await;
    let (first, second) = tokio::join!(
        ctx.ask_named::<EntryForm>("first", "The first entry?"),
        ctx.ask_named::<EntryForm>("second", "The second entry?"),
    );
    let named = |reply: Reply<EntryForm>| match reply {
        Reply::Accepted(EntryForm {
            name,
            confirm: true,
        }) => name,
        _ => "nothing".to_owned(),
    };
    Ok(format!("got {} and {}", named(first?), named(second?)))
}

/// Asks the user's name (as `user_name`) first, then greets them as a task: over MCP it runs
/// only as a task, the question answered by an input-required round before the task exists.
#[tool(read_only, task = "required", timeout_ms = 60000)]
async fn test_tool_with_task(ctx: ToolContext) -> Result<String, ToolError> {
    match ctx
        .ask_named::<Name>("user_name", "What is your name?")
        .await?
    {
        Reply::Accepted(Name { name }) => Ok(format!("Hello, {name}!")),
        _ => Ok("Hello, stranger!".to_owned()),
    }
}

/// The suite's resources, prompts, completion and logging level, around the tools.
struct Everything {
    tools: Tools,
}

fn base64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

fn text_argument(request: &GetPromptRequestParams, name: &str) -> Result<String, ErrorData> {
    request
        .arguments
        .as_ref()
        .and_then(|arguments| arguments.get(name))
        .and_then(|value| value.as_str())
        .map(str::to_owned)
        .ok_or_else(|| {
            ErrorData::invalid_params(format!("`{name}` must be a string argument"), None)
        })
}

impl ServerHandler for Everything {
    // The forwards to the tools, one line each.

    fn get_info(&self) -> ServerConfig {
        let mut info = self.tools.get_info();
        let capabilities = &mut info.capabilities;
        let mut resources = ResourcesCapability::default();
        // `resources/subscribe` of 2025-11-25; 2026-07-28 listens instead.
        resources.subscribe = Some(true);
        capabilities.resources = Some(resources);
        capabilities.prompts = Some(Default::default());
        capabilities.completions = Some(Default::default());
        capabilities.logging = Some(Default::default());
        info
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        self.tools.supported_protocol_versions()
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.tools.get_tool(name)
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        self.tools.accepted_subscription_filter(requested)
    }

    async fn listen(&self, subscription: SubscriptionContext) -> Result<(), ErrorData> {
        self.tools.listen(subscription).await
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        self.tools.on_initialized(context).await
    }

    async fn on_custom_request(
        &self,
        request: CustomRequest,
        context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        self.tools.on_custom_request(request, context).await
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        self.tools.list_tools(request, context).await
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.tools.call_tool(request, context).await
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        self.tools.get_task(request, context).await
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.tools.cancel_task(request, context).await
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.tools.update_task(request, context).await
    }

    // The rest as rmcp does them.

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        Ok(ListResourcesResult::with_all_items(vec![
            Resource::new("test://static-text", "static-text")
                .with_description("A static text resource for testing")
                .with_mime_type("text/plain"),
            Resource::new("test://static-binary", "static-binary")
                .with_description("A static binary resource (image) for testing")
                .with_mime_type("image/png"),
            Resource::new("test://watched-resource", "watched-resource")
                .with_description("A resource clients may subscribe to")
                .with_mime_type("text/plain"),
        ]))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        let template = ResourceTemplate::new("test://template/{id}/data", "template")
            .with_description("A resource template with parameter substitution")
            .with_mime_type("application/json");
        Ok(ListResourceTemplatesResult::with_all_items(vec![template]))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let uri = request.uri;
        let contents = match uri.as_str() {
            "test://static-text" => {
                ResourceContents::text("This is the content of the static text resource.", &uri)
            }
            "test://static-binary" => {
                ResourceContents::blob(base64(PNG), &uri).with_mime_type("image/png")
            }
            "test://watched-resource" => ResourceContents::text("Watched resource content", &uri),
            _ => {
                let id = uri
                    .strip_prefix("test://template/")
                    .and_then(|rest| rest.strip_suffix("/data"))
                    .filter(|id| !id.is_empty() && !id.contains('/'));
                let Some(id) = id else {
                    let shown: String = uri.chars().take(128).collect();
                    return Err(ErrorData::resource_not_found(
                        format!("no resource {shown}"),
                        Some(json!({ "uri": shown })),
                    ));
                };
                let data =
                    json!({"id": id, "templateTest": true, "data": format!("Data for ID: {id}")});
                ResourceContents::text(data.to_string(), &uri).with_mime_type("application/json")
            }
        };
        Ok(ReadResourceResult::new(vec![contents]).into())
    }

    #[allow(deprecated)]
    async fn subscribe(
        &self,
        _request: SubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        Ok(())
    }

    #[allow(deprecated)]
    async fn unsubscribe(
        &self,
        _request: UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        Ok(())
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        let argument = |name: &str, description: &str| {
            PromptArgument::new(name)
                .with_description(description)
                .with_required(true)
        };
        Ok(ListPromptsResult::with_all_items(vec![
            Prompt::new(
                "test_simple_prompt",
                Some("A simple prompt without arguments"),
                None,
            ),
            Prompt::new(
                "test_prompt_with_arguments",
                Some("A prompt with required arguments"),
                Some(vec![
                    argument("arg1", "First test argument"),
                    argument("arg2", "Second test argument"),
                ]),
            ),
            Prompt::new(
                "test_prompt_with_embedded_resource",
                Some("A prompt that includes an embedded resource"),
                Some(vec![argument(
                    "resourceUri",
                    "URI of the resource to embed",
                )]),
            ),
            Prompt::new(
                "test_prompt_with_image",
                Some("A prompt that includes image content"),
                None,
            ),
            Prompt::new(
                "test_input_required_result_prompt",
                Some("A prompt that asks its user for context first (2026-07-28)"),
                None,
            ),
        ]))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let messages = match request.name.as_str() {
            "test_simple_prompt" => vec![PromptMessage::new_text(
                Role::User,
                "This is a simple prompt for testing.",
            )],
            "test_prompt_with_arguments" => {
                let (arg1, arg2) = (
                    text_argument(&request, "arg1")?,
                    text_argument(&request, "arg2")?,
                );
                vec![PromptMessage::new_text(
                    Role::User,
                    format!("Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"),
                )]
            }
            "test_prompt_with_embedded_resource" => {
                let uri = text_argument(&request, "resourceUri")?;
                vec![
                    PromptMessage::new(
                        Role::User,
                        ContentBlock::resource(ResourceContents::text(
                            "Embedded resource content for testing.",
                            uri,
                        )),
                    ),
                    PromptMessage::new_text(
                        Role::User,
                        "Please process the embedded resource above.",
                    ),
                ]
            }
            // Asks its user first (2026-07-28): an input-required result built with rmcp,
            // answered under `user_context` when the client sends the request again.
            "test_input_required_result_prompt" => {
                let answered = request
                    .input_responses
                    .as_ref()
                    .and_then(|responses| responses.get("user_context"))
                    .and_then(|answer| answer["content"]["context"].as_str());
                let Some(context) = answered else {
                    let question = ElicitRequest::new(ElicitRequestParams::FormElicitationParams {
                        meta: None,
                        message: "What context should the prompt use?".to_owned(),
                        requested_schema: toolwright::serde_json::from_value(json!({
                            "type": "object",
                            "properties": {"context": {"type": "string"}},
                            "required": ["context"]
                        }))
                        .map_err(|e| ErrorData::internal_error(e.to_string(), None))?,
                    });
                    let mut requests = InputRequests::new();
                    requests.insert(
                        "user_context".to_owned(),
                        InputRequest::Elicitation(question),
                    );
                    return Ok(GetPromptResponse::InputRequired(
                        InputRequiredResult::from_input_requests(requests),
                    ));
                };
                vec![PromptMessage::new_text(
                    Role::User,
                    format!("Prompt with context: {context}"),
                )]
            }
            "test_prompt_with_image" => vec![
                PromptMessage::new(Role::User, ContentBlock::image(base64(PNG), "image/png")),
                PromptMessage::new_text(Role::User, "Please analyze the image above."),
            ],
            other => {
                let shown: String = other.chars().take(64).collect();
                return Err(ErrorData::invalid_params(
                    format!("unknown prompt '{shown}'"),
                    None,
                ));
            }
        };
        Ok(GetPromptResult::new(messages).into())
    }

    async fn complete(
        &self,
        _request: CompleteRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        Ok(CompleteResult::default())
    }

    // Logging is deprecated by 2026-07-28; the 2025-11-25 scenarios still set a level.
    #[allow(deprecated)]
    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.tools.set_level(request, context).await
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:3001".to_owned());
    let registry = Registry::builder()
        .tool(TestSimpleText)
        .tool(TestImageContent)
        .tool(TestAudioContent)
        .tool(TestEmbeddedResource)
        .tool(TestMultipleContentTypes)
        .tool(TestErrorHandling)
        .tool(TestToolWithProgress)
        .tool(TestTriggerToolChange)
        .tool(TestStreamingElicitation)
        .tool(TestLoggingTool)
        .tool(TestToolWithLogging)
        .tool(TestSampling)
        .tool(TestMissingCapability)
        .tool(TestInputRequiredResultSampling)
        .tool(TestInputRequiredResultListRoots)
        .tool(TestInputRequiredResultRequestState)
        .tool(TestInputRequiredResultMultipleInputs)
        .tool(TestInputRequiredResultCapabilities)
        .tool(TestElicitation)
        .tool(TestElicitationSep1034Defaults)
        .tool(TestElicitationSep1330Enums)
        .tool(TestInputRequiredResultElicitation)
        .tool(TestInputRequiredResultMultiRound)
        .tool(TestInputRequiredResultTamperedState)
        .tool(Greet)
        .tool(SlowCompute)
        .tool(FailingJob)
        .tool(ProtocolErrorJob)
        .tool(ConfirmDelete)
        .tool(MultiInput)
        .tool(TestToolWithTask)
        .dynamic_tool(json_schema_tool())
        .dynamic_tool(custom_headers_tool())
        .build()?;
    let _ = REGISTRY.set(registry.clone());
    let server = McpServer::new(registry)
        .name("toolwright-conformance", env!("CARGO_PKG_VERSION"))
        .with_handler(|tools| Everything { tools })
        .bind_http(addr.as_str())
        .await?;
    println!("listening on http://{}/mcp", server.local_addr());
    server.wait().await?;
    Ok(())
}
