//! The [`Tool`] trait and the metadata a registry knows a tool by ([`ToolMeta`], [`ToolSpec`]).
//!
//! `#[tool]` implements [`Tool`] for you. Implement it by hand for tools that carry state
//! (a client, a connection pool) or whose arguments you want to define yourself:
//!
//! ```
//! use std::future::Future;
//! use schemars::JsonSchema;
//! use serde::Deserialize;
//! use toolwright_core::{Invocation, Tool, ToolError, ToolMeta};
//!
//! #[derive(Deserialize, JsonSchema)]
//! #[serde(deny_unknown_fields)]
//! struct EchoArgs {
//!     /// Text to repeat.
//!     text: String,
//! }
//!
//! struct Echo;
//!
//! impl Tool for Echo {
//!     type Args = EchoArgs;
//!     type Output = String;
//!     const META: ToolMeta = ToolMeta::new("echo", "Repeat the text back.").read_only();
//!
//!     fn invoke(&self, args: EchoArgs, _: &Invocation<'_>) -> impl Future<Output = Result<String, ToolError>> + Send {
//!         async move { Ok(args.text) }
//!     }
//! }
//! ```

use std::any::TypeId;
use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{Map, Value};

use crate::call::{Invocation, Session};
use crate::error::ToolError;
use crate::idempotency::Fingerprint;
use crate::outcome::Violations;

/// A tool the model can call: typed arguments in, a serializable result or a classified
/// [`ToolError`] out.
///
/// The registry runs every call through the same pipeline: the argument text is parsed straight
/// into [`Tool::Args`] (shape), [`Tool::check_fields`] reports every field-rule violation,
/// [`Tool::check_semantics`] applies cross-field rules, and only then does [`Tool::invoke`] run,
/// bounded by the tool's timeout, with panics contained.
pub trait Tool: Send + Sync + 'static {
    /// The arguments, deserialized from the model's JSON. Its JSON Schema is the tool's input
    /// schema; it should deny unknown fields.
    type Args: DeserializeOwned + JsonSchema + Send + 'static;
    /// The result handed back to the model. Its JSON Schema is the tool's output schema.
    type Output: Serialize + JsonSchema + Send + 'static;

    /// Name, description and policy.
    const META: ToolMeta;

    /// Pushes every field-rule violation of `args` into `report` (all of them, not the first).
    fn check_fields(args: &Self::Args, report: &mut Violations) {
        let _ = (args, report);
    }

    /// Cross-field business rules, run after the field rules passed. An error here is reported
    /// as `semantic_invalid` unless it names another validation kind.
    fn check_semantics(args: &Self::Args) -> Result<(), ToolError> {
        let _ = args;
        Ok(())
    }

    /// Provenance: pushes a violation for every identifier argument
    /// (`#[arg(grounded = "kind")]`) whose value no tool returned in this session. Runs after
    /// the semantic check; a violation is reported as `ungrounded_identifier`.
    fn check_grounded(args: &Self::Args, session: &Session, report: &mut Violations) {
        let _ = (args, session, report);
    }

    /// Authorization: may this session invoke the tool with these arguments? Runs after the
    /// semantic check and after the session's scopes were checked against
    /// [`ToolMeta::scopes`]. An error here is reported as `unauthorized` unless it names another
    /// validation kind.
    fn authorize(args: &Self::Args, session: &Session) -> Result<(), ToolError> {
        let _ = (args, session);
        Ok(())
    }

    /// Shared state the tool reads with [`Invocation::state`]; the registry refuses to build
    /// when one is missing, instead of failing calls at run time.
    fn required_state() -> Vec<StateRequirement> {
        Vec::new()
    }

    /// Runs one attempt of the tool; a retry calls it again with the same arguments and the same
    /// idempotency key. The future is dropped when the attempt times out or the caller gives
    /// up: see [what cancellation means for a tool body](crate::execute#cancellation-what-a-tool-author-must-know).
    fn invoke(
        &self,
        args: Self::Args,
        invocation: &Invocation<'_>,
    ) -> impl Future<Output = Result<Self::Output, ToolError>> + Send;

    /// The answer when the tool itself is unavailable (`#[tool(fallback = path)]`): a cached
    /// snapshot, a narrower source, a queued request. Called only when [`ToolMeta::fallback`]
    /// is declared, once, after the call ended `circuit_open`, `unavailable`, `timeout` or
    /// `rate_limited` and no attempt may have acted (or the tool is idempotent). Its result
    /// reaches the model marked `"degraded": true, "source": "fallback"`; its failure leaves
    /// the tool's own failure in place. It runs under the tool's timeout, with panics contained,
    /// and is never retried.
    fn fallback(
        &self,
        args: Self::Args,
        invocation: &Invocation<'_>,
    ) -> impl Future<Output = Result<Self::Output, ToolError>> + Send {
        let _ = (args, invocation);
        async {
            Err(ToolError::unavailable(
                "the tool declares a fallback but does not implement `Tool::fallback`",
            ))
        }
    }
}

