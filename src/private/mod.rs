//! Not public API: what `#[tool]`-generated code refers to, so users depend on `toolwright`
//! alone. The version in the name ties the macro crate to the facade of the same release: a
//! `toolwright-macros` of another version fails to resolve this path instead of generating code
//! against a runtime it does not match (serde names its `__private` module the same way).

mod args;

pub use self::args::{
    args_schema, present, value_once, ArgProbe, ArgSchema, FieldIndex, Unusable, Usable,
};
pub use inventory;
pub use schemars;
pub use serde;
pub use serde_json;
pub use toolwright_core::execute::blocking::blocking;
pub use toolwright_core::outcome::Violations;
pub use toolwright_core::provenance::{check as grounded, Grounds};
pub use toolwright_core::registry::{CollectedTool, Toolset};
pub use toolwright_core::tool::{FieldMeta, Number, Rule, StateRequirement};
pub use toolwright_core::validate::rules;
pub use toolwright_core::{Invocation, RegistryBuilder, Session, Tool, ToolError, ToolMeta};

/// The return type of a tool: serializable, with a schema.
///
/// The generated `Tool` impl carries `where for<'__toolwright> T: ToolOutput`, so an
/// unusable `T` fails this one obligation where the tool is registered, reported once (the
/// message below) at the return type, instead of one error per missing trait and per place
/// the type is used. The binder keeps rustc from rejecting the bound on the impl itself as
/// trivially false.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a tool result: it must implement `Serialize` and `JsonSchema`",
    label = "the model receives this value as JSON, described by a schema",
    note = "put `#[toolwright::data(output)]` on the returned type and on every type inside it (or derive `serde::Serialize` and `schemars::JsonSchema` yourself, with both crates in Cargo.toml)",
    note = "a tool result must also be `Send + 'static`: no references, `Rc` or `RefCell`"
)]
pub trait ToolOutput: serde::Serialize + schemars::JsonSchema + Send + 'static {}

// `do_not_recommend` makes rustc report the unmet `T: ToolOutput` itself, with the message
// above, rather than each unmet bound of this impl as a separate error.
#[diagnostic::do_not_recommend]
impl<T: serde::Serialize + schemars::JsonSchema + Send + 'static> ToolOutput for T {}

/// The type of a tool parameter the model fills: deserializable, with a schema.
///
/// The generated `<Fn>Args` struct's `Deserialize` and `JsonSchema` impls reach each
/// parameter type `P` through [`ArgProbe`], which compiles for any `P`, so neither they nor
/// the `Tool` impl check `P` themselves (which reported an unusable type several times, with
/// notes inside serde, or once more where the tool is registered). The registration
/// function proves `for<'__toolwright> P: ToolArgument` once, at the parameter's type, so an
/// unusable `P` is one error there, with the message below. As for [`ToolOutput`], the
/// binder keeps rustc from rejecting the bound as trivially false where it is declared.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a tool parameter: it must implement `Deserialize` and `JsonSchema`",
    label = "the model sends this value as JSON, described by a schema",
    note = "put `#[toolwright::data]` (or `#[toolwright::data(input)]`) on the type and on every type inside it (or derive `serde::Deserialize` and `schemars::JsonSchema` yourself, with both crates in Cargo.toml)",
    note = "a tool parameter must also be `Send + 'static`: no references, `Rc` or `RefCell`"
)]
pub trait ToolArgument:
    serde::de::DeserializeOwned + schemars::JsonSchema + Send + 'static
{
}

/// What the `Tool` impl asks of a parameter type, since its arguments struct must be
/// `Send + 'static` (the rest of [`ToolArgument`] the registration proves).
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a tool parameter: it must be `Send + 'static`",
    label = "calls run on any worker thread and outlive the caller's borrows",
    note = "no references, `Rc` or `RefCell`: take an owned value (`String`, `Vec<T>`, `Arc<T>`)"
)]
pub trait SendArgument: Send + 'static {}

#[diagnostic::do_not_recommend]
impl<T: Send + 'static> SendArgument for T {}

// As for `ToolOutput`: the unmet `P: ToolArgument` is reported, not each bound of this impl.
#[diagnostic::do_not_recommend]
impl<T: serde::de::DeserializeOwned + schemars::JsonSchema + Send + 'static> ToolArgument for T {}

