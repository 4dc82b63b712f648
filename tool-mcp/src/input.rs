//! Questions to the user for MCP 2026-07-28 clients, as input-required results: that revision
//! has no server-initiated requests, so a `#[tool(requires_approval)]` call, or a tool that asks
//! ([`ToolContext::ask`](toolwright_core::ToolContext::ask)), is answered with an
//! `InputRequiredResult` carrying the question (a form elicitation) and a sealed
//! `requestState`; the client sends the same `tools/call` again with the user's answer, and the
//! call runs again from its start with every answer so far.
//!
//! The state is sealed with HMAC-SHA256 (rmcp's `RequestStateCodec`), bound to the call's
//! principal, tool and argument fingerprint, and expires after the approval timeout: a client
//! cannot forge it, replay it for other arguments or as another principal, or keep it past its
//! time. Each approved state approves one call: its nonce is marked used when the call runs, in
//! the store every replica shares when the server has one (`McpServer::request_state_store`),
//! so the same approved request sent to two replicas runs on one. A call that stops for another
//! question sends its approval on in the new state, under a fresh nonce. For 2025-11-25
//! sessions, [`ElicitingAsker`] sends the question at once.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rmcp::model::{
    ElicitRequest, ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationSchema,
    InputRequest, InputRequests, InputResponses, ProtocolVersion, RequestStateCodec,
    RequestStateError, SealOptions,
};
use rmcp::service::ElicitationMode;
use rmcp::{Peer, RoleServer};
use serde_json::Value;
use toolwright_core::approval::{Approval, ApprovalRequest, Approver};
use toolwright_core::ask::{Answer, Asker, Question};
use toolwright_core::conversation::{ConversationStore, MemoryConversationStore, Redeemed};

/// The key of the approval question in `inputRequests` and `inputResponses`.
pub(crate) const APPROVAL_INPUT: &str = "toolwright_approval";

/// The most approvals one principal has used within the approval timeout: 4,096. Past it that
/// principal's next approval is refused (retry later), and no other principal's is.
pub(crate) const MAX_REDEEMED_PER_PRINCIPAL: usize = 4_096;

/// What every request of one server shares: the sealing key, and where used approvals are
/// recorded (the store every replica shares, or this process's own).
pub(crate) struct Sealing {
    codec: RequestStateCodec,
    used: Arc<dyn ConversationStore>,
}

impl Sealing {
    /// `key` of at least 32 bytes; `None` draws a random one for this process. `used`: the
    /// store replicas share; `None` keeps used approvals in this process.
    pub(crate) fn new(
        key: Option<&[u8]>,
        used: Option<Arc<dyn ConversationStore>>,
    ) -> Result<Self, RequestStateError> {
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
            used: used.unwrap_or_else(|| Arc::new(MemoryConversationStore::new())),
        })
    }

    /// Marks `principal`'s approval `nonce` used for `ttl`, in one atomic step of the store:
    /// refused if it already was, or if the principal has used its share.
    async fn redeem(
        &self,
        principal: Option<&str>,
        nonce: &str,
        ttl: Duration,
    ) -> Result<(), String> {
        let redeemed = self
            .used
            .redeem(
                principal,
                &format!("mcp-approval:{nonce}"),
                ttl,
                MAX_REDEEMED_PER_PRINCIPAL,
            )
            .await;
        match redeemed {
            Ok(Redeemed::Now) => Ok(()),
            Ok(Redeemed::AlreadyUsed) => Err(
                "this approval was already used for a call; call the tool again to ask again"
                    .to_owned(),
            ),
            Ok(_) => Err(format!(
                "this caller holds too many recent approvals (at most \
                 {MAX_REDEEMED_PER_PRINCIPAL} within the approval timeout); retry later"
            )),
            Err(e) => Err(format!(
                "this approval's use could not be recorded ({e}); retry later"
            )),
        }
    }
}

/// The sealed state's payload: what earlier rounds of one call settled.
#[derive(Clone, serde::Serialize, serde::Deserialize)]
struct State {
    /// The approval's, redeemed once.
    nonce: String,
    /// Whether the user approved the call in an earlier round.
    approved: bool,
    /// The answers to the tool's questions so far (elicitation results), in order.
    answers: Vec<Value>,
}

