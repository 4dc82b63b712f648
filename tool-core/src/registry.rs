//! The [`Registry`]: the fixed set of tools a model may call, and the pipeline every call runs.
//!
//! ```
//! # use toolwright_core::{Registry, ToolCall, Status, ErrorKind};
//! # async fn demo() -> Result<(), toolwright_core::BuildError> {
//! let registry = Registry::builder().build()?;
//! let outcome = registry.call(ToolCall::new("call_1", "search_acounts", "{}")).await;
//! assert_eq!(outcome.status(), Status::Error);
//! assert_eq!(outcome.error_kind(), Some(ErrorKind::UnknownTool));
//! # Ok(()) }
//! ```
//!
//! Lookups take no lock: the registry is immutable once built and shared behind an `Arc`, so it
//! is cheap to clone into every task.

use std::any::Any;
use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use crate::call::{Invocation, Session, StateMap, ToolCall};
use crate::error::ToolError;
use crate::execute;
use crate::idempotency::IdempotencyKey;
use crate::interpret;
use crate::outcome::{ErrorKind, Failure, Outcome, Seam};
use crate::tool::{StateRequirement, Tool, ToolSpec};
use crate::validate::shape::{self, ShapeValidator};
use crate::validate::{preview_str, Violations};

/// The per-attempt timeout of tools that declare none.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A registered tool with its types erased, so one map can hold every tool.
trait DynTool: Send + Sync {
    fn spec(&self) -> &ToolSpec;
    fn required_state(&self) -> Vec<StateRequirement>;
    fn dispatch<'a>(
        &'a self,
        call_id: String,
        arguments: String,
        session: &'a Session,
        registry: &'a Inner,
    ) -> BoxFuture<'a, Outcome>;
}

struct Entry<T: Tool> {
    tool: T,
    spec: ToolSpec,
    shape: ShapeValidator,
}

impl<T: Tool> DynTool for Entry<T> {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn required_state(&self) -> Vec<StateRequirement> {
        T::required_state()
    }

    fn dispatch<'a>(
        &'a self,
        call_id: String,
        arguments: String,
        session: &'a Session,
        registry: &'a Inner,
    ) -> BoxFuture<'a, Outcome> {
        Box::pin(self.run(call_id, arguments, session, registry))
    }
}

impl<T: Tool> Entry<T> {
    /// Validate -> Bound -> Classify for one call. Monomorphized per tool, so the fast path
    /// parses the argument text straight into `T::Args` with no intermediate `Value`.
    async fn run(
        &self,
        call_id: String,
        arguments: String,
        session: &Session,
        registry: &Inner,
    ) -> Outcome {
        let started = Instant::now();
        let spec = &self.spec;

        // Validation seam: shape, then field rules, then semantics.
        let args = match shape::parse::<T::Args>(&arguments) {
            Ok(args) => args,
            Err(e) => {
                let failure = shape::failure::<T::Args>(
                    &arguments,
                    e.as_ref(),
                    &spec.input_schema,
                    &self.shape,
                );
                return self.rejected(call_id, arguments, failure, started);
            }
        };
        let mut report = Violations::new();
        T::check_fields(&args, &mut report);
        if !report.is_empty() {
            let violations = report.into_vec();
            let mut failure = Failure::new(
                ErrorKind::SchemaMismatch,
                crate::validate::summarize(&violations),
            );
            failure.violations = violations;
            failure.expected_schema = Some(Arc::clone(&spec.input_schema));
            return self.rejected(call_id, arguments, failure, started);
        }
        if let Err(e) = T::check_semantics(&args) {
            return self.rejected(
                call_id,
                arguments,
                validation_failure(e, ErrorKind::SemanticInvalid),
                started,
            );
        }
        if let Some(missing) = spec.meta.scopes.iter().find(|s| !session.has_scope(s)) {
            let failure = Failure::new(
                ErrorKind::Unauthorized,
                format!(
                    "this conversation may not call `{}`: it lacks the `{missing}` scope",
                    spec.name
                ),
            );
            return self.rejected(call_id, arguments, failure, started);
        }
        if let Err(e) = T::authorize(&args, session) {
            return self.rejected(
                call_id,
                arguments,
                validation_failure(e, ErrorKind::Unauthorized),
                started,
            );
        }

        // Execution seam: one bounded attempt, panics contained.
        let key = spec
            .meta
            .takes_idempotency_key
            .then(|| IdempotencyKey::derive(session.idempotency_scope(), &spec.name, &call_id));
        let invocation = Invocation {
            call_id: &call_id,
            tool: &spec.name,
            session,
            key: key.as_ref(),
            attempt: 1,
            deadline: started + spec.timeout,
            state: &registry.state,
        };
        let result = execute::attempt(
            &spec.name,
            spec.timeout,
            self.tool.invoke(args, &invocation),
        )
        .await;

        // Interpretation seam.
        let mut outcome = match result.map_err(ToolError::into_failure) {
            Ok(output) => match interpret::result(&spec.name, &output) {
                Ok((status, data)) => {
                    Outcome::success(call_id, Arc::clone(&spec.name), status, data)
                }
                Err(failure) => Outcome::failed(call_id, Arc::clone(&spec.name), failure),
            },
            Err(failure) => Outcome::failed(call_id, Arc::clone(&spec.name), failure),
        };
        if outcome.failure.is_some() {
            // Kept for debugging a failed call; dropped on success, never in the envelope.
            outcome.raw_arguments = Some(arguments);
        }
        outcome.attempts = 1;
        outcome.elapsed = started.elapsed();
        outcome
    }

