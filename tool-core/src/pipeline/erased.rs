//! A tool with its type erased, and everything that still needs its type. One table holds
//! every tool ([`DynTool`]) so the stages are compiled once for all of them; what needs a tool's
//! own types ([`Body`]: its arguments parsed and checked, its body's future with its result
//! interpreted, its fallback) is compiled per tool, here and nowhere else.

use std::future::Future;

use super::state::{Call, Pipeline};
use crate::context::Invocation;
use crate::error::ToolError;
use crate::execute::fallback::{self, FallbackFuture, Interpreted};
use crate::execute::{Attempt, AttemptInfo, Bounds, Executed};
use crate::idempotency::IdempotencyKey;
use crate::interpret;
use crate::observe::{self, ToolStats};
use crate::outcome::{ErrorKind, Failure, Violations};
use crate::provenance;
use crate::runtime::BoxFuture;
use crate::session::Session;
use crate::tool::spec::{StateRequirement, ToolSpec};
use crate::tool::Tool;
use crate::validate::field_failure;
use crate::validate::shape::{self, ShapeValidator};

/// A registered tool with its type erased, so one table can hold every tool.
pub(crate) trait DynTool: Send + Sync {
    fn spec(&self) -> &ToolSpec;
    /// The bounds every attempt runs within: timeout, deadline, retries, breaker.
    fn bounds(&self) -> &Bounds;
    fn stats(&self) -> &ToolStats;
    fn required_state(&self) -> Vec<StateRequirement>;
    /// The typed checks of `arguments` (shape, field rules, semantic rule, provenance,
    /// authorization), the parsed arguments kept for [`DynTool::invoke`] (boxed: only the tool
    /// knows their type).
    fn check_arguments(
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
fn invocation<'a>(
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

/// What the pipeline needs of a tool's body: its arguments read and checked, its attempts,
/// its fallback. Every `#[tool]` is one (the impl below, for every [`Tool`]); a tool defined at
/// run time is another ([`crate::dynamic`]), so both run through the same stages.
pub(crate) trait Body: Send + Sync + 'static {
    type Args: Send + 'static;
    type Output: serde::Serialize + Send + 'static;
    /// Whether the fallback machinery is compiled in for this body at all.
    const FALLBACK: bool;

    fn required_state(&self) -> Vec<StateRequirement>;

    /// Shape, field rules, semantic rule, provenance, authorization.
    fn validate(
        &self,
        arguments: &str,
        spec: &ToolSpec,
        shape: &ShapeValidator,
        session: &Session,
        pipeline: &Pipeline,
    ) -> Result<Self::Args, Box<Failure>>;

    /// Shape, field rules, semantic rule: what an example must pass when the tool is
    /// registered, with no conversation to check provenance or authorization in.
    fn check_example(
        &self,
        arguments: &str,
        spec: &ToolSpec,
        shape: &ShapeValidator,
    ) -> Result<(), Box<Failure>>;

    /// The validated text read again, for a retry or a fallback.
    fn reparse(&self, arguments: &str) -> Result<Self::Args, ToolError>;

    fn invoke(
        &self,
        args: Self::Args,
        invocation: &Invocation<'_>,
    ) -> impl Future<Output = Result<Self::Output, ToolError>> + Send;

    fn fallback(
        &self,
        args: Self::Args,
        invocation: &Invocation<'_>,
    ) -> impl Future<Output = Result<Self::Output, ToolError>> + Send;
}

impl<T: Tool> Body for T {
    type Args = T::Args;
    type Output = T::Output;
    const FALLBACK: bool = T::META.fallback;

    fn required_state(&self) -> Vec<StateRequirement> {
        T::required_state()
    }

    fn validate(
        &self,
        arguments: &str,
        spec: &ToolSpec,
        shape: &ShapeValidator,
        session: &Session,
        pipeline: &Pipeline,
    ) -> Result<T::Args, Box<Failure>> {
        validate_typed::<T>(arguments, spec, shape, session, pipeline)
    }

    fn check_example(
        &self,
        arguments: &str,
        spec: &ToolSpec,
        shape: &ShapeValidator,
    ) -> Result<(), Box<Failure>> {
        check_example_typed::<T>(arguments, spec, shape)
    }

    fn reparse(&self, arguments: &str) -> Result<T::Args, ToolError> {
        reparse::<T::Args>(arguments)
    }

    fn invoke(
        &self,
        args: T::Args,
        invocation: &Invocation<'_>,
    ) -> impl Future<Output = Result<T::Output, ToolError>> + Send {
        Tool::invoke(self, args, invocation)
    }

