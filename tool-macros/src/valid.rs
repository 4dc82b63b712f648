//! Checks of the model, each reported at the span that caused it with the fix in the message.

use crate::ast::{Output, Param, ParamKind, Receiver, ToolFn};
use crate::attr::{ArgAttrs, NumValue, OneOf};
use crate::ctxt::Ctxt;
use syn::ext::IdentExt;

const MAX_NAME: usize = 64;

fn name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '-'
}

/// What breaks the rule OpenAI and Anthropic share for function names, `^[A-Za-z0-9_-]{1,64}$`.
fn name_problem(name: &str) -> Option<String> {
    if name.is_empty() {
        return Some("is empty".to_owned());
    }
    if let Some(c) = name.chars().find(|c| !name_char(*c)) {
        return Some(format!("contains {c:?}"));
    }
    let len = name.chars().count();
    (len > MAX_NAME).then(|| format!("has {len} characters, {} too many", len - MAX_NAME))
}

/// A name that follows the rule: other characters become `_`, then cut to 64.
fn suggest_name(name: &str) -> String {
    let mut out: String = name
        .chars()
        .map(|c| if name_char(c) { c } else { '_' })
        .take(MAX_NAME)
        .collect();
    if out.is_empty() {
        out.push_str("my_tool");
    }
    out
}