impl State {
    fn fresh() -> Self {
        State {
            nonce: uuid::Uuid::new_v4().to_string(),
            approved: false,
            answers: Vec::new(),
        }
    }
}

/// The state the request sent back.
enum Sent {
    /// None, or one past its time: start over.
    Nothing,
    Sealed,
    /// Not sealed by this server for this call.
    Forged,
}

/// This request's round.
struct Round {
    state: State,
    /// The question this round ends with, under its key.
    asked: Option<(String, InputRequest)>,
    /// Whether this round redeemed the approval's nonce.
    redeemed: bool,
}

/// The approver and asker of one 2026-07-28 `tools/call`: answers this request brings for a
/// state this server sealed for this very call, else the question to ask.
pub(crate) struct Input {
    sealing: Arc<Sealing>,
    timeout: Duration,
    principal: Option<String>,
    binding: String,
    sent: Sent,
    responses: InputResponses,
    round: Mutex<Round>,
}

pub(crate) const FORGED: &str =
    "the state sent back was not sealed by this server for this call (altered, \
                      or for another tool, other arguments or another principal); call the tool \
                      again to ask again";

impl Input {
    /// The round of a call of `tool` with `arguments` by `principal`, from the request's
    /// `requestState` and `inputResponses`.
    pub(crate) fn new(
        sealing: Arc<Sealing>,
        timeout: Duration,
        (principal, tool, arguments): (Option<&str>, &str, &str),
        request_state: Option<&str>,
        responses: Option<InputResponses>,
    ) -> Self {
        let owner = principal.map(str::to_owned);
        let principal = principal.unwrap_or("");
        let binding = format!(
            "toolwright-input\0{}:{principal}\0{tool}\0{}",
            principal.len(),
            toolwright_core::idempotency::Fingerprint::of(tool, arguments)
        );
        let (sent, state) = match request_state {
            None => (Sent::Nothing, State::fresh()),
            Some(sealed) => match sealing.codec.open_with(sealed, binding.as_bytes()) {
                Ok(payload) => match serde_json::from_slice::<State>(&payload) {
                    Ok(state) => (Sent::Sealed, state),
                    Err(_) => (Sent::Forged, State::fresh()),
                },
                Err(RequestStateError::Expired) => (Sent::Nothing, State::fresh()),
                Err(_) => (Sent::Forged, State::fresh()),
            },
        };
        Input {
            sealing,
            timeout,
            principal: owner,
            binding,
            sent,
            responses: responses.unwrap_or_default(),
            round: Mutex::new(Round {
                state,
                asked: None,
                redeemed: false,
            }),
        }
    }

    /// Whether the request sent back a state this server did not seal for this call.
    pub(crate) fn forged(&self) -> bool {
        matches!(self.sent, Sent::Forged)
    }

    /// The input requests and sealed state this call answers with, when it stopped for a
    /// question.
    pub(crate) fn asked(&self) -> Option<(InputRequests, String)> {
        let mut round = self.round.lock().unwrap_or_else(PoisonError::into_inner);
        let (key, request) = round.asked.take()?;
        if round.redeemed {
            // The call did not run to its end: the approval carries on in the state sent back,
            // under a nonce of its own (the one used stays used, so this request sent again
            // approves nothing, on any replica).
            round.state.nonce = uuid::Uuid::new_v4().to_string();
            round.redeemed = false;
        }
        let payload = serde_json::to_vec(&round.state).unwrap_or_default();
        let sealed = self.sealing.codec.seal_with(
            &payload,
            &SealOptions::new()
                .associated_data(self.binding.as_bytes())
                .ttl(self.timeout),
        );
        let mut requests = InputRequests::new();
        requests.insert(key, request);
        Some((requests, sealed))
    }

    /// The user's answer under `key`, sent with this request after a sealed state.
    fn response(&self, key: &str) -> Option<Result<ElicitResult, String>> {
        if !matches!(self.sent, Sent::Sealed) {
            return None;
        }
        let answer = self.responses.get(key)?;
        Some(
            serde_json::from_value::<ElicitResult>(answer.clone()).map_err(|_| {
                format!(
                    "`inputResponses.{key}` must be an elicitation result \
                     (`{{\"action\": \"accept\", \"content\": {{..}}}}`), got {}",
                    shown(answer)
                )
            }),
        )
    }