    fn fallback(
        &self,
        args: T::Args,
        invocation: &Invocation<'_>,
    ) -> impl Future<Output = Result<T::Output, ToolError>> + Send {
        Tool::fallback(self, args, invocation)
    }
}

/// The typed half of a tool: the tool itself and what the registry resolved for it.
pub(crate) struct Entry<T: Body> {
    tool: T,
    spec: ToolSpec,
    shape: ShapeValidator,
    bounds: Bounds,
    stats: ToolStats,
}

/// A tool ready for the table, with its input-schema validator (built ahead of time for a tool
/// defined at run time; on its first shape failure for a compiled one).
pub(crate) fn entry_with<T: Body>(
    tool: T,
    spec: ToolSpec,
    shape: ShapeValidator,
    bounds: Bounds,
) -> Box<dyn DynTool> {
    Box::new(Entry {
        tool,
        spec,
        shape,
        bounds,
        stats: ToolStats::default(),
    })
}

impl<T: Body> DynTool for Entry<T> {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn bounds(&self) -> &Bounds {
        &self.bounds
    }

    fn stats(&self) -> &ToolStats {
        &self.stats
    }

    fn required_state(&self) -> Vec<StateRequirement> {
        self.tool.required_state()
    }

    fn check_arguments(
        &self,
        arguments: &str,
        session: &Session,
        pipeline: &Pipeline,
    ) -> Result<Args, Box<Failure>> {
        self.validate(arguments, session, pipeline)
            .map(|args| -> Args { Box::new(args) })
    }

    fn check_example(&self, arguments: &str) -> Result<(), Box<Failure>> {
        self.tool.check_example(arguments, &self.spec, &self.shape)
    }

    fn invoke<'a>(
        &'a self,
        args: Args,
        invocation: Invocation<'a>,
    ) -> BoxFuture<'a, Result<Answer, ToolError>> {
        Box::pin(async move {
            let Ok(args) = args.downcast::<T::Args>() else {
                // Not reached: the arguments come from this tool's own checks.
                return Err(unreadable());
            };
            let value = self.tool.invoke(*args, &invocation).await?;
            Ok(interpret::result(self.spec.name(), &value).map_err(Box::new))
        })
    }

    fn reparse(&self, arguments: &str) -> Result<Args, ToolError> {
        self.tool
            .reparse(arguments)
            .map(|args| -> Args { Box::new(args) })
    }

    fn fall_back<'a>(
        &'a self,
        executed: &'a mut Executed<Interpreted>,
        kind: ErrorKind,
        call: &'a Call,
        key: Option<&'a IdempotencyKey>,
        session: &'a Session,
        pipeline: &'a Pipeline,
    ) -> Option<BoxFuture<'a, Option<ErrorKind>>> {
        // Behind a constant: a tool that declares no fallback compiles none of its machinery
        // (rustc does not instantiate code under a branch on a constant).
        if const { T::FALLBACK } {
            Some(Box::pin(self.fallback_attempt(
                executed, kind, call, key, session, pipeline,
            )))
        } else {
            None
        }
    }
}

impl<T: Body> Entry<T> {
    /// Shape, field rules, semantic rule, provenance, authorization: the typed checks.
    /// Synchronous and out of line, so none of it is stored in the call's future.
    fn validate(
        &self,
        arguments: &str,
        session: &Session,
        pipeline: &Pipeline,
    ) -> Result<T::Args, Box<Failure>> {
        self.tool
            .validate(arguments, &self.spec, &self.shape, session, pipeline)
    }

    /// The fallback's typed half: its future, for [`fallback::answer`] to run.
    async fn fallback_attempt(
        &self,
        executed: &mut Executed<Interpreted>,
        kind: ErrorKind,
        call: &Call,
        key: Option<&IdempotencyKey>,
        session: &Session,
        pipeline: &Pipeline,
    ) -> Option<ErrorKind> {
        let spec = &self.spec;
        let clock = &pipeline.sources.clock;
        let cut = clock.now() + spec.timeout;
        let info = AttemptInfo {
            number: 1,
            deadline: cut,
            attempt_deadline: cut,
        };
        let invocation = invocation(spec, call, key, session, pipeline, info);
        let make = Box::new(|| -> FallbackFuture<'_> {
            Box::pin(async {
                let value = self
                    .tool
                    .fallback(self.tool.reparse(&call.arguments)?, &invocation)
                    .await?;
                interpret::result(spec.name(), &value)
                    .map_err(|f| ToolError::new(f.kind, f.message))
            })
        });
        fallback::answer((spec.name(), spec.timeout), clock, executed, kind, make).await
    }
}

