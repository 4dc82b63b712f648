//! Checks of the model, each reported at the span that caused it with the fix in the message.

use crate::ast::{Output, ParamKind, ToolFn};
use crate::attr::OneOf;
use crate::ctxt::Ctxt;

/// The rule OpenAI and Anthropic share for function names.
fn valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

pub fn check(cx: &Ctxt, tool: &ToolFn) {
    let sig = &tool.item.sig;
    let fn_name = &sig.ident;

    if sig.asyncness.is_none() {
        cx.error_spanned_by(
            sig.fn_token,
            format!("`#[tool]` functions must be `async`: write `async fn {fn_name}(...)`"),
        );
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
        cx.error_spanned_by(
            &sig.generics,
            "`#[tool]` functions cannot be generic: the model's arguments need one concrete schema; use concrete types (or an enum for alternatives)",
        );
    }

    if !valid_name(&tool.name) {
        let fix = if tool.attrs.name.is_some() {
            "change `name`"
        } else {
            "add `name = \"...\"` to `#[tool]`"
        };
        cx.error_at(
            tool.name_span,
            format!(
                "tool name `{}` is not accepted by model providers: it must match ^[A-Za-z0-9_-]{{1,64}}$; {fix}",
                tool.name
            ),
        );
    }

    if tool.description.is_none() {
        cx.error_spanned_by(
            fn_name,
            format!("tool `{}` has no description: add a `///` doc comment above the function saying what the tool does; the model reads it to decide when to call the tool", tool.name),
        );
    }

    if let Some((0, lit)) = &tool.attrs.timeout_ms {
        cx.error_spanned_by(lit, "`timeout_ms = 0` would fail every call; give the tool's expected latency with headroom, for example `timeout_ms = 2000`");
    }

    if let (Some(ro), Some(idem)) = (tool.attrs.read_only, &tool.attrs.idempotent) {
        if !idem.value {
            cx.error_spanned_by(idem, "`read_only` implies `idempotent`: a tool that changes nothing can be called twice; remove `idempotent = false` or `read_only`");
            let _ = ro;
        }
    }

    let idempotent =
        tool.attrs.read_only.is_some() || tool.attrs.idempotent.as_ref().is_some_and(|b| b.value);
    if let Some((n, lit)) = &tool.attrs.retries {
        if *n > 0 && !idempotent && !tool.takes_key() {
            cx.error_spanned_by(
                lit,
                format!("`retries = {n}` on a non-idempotent tool could repeat its side effect: add a `key: IdempotencyKey` parameter and send it downstream, or declare `idempotent = true` if calling twice is harmless"),
            );
        }
    }

    let mut seen_key = false;
    let mut seen_ctx = false;
    for param in &tool.params {
        match &param.kind {
            ParamKind::Invalid => {
                let span = param.arg.span.unwrap_or_else(proc_macro2::Span::call_site);
                if param.ident == "self_" {
                    cx.error_at(span, "`#[tool]` cannot take `self`: write a free `async fn`, and pass shared state as a `State<T>` parameter");
                } else {
                    cx.error_at(span, "tool parameters must be plain names (`order_id: String`): each becomes a field of the JSON arguments");
                }
                continue;
            }
            ParamKind::Key | ParamKind::Context | ParamKind::State(_) => {
                if let Some(span) = param.arg.span {
                    cx.error_at(span, format!("`{}` is injected by the registry, not sent by the model, so it takes no `#[arg]`; remove it", param.ident));
                }
                let dup = match param.kind {
                    ParamKind::Key => std::mem::replace(&mut seen_key, true),
                    ParamKind::Context => std::mem::replace(&mut seen_ctx, true),
                    _ => false,
                };
                if dup {
                    cx.error_spanned_by(
                        &param.ty,
                        "this is injected once per call; declare it in one parameter only",
                    );
                }
            }
            ParamKind::Arg => {}
        }
        if let syn::Type::Reference(r) = &param.ty {
            cx.error_spanned_by(r, "tool parameters must be owned (`String`, not `&str`): the arguments are parsed per call and moved into the function");
        }
        if let syn::Type::ImplTrait(t) = &param.ty {
            cx.error_spanned_by(
                t,
                "`impl Trait` parameters cannot be deserialized; use a concrete type",
            );
        }
        let arg = &param.arg;
        if let Some((_, Some(min), Some(max))) = &arg.range {
            if min.value > max.value {
                cx.error_at(
                    min.span,
                    format!(
                        "`range` has min {} above max {}; swap them",
                        min.value, max.value
                    ),
                );
            }
        }
        if let Some((_, Some((min, span)), Some((max, _)))) = &arg.length {
            if min > max {
                cx.error_at(
                    *span,
                    format!("`length` has min {min} above max {max}; swap them"),
                );
            }
        }
        if let Some((span, None, None)) = &arg.range {
            cx.error_at(
                *span,
                "`range` needs `min`, `max` or both: `range(min = 1, max = 9)`",
            );
        }
        if let Some((span, None, None)) = &arg.length {
            cx.error_at(
                *span,
                "`length` needs `min`, `max` or both: `length(min = 1, max = 300)`",
            );
        }
        if let Some(lit) = &arg.pattern {
            if let Err(e) = regex_syntax::Parser::new().parse(&lit.value()) {
                let detail = e.to_string();
                let last = detail
                    .lines()
                    .rev()
                    .find(|l| !l.trim().is_empty())
                    .unwrap_or("invalid pattern");
                cx.error_spanned_by(
                    lit,
                    format!(
                        "`pattern` is not a valid regular expression: {}",
                        last.trim()
                    ),
                );
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
    }

    if let Output::Unsupported(span) = &tool.output {
        cx.error_at(*span, "a tool returns `Result<T, ToolError>` (or `Result<T, E>` with `E: Into<ToolError>`), where `T: Serialize + JsonSchema` is what the model receives");
    }
}
