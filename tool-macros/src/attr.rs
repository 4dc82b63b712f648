//! Parsing of `#[tool(...)]` and `#[arg(...)]` into plain data. Unknown keys and malformed
//! values are recorded in the [`Ctxt`] and parsing goes on, so one compile shows every mistake.

use proc_macro2::{Span, TokenStream};
use quote::ToTokens;
use syn::meta::ParseNestedMeta;
use syn::spanned::Spanned;
use syn::{Expr, ExprLit, ExprUnary, Lit, LitBool, LitInt, LitStr, Path, Token, UnOp};

use crate::ctxt::Ctxt;

pub(crate) const TOOL_KEYS: &[&str] = &[
    "name",
    "timeout_ms",
    "idempotent",
    "read_only",
    "retries",
    "scopes",
    "validate",
    "authorize",
    "fallback",
    "requires_approval",
    "task",
    "requires_client",
    "grounds",
    "blocking",
    "example",
];

pub(crate) const ARG_KEYS: &[&str] = &[
    "range",
    "length",
    "pattern",
    "one_of",
    "default",
    "validate",
    "sensitive",
    "grounded",
];

/// What `#[tool(...)]` says, each key at most once.
#[derive(Default)]
pub(crate) struct ToolAttrs {
    pub name: Option<LitStr>,
    pub timeout_ms: Option<(u64, LitInt)>,
    pub idempotent: Option<LitBool>,
    pub read_only: Option<Span>,
    pub retries: Option<(u32, LitInt)>,
    pub scopes: Vec<LitStr>,
    /// `requires_client = ["sampling"]`: client capabilities the tool cannot work without.
    pub requires_client: Vec<LitStr>,
    pub validate: Option<Path>,
    pub authorize: Option<Path>,
    pub fallback: Option<Path>,
    pub requires_approval: Option<Span>,
    /// `task`: a call may run past its request, as an MCP task; `task = "required"`: over MCP
    /// it runs only as one (the flag `true`).
    pub task: Option<(Span, bool)>,
    /// `grounds(kind = "path", ...)`: the kind (as written) and where in the result.
    pub grounds: Vec<(syn::Ident, LitStr)>,
    /// `blocking = false`: a sync fn that runs inline rather than on the blocking pool.
    pub blocking: Option<LitBool>,
    /// `example = r#"{..}"#`, repeatable: example arguments as JSON text, in order.
    pub examples: Vec<LitStr>,
    /// Where `description = ".."` was written: already reported as an unknown key, so a missing
    /// doc comment is not reported a second time.
    pub description_key: Option<Span>,
}

/// The value of a number literal, integers kept exact: a bound of `u64::MAX` must not become
/// the nearest `f64`, 18446744073709551616.
#[derive(Clone, Copy, PartialEq, Debug)]
pub(crate) enum NumValue {
    /// Between `i64::MIN` and `u64::MAX`, the integers a bound can hold.
    Int(i128),
    Float(f64),
}

impl NumValue {
    /// `a > b`, exact when both are integers.
    pub(crate) fn above(self, other: NumValue) -> bool {
        match (self, other) {
            (NumValue::Int(a), NumValue::Int(b)) => a > b,
            (a, b) => a.as_f64() > b.as_f64(),
        }
    }

    fn as_f64(self) -> f64 {
        match self {
            #[allow(clippy::cast_precision_loss)]
            NumValue::Int(v) => v as f64,
            NumValue::Float(v) => v,
        }
    }
}

impl std::fmt::Display for NumValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NumValue::Int(v) => write!(f, "{v}"),
            NumValue::Float(v) => write!(f, "{v}"),
        }
    }
}

/// A number literal as written: `1`, `0.5`, `-3`.
#[derive(Clone)]
pub(crate) struct NumLit {
    pub value: NumValue,
    pub span: Span,
}

/// A length bound and where it was written.
pub(crate) type LengthBound = (u64, Span);

pub(crate) enum OneOf {
    Strings(Vec<LitStr>),
    Numbers(Vec<NumLit>),
}

/// What the `#[arg(...)]` attributes of one parameter say, each key at most once.
#[derive(Default)]
pub(crate) struct ArgAttrs {
    pub range: Option<(Span, Option<NumLit>, Option<NumLit>)>,
    pub length: Option<(Span, Option<LengthBound>, Option<LengthBound>)>,
    pub pattern: Option<LitStr>,
    pub one_of: Option<(Span, OneOf)>,
    pub default: Option<Expr>,
    /// Several custom checks may apply; they run in order.
    pub validate: Vec<Path>,
    pub sensitive: Option<Span>,
    pub grounded: Option<LitStr>,
    /// The first `#[arg]` as written, for errors about the attribute as a whole.
    pub written: Option<TokenStream>,
}