/// Whether a tool parameter's type (or a type inside it) is `std::time::Duration`, which
/// serde and schemars describe as `{secs, nanos}`: `#[tool]` cannot tell from the name
/// (`Duration` may be chrono's, or the user's), so it asks the compiler. For each path
/// ending in `Duration`, the expansion calls `refuse_duration((&ClockProbe::<T>::NEW).probe())`:
/// method lookup tries the receiver by value first, where only `ClockProbe<Duration>` has
/// a `probe` ([`ByValue`](clock::ByValue)), returning [`IsStdDuration`](clock::IsStdDuration),
/// which fails the bound with the message below; every other type takes the
/// [`ByReference`](clock::ByReference) method, returning a type that meets it.
pub mod clock {
    use core::marker::PhantomData;

    /// The type asked about.
    pub struct ClockProbe<T: ?Sized>(PhantomData<T>);

    impl<T: ?Sized> ClockProbe<T> {
        /// The probe.
        pub const NEW: Self = ClockProbe(PhantomData);
    }

    /// The answer for `std::time::Duration`.
    pub struct IsStdDuration;

    /// The answer for every other type.
    pub struct NotStdDuration;

    /// Found first, for `ClockProbe<std::time::Duration>` alone.
    pub trait ByValue {
        /// `IsStdDuration`.
        fn probe(&self) -> IsStdDuration {
            IsStdDuration
        }
    }

    impl ByValue for ClockProbe<std::time::Duration> {}

    /// Found for every type, after [`ByValue`].
    pub trait ByReference {
        /// `NotStdDuration`.
        fn probe(&self) -> NotStdDuration {
            NotStdDuration
        }
    }

    impl<T: ?Sized> ByReference for &ClockProbe<T> {}

    /// Met by every parameter type but `std::time::Duration`.
    #[diagnostic::on_unimplemented(
        message = "a model cannot fill a `std::time::Duration` well: it serializes as `{{secs, nanos}}`",
        label = "take an integer with its unit in the name instead, such as `timeout_ms: u64`",
        note = "write `timeout_ms: u64` (or `delay_secs: u32`, ...), bound it with `#[arg(range(max = ..))]` if it needs one, and build the `Duration` in the function with `Duration::from_millis(timeout_ms)`",
        note = "only std's `Duration` is refused: `chrono::Duration` or a type of your own named `Duration` is not"
    )]
    pub trait NotADuration {}

    impl NotADuration for NotStdDuration {}

    /// Fails for `IsStdDuration`, at the parameter's type.
    pub fn refuse_duration<T: NotADuration>(_: T) {}

    /// What `#[data]` reads an `Instant` field with, after reporting it: serde cannot
    /// derive for one, and this keeps the derive from adding errors of its own.
    pub fn refused_deserialize<'de, D: serde::Deserializer<'de>, T>(_: D) -> Result<T, D::Error> {
        Err(serde::de::Error::custom("an `Instant` cannot be sent"))
    }

    /// As [`refused_deserialize`], for `#[data]`'s `Serialize`.
    pub fn refused_serialize<T, S: serde::Serializer>(_: &T, _: S) -> Result<S::Ok, S::Error> {
        Err(serde::ser::Error::custom("an `Instant` cannot be sent"))
    }
}

/// A `#[arg(default = "...")]` string literal turned into the parameter's type.
#[diagnostic::on_unimplemented(
    message = "`default` is a string, but this parameter is a `{Self}`",
    label = "expected a `{Self}` value here",
    note = "write the default as a value of the parameter's type: `default = 5` for a number, `default = true` for a bool, `default = \"text\"` only for a `String`"
)]
pub trait DefaultFromStr: Sized {
    /// The default value.
    fn default_from_str(text: &'static str) -> Self;
}

#[diagnostic::do_not_recommend]
impl<T: From<&'static str>> DefaultFromStr for T {
    fn default_from_str(text: &'static str) -> Self {
        T::from(text)
    }
}

/// Fills a parameter from a `default = "..."` string literal (called at the literal, so a
/// mismatch is reported there).
pub fn default_from_str<T: DefaultFromStr>(text: &'static str) -> T {
    T::default_from_str(text)
}

/// What an `#[arg(validate = path)]` function returns.
#[diagnostic::on_unimplemented(
    message = "an `#[arg(validate = ..)]` function must return `Result<(), E>` with `E: Display`, not `{Self}`",
    label = "this function returns `{Self}`",
    note = "write `fn check(value: &T) -> Result<(), String>` and return `Err(\"what is wrong\".to_string())`; the message reaches the model, naming the field"
)]
pub trait FieldCheckResult {
    /// The error, shown to the model.
    type Error: core::fmt::Display;
    /// As a plain `Result`.
    fn into_check_result(self) -> Result<(), Self::Error>;
}

#[diagnostic::do_not_recommend]
impl<E: core::fmt::Display> FieldCheckResult for Result<(), E> {
    type Error = E;
    fn into_check_result(self) -> Result<(), E> {
        self
    }
}