    async fn review_now(&self, request: &ApprovalRequest<'_>) -> Approval {
        if matches!(self.sent, Sent::Forged) {
            return Approval::Denied {
                reason: FORGED.to_owned(),
            };
        }
        let nonce = {
            let mut round = self.round.lock().unwrap_or_else(PoisonError::into_inner);
            let approved = round.state.approved
                || match self.response(APPROVAL_INPUT) {
                    None => false,
                    Some(Err(reason)) => return Approval::Denied { reason },
                    Some(Ok(answer)) => match answer.action {
                        ElicitationAction::Accept => true,
                        ElicitationAction::Decline => {
                            return Approval::Denied {
                                reason: "the user declined this call".to_owned(),
                            }
                        }
                        _ => {
                            return Approval::Denied {
                                reason: "the user dismissed the approval request".to_owned(),
                            }
                        }
                    },
                };
            if !approved {
                let message = format!(
                    "Allow the tool '{}' to run with these arguments?\n{}",
                    request.tool(),
                    request.redacted_arguments()
                );
                return match form(
                    message,
                    &serde_json::json!({"type": "object", "properties": {}}),
                ) {
                    Ok(question) => {
                        round.asked = Some((APPROVAL_INPUT.to_owned(), question));
                        Approval::Pending {
                            ticket: "input-required".to_owned(),
                        }
                    }
                    Err(reason) => Approval::Denied { reason },
                };
            }
            round.state.nonce.clone()
        };
        // Used once anywhere: the store every replica shares decides, in one step.
        match self
            .sealing
            .redeem(self.principal.as_deref(), &nonce, self.timeout)
            .await
        {
            Ok(()) => {
                let mut round = self.round.lock().unwrap_or_else(PoisonError::into_inner);
                round.state.approved = true;
                round.redeemed = true;
                Approval::Approved
            }
            Err(reason) => Approval::Denied { reason },
        }
    }

    fn ask_now(&self, question: &Question) -> Answer {
        if matches!(self.sent, Sent::Forged) {
            return Answer::Unavailable(FORGED.to_owned());
        }
        let mut round = self.round.lock().unwrap_or_else(PoisonError::into_inner);
        let index = question.index();
        if let Some(answer) = round.state.answers.get(index) {
            return answer_of(answer);
        }
        let key = question
            .name()
            .map_or_else(|| format!("{ASK_INPUT}{index}"), str::to_owned);
        if index == round.state.answers.len() {
            match self.response(&key) {
                Some(Ok(answer)) => {
                    let value = serde_json::to_value(&answer).unwrap_or_default();
                    let answered = answer_of(&value);
                    round.state.answers.push(value);
                    return answered;
                }
                Some(Err(reason)) => return Answer::Unavailable(reason),
                None => {}
            }
        }
        match form(question.message().to_owned(), question.schema()) {
            Ok(request) => {
                round.asked = Some((key, request));
                Answer::Later
            }
            Err(reason) => Answer::Unavailable(reason),
        }
    }
}

impl Approver for Input {
    fn review<'a>(
        &'a self,
        request: &'a ApprovalRequest<'a>,
    ) -> Pin<Box<dyn Future<Output = Approval> + Send + 'a>> {
        Box::pin(self.review_now(request))
    }
}

impl Asker for Input {
    fn ask<'a>(
        &'a self,
        question: &'a Question,
    ) -> Pin<Box<dyn Future<Output = Answer> + Send + 'a>> {
        Box::pin(std::future::ready(self.ask_now(question)))
    }
}

/// The key of the tool's `n`th question in `inputRequests` and `inputResponses`: this and `n`.
pub(crate) const ASK_INPUT: &str = "toolwright_ask_";

/// The MCP request that asks `question`: over 2026-07-28 an entry of `inputRequests` (in an
/// input-required result, or a task's `input_required` status).
#[allow(dead_code)] // used by the task side
pub(crate) fn input_request(question: &Question) -> Result<InputRequest, String> {
    form(question.message().to_owned(), question.schema())
}

