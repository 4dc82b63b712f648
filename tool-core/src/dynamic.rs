//! Tools defined at run time: a name, a description, a JSON Schema and an async handler over
//! the validated arguments, for tools that are not known when the program is compiled (loaded
//! from another server, a plugin, a database of customer actions).
//!
//! A [`DynamicTool`] runs through the same pipeline as a `#[tool]`: scopes, the arguments
//! checked against its schema with every violation reported (`invalid_json`,
//! `unknown_argument`, `schema_mismatch`, with the same messages and JSON Pointer paths),
//! idempotency keys for a side-effecting tool, approval, timeouts, classified retries, the
//! breaker and the same envelope. The registry and the provider exports cannot tell it from a
//! compiled tool.
//!
//! ```
//! use std::time::Duration;
//! use serde_json::json;
//! use toolwright::{DynamicTool, Effect, Registry, ToolCall};
//!
//! # async fn demo() -> Result<(), toolwright::BuildError> {
//! let weather = DynamicTool::builder("get_weather")
//!     .description("Current weather for a city.")
//!     .input_schema(json!({
//!         "type": "object",
//!         "properties": { "city": { "type": "string", "minLength": 1 } },
//!         "required": ["city"],
//!         "additionalProperties": false
//!     }))
//!     .handler(|args, _ctx| async move {
//!         Ok(json!({ "city": args["city"], "celsius": 21 }))
//!     })
//!     .effect(Effect::ReadOnly)
//!     .timeout(Duration::from_secs(5))
//!     .build()?;
//! let registry = Registry::builder().dynamic_tool(weather).build()?;
//! let outcome = registry
//!     .call(ToolCall::new("c1", "get_weather", r#"{"city":"Oslo"}"#))
//!     .await;
//! assert!(outcome.is_ok());
//! # Ok(())
//! # }
//! ```
//!
//! ## What checking the arguments may cost
//!
//! The schema may come from somewhere else (a plugin, a proxied server), so checking one call's
//! arguments against it is bounded, whatever the schema:
//!
//! - every `pattern` runs on a linear-time engine (a pattern only a backtracking engine can run,
//!   a lookaround or a backreference, is a [`BuildError`] naming the tool and the path);
//! - before the arguments are checked, they are walked beside the schema counting what a full
//!   check (every subschema applied to every value it can reach, as a report of every problem
//!   does) could cost, a step being one subschema applied to one value (plus one per 8 members
//!   of an array or object, and one per 16 bytes of a string a `pattern` or `format` scans).
//!   Arguments whose count passes `max(262,144, 4 × argument bytes)` steps are refused
//!   unchecked, before the tool runs: `bad_request`, retryable (fewer or shorter values may
//!   pass), saying so. The count stops where it passes, so the walk is bounded too, and the
//!   registry's argument limit (1 MiB by default) bounds every call;
//! - a failure lists every problem (up to 50) when building that report fits the same steps,
//!   each step under an `anyOf` or `oneOf` branch counted 24 times (a report builds an error
//!   for every branch that failed); otherwise it is one `schema_mismatch` naming the arguments
//!   as a whole and saying why;
//! - the schema's references must be JSON Pointers into itself (`#/$defs/name`), which the
//!   count follows; another (a remote one, an anchor) is a [`BuildError`] naming the path. A
//!   schema with more than 512 `$ref`s, or nested more than 64 levels, is a [`BuildError`]
//!   too: following a chain of references takes a thread's stack as deep as the chain is long.
//!
//! A tool's name, description and scopes are kept for the life of the program (the registry's
//! specs hand them out as `&'static str`): define runtime tools when the tool set changes, not
//! once per request.

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use crate::context::{Invocation, ToolContext};
use crate::error::ToolError;
use crate::outcome::Failure;
use crate::outcome::Violations;
use crate::pipeline::{self, Body, Pipeline};
use crate::provenance::{self, Identifier};
use crate::providers::{Export, Provider};
use crate::registry::error::BuildError;
use crate::runtime::BoxFuture;
use crate::session::Session;
use crate::tool::grounds::Grounds;
use crate::tool::spec::{Effect, FieldMeta, StateRequirement, ToolMeta, ToolSpec};
use crate::validate::metered;
use crate::validate::shape::{self, ShapeValidator, Verdict};
use crate::wording::article;