/// The owned type to write instead of a reference: `String` for `str`, `Vec<T>` for `[T]`.
fn owned(elem: &syn::Type) -> String {
    let text = match elem {
        syn::Type::Path(p) if p.path.is_ident("str") => "String".to_owned(),
        syn::Type::Slice(s) => {
            let inner = &s.elem;
            format!("Vec<{}>", quote::quote!(#inner))
        }
        other => quote::quote!(#other).to_string(),
    };
    text.replace(' ', "")
}

/// What is wrong with a `pattern`, and where: regex_syntax's own message is several lines with
/// a caret, which a one-line compile error cannot show.
fn regex_message(pattern: &str, error: &regex_syntax::Error) -> String {
    use regex_syntax::ast::ErrorKind as Kind;
    let (kind, span, literal) = match error {
        regex_syntax::Error::Parse(e) => {
            // Mistakes that usually mean a character was meant literally.
            let literal = matches!(
                e.kind(),
                Kind::GroupUnclosed
                    | Kind::GroupUnopened
                    | Kind::ClassUnclosed
                    | Kind::RepetitionMissing
                    | Kind::RepetitionCountUnclosed
            );
            (e.kind().to_string(), Some(e.span()), literal)
        }
        regex_syntax::Error::Translate(e) => (e.kind().to_string(), Some(e.span()), false),
        other => (other.to_string(), None, false),
    };
    let at = span
        .and_then(|s| pattern.get(s.start.offset..))
        .filter(|rest| !rest.is_empty())
        .map(|rest| format!(" at `{rest}`"))
        .unwrap_or_default();
    let hint = if literal {
        "; to match it literally, escape it with a backslash, as in `r\"\\(\"`"
    } else {
        ""
    };
    format!("`pattern` is not a valid regular expression: {kind}{at}{hint}")
}

/// What keeps a `pattern` from meaning the same to the model's provider, to `jsonschema` and to
/// the runtime check: JSON Schema patterns are ECMA-262 regular expressions, which the runtime
/// check translates to Rust's regex syntax exactly as `jsonschema` does (`jsonschema-regex`).
fn pattern_problem(pattern: &str) -> Option<String> {
    let ast = match regex_syntax::ast::parse::Parser::new().parse(pattern) {
        Ok(ast) => ast,
        Err(e) => {
            return Some(
                unsupported(pattern, &e).unwrap_or_else(|| regex_message(pattern, &e.into())),
            )
        }
    };
    if let Err(e) = regex_syntax::hir::translate::Translator::new().translate(pattern, &ast) {
        return Some(regex_message(pattern, &e.into()));
    }
    if let Some(problem) = regex_syntax::ast::visit(&ast, RustOnly(pattern)).err() {
        return Some(problem);
    }
    if !jsonschema_regex::is_valid_ecma_regex(pattern) {
        return Some("`pattern` is not an ECMA-262 regular expression, the syntax JSON Schema and model providers read it in; write it in that syntax (`[0-9]`, `[A-Za-z]`, `^...$`)".to_owned());
    }
    match jsonschema_regex::to_rust_regex(pattern) {
        Ok(rust) if regex_syntax::Parser::new().parse(&rust).is_ok() => None,
        _ => Some("`pattern` cannot be translated from ECMA-262 to the runtime check's regex syntax; write it with plain characters, classes such as `[0-9]`, groups and repetitions".to_owned()),
    }
}

/// Look-around and backreferences: valid ECMA-262, which `jsonschema` runs with a backtracking
/// engine, but not something the runtime check's linear-time `regex` can run.
fn unsupported(pattern: &str, error: &regex_syntax::ast::Error) -> Option<String> {
    use regex_syntax::ast::ErrorKind as Kind;
    let construct = match error.kind() {
        Kind::UnsupportedLookAround => "look-around (`(?=`, `(?!`, `(?<=`, `(?<!`)",
        Kind::UnsupportedBackreference => "a backreference (`\\1`)",
        _ => return None,
    };
    let at = pattern.get(error.span().start.offset..).unwrap_or_default();
    Some(format!("`pattern` uses {construct} at `{at}`, which the runtime check cannot run (it uses Rust's linear-time `regex`); rewrite it without, or check the value in an `#[arg(validate = path)]` function"))
}

/// Finds Rust-only syntax, and `\b`, which means an ASCII word boundary in ECMA-262 but a
/// Unicode one in `jsonschema` and Rust.
struct RustOnly<'a>(&'a str);

impl RustOnly<'_> {
    fn written(&self, span: &regex_syntax::ast::Span) -> &str {
        self.0
            .get(span.start.offset..span.end.offset)
            .unwrap_or_default()
    }

    /// Escapes Rust reads and ECMA-262 does not, in or out of a class.
    fn literal(&self, literal: &regex_syntax::ast::Literal) -> Option<String> {
        use regex_syntax::ast::{HexLiteralKind, LiteralKind, SpecialLiteralKind};
        let written = self.written(&literal.span);
        let code = u32::from(literal.c);
        let fix = match literal.kind {
            LiteralKind::HexBrace(HexLiteralKind::X)
            | LiteralKind::HexFixed(HexLiteralKind::UnicodeLong) => {
                format!("write `\\u{{{code:X}}}`")
            }
            LiteralKind::Special(SpecialLiteralKind::Bell) => "write `\\x07`".to_owned(),
            _ => return None,
        };
        Some(format!("`{written}` is Rust syntax, not ECMA-262; {fix}"))
    }

    /// `\pL`: ECMA-262 writes every property in braces.
    fn unicode(&self, class: &regex_syntax::ast::ClassUnicode) -> Option<String> {
        let regex_syntax::ast::ClassUnicodeKind::OneLetter(letter) = class.kind else {
            return None;
        };
        let p = if class.negated { 'P' } else { 'p' };
        Some(format!(
            "`{}` is Rust syntax, not ECMA-262; write `\\{p}{{{letter}}}`",
            self.written(&class.span)
        ))
    }
}

impl regex_syntax::ast::Visitor for RustOnly<'_> {
    type Output = ();
    type Err = String;

    fn finish(self) -> Result<(), String> {
        Ok(())
    }

    fn visit_pre(&mut self, ast: &regex_syntax::ast::Ast) -> Result<(), String> {
        use regex_syntax::ast::{AssertionKind, Ast, GroupKind};
        let fix = match ast {
            Ast::Flags(flags) => format!("inline flags `{}` are Rust syntax, not ECMA-262; write the cases out, as in `[Aa]`", self.written(&flags.span)),
            Ast::Assertion(a) => match a.kind {
                AssertionKind::StartText | AssertionKind::EndText => format!("`{}` is Rust syntax, not ECMA-262; write `^` or `$`", self.written(&a.span)),
                AssertionKind::StartLine | AssertionKind::EndLine => return Ok(()),
                _ => format!("`{}` means an ASCII word boundary in JSON Schema (ECMA-262) but a Unicode one in the `jsonschema` validator and Rust's regex; anchor with `^`/`$` or match the separator, as in `[^A-Za-z0-9_]`", self.written(&a.span)),
            },
            Ast::Group(g) => match &g.kind {
                GroupKind::CaptureName { starts_with_p: true, name } => format!("`(?P<{}>` is Rust syntax, not ECMA-262; write `(?<{}>`", name.name, name.name),
                _ => return Ok(()),
            },
            Ast::Literal(literal) => match self.literal(literal) {
                Some(fix) => fix,
                None => return Ok(()),
            },
            Ast::ClassUnicode(class) => match self.unicode(class) {
                Some(fix) => fix,
                None => return Ok(()),
            },
            _ => return Ok(()),
        };
        Err(format!("`pattern`: {fix}"))
    }

    fn visit_class_set_item_pre(
        &mut self,
        item: &regex_syntax::ast::ClassSetItem,
    ) -> Result<(), String> {
        use regex_syntax::ast::ClassSetItem;
        let fix = match item {
            ClassSetItem::Ascii(class) => Some(format!(
                "`{}` is Rust syntax, not ECMA-262; write the range, as in `[A-Za-z]`",
                self.written(&class.span)
            )),
            ClassSetItem::Literal(literal) => self.literal(literal),
            ClassSetItem::Range(range) => self
                .literal(&range.start)
                .or_else(|| self.literal(&range.end)),
            ClassSetItem::Unicode(class) => self.unicode(class),
            _ => None,
        };
        match fix {
            Some(fix) => Err(format!("`pattern`: {fix}")),
            None => Ok(()),
        }
    }
}

