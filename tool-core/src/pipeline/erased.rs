//! A registered tool with its type erased, so one table holds every tool and the stages are
//! compiled once for all of them, and the attempts of its body as the execution seam drives them.

use crate::call::{Invocation, Session};
use crate::error::ToolError;
use crate::execute::fallback::Interpreted;
use crate::execute::{Attempt, AttemptInfo, Bounds, Executed};
use crate::idempotency::IdempotencyKey;
use crate::observe::{self, ToolStats};
use crate::outcome::{ErrorKind, Failure};
use crate::runtime::BoxFuture;
use crate::tool::spec::{StateRequirement, ToolSpec};

use super::{Call, Pipeline};

/// A registered tool with its type erased, so one table can hold every tool.
pub(crate) trait DynTool: Send + Sync {
    fn spec(&self) -> &ToolSpec;
    fn guard(&self) -> &Bounds;
    fn stats(&self) -> &ToolStats;
    fn required_state(&self) -> Vec<StateRequirement>;
    /// The typed checks of `arguments` (shape, field rules, semantic rule, provenance,
    /// authorization), the parsed arguments kept for [`DynTool::invoke`] (boxed: only the tool
    /// knows their type).
    fn validated(
        &self,
        arguments: &str,
        session: &Session,
        pipeline: &Pipeline,
    ) -> Result<Args, Box<Failure>>;
    /// The checks an example of the arguments must pass when the tool is registered: shape,
    /// field rules, semantic rule (not provenance or authorization, which need a
    /// conversation).
    fn check_example(&self, arguments: &str) -> Result<(), Box<Failure>>;
    /// The tool's body on `args` (taken by its first poll), its result interpreted: `Ok(Err)`
    /// when the body succeeded but its result could not be (that is not the attempt's failure).
    fn invoke<'a>(
        &'a self,
        args: Args,
        invocation: Invocation<'a>,
    ) -> BoxFuture<'a, Result<Answer, ToolError>>;
    /// The validated text read again into the tool's arguments, for a retry.
    fn reparse(&self, arguments: &str) -> Result<Args, ToolError>;
    /// The future of the tool's fallback for a call that failed with `kind`, or `None` when the
    /// tool has none.
    fn fall_back<'a>(
        &'a self,
        executed: &'a mut Executed<Interpreted>,
        kind: ErrorKind,
        call: &'a Call,
        key: Option<&'a IdempotencyKey>,
        session: &'a Session,
        pipeline: &'a Pipeline,
    ) -> Option<BoxFuture<'a, Option<ErrorKind>>>;
}

/// Validated arguments on their way from the checks to the tool's body, their type erased
/// (the stages between them are compiled once for all tools). A tool without arguments
/// allocates nothing for them.
pub(crate) type Args = Box<dyn std::any::Any + Send>;

/// A successful attempt's result, interpreted; `Err` when it could not be.
pub(crate) type Answer = Result<Interpreted, Box<Failure>>;

/// One call's attempts of its tool, for the execution seam
/// ([`Bounds::attempts`](crate::execute::Bounds::attempts)): the first attempt takes the
/// validated arguments, a retry parses the validated text again (`Args` is not `Clone`; the
/// parse is deterministic).
pub(super) struct ToolAttempts<'a> {
    pub(super) tool: &'a dyn DynTool,
    pub(super) call: &'a Call,
    pub(super) args: Option<Args>,
    pub(super) key: Option<&'a IdempotencyKey>,
    pub(super) session: &'a Session,
    pub(super) pipeline: &'a Pipeline,
}

impl<'a> Attempt<'a> for ToolAttempts<'a> {
    type Output = Answer;

    fn attempt(&mut self, info: AttemptInfo) -> BoxFuture<'a, Result<Answer, ToolError>> {
        let (tool, call) = (self.tool, self.call);
        let invocation = invocation(
            tool.spec(),
            call,
            self.key,
            self.session,
            self.pipeline,
            info,
        );
        match self
            .args
            .take()
            .map_or_else(|| tool.reparse(&call.arguments), Ok)
        {
            Ok(args) => tool.invoke(args, invocation),
            Err(e) => Box::pin(std::future::ready(Err(e))),
        }
    }

    fn scrub(&self, message: &str) -> String {
        observe::scrubbed(message, &self.call.arguments, self.tool.spec().fields())
    }
}

/// What one attempt sees of the call.
pub(super) fn invocation<'a>(
    spec: &'a ToolSpec,
    call: &'a Call,
    key: Option<&'a IdempotencyKey>,
    session: &'a Session,
    pipeline: &'a Pipeline,
    info: AttemptInfo,
) -> Invocation<'a> {
    Invocation {
        call_id: &call.id,
        tool: &spec.name,
        session,
        key,
        attempt: info.number,
        deadline: info.deadline,
        attempt_deadline: info.attempt_deadline,
        state: &pipeline.state,
        clock: &pipeline.sources.clock,
        progress: call.progress.as_ref(),
    }
}