type Handler =
    dyn Fn(Value, ToolContext) -> BoxFuture<'static, Result<Value, ToolError>> + Send + Sync;

/// A tool defined at run time, ready for
/// [`RegistryBuilder::dynamic_tool`](crate::RegistryBuilder::dynamic_tool). Made by
/// [`DynamicTool::builder`].
pub struct DynamicTool {
    meta: ToolMeta,
    timeout: Option<Duration>,
    input_schema: Value,
    output_schema: Value,
    validator: shape::Compiled,
    handler: Arc<Handler>,
    fallback: Option<Arc<Handler>>,
    examples: Arc<[Value]>,
}

impl fmt::Debug for DynamicTool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DynamicTool")
            .field("name", &self.meta.name)
            .field("effect", &self.meta.effect)
            .field("input_schema", &self.input_schema)
            .finish_non_exhaustive()
    }
}

impl DynamicTool {
    /// A builder for the tool the model will call `name`.
    pub fn builder(name: impl Into<String>) -> DynamicToolBuilder {
        DynamicToolBuilder {
            name: name.into(),
            description: String::new(),
            input_schema: None,
            output_schema: Value::Bool(true),
            handler: None,
            timeout: None,
            effect: Effect::SideEffecting,
            retries: None,
            scopes: Vec::new(),
            requires_approval: false,
            task: false,
            task_only: false,
            takes_idempotency_key: false,
            providers: Provider::ALL.to_vec(),
            fallback: None,
            sensitive: Vec::new(),
            grounded: Vec::new(),
            grounds: Vec::new(),
            examples: Vec::new(),
            internal: false,
        }
    }

    /// The tool's name.
    pub fn name(&self) -> &str {
        self.meta.name
    }

    pub(crate) fn meta_name(&self) -> &'static str {
        self.meta.name
    }

    /// The tool's description and policy, with the registry's default timeout.
    pub(crate) fn spec(&self, default_timeout: Duration) -> ToolSpec {
        ToolSpec {
            name: Arc::from(self.meta.name),
            meta: self.meta,
            input_schema: Arc::new(crate::outcome::ToolSchema::new(self.input_schema.clone())),
            output_schema: Arc::new(self.output_schema.clone()),
            timeout: self.timeout.unwrap_or(default_timeout),
            returns_content: false,
            examples: Arc::clone(&self.examples),
        }
    }

    /// The pipeline's half of the tool and its validator.
    pub(crate) fn into_parts(self) -> (DynamicBody, ShapeValidator) {
        (
            DynamicBody {
                handler: self.handler,
                fallback: self.fallback,
            },
            ShapeValidator::compiled(self.validator),
        )
    }
}

/// Builds a [`DynamicTool`]; the declarations are those of `#[tool(..)]`.
#[must_use]
pub struct DynamicToolBuilder {
    name: String,
    description: String,
    input_schema: Option<Value>,
    output_schema: Value,
    handler: Option<Arc<Handler>>,
    timeout: Option<Duration>,
    effect: Effect,
    retries: Option<u32>,
    scopes: Vec<String>,
    requires_approval: bool,
    task: bool,
    task_only: bool,
    takes_idempotency_key: bool,
    providers: Vec<Provider>,
    fallback: Option<Arc<Handler>>,
    sensitive: Vec<String>,
    /// (argument, kind of id)
    grounded: Vec<(String, String)>,
    /// (kind of id, path in the result)
    grounds: Vec<(String, String)>,
    examples: Vec<Value>,
    /// Made by toolwright itself, so it may ground the kinds toolwright keeps.
    internal: bool,
}

