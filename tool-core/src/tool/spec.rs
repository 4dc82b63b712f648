//! What a registry knows a tool by: its metadata as declared ([`ToolMeta`]), per-field rules
//! ([`FieldMeta`], [`Rule`], [`Number`]), its effect, and the spec built from them with its
//! schemas ([`ToolSpec`]).

use std::any::TypeId;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use super::grounds::Grounds;

/// A piece of shared state a tool needs, see [`Tool::required_state`](crate::Tool::required_state).
#[derive(Debug, Clone, Copy)]
pub struct StateRequirement {
    pub(crate) type_id: TypeId,
    pub(crate) type_name: &'static str,
}

impl StateRequirement {
    /// The requirement for state of type `T`.
    pub fn of<T: Send + Sync + 'static>() -> Self {
        StateRequirement {
            type_id: TypeId::of::<T>(),
            type_name: std::any::type_name::<T>(),
        }
    }
}

/// A number as written in a declaration, so schemas keep `5` an integer and `0.5` a float.
///
/// Integers are kept exact: a bound of `u64::MAX` is 18446744073709551615, not the `f64` nearest
/// to it, and [`rules::range`](crate::validate::rules::range) compares integer values with it
/// exactly.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Number(Repr);

#[derive(Debug, Clone, Copy, PartialEq)]
enum Repr {
    /// Between `i64::MIN` and `u64::MAX`.
    Integer(i128),
    Float(f64),
}

impl Number {
    /// An integer bound.
    pub const fn int(value: i64) -> Self {
        Number(Repr::Integer(value as i128))
    }

    /// An integer bound above `i64::MAX`.
    pub const fn uint(value: u64) -> Self {
        Number(Repr::Integer(value as i128))
    }

    /// A floating-point bound.
    pub const fn float(value: f64) -> Self {
        Number(Repr::Float(value))
    }

    /// The value as `f64`: the nearest one for an integer beyond 2^53.
    pub const fn value(self) -> f64 {
        match self.0 {
            Repr::Integer(v) => v as f64,
            Repr::Float(v) => v,
        }
    }

    /// The value, exact, when it is an integer.
    pub const fn integer(self) -> Option<i128> {
        match self.0 {
            Repr::Integer(v) => Some(v),
            Repr::Float(_) => None,
        }
    }

    pub(crate) fn to_json(self) -> Value {
        match self.0 {
            Repr::Integer(v) => match (i64::try_from(v), u64::try_from(v)) {
                (Ok(v), _) => Value::from(v),
                (_, Ok(v)) => Value::from(v),
                // The constructors take an `i64` or a `u64`.
                _ => Value::Null,
            },
            Repr::Float(v) => serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number),
        }
    }

    /// How `self` compares with a JSON number, exactly when both are integers.
    pub(crate) fn cmp_json(self, json: &Value) -> Option<std::cmp::Ordering> {
        let exact = json
            .as_i64()
            .map(i128::from)
            .or_else(|| json.as_u64().map(i128::from));
        match (self.integer(), exact) {
            (Some(v), Some(other)) => Some(v.cmp(&other)),
            _ => self.value().partial_cmp(&json.as_f64()?),
        }
    }
}

impl fmt::Display for Number {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Repr::Integer(v) => write!(f, "{v}"),
            Repr::Float(v) => write!(f, "{v}"),
        }
    }
}

