//! Runs kept in the session's conversation store under a run id, so that a run paused for
//! approval (or cut off by a crash) continues in another process, on any replica.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use toolwright_core::conversation::{ConversationStore, ConversationStoreError, RunClaim};
use toolwright_core::Session;
use tracing::Instrument;

use crate::agent::{agent_span, Agent, Run};
use crate::message::Message;

/// How long past the agent's [`deadline`](crate::AgentBuilder::deadline) a replica's hold on a
/// kept run lasts, by default ([`run_lease_margin`](crate::AgentBuilder::run_lease_margin)
/// sets it): a drive of the loop ends by its deadline, so a hold older than this belongs to a
/// replica that died, and another may take the run over.
pub const RUN_LEASE_MARGIN: Duration = Duration::from_secs(60);

/// The version of the kept form this build writes and reads.
const FORMAT: u32 = 1;

/// Where a kept run stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum State {
    /// A replica is driving it, or was when it stopped: resuming continues from what was last
    /// saved.
    Running,
    /// A call waits for a person's decision.
    Paused,
    /// It ended; resuming answers it as it is.
    Ended,
}

#[derive(Serialize, Deserialize)]
struct Kept<R> {
    format: u32,
    state: State,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    principal: Option<String>,
    run: R,
}

/// Why a kept run could not be started, resumed or read.
#[derive(Debug)]
#[non_exhaustive]
pub enum RunError {
    /// The session has no conversation store to keep the run in
    /// ([`Session::with_store`]).
    NoStore,
    /// A run of this id lives already ([`Agent::run_kept`]).
    Exists(String),
    /// No run of this id: never kept, or expired.
    Unknown(String),
    /// Another replica (or task) is driving this run now; try again after it saved it.
    Busy(String),
    /// The run belongs to another principal than the session's.
    NotYours(String),
    /// What the store holds under this id is not a run this version reads: not JSON of a
    /// kept run, of another format, or of an inconsistent shape (a waiting turn whose calls
    /// and outcome slots differ in number, say). Nothing was run or written.
    Unreadable {
        /// The run id.
        run: String,
        /// What was wrong: the field, what it should hold and what it holds.
        error: String,
    },
    /// The run went on past what the store keeps: a save of `bytes` was refused, over the
    /// store's `limit` ([`MAX_RUN_BYTES`](toolwright_core::conversation::MAX_RUN_BYTES)), and
    /// what was saved before it is gone, so it cannot be continued from an earlier turn (which
    /// would make its calls since then again). The replica that drove it got the run itself
    /// ([`RunError::NotSaved`]).
    Outgrown {
        /// The run id.
        run: String,
        /// The size of the save refused, in bytes.
        bytes: usize,
        /// The most the store takes, in bytes.
        limit: usize,
    },
    /// The store failed before anything ran.
    Store(ConversationStoreError),
    /// The run went on, but what it came to could not be saved: the store failed (`error`), or
    /// this replica's hold passed and another replica took the run over (`error: None`). The
    /// run is here, so nothing it did is lost to the caller. A run the store refused for its
    /// size ([`ConversationStoreError::TooLarge`]) is left outgrown there: resuming it answers
    /// [`RunError::Outgrown`], never the run as an earlier turn left it.
    NotSaved {
        /// The run as this replica left it.
        run: Box<Run>,
        /// The store's failure, `None` when the hold was lost.
        error: Option<ConversationStoreError>,
    },
}

impl fmt::Display for RunError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RunError::NoStore => f.write_str(
                "the session has no conversation store to keep the run in; set one with Session::with_store",
            ),
            RunError::Exists(id) => write!(f, "a run `{id}` is kept already"),
            RunError::Unknown(id) => write!(f, "no run `{id}` is kept (never kept, or expired)"),
            RunError::Busy(id) => write!(f, "run `{id}` is being driven elsewhere now"),
            RunError::NotYours(id) => write!(f, "run `{id}` belongs to another principal"),
            RunError::Unreadable { run, error } => {
                write!(f, "run `{run}` is not readable: {error}")
            }
            RunError::Outgrown { run, bytes, limit } => write!(
                f,
                "run `{run}` went on past what the store keeps (a save of {bytes} bytes, over its {limit}): it cannot be resumed from an earlier turn"
            ),
            RunError::Store(error) => error.fmt(f),
            RunError::NotSaved { error: Some(error), .. } => {
                write!(f, "the run went on but was not saved: {error}")
            }
            RunError::NotSaved { error: None, .. } => f.write_str(
                "the run went on but was not saved: its hold passed and another replica took it over",
            ),
        }
    }
}

impl std::error::Error for RunError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            RunError::Store(error)
            | RunError::NotSaved {
                error: Some(error), ..
            } => Some(error),
            _ => None,
        }
    }
}

impl From<ConversationStoreError> for RunError {
    fn from(error: ConversationStoreError) -> Self {
        RunError::Store(error)
    }
}

/// A holder id no other drive shares: this process and a random number.
fn holder() -> String {
    format!("{}-{:016x}", std::process::id(), fastrand::u64(..))
}