impl fmt::Debug for DynamicToolBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DynamicToolBuilder")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl DynamicToolBuilder {
    /// What the tool does, for the model.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = description.into();
        self
    }

    /// The JSON Schema (draft 2020-12) of the arguments: an object schema. It is exported as
    /// written and every call is checked against it; say `"additionalProperties": false` to
    /// have unknown arguments refused as `unknown_argument`.
    ///
    /// Every `pattern` and `patternProperties` key runs on the `regex` crate's engine, whose
    /// matching time is linear in the argument's length, read as ECMA-262 reads it (`\d` is
    /// `[0-9]`, `\w` is ASCII): a schema written elsewhere (a plugin, a proxied server) cannot
    /// make one argument cost seconds. A pattern only a backtracking engine can run (a
    /// lookaround such as `(?=.*[0-9])`, a backreference such as `\1`) fails
    /// [`build`](DynamicToolBuilder::build) with [`BuildError::InvalidSchema`] at its path.
    pub fn input_schema(mut self, schema: Value) -> Self {
        self.input_schema = Some(schema);
        self
    }

    /// The JSON Schema of the result (any value when not given).
    pub fn output_schema(mut self, schema: Value) -> Self {
        self.output_schema = schema;
        self
    }

    /// The body: called with the validated arguments and an owned view of the call, once per
    /// attempt. Its future is dropped when the attempt times out.
    pub fn handler<F, Fut>(mut self, handler: F) -> Self
    where
        F: Fn(Value, ToolContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Value, ToolError>> + Send + 'static,
    {
        self.handler = Some(Arc::new(move |args, ctx| {
            Box::pin(handler(args, ctx)) as BoxFuture<'static, _>
        }));
        self
    }

    /// The answer when the tool itself cannot give one (as `#[tool(fallback = ..)]`): called
    /// with the validated arguments after the attempts failed on a transient error (timeout,
    /// unavailable, rate limited, circuit open), for a read-only or idempotent tool. Its answer
    /// is marked as a fallback in the envelope.
    pub fn fallback<F, Fut>(mut self, fallback: F) -> Self
    where
        F: Fn(Value, ToolContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Value, ToolError>> + Send + 'static,
    {
        self.fallback = Some(Arc::new(move |args, ctx| {
            Box::pin(fallback(args, ctx)) as BoxFuture<'static, _>
        }));
        self
    }

    /// Marks the top-level argument `field` as sensitive (as `#[arg(sensitive)]`): its value is
    /// never logged, quoted in an error, kept in the quarantine or shown to a reviewer. The
    /// schema annotation `"x-sensitive": true` on the property does the same.
    pub fn sensitive(mut self, field: impl Into<String>) -> Self {
        self.sensitive.push(field.into());
        self
    }

    /// Requires the top-level argument `field` to be an id of `kind` that a tool returned in
    /// this conversation (as `#[arg(grounded = "kind")]`): a string, an integer, or a list of
    /// them. The schema annotation `"x-grounded": "kind"` on the property does the same.
    pub fn grounded(mut self, field: impl Into<String>, kind: impl Into<String>) -> Self {
        self.grounded.push((field.into(), kind.into()));
        self
    }

    /// Remembers the ids of `kind` found at `path` in each successful result (as
    /// `#[tool(grounds(kind = "path"))]`): field names joined by `.`, arrays walked at every
    /// step, `""` for the result itself. With an [`output_schema`](Self::output_schema), a
    /// path that names no field of it makes the registry refuse the tool
    /// ([`BuildError::UnknownGroundsPath`]); a kind that starts with `toolwright.` is kept for
    /// toolwright's own records and refused too ([`BuildError::ReservedKind`]).
    pub fn grounds(mut self, kind: impl Into<String>, path: impl Into<String>) -> Self {
        self.grounds.push((kind.into(), path.into()));
        self
    }

    /// A tool toolwright itself defines (the registry's search tool), which may ground the
    /// kinds toolwright keeps for itself.
    pub(crate) fn internal(mut self) -> Self {
        self.internal = true;
        self
    }

    /// Adds an example of the tool's arguments (as `#[tool(example = ..)]`): an object the
    /// model could send. Examples keep the order they are added in. Each is checked against
    /// the tool's input schema when the registry is built, and one that fails makes
    /// [`RegistryBuilder::build`](crate::RegistryBuilder::build) (or
    /// [`Registry::change`](crate::Registry::change)) fail with [`BuildError::InvalidExample`].
    /// Anthropic exports them as `input_examples`, the other providers in the description
    /// ([`Export::tool`]).
    ///
    /// ```
    /// # use serde_json::json;
    /// # use toolwright::DynamicTool;
    /// let weather = DynamicTool::builder("get_weather")
    ///     .description("Current weather for a city.")
    ///     .input_schema(json!({
    ///         "type": "object",
    ///         "properties": { "city": { "type": "string" } },
    ///         "required": ["city"],
    ///         "additionalProperties": false
    ///     }))
    ///     .example(json!({ "city": "Oslo" }))
    ///     .example(json!({ "city": "Lima" }))
    ///     .handler(|args, _ctx| async move { Ok(args) })
    ///     .build()
    ///     .unwrap();
    /// # let _ = weather;
    /// ```
    pub fn example(mut self, arguments: Value) -> Self {
        self.examples.push(arguments);
        self
    }

    /// Bounds every attempt (the registry's default when not given).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// What calling the tool does ([`Effect`]); side-effecting unless said otherwise.
    pub fn effect(mut self, effect: Effect) -> Self {
        self.effect = effect;
        self
    }

    /// How many retries after the first attempt the tool allows.
    pub fn retries(mut self, retries: u32) -> Self {
        self.retries = Some(retries);
        self
    }

    /// Scopes a session needs to call the tool.
    pub fn scopes<I, S>(mut self, scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.scopes = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// A human must approve each call.
    pub fn requires_approval(mut self) -> Self {
        self.requires_approval = true;
        self
    }

    /// Declares that a call may run longer than a client waits for one request: an MCP server
    /// answers it with a task the client polls, once it passed its checks
    /// ([`ToolMeta::task`](crate::ToolMeta::task)).
    pub fn task(mut self) -> Self {
        self.task = true;
        self
    }

    /// Declares that a call over MCP runs only as a task; outside MCP it simply runs
    /// ([`ToolMeta::task_only`](crate::ToolMeta::task_only)).
    pub fn task_only(mut self) -> Self {
        self.task = true;
        self.task_only = true;
        self
    }

    /// The handler reads an idempotency key ([`ToolContext::idempotency_key`]) even though the
    /// tool is not side-effecting.
    pub fn takes_idempotency_key(mut self) -> Self {
        self.takes_idempotency_key = true;
        self
    }

    /// The providers whose export must be able to express the schema (every provider when not
    /// given); a schema one of them cannot express fails [`DynamicToolBuilder::build`].
    pub fn providers(mut self, providers: impl IntoIterator<Item = Provider>) -> Self {
        self.providers = providers.into_iter().collect();
        self
    }

    /// The tool, or why it cannot be one: no schema or handler, a schema that is not a valid
    /// JSON Schema or not an object schema, or a schema a chosen provider cannot express, each
    /// naming the tool and the path into the schema.
    pub fn build(self) -> Result<DynamicTool, BuildError> {
        let name = self.name;
        let invalid = |path: &str, message: String| BuildError::InvalidSchema {
            tool: name.clone(),
            path: path.to_owned(),
            message,
        };
        let Some(handler) = self.handler else {
            return Err(BuildError::MissingHandler(name));
        };
        let Some(mut input_schema) = self.input_schema else {
            return Err(invalid("", "the tool has no input schema".into()));
        };
        // Before anything walks the schema recursively (the meta-schema check, the validator's
        // compiler), its depth: a document nested thousands deep would overflow the stack.
        let (depth, references) = measure(&input_schema);
        if depth > MAX_SCHEMA_DEPTH {
            return Err(invalid(
                "",
                format!("the schema nests {depth} levels deep, more than the {MAX_SCHEMA_DEPTH} toolwright accepts; define the deep parts once under `$defs` and refer to them"),
            ));
        }
        // A chain of references, each naming the next, is as deep to follow as it is long,
        // however flat the document: bounded by how many there are.
        if references > MAX_SCHEMA_REFERENCES {
            return Err(invalid(
                "",
                format!("the schema has {references} `$ref`s, more than the {MAX_SCHEMA_REFERENCES} toolwright follows; inline the small definitions"),
            ));
        }
        let Some(object) = input_schema.as_object_mut() else {
            return Err(invalid(
                "",
                format!("expected a JSON object schema, got {input_schema}"),
            ));
        };
        if object.get("type").and_then(Value::as_str) != Some("object") {
            return Err(invalid(
                "/type",
                "expected `\"type\": \"object\"`: every provider takes the arguments as one object"
                    .into(),
            ));
        }
        // Every provider needs the property list, even when it is empty.
        object
            .entry("properties")
            .or_insert_with(|| Value::Object(serde_json::Map::new()));
        // The draft is fixed (2020-12): the schema is checked against its meta-schema, every
        // problem named, before a validator is built from it.
        if let Err(e) = jsonschema::draft202012::meta::validate(&input_schema) {
            return Err(invalid(e.instance_path().as_str(), e.to_string()));
        }
        // What checking the arguments may cost is counted by following the schema's own
        // references; one the count cannot follow would leave it unbounded.
        if let Some((path, reference)) = metered::unfollowed_reference(&input_schema) {
            return Err(invalid(
                &path,
                format!("the reference `{reference}` points outside the schema or at an anchor; toolwright follows only JSON Pointers into the schema itself (`#/$defs/name`): move the definition under `$defs` and point at it"),
            ));
        }
        let fields = fields(&mut input_schema, self.sensitive, self.grounded, &invalid)?;
        let validator = shape::build(&input_schema).map_err(|e| unrunnable(&e, &invalid))?;
        if let Err(e) = jsonschema::draft202012::meta::validate(&self.output_schema) {
            return Err(invalid(
                &format!("output{}", e.instance_path().as_str()),
                e.to_string(),
            ));
        }
        // Kept for the program's life: `ToolSpec` hands them out as `&'static str`.
        let leaked_name: &'static str = Box::leak(name.clone().into_boxed_str());
        let description: &'static str = Box::leak(self.description.into_boxed_str());
        let scopes: Vec<&'static str> = self
            .scopes
            .into_iter()
            .map(|s| &*Box::leak(s.into_boxed_str()))
            .collect();
        let scopes: &'static [&'static str] = Box::leak(scopes.into_boxed_slice());
        let grounds: Vec<Grounds> = self
            .grounds
            .into_iter()
            .map(|(kind, path)| Grounds::new(leak(kind), leak(path)))
            .collect();
        // The text the registry checks at build, as a `#[tool]`'s examples are written.
        let example_texts: Vec<&'static str> =
            self.examples.iter().map(|e| leak(e.to_string())).collect();
        let mut meta = ToolMeta::new(leaked_name, description)
            .examples(Box::leak(example_texts.into_boxed_slice()))
            .effect(self.effect)
            .scopes(scopes)
            .fields(Box::leak(fields.into_boxed_slice()))
            .grounds(Box::leak(grounds.into_boxed_slice()));
        if self.fallback.is_some() {
            meta = meta.fallback();
        }
        if let Some(retries) = self.retries {
            meta = meta.retries(retries);
        }
        if self.task_only {
            meta = meta.task_only();
        } else if self.task {
            meta = meta.task();
        }
        meta.internal = self.internal;
        if self.requires_approval {
            meta = meta.requires_approval();
        }
        if self.takes_idempotency_key {
            meta = meta.takes_idempotency_key();
        }
        let tool = DynamicTool {
            meta,
            timeout: self.timeout,
            input_schema,
            output_schema: self.output_schema,
            validator,
            handler,
            fallback: self.fallback,
            examples: Arc::from(self.examples),
        };
        let spec = tool.spec(Duration::from_secs(1));
        for provider in self.providers {
            if let Err(e) = Export::new(provider).tool(&spec) {
                let first = e.problems().first();
                return Err(BuildError::Unexpressible {
                    tool: name,
                    provider,
                    path: first.map(|p| p.path().to_owned()).unwrap_or_default(),
                    message: e.to_string(),
                });
            }
        }
        Ok(tool)
    }
}

/// The deepest a runtime tool's schema document may nest, counting every JSON object and array
/// (a property's schema is two levels below its object's: `properties`, then its name). Far past
/// what any provider takes (OpenAI: 10 levels of objects), far below what would overflow a
/// thread's stack while the schema is compiled.
const MAX_SCHEMA_DEPTH: usize = 64;

/// The most `$ref`s a runtime tool's schema may hold (counted anywhere in the document): a
/// chain of them is followed recursively, by the validator's compiler and by the cost count,
/// so its length is what a thread's stack must hold.
const MAX_SCHEMA_REFERENCES: usize = 512;

/// How deep `value` nests, and how many `$ref` keys it holds, walked without recursion.
fn measure(value: &Value) -> (usize, usize) {
    let (mut deepest, mut references) = (0, 0);
    let mut stack = vec![(value, 1)];
    while let Some((value, depth)) = stack.pop() {
        deepest = deepest.max(depth);
        match value {
            Value::Array(items) => stack.extend(items.iter().map(|v| (v, depth + 1))),
            Value::Object(members) => {
                references += usize::from(members.contains_key("$ref"));
                stack.extend(members.values().map(|v| (v, depth + 1)));
            }
            _ => {}
        }
    }
    (deepest, references)
}

/// Why `schema` could not be compiled, at the path into the schema that failed: for a pattern
/// the linear-time engine cannot run, the pattern and what to write instead.
fn unrunnable(
    error: &jsonschema::ValidationError<'_>,
    invalid: &dyn Fn(&str, String) -> BuildError,
) -> BuildError {
    use jsonschema::error::ValidationErrorKind;
    match error.kind() {
        ValidationErrorKind::Format { format } if format == "regex" => {
            let pattern = error.instance();
            let pattern = pattern
                .as_str()
                .map_or_else(|| pattern.to_string(), str::to_owned);
            invalid(
                error.schema_path().as_str(),
                format!(
                    "the pattern `{pattern}` cannot run on the linear-time regex engine (it uses a lookaround, a backreference or another backtracking-only feature, or is too large); a runtime tool's patterns must match in time linear in the argument's length: rewrite it without those features"
                ),
            )
        }
        _ => invalid(error.instance_path().as_str(), error.to_string()),
    }
}

/// Kept for the program's life, as the registry's specs hand names out as `&'static str`.
fn leak(text: String) -> &'static str {
    Box::leak(text.into_boxed_str())
}

