//! Tools beside your own resources, prompts and completions: an rmcp `ServerHandler` you write
//! (`Notebook`) keeps the registry's tools inside it as a `toolwright_mcp::Tools`, and
//! `McpServer::with_handler` serves it with every protection of `McpServer` (one toolwright
//! session per MCP session, approval by elicitation, progress, cancellation, list-changed
//! notifications; over HTTP the authorizer, sessions bound to their principal, the caps).
//!
//! ```text
//! cargo run -p toolwright-mcp --example composed_server                          # stdio
//! cargo run -p toolwright-mcp --example composed_server -- --http 127.0.0.1:8080 # HTTP
//! ```
//!
//! It serves a tool (`get_note`), a resource per note and `notes://me` (who is asking, from the
//! session's toolwright `Session`), a prompt (`summarize_note`) and completion of that prompt's
//! `id` argument. `tool-mcp/tests/it/composed.rs` drives it with rmcp's client.

use std::borrow::Cow;

use toolwright::prelude::*;
use toolwright::Registry;
use toolwright_mcp::rmcp::model::{
    CallToolRequestParams, CallToolResponse, CompleteRequestParams, CompleteResult, CompletionInfo,
    CustomRequest, CustomResult, GetPromptRequestParams, GetPromptResponse, GetPromptResult,
    ListPromptsResult, ListResourcesResult, ListToolsResult, PaginatedRequestParams, Prompt,
    PromptArgument, PromptMessage, ProtocolVersion, ReadResourceRequestParams,
    ReadResourceResponse, ReadResourceResult, Resource, ResourceContents, Role, ServerConfig,
    SubscriptionFilter, Tool,
};
use toolwright_mcp::rmcp::service::{NotificationContext, RequestContext, SubscriptionContext};
use toolwright_mcp::rmcp::{ErrorData, RoleServer, ServerHandler};
use toolwright_mcp::{McpServer, Tools};

/// The notes, by id.
const NOTES: &[(&str, &str)] = &[
    ("n1", "Ship the composed server before Friday."),
    (
        "n2",
        "Progress is coalesced at 50 ms; zero sends every report.",
    ),
    ("n3", "A session belongs to the principal that opened it."),
];

fn note(id: &str) -> Option<&'static str> {
    NOTES.iter().find(|(n, _)| *n == id).map(|(_, text)| *text)
}

/// Fetch one note's text by its id.
#[tool(timeout_ms = 1000, read_only)]
async fn get_note(
    /// The note's id, like `n1`.
    #[arg(pattern = "^n[0-9]{1,4}$")]
    id: String,
) -> Result<String, ToolError> {
    note(&id).map(str::to_owned).ok_or_else(|| {
        ToolError::not_found(format!("there is no note `{id}`; the notes are n1, n2, n3"))
    })
}

/// The registry of the example's tools.
pub fn registry() -> Registry {
    Registry::builder()
        .tool(GetNote)
        .build()
        .expect("the example's registry builds")
}

/// The notebook around each session's tools of `registry`, not yet bound.
pub fn server(registry: Registry) -> McpServer<impl Fn(Tools) -> Notebook + Send + Sync + 'static> {
    McpServer::new(registry)
        .name("notebook", "0.1.0")
        .instructions("Read notes with `get_note` or as `notes://` resources.")
        .with_handler(|tools| Notebook { tools })
}

/// One MCP session of the notebook: the registry's tools, and notes as resources and prompts.
pub struct Notebook {
    tools: Tools,
}

impl ServerHandler for Notebook {
    // The nine forwards to the tools, one line each.

    fn get_info(&self) -> ServerConfig {
        let mut info = self.tools.get_info();
        info.capabilities.resources = Some(Default::default());
        info.capabilities.prompts = Some(Default::default());
        info.capabilities.completions = Some(Default::default());
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

    // The notebook's own, as rmcp does them.

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let mut resources: Vec<Resource> = NOTES
            .iter()
            .map(|(id, _)| Resource::new(format!("notes://{id}"), *id).with_mime_type("text/plain"))
            .collect();
        resources.push(
            Resource::new("notes://me", "me")
                .with_description("Who this session belongs to")
                .with_mime_type("text/plain"),
        );
        Ok(ListResourcesResult::with_all_items(resources))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let uri = request.uri;
        let text = match uri.strip_prefix("notes://") {
            // The session the tools run in: its principal over HTTP with `authorize`.
            Some("me") => {
                let session = self.tools.session(&context)?;
                format!("principal: {}", session.principal().unwrap_or("anonymous"))
            }
            Some(id) => match note(id) {
                Some(text) => text.to_owned(),
                None => return Err(not_found(&uri)),
            },
            None => return Err(not_found(&uri)),
        };
        Ok(ReadResourceResult::new(vec![ResourceContents::text(text, uri)]).into())
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        let id = PromptArgument::new("id")
            .with_description("The note to summarize, like `n1`")
            .with_required(true);
        Ok(ListPromptsResult::with_all_items(vec![Prompt::new(
            "summarize_note",
            Some("Summarize one note in a sentence"),
            Some(vec![id]),
        )]))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        if request.name != "summarize_note" {
            let shown: String = request.name.chars().take(64).collect();
            return Err(ErrorData::invalid_params(
                format!("unknown prompt '{shown}'; the prompts are: summarize_note"),
                None,
            ));
        }
        let id = request
            .arguments
            .as_ref()
            .and_then(|arguments| arguments.get("id"))
            .and_then(|id| id.as_str())
            .ok_or_else(|| {
                ErrorData::invalid_params("`id` of summarize_note must be a note id string", None)
            })?;
        let text = note(id).ok_or_else(|| {
            let shown: String = id.chars().take(64).collect();
            ErrorData::invalid_params(format!("there is no note `{shown}`"), None)
        })?;
        let message = PromptMessage::new_text(
            Role::User,
            format!("Summarize this note in one sentence:\n\n{text}"),
        );
        Ok(GetPromptResult::new(vec![message]).into())
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        let values = if request.r#ref.as_prompt_name() == Some("summarize_note")
            && request.argument.name == "id"
        {
            NOTES
                .iter()
                .map(|(id, _)| (*id).to_owned())
                .filter(|id| id.starts_with(&request.argument.value))
                .collect()
        } else {
            Vec::new()
        };
        let completion = CompletionInfo::with_all_values(values)
            .map_err(|e| ErrorData::internal_error(e, None))?;
        Ok(CompleteResult::new(completion))
    }
}

fn not_found(uri: &str) -> ErrorData {
    let shown: String = uri.chars().take(128).collect();
    ErrorData::resource_not_found(format!("no resource `{shown}`"), None)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    match args.iter().position(|a| a == "--http") {
        Some(i) => {
            let addr = args.get(i + 1).map_or("127.0.0.1:8080", String::as_str);
            eprintln!("notebook: http://{addr}/mcp");
            server(registry()).serve_http(addr).await?;
        }
        None => server(registry()).serve_stdio().await?,
    }
    Ok(())
}