/// For a `Result` alias such as `ApiResult<T>`: the `Result` to write instead. The macro reads
/// the signature as written and cannot see what an alias stands for, and treating it as a plain
/// value would send the model `{"Ok": ..}`.
fn not_result_message(ty: &syn::Type) -> String {
    let name = match ty {
        syn::Type::Path(p) => p.path.segments.last().map(|s| s.ident.to_string()),
        _ => None,
    };
    let name = name.unwrap_or_else(|| "Result".to_owned());
    format!(
        "`#[tool]` reads the return type as written and cannot see what `{name}` stands for: write `-> Result<T, E>` in full, with `E` a `ToolError` or convertible into one (or return `T` itself if the tool cannot fail)"
    )
}

pub fn check(cx: &Ctxt, tool: &ToolFn) {
    signature(cx, tool);
    name_and_description(cx, tool);
    policy(cx, tool);
    examples(cx, tool);
    let mut injected = Injected::default();
    for param in &tool.params {
        injected.check(cx, tool, param);
        if matches!(param.kind, ParamKind::Receiver(_) | ParamKind::Pattern) {
            continue;
        }
        param_type(cx, param);
        arg_rules(cx, &param.arg);
    }
    output(cx, tool);
}

/// What the function must be: a plain, non-generic `fn` or `async fn`; `blocking` only on a
/// sync one.
fn signature(cx: &Ctxt, tool: &ToolFn) {
    let sig = &tool.item.sig;
    match (&tool.attrs.blocking, sig.asyncness.is_some()) {
        (Some(blocking), true) => cx.error_spanned_by(
            blocking,
            "`blocking` is for a sync `fn`: an `async fn` already runs on the calling task without blocking it; remove `blocking`",
        ),
        (Some(blocking), false) if !blocking.value => {
            if let Some((_, lit)) = &tool.attrs.timeout_ms {
                cx.error_spanned_by(
                    lit,
                    "nothing can interrupt a sync `fn` that runs inline (`blocking = false`), so this timeout would never fire: remove `timeout_ms`, or remove `blocking = false` to run the function on the blocking pool, where the caller stops waiting at the timeout",
                );
            }
        }
        _ => {}
    }
    if let Some(constness) = &sig.constness {
        cx.error_spanned_by(constness, "a tool cannot be a `const fn`; remove `const`");
    }
    if let Some(unsafety) = &sig.unsafety {
        cx.error_spanned_by(unsafety, "a tool cannot be an `unsafe fn`: the model's arguments are untrusted input; remove `unsafe`");
    }
    if let Some(abi) = &sig.abi {
        cx.error_spanned_by(abi, "a tool cannot declare an ABI; remove it");
    }
    if let Some(variadic) = &sig.variadic {
        cx.error_spanned_by(variadic, "a tool cannot be variadic");
    }
    if !sig.generics.params.is_empty() || sig.generics.where_clause.is_some() {
        let message = if tool.owner.is_some() {
            "a tool method cannot be generic: the model's arguments need one concrete schema; put the type parameters on the `impl` block (`impl<D: Db> Orders<D>`), where they are fixed when the set is registered"
        } else {
            "`#[tool]` functions cannot be generic: the model's arguments need one concrete schema; use concrete types (or an enum for alternatives)"
        };
        cx.error_spanned_by(&sig.generics, message);
    }
    impl_parameters_in_args(cx, tool);
}