/// The sensitive and grounded arguments, from the builder and from the `x-sensitive` /
/// `x-grounded` annotations (removed from the schema, which providers export as written). A
/// grounded argument's description says, as a `#[tool]`'s does, that it must be an id a tool
/// returned. Names an argument the schema does not have as an error.
fn fields(
    schema: &mut Value,
    sensitive: Vec<String>,
    grounded: Vec<(String, String)>,
    invalid: &dyn Fn(&str, String) -> BuildError,
) -> Result<Vec<FieldMeta>, BuildError> {
    let mut marks: Vec<(String, bool, Option<String>)> = Vec::new();
    let mut mark = |name: &str, sensitive: bool, kind: Option<String>| match marks
        .iter_mut()
        .find(|(n, ..)| n == name)
    {
        Some(entry) => {
            entry.1 |= sensitive;
            if kind.is_some() {
                entry.2 = kind;
            }
        }
        None => marks.push((name.to_owned(), sensitive, kind)),
    };
    let Some(properties) = schema.get_mut("properties").and_then(Value::as_object_mut) else {
        return Ok(Vec::new());
    };
    for (name, property) in properties.iter_mut() {
        let Some(property) = property.as_object_mut() else {
            continue;
        };
        let path = format!("/properties/{name}");
        match property.remove("x-sensitive") {
            None | Some(Value::Bool(false)) => {}
            Some(Value::Bool(true)) => mark(name, true, None),
            Some(other) => {
                return Err(invalid(
                    &format!("{path}/x-sensitive"),
                    format!("expected true or false, got {other}"),
                ))
            }
        }
        match property.remove("x-grounded") {
            None => {}
            Some(Value::String(kind)) if !kind.is_empty() => mark(name, false, Some(kind)),
            Some(other) => {
                return Err(invalid(
                    &format!("{path}/x-grounded"),
                    format!("expected the kind of id as a non-empty string, got {other}"),
                ))
            }
        }
    }
    for name in sensitive {
        mark(&name, true, None);
    }
    for (name, kind) in grounded {
        mark(&name, false, Some(kind));
    }
    let mut fields = Vec::with_capacity(marks.len());
    for (name, sensitive, kind) in marks {
        let Some(property) = properties.get_mut(&name).and_then(Value::as_object_mut) else {
            return Err(invalid(
                &format!("/properties/{name}"),
                format!(
                    "`{name}` is marked sensitive or grounded but the schema has no such argument"
                ),
            ));
        };
        let mut field = FieldMeta::new(leak(name));
        if sensitive {
            field = field.sensitive();
        }
        if let Some(kind) = kind {
            let note = format!(
                "Must be {} id returned by a tool in this conversation; never invent one.",
                article(&kind)
            );
            let description = match property.get("description").and_then(Value::as_str) {
                Some(d) => format!("{} {note}", d.trim_end()),
                None => note,
            };
            property.insert("description".into(), Value::String(description));
            field = field.grounded(leak(kind));
        }
        fields.push(field);
    }
    Ok(fields)
}

