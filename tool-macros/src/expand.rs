//! Code generation only: the validated model in, the function plus its argument struct, tool
//! struct, `Tool` impl and collection entry out. Generated code names `::toolwright::__private_v0_1`
//! only, so users depend on `toolwright` alone.

use proc_macro2::{Ident, Literal, Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::ext::IdentExt;

use crate::ast::{token_spans, Output, Param, ParamKind, ToolFn};
use crate::attr::{NumLit, OneOf};

fn pascal_case(snake: &str) -> String {
    let mut out = String::with_capacity(snake.len());
    let mut upper = true;
    for c in snake.chars() {
        if c == '_' {
            upper = true;
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

fn number(n: &NumLit) -> TokenStream {
    let span = n.span;
    if n.integer {
        let v = n.value as i64;
        let lit = Literal::i64_unsuffixed(v.unsigned_abs() as i64);
        let sign = (v < 0).then(|| quote!(-));
        quote_spanned!(span=> ::toolwright::__private_v0_1::Number::int(#sign #lit))
    } else {
        let lit = Literal::f64_suffixed(n.value.abs());
        let sign = (n.value < 0.0).then(|| quote!(-));
        quote_spanned!(span=> ::toolwright::__private_v0_1::Number::float(#sign #lit))
    }
}

/// `expr` wrapped in `identity(..)` so that the expression's span runs from `first` to `last`:
/// stable Rust cannot join spans, but rustc spans a call from its path to its closing paren, so a
/// type error in `expr` underlines all the user tokens between `first` and `last`.
fn spanning(first: Span, last: Span, expr: TokenStream) -> TokenStream {
    let callee = quote_spanned!(first=> ::core::convert::identity);
    let mut args = proc_macro2::Group::new(proc_macro2::Delimiter::Parenthesis, expr);
    args.set_span(last);
    quote!(#callee #args)
}

/// Where a user's `path::to_fn` is blamed: its last segment.
fn path_span(path: &syn::Path) -> Span {
    path.segments
        .last()
        .map_or_else(Span::call_site, |s| s.ident.span())
}

/// `tokens` shown at `span` in diagnostics, each keeping its own hygiene.
fn located_at(tokens: &TokenStream, span: Span) -> TokenStream {
    tokens
        .clone()
        .into_iter()
        .map(|mut tree| {
            if let proc_macro2::TokenTree::Group(group) = &tree {
                let mut inner =
                    proc_macro2::Group::new(group.delimiter(), located_at(&group.stream(), span));
                inner.set_span(group.span().located_at(span));
                tree = proc_macro2::TokenTree::Group(inner);
            } else {
                tree.set_span(tree.span().located_at(span));
            }
            tree
        })
        .collect()
}

fn opt<T>(value: &Option<T>, f: impl Fn(&T) -> TokenStream) -> TokenStream {
    match value {
        Some(v) => {
            let inner = f(v);
            quote!(::core::option::Option::Some(#inner))
        }
        None => quote!(::core::option::Option::None),
    }
}

/// The rules of one argument as `Rule` constants (schema half) and checks (runtime half), both
/// from the same parsed declaration.
fn rules(param: &Param, field_name: &str) -> (Vec<TokenStream>, Vec<TokenStream>) {
    let ident = &param.ident;
    let arg = &param.arg;
    let mut consts = Vec::new();
    let mut checks = Vec::new();
    let p = quote!(::toolwright::__private_v0_1);

    // Each check is spanned entirely at its rule, field access included, so a rule that does
    // not fit the parameter's type (`range` on a `String`) is reported at the rule alone.
    let at = |span: Span| {
        let mut field = ident.clone();
        field.set_span(span);
        (
            quote_spanned!(span=> ::toolwright::__private_v0_1::rules),
            quote_spanned!(span=> &__args.#field),
        )
    };

    if let Some((span, min, max)) = &arg.range {
        let (min, max) = (opt(min, number), opt(max, number));
        consts.push(quote!(#p::Rule::Range { min: #min, max: #max }));
        let (rules, field) = at(*span);
        checks.push(
            quote_spanned!(*span=> #rules::range(#field, #field_name, #min, #max, __report);),
        );
    }
    if let Some((span, min, max)) = &arg.length {
        let (min, max) = (opt(min, |(v, _)| quote!(#v)), opt(max, |(v, _)| quote!(#v)));
        consts.push(quote!(#p::Rule::Length { min: #min, max: #max }));
        let (rules, field) = at(*span);
        checks.push(
            quote_spanned!(*span=> #rules::length(#field, #field_name, #min, #max, __report);),
        );
    }
    if let Some(lit) = &arg.pattern {
        let span = lit.span();
        consts.push(quote!(#p::Rule::Pattern(#lit)));
        let (rules, field) = at(span);
        checks.push(quote_spanned!(span=> {
            static __PATTERN: #rules::LazyPattern = #rules::LazyPattern::new(#lit);
            #rules::pattern(#field, #field_name, &__PATTERN, __report);
        }));
    }
    match &arg.one_of {
        Some((span, OneOf::Strings(values))) => {
            consts.push(quote!(#p::Rule::OneOf(&[#(#values),*])));
            let (rules, field) = at(*span);
            checks.push(quote_spanned!(*span=> #rules::one_of(#field, #field_name, &[#(#values),*], __report);));
        }
        Some((span, OneOf::Numbers(values))) => {
            let values: Vec<TokenStream> = values.iter().map(number).collect();
            consts.push(quote!(#p::Rule::OneOfNumbers(&[#(#values),*])));
            let (rules, field) = at(*span);
            checks.push(
                quote_spanned!(*span=> #rules::one_of_numbers(#field, #field_name, &[#(#values),*], __report);),
            );
        }
        None => {}
    }
    for path in &arg.validate {
        let name = quote!(#path).to_string().replace(' ', "");
        consts.push(quote!(#p::Rule::Custom(#name)));
        let span = path_span(path);
        let (rules, field) = at(span);
        checks.push(quote_spanned!(span=>
            #rules::custom(#field, #field_name, |__value| ::toolwright::__private_v0_1::field_check(#path(__value)), __report);
        ));
    }
    (consts, checks)
}

/// `for<'__toolwright> P: ToolArgument` for a parameter of type `P`, spanned at `P`. The binder
/// keeps rustc from rejecting the bound as trivially false where it is declared: it is checked
/// only where the item that carries it is named.
fn argument_bound(param: &Param) -> TokenStream {
    let ty = &param.ty;
    let (first, _) = token_spans(ty);
    quote_spanned!(first=> for<'__toolwright> #ty: ::toolwright::__private_v0_1::ToolArgument)
}

/// The registration function, as a chain with one link per argument.
///
/// Link `k` carries the output bound and the bounds of the first `k` arguments; each link calls
/// the next, and that call, spanned at argument `k`'s type, is the one place where its bound is
/// proven. So an unusable argument is one error at its own type, and the `Tool` impl (which
/// carries every bound, as the derives of the argument struct do) is never named with an unmet
/// bound. Link 0 is named by the collection entry, where the output bound is proven.
fn registration(
    tool: &ToolFn,
    tool_ident: &Ident,
    output_bound: &TokenStream,
    arg_bounds: &[TokenStream],
) -> Vec<TokenStream> {
    let p = quote!(::toolwright::__private_v0_1);
    let args: Vec<&Param> = tool.args().collect();
    // Link `k + 1` is named after argument `k`, whose bound it adds: rustc's note reads
    // "required by a bound in `__register_address`".
    let link = |k: usize| match k {
        0 => Ident::new("__register", Span::call_site()),
        k => format_ident!(
            "__register_{}",
            args[k - 1].ident.unraw(),
            span = Span::call_site()
        ),
    };
    // In the links, the bounds are located at `#[tool]`, so that note points there, as it
    // does for the output bound, rather than at the type a second time.
    let arg_bounds: Vec<TokenStream> = arg_bounds
        .iter()
        .map(|bound| located_at(bound, Span::call_site()))
        .collect();
    let types: Vec<&syn::Type> = args.iter().map(|param| &param.ty).collect();
    (0..=arg_bounds.len())
        .map(|k| {
            let name = link(k);
            let bounds = &arg_bounds[..k];
            let body = match types.get(k) {
                // `next::<>` spanned from the first to the last token of the type underlines
                // all of it.
                Some(ty) => {
                    let (first, last) = token_spans(ty);
                    let next = Ident::new(&link(k + 1).to_string(), first);
                    let open = quote_spanned!(first=> ::<);
                    let close = quote_spanned!(last=> >);
                    quote! {
                        let next = #next #open #close;
                        next(builder)
                    }
                }
                None => quote!(builder.tool(#tool_ident)),
            };
            quote! {
                #[allow(unused_lifetimes)]
                fn #name(builder: #p::RegistryBuilder) -> #p::RegistryBuilder
                where
                    #output_bound,
                    #(#bounds,)*
                {
                    #body
                }
            }
        })
        .collect()
}

pub fn expand(tool: &ToolFn) -> TokenStream {
    let p = quote!(::toolwright::__private_v0_1);
    let item = &tool.item;
    let vis = &item.vis;
    let fn_ident = &item.sig.ident;
    let pascal = pascal_case(&fn_ident.unraw().to_string());
    let tool_ident = format_ident!("{}", pascal, span = fn_ident.span());
    let args_ident = format_ident!("{}Args", pascal, span = fn_ident.span());
    let name = &tool.name;
    let description = tool.description.clone().unwrap_or_default();
    let Output::Result {
        ok,
        first: ok_first,
        last: ok_last,
        error: (error_first, error_last),
    } = &tool.output
    else {
        return quote!(#item);
    };

    let mut fields = Vec::new();
    let mut mirror_fields = Vec::new();
    let mut defaults = Vec::new();
    let mut field_metas = Vec::new();
    let mut checks = Vec::new();
    let mut grounded_checks = Vec::new();
    let mut arg_idents = Vec::new();
    let mut arg_bounds = Vec::new();
    for param in tool.args() {
        let ident = &param.ident;
        let ty = &param.ty;
        let docs = &param.docs;
        let field_name = ident.unraw().to_string();
        arg_idents.push(ident);
        arg_bounds.push(argument_bound(param));

        let default_attr = param.arg.default.as_ref().map(|expr| {
            let fn_name = format_ident!("__toolwright_default_{}", field_name);
            let path = format!("{args_ident}::{fn_name}");
            let value = match expr {
                // A string literal also fills `String` (and `Box<str>`, `Cow<str>`, ...).
                syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Str(lit),
                    ..
                }) => quote_spanned!(lit.span()=>
                    ::toolwright::__private_v0_1::default_from_str(#lit)
                ),
                _ => quote!(#expr),
            };
            defaults.push(quote! {
                #[doc(hidden)]
                fn #fn_name() -> #ty { #value }
            });
            quote!(#[serde(default = #path)])
        });
        fields.push(quote! {
            #(#docs)*
            #vis #ident: #ty,
        });
        mirror_fields.push(quote! {
            #(#docs)*
            #default_attr
            #ident: #ty,
        });

        let (consts, field_checks) = rules(param, &field_name);
        checks.extend(field_checks);
        let sensitive = param.arg.sensitive.map(|_| quote!(.sensitive()));
        let grounded_meta = param
            .arg
            .grounded
            .as_ref()
            .map(|kind| quote!(.grounded(#kind)));
        field_metas.push(
            quote!(#p::FieldMeta::new(#field_name).rules(&[#(#consts),*]) #sensitive #grounded_meta),
        );
        if let Some(kind) = &param.arg.grounded {
            // Spanned at the kind, so a parameter that cannot hold ids is reported there.
            let span = kind.span();
            let mut field = ident.clone();
            field.set_span(span);
            grounded_checks.push(quote_spanned!(span=>
                ::toolwright::__private_v0_1::grounded(&__args.#field, #field_name, #kind, __session, __report);
            ));
        }
    }

    let mut meta = quote!(#p::ToolMeta::new(#name, #description));
    if let Some((ms, _)) = &tool.attrs.timeout_ms {
        meta.extend(quote!(.timeout(::core::time::Duration::from_millis(#ms))));
    }
    if let Some(b) = &tool.attrs.idempotent {
        meta.extend(quote!(.idempotent(#b)));
    }
    if tool.attrs.read_only.is_some() {
        meta.extend(quote!(.read_only()));
    }
    if let Some((n, _)) = &tool.attrs.retries {
        meta.extend(quote!(.retries(#n)));
    }
    if !tool.attrs.scopes.is_empty() {
        let scopes = &tool.attrs.scopes;
        meta.extend(quote!(.scopes(&[#(#scopes),*])));
    }
    if tool.takes_key() {
        meta.extend(quote!(.takes_idempotency_key()));
    }
    if tool.attrs.fallback.is_some() {
        meta.extend(quote!(.fallback()));
    }
    if tool.attrs.requires_approval.is_some() {
        meta.extend(quote!(.requires_approval()));
    }
    if !tool.attrs.grounds.is_empty() {
        let grounds = tool.attrs.grounds.iter().map(|(kind, path)| {
            let kind = kind.to_string();
            quote!(#p::Grounds::new(#kind, #path))
        });
        meta.extend(quote!(.grounds(&[#(#grounds),*])));
    }
    meta.extend(quote!(.fields(&[#(#field_metas),*])));

    // The calls are spanned at the user's path, so a function of the wrong shape is reported
    // there rather than at `#[tool]`.
    let semantics = tool.attrs.validate.as_ref().map(|path| {
        let span = path_span(path);
        let call = quote_spanned!(span=> ::toolwright::__private_v0_1::semantic(#path(__args)));
        quote! {
            fn check_semantics(__args: &Self::Args) -> ::core::result::Result<(), #p::ToolError> {
                #call
            }
        }
    });
    let authorize = tool.attrs.authorize.as_ref().map(|path| {
        let span = path_span(path);
        let call =
            quote_spanned!(span=> ::toolwright::__private_v0_1::authorized(#path(__args, __session)));
        quote! {
            fn authorize(__args: &Self::Args, __session: &#p::Session) -> ::core::result::Result<(), #p::ToolError> {
                #call
            }
        }
    });

    let grounded = (!grounded_checks.is_empty()).then(|| {
        quote! {
            fn check_grounded(__args: &Self::Args, __session: &#p::Session, __report: &mut #p::Violations) {
                #(#grounded_checks)*
            }
        }
    });

    // Injected parameters, in declaration order alongside the model's arguments.
    let mut prepare = Vec::new();
    let mut resolve = Vec::new();
    let mut states = Vec::new();
    let mut call_args = Vec::new();
    for (i, param) in tool.params.iter().enumerate() {
        let ident = &param.ident;
        match &param.kind {
            ParamKind::Arg => call_args.push(quote!(#ident)),
            ParamKind::Key => {
                let local = format_ident!("__key_{}", i);
                prepare.push(quote!(let #local = __invocation.idempotency_key();));
                call_args.push(quote!(#local));
            }
            ParamKind::Context => {
                let local = format_ident!("__context_{}", i);
                prepare.push(quote!(let #local = __invocation.context();));
                call_args.push(quote!(#local));
            }
            ParamKind::State(inner) => {
                let local = format_ident!("__state_{}", i);
                let type_name = quote!(#inner).to_string().replace(' ', "");
                prepare.push(quote!(let #local = __invocation.state::<#inner>();));
                resolve.push(quote! {
                    let ::core::option::Option::Some(#local) = #local else {
                        return ::core::result::Result::Err(#p::missing_state(#type_name));
                    };
                });
                states.push(quote!(#p::StateRequirement::of::<#inner>()));
                call_args.push(quote!(#local));
            }
            ParamKind::Receiver | ParamKind::Pattern => {}
        }
    }
    let required_state = (!states.is_empty()).then(|| {
        quote! {
            fn required_state() -> ::std::vec::Vec<#p::StateRequirement> {
                ::std::vec![#(#states),*]
            }
        }
    });

    // An unusable result type fails one obligation, `T: ToolOutput`, where the registration
    // function is named below; spanned at the `T` of `Result<T, E>` so the error points there.
    // The impl and that function carry the bound as a `for<..>` where-clause, which rustc
    // checks only where they are used, not as a trivially false bound at the definition.
    let output_bound = quote_spanned!(*ok_first=> for<'__toolwright> #ok: #p::ToolOutput);
    // `__register::<>` spanned from the first to the last token of `T` underlines all of `T`.
    let register = {
        let ident = Ident::new("__register", *ok_first);
        let open = quote_spanned!(*ok_first=> ::<);
        let close = quote_spanned!(*ok_last=> >);
        quote!(#ident #open #close)
    };
    // Spanned at `E` of `Result<T, E>`, where an error type that is not a `ToolError` is blamed.
    let into_result = {
        let result = spanning(*error_first, *error_last, quote!(__result));
        quote_spanned!(*error_first=> ::toolwright::__private_v0_1::into_result(#result))
    };
    // `invoke` and `fallback`: the arguments taken apart, the injected parameters resolved, the
    // function called and its result converted.
    let method = |name: TokenStream, call: TokenStream, convert: TokenStream| {
        quote! {
            fn #name(
                &self,
                __args: Self::Args,
                __invocation: &#p::Invocation<'_>,
            ) -> impl ::core::future::Future<Output = ::core::result::Result<Self::Output, #p::ToolError>> + ::core::marker::Send {
                let #args_ident { #(#arg_idents),* } = __args;
                #(#prepare)*
                async move {
                    #(#resolve)*
                    let __result = #call;
                    #convert
                }
            }
        }
    };
    let invoke = method(
        quote!(invoke),
        quote!(#fn_ident(#(#call_args),*).await),
        into_result,
    );
    // The fallback takes the tool's own parameters, injected ones included, and answers with
    // the tool's result type. Spanned at the user's path, so a function of the wrong shape is
    // reported there.
    let fallback = tool.attrs.fallback.as_ref().map(|path| {
        let span = path_span(path);
        // The arguments are the tool's parameters; located at the path, a fallback with other
        // parameters is reported there, not at the tool's signature.
        let args: Vec<TokenStream> = call_args.iter().map(|a| located_at(a, span)).collect();
        let call = quote_spanned!(span=> #path(#(#args),*).await);
        let convert = quote_spanned!(span=>
            ::toolwright::__private_v0_1::fallback_result::<Self::Output, _>(__result)
        );
        method(quote!(fallback), call, convert)
    });
    let args_doc = format!(
        "Arguments of the `{name}` tool, as the model sends them (generated by `#[tool]`)."
    );
    let tool_doc = format!("The `{name}` tool (generated by `#[tool]` from [`{fn_ident}`]): register it with `Registry::builder().tool({tool_ident})`.");
    let registration = registration(tool, &tool_ident, &output_bound, &arg_bounds);
    let args_name = args_ident.to_string();
    let schemars_crate = "::toolwright::__private_v0_1::schemars";
    let serde_crate = "::toolwright::__private_v0_1::serde";

    quote! {
        #item

        #[doc = #args_doc]
        #vis struct #args_ident {
            #(#fields)*
        }

        impl #args_ident {
            #(#defaults)*
        }

        // serde and schemars derive on a private mirror of the arguments, whose where-clause
        // assumes every parameter's type usable: their expansions then never check a field's
        // type themselves, which would report an unusable type several times with notes inside
        // serde. The public struct forwards to the mirror under the same bounds, and carries
        // none itself, so users' functions that take it are not checked against them.
        // The bounds' `for<..>` binders name a lifetime they do not use, on purpose.
        #[allow(unused_lifetimes)]
        const _: () = {
            #[doc = #args_doc]
            #[derive(#p::serde::Deserialize, #p::schemars::JsonSchema)]
            #[serde(crate = #serde_crate, rename = #args_name, deny_unknown_fields)]
            #[schemars(crate = #schemars_crate)]
            struct __Mirror where #(#arg_bounds,)* {
                #(#mirror_fields)*
            }

            impl<'de> #p::serde::Deserialize<'de> for #args_ident where #(#arg_bounds,)* {
                fn deserialize<D: #p::serde::Deserializer<'de>>(
                    deserializer: D,
                ) -> ::core::result::Result<Self, D::Error> {
                    let __Mirror { #(#arg_idents),* } =
                        <__Mirror as #p::serde::Deserialize<'de>>::deserialize(deserializer)?;
                    ::core::result::Result::Ok(#args_ident { #(#arg_idents),* })
                }
            }

            impl #p::schemars::JsonSchema for #args_ident where #(#arg_bounds,)* {
                fn schema_name() -> ::std::borrow::Cow<'static, str> {
                    <__Mirror as #p::schemars::JsonSchema>::schema_name()
                }

                fn schema_id() -> ::std::borrow::Cow<'static, str> {
                    <__Mirror as #p::schemars::JsonSchema>::schema_id()
                }

                fn inline_schema() -> bool {
                    <__Mirror as #p::schemars::JsonSchema>::inline_schema()
                }

                fn json_schema(generator: &mut #p::schemars::SchemaGenerator) -> #p::schemars::Schema {
                    <__Mirror as #p::schemars::JsonSchema>::json_schema(generator)
                }
            }
        };

        #[doc = #tool_doc]
        #[derive(Debug, Clone, Copy, Default)]
        #vis struct #tool_ident;

        // The `for<..>` binder of the output bound names a lifetime it does not use, on purpose.
        #[allow(unused_lifetimes)]
        impl #p::Tool for #tool_ident where #output_bound, #(#arg_bounds,)* {
            type Args = #args_ident;
            type Output = #ok;

            const META: #p::ToolMeta = #meta;

            #[allow(unused_variables)]
            fn check_fields(__args: &Self::Args, __report: &mut #p::Violations) {
                #(#checks)*
            }

            #semantics
            #grounded
            #authorize
            #required_state

            #invoke

            #fallback
        }

        const _: () = {
            #(#registration)*
            #p::inventory::submit! { #p::CollectedTool::new(#register) }
        };
    }
}