fn body(state: State, principal: Option<&str>, run: &Run) -> String {
    let kept = Kept {
        format: FORMAT,
        state,
        principal: principal.map(str::to_owned),
        run,
    };
    // Every part of a run is plain data (strings, numbers, JSON values): this cannot fail.
    serde_json::to_string(&kept).unwrap_or_default()
}

/// The kept run in `body`, if this version reads it and it is `principal`'s.
fn read(id: &str, body: &str, principal: Option<&str>) -> Result<Kept<Run>, RunError> {
    let unreadable = |error: String| RunError::Unreadable {
        run: id.to_owned(),
        error,
    };
    #[derive(Deserialize)]
    struct Format {
        format: u32,
    }
    // The format first, so a run of another version says so rather than what field it lacks.
    let format: Format = serde_json::from_str(body).map_err(|e| unreadable(e.to_string()))?;
    if format.format != FORMAT {
        return Err(unreadable(format!(
            "kept in format {}, this version reads format {FORMAT}",
            format.format
        )));
    }
    // `Run`'s own shape (a waiting turn's calls and outcome slots) is checked as it is read.
    let kept: Kept<Run> = serde_json::from_str(body).map_err(|e| unreadable(e.to_string()))?;
    if kept.principal.as_deref() != principal {
        return Err(RunError::NotYours(id.to_owned()));
    }
    // A paused run, and only a paused one, waits with a turn to finish.
    let waits = kept.state == State::Paused;
    if waits != kept.run.is_pending() {
        let (expected, got) = if waits {
            ("a waiting turn", "none")
        } else {
            ("none", "a waiting turn")
        };
        return Err(unreadable(format!(
            "`run.pending`: a run kept as {:?} holds {expected}, got {got}",
            kept.state
        )));
    }
    Ok(kept)
}

/// What loading `run` answered, as a run error: a run whose last save was refused for its
/// size is outgrown, never read from an earlier save.
fn loaded(
    run: &str,
    loaded: Result<Option<String>, ConversationStoreError>,
) -> Result<Option<String>, RunError> {
    match loaded {
        Ok(body) => Ok(body),
        Err(ConversationStoreError::TooLarge { bytes, limit, .. }) => Err(RunError::Outgrown {
            run: run.to_owned(),
            bytes,
            limit,
        }),
        Err(error) => Err(RunError::Store(error)),
    }
}

/// A kept run held by this drive: where it is saved, under which id and hold.
pub(crate) struct Keeper<'a> {
    store: &'a Arc<dyn ConversationStore>,
    run_id: &'a str,
    holder: String,
    principal: Option<&'a str>,
    lease: Duration,
    ttl: Duration,
}

impl Keeper<'_> {
    /// Saves `text` as the run's body, keeping the hold for `hold` or releasing it (`None`);
    /// `false` when another replica took the run over.
    async fn save_text(
        &self,
        text: &str,
        hold: Option<Duration>,
    ) -> Result<bool, ConversationStoreError> {
        self.store
            .save_run(self.run_id, &self.holder, text, self.ttl, hold)
            .await
    }

    async fn save(
        &self,
        state: State,
        run: &Run,
        hold: Option<Duration>,
    ) -> Result<bool, ConversationStoreError> {
        self.save_text(&body(state, self.principal, run), hold)
            .await
    }

    /// Saves the run as it is after a turn, holding it a lease more; `false` when another
    /// replica took it over (this one's lease passed). A store that cannot be reached is
    /// logged and the run goes on: its end is saved, or reported unsaved, when it ends.
    pub(crate) async fn checkpoint(&self, run: &Run) -> bool {
        match self.save(State::Running, run, Some(self.lease)).await {
            Ok(saved) => saved,
            Err(error) => {
                tracing::warn!(
                    target: "toolwright::agent",
                    run = self.run_id,
                    %error,
                    "could not save the run after a turn; it goes on"
                );
                true
            }
        }
    }
}

impl Agent {
    /// [`Agent::run`], with the run kept in the session's conversation store under `run_id`:
    /// when it pauses for approval (or this process dies while it runs) any process that
    /// shares the store continues it with [`Agent::resume_kept`].
    ///
    /// The run is saved when it starts, after each turn's calls ran, and when it ends or
    /// pauses; it lives [`run_ttl`](crate::AgentBuilder::run_ttl) (7 days by default) after it
    /// was last saved. A run that a crash cut off continues after its last finished turn: the
    /// model is asked again, so calls of the turn that was cut off may be made again (an
    /// idempotency key or the idempotency store answers those of tools that declare one).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use toolwright::agent::{Agent, End, Message, ScriptedModel, Turn};
    /// use toolwright::conversation::MemoryConversationStore;
    /// use toolwright::{Registry, Session};
    ///
    /// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
    /// let store = Arc::new(MemoryConversationStore::new());
    /// let model = ScriptedModel::new([Turn::text("Hello.")]);
    /// let agent = Agent::builder(model, Registry::builder().build()?).build()?;
    /// let session = Session::new("conv-1").with_store(store.clone());
    /// let run = agent.run_kept(&session, "run-1", vec![Message::user("hi")]).await?;
    /// assert_eq!(run.final_text(), Some("Hello."));
    /// // Another process sharing the store reads it back.
    /// let kept = agent.kept_run(&session, "run-1").await?.unwrap();
    /// assert!(matches!(kept.end(), End::Final(_)));
    /// # Ok(()) }
    /// ```
    pub async fn run_kept(
        &self,
        session: &Session,
        run_id: &str,
        messages: Vec<Message>,
    ) -> Result<Run, RunError> {
        let keeper = self.keeper(session, run_id)?;
        let run = Run::start(messages);
        let first = body(State::Running, keeper.principal, &run);
        if !keeper
            .store
            .create_run(run_id, &keeper.holder, &first, keeper.lease, keeper.ttl)
            .await?
        {
            return Err(RunError::Exists(run_id.to_owned()));
        }
        self.drive_kept(session, &keeper, run).await
    }