/// One declared argument rule. Each is both a JSON Schema keyword in the input schema and a
/// runtime check, generated from one `#[arg(...)]` declaration so the two cannot drift apart.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub enum Rule {
    /// `#[arg(range(min = .., max = ..))]`: `minimum` / `maximum`.
    Range {
        /// Inclusive lower bound.
        min: Option<Number>,
        /// Inclusive upper bound.
        max: Option<Number>,
    },
    /// `#[arg(length(min = .., max = ..))]`: `minLength`/`maxLength` on strings (in
    /// characters), `minItems`/`maxItems` on lists, `minProperties`/`maxProperties` on maps.
    Length {
        /// Inclusive lower bound.
        min: Option<u64>,
        /// Inclusive upper bound.
        max: Option<u64>,
    },
    /// `#[arg(pattern = "..")]`: `pattern`, searched anywhere in the string as JSON Schema does;
    /// anchor it with `^...$` to match the whole value.
    Pattern(&'static str),
    /// `#[arg(one_of = [..])]` with strings: `enum`.
    OneOf(&'static [&'static str]),
    /// `#[arg(one_of = [..])]` with numbers: `enum`.
    OneOfNumbers(&'static [Number]),
    /// `#[arg(validate = path)]`: a custom check, named for documentation; no schema keyword.
    Custom(&'static str),
}

/// Metadata about one argument of a tool.
#[derive(Debug, Clone, Copy)]
pub struct FieldMeta {
    name: &'static str,
    rules: &'static [Rule],
    sensitive: bool,
    grounded: Option<&'static str>,
}

impl FieldMeta {
    /// An argument with no rules.
    pub const fn new(name: &'static str) -> Self {
        FieldMeta {
            name,
            rules: &[],
            sensitive: false,
            grounded: None,
        }
    }

    /// The argument's declared rules.
    pub const fn rules(mut self, rules: &'static [Rule]) -> Self {
        self.rules = rules;
        self
    }

    /// Marks the argument as sensitive: never logged, redacted in traces.
    pub const fn sensitive(mut self) -> Self {
        self.sensitive = true;
        self
    }

    /// Marks the argument as an identifier of the given kind that must have been returned by an
    /// earlier tool call (provenance).
    pub const fn grounded(mut self, kind: &'static str) -> Self {
        self.grounded = Some(kind);
        self
    }

    /// The argument's name as the model writes it.
    pub const fn name(&self) -> &'static str {
        self.name
    }

    /// The declared rules.
    pub const fn declared_rules(&self) -> &'static [Rule] {
        self.rules
    }

    /// Whether the argument is sensitive.
    pub const fn is_sensitive(&self) -> bool {
        self.sensitive
    }

    /// The identifier kind the argument must be grounded in, if any.
    pub const fn grounded_kind(&self) -> Option<&'static str> {
        self.grounded
    }
}

/// What calling a tool does to the world, which decides how the registry may repeat it.
///
/// | effect | `#[tool(..)]` | retried by the framework | idempotency store |
/// |---|---|---|---|
/// | [`ReadOnly`](Effect::ReadOnly) | `read_only` | transient failures, freely | never |
/// | [`Idempotent`](Effect::Idempotent) | `idempotent = true` | transient failures, freely | never |
/// | [`SideEffecting`](Effect::SideEffecting) | the default | only with the same `IdempotencyKey`, or when the failure proves nothing started | every call: replayed, refused or run once |
///
/// The default matches MCP's `idempotentHint`, which is `false` unless a tool says otherwise.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Effect {
    /// Changes nothing: calling it any number of times is safe.
    ReadOnly,
    /// Changes something, but calling it twice has the same effect as calling it once.
    Idempotent,
    /// Each call may act anew (a refund, an email): the registry runs it at most once per key.
    #[default]
    SideEffecting,
}

/// Static facts about a tool: what `#[tool(...)]` declares. Built with `const` methods so the
/// macro (or you) can write it as an associated constant.
#[derive(Debug, Clone, Copy)]
pub struct ToolMeta {
    pub(crate) name: &'static str,
    pub(crate) description: &'static str,
    pub(crate) timeout: Option<Duration>,
    pub(crate) effect: Effect,
    pub(crate) retries: Option<u32>,
    pub(crate) scopes: &'static [&'static str],
    pub(crate) requires_approval: bool,
    pub(crate) fallback: bool,
    pub(crate) grounds: &'static [Grounds],
    pub(crate) takes_idempotency_key: bool,
    pub(crate) fields: &'static [FieldMeta],
    pub(crate) examples: &'static [&'static str],
    pub(crate) task: bool,
    pub(crate) requires_client: &'static [&'static str],
    /// Runs only as a task ([`ToolMeta::task_only`]).
    pub(crate) task_only: bool,
    /// Declared by toolwright itself (the registry's search tool): may ground the kinds it
    /// keeps for itself.
    pub(crate) internal: bool,
}

impl ToolMeta {
    /// A tool with a name and a description, not idempotent, with the registry's default timeout.
    pub const fn new(name: &'static str, description: &'static str) -> Self {
        ToolMeta {
            name,
            description,
            timeout: None,
            effect: Effect::SideEffecting,
            retries: None,
            scopes: &[],
            requires_approval: false,
            fallback: false,
            grounds: &[],
            takes_idempotency_key: false,
            fields: &[],
            examples: &[],
            task: false,
            requires_client: &[],
            task_only: false,
            internal: false,
        }
    }