/// The pipeline's half of a [`DynamicTool`]: its handler and fallback.
pub(crate) struct DynamicBody {
    handler: Arc<Handler>,
    fallback: Option<Arc<Handler>>,
}

impl Body for DynamicBody {
    // Boxed: the arguments wait in the call's future through every stage, and a `Value` there
    // would push it past its size bound.
    type Args = Box<Value>;
    type Output = Value;
    // Whether this tool has one is its spec's `has_fallback`.
    const FALLBACK: bool = true;

    fn required_state(&self) -> Vec<StateRequirement> {
        Vec::new()
    }

    fn validate(
        &self,
        arguments: &str,
        spec: &ToolSpec,
        validator: &ShapeValidator,
        session: &Session,
        pipeline: &Pipeline,
    ) -> Result<Box<Value>, Box<Failure>> {
        let value = checked(arguments, spec, validator)?;
        grounded(&value, spec, session, pipeline)?;
        Ok(Box::new(value))
    }

    fn check_example(
        &self,
        arguments: &str,
        spec: &ToolSpec,
        validator: &ShapeValidator,
    ) -> Result<(), Box<Failure>> {
        checked(arguments, spec, validator).map(drop)
    }

    fn reparse(&self, arguments: &str) -> Result<Box<Value>, ToolError> {
        pipeline::reparse::<Box<Value>>(arguments)
    }