/// A piece of shared state a tool needs, see [`Tool::required_state`].
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

    fn to_json(self) -> Value {
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
    fn cmp_json(self, json: &Value) -> Option<std::cmp::Ordering> {
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

    /// Declares that [`Tool::fallback`] answers when the tool is unavailable.
    pub const fn fallback(mut self) -> Self {
        self.fallback = true;
        self
    }

    /// Where the tool's result carries identifiers the session should know
    /// ([`provenance`](crate::guard::provenance)).
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

    /// The tool's name.
    pub const fn name(&self) -> &'static str {
        self.name
    }
}

/// Everything a registry, a provider adapter or a UI needs to know about a registered tool.
///
/// ```
/// # use toolwright_core::ToolSpec;
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
}

impl ToolSpec {
    pub(crate) fn of<T: Tool>(default_timeout: Duration) -> Self {
        ToolSpec::from_parts(
            T::META,
            root_schema::<T::Args>(),
            root_schema::<T::Output>(),
            std::any::TypeId::of::<T::Output>()
                == std::any::TypeId::of::<crate::content::Content>(),
            default_timeout,
        )
    }

    /// The spec from the tool's declaration and its schemas: compiled once, not once per tool.
    fn from_parts(
        meta: ToolMeta,
        mut input: Value,
        output: Value,
        returns_content: bool,
        default_timeout: Duration,
    ) -> Self {
        if let Some(props) = input.get_mut("properties").and_then(Value::as_object_mut) {
            for field in meta.fields {
                if let Some(prop) = props.get_mut(field.name).and_then(Value::as_object_mut) {
                    apply_rules(prop, field.rules);
                    if let Some(kind) = field.grounded {
                        // No JSON Schema keyword says "an id you were given": say it in words.
                        let note = format!(
                            "Must be {} id returned by a tool in this conversation; never invent one.",
                            article(kind)
                        );
                        let description = match prop.get("description").and_then(Value::as_str) {
                            Some(d) => format!("{} {note}", d.trim_end()),
                            None => note,
                        };
                        prop.insert("description".into(), Value::String(description));
                    }
                }
            }
        }
        if let Some(obj) = input.as_object_mut() {
            // The tool's description is the description; the argument struct's doc is noise.
            obj.remove("description");
            // An argument struct with no fields still has to be an object for every provider.
            obj.entry("properties")
                .or_insert_with(|| Value::Object(Map::new()));
        }
        ToolSpec {
            name: Arc::from(meta.name),
            meta,
            input_schema: Arc::new(crate::outcome::ToolSchema::new(input)),
            output_schema: Arc::new(output),
            timeout: meta.timeout.unwrap_or(default_timeout),
            returns_content,
        }
    }

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

    /// Where the tool's result carries identifiers ([`provenance`](crate::guard::provenance)).
    pub fn grounds(&self) -> &'static [Grounds] {
        self.meta.grounds
    }

    /// Whether the tool has a fallback ([`Tool::fallback`]).
    pub fn has_fallback(&self) -> bool {
        self.meta.fallback
    }

    /// Whether the tool body receives an idempotency key.
    pub fn takes_idempotency_key(&self) -> bool {
        self.meta.takes_idempotency_key
    }

    /// Per-argument metadata (rules, sensitivity, provenance).
    pub fn fields(&self) -> &'static [FieldMeta] {
        self.meta.fields
    }
}