/// One key of an attribute while it is parsed, as serde_derive's `Attr<T>`: set at most once,
/// a second setting reported as "duplicate" at its own span, the first value kept.
pub(crate) struct Attr<'c, T> {
    cx: &'c Ctxt,
    within: &'static str,
    key: &'static str,
    value: Option<T>,
}

impl<'c, T> Attr<'c, T> {
    pub(crate) fn none(cx: &'c Ctxt, within: &'static str, key: &'static str) -> Self {
        Attr {
            cx,
            within,
            key,
            value: None,
        }
    }

    /// Sets the value, or reports `at` as a duplicate.
    pub(crate) fn set(&mut self, at: impl ToTokens, value: T) {
        if self.value.is_some() {
            self.cx.error_spanned_by(
                at,
                format!("duplicate `{}` in `{}`; keep one", self.key, self.within),
            );
        } else {
            self.value = Some(value);
        }
    }

    pub(crate) fn is_set(&self) -> bool {
        self.value.is_some()
    }

    pub(crate) fn get(self) -> Option<T> {
        self.value
    }
}

/// A flag such as `read_only`: written or not, at most once.
fn set_flag(flag: &mut Attr<Span>, meta: &ParseNestedMeta, key: &str) -> syn::Result<()> {
    if meta.input.peek(Token![=]) {
        flag.cx.error_spanned_by(
            &meta.path,
            format!("`{key}` is a flag: write `{key}`, not `{key} = ...`"),
        );
        return skip_value(meta);
    }
    flag.set(&meta.path, meta.path.span());
    Ok(())
}

pub(crate) fn key_of(meta: &ParseNestedMeta) -> String {
    meta.path
        .get_ident()
        .map(ToString::to_string)
        .unwrap_or_else(|| {
            let segments: Vec<String> = meta
                .path
                .segments
                .iter()
                .map(|s| s.ident.to_string())
                .collect();
            segments.join("::")
        })
}

/// Consumes whatever value follows a key we could not use, so parsing can go on.
pub(crate) fn skip_value(meta: &ParseNestedMeta) -> syn::Result<()> {
    if meta.input.peek(Token![=]) {
        let value = meta.value()?;
        let _: Expr = value.parse()?;
    } else if meta.input.peek(syn::token::Paren) {
        let _: proc_macro2::Group = meta.input.parse()?;
    }
    Ok(())
}

/// `task` (may run as a task: `Some(false)`) or `task = "required"` (runs only as one:
/// `Some(true)`), the words of MCP's `taskSupport`; any other value is reported at the value,
/// naming the two forms.
fn task_support(cx: &Ctxt, meta: &ParseNestedMeta) -> syn::Result<Option<bool>> {
    if !meta.input.peek(Token![=]) {
        return Ok(Some(false));
    }
    let value: Expr = meta.value()?.parse()?;
    let fix = "write `task` for a tool that may run as a task, or `task = \"required\"` for one that runs only as a task over MCP";
    match &value {
        Expr::Lit(ExprLit {
            lit: Lit::Str(text),
            ..
        }) => match text.value().as_str() {
            "required" => Ok(Some(true)),
            "optional" => {
                cx.error_spanned_by(
                    &value,
                    "`task = \"optional\"` is the flag `task`: write `task`",
                );
                Ok(None)
            }
            "forbidden" => {
                cx.error_spanned_by(
                    &value,
                    "a tool runs within its request unless it says `task`: remove `task = \"forbidden\"`",
                );
                Ok(None)
            }
            other => {
                cx.error_spanned_by(
                    &value,
                    format!("`task` takes no value or \"required\", not {other:?}: {fix}"),
                );
                Ok(None)
            }
        },
        Expr::Lit(ExprLit {
            lit: Lit::Bool(flag),
            ..
        }) => {
            let written = if flag.value {
                "`task = true` is the flag `task`: write `task`"
            } else {
                "a tool runs within its request unless it says `task`: remove `task = false`"
            };
            cx.error_spanned_by(&value, written);
            Ok(None)
        }
        _ => {
            cx.error_spanned_by(
                &value,
                format!("`task` takes no value or `\"required\"`: {fix}"),
            );
            Ok(None)
        }
    }
}

/// Levenshtein distance, for "did you mean" hints.
pub(crate) fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != *cb);
            cur.push((prev[j] + cost).min(prev[j + 1] + 1).min(cur[j] + 1));
        }
        prev = cur;
    }
    prev[b.len()]
}