    fn invoke(
        &self,
        args: Box<Value>,
        invocation: &Invocation<'_>,
    ) -> impl Future<Output = Result<Value, ToolError>> + Send {
        (self.handler)(*args, invocation.context())
    }

    fn fallback(
        &self,
        args: Box<Value>,
        invocation: &Invocation<'_>,
    ) -> impl Future<Output = Result<Value, ToolError>> + Send {
        match &self.fallback {
            Some(fallback) => fallback(*args, invocation.context()),
            None => Box::pin(async { Err(ToolError::unavailable("this tool has no fallback")) }),
        }
    }
}

/// A runtime tool's arguments checked against its schema: every rule it has (a runtime tool's
/// field rules and semantic rule are its schema's keywords).
fn checked(
    arguments: &str,
    spec: &ToolSpec,
    validator: &ShapeValidator,
) -> Result<Value, Box<Failure>> {
    let schema = &spec.input_schema;
    match shape::parse::<Value>(arguments) {
        Ok(value) => match validator.check(schema, &value, arguments.len()) {
            Verdict::Valid => Ok(value),
            Verdict::Invalid => Err(Box::new(shape::failure(arguments, None, schema, validator))),
            Verdict::TooCostly => Err(Box::new(shape::too_costly(arguments.len()))),
        },
        Err(e) => Err(Box::new(shape::failure(
            arguments,
            e.as_ref(),
            schema,
            validator,
        ))),
    }
}