/// An argument whose type names a type parameter of the `impl`: the argument struct, and so
/// the schema, is one for every `D`.
fn impl_parameters_in_args(cx: &Ctxt, tool: &ToolFn) {
    for param in tool.args() {
        if let Some(name) = tool.impl_parameter_in(&param.ty) {
            cx.error_spanned_by(
                &param.ty,
                format!("the argument `{}` cannot have a type that names the `impl`'s type parameter `{name}`: the model's arguments need one schema whatever `{name}` is; use a concrete type", param.ident.unraw()),
            );
        }
    }
}

/// What the model reads: a name providers accept and a description.
fn name_and_description(cx: &Ctxt, tool: &ToolFn) {
    if let Some(problem) = name_problem(&tool.name) {
        let fix = if tool.attrs.name.is_some() {
            "write"
        } else {
            "add to `#[tool]`"
        };
        cx.error_at(
            tool.name_span,
            format!(
                "tool name `{}` {problem}; model providers accept only ^[A-Za-z0-9_-]{{1,64}}$: {fix} `name = \"{}\"`, for example",
                tool.name,
                suggest_name(&tool.name)
            ),
        );
    }
    // `description = ".."` is reported where it is written, saying where the text goes.
    if tool.description.is_none() && tool.attrs.description_key.is_none() {
        cx.error_spanned_by(
            &tool.item.sig.ident,
            format!("tool `{}` has no description: add a `///` doc comment above the function saying what the tool does; the model reads it to decide when to call the tool", tool.name),
        );
    }
}

/// Timeout, idempotency and retries that agree with each other.
fn policy(cx: &Ctxt, tool: &ToolFn) {
    let attrs = &tool.attrs;
    if let Some((0, lit)) = &attrs.timeout_ms {
        cx.error_spanned_by(lit, "`timeout_ms = 0` would fail every call; give the tool's expected latency with headroom, for example `timeout_ms = 2000`");
    }
    if let (Some(_), Some(idem)) = (attrs.read_only, &attrs.idempotent) {
        if !idem.value {
            cx.error_spanned_by(idem, "`read_only` implies `idempotent`: a tool that changes nothing can be called twice; remove `idempotent = false` or `read_only`");
        }
    }
    let idempotent =
        attrs.read_only.is_some() || attrs.idempotent.as_ref().is_some_and(|b| b.value);
    if let Some((n, lit)) = &attrs.retries {
        if *n > 0 && !idempotent && !tool.takes_key() {
            cx.error_spanned_by(
                lit,
                format!("`retries = {n}` on a non-idempotent tool could repeat its side effect: add a `key: IdempotencyKey` parameter and send it downstream, or declare `idempotent = true` if calling twice is harmless"),
            );
        }
    }
}

/// Each `example` is the JSON text of an object (whether the tool accepts it is checked when
/// the registry is built, by the tool's own checks).
fn examples(cx: &Ctxt, tool: &ToolFn) {
    for lit in &tool.attrs.examples {
        let problem = match serde_json::from_str::<serde_json::Value>(&lit.value()) {
            Ok(serde_json::Value::Object(_)) => continue,
            Ok(other) => format!("is {}, not an object", json_kind(&other)),
            Err(e) => format!("is not JSON ({e})"),
        };
        let fields: Vec<String> = tool
            .args()
            .map(|p| format!("\"{}\":..", p.ident.unraw()))
            .collect();
        cx.error_spanned_by(
            lit,
            format!(
                "this `example` {problem}: an example is one object of the tool's arguments, keyed by parameter name, such as `example = r#\"{{{}}}\"#`",
                fields.join(",")
            ),
        );
    }
}

fn json_kind(value: &serde_json::Value) -> &'static str {
    match value {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}

/// Receivers, patterns and injected parameters: what cannot be a property of the arguments.
#[derive(Default)]
struct Injected {
    key: bool,
    context: bool,
}