/// Keys people reach for, from JSON Schema, other frameworks or habit, and what to write here.
const TOOL_KEY_HINTS: &[(&str, &str)] = &[
    (
        "description",
        "the description is the function's `///` doc comment",
    ),
    (
        "desc",
        "the description is the function's `///` doc comment",
    ),
    (
        "timeout",
        "the timeout is `timeout_ms`, in milliseconds: `timeout_ms = 5000` for 5 s",
    ),
    ("max_retries", "write `retries = 2`"),
    (
        "examples",
        "write one `example = r#\"{..}\"#` per example; the key may be repeated",
    ),
    (
        "input_examples",
        "write one `example = r#\"{..}\"#` per example; the key may be repeated",
    ),
    ("readonly", "write `read_only`"),
    ("idempotency_key", "take a `key: IdempotencyKey` parameter"),
    ("scope", "write `scopes = [\"orders:read\"]`"),
    (
        "inline",
        "a cheap sync `fn` that may run on the calling task is marked `blocking = false`",
    ),
    (
        "spawn_blocking",
        "a sync `fn` runs on the blocking pool by itself; `blocking = false` runs it inline",
    ),
];

const ARG_KEY_HINTS: &[(&str, &str)] = &[
    (
        "min",
        "write `range(min = 1)` for numbers or `length(min = 1)` for strings and lists",
    ),
    (
        "max",
        "write `range(max = 9)` for numbers or `length(max = 300)` for strings and lists",
    ),
    ("minimum", "write `range(min = 1)`"),
    ("maximum", "write `range(max = 9)`"),
    ("min_length", "write `length(min = 1)`"),
    ("max_length", "write `length(max = 300)`"),
    ("min_items", "write `length(min = 1)`"),
    ("max_items", "write `length(max = 10)`"),
    ("len", "write `length(min = 1, max = 300)`"),
    ("regex", "write `pattern = \"^[A-Z]{3}$\"`"),
    ("enum", "write `one_of = [\"a\", \"b\"]`"),
    ("choices", "write `one_of = [\"a\", \"b\"]`"),
    ("values", "write `one_of = [\"a\", \"b\"]`"),
    (
        "description",
        "a parameter's description is its `///` doc comment",
    ),
    ("doc", "a parameter's description is its `///` doc comment"),
    (
        "optional",
        "make the parameter an `Option<T>`, or give it a `default`",
    ),
    ("secret", "write `sensitive`"),
    ("redact", "write `sensitive`"),
];

fn unknown_key_message(what: &str, key: &str, valid: &[&str], hints: &[(&str, &str)]) -> String {
    let list: Vec<String> = valid.iter().map(|k| format!("`{k}`")).collect();
    if let Some((_, hint)) = hints.iter().find(|(k, _)| *k == key) {
        return format!(
            "unknown `{what}` key `{key}`: {hint}. Valid keys: {}",
            list.join(", ")
        );
    }
    let closest = valid
        .iter()
        .map(|v| (distance(key, v), *v))
        .filter(|(d, v)| *d <= 3 || v.starts_with(key) || key.starts_with(v))
        .min_by_key(|(d, _)| *d);
    match closest {
        Some((_, v)) => format!(
            "unknown `{what}` key `{key}`: did you mean `{v}`? Valid keys: {}",
            list.join(", ")
        ),
        None => format!(
            "unknown `{what}` key `{key}`; valid keys: {}",
            list.join(", ")
        ),
    }
}

/// The value of `timeout_ms`: an integer literal. A duration written as text (`"2s"`) or any
/// other value is an error that names the integer to write. Durations are not accepted as
/// text: the key names its unit, and one spelling per setting keeps every tool readable alike.
fn timeout_ms(cx: &Ctxt, value: Expr) -> Option<LitInt> {
    match value {
        Expr::Lit(ExprLit {
            lit: Lit::Int(lit), ..
        }) => return Some(lit),
        Expr::Lit(ExprLit {
            lit: Lit::Str(text),
            ..
        }) => {
            if let Some(ms) = duration_ms(&text.value()) {
                cx.error_spanned_by(
                    &text,
                    format!("`timeout_ms` is a whole number of milliseconds, not a text: write `timeout_ms = {ms}` for {:?}", text.value()),
                );
                return None;
            }
            cx.error_spanned_by(&text, "`timeout_ms` is a whole number of milliseconds, not a text: write `timeout_ms = 2000` for 2 s");
        }
        other => cx.error_spanned_by(
            other,
            "`timeout_ms` is a whole number of milliseconds: write `timeout_ms = 2000` for 2 s",
        ),
    }
    None
}

