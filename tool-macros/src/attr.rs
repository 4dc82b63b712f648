//! Parsing of `#[tool(...)]` and `#[arg(...)]` into plain data. Unknown keys and malformed
//! values are recorded in the [`Ctxt`] and parsing goes on, so one compile shows every mistake.

use proc_macro2::{Span, TokenStream};
use quote::ToTokens;
use syn::meta::ParseNestedMeta;
use syn::spanned::Spanned;
use syn::{Expr, ExprLit, ExprUnary, Lit, LitBool, LitInt, LitStr, Path, Token, UnOp};

use crate::ctxt::Ctxt;

pub const TOOL_KEYS: &[&str] = &[
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
    "grounds",
];

pub const ARG_KEYS: &[&str] = &[
    "range",
    "length",
    "pattern",
    "one_of",
    "default",
    "validate",
    "sensitive",
    "grounded",
];

#[derive(Default)]
pub struct ToolAttrs {
    pub name: Option<LitStr>,
    pub timeout_ms: Option<(u64, LitInt)>,
    pub idempotent: Option<LitBool>,
    pub read_only: Option<Span>,
    pub retries: Option<(u32, LitInt)>,
    pub scopes: Vec<LitStr>,
    pub validate: Option<Path>,
    pub authorize: Option<Path>,
    pub fallback: Option<Path>,
    pub requires_approval: Option<Span>,
    /// `grounds(kind = "path", ...)`: the kind (as written) and where in the result.
    pub grounds: Vec<(syn::Ident, LitStr)>,
}

/// A number literal as written: `1`, `0.5`, `-3`.
#[derive(Clone)]
pub struct NumLit {
    pub value: f64,
    pub integer: bool,
    pub span: Span,
}

/// A length bound and where it was written.
pub type LengthBound = (u64, Span);

pub enum OneOf {
    Strings(Vec<LitStr>),
    Numbers(Vec<NumLit>),
}

#[derive(Default)]
pub struct ArgAttrs {
    pub range: Option<(Span, Option<NumLit>, Option<NumLit>)>,
    pub length: Option<(Span, Option<LengthBound>, Option<LengthBound>)>,
    pub pattern: Option<LitStr>,
    pub one_of: Option<(Span, OneOf)>,
    pub default: Option<Expr>,
    pub validate: Vec<Path>,
    pub sensitive: Option<Span>,
    pub grounded: Option<LitStr>,
    /// The first `#[arg]` as written, for errors about the attribute as a whole.
    pub written: Option<TokenStream>,
}