/// Adapts an `#[arg(validate = path)]` result.
pub fn field_check<R: FieldCheckResult>(result: R) -> Result<(), R::Error> {
    result.into_check_result()
}

/// Errors a validator may return: a [`ToolError`], or a message.
pub trait IntoValidationError {
    /// The error, with `kind` when the validator gave only a message.
    fn into_validation_error(self, kind: toolwright_core::ErrorKind) -> ToolError;
}

impl IntoValidationError for ToolError {
    fn into_validation_error(self, _: toolwright_core::ErrorKind) -> ToolError {
        self
    }
}

impl IntoValidationError for String {
    fn into_validation_error(self, kind: toolwright_core::ErrorKind) -> ToolError {
        ToolError::new(kind, self)
    }
}

impl IntoValidationError for &'static str {
    fn into_validation_error(self, kind: toolwright_core::ErrorKind) -> ToolError {
        ToolError::new(kind, self)
    }
}

/// What a `#[tool(validate = path)]` or `#[tool(authorize = path)]` function returns.
#[diagnostic::on_unimplemented(
    message = "a `#[tool(validate = ..)]` or `#[tool(authorize = ..)]` function must return `Result<(), E>` with `E` a `ToolError`, `String` or `&'static str`, not `{Self}`",
    label = "this function returns `{Self}`",
    note = "write `fn check(args: &MyToolArgs) -> Result<(), ToolError>` and return `Err(ToolError::invalid(\"...\"))` when a rule is broken; an `authorize` function also takes `&Session`"
)]
pub trait ToolCheckResult {
    /// As a plain `Result`, with `kind` when the function gave only a message.
    fn into_tool_check(self, kind: toolwright_core::ErrorKind) -> Result<(), ToolError>;
}

#[diagnostic::do_not_recommend]
impl<E: IntoValidationError> ToolCheckResult for Result<(), E> {
    fn into_tool_check(self, kind: toolwright_core::ErrorKind) -> Result<(), ToolError> {
        self.map_err(|e| e.into_validation_error(kind))
    }
}

/// Adapts a `validate = path` result.
pub fn semantic<R: ToolCheckResult>(result: R) -> Result<(), ToolError> {
    result.into_tool_check(toolwright_core::ErrorKind::SemanticInvalid)
}

/// Adapts an `authorize = path` result.
pub fn authorized<R: ToolCheckResult>(result: R) -> Result<(), ToolError> {
    result.into_tool_check(toolwright_core::ErrorKind::Unauthorized)
}

/// The error type of a tool function: anything that converts into a [`ToolError`].
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a tool's error: it does not convert into `ToolError`",
    label = "the registry classifies failures as `ToolError`s",
    note = "return `Result<T, ToolError>` and map failures where they happen, for example `.map_err(|e| ToolError::unavailable(e.to_string()))?`; for your own error type, implement `From<{Self}> for ToolError`"
)]
pub trait IntoToolError {
    /// The error, classified.
    fn into_tool_error(self) -> ToolError;
}

#[diagnostic::do_not_recommend]
impl<E: Into<ToolError>> IntoToolError for E {
    fn into_tool_error(self) -> ToolError {
        self.into()
    }
}

/// Adapts a tool function's result.
pub fn into_result<T, E: IntoToolError>(result: Result<T, E>) -> Result<T, ToolError> {
    result.map_err(IntoToolError::into_tool_error)
}

/// What a `#[tool(fallback = ..)]` function may return for a tool whose result is `T`.
#[diagnostic::on_unimplemented(
    message = "a `#[tool(fallback = ..)]` function must return what the tool returns, `Result<{T}, E>`, not `{Self}`",
    label = "this fallback returns `{Self}`",
    note = "write `async fn fallback(<the tool's parameters>) -> Result<{T}, ToolError>`: the same parameters as the tool, in the same order, and the tool's result type"
)]
pub trait FallbackResult<T> {
    /// As the tool's own result.
    fn into_tool_result(self) -> Result<T, ToolError>;
}

impl<T, E: IntoToolError> FallbackResult<T> for Result<T, E> {
    fn into_tool_result(self) -> Result<T, ToolError> {
        into_result(self)
    }
}

/// Adapts a fallback function's result.
pub fn fallback_result<T, R: FallbackResult<T>>(result: R) -> Result<T, ToolError> {
    result.into_tool_result()
}

/// The error of a tool whose shared state is missing (the registry refuses to build in that
/// case, so this only guards hand-built invocations).
pub fn missing_state(type_name: &'static str) -> ToolError {
    ToolError::unavailable(format!(
        "the tool's shared state `{type_name}` is not configured"
    ))
}
