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

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use std::time::Duration;
use tokio::sync::mpsc;

use rmcp::model::{
    ClientCapabilities, ElicitRequest, ElicitRequestParams, ElicitResult, ElicitationAction,
    ElicitationSchema, InputRequest, InputRequests, InputResponses, LoggingLevel,
    LoggingMessageNotificationParam, ProtocolVersion, RequestStateCodec, RequestStateError,
    SealOptions,
};
use rmcp::service::ElicitationMode;
use rmcp::{Peer, RoleServer};
use serde_json::Value;
use toolwright_core::approval::{Approval, ApprovalRequest, Approver};
use toolwright_core::ask::{
    Answer, Asker, Kind, LogLevel, LogRecord, Question, Role, Root, Sampled, Sampling,
};
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
    /// The client's results for the tool's questions so far, by key.
    answers: BTreeMap<String, Value>,
    /// The keys the last round asked: the only ones a response is taken for.
    pending: Vec<String>,
}

impl State {
    fn fresh() -> Self {
        State {
            nonce: uuid::Uuid::new_v4().to_string(),
            approved: false,
            answers: BTreeMap::new(),
            pending: Vec::new(),
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
    /// The questions this round ends with, under their keys, in the order asked.
    asked: Vec<(String, InputRequest)>,
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
    client: Option<Client>,
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
                    // Sealed by this server, but in a shape it no longer reads (a state from
                    // before an upgrade): authentic, so the call starts over rather than being
                    // told it was forged.
                    Err(_) => (Sent::Nothing, State::fresh()),
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
                asked: Vec::new(),
                redeemed: false,
            }),
            client: None,
        }
    }

    /// What the client declared it answers, and where its log lines go.
    pub(crate) fn with_client(mut self, client: Client) -> Self {
        self.client = Some(client);
        self
    }

    /// Whether the request sent back a state this server did not seal for this call.
    pub(crate) fn forged(&self) -> bool {
        matches!(self.sent, Sent::Forged)
    }

    /// The round this request answers, when it sent back a sealed state: the same for every
    /// copy of this request, another for every other round (each round's state has a nonce of
    /// its own).
    pub(crate) fn round_key(&self) -> Option<String> {
        if !matches!(self.sent, Sent::Sealed) {
            return None;
        }
        let round = self.round.lock().unwrap_or_else(PoisonError::into_inner);
        Some(round.state.nonce.clone())
    }

    /// The input requests and sealed state this call answers with, when it stopped for a
    /// question.
    pub(crate) fn asked(&self) -> Option<(InputRequests, String)> {
        let mut round = self.round.lock().unwrap_or_else(PoisonError::into_inner);
        if round.asked.is_empty() {
            return None;
        }
        let asked = std::mem::take(&mut round.asked);
        round.state.pending = asked.iter().map(|(key, _)| key.clone()).collect();
        // Each round's state has a nonce of its own: an approval carries on under it (the
        // one used stays used, so this request sent again approves nothing, on any replica),
        // and the call sent with it is keyed by it.
        round.state.nonce = uuid::Uuid::new_v4().to_string();
        round.redeemed = false;
        let payload = serde_json::to_vec(&round.state).unwrap_or_default();
        let sealed = self.sealing.codec.seal_with(
            &payload,
            &SealOptions::new()
                .associated_data(self.binding.as_bytes())
                .ttl(self.timeout),
        );
        let requests: InputRequests = asked.into_iter().collect();
        let state = sealed;
        Some((requests, state))
    }

    /// The client's result under `key`, sent with this request after a sealed state that
    /// asked it.
    fn result(&self, round: &Round, key: &str) -> Option<&Value> {
        if !matches!(self.sent, Sent::Sealed) || !round.state.pending.iter().any(|k| k == key) {
            return None;
        }
        self.responses.get(key)
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
                        round.asked.push((APPROVAL_INPUT.to_owned(), question));
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
        let key = question
            .name()
            .map_or_else(|| format!("{ASK_INPUT}{}", question.index()), str::to_owned);
        let mut round = self.round.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(result) = round.state.answers.get(&key) {
            return answer_to(question, result);
        }
        if let Some(result) = self.result(&round, &key).cloned() {
            let answer = answer_to(question, &result);
            if !matches!(answer, Answer::Unavailable(_)) {
                round.state.answers.insert(key, result);
            }
            return answer;
        }
        if let Some(client) = &self.client {
            if let Err(why) = client.declares(question) {
                return Answer::Unavailable(why);
            }
        }
        if round.asked.iter().any(|(asked, _)| *asked == key)
            || round.asked.len() >= MAX_INPUT_REQUESTS
        {
            return Answer::Unavailable(format!(
                "a question under the key `{key}` was already asked in this round, or the round \
                 has its most questions ({MAX_INPUT_REQUESTS}); give each question its own name"
            ));
        }
        match input_request(question) {
            Ok(request) => {
                round.asked.push((key, request));
                Answer::Later
            }
            Err(reason) => Answer::Unavailable(reason),
        }
    }
}