/// Milliseconds in a duration written as text: a whole or decimal number and a unit, `ms`,
/// `s`, `m` or `h` (`"500ms"`, `"2s"`, `"1.5s"`, `"1m"`), so an error can name the integer.
fn duration_ms(text: &str) -> Option<u64> {
    let text = text.trim();
    let split = text.find(|c: char| !(c.is_ascii_digit() || c == '.'))?;
    let (number, unit) = text.split_at(split);
    let number: f64 = number.parse().ok()?;
    let scale = match unit.trim() {
        "ms" => 1.0,
        "s" | "sec" | "secs" => 1_000.0,
        "m" | "min" | "mins" => 60_000.0,
        "h" => 3_600_000.0,
        _ => return None,
    };
    let ms = (number * scale).round();
    (ms.is_finite() && ms >= 1.0 && ms <= u64::MAX as f64).then_some(ms as u64)
}

fn parse_u64(cx: &Ctxt, lit: &LitInt) -> Option<u64> {
    match lit.base10_parse::<u64>() {
        Ok(v) => Some(v),
        Err(_) => {
            cx.error_spanned_by(lit, "expected a non-negative integer");
            None
        }
    }
}

/// `#[tool(...)]` while it is parsed: one [`Attr`] per key.
struct ToolAttrsBuilder<'c> {
    name: Attr<'c, LitStr>,
    timeout_ms: Attr<'c, (u64, LitInt)>,
    idempotent: Attr<'c, LitBool>,
    read_only: Attr<'c, Span>,
    retries: Attr<'c, (u32, LitInt)>,
    scopes: Attr<'c, Vec<LitStr>>,
    requires_client: Attr<'c, Vec<LitStr>>,
    validate: Attr<'c, Path>,
    authorize: Attr<'c, Path>,
    fallback: Attr<'c, Path>,
    requires_approval: Attr<'c, Span>,
    task: Attr<'c, (Span, bool)>,
    grounds: Attr<'c, Vec<(syn::Ident, LitStr)>>,
    blocking: Attr<'c, LitBool>,
    /// Repeatable, so a list rather than an [`Attr`].
    examples: Vec<LitStr>,
    /// Where `description = ..` was written (an unknown key, reported once).
    description: Option<Span>,
}

impl<'c> ToolAttrsBuilder<'c> {
    fn new(cx: &'c Ctxt) -> Self {
        ToolAttrsBuilder {
            name: Attr::none(cx, "#[tool]", "name"),
            timeout_ms: Attr::none(cx, "#[tool]", "timeout_ms"),
            idempotent: Attr::none(cx, "#[tool]", "idempotent"),
            read_only: Attr::none(cx, "#[tool]", "read_only"),
            retries: Attr::none(cx, "#[tool]", "retries"),
            scopes: Attr::none(cx, "#[tool]", "scopes"),
            requires_client: Attr::none(cx, "#[tool]", "requires_client"),
            validate: Attr::none(cx, "#[tool]", "validate"),
            authorize: Attr::none(cx, "#[tool]", "authorize"),
            fallback: Attr::none(cx, "#[tool]", "fallback"),
            requires_approval: Attr::none(cx, "#[tool]", "requires_approval"),
            task: Attr::none(cx, "#[tool]", "task"),
            grounds: Attr::none(cx, "#[tool]", "grounds"),
            blocking: Attr::none(cx, "#[tool]", "blocking"),
            examples: Vec::new(),
            description: None,
        }
    }