/// The client's result for `question`'s request (an entry of `inputResponses`), as the tool's
/// answer.
#[allow(dead_code)] // used by the task side
pub(crate) fn answer_to(_question: &Question, result: &Value) -> Answer {
    answer_of(result)
}

/// An elicitation result as the tool's answer.
fn answer_of(result: &Value) -> Answer {
    match serde_json::from_value::<ElicitResult>(result.clone()) {
        Ok(result) => match result.action {
            ElicitationAction::Accept => {
                Answer::Accepted(result.content.unwrap_or_else(|| serde_json::json!({})))
            }
            ElicitationAction::Decline => Answer::Declined,
            _ => Answer::Dismissed,
        },
        Err(e) => Answer::Unavailable(format!("an answer kept for this call is unreadable: {e}")),
    }
}

/// A form elicitation of `message` with the form `schema`.
fn form(message: String, schema: &Value) -> Result<InputRequest, String> {
    let requested_schema: ElicitationSchema = serde_json::from_value(schema.clone())
        .map_err(|e| format!("the question's form cannot be an MCP elicitation form (flat fields of strings, numbers, booleans and string enums): {e}"))?;
    Ok(InputRequest::Elicitation(ElicitRequest::new(
        ElicitRequestParams::FormElicitationParams {
            meta: None,
            message,
            requested_schema,
        },
    )))
}

/// Asks a 2025-11-25 session's client at once, by `elicitation/create`.
pub(crate) struct ElicitingAsker {
    peer: Peer<RoleServer>,
    timeout: Duration,
}

impl ElicitingAsker {
    pub(crate) fn new(peer: Peer<RoleServer>, timeout: Duration) -> Self {
        ElicitingAsker { peer, timeout }
    }

    async fn ask_now(&self, question: &Question) -> Answer {
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
            return Answer::Unavailable(
                "this client cannot answer a form (it declared no elicitation capability)"
                    .to_owned(),
            );
        }
        let params = match form(question.message().to_owned(), question.schema()) {
            Ok(InputRequest::Elicitation(request)) => request.params,
            Ok(_) => return Answer::Unavailable("not a form".to_owned()),
            Err(reason) => return Answer::Unavailable(reason),
        };
        match self
            .peer
            .create_elicitation_with_timeout(params, Some(self.timeout))
            .await
        {
            Ok(result) => answer_of(&serde_json::to_value(&result).unwrap_or_default()),
            Err(e) => Answer::Unavailable(format!("no answer from the user: {e}")),
        }
    }
}

impl Asker for ElicitingAsker {
    fn ask<'a>(
        &'a self,
        question: &'a Question,
    ) -> Pin<Box<dyn Future<Output = Answer> + Send + 'a>> {
        Box::pin(self.ask_now(question))
    }
}

fn shown(value: &Value) -> String {
    let text = value.to_string();
    if text.len() > 60 {
        format!("{}...", text.chars().take(60).collect::<String>())
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One principal that approves its own calls as fast as it can fills its own share of the
    /// used-approval table, and no one else's.
    #[tokio::test(start_paused = true)]
    async fn a_principal_past_its_share_of_used_approvals_locks_out_no_one_else() {
        let sealing = Sealing::new(None, None).expect("a random key");
        let ttl = Duration::from_secs(300);
        for n in 0..MAX_REDEEMED_PER_PRINCIPAL {
            let used = sealing.redeem(Some("eve"), &format!("e{n}"), ttl).await;
            assert!(used.is_ok(), "{n}: {used:?}");
        }
        let refused = sealing.redeem(Some("eve"), "one-more", ttl).await;
        assert!(
            refused.as_ref().is_err_and(|why| why.contains("too many")),
            "{refused:?}"
        );
        assert_eq!(sealing.redeem(Some("ada"), "a0", ttl).await, Ok(()));
        assert!(
            sealing.redeem(Some("ada"), "a0", ttl).await.is_err(),
            "used once"
        );
        tokio::time::advance(ttl).await;
        assert_eq!(sealing.redeem(Some("eve"), "one-more", ttl).await, Ok(()));
    }
}