/// The most questions one input-required result carries: 32.
pub(crate) const MAX_INPUT_REQUESTS: usize = 32;

/// The client of one request: which kinds of question it declared it answers, and where a
/// tool's log lines go (its `notifications/message`, at or above its level).
pub(crate) struct Client {
    peer: Peer<RoleServer>,
    forms: bool,
    sampling: bool,
    roots: bool,
    /// The least level it takes, as [`level_code`] numbers it.
    level: Level,
    /// The lines on their way, in order, to one task that sends them (made at the first).
    lines: OnceLock<mpsc::Sender<LoggingMessageNotificationParam>>,
}

/// The least level of log line a client takes: a session's, which `logging/setLevel` changes,
/// or one request's.
pub(crate) enum Level {
    /// A session's: none set is [`EVERY_LEVEL`].
    Session(Arc<AtomicU8>),
    /// A 2026-07-28 request's `logLevel`: none is [`NO_LEVEL`].
    Request(u8),
}

/// The most log lines of one request (or session) waiting to be sent: 256. Past it a line is
/// dropped, so a tool that logs faster than its client reads never waits or grows memory.
pub(crate) const MAX_WAITING_LOG_LINES: usize = 256;

/// No level set on a session: the client takes every line.
pub(crate) const EVERY_LEVEL: u8 = 0;

/// No level set on a 2026-07-28 request: the client takes no line.
pub(crate) const NO_LEVEL: u8 = u8::MAX;

impl Client {
    /// The client of a request with `capabilities`, taking log lines at or above `level`.
    pub(crate) fn new(
        peer: Peer<RoleServer>,
        capabilities: Option<&ClientCapabilities>,
        level: Level,
    ) -> Self {
        let forms = capabilities.is_some_and(|c| c.elicitation.is_some());
        let (sampling, roots) = capabilities.map_or((false, false), |c| {
            (c.sampling.is_some(), c.roots.is_some())
        });
        Client {
            peer,
            forms,
            sampling,
            roots,
            level,
            lines: OnceLock::new(),
        }
    }

    /// Whether the client declared what `question` needs; why not, for the tool's model.
    fn declares(&self, question: &Question) -> Result<(), String> {
        let declared = match question.kind() {
            Kind::Form(_) => self.forms,
            Kind::Sampling(_) => self.sampling,
            Kind::Roots => self.roots,
            _ => false,
        };
        if declared {
            Ok(())
        } else {
            Err(format!(
                "this client did not declare the `{}` capability",
                question.kind().capability()
            ))
        }
    }

    /// Sends `record` as `notifications/message` when its level is at or above the client's.
    pub(crate) fn log(&self, record: &LogRecord) {
        let least = match &self.level {
            Level::Session(level) => level.load(Ordering::Relaxed),
            Level::Request(level) => *level,
        };
        if level_code(record.level()) < least {
            return;
        }
        let param = serde_json::from_value::<LoggingMessageNotificationParam>(serde_json::json!({
            "level": record.level().as_str(),
            "logger": record.logger(),
            "data": record.data(),
        }));
        let Ok(param) = param else { return };
        // Never waits: a tool's lines go out behind it, in order, through one task. A line
        // logged outside the runtime (a thread of the tool's own) has no task to go through.
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let lines = self.lines.get_or_init(|| {
            let (send, mut receive) = mpsc::channel(MAX_WAITING_LOG_LINES);
            let peer = self.peer.clone();
            runtime.spawn(async move {
                while let Some(line) = receive.recv().await {
                    if peer.notify_logging_message(line).await.is_err() {
                        break;
                    }
                }
            });
            send
        });
        let _ = lines.try_send(param);
    }
}