    fn key(&mut self, cx: &Ctxt, meta: &ParseNestedMeta) -> syn::Result<()> {
        let at = &meta.path;
        match key_of(meta).as_str() {
            "name" => self.name.set(at, meta.value()?.parse()?),
            "timeout_ms" => {
                if let Some(lit) = timeout_ms(cx, meta.value()?.parse()?) {
                    if let Some(v) = parse_u64(cx, &lit) {
                        self.timeout_ms.set(at, (v, lit));
                    }
                }
            }
            "idempotent" => self.idempotent.set(
                at,
                value_as(meta, "write `idempotent = true` or `idempotent = false`")?,
            ),
            "read_only" => set_flag(&mut self.read_only, meta, "read_only")?,
            "requires_approval" => {
                set_flag(&mut self.requires_approval, meta, "requires_approval")?
            }
            "task" => {
                if let Some(required) = task_support(cx, meta)? {
                    self.task.set(at, (at.span(), required));
                }
            }
            "retries" => {
                let lit: LitInt = meta.value()?.parse()?;
                match lit.base10_parse::<u32>() {
                    Ok(v) => self.retries.set(at, (v, lit)),
                    Err(_) => {
                        cx.error_spanned_by(&lit, "`retries` must be a small non-negative integer")
                    }
                }
            }
            "scopes" => self.scopes.set(at, scopes(cx, meta.value()?.parse()?)),
            "requires_client" => self
                .requires_client
                .set(at, capabilities(cx, meta.value()?.parse()?)),
            "validate" => self.validate.set(at, meta.value()?.parse()?),
            "authorize" => self.authorize.set(at, meta.value()?.parse()?),
            "fallback" => self.fallback.set(at, meta.value()?.parse()?),
            "grounds" => self.grounds.set(at, grounds(cx, meta)?),
            "blocking" => self.blocking.set(
                at,
                value_as(meta, "write `blocking = true` or `blocking = false`")?,
            ),
            "example" => match meta.value()?.parse()? {
                Expr::Lit(ExprLit {
                    lit: Lit::Str(text),
                    ..
                }) => self.examples.push(text),
                other => cx.error_spanned_by(
                    other,
                    "an example is the JSON text of the arguments in a string literal: `example = r#\"{\"query\":\"late orders\"}\"#`",
                ),
            },
            other => {
                let mut message = unknown_key_message("#[tool]", other, TOOL_KEYS, TOOL_KEY_HINTS);
                // The value is read (a text may show what to write instead) or skipped.
                let text = if meta.input.peek(Token![=]) {
                    match meta.value()?.parse::<Expr>()? {
                        Expr::Lit(ExprLit {
                            lit: Lit::Str(text),
                            ..
                        }) => Some(text.value()),
                        _ => None,
                    }
                } else {
                    skip_value(meta)?;
                    None
                };
                match (other, text) {
                    ("description" | "desc", text) => {
                        self.description = Some(at.span());
                        let doc = text
                            .filter(|t| !t.trim().is_empty() && !t.contains('\n'))
                            .unwrap_or_else(|| "What the tool does.".to_owned());
                        message = format!("unknown `#[tool]` key `{other}`: the description is the function's `///` doc comment; remove this key and write `/// {}` above the function", doc.trim());
                    }
                    ("timeout", Some(text)) => {
                        if let Some(ms) = duration_ms(&text) {
                            message = format!("unknown `#[tool]` key `timeout`: the timeout is `timeout_ms`, a whole number of milliseconds: write `timeout_ms = {ms}` for {text:?}");
                        }
                    }
                    _ => {}
                }
                cx.error_spanned_by(at, message);
            }
        }
        Ok(())
    }

    fn build(self) -> ToolAttrs {
        ToolAttrs {
            name: self.name.get(),
            timeout_ms: self.timeout_ms.get(),
            idempotent: self.idempotent.get(),
            read_only: self.read_only.get(),
            retries: self.retries.get(),
            scopes: self.scopes.get().unwrap_or_default(),
            requires_client: self.requires_client.get().unwrap_or_default(),
            validate: self.validate.get(),
            authorize: self.authorize.get(),
            fallback: self.fallback.get(),
            requires_approval: self.requires_approval.get(),
            task: self.task.get(),
            grounds: self.grounds.get().unwrap_or_default(),
            blocking: self.blocking.get(),
            examples: self.examples,
            description_key: self.description,
        }
    }
}

fn scopes(cx: &Ctxt, array: syn::ExprArray) -> Vec<LitStr> {
    let mut scopes = Vec::new();
    for elem in array.elems {
        match elem {
            Expr::Lit(ExprLit {
                lit: Lit::Str(s), ..
            }) => scopes.push(s),
            other => cx.error_spanned_by(
                other,
                "scopes are string literals: `scopes = [\"orders:write\"]`",
            ),
        }
    }
    scopes
}

/// `requires_client = ["sampling", "roots"]`: each a client capability a tool can ask for, once.
fn capabilities(cx: &Ctxt, array: syn::ExprArray) -> Vec<LitStr> {
    const KNOWN: &[&str] = &["elicitation", "sampling", "roots"];
    let mut capabilities: Vec<LitStr> = Vec::new();
    for elem in array.elems {
        match elem {
            Expr::Lit(ExprLit {
                lit: Lit::Str(s), ..
            }) => {
                let name = s.value();
                if !KNOWN.contains(&name.as_str()) {
                    cx.error_spanned_by(
                        &s,
                        format!(
                            "`{name}` is not a client capability a tool can require; \
                             write one of \"elicitation\", \"sampling\", \"roots\""
                        ),
                    );
                } else if capabilities.iter().any(|c| c.value() == name) {
                    cx.error_spanned_by(&s, format!("`{name}` is required twice; remove one"));
                } else {
                    capabilities.push(s);
                }
            }
            other => cx.error_spanned_by(
                other,
                "client capabilities are string literals: `requires_client = [\"sampling\"]`",
            ),
        }
    }
    capabilities
}