    /// Continues the run kept under `run_id`: a run paused for approval goes on once the call
    /// is decided (its approved call runs, once), a run a crash cut off goes on from where it
    /// was last saved, and a run that ended is answered as it is. Works in any process that
    /// shares the store.
    ///
    /// While one replica drives a run, another's resume is refused ([`RunError::Busy`]), so a
    /// run resumed twice at once runs its pending calls once. A replica's hold lasts the
    /// agent's [`deadline`](crate::AgentBuilder::deadline) plus its
    /// [`run_lease_margin`](crate::AgentBuilder::run_lease_margin) ([`RUN_LEASE_MARGIN`] by
    /// default); past it, a replica that died no longer holds the run.
    ///
    /// A resume refused changes nothing: the run is read and checked (whose it is, that this
    /// version reads it) before anything is written, so another principal's resume
    /// ([`RunError::NotYours`]) neither holds the run nor changes how long it lives. A run
    /// whose last save the store refused for its size is [`RunError::Outgrown`]: it is not
    /// continued from an earlier turn.
    pub async fn resume_kept(&self, session: &Session, run_id: &str) -> Result<Run, RunError> {
        let keeper = self.keeper(session, run_id)?;
        let seen = loaded(run_id, keeper.store.load_run(run_id).await)?
            .ok_or_else(|| RunError::Unknown(run_id.to_owned()))?;
        let kept = read(run_id, &seen, keeper.principal)?;
        if kept.state == State::Ended {
            // Nothing to drive, and an ended run changes no more: answered as read.
            return Ok(kept.run);
        }
        let body = match keeper
            .store
            .claim_run(run_id, &keeper.holder, keeper.lease)
            .await?
        {
            RunClaim::Claimed(body) => body,
            RunClaim::Busy => return Err(RunError::Busy(run_id.to_owned())),
            RunClaim::Outgrown { bytes, limit } => {
                return Err(RunError::Outgrown {
                    run: run_id.to_owned(),
                    bytes,
                    limit,
                })
            }
            _ => return Err(RunError::Unknown(run_id.to_owned())),
        };
        if body == seen {
            return self.drive_kept(session, &keeper, kept.run).await;
        }
        // Saved again between the read and the claim (it ended on another replica, say).
        match read(run_id, &body, keeper.principal) {
            Ok(kept) if kept.state != State::Ended => {
                self.drive_kept(session, &keeper, kept.run).await
            }
            // Nothing to drive: the hold is released, the body left as it was.
            read => {
                let released = keeper.save_text(&body, None).await;
                let kept = read?;
                released?;
                Ok(kept.run)
            }
        }
    }

    /// The run kept under `run_id` as it was last saved, whoever drives it now; `None` when no
    /// such run lives, [`RunError::Outgrown`] when its last save was refused for its size.
    pub async fn kept_run(&self, session: &Session, run_id: &str) -> Result<Option<Run>, RunError> {
        let store = session.store().ok_or(RunError::NoStore)?;
        let Some(body) = loaded(run_id, store.load_run(run_id).await)? else {
            return Ok(None);
        };
        Ok(Some(read(run_id, &body, session.principal())?.run))
    }

    /// A new hold on the run kept under `run_id` in the session's store.
    fn keeper<'a>(&self, session: &'a Session, run_id: &'a str) -> Result<Keeper<'a>, RunError> {
        Ok(Keeper {
            store: session.store().ok_or(RunError::NoStore)?,
            run_id,
            holder: holder(),
            principal: session.principal(),
            lease: self.lease(),
            ttl: self.run_ttl(),
        })
    }

    async fn drive_kept(
        &self,
        session: &Session,
        keeper: &Keeper<'_>,
        run: Run,
    ) -> Result<Run, RunError> {
        let served = self.served(session);
        let run = self
            .drive(&served, run, Some(keeper))
            .instrument(agent_span(&served))
            .await;
        let state = if run.is_pending() {
            State::Paused
        } else {
            State::Ended
        };
        match keeper.save(state, &run, None).await {
            Ok(true) => Ok(run),
            Ok(false) => Err(RunError::NotSaved {
                run: Box::new(run),
                error: None,
            }),
            Err(error) => Err(RunError::NotSaved {
                run: Box::new(run),
                error: Some(error),
            }),
        }
    }
}
