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
//! use toolwright_core::{dynamic::DynamicTool, Effect, Registry, ToolCall};
//!
//! # async fn demo() -> Result<(), toolwright_core::BuildError> {
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
//! A tool's name, description and scopes are kept for the life of the program (the registry's
//! specs hand them out as `&'static str`): define runtime tools when the tool set changes, not
//! once per request.

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use crate::call::{Invocation, Session, ToolContext};
use crate::error::ToolError;
use crate::outcome::Failure;
use crate::pipeline::{self, Body, BoxFuture, Shared};
use crate::providers::{Export, Provider};
use crate::registry::BuildError;
use crate::tool::{Effect, StateRequirement, ToolMeta, ToolSpec};
use crate::validate::shape::{self, ShapeValidator};

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
    validator: jsonschema::Validator,
    handler: Arc<Handler>,
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
            takes_idempotency_key: false,
            providers: Provider::ALL.to_vec(),
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
            input_schema: Arc::new(self.input_schema.clone()),
            output_schema: Arc::new(self.output_schema.clone()),
            timeout: self.timeout.unwrap_or(default_timeout),
            returns_content: false,
        }
    }

    /// The pipeline's half of the tool and its validator.
    pub(crate) fn into_parts(self) -> (DynamicBody, ShapeValidator) {
        (
            DynamicBody {
                handler: self.handler,
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
    takes_idempotency_key: bool,
    providers: Vec<Provider>,
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
        let validator = jsonschema::draft202012::new(&input_schema)
            .map_err(|e| invalid(e.instance_path().as_str(), e.to_string()))?;
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
        let mut meta = ToolMeta::new(leaked_name, description)
            .effect(self.effect)
            .scopes(scopes);
        if let Some(retries) = self.retries {
            meta = meta.retries(retries);
        }
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

/// The pipeline's half of a [`DynamicTool`]: its handler.
pub(crate) struct DynamicBody {
    handler: Arc<Handler>,
}

impl Body for DynamicBody {
    // Boxed: the arguments wait in the call's future through every stage, and a `Value` there
    // would push it past its size bound.
    type Args = Box<Value>;
    type Output = Value;
    const FALLBACK: bool = false;

    fn required_state(&self) -> Vec<StateRequirement> {
        Vec::new()
    }

    fn validate(
        &self,
        arguments: &str,
        spec: &ToolSpec,
        validator: &ShapeValidator,
        _session: &Session,
        _shared: &Shared,
    ) -> Result<Box<Value>, Box<Failure>> {
        let schema = &spec.input_schema;
        match shape::parse::<Value>(arguments) {
            Ok(value) if validator.is_valid(schema, &value) => Ok(Box::new(value)),
            Ok(_) => Err(Box::new(shape::failure::<Value>(
                arguments, None, schema, validator,
            ))),
            Err(e) => Err(Box::new(shape::failure::<Value>(
                arguments,
                e.as_ref(),
                schema,
                validator,
            ))),
        }
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
        let _ = (args, invocation);
        async {
            Err(ToolError::unavailable(
                "a tool defined at run time has no fallback",
            ))
        }
    }
}