impl Injected {
    fn check(&mut self, cx: &Ctxt, tool: &ToolFn, param: &Param) {
        let seen = match param.kind {
            ParamKind::Receiver(receiver) => {
                if let Some(message) = receiver_problem(tool, receiver) {
                    cx.error_spanned_by(&param.written, message);
                }
                return;
            }
            ParamKind::Pattern => {
                return cx.error_spanned_by(&param.written, "tool parameters must be plain names, such as `order_id: String`: each name becomes a property of the JSON arguments; destructure inside the function");
            }
            ParamKind::Arg => return,
            ParamKind::Key => std::mem::replace(&mut self.key, true),
            ParamKind::Context => std::mem::replace(&mut self.context, true),
            ParamKind::State(_) => false,
        };
        if let Some(written) = &param.arg.written {
            cx.error_spanned_by(written, format!("`{}` is injected by the registry, not sent by the model, so it takes no `#[arg]`; remove the attribute", param.ident));
        }
        if seen {
            cx.error_spanned_by(
                &param.ty,
                "this is injected once per call; declare it in one parameter only",
            );
        }
    }
}

/// What is wrong with how a method takes `self`: a tool method of a `#[toolset]` impl takes
/// `&self`, lent from the one instance every call shares.
fn receiver_problem(tool: &ToolFn, receiver: Receiver) -> Option<&'static str> {
    if tool.owner.is_none() {
        return Some("a `#[tool]` method needs `#[toolset]` on its `impl` block: write `#[toolset] impl Orders { .. }` and register every tool of it at once with `Registry::builder().toolset(orders)`; each call borrows the one shared instance as `&self`");
    }
    match receiver {
        Receiver::Shared => None,
        Receiver::Mut => Some("a tool method takes `&self`, not `&mut self`: calls run concurrently on the one shared instance, so none of them can borrow it mutably; write `&self` and keep what changes behind a `Mutex` or an atomic"),
        Receiver::Value => Some("a tool method takes `&self`, not `self`: the instance is shared by every call (behind an `Arc`) and cannot be moved into one; write `&self` and clone what the call needs to own"),
        Receiver::Typed => Some("a tool method takes `&self`: the registry holds the instance in an `Arc` and lends `&self` to each call; write `&self`"),
    }
}

/// Why a model cannot fill std's `SystemTime` or `Instant` (`name`), and what to take instead:
/// for a `#[tool]` parameter and for a field of a `#[data]` type the model sends.
pub fn clock_message(name: &str) -> String {
    const TIMESTAMP: &str = "take a `String` holding an RFC 3339 timestamp (say so in its `///` doc: \"when, as RFC 3339, such as 2024-05-01T12:00:00Z\") and parse it in the function, or a `chrono::DateTime<Utc>` or `jiff::Timestamp` (with the crate's `serde` feature and schemars' `chrono04` or `jiff02` feature in Cargo.toml), whose schema is a string of format `date-time`";
    match name {
        "Instant" => format!("a model cannot send an `Instant`: it is a reading of this process's monotonic clock, with no meaning outside it (and no serde or schema support); for a point in time, {TIMESTAMP}; for a delay, take an integer with its unit in the name, such as `delay_ms: u64`"),
        _ => format!("`SystemTime` serializes as `{{secs_since_epoch, nanos_since_epoch}}`, which models fill badly (they know dates, not epoch seconds); {TIMESTAMP}"),
    }
}

/// A parameter's type must be owned and concrete.
fn param_type(cx: &Ctxt, param: &Param) {
    if matches!(param.kind, ParamKind::Arg) {
        for (path, name) in crate::ast::clock_types(&param.ty) {
            cx.error_spanned_by(path, clock_message(name));
        }
    }
    if let syn::Type::Reference(r) = &param.ty {
        cx.error_spanned_by(
            r,
            format!(
                "tool parameters must be owned: write `{}: {}`; the arguments are parsed per call and moved into the function",
                param.ident.unraw(),
                owned(&r.elem)
            ),
        );
    }
    if let syn::Type::ImplTrait(t) = &param.ty {
        cx.error_spanned_by(
            t,
            "`impl Trait` parameters cannot be deserialized; use a concrete type",
        );
    }
}