    /// Bounds every attempt.
    pub const fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// What calling the tool does ([`Effect`]).
    pub const fn effect(mut self, effect: Effect) -> Self {
        self.effect = effect;
        self
    }

    /// Declares whether calling twice has the same effect as calling once
    /// ([`Effect::Idempotent`] or [`Effect::SideEffecting`]; a read-only tool stays read-only).
    pub const fn idempotent(mut self, idempotent: bool) -> Self {
        self.effect = match (self.effect, idempotent) {
            (Effect::ReadOnly, true) => Effect::ReadOnly,
            (_, true) => Effect::Idempotent,
            (_, false) => Effect::SideEffecting,
        };
        self
    }

    /// Declares that the tool changes nothing ([`Effect::ReadOnly`], which implies idempotent).
    pub const fn read_only(mut self) -> Self {
        self.effect = Effect::ReadOnly;
        self
    }

    /// How many retries after the first attempt the tool allows.
    pub const fn retries(mut self, retries: u32) -> Self {
        self.retries = Some(retries);
        self
    }

    /// Scopes a caller needs to invoke the tool.
    pub const fn scopes(mut self, scopes: &'static [&'static str]) -> Self {
        self.scopes = scopes;
        self
    }

    /// Declares that a human must approve each call.
    pub const fn requires_approval(mut self) -> Self {
        self.requires_approval = true;
        self
    }

    /// Declares that a call may run longer than a client waits for one request: an MCP server
    /// answers it with a task the client polls (`io.modelcontextprotocol/tasks`), once it passed
    /// its checks. Its timeout is the task's bound.
    pub const fn task(mut self) -> Self {
        self.task = true;
        self
    }

    /// The client capabilities the tool cannot work without (`"elicitation"`, `"sampling"`,
    /// `"roots"`): an MCP client that did not declare one is refused before the body runs
    /// (`-32021`, naming the capability). Elsewhere (the agent loop, a plain call) the tool runs, and what it asks is answered by
    /// the session's asker or refused.
    pub const fn requires_client(mut self, capabilities: &'static [&'static str]) -> Self {
        self.requires_client = capabilities;
        self
    }

    /// [`ToolMeta::task`], and a call over MCP runs *only* as a task (`taskSupport:
    /// "required"`): a client that does not take tasks is refused before the body runs
    /// (`-32021`, naming the tasks extension it must declare). Outside MCP
    /// ([`Registry::call`](crate::Registry::call), the agent loop) the tool simply runs, as any
    /// tool does. For work that only makes sense detached from a request: a batch job, a
    /// migration.
    pub const fn task_only(mut self) -> Self {
        self.task = true;
        self.task_only = true;
        self
    }

    /// Declares that [`Tool::fallback`](crate::Tool::fallback) answers when the tool is unavailable.
    pub const fn fallback(mut self) -> Self {
        self.fallback = true;
        self
    }

    /// Where the tool's result carries identifiers the session should know
    /// ([`provenance`](crate::provenance)).
    pub const fn grounds(mut self, grounds: &'static [Grounds]) -> Self {
        self.grounds = grounds;
        self
    }

    /// Declares that the tool body receives an [`IdempotencyKey`](crate::IdempotencyKey).
    pub const fn takes_idempotency_key(mut self) -> Self {
        self.takes_idempotency_key = true;
        self
    }

    /// Per-argument metadata.
    pub const fn fields(mut self, fields: &'static [FieldMeta]) -> Self {
        self.fields = fields;
        self
    }

    /// Example arguments (`#[tool(example = ..)]`), each the JSON text of one arguments
    /// object, in the order declared. [`RegistryBuilder::build`](crate::RegistryBuilder::build)
    /// checks every one against the tool's own rules; the exports show them to the model
    /// ([`ToolSpec::examples`]).
    pub const fn examples(mut self, examples: &'static [&'static str]) -> Self {
        self.examples = examples;
        self
    }

    /// The tool's name.
    pub const fn name(&self) -> &'static str {
        self.name
    }
}

