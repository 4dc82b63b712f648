//! A tool's questions to its user ([`ToolContext::ask`]) over MCP with the official Rust SDK's
//! client (rmcp), at each revision: a 2025-11-25 session gets the form at once as
//! `elicitation/create`; a 2026-07-28 client gets it as an input-required result, which rmcp's
//! client fulfils through the same handler and sends again.

use std::sync::{Arc, Mutex};

use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult,
    ElicitationAction, Implementation, ProtocolVersion,
};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, RequestContext, RunningService};
use rmcp::{ClientHandler, ErrorData, RoleClient, ServiceExt};
use serde_json::json;
use toolwright::ask::Reply;
use toolwright::prelude::*;
use toolwright_mcp::McpServer;

/// Where an order goes.
#[toolwright::data(input)]
struct Destination {
    /// The city.
    city: String,
}

/// Ship an order where the user says.
#[tool(read_only)]
async fn ship_order(ctx: ToolContext, order: String) -> Result<String, ToolError> {
    match ctx
        .ask::<Destination>(format!("Where should {order} go?"))
        .await?
    {
        Reply::Accepted(to) => Ok(format!("{order} to {}", to.city)),
        Reply::Declined | Reply::Dismissed => Ok(format!("{order} stays")),
    }
}

/// Find an order: its id is grounded.
#[tool(read_only, grounds(order = "id"))]
async fn find_order(customer: String) -> Result<serde_json::Value, ToolError> {
    Ok(json!({"id": format!("ORD-{}", customer.len())}))
}

/// Use an order id found in this conversation.
#[tool(read_only)]
async fn open_order(#[arg(grounded = "order")] order_id: String) -> Result<String, ToolError> {
    Ok(order_id)
}

/// Answers every form with a city, and remembers what it was asked.
#[derive(Clone)]
struct User {
    version: ProtocolVersion,
    asked: Arc<Mutex<Vec<String>>>,
}

impl ClientHandler for User {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::builder().enable_elicitation().build(),
            Implementation::new("toolwright-ask", "0"),
        )
        .with_protocol_version(self.version.clone())
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        if let ElicitRequestParams::FormElicitationParams { message, .. } = request {
            self.asked.lock().expect("not poisoned").push(message);
        }
        Ok(ElicitResult::new(ElicitationAction::Accept)
            .with_content(json!({"city": "Springfield"})))
    }
}

async fn connect(version: ProtocolVersion) -> (RunningService<RoleClient, User>, User) {
    let registry = Registry::builder()
        .tool(ShipOrder)
        .tool(FindOrder)
        .tool(OpenOrder)
        .build()
        .expect("the registry builds");
    let (server_io, client_io) = tokio::io::duplex(1 << 20);
    let (read, write) = tokio::io::split(server_io);
    tokio::spawn(async move {
        let _ = McpServer::new(registry).serve((read, write)).await;
    });
    let user = User {
        version: version.clone(),
        asked: Arc::default(),
    };
    let (read, write) = tokio::io::split(client_io);
    let client = if version >= ProtocolVersion::V_2026_07_28 {
        // 2026-07-28 has no `initialize`: `server/discover`, then self-contained requests.
        let lifecycle = ClientLifecycleMode::Discover {
            preferred_versions: vec![version],
        };
        user.clone()
            .serve_with_lifecycle((read, write), lifecycle)
            .await
            .expect("connects")
    } else {
        user.clone().serve((read, write)).await.expect("connects")
    };
    (client, user)
}

#[tokio::test]
async fn a_tool_asks_its_user_at_each_revision() {
    for version in [ProtocolVersion::V_2025_11_25, ProtocolVersion::V_2026_07_28] {
        let (client, user) = connect(version.clone()).await;
        let mut params = CallToolRequestParams::new("ship_order");
        params = params.with_arguments(
            json!({"order": "A1"})
                .as_object()
                .cloned()
                .unwrap_or_default(),
        );
        let result = client.call_tool(params).await.expect("answered");
        let envelope = result.structured_content.clone().unwrap_or_default();
        assert_eq!(
            envelope["data"], "A1 to Springfield",
            "{version}: {envelope}"
        );
        let asked = user.asked.lock().expect("not poisoned").clone();
        assert_eq!(
            asked,
            vec!["Where should A1 go?".to_owned()],
            "{version}: asked once"
        );
        let negotiated = client.peer_info().map(|info| info.protocol_version.clone());
        assert_eq!(negotiated.as_ref(), Some(&version), "the revision spoken");
        client.cancel().await.expect("closes");
    }
}

fn call(name: &str, arguments: serde_json::Value) -> CallToolRequestParams {
    CallToolRequestParams::new(name.to_owned())
        .with_arguments(arguments.as_object().cloned().unwrap_or_default())
}

#[tokio::test]
async fn over_one_connection_each_2026_request_without_a_key_is_its_own_conversation() {
    for version in [ProtocolVersion::V_2025_11_25, ProtocolVersion::V_2026_07_28] {
        let (client, _) = connect(version.clone()).await;
        let found = client
            .call_tool(call("find_order", json!({"customer": "ada"})))
            .await
            .expect("answered");
        let id = found.structured_content.clone().unwrap_or_default()["data"]["id"].clone();
        let opened = client
            .call_tool(call("open_order", json!({"order_id": id})))
            .await
            .expect("answered");
        let envelope = opened.structured_content.clone().unwrap_or_default();
        if version >= ProtocolVersion::V_2026_07_28 {
            assert_eq!(
                envelope["error_type"], "ungrounded_identifier",
                "{version}: {envelope}"
            );
        } else {
            // A 2025-11-25 connection is one session, and so one conversation.
            assert_eq!(envelope["status"], "success", "{version}: {envelope}");
        }
        client.cancel().await.expect("closes");
    }
}