pub(crate) fn root_schema<T: JsonSchema + ?Sized>() -> Value {
    let generator = schemars::generate::SchemaSettings::draft2020_12().into_generator();
    tidy_root(generator.into_root_schema_for::<T>().to_value())
}

/// A generated root schema without what a model does not need.
fn tidy_root(mut value: Value) -> Value {
    if let Some(obj) = value.as_object_mut() {
        // The draft is fixed by the settings; the title is the Rust type's name, noise to a model.
        obj.remove("$schema");
        obj.remove("title");
    }
    bound_integers(&mut value, 0);
    value
}

/// A Rust integer type: its name, width and range, found by the name serde uses in its errors
/// or by the `format` schemars writes for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct IntegerType {
    pub(crate) rust: &'static str,
    pub(crate) bits: u32,
    pub(crate) min: i128,
    pub(crate) max: u128,
}

impl IntegerType {
    const ALL: &'static [(&'static str, &'static str, IntegerType)] = &[
        ("u8", "uint8", IntegerType::new("u8", 8, 0, u8::MAX as u128)),
        (
            "u16",
            "uint16",
            IntegerType::new("u16", 16, 0, u16::MAX as u128),
        ),
        (
            "u32",
            "uint32",
            IntegerType::new("u32", 32, 0, u32::MAX as u128),
        ),
        (
            "u64",
            "uint64",
            IntegerType::new("u64", 64, 0, u64::MAX as u128),
        ),
        (
            "u128",
            "uint128",
            IntegerType::new("u128", 128, 0, u128::MAX),
        ),
        (
            "usize",
            "uint",
            IntegerType::new("usize", usize::BITS, 0, usize::MAX as u128),
        ),
        (
            "i8",
            "int8",
            IntegerType::new("i8", 8, i8::MIN as i128, i8::MAX as u128),
        ),
        (
            "i16",
            "int16",
            IntegerType::new("i16", 16, i16::MIN as i128, i16::MAX as u128),
        ),
        (
            "i32",
            "int32",
            IntegerType::new("i32", 32, i32::MIN as i128, i32::MAX as u128),
        ),
        (
            "i64",
            "int64",
            IntegerType::new("i64", 64, i64::MIN as i128, i64::MAX as u128),
        ),
        (
            "i128",
            "int128",
            IntegerType::new("i128", 128, i128::MIN, i128::MAX as u128),
        ),
        (
            "isize",
            "int",
            IntegerType::new("isize", isize::BITS, isize::MIN as i128, isize::MAX as u128),
        ),
    ];

    const fn new(rust: &'static str, bits: u32, min: i128, max: u128) -> Self {
        IntegerType {
            rust,
            bits,
            min,
            max,
        }
    }

    /// The type serde names `rust` (`"u32"`) in its errors.
    pub(crate) fn by_rust_name(rust: &str) -> Option<IntegerType> {
        Self::ALL.iter().find(|t| t.0 == rust).map(|t| t.2)
    }

    /// The type schemars writes as `format` (`"uint32"`).
    pub(crate) fn by_format(format: &str) -> Option<IntegerType> {
        Self::ALL.iter().find(|t| t.1 == format).map(|t| t.2)
    }

    /// "a 32-bit unsigned integer (0 to 4294967295)", for a model to act on.
    pub(crate) fn describe(&self) -> String {
        let sign = if self.min < 0 { "signed" } else { "unsigned" };
        let article = if self.bits == 8 { "an" } else { "a" };
        format!(
            "{article} {}-bit {sign} integer ({} to {})",
            self.bits, self.min, self.max
        )
    }

    /// The bounds as JSON numbers, when a JSON double holds them exactly and every provider
    /// reads them (up to 32 bits; 64-bit bounds round when read as doubles).
    fn schema_bounds(&self) -> Option<(Value, Value)> {
        if self.bits > 32 {
            return None;
        }
        let min = i64::try_from(self.min).ok()?;
        let max = u64::try_from(self.max).ok()?;
        Some((Value::from(min), Value::from(max)))
    }
}