/// `grounds(order = "id", sku = "lines.sku")`: a kind may be grounded at several paths, each
/// (kind, path) pair once.
fn grounds(cx: &Ctxt, meta: &ParseNestedMeta) -> syn::Result<Vec<(syn::Ident, LitStr)>> {
    let mut grounds: Vec<(syn::Ident, LitStr)> = Vec::new();
    meta.parse_nested_meta(|inner| {
        let Some(kind) = inner.path.get_ident().cloned() else {
            cx.error_spanned_by(
                &inner.path,
                "a kind of id is one word: `grounds(order = \"id\")`",
            );
            return skip_value(&inner);
        };
        if !inner.input.peek(Token![=]) {
            cx.error_spanned_by(
                &inner.path,
                format!("say where the result carries `{kind}` ids: `grounds({kind} = \"id\")`, a field name, or a path such as `\"lines.sku\"`"),
            );
            return Ok(());
        }
        let path: LitStr = inner.value()?.parse()?;
        let text = path.value();
        if text.split('.').any(str::is_empty) && !text.is_empty() {
            cx.error_spanned_by(
                &path,
                "a path is field names joined by `.`, such as `\"id\"` or `\"lines.sku\"` (arrays are walked by themselves); `\"\"` is the result itself",
            );
        }
        if grounds.iter().any(|(k, p)| *k == kind && p.value() == text) {
            cx.error_spanned_by(
                &inner.path,
                format!("duplicate `{kind} = {text:?}` in `grounds(..)`; keep one"),
            );
        } else {
            grounds.push((kind, path));
        }
        Ok(())
    })?;
    Ok(grounds)
}

pub(crate) fn parse_tool_attrs(cx: &Ctxt, tokens: TokenStream) -> ToolAttrs {
    let mut builder = ToolAttrsBuilder::new(cx);
    let parser = syn::meta::parser(|meta| builder.key(cx, &meta));
    if let Err(e) = syn::parse::Parser::parse2(parser, tokens) {
        cx.syn_error(e);
    }
    builder.build()
}

/// The integers a bound can hold: what `Number::int` (i64) and `Number::uint` (u64) take.
const INTEGER_RANGE: &str =
    "an integer bound must lie between -9223372036854775808 (`i64::MIN`) and 18446744073709551615 (`u64::MAX`)";

fn number(cx: &Ctxt, expr: &Expr) -> Option<NumLit> {
    let (value, span) = match expr {
        Expr::Lit(ExprLit {
            lit: Lit::Int(i), ..
        }) => match i.base10_parse::<u64>() {
            Ok(v) => (NumValue::Int(i128::from(v)), i.span()),
            Err(_) => {
                cx.error_spanned_by(i, format!("this integer is too large: {INTEGER_RANGE}"));
                return None;
            }
        },
        Expr::Lit(ExprLit {
            lit: Lit::Float(f), ..
        }) => match f.base10_parse::<f64>() {
            Ok(v) => (NumValue::Float(v), f.span()),
            Err(_) => {
                cx.error_spanned_by(f, "expected a float literal");
                return None;
            }
        },
        Expr::Unary(ExprUnary {
            op: UnOp::Neg(_),
            expr: inner,
            ..
        }) if matches!(**inner, Expr::Lit(_)) => {
            let n = number(cx, inner)?;
            let value = match n.value {
                NumValue::Int(v) if -v < i128::from(i64::MIN) => {
                    cx.error_spanned_by(
                        expr,
                        format!("this integer is too small: {INTEGER_RANGE}"),
                    );
                    return None;
                }
                NumValue::Int(v) => NumValue::Int(-v),
                NumValue::Float(v) => NumValue::Float(-v),
            };
            (value, expr.span())
        }
        other => {
            cx.error_spanned_by(other, "expected a number literal such as `1` or `0.5`");
            return None;
        }
    };
    Some(NumLit { value, span })
}

/// `rule(min = .., max = ..)`, each bound read by `read`; `None` when a bound was malformed
/// (and reported), so the rule is left out rather than reported again as missing a bound.
fn bounds<T>(
    cx: &Ctxt,
    meta: &ParseNestedMeta,
    rule: &'static str,
    read: impl Fn(&Ctxt, &Expr) -> Option<T>,
) -> syn::Result<Option<(Option<T>, Option<T>)>> {
    let within = if rule == "range" {
        "range(..)"
    } else {
        "length(..)"
    };
    let mut min = Attr::none(cx, within, "min");
    let mut max = Attr::none(cx, within, "max");
    let mut malformed = false;
    meta.parse_nested_meta(|inner| {
        let key = key_of(&inner);
        let slot = match key.as_str() {
            "min" => &mut min,
            "max" => &mut max,
            other => {
                cx.error_spanned_by(
                    &inner.path,
                    format!("unknown `{rule}` bound `{other}`; write `{rule}(min = .., max = ..)` (either may be omitted)"),
                );
                return skip_value(&inner);
            }
        };
        let expr: Expr = inner.value()?.parse()?;
        match read(cx, &expr) {
            Some(value) => slot.set(&inner.path, value),
            None => malformed = true,
        }
        Ok(())
    })?;
    Ok((!malformed).then(|| (min.get(), max.get())))
}

