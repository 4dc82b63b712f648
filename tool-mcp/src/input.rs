//! Approval for MCP 2026-07-28 clients, as an input-required result: that revision has no
//! server-initiated requests, so a `#[tool(requires_approval)]` call is answered with an
//! `InputRequiredResult` carrying the question (a form elicitation) and a sealed
//! `requestState`, and the client sends the same `tools/call` again with the user's answer.
//!
//! The state is sealed with HMAC-SHA256 (rmcp's `RequestStateCodec`), bound to the call's
//! principal, tool and argument fingerprint, and expires after the approval timeout: a client
//! cannot forge it, replay it for other arguments or as another principal, or keep it past its
//! time. Each accepted state approves one call: its nonce is redeemed once.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rmcp::model::{
    ElicitRequest, ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationSchema,
    InputRequest, InputRequests, InputResponses, RequestStateCodec, RequestStateError, SealOptions,
};
use tokio::time::Instant;
use toolwright_core::guard::approval::{Approval, ApprovalRequest, Approver};

/// The key of the approval question in `inputRequests` and `inputResponses`.
pub(crate) const APPROVAL_INPUT: &str = "toolwright_approval";

/// The most approvals redeemed and not yet expired that a server remembers; past it a new
/// approval is refused (retry later) rather than remembered less.
pub(crate) const MAX_REDEEMED: usize = 65_536;

/// What every request of one server shares: the sealing key and the redeemed nonces.
pub(crate) struct Sealing {
    codec: RequestStateCodec,
    redeemed: Mutex<HashMap<String, Instant>>,
}

impl Sealing {
    /// `key` of at least 32 bytes; `None` draws a random one for this process.
    pub(crate) fn new(key: Option<&[u8]>) -> Result<Self, RequestStateError> {
        let codec = match key {
            Some(key) => RequestStateCodec::try_new(key.to_vec())?,
            None => {
                let mut key = Vec::with_capacity(32);
                key.extend_from_slice(uuid::Uuid::new_v4().as_bytes());
                key.extend_from_slice(uuid::Uuid::new_v4().as_bytes());
                RequestStateCodec::try_new(key)?
            }
        };
        Ok(Sealing {
            codec,
            redeemed: Mutex::new(HashMap::new()),
        })
    }

    /// Marks `nonce` redeemed until `expires`; false if it already was, or if the table is
    /// full of unexpired ones.
    fn redeem(&self, nonce: &str, expires: Instant) -> Result<(), &'static str> {
        let now = Instant::now();
        let mut redeemed = self.redeemed.lock().unwrap_or_else(PoisonError::into_inner);
        if redeemed.contains_key(nonce) {
            return Err(
                "this approval was already used for a call; call the tool again to ask again",
            );
        }
        if redeemed.len() >= MAX_REDEEMED {
            redeemed.retain(|_, until| *until > now);
            if redeemed.len() >= MAX_REDEEMED {
                return Err("this server holds too many recent approvals; retry later");
            }
        }
        redeemed.insert(nonce.to_owned(), expires);
        Ok(())
    }
}

/// The sealed state's payload.
#[derive(serde::Serialize, serde::Deserialize)]
struct State {
    /// Redeemed once.
    nonce: String,
}

/// The approver of one 2026-07-28 `tools/call`: the user's answer if this request carries one
/// for a state this server sealed for this very call, else the question to ask.
pub(crate) struct InputApprover {
    sealing: Arc<Sealing>,
    timeout: Duration,
    request_state: Option<String>,
    responses: Option<InputResponses>,
    /// The question this call must ask, when the review asked one.
    asked: Mutex<Option<(InputRequests, String)>>,
}

impl InputApprover {
    pub(crate) fn new(
        sealing: Arc<Sealing>,
        timeout: Duration,
        request_state: Option<String>,
        responses: Option<InputResponses>,
    ) -> Self {
        InputApprover {
            sealing,
            timeout,
            request_state,
            responses,
            asked: Mutex::new(None),
        }
    }