/// Writes the range of every bounded integer type (schemars' `format: "uint32"`, `"int8"`, ...)
/// as `minimum`/`maximum` where the schema has none, or one looser than the type allows, so a
/// provider or a model reading the schema knows `300` does not fit a `u8`. A declared bound
/// stricter than the type's is kept; an `enum` already says which values fit.
fn bound_integers(schema: &mut Value, depth: usize) {
    if depth > 64 {
        return;
    }
    match schema {
        Value::Object(node) => {
            let bounds = node
                .get("format")
                .and_then(Value::as_str)
                .and_then(IntegerType::by_format)
                .filter(|_| types_of(node).contains(&"integer"))
                .filter(|_| !node.contains_key("enum") && !node.contains_key("const"))
                .and_then(|t| t.schema_bounds());
            if let Some((min, max)) = bounds {
                let looser =
                    |old: Option<&Value>, new: &Value, stricter: fn(f64, f64) -> bool| match (
                        old.and_then(Value::as_f64),
                        new.as_f64(),
                    ) {
                        (Some(old), Some(new)) => stricter(new, old),
                        _ => true,
                    };
                if looser(node.get("minimum"), &min, |new, old| new > old) {
                    node.insert("minimum".into(), min);
                }
                if looser(node.get("maximum"), &max, |new, old| new < old) {
                    node.insert("maximum".into(), max);
                }
            }
            for (key, child) in node.iter_mut() {
                match (key.as_str(), child) {
                    // Maps from a name to a schema: a property may be called `default`.
                    (
                        "properties" | "$defs" | "definitions" | "patternProperties",
                        Value::Object(map),
                    ) => {
                        for schema in map.values_mut() {
                            bound_integers(schema, depth + 1);
                        }
                    }
                    // Values, not schemas: a default or an example is left as written.
                    ("default" | "examples" | "const" | "enum", _) => {}
                    (_, child) => bound_integers(child, depth + 1),
                }
            }
        }
        Value::Array(items) => {
            for item in items {
                bound_integers(item, depth + 1);
            }
        }
        _ => {}
    }
}