fn length_bound(cx: &Ctxt, expr: &Expr) -> Option<(u64, Span)> {
    match expr {
        Expr::Lit(ExprLit {
            lit: Lit::Int(i), ..
        }) => parse_u64(cx, i).map(|v| (v, i.span())),
        other => {
            cx.error_spanned_by(other, "a length bound is a non-negative integer literal");
            None
        }
    }
}

fn one_of(cx: &Ctxt, array: &syn::ExprArray) -> Option<OneOf> {
    let mut strings = Vec::new();
    let mut numbers = Vec::new();
    for elem in &array.elems {
        match elem {
            Expr::Lit(ExprLit {
                lit: Lit::Str(s), ..
            }) => strings.push(s.clone()),
            other => numbers.extend(number(cx, other)),
        }
    }
    match (strings.is_empty(), numbers.is_empty()) {
        (true, true) => {
            cx.error_spanned_by(
                array,
                "`one_of` needs at least one value: `one_of = [\"a\", \"b\"]`",
            );
            None
        }
        (false, false) => {
            cx.error_spanned_by(array, "`one_of` values must be all strings or all numbers");
            None
        }
        (false, true) => Some(OneOf::Strings(strings)),
        (true, false) => Some(OneOf::Numbers(numbers)),
    }
}

/// The `#[arg(...)]` attributes of one parameter while they are parsed: one [`Attr`] per key,
/// shared by all of them, so a key written in two `#[arg]`s is a duplicate too.
struct ArgAttrsBuilder<'c> {
    range: Attr<'c, (Span, Option<NumLit>, Option<NumLit>)>,
    length: Attr<'c, (Span, Option<LengthBound>, Option<LengthBound>)>,
    pattern: Attr<'c, LitStr>,
    one_of: Attr<'c, (Span, OneOf)>,
    default: Attr<'c, Expr>,
    validate: Vec<Path>,
    sensitive: Attr<'c, Span>,
    grounded: Attr<'c, LitStr>,
}

impl<'c> ArgAttrsBuilder<'c> {
    fn new(cx: &'c Ctxt) -> Self {
        ArgAttrsBuilder {
            range: Attr::none(cx, "#[arg]", "range"),
            length: Attr::none(cx, "#[arg]", "length"),
            pattern: Attr::none(cx, "#[arg]", "pattern"),
            one_of: Attr::none(cx, "#[arg]", "one_of"),
            default: Attr::none(cx, "#[arg]", "default"),
            validate: Vec::new(),
            sensitive: Attr::none(cx, "#[arg]", "sensitive"),
            grounded: Attr::none(cx, "#[arg]", "grounded"),
        }
    }

    fn key(&mut self, cx: &Ctxt, meta: &ParseNestedMeta) -> syn::Result<()> {
        let at = &meta.path;
        let span = at.span();
        match key_of(meta).as_str() {
            rule @ ("range" | "length") if !meta.input.peek(syn::token::Paren) => {
                let example = if rule == "range" {
                    "range(min = 1, max = 9)"
                } else {
                    "length(min = 1, max = 300)"
                };
                cx.error_spanned_by(
                    at,
                    format!("write `{example}`; either bound may be omitted"),
                );
                skip_value(meta)?;
            }
            "range" => {
                if let Some((min, max)) = bounds(cx, meta, "range", number)? {
                    self.range.set(at, (span, min, max));
                }
            }
            "length" => {
                if let Some((min, max)) = bounds(cx, meta, "length", length_bound)? {
                    self.length.set(at, (span, min, max));
                }
            }
            "pattern" => self.pattern.set(at, meta.value()?.parse()?),
            "one_of" => {
                let array: syn::ExprArray = value_as(meta, "write `one_of = [\"a\", \"b\"]`")?;
                if let Some(values) = one_of(cx, &array) {
                    self.one_of.set(at, (span, values));
                }
            }
            "default" => self.default.set(at, meta.value()?.parse()?),
            "validate" => self.validate.push(meta.value()?.parse()?),
            "sensitive" => set_flag(&mut self.sensitive, meta, "sensitive")?,
            "grounded" => {
                let lit: LitStr = meta.value()?.parse()?;
                if lit.value().trim().is_empty() {
                    cx.error_spanned_by(
                        &lit,
                        "name the kind of id: `grounded = \"order\"`, matching a tool's `grounds(order = \"id\")`",
                    );
                } else if lit.value().starts_with("toolwright.") {
                    cx.error_spanned_by(
                        &lit,
                        format!("`{}` is a kind toolwright keeps for what the registry records itself (kinds that start with `toolwright.`): name the kind after your own ids, such as `grounded = \"order\"`", lit.value()),
                    );
                }
                self.grounded.set(at, lit);
            }
            other => {
                cx.error_spanned_by(
                    at,
                    unknown_key_message("#[arg]", other, ARG_KEYS, ARG_KEY_HINTS),
                );
                skip_value(meta)?;
            }
        }
        Ok(())
    }