    fn rejected(
        &self,
        call_id: String,
        arguments: String,
        failure: Failure,
        started: Instant,
    ) -> Outcome {
        let mut outcome = Outcome::failed(call_id, Arc::clone(&self.spec.name), failure);
        outcome.attempts = 1;
        outcome.raw_arguments = Some(arguments);
        outcome.elapsed = started.elapsed();
        outcome
    }
}

/// A validator's error as a validation-seam failure: its own kind when it names one of the
/// validation seam, `default` otherwise.
fn validation_failure(e: ToolError, default: ErrorKind) -> Failure {
    let mut failure = e.into_failure();
    if failure.kind.seam() != Seam::Validation {
        failure.kind = default;
        failure.retryable = default.model_retryable();
    }
    failure
}

struct Inner {
    tools: HashMap<Arc<str>, Box<dyn DynTool>>,
    specs: Vec<ToolSpec>,
    names: Arc<[String]>,
    state: Arc<StateMap>,
}

/// The tools a model may call, and the pipeline each call runs through. Cheap to clone.
///
/// Build one with [`Registry::builder`] or collect every `#[tool]` of the binary with
/// [`Registry::from_collected`].
#[derive(Clone)]
pub struct Registry {
    inner: Arc<Inner>,
}

impl Registry {
    /// An empty builder.
    pub fn builder() -> RegistryBuilder {
        RegistryBuilder::default()
    }

    /// A builder holding every tool defined with `#[tool]` anywhere in the binary, to add state
    /// or a default timeout to before building.
    pub fn collected() -> RegistryBuilder {
        let mut builder = RegistryBuilder::default();
        for entry in inventory::iter::<CollectedTool> {
            builder = (entry.register)(builder);
        }
        builder
    }

    /// A registry of every tool defined with `#[tool]` anywhere in the binary.
    pub fn from_collected() -> Result<Registry, BuildError> {
        Registry::collected().build()
    }

    /// Every tool's spec, sorted by name.
    pub fn specs(&self) -> &[ToolSpec] {
        &self.inner.specs
    }

    /// One tool's spec.
    pub fn spec(&self, name: &str) -> Option<&ToolSpec> {
        self.inner.tools.get(name).map(|t| t.spec())
    }

    /// The tool names, sorted.
    pub fn names(&self) -> &[String] {
        &self.inner.names
    }

    /// Runs a call in an anonymous session. Never fails and never panics: every problem is a
    /// classified [`Outcome`].
    pub async fn call(&self, call: ToolCall) -> Outcome {
        self.call_in(&Session::anonymous(), call).await
    }

    /// Runs a call inside a conversation's [`Session`] (principal, scopes, idempotency scope).
    pub async fn call_in(&self, session: &Session, call: ToolCall) -> Outcome {
        let (id, name, arguments) = call.into_parts();
        match self.inner.tools.get(name.as_str()) {
            Some(tool) => tool.dispatch(id, arguments, session, &self.inner).await,
            None => self.unknown_tool(id, name, arguments),
        }
    }

    fn unknown_tool(&self, call_id: String, name: String, arguments: String) -> Outcome {
        let shown = if name.chars().count() <= 64 {
            format!("'{name}'")
        } else {
            preview_str(&name)
        };
        let mut failure = Failure::new(
            ErrorKind::UnknownTool,
            format!("{shown} is not an available tool; call one of available_tools instead"),
        );
        failure.available_tools = Some(Arc::clone(&self.inner.names));
        let mut outcome = Outcome::failed(call_id, Arc::from(name), failure);
        outcome.raw_arguments = Some(arguments);
        outcome
    }
}