/// The failure of arguments that are not the tool's own (not reached: they come from its checks).
#[cold]
fn unreadable() -> ToolError {
    ToolError::new(
        ErrorKind::InvalidJson,
        "the arguments could not be read again",
    )
}

/// The checks of a compiled tool: its text parsed straight into `T::Args`, then its field
/// rules, semantic rule, provenance and authorization.
fn validate_typed<T: Tool>(
    arguments: &str,
    spec: &ToolSpec,
    shape: &ShapeValidator,
    session: &Session,
    pipeline: &Pipeline,
) -> Result<T::Args, Box<Failure>> {
    match shape::parse::<T::Args>(arguments) {
        Ok(args) => match typed_checks::<T>(&args, session) {
            None => Ok(args),
            Some(refused) => Err(refused.failure(spec, session, pipeline)),
        },
        Err(e) => Err(Box::new(shape::failure(
            arguments,
            e.as_ref(),
            &spec.input_schema,
            shape,
        ))),
    }
}

/// The checks of an example of a compiled tool's arguments: the text parsed into `T::Args`,
/// then its field rules and semantic rule, as a call's are.
fn check_example_typed<T: Tool>(
    arguments: &str,
    spec: &ToolSpec,
    shape: &ShapeValidator,
) -> Result<(), Box<Failure>> {
    match shape::parse::<T::Args>(arguments) {
        Ok(args) => match rule_checks::<T>(&args) {
            None => Ok(()),
            Some(refused) => Err(refused.failure(spec)),
        },
        Err(e) => Err(Box::new(shape::failure(
            arguments,
            e.as_ref(),
            &spec.input_schema,
            shape,
        ))),
    }
}

/// The typed checks of parsed arguments, in order: field rules, semantic rule, provenance,
/// authorization. `None`: all passed.
fn typed_checks<T: Tool>(args: &T::Args, session: &Session) -> Option<TypedRefusal> {
    if let Some(refused) = rule_checks::<T>(args) {
        return Some(TypedRefusal::Rules(refused));
    }
    let mut report = Violations::new();
    T::check_grounded(args, session, &mut report);
    if !report.is_empty() {
        return Some(TypedRefusal::Ungrounded(report));
    }
    T::authorize(args, session)
        .err()
        .map(TypedRefusal::Unauthorized)
}

/// The checks that need only the arguments: field rules, then the semantic rule.
fn rule_checks<T: Tool>(args: &T::Args) -> Option<RuleRefusal> {
    let mut report = Violations::new();
    T::check_fields(args, &mut report);
    if !report.is_empty() {
        return Some(RuleRefusal::Fields(report));
    }
    T::check_semantics(args).err().map(RuleRefusal::Semantic)
}

/// Which typed check refused a call's arguments, with what it found.
enum TypedRefusal {
    Rules(RuleRefusal),
    Ungrounded(Violations),
    Unauthorized(ToolError),
}

/// Which of the checks that need only the arguments refused them.
enum RuleRefusal {
    Fields(Violations),
    Semantic(ToolError),
}

impl RuleRefusal {
    /// The failure the model (or, for an example, the registry's builder) gets.
    #[cold]
    fn failure(self, spec: &ToolSpec) -> Box<Failure> {
        match self {
            RuleRefusal::Fields(report) => {
                Box::new(field_failure(report.into_vec(), &spec.input_schema))
            }
            RuleRefusal::Semantic(e) => {
                crate::guard::validation_failure(e, ErrorKind::SemanticInvalid)
            }
        }
    }
}

impl TypedRefusal {
    /// The failure the model gets. (Compiled once: the typed checks only say what they found.)
    #[cold]
    fn failure(self, spec: &ToolSpec, session: &Session, pipeline: &Pipeline) -> Box<Failure> {
        match self {
            TypedRefusal::Rules(refused) => refused.failure(spec),
            TypedRefusal::Ungrounded(report) => Box::new(provenance::ungrounded(
                report.into_vec(),
                spec.fields(),
                &pipeline.finders.read().unwrap_or_else(|e| e.into_inner()),
                session,
            )),
            TypedRefusal::Unauthorized(e) => {
                crate::guard::validation_failure(e, ErrorKind::Unauthorized)
            }
        }
    }
}

/// The validated text parsed again, for a retry or a fallback (`Args` is not `Clone`).
pub(crate) fn reparse<A: serde::de::DeserializeOwned>(arguments: &str) -> Result<A, ToolError> {
    serde_json::from_str::<A>(arguments).map_err(|e| {
        ToolError::new(
            ErrorKind::InvalidJson,
            format!("the arguments could not be read again: {e}"),
        )
    })
}
