//! Approval by elicitation: a `#[tool(requires_approval)]` call asks the person at the client,
//! through `elicitation/create`, before it runs.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{ElicitRequestParams, ElicitationAction, ElicitationSchema, ProtocolVersion};
use rmcp::service::ElicitationMode;
use rmcp::{Peer, RoleServer};
use toolwright_core::approval::{Approval, ApprovalRequest, Approver};

/// The approver every MCP session gets: it shows the tool and its redacted arguments to the
/// user (MCP's form elicitation with an empty form: accept approves, decline or cancel denies)
/// and waits at most `timeout`. A client that cannot elicit, or speaks 2026-07-28 (which has no
/// server-initiated requests), gets the application's fallback approver, or a refusal.
pub(crate) struct ElicitingApprover {
    peer: Peer<RoleServer>,
    fallback: Option<Arc<dyn Approver>>,
    timeout: Duration,
}

impl ElicitingApprover {
    pub(crate) fn new(
        peer: Peer<RoleServer>,
        fallback: Option<Arc<dyn Approver>>,
        timeout: Duration,
    ) -> Self {
        ElicitingApprover {
            peer,
            fallback,
            timeout,
        }
    }

    async fn decide(&self, request: &ApprovalRequest<'_>) -> Approval {
        // 2026-07-28 has no server-initiated requests: a client of it that can answer a form
        // is asked by an input-required result (`InputApprover`), never reaching here.
        let stateless = self
            .peer
            .peer_info()
            .is_some_and(|info| info.protocol_version >= ProtocolVersion::V_2026_07_28);
        if stateless
            || !self
                .peer
                .supported_elicitation_modes()
                .contains(&ElicitationMode::Form)
        {
            let why = if stateless {
                "this client speaks MCP 2026-07-28 and declared no elicitation capability, so \
                 it cannot be asked"
            } else {
                "this client cannot ask one (it does not support elicitation)"
            };
            return match &self.fallback {
                Some(fallback) => fallback.review(request).await,
                None => Approval::Denied {
                    reason: format!("this tool needs a person's approval, and {why}"),
                },
            };
        }
        // An empty form: the question is the message, the answer is the action.
        let requested_schema: ElicitationSchema =
            match serde_json::from_value(serde_json::json!({"type": "object", "properties": {}})) {
                Ok(schema) => schema,
                Err(e) => {
                    return Approval::Denied {
                        reason: format!("could not ask for approval: {e}"),
                    }
                }
            };
        let message = format!(
            "Allow the tool '{}' to run with these arguments?\n{}",
            request.tool(),
            request.redacted_arguments()
        );
        let asked = self
            .peer
            .create_elicitation_with_timeout(
                ElicitRequestParams::FormElicitationParams {
                    meta: None,
                    message,
                    requested_schema,
                },
                Some(self.timeout),
            )
            .await;
        match asked {
            Ok(answer) => match answer.action {
                ElicitationAction::Accept => Approval::Approved,
                ElicitationAction::Decline => Approval::Denied {
                    reason: "the user declined this call".to_owned(),
                },
                _ => Approval::Denied {
                    reason: "the user dismissed the approval request".to_owned(),
                },
            },
            Err(e) => Approval::Denied {
                reason: format!("no approval from the user: {e}"),
            },
        }
    }
}

impl Approver for ElicitingApprover {
    fn review<'a>(
        &'a self,
        request: &'a ApprovalRequest<'a>,
    ) -> Pin<Box<dyn Future<Output = Approval> + Send + 'a>> {
        Box::pin(self.decide(request))
    }
}