/// `level` as a number that grows with it, from 1 (`debug`); [`EVERY_LEVEL`] is below all.
pub(crate) fn level_code(level: LogLevel) -> u8 {
    level as u8 + 1
}

/// An MCP logging level as toolwright's.
pub(crate) fn log_level(level: LoggingLevel) -> LogLevel {
    match level {
        LoggingLevel::Debug => LogLevel::Debug,
        LoggingLevel::Info => LogLevel::Info,
        LoggingLevel::Notice => LogLevel::Notice,
        LoggingLevel::Warning => LogLevel::Warning,
        LoggingLevel::Error => LogLevel::Error,
        LoggingLevel::Critical => LogLevel::Critical,
        LoggingLevel::Alert => LogLevel::Alert,
        _ => LogLevel::Emergency,
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

    fn log(&self, record: &LogRecord) {
        if let Some(client) = &self.client {
            client.log(record);
        }
    }
}

/// The key of the tool's `n`th question in `inputRequests` and `inputResponses`: this and `n`.
pub(crate) const ASK_INPUT: &str = "toolwright_ask_";

/// The MCP request that asks `question`: over 2026-07-28 an entry of `inputRequests` (in an
/// input-required result, or a task's `input_required` status).
pub(crate) fn input_request(question: &Question) -> Result<InputRequest, String> {
    match question.kind() {
        Kind::Form(schema) => form(question.message().to_owned(), schema),
        Kind::Sampling(request) => serde_json::from_value(serde_json::json!({
            "method": "sampling/createMessage",
            "params": sampling_params(request),
        }))
        .map_err(|e| format!("the sampling request cannot be sent: {e}")),
        Kind::Roots => serde_json::from_value(serde_json::json!({"method": "roots/list"}))
            .map_err(|e| format!("the roots request cannot be sent: {e}")),
        _ => Err("this kind of question cannot be asked over MCP".to_owned()),
    }
}

/// The `params` of a `sampling/createMessage` request for `request`.
pub(crate) fn sampling_params(request: &Sampling) -> Value {
    let messages: Vec<Value> = request
        .messages()
        .iter()
        .map(|m| {
            serde_json::json!({
                "role": match m.role() { Role::User => "user", _ => "assistant" },
                "content": {"type": "text", "text": m.text()},
            })
        })
        .collect();
    let mut params = serde_json::json!({"messages": messages, "maxTokens": request.max_tokens()});
    if let Some(system) = request.system() {
        params["systemPrompt"] = system.into();
    }
    if let Some(temperature) = request.temperature() {
        params["temperature"] = temperature.into();
    }
    if !request.stop_sequences().is_empty() {
        params["stopSequences"] = request.stop_sequences().into();
    }
    if !request.model_hints().is_empty() {
        let hints: Vec<Value> = request
            .model_hints()
            .iter()
            .map(|name| serde_json::json!({"name": name}))
            .collect();
        params["modelPreferences"] = serde_json::json!({"hints": hints});
    }
    params
}

/// The client's result for `question`'s request (an entry of `inputResponses`, or the result of
/// a request sent to a 2025-11-25 client), as the tool's answer; a result that does not fit
/// is unavailable, saying what was expected and what came.
pub(crate) fn answer_to(question: &Question, result: &Value) -> Answer {
    match question.kind() {
        Kind::Form(_) => answer_of(result),
        Kind::Sampling(_) => match sampled(result) {
            Some(sampled) => Answer::Sampled(sampled),
            None => Answer::Unavailable(format!(
                "the client's answer to the sampling request must be a sampling result \
                 (`{{\"role\": \"assistant\", \"content\": {{\"type\": \"text\", ..}}, \"model\": ..}}`), got {}",
                shown(result)
            )),
        },
        Kind::Roots => match roots(result) {
            Some(roots) => Answer::Roots(roots),
            None => Answer::Unavailable(format!(
                "the client's answer to the roots request must be `{{\"roots\": [{{\"uri\": ..}}]}}`, got {}",
                shown(result)
            )),
        },
        _ => Answer::Unavailable("this kind of question cannot be asked over MCP".to_owned()),
    }
}

/// A `sampling/createMessage` result as a completion: its text blocks joined (content is one
/// block or a list of them).
fn sampled(result: &Value) -> Option<Sampled> {
    let model = result.get("model")?.as_str()?;
    let content = result.get("content")?;
    let blocks = match content {
        Value::Array(blocks) => blocks.iter().collect::<Vec<_>>(),
        block @ Value::Object(_) => vec![block],
        _ => return None,
    };
    let text: Vec<&str> = blocks
        .iter()
        .filter(|block| block.get("type").and_then(Value::as_str) == Some("text"))
        .filter_map(|block| block.get("text").and_then(Value::as_str))
        .collect();
    let mut sampled = Sampled::new(text.join("\n"), model);
    if let Some(reason) = result.get("stopReason").and_then(Value::as_str) {
        sampled = sampled.with_stop_reason(reason);
    }
    Some(sampled)
}

/// A `roots/list` result as roots.
fn roots(result: &Value) -> Option<Vec<Root>> {
    result
        .get("roots")?
        .as_array()?
        .iter()
        .map(|root| {
            let uri = root.get("uri")?.as_str()?;
            let mut out = Root::new(uri);
            if let Some(name) = root.get("name").and_then(Value::as_str) {
                out = out.with_name(name);
            }
            Some(out)
        })
        .collect()
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
        Err(e) => Answer::Unavailable(format!(
            "the answer to the form must be an elicitation result \
             (`{{\"action\": \"accept\", \"content\": {{..}}}}`): {e}"
        )),
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
    client: Client,
    timeout: Duration,
}

impl ElicitingAsker {
    pub(crate) fn new(client: Client, timeout: Duration) -> Self {
        ElicitingAsker { client, timeout }
    }

    async fn ask_now(&self, question: &Question) -> Answer {
        let peer = &self.client.peer;
        let stateless = peer
            .peer_info()
            .is_some_and(|info| info.protocol_version >= ProtocolVersion::V_2026_07_28);
        if stateless {
            return Answer::Unavailable(format!(
                "this client did not declare the `{}` capability on this request",
                question.kind().capability()
            ));
        }
        // A session's client declared its capabilities when it initialized.
        let declared = match question.kind() {
            Kind::Form(_) => peer
                .supported_elicitation_modes()
                .contains(&ElicitationMode::Form),
            Kind::Sampling(_) => peer
                .peer_info()
                .is_some_and(|info| info.capabilities.sampling.is_some()),
            Kind::Roots => peer
                .peer_info()
                .is_some_and(|info| info.capabilities.roots.is_some()),
            _ => false,
        };
        if !declared {
            return Answer::Unavailable(format!(
                "this client did not declare the `{}` capability",
                question.kind().capability()
            ));
        }
        let result = match question.kind() {
            Kind::Form(schema) => {
                let params = match form(question.message().to_owned(), schema) {
                    Ok(InputRequest::Elicitation(request)) => request.params,
                    Ok(_) => return Answer::Unavailable("not a form".to_owned()),
                    Err(reason) => return Answer::Unavailable(reason),
                };
                self.within(peer.create_elicitation(params)).await
            }
            Kind::Sampling(request) => match serde_json::from_value(sampling_params(request)) {
                Ok(params) => self.within(peer.create_message(params)).await,
                Err(e) => Err(format!("the sampling request cannot be sent: {e}")),
            },
            _ => self.within(peer.list_roots()).await,
        };
        match result {
            Ok(result) => answer_to(question, &result),
            Err(why) => Answer::Unavailable(why),
        }
    }

    /// The client's answer to `sent` within the timeout, as JSON; or why there is none.
    async fn within<T: serde::Serialize, E: std::fmt::Display>(
        &self,
        sent: impl Future<Output = Result<T, E>>,
    ) -> Result<Value, String> {
        match tokio::time::timeout(self.timeout, sent).await {
            Ok(Ok(result)) => serde_json::to_value(&result).map_err(|e| e.to_string()),
            Ok(Err(e)) => Err(format!("no answer from the client: {e}")),
            Err(_) => Err(format!(
                "the client did not answer within {:?}",
                self.timeout
            )),
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

    fn log(&self, record: &LogRecord) {
        self.client.log(record);
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