/// `#[arg]` rules that can hold for some value, and patterns that compile.
fn arg_rules(cx: &Ctxt, arg: &ArgAttrs) {
    match &arg.range {
        Some((_, Some(min), Some(max))) if min.value.above(max.value) => cx.error_at(
            min.span,
            format!(
                "`range` has min {} above max {}; swap them",
                min.value, max.value
            ),
        ),
        Some((span, None, None)) => cx.error_at(
            *span,
            "`range` needs `min`, `max` or both: `range(min = 1, max = 9)`",
        ),
        _ => {}
    }
    match &arg.length {
        Some((_, Some((min, span)), Some((max, _)))) if min > max => cx.error_at(
            *span,
            format!("`length` has min {min} above max {max}; swap them"),
        ),
        Some((span, None, None)) => cx.error_at(
            *span,
            "`length` needs `min`, `max` or both: `length(min = 1, max = 300)`",
        ),
        _ => {}
    }
    if let Some(lit) = &arg.pattern {
        if let Some(problem) = pattern_problem(&lit.value()) {
            cx.error_spanned_by(lit, problem);
        }
    }
    if let Some((_, OneOf::Strings(values))) = &arg.one_of {
        let mut seen = std::collections::HashSet::new();
        for v in values {
            if !seen.insert(v.value()) {
                cx.error_spanned_by(v, "duplicate value in `one_of`");
            }
        }
    }
    if let Some(default) = &arg.default {
        if let Some(problem) = default_problem(arg, default) {
            cx.error_spanned_by(default, problem);
        }
    }
}

/// A literal number as written (`50`, `-3`, `0.5`), or `None` for any other expression.
fn literal_number(expr: &syn::Expr) -> Option<NumValue> {
    match expr {
        syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Int(i),
            ..
        }) => i
            .base10_parse::<u64>()
            .ok()
            .map(|v| NumValue::Int(i128::from(v))),
        syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Float(f),
            ..
        }) => f.base10_parse::<f64>().ok().map(NumValue::Float),
        syn::Expr::Unary(syn::ExprUnary {
            op: syn::UnOp::Neg(_),
            expr,
            ..
        }) => match literal_number(expr)? {
            NumValue::Int(v) => Some(NumValue::Int(-v)),
            NumValue::Float(v) => Some(NumValue::Float(-v)),
        },
        _ => None,
    }
}

/// Why a literal `default` breaks the parameter's own rules: a call that leaves the argument
/// out would then be refused, blaming the model for a value it never sent. A default that is
/// not a literal is checked by nothing here.
fn default_problem(arg: &ArgAttrs, default: &syn::Expr) -> Option<String> {
    let text = match default {
        syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Str(s),
            ..
        }) => Some(s.value()),
        _ => None,
    };
    let number = literal_number(default);
    let refused =
        "a call that leaves the argument out would be refused for a value the model never sent";
    if let (Some(n), Some((_, min, max))) = (number, &arg.range) {
        let below = min.as_ref().is_some_and(|min| min.value.above(n));
        let above = max.as_ref().is_some_and(|max| n.above(max.value));
        if below || above {
            let bound = |b: &Option<crate::attr::NumLit>, name: &str| {
                b.as_ref().map(|b| format!("{name} = {}", b.value))
            };
            let written = [bound(min, "min"), bound(max, "max")]
                .into_iter()
                .flatten()
                .collect::<Vec<_>>()
                .join(", ");
            return Some(format!(
                "`default = {n}` is outside `range({written})`: {refused}; choose a default within the range"
            ));
        }
    }
    if let (Some(text), Some((_, min, max))) = (&text, &arg.length) {
        let chars = text.chars().count() as u64;
        if min.is_some_and(|(min, _)| chars < min) || max.is_some_and(|(max, _)| chars > max) {
            return Some(format!(
                "`default = {text:?}` is {chars} characters, outside the `length` rule: {refused}; choose a default that fits it"
            ));
        }
    }
    match (&arg.one_of, &text, number) {
        (Some((_, OneOf::Strings(values))), Some(text), _)
            if !values.iter().any(|v| v.value() == *text) =>
        {
            Some(format!(
                "`default = {text:?}` is not one of the `one_of` values: {refused}; make it one of them"
            ))
        }
        (Some((_, OneOf::Numbers(values))), _, Some(n))
            if !values.iter().any(|v| !v.value.above(n) && !n.above(v.value)) =>
        {
            Some(format!(
                "`default = {n}` is not one of the `one_of` values: {refused}; make it one of them"
            ))
        }
        _ => None,
    }
}