/// Provenance of a runtime tool's grounded arguments, as a `#[tool]`'s generated check does it.
fn grounded(
    args: &Value,
    spec: &ToolSpec,
    session: &Session,
    pipeline: &Pipeline,
) -> Result<(), Box<Failure>> {
    let mut report = Violations::default();
    for field in spec.fields() {
        if let (Some(kind), Some(value)) = (field.grounded_kind(), args.get(field.name())) {
            provenance::check(&Ids(value), field.name(), kind, session, &mut report);
        }
    }
    if report.is_empty() {
        return Ok(());
    }
    Err(Box::new(provenance::ungrounded(
        report.into_vec(),
        spec.fields(),
        &pipeline.finders.read().unwrap_or_else(|e| e.into_inner()),
        session,
    )))
}

/// The ids in a JSON argument: a string, an integer, or a list of them (`null` holds none).
struct Ids<'a>(&'a Value);

impl Identifier for Ids<'_> {
    fn each_id(&self, f: &mut dyn FnMut(std::borrow::Cow<'_, str>)) {
        match self.0 {
            Value::String(id) => f(std::borrow::Cow::Borrowed(id)),
            Value::Number(n) => f(std::borrow::Cow::Owned(n.to_string())),
            Value::Array(items) => items.iter().for_each(|item| Ids(item).each_id(f)),
            _ => {}
        }
    }
}