pub fn key_of(meta: &ParseNestedMeta) -> String {
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
pub fn skip_value(meta: &ParseNestedMeta) -> syn::Result<()> {
    if meta.input.peek(Token![=]) {
        let value = meta.value()?;
        let _: Expr = value.parse()?;
    } else if meta.input.peek(syn::token::Paren) {
        let _: proc_macro2::Group = meta.input.parse()?;
    }
    Ok(())
}

/// Levenshtein distance, for "did you mean" hints.
pub fn distance(a: &str, b: &str) -> usize {
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
    ("readonly", "write `read_only`"),
    ("idempotency_key", "take a `key: IdempotencyKey` parameter"),
    ("scope", "write `scopes = [\"orders:read\"]`"),
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

fn duplicate(cx: &Ctxt, meta: &ParseNestedMeta, key: &str, what: &str) {
    cx.error_spanned_by(
        &meta.path,
        format!("duplicate `{key}` in `{what}`; keep one"),
    );
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

pub fn parse_tool_attrs(cx: &Ctxt, tokens: TokenStream) -> ToolAttrs {
    let mut attrs = ToolAttrs::default();
    let parser = syn::meta::parser(|meta| {
        let key = key_of(&meta);
        match key.as_str() {
            "name" => {
                let lit: LitStr = meta.value()?.parse()?;
                if attrs.name.replace(lit).is_some() {
                    duplicate(cx, &meta, &key, "#[tool]");
                }
            }
            "timeout_ms" => {
                let lit: LitInt = meta.value()?.parse()?;
                if let Some(v) = parse_u64(cx, &lit) {
                    if attrs.timeout_ms.replace((v, lit)).is_some() {
                        duplicate(cx, &meta, &key, "#[tool]");
                    }
                }
            }
            "idempotent" => {
                let lit: LitBool = meta.value()?.parse()?;
                if attrs.idempotent.replace(lit).is_some() {
                    duplicate(cx, &meta, &key, "#[tool]");
                }
            }
            "grounds" => {
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
                    if attrs.grounds.iter().any(|(k, p)| *k == kind && p.value() == text) {
                        duplicate(cx, &inner, &kind.to_string(), "grounds(..)");
                    }
                    attrs.grounds.push((kind, path));
                    Ok(())
                })?;
            }
            "requires_approval" => {
                if meta.input.peek(Token![=]) {
                    cx.error_spanned_by(
                        &meta.path,
                        "`requires_approval` is a flag: write `requires_approval`, not `requires_approval = ...`",
                    );
                    skip_value(&meta)?;
                } else if attrs.requires_approval.replace(meta.path.span()).is_some() {
                    duplicate(cx, &meta, &key, "#[tool]");
                }
            }
            "read_only" => {
                if meta.input.peek(Token![=]) {
                    cx.error_spanned_by(
                        &meta.path,
                        "`read_only` is a flag: write `read_only`, not `read_only = ...`",
                    );
                    skip_value(&meta)?;
                } else if attrs.read_only.replace(meta.path.span()).is_some() {
                    duplicate(cx, &meta, &key, "#[tool]");
                }
            }
            "retries" => {
                let lit: LitInt = meta.value()?.parse()?;
                match lit.base10_parse::<u32>() {
                    Ok(v) => {
                        if attrs.retries.replace((v, lit)).is_some() {
                            duplicate(cx, &meta, &key, "#[tool]");
                        }
                    }
                    Err(_) => {
                        cx.error_spanned_by(&lit, "`retries` must be a small non-negative integer")
                    }
                }
            }
            "scopes" => {
                let array: syn::ExprArray = meta.value()?.parse()?;
                for elem in array.elems {
                    match elem {
                        Expr::Lit(ExprLit {
                            lit: Lit::Str(s), ..
                        }) => attrs.scopes.push(s),
                        other => cx.error_spanned_by(
                            other,
                            "scopes are string literals: `scopes = [\"orders:write\"]`",
                        ),
                    }
                }
            }
            "validate" => {
                let path: Path = meta.value()?.parse()?;
                if attrs.validate.replace(path).is_some() {
                    duplicate(cx, &meta, &key, "#[tool]");
                }
            }
            "authorize" => {
                let path: Path = meta.value()?.parse()?;
                if attrs.authorize.replace(path).is_some() {
                    duplicate(cx, &meta, &key, "#[tool]");
                }
            }
            "fallback" => {
                let path: Path = meta.value()?.parse()?;
                if attrs.fallback.replace(path).is_some() {
                    duplicate(cx, &meta, &key, "#[tool]");
                }
            }
            other => {
                cx.error_spanned_by(
                    &meta.path,
                    unknown_key_message("#[tool]", other, TOOL_KEYS, TOOL_KEY_HINTS),
                );
                skip_value(&meta)?;
            }
        }
        Ok(())
    });
    if let Err(e) = syn::parse::Parser::parse2(parser, tokens) {
        cx.syn_error(e);
    }
    attrs
}

fn number(cx: &Ctxt, expr: &Expr) -> Option<NumLit> {
    match expr {
        Expr::Lit(ExprLit {
            lit: Lit::Int(i), ..
        }) => match i.base10_parse::<i64>() {
            Ok(v) => Some(NumLit {
                value: v as f64,
                integer: true,
                span: i.span(),
            }),
            Err(_) => {
                cx.error_spanned_by(i, "this integer does not fit in an i64");
                None
            }
        },
        Expr::Lit(ExprLit {
            lit: Lit::Float(f), ..
        }) => match f.base10_parse::<f64>() {
            Ok(v) => Some(NumLit {
                value: v,
                integer: false,
                span: f.span(),
            }),
            Err(_) => {
                cx.error_spanned_by(f, "expected a float literal");
                None
            }
        },
        Expr::Unary(ExprUnary {
            op: UnOp::Neg(_),
            expr: inner,
            ..
        }) => number(cx, inner).map(|n| NumLit {
            value: -n.value,
            span: expr.span(),
            ..n
        }),
        other => {
            cx.error_spanned_by(other, "expected a number literal such as `1` or `0.5`");
            None
        }
    }
}

fn bounds<T>(
    cx: &Ctxt,
    meta: &ParseNestedMeta,
    rule: &str,
    mut read: impl FnMut(&Ctxt, &Expr) -> Option<T>,
) -> syn::Result<(Option<T>, Option<T>)> {
    let (mut min, mut max) = (None, None);
    meta.parse_nested_meta(|inner| {
        let key = key_of(&inner);
        let expr: Expr = match key.as_str() {
            "min" | "max" => inner.value()?.parse()?,
            other => {
                cx.error_spanned_by(
                    &inner.path,
                    format!("unknown `{rule}` bound `{other}`; write `{rule}(min = .., max = ..)` (either may be omitted)"),
                );
                skip_value(&inner)?;
                return Ok(());
            }
        };
        let slot = if key == "min" { &mut min } else { &mut max };
        if slot.replace(read(cx, &expr)).is_some() {
            cx.error_spanned_by(&inner.path, format!("duplicate `{key}` in `{rule}(...)`"));
        }
        Ok(())
    })?;
    Ok((min.flatten(), max.flatten()))
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

pub fn parse_arg_attr(cx: &Ctxt, attr: &syn::Attribute, attrs: &mut ArgAttrs) {
    attrs.written.get_or_insert_with(|| attr.to_token_stream());
    let result = attr.parse_nested_meta(|meta| {
        let key = key_of(&meta);
        let span = meta.path.span();
        match key.as_str() {
            "range" => {
                if !meta.input.peek(syn::token::Paren) {
                    cx.error_spanned_by(&meta.path, "write `range(min = 1, max = 9)`; either bound may be omitted");
                    return skip_value(&meta);
                }
                let (min, max) = bounds(cx, &meta, "range", number)?;
                if attrs.range.replace((span, min, max)).is_some() {
                    duplicate(cx, &meta, &key, "#[arg]");
                }
            }
            "length" => {
                if !meta.input.peek(syn::token::Paren) {
                    cx.error_spanned_by(&meta.path, "write `length(min = 1, max = 300)`; either bound may be omitted");
                    return skip_value(&meta);
                }
                let (min, max) = bounds(cx, &meta, "length", length_bound)?;
                if attrs.length.replace((span, min, max)).is_some() {
                    duplicate(cx, &meta, &key, "#[arg]");
                }
            }
            "pattern" => {
                let lit: LitStr = meta.value()?.parse()?;
                if attrs.pattern.replace(lit).is_some() {
                    duplicate(cx, &meta, &key, "#[arg]");
                }
            }
            "one_of" => {
                let array: syn::ExprArray = meta.value()?.parse()?;
                let mut strings = Vec::new();
                let mut numbers = Vec::new();
                for elem in &array.elems {
                    match elem {
                        Expr::Lit(ExprLit { lit: Lit::Str(s), .. }) => strings.push(s.clone()),
                        other => {
                            if let Some(n) = number(cx, other) {
                                numbers.push(n);
                            }
                        }
                    }
                }
                let one_of = match (strings.is_empty(), numbers.is_empty()) {
                    (true, true) => {
                        cx.error_spanned_by(&array, "`one_of` needs at least one value: `one_of = [\"a\", \"b\"]`");
                        None
                    }
                    (false, false) => {
                        cx.error_spanned_by(&array, "`one_of` values must be all strings or all numbers");
                        None
                    }
                    (false, true) => Some(OneOf::Strings(strings)),
                    (true, false) => Some(OneOf::Numbers(numbers)),
                };
                if let Some(one_of) = one_of {
                    if attrs.one_of.replace((span, one_of)).is_some() {
                        duplicate(cx, &meta, &key, "#[arg]");
                    }
                }
            }
            "default" => {
                let expr: Expr = meta.value()?.parse()?;
                if attrs.default.replace(expr).is_some() {
                    duplicate(cx, &meta, &key, "#[arg]");
                }
            }
            "validate" => {
                let path: Path = meta.value()?.parse()?;
                attrs.validate.push(path);
            }
            "sensitive" => {
                if attrs.sensitive.replace(span).is_some() {
                    duplicate(cx, &meta, &key, "#[arg]");
                }
            }
            "grounded" => {
                let lit: LitStr = meta.value()?.parse()?;
                if lit.value().trim().is_empty() {
                    cx.error_spanned_by(
                        &lit,
                        "name the kind of id: `grounded = \"order\"`, matching a tool's `grounds(order = \"id\")`",
                    );
                }
                if attrs.grounded.replace(lit).is_some() {
                    duplicate(cx, &meta, &key, "#[arg]");
                }
            }
            other => {
                cx.error_spanned_by(&meta.path, unknown_key_message("#[arg]", other, ARG_KEYS, ARG_KEY_HINTS));
                skip_value(&meta)?;
            }
        }
        Ok(())
    });
    if let Err(e) = result {
        cx.syn_error(e);
    }
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