/// The result: `Result<T, E>`, `T`, `Option<T>` or `()`, with a named `T`.
fn output(cx: &Ctxt, tool: &ToolFn) {
    let value = match &tool.output {
        Output::Result { ok, .. } => ok,
        Output::Plain { ty, .. } => ty,
        Output::Unit(_) => return,
        Output::Unsupported(ty) => return cx.error_spanned_by(ty, not_result_message(ty)),
    };
    if matches!(**value, syn::Type::ImplTrait(_) | syn::Type::Infer(_)) {
        cx.error_spanned_by(
            value,
            "a tool's result type must be named, such as `Order` or `Result<Order, ToolError>`: its JSON Schema is generated from it",
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_providers_rule() {
        assert_eq!(name_problem("get_order-v2"), None);
        assert_eq!(name_problem(&"a".repeat(64)), None);
        assert_eq!(name_problem(""), Some("is empty".to_owned()));
        assert_eq!(name_problem("get order"), Some("contains ' '".to_owned()));
        assert_eq!(name_problem("get.order"), Some("contains '.'".to_owned()));
        assert_eq!(name_problem("commandé"), Some("contains 'é'".to_owned()));
        assert_eq!(
            name_problem(&"a".repeat(70)),
            Some("has 70 characters, 6 too many".to_owned())
        );
    }

    #[test]
    fn suggested_names_follow_the_rule() {
        for bad in ["get order", "commandé", "", "a.b/c"] {
            assert_eq!(name_problem(&suggest_name(bad)), None, "{bad}");
        }
        assert_eq!(suggest_name("get order"), "get_order");
        assert_eq!(suggest_name(&"x".repeat(80)).len(), 64);
    }

    #[test]
    fn references_suggest_the_owned_type() {
        let owned_of = |ty: syn::Type| match ty {
            syn::Type::Reference(r) => owned(&r.elem),
            _ => unreachable!(),
        };
        assert_eq!(owned_of(syn::parse_quote!(&str)), "String");
        assert_eq!(owned_of(syn::parse_quote!(&'static str)), "String");
        assert_eq!(owned_of(syn::parse_quote!(&[u32])), "Vec<u32>");
        assert_eq!(owned_of(syn::parse_quote!(&Order)), "Order");
    }

    fn regex_error(pattern: &str) -> String {
        match regex_syntax::Parser::new().parse(pattern) {
            Ok(_) => panic!("{pattern} parsed"),
            Err(e) => regex_message(pattern, &e),
        }
    }

    #[test]
    fn regex_errors_say_what_and_where() {
        assert_eq!(
            regex_error("^[A-Z{3}$"),
            "`pattern` is not a valid regular expression: unclosed character class at `[A-Z{3}$`; to match it literally, escape it with a backslash, as in `r\"\\(\"`"
        );
        let unclosed = regex_error("a(b");
        assert!(unclosed.contains("unclosed group at `(b`"), "{unclosed}");
        // Not a character meant literally: no escaping advice.
        let escape = regex_error("\\y");
        assert!(!escape.contains("escape it"), "{escape}");
    }

    #[test]
    fn result_aliases_are_named() {
        let message = not_result_message(&syn::parse_quote!(ApiResult<Order>));
        assert!(message.contains("`ApiResult`"), "{message}");
        assert!(message.contains("`-> Result<T, E>` in full"), "{message}");
    }

    #[test]
    fn patterns_json_schema_and_the_runtime_read_alike_pass() {
        for pattern in [
            "^A[0-9]+$",
            r"^A\d{4}$",
            r"^\w+$",
            r"^\S+$",
            "^.+$",
            "^(?<id>[a-z]+)$",
        ] {
            assert_eq!(pattern_problem(pattern), None, "{pattern}");
        }
    }

    #[test]
    fn patterns_that_would_mean_something_else_name_the_construct_and_the_fix() {
        let cases = [
            (r"\bA", "ASCII word boundary in JSON Schema"),
            ("(?i)abc", "inline flags `(?i)`"),
            (r"\Aabc", "write `^` or `$`"),
            ("[[:alpha:]]", "write the range"),
            ("(?P<id>a)", "write `(?<id>`"),
            (r"\x{41}", r"write `\u{41}`"),
            (r"[\x{41}-Z]", r"write `\u{41}`"),
            (r"\pL", r"write `\p{L}`"),
            (r"[\PN]", r"write `\P{N}`"),
            (r"\a", r"write `\x07`"),
            ("a(?=b)", "look-around"),
            (r"(a)\1", "a backreference"),
        ];
        for (pattern, fragment) in cases {
            let problem = pattern_problem(pattern).unwrap_or_default();
            assert!(problem.contains(fragment), "{pattern}: {problem:?}");
        }
    }
}