    /// The input requests and sealed state to answer with, when the review asked.
    pub(crate) fn asked(&self) -> Option<(InputRequests, String)> {
        self.asked
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
    }

    fn decide(&self, request: &ApprovalRequest<'_>) -> Approval {
        let bound = binding(request);
        let Some(sealed) = &self.request_state else {
            return self.ask(request, &bound);
        };
        let state = match self.sealing.codec.open_with(sealed, bound.as_bytes()) {
            Ok(payload) => serde_json::from_slice::<State>(&payload).ok(),
            Err(RequestStateError::Expired) => {
                // Ask again: the person may still be there.
                return self.ask(request, &bound);
            }
            Err(_) => None,
        };
        let Some(state) = state else {
            return Approval::Denied {
                reason: "the approval state sent back was not sealed by this server for this call \
                         (altered, or for another tool, other arguments or another principal); \
                         call the tool again to ask again"
                    .to_owned(),
            };
        };
        let answer = self
            .responses
            .as_ref()
            .and_then(|responses| responses.get(APPROVAL_INPUT));
        let Some(answer) = answer else {
            return self.ask(request, &bound);
        };
        let Ok(answer) = serde_json::from_value::<ElicitResult>(answer.clone()) else {
            return Approval::Denied {
                reason: format!(
                    "`inputResponses.{APPROVAL_INPUT}` must be an elicitation result \
                     (`{{\"action\": \"accept\"}}`), got {}",
                    shown(answer)
                ),
            };
        };
        match answer.action {
            ElicitationAction::Accept => {
                match self
                    .sealing
                    .redeem(&state.nonce, Instant::now() + self.timeout)
                {
                    Ok(()) => Approval::Approved,
                    Err(reason) => Approval::Denied {
                        reason: reason.to_owned(),
                    },
                }
            }
            ElicitationAction::Decline => Approval::Denied {
                reason: "the user declined this call".to_owned(),
            },
            _ => Approval::Denied {
                reason: "the user dismissed the approval request".to_owned(),
            },
        }
    }

    /// Records the question for this call and leaves it undecided.
    fn ask(&self, request: &ApprovalRequest<'_>, bound: &str) -> Approval {
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
        let question = ElicitRequest::new(ElicitRequestParams::FormElicitationParams {
            meta: None,
            message,
            requested_schema,
        });
        let state = State {
            nonce: uuid::Uuid::new_v4().to_string(),
        };
        let payload = serde_json::to_vec(&state).unwrap_or_default();
        let sealed = self.sealing.codec.seal_with(
            &payload,
            &SealOptions::new()
                .associated_data(bound.as_bytes())
                .ttl(self.timeout),
        );
        let mut requests = InputRequests::new();
        requests.insert(
            APPROVAL_INPUT.to_owned(),
            InputRequest::Elicitation(question),
        );
        *self.asked.lock().unwrap_or_else(PoisonError::into_inner) = Some((requests, sealed));
        Approval::Pending {
            ticket: "input-required".to_owned(),
        }
    }
}

impl Approver for InputApprover {
    fn review<'a>(
        &'a self,
        request: &'a ApprovalRequest<'a>,
    ) -> Pin<Box<dyn Future<Output = Approval> + Send + 'a>> {
        Box::pin(std::future::ready(self.decide(request)))
    }
}

/// What a sealed state is bound to: the principal, the tool and its arguments.
fn binding(request: &ApprovalRequest<'_>) -> String {
    let principal = request.principal().unwrap_or("");
    format!(
        "toolwright-approval\0{}:{principal}\0{}\0{}",
        principal.len(),
        request.tool(),
        request.fingerprint()
    )
}

fn shown(value: &serde_json::Value) -> String {
    let text = value.to_string();
    if text.len() > 60 {
        format!("{}...", text.chars().take(60).collect::<String>())
    } else {
        text
    }
}