    fn build(self, written: Option<TokenStream>) -> ArgAttrs {
        ArgAttrs {
            range: self.range.get(),
            length: self.length.get(),
            pattern: self.pattern.get(),
            one_of: self.one_of.get(),
            default: self.default.get(),
            validate: self.validate,
            sensitive: self.sensitive.get(),
            grounded: self.grounded.get(),
            written,
        }
    }
}

/// A key's value, or syn's error about it followed by how to write it.
fn value_as<T: syn::parse::Parse>(meta: &ParseNestedMeta, fix: &str) -> syn::Result<T> {
    meta.value()?
        .parse::<T>()
        .map_err(|e| syn::Error::new(e.span(), format!("{e}: {fix}")))
}

/// Every `#[arg(...)]` among a parameter's attributes, as one declaration.
pub(crate) fn parse_arg_attrs(cx: &Ctxt, attrs: &[syn::Attribute]) -> ArgAttrs {
    let mut builder = ArgAttrsBuilder::new(cx);
    let mut written = None;
    for attr in attrs.iter().filter(|a| a.path().is_ident("arg")) {
        written.get_or_insert_with(|| attr.to_token_stream());
        if let Err(e) = attr.parse_nested_meta(|meta| builder.key(cx, &meta)) {
            cx.syn_error(e);
        }
    }
    builder.build(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_keys_suggest_the_closest_valid_one() {
        let m = unknown_key_message("#[tool]", "idempotnet", TOOL_KEYS, TOOL_KEY_HINTS);
        assert!(m.contains("did you mean `idempotent`?"), "{m}");
        let m = unknown_key_message("#[arg]", "lenght", ARG_KEYS, ARG_KEY_HINTS);
        assert!(m.contains("did you mean `length`?"), "{m}");
        let m = unknown_key_message("#[arg]", "zzz", ARG_KEYS, ARG_KEY_HINTS);
        assert!(!m.contains("did you mean"), "{m}");
        assert!(m.contains("valid keys: `range`"), "{m}");
    }

    #[test]
    fn durations_written_as_text_are_read_to_name_the_milliseconds() {
        assert_eq!(duration_ms("2s"), Some(2000));
        assert_eq!(duration_ms("500ms"), Some(500));
        assert_eq!(duration_ms("1m"), Some(60_000));
        assert_eq!(duration_ms("1.5s"), Some(1500));
        assert_eq!(duration_ms(" 2 s "), Some(2000));
        assert_eq!(duration_ms("2"), None, "no unit: not read as any");
        assert_eq!(duration_ms("two seconds"), None);
        assert_eq!(duration_ms("0s"), None, "zero is its own error");
    }

    #[test]
    fn familiar_keys_from_elsewhere_get_a_translation() {
        let m = unknown_key_message("#[tool]", "timeout", TOOL_KEYS, TOOL_KEY_HINTS);
        assert!(m.contains("in milliseconds"), "{m}");
        let m = unknown_key_message("#[arg]", "maximum", ARG_KEYS, ARG_KEY_HINTS);
        assert!(m.contains("write `range(max = 9)`"), "{m}");
        let m = unknown_key_message("#[arg]", "description", ARG_KEYS, ARG_KEY_HINTS);
        assert!(m.contains("`///` doc comment"), "{m}");
    }

    #[test]
    fn hints_name_real_keys_only() {
        // Every hint that says "write `key...`" names a key the parser accepts.
        for (hints, keys) in [(TOOL_KEY_HINTS, TOOL_KEYS), (ARG_KEY_HINTS, ARG_KEYS)] {
            for (unknown, hint) in hints {
                assert!(!keys.contains(unknown), "{unknown} is a valid key");
                if let Some(rest) = hint.split("write `").nth(1) {
                    let key: String = rest
                        .chars()
                        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                        .collect();
                    assert!(keys.contains(&key.as_str()), "{unknown}: {hint}");
                }
            }
        }
    }

    #[test]
    fn distance_counts_edits() {
        assert_eq!(distance("timeout", "timeout_ms"), 3);
        assert_eq!(distance("idempotnet", "idempotent"), 2);
        assert_eq!(distance("", "abc"), 3);
    }
}