fn types_of(prop: &Map<String, Value>) -> Vec<&str> {
    match prop.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

/// Writes the schema keywords of `rules` into a property schema.
fn apply_rules(prop: &mut Map<String, Value>, rules: &[Rule]) {
    let types: Vec<String> = types_of(prop).into_iter().map(str::to_owned).collect();
    let has = |t: &str| types.iter().any(|x| x == t);
    let nullable = has("null");
    for rule in rules {
        match *rule {
            Rule::Range { min, max } => {
                if let Some(min) = min {
                    tighten(prop, "minimum", min, std::cmp::Ordering::Greater);
                }
                if let Some(max) = max {
                    tighten(prop, "maximum", max, std::cmp::Ordering::Less);
                }
            }
            Rule::Length { min, max } => {
                let (lo, hi) = if has("array") {
                    ("minItems", "maxItems")
                } else if has("object") {
                    ("minProperties", "maxProperties")
                } else {
                    ("minLength", "maxLength")
                };
                if let Some(min) = min {
                    prop.insert(lo.into(), Value::from(min));
                }
                if let Some(max) = max {
                    prop.insert(hi.into(), Value::from(max));
                }
            }
            Rule::Pattern(p) => {
                prop.insert("pattern".into(), Value::from(p));
            }
            Rule::OneOf(options) => {
                let mut values: Vec<Value> = options.iter().map(|s| Value::from(*s)).collect();
                if nullable {
                    values.push(Value::Null);
                }
                prop.insert("enum".into(), Value::Array(values));
            }
            Rule::OneOfNumbers(options) => {
                let mut values: Vec<Value> = options.iter().map(|n| n.to_json()).collect();
                if nullable {
                    values.push(Value::Null);
                }
                prop.insert("enum".into(), Value::Array(values));
            }
            Rule::Custom(_) => {}
        }
    }
}

/// Sets a numeric bound unless the schema already has a stricter one (schemars writes
/// `minimum: 0` for unsigned integers; a declared `min = 1` tightens it, `min = -5` does not).
/// `stricter` is how the new bound compares with the old one when it is the stricter: greater
/// for `minimum`, less for `maximum`; integers compare exactly.
fn tighten(prop: &mut Map<String, Value>, key: &str, bound: Number, stricter: std::cmp::Ordering) {
    let keep_old = prop
        .get(key)
        .and_then(|old| bound.cmp_json(old))
        .is_some_and(|order| order != stricter);
    if !keep_old {
        prop.insert(key.into(), bound.to_json());
    }
}

// The fingerprint of a tool's call is defined here, beside the spec it reads, so that the
// idempotency module never depends on the tool module.
impl Fingerprint {
    /// The fingerprint of a call of the tool `spec` describes: equal for two argument texts
    /// exactly when the tool receives equal values from them. This is the fingerprint the
    /// registry stores beside an idempotency key and shows an approver.
    ///
    /// The tool's input schema guides the canonical form: a `null` is dropped only where serde
    /// erases it (an optional, nullable property without a default, i.e. an `Option`
    /// parameter), and kept in maps, arrays and properties with a default; a property left out
    /// counts as its schema `default`; integers and decimals are exact from their text, except
    /// where schemars marks an `f64`/`f32` (`format: "double"`/`"float"`), where a number is
    /// the float serde reads. Where the schema cannot tell (an enum with data, a
    /// `serde_json::Value`) every `null` and every exact number counts.
    ///
    /// ```
    /// # use toolwright_core::{idempotency::Fingerprint, Registry};
    /// # fn demo(registry: &Registry) {
    /// let spec = registry.spec("update_profile").unwrap();
    /// // `fields: HashMap<String, Option<String>>`: a null clears a field, so it counts.
    /// assert_ne!(
    ///     Fingerprint::for_tool(spec, r#"{"fields":{}}"#),
    ///     Fingerprint::for_tool(spec, r#"{"fields":{"email":null}}"#),
    /// );
    /// # }
    /// ```
    pub fn for_tool(spec: &ToolSpec, arguments: &str) -> Fingerprint {
        Fingerprint::with_schema(spec.name(), Some(spec.input_schema()), arguments)
    }

    /// The canonical text [`Fingerprint::for_tool`](crate::idempotency::Fingerprint::for_tool)
    /// hashes, for debugging a mismatch.
    pub fn canonical_text_for(spec: &ToolSpec, arguments: &str) -> Option<String> {
        Self::canonical_text_with(spec.input_schema(), arguments)
    }
}

/// Where a tool's result carries ids of a kind (`#[tool(grounds(kind = "path"))]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Grounds {
    kind: &'static str,
    path: &'static str,
}

impl Grounds {
    /// Ids of `kind` at `path` in the result: field names joined by `.`, arrays walked at
    /// every step; `""` is the result itself.
    pub const fn new(kind: &'static str, path: &'static str) -> Self {
        Grounds { kind, path }
    }

    /// The kind of id.
    pub const fn kind(&self) -> &'static str {
        self.kind
    }

    /// Where in the result.
    pub const fn path(&self) -> &'static str {
        self.path
    }

    /// Every id this declaration finds in a result.
    pub(crate) fn ids_in(&self, result: &Value, out: &mut Vec<String>) {
        let steps: Vec<&str> = self.path.split('.').filter(|s| !s.is_empty()).collect();
        walk(result, &steps, out);
    }
}

fn walk(value: &Value, steps: &[&str], out: &mut Vec<String>) {
    match (value, steps.split_first()) {
        (Value::Array(items), _) => items.iter().for_each(|item| walk(item, steps, out)),
        (Value::Object(map), Some((first, rest))) => {
            if let Some(next) = map.get(*first) {
                walk(next, rest, out);
            }
        }
        (Value::String(s), None) => out.push(s.clone()),
        (Value::Number(n), None) => out.push(n.to_string()),
        _ => {}
    }
}

/// "an order", "a customer".
pub(crate) fn article(kind: &str) -> String {
    let vowel = kind
        .chars()
        .next()
        .is_some_and(|c| "aeiouAEIOU".contains(c));
    format!("{} `{kind}`", if vowel { "an" } else { "a" })
}