/// Everything a registry, a provider adapter or a UI needs to know about a registered tool.
///
/// ```
/// # use toolwright::ToolSpec;
/// fn describe(spec: &ToolSpec) -> String {
///     format!("{}: {} (timeout {:?})", spec.name(), spec.description(), spec.timeout())
/// }
/// ```
#[derive(Debug, Clone)]
pub struct ToolSpec {
    pub(crate) name: Arc<str>,
    pub(crate) meta: ToolMeta,
    pub(crate) input_schema: Arc<crate::outcome::ToolSchema>,
    pub(crate) output_schema: Arc<Value>,
    pub(crate) timeout: Duration,
    /// The tool returns [`Content`](crate::content::Content): formatters carry its blocks.
    pub(crate) returns_content: bool,
    /// [`ToolMeta::examples`] parsed, for the exports.
    pub(crate) examples: Arc<[Value]>,
}

impl ToolSpec {
    /// The name the model calls the tool by.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// What the tool does, from the function's doc comment.
    pub fn description(&self) -> &str {
        self.meta.description
    }

    /// JSON Schema (draft 2020-12) of the arguments: an object with `additionalProperties: false`.
    pub fn input_schema(&self) -> &Value {
        &self.input_schema
    }

    /// JSON Schema (draft 2020-12) of the result.
    pub fn output_schema(&self) -> &Value {
        &self.output_schema
    }

    /// The per-attempt timeout: the tool's own, else the registry default.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// What calling the tool does to the world.
    pub fn effect(&self) -> Effect {
        self.meta.effect
    }

    /// Whether calling twice has the same effect as calling once (read-only or idempotent).
    pub fn idempotent(&self) -> bool {
        self.meta.effect != Effect::SideEffecting
    }

    /// Whether the tool changes nothing.
    pub fn read_only(&self) -> bool {
        self.meta.effect == Effect::ReadOnly
    }

    /// Retries after the first attempt, when the tool declares them.
    pub fn retries(&self) -> Option<u32> {
        self.meta.retries
    }

    /// Scopes a caller needs.
    pub fn scopes(&self) -> &'static [&'static str] {
        self.meta.scopes
    }

    /// Whether a human must approve each call.
    pub fn requires_approval(&self) -> bool {
        self.meta.requires_approval
    }

    /// Where the tool's result carries identifiers ([`provenance`](crate::provenance)).
    pub fn grounds(&self) -> &'static [Grounds] {
        self.meta.grounds
    }

    /// Whether the tool has a fallback ([`Tool::fallback`](crate::Tool::fallback)).
    pub fn has_fallback(&self) -> bool {
        self.meta.fallback
    }

    /// The client capabilities the tool cannot work without ([`ToolMeta::requires_client`]).
    pub fn requires_client(&self) -> &'static [&'static str] {
        self.meta.requires_client
    }

    /// Whether a call may run as a task, past the request that made it ([`ToolMeta::task`]).
    pub fn is_task(&self) -> bool {
        self.meta.task
    }

    /// Whether a call over MCP runs only as a task ([`ToolMeta::task_only`]).
    pub fn is_task_only(&self) -> bool {
        self.meta.task_only
    }

    /// Whether the tool body receives an idempotency key.
    pub fn takes_idempotency_key(&self) -> bool {
        self.meta.takes_idempotency_key
    }

    /// Per-argument metadata (rules, sensitivity, provenance).
    pub fn fields(&self) -> &'static [FieldMeta] {
        self.meta.fields
    }

    /// Example arguments, in the order declared (`#[tool(example = ..)]`,
    /// [`DynamicToolBuilder::example`](crate::dynamic::DynamicToolBuilder::example)): each an
    /// arguments object that passed the tool's shape, field and semantic checks when the
    /// registry was built. Anthropic exports them as `input_examples`; the other providers,
    /// which have no such field, in the description ([`Export::tool`](crate::providers::Export::tool)).
    /// Each is also a call a test can make (`ToolCall::new(id, spec.name(),
    /// example.to_string())`) and expect past validation.
    pub fn examples(&self) -> &[Value] {
        &self.examples
    }

    /// The examples as declared, JSON text, for the registry's checks.
    pub(crate) fn example_texts(&self) -> &'static [&'static str] {
        self.meta.examples
    }
}

/// The declared examples that are JSON (one that is not is refused when the registry is built).
pub(crate) fn parsed_examples(texts: &[&str]) -> Arc<[Value]> {
    texts
        .iter()
        .filter_map(|text| serde_json::from_str(text).ok())
        .collect()
}