impl fmt::Debug for Registry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Registry")
            .field("tools", &self.inner.names)
            .finish()
    }
}

type Pending = Box<dyn FnOnce(Duration) -> Box<dyn DynTool> + Send>;

/// Builds a [`Registry`]: tools, shared state, defaults.
///
/// ```
/// # use toolwright_core::Registry;
/// # use std::time::Duration;
/// let registry = Registry::builder().default_timeout(Duration::from_secs(5)).build().unwrap();
/// assert!(registry.specs().is_empty());
/// ```
pub struct RegistryBuilder {
    pending: Vec<(&'static str, Pending)>,
    state: StateMap,
    default_timeout: Duration,
}

impl Default for RegistryBuilder {
    fn default() -> Self {
        RegistryBuilder {
            pending: Vec::new(),
            state: StateMap::new(),
            default_timeout: DEFAULT_TIMEOUT,
        }
    }
}

impl RegistryBuilder {
    /// Adds a tool. Two tools with one name make [`RegistryBuilder::build`] fail.
    pub fn tool<T: Tool>(mut self, tool: T) -> Self {
        let pending: Pending = Box::new(move |default_timeout| {
            Box::new(Entry {
                spec: ToolSpec::of::<T>(default_timeout),
                tool,
                shape: ShapeValidator::default(),
            })
        });
        self.pending.push((T::META.name, pending));
        self
    }

    /// Adds shared state, handed to tools that take a [`State<T>`](crate::State) parameter.
    pub fn state<T: Send + Sync + 'static>(mut self, value: T) -> Self {
        let value: Arc<dyn Any + Send + Sync> = Arc::new(value);
        self.state.insert(std::any::TypeId::of::<T>(), value);
        self
    }

    /// The per-attempt timeout of tools that declare no `timeout_ms` (default 30 s).
    pub fn default_timeout(mut self, timeout: Duration) -> Self {
        self.default_timeout = timeout;
        self
    }

    /// Builds the registry; fails on duplicate names and on missing shared state.
    pub fn build(self) -> Result<Registry, BuildError> {
        let mut tools: HashMap<Arc<str>, Box<dyn DynTool>> =
            HashMap::with_capacity(self.pending.len());
        for (name, make) in self.pending {
            if tools.contains_key(name) {
                return Err(BuildError::DuplicateTool(name.to_owned()));
            }
            let tool = make(self.default_timeout);
            for need in tool.required_state() {
                if !self.state.contains_key(&need.type_id) {
                    return Err(BuildError::MissingState {
                        tool: name.to_owned(),
                        state: need.type_name,
                    });
                }
            }
            tools.insert(Arc::clone(&tool.spec().name), tool);
        }
        let mut specs: Vec<ToolSpec> = tools.values().map(|t| t.spec().clone()).collect();
        specs.sort_by(|a, b| a.name.cmp(&b.name));
        let names: Arc<[String]> = specs.iter().map(|s| s.name.to_string()).collect();
        Ok(Registry {
            inner: Arc::new(Inner {
                tools,
                specs,
                names,
                state: Arc::new(self.state),
            }),
        })
    }
}

/// Why a registry could not be built.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum BuildError {
    /// Two tools share a name; a model could not tell them apart.
    DuplicateTool(String),
    /// A tool takes `State<T>` but no `T` was given to [`RegistryBuilder::state`].
    MissingState {
        /// The tool.
        tool: String,
        /// The missing state's type.
        state: &'static str,
    },
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BuildError::DuplicateTool(name) => {
                write!(f, "two tools are named `{name}`; tool names must be unique")
            }
            BuildError::MissingState { tool, state } => {
                write!(f, "tool `{tool}` takes `State<{state}>`, but the registry has no `{state}`: add `.state(value)` to the builder")
            }
        }
    }
}

impl std::error::Error for BuildError {}

/// An auto-collection entry: `#[tool]` submits one per tool so [`Registry::from_collected`]
/// finds every tool in the binary without a hand-kept list.
pub struct CollectedTool {
    register: fn(RegistryBuilder) -> RegistryBuilder,
}

impl CollectedTool {
    /// An entry that adds one tool to a builder.
    pub const fn new(register: fn(RegistryBuilder) -> RegistryBuilder) -> Self {
        CollectedTool { register }
    }
}

inventory::collect!(CollectedTool);
