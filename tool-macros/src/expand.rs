//! Code generation only: the validated model in, the function plus its argument struct, tool
//! struct, `Tool` impl and collection entry out. Generated code names `::toolwright::__private_v0_1`
//! only, so users depend on `toolwright` alone.

use proc_macro2::{Ident, Literal, Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::ext::IdentExt;

use crate::ast::{replace_self, token_spans, Output, Owner, Param, ParamKind, ToolFn};
use crate::attr::{NumLit, NumValue, OneOf};

mod args;
mod chain;
mod spans;

use args::args_struct;
pub(crate) use chain::duration_probes;
use chain::{links, owner_bounds, register, registration};
pub(crate) use spans::anchored;
use spans::{allow_lints, at_call_site, located_at};

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

/// A bound as `Number::int`, `Number::uint` or `Number::float`, integers exact.
fn number(n: &NumLit) -> TokenStream {
    let span = n.span;
    match n.value {
        NumValue::Int(v) if v > i128::from(i64::MAX) => {
            let lit = Literal::u128_unsuffixed(v.unsigned_abs());
            quote_spanned!(span=> ::toolwright::__private_v0_1::Number::uint(#lit))
        }
        NumValue::Int(v) => {
            let lit = Literal::u128_unsuffixed(v.unsigned_abs());
            let sign = (v < 0).then(|| quote!(-));
            quote_spanned!(span=> ::toolwright::__private_v0_1::Number::int(#sign #lit))
        }
        NumValue::Float(v) => {
            let lit = Literal::f64_suffixed(v.abs());
            let sign = (v < 0.0).then(|| quote!(-));
            quote_spanned!(span=> ::toolwright::__private_v0_1::Number::float(#sign #lit))
        }
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

/// A user's `path::to_fn` as the generated code calls it: in a `#[toolset]`, `Self::check`
/// names the impl's type, not the generated tool struct the call is written in.
fn callee(path: &syn::Path, owner: Option<&Owner>) -> TokenStream {
    match owner {
        Some(owner) => replace_self(quote!(#path), &owner.self_ty),
        None => quote!(#path),
    }
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
fn rules(
    param: &Param,
    field_name: &str,
    owner: Option<&Owner>,
) -> (Vec<TokenStream>, Vec<TokenStream>) {
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
        let path = callee(path, owner);
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
    bound(&param.ty, token_spans(&param.ty), "ToolArgument")
}

/// `for<'__toolwright> P: SendArgument`: what the `Tool` impl needs of a parameter's type (its
/// arguments struct is `Send + 'static`); the rest of `ToolArgument` only the registration
/// asks, so a type that is not `Deserialize` is not reported again where the tool is named.
fn send_bound(param: &Param) -> TokenStream {
    bound(&param.ty, token_spans(&param.ty), "SendArgument")
}

/// `for<'__toolwright> ty: ::toolwright::__private_v0_1::Trait`, its own tokens spanned at the
/// first token of `ty` and the trait's name at the last: rustc's note "required by this bound"
/// then underlines the type, and no token of the bound stands at `#[tool]` (see [`anchored`]).
fn bound(ty: &impl quote::ToTokens, (first, last): (Span, Span), trait_name: &str) -> TokenStream {
    let trait_name = Ident::new(trait_name, last);
    let binder = quote_spanned!(first=> for<'__toolwright>);
    // The path from `first` to `last`: rustc spans a path from its first segment to its last.
    let path = quote_spanned!(first=> : ::toolwright::__private_v0_1::#trait_name);
    quote!(#binder #ty #path)
}

/// The names the macro gives the items it generates, from the function's name.
struct Names<'a> {
    vis: &'a syn::Visibility,
    fn_ident: &'a Ident,
    /// `refund_order` -> `RefundOrder`, the tool.
    tool: Ident,
    /// `RefundOrderArgs`, its arguments.
    args: Ident,
}

impl<'a> Names<'a> {
    fn of(tool: &'a ToolFn) -> Self {
        let fn_ident = &tool.item.sig.ident;
        let pascal = pascal_case(&fn_ident.unraw().to_string());
        Names {
            vis: &tool.item.vis,
            fn_ident,
            tool: format_ident!("{}", pascal, span = fn_ident.span()),
            args: format_ident!("{}Args", pascal, span = fn_ident.span()),
        }
    }

    fn args_doc(&self, name: &str) -> String {
        format!("Arguments of the `{name}` tool, as the model sends them (generated by `#[tool]`).")
    }

    fn tool_doc(&self, name: &str, owner: Option<&Owner>) -> String {
        let (fn_ident, tool) = (self.fn_ident, &self.tool);
        match owner {
            None => format!("The `{name}` tool (generated by `#[tool]` from [`{fn_ident}`]): register it with `Registry::builder().tool({tool})`."),
            Some(owner) => {
                let self_ty = &owner.self_ty;
                let self_ty = quote!(#self_ty).to_string().replace(' ', "");
                format!("The `{name}` tool (generated by `#[toolset]` from the method `{fn_ident}` of `{self_ty}`), holding the shared instance: registered with the rest of the set by `Registry::builder().toolset(..)`.")
            }
        }
    }
}

/// The tool struct: a unit struct for a free function; for a method, the shared instance.
fn tool_struct(tool: &ToolFn, names: &Names) -> TokenStream {
    let (tool_ident, vis) = (&names.tool, names.vis);
    let tool_doc = names.tool_doc(&tool.name, tool.owner.as_ref());
    let Some(owner) = &tool.owner else {
        // The four impls `#[derive(Debug, Clone, Copy, Default)]` writes, written here: a
        // derive is a macro expanded inside this one, and rustc hashes such an expansion by
        // where `#[tool]` stands in its module (see [`anchored`]).
        let name = tool_ident.to_string();
        let allow = allow_lints();
        return quote! {
            #[doc = #tool_doc]
            #allow
            #vis struct #tool_ident;

            #[automatically_derived]
            #allow
            impl ::core::fmt::Debug for #tool_ident {
                fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                    ::core::fmt::Formatter::write_str(f, #name)
                }
            }
            #[automatically_derived]
            #allow
            impl ::core::clone::Clone for #tool_ident {
                #[inline]
                fn clone(&self) -> Self {
                    *self
                }
            }
            #[automatically_derived]
            #allow
            impl ::core::marker::Copy for #tool_ident {}
            #[automatically_derived]
            #allow
            impl ::core::default::Default for #tool_ident {
                #[inline]
                fn default() -> Self {
                    #tool_ident
                }
            }
        };
    };
    let self_ty = &owner.self_ty;
    let generics = &owner.generics;
    let (impl_generics, ty_generics, where_clause) = generics.split_for_impl();
    quote! {
        #[doc = #tool_doc]
        #vis struct #tool_ident #generics (#vis ::std::sync::Arc<#self_ty>) #where_clause;

        impl #impl_generics ::core::clone::Clone for #tool_ident #ty_generics #where_clause {
            fn clone(&self) -> Self {
                #tool_ident(::std::sync::Arc::clone(&self.0))
            }
        }
    }
}

/// The function with its argument struct, tool struct, `Tool` impl and collection entry; and,
/// for a `#[toolset]` method, the block that registers it (else empty).
pub(crate) fn expand(tool: &ToolFn) -> (TokenStream, TokenStream) {
    let item = &tool.item;
    let names = Names::of(tool);
    let Some((ok, first, last)) = tool.output.value() else {
        // Validation reports every other return type, so `stub` runs instead.
        return (quote!(#item), TokenStream::new());
    };
    let arg_bounds: Vec<TokenStream> = tool.args().map(argument_bound).collect();
    // An unusable result type fails one obligation, `T: ToolOutput`, where the registration
    // function is named; spanned at the result type so the error and the note of the bound
    // point there.
    // The impl and that function carry the bound as a `for<..>` where-clause, which rustc
    // checks only where they are used, not as a trivially false bound at the definition.
    let output_bound = bound(&ok, (first, last), "ToolOutput");
    let args_struct = args_struct(tool, &names);
    let tool_struct = tool_struct(tool, &names);
    let send_bounds: Vec<TokenStream> = tool.args().map(send_bound).collect();
    let tool_impl = tool_impl(tool, &names, &output_bound, &send_bounds);
    let (registration, register) = registration(tool, &names.tool, &output_bound, &arg_bounds);
    let generated = quote! {
        #args_struct

        #tool_struct

        #tool_impl

        #registration
    };
    match tool.owner {
        None => {
            let generated = anchored(generated, Some(item.sig.fn_token.span));
            (quote!(#item #generated), register)
        }
        // A method stays in its `impl`; the toolset emits it. Its generated code stands at
        // `#[toolset]` (see `anchored`).
        Some(_) => (anchored(generated, None), anchored(register, None)),
    }
}

/// The tool's `ToolMeta`: name, description, policy and every argument's rules.
fn meta(tool: &ToolFn) -> TokenStream {
    let p = quote!(::toolwright::__private_v0_1);
    let attrs = &tool.attrs;
    let name = &tool.name;
    let description = tool.description.clone().unwrap_or_default();
    let mut meta = quote!(#p::ToolMeta::new(#name, #description));
    if let Some((ms, _)) = &attrs.timeout_ms {
        meta.extend(quote!(.timeout(::core::time::Duration::from_millis(#ms))));
    }
    if let Some(b) = &attrs.idempotent {
        meta.extend(quote!(.idempotent(#b)));
    }
    if attrs.read_only.is_some() {
        meta.extend(quote!(.read_only()));
    }
    if let Some((n, _)) = &attrs.retries {
        meta.extend(quote!(.retries(#n)));
    }
    if !attrs.requires_client.is_empty() {
        let capabilities = &attrs.requires_client;
        meta.extend(quote!(.requires_client(&[#(#capabilities),*])));
    }
    if !attrs.scopes.is_empty() {
        let scopes = &attrs.scopes;
        meta.extend(quote!(.scopes(&[#(#scopes),*])));
    }
    if tool.takes_key() {
        meta.extend(quote!(.takes_idempotency_key()));
    }
    if attrs.fallback.is_some() {
        meta.extend(quote!(.fallback()));
    }
    if attrs.requires_approval.is_some() {
        meta.extend(quote!(.requires_approval()));
    }
    match attrs.task {
        Some((_, true)) => meta.extend(quote!(.task_only())),
        Some((_, false)) => meta.extend(quote!(.task())),
        None => {}
    }
    if !attrs.grounds.is_empty() {
        let grounds = attrs.grounds.iter().map(|(kind, path)| {
            let kind = kind.to_string();
            quote!(#p::Grounds::new(#kind, #path))
        });
        meta.extend(quote!(.grounds(&[#(#grounds),*])));
    }
    if !attrs.examples.is_empty() {
        let examples = &attrs.examples;
        meta.extend(quote!(.examples(&[#(#examples),*])));
    }
    let fields = tool.args().map(field_meta);
    meta.extend(quote!(.fields(&[#(#fields),*])));
    meta
}

/// One argument's `FieldMeta`: its rules as schema keywords, and its flags.
fn field_meta(param: &Param) -> TokenStream {
    let p = quote!(::toolwright::__private_v0_1);
    let field_name = param.ident.unraw().to_string();
    let (consts, _) = rules(param, &field_name, None);
    let sensitive = param.arg.sensitive.map(|_| quote!(.sensitive()));
    let grounded = param
        .arg
        .grounded
        .as_ref()
        .map(|kind| quote!(.grounded(#kind)));
    quote!(#p::FieldMeta::new(#field_name).rules(&[#(#consts),*]) #sensitive #grounded)
}

/// `impl Tool for <Fn>`: metadata, the checks and hooks the attribute asks for, and the methods
/// that call the function.
fn tool_impl(
    tool: &ToolFn,
    names: &Names,
    output_bound: &TokenStream,
    send_bounds: &[TokenStream],
) -> TokenStream {
    let p = quote!(::toolwright::__private_v0_1);
    let Some((ok, _, _)) = tool.output.value() else {
        return TokenStream::new();
    };
    let (tool_ident, args_ident) = (&names.tool, &names.args);
    let meta = meta(tool);
    let owner = tool.owner.as_ref();
    let checks = tool.args().flat_map(|param| {
        let field_name = param.ident.unraw().to_string();
        rules(param, &field_name, owner).1
    });
    let hooks = hooks(tool);
    let grounded = grounded(tool);
    let calls = Calls::of(tool);
    let required_state = calls.required_state();
    let invoke = calls.invoke(tool, names);
    let fallback = calls.fallback(tool, names);
    let (impl_generics, ty_generics, owner_bounds) = match owner {
        Some(owner) => {
            let (impl_generics, ty_generics, _) = owner.generics.split_for_impl();
            (
                quote!(#impl_generics),
                quote!(#ty_generics),
                owner_bounds(owner),
            )
        }
        None => (TokenStream::new(), TokenStream::new(), TokenStream::new()),
    };
    let allow = allow_lints();
    quote! {
        // The `for<..>` binder of the output bound names a lifetime it does not use, on purpose.
        #allow
        impl #impl_generics #p::Tool for #tool_ident #ty_generics
        where
            #output_bound,
            #(#send_bounds,)*
            #owner_bounds
        {
            type Args = #args_ident;
            type Output = #ok;

            const META: #p::ToolMeta = #meta;

            #[allow(unused_variables)]
            fn check_fields(__args: &Self::Args, __report: &mut #p::Violations) {
                #(#checks)*
            }

            #hooks
            #grounded
            #required_state

            #invoke

            #fallback
        }
    }
}

/// `check_semantics` and `authorize`, calling the user's `validate = ..` and `authorize = ..`.
/// The calls are spanned at the user's path, so a function of the wrong shape is reported
/// there rather than at `#[tool]`.
fn hooks(tool: &ToolFn) -> TokenStream {
    let p = quote!(::toolwright::__private_v0_1);
    let owner = tool.owner.as_ref();
    let semantics = tool.attrs.validate.as_ref().map(|path| {
        let span = path_span(path);
        let path = callee(path, owner);
        let call = quote_spanned!(span=> ::toolwright::__private_v0_1::semantic(#path(__args)));
        quote! {
            fn check_semantics(__args: &Self::Args) -> ::core::result::Result<(), #p::ToolError> {
                #call
            }
        }
    });
    let authorize = tool.attrs.authorize.as_ref().map(|path| {
        let span = path_span(path);
        let path = callee(path, owner);
        let call =
            quote_spanned!(span=> ::toolwright::__private_v0_1::authorized(#path(__args, __session)));
        quote! {
            fn authorize(__args: &Self::Args, __session: &#p::Session) -> ::core::result::Result<(), #p::ToolError> {
                #call
            }
        }
    });
    quote!(#semantics #authorize)
}

/// `check_grounded`, when an argument is `#[arg(grounded = "kind")]`.
fn grounded(tool: &ToolFn) -> Option<TokenStream> {
    let p = quote!(::toolwright::__private_v0_1);
    let checks: Vec<TokenStream> = tool
        .args()
        .filter_map(|param| {
            let kind = param.arg.grounded.as_ref()?;
            let field_name = param.ident.unraw().to_string();
            // Spanned at the kind, so a parameter that cannot hold ids is reported there.
            let span = kind.span();
            let mut field = param.ident.clone();
            field.set_span(span);
            Some(quote_spanned!(span=>
                ::toolwright::__private_v0_1::grounded(&__args.#field, #field_name, #kind, __session, __report);
            ))
        })
        .collect();
    (!checks.is_empty()).then(|| {
        quote! {
            fn check_grounded(__args: &Self::Args, __session: &#p::Session, __report: &mut #p::Violations) {
                #(#checks)*
            }
        }
    })
}

/// How the function is called: the model's arguments and the injected parameters, in
/// declaration order.
struct Calls {
    /// Injected values taken from the invocation before the future starts.
    prepare: Vec<TokenStream>,
    /// `State<T>` that must be present, checked inside the future.
    resolve: Vec<TokenStream>,
    states: Vec<TokenStream>,
    args: Vec<TokenStream>,
}

impl Calls {
    fn of(tool: &ToolFn) -> Self {
        let p = quote!(::toolwright::__private_v0_1);
        let mut calls = Calls {
            prepare: Vec::new(),
            resolve: Vec::new(),
            states: Vec::new(),
            args: Vec::new(),
        };
        for (i, param) in tool.params.iter().enumerate() {
            let ident = &param.ident;
            match &param.kind {
                ParamKind::Arg => calls.args.push(quote!(#ident)),
                ParamKind::Key => {
                    let local = format_ident!("__key_{}", i);
                    calls
                        .prepare
                        .push(quote!(let #local = __invocation.idempotency_key();));
                    calls.args.push(quote!(#local));
                }
                ParamKind::Context => {
                    let local = format_ident!("__context_{}", i);
                    calls
                        .prepare
                        .push(quote!(let #local = __invocation.context();));
                    calls.args.push(quote!(#local));
                }
                ParamKind::State(inner) => {
                    let local = format_ident!("__state_{}", i);
                    let type_name = quote!(#inner).to_string().replace(' ', "");
                    calls
                        .prepare
                        .push(quote!(let #local = __invocation.state::<#inner>();));
                    calls.resolve.push(quote! {
                        let ::core::option::Option::Some(#local) = #local else {
                            return ::core::result::Result::Err(#p::missing_state(#type_name));
                        };
                    });
                    calls
                        .states
                        .push(quote!(#p::StateRequirement::of::<#inner>()));
                    calls.args.push(quote!(#local));
                }
                ParamKind::Receiver(_) | ParamKind::Pattern => {}
            }
        }
        calls
    }

    fn required_state(&self) -> Option<TokenStream> {
        let p = quote!(::toolwright::__private_v0_1);
        let states = &self.states;
        (!states.is_empty()).then(|| {
            quote! {
                fn required_state() -> ::std::vec::Vec<#p::StateRequirement> {
                    ::std::vec![#(#states),*]
                }
            }
        })
    }

    /// `invoke` or `fallback`: the arguments taken apart, the injected parameters resolved, the
    /// function called (awaited, on the blocking pool or inline) and its result converted.
    /// `this`: whether the function takes `&self`, lent from the tool's shared instance.
    fn method(
        &self,
        names: &Names,
        tool: &ToolFn,
        (name, callee, this, convert): (TokenStream, TokenStream, bool, TokenStream),
        located: Option<Span>,
    ) -> TokenStream {
        let p = quote!(::toolwright::__private_v0_1);
        let args_ident = &names.args;
        let arg_idents = tool.args().map(|param| &param.ident);
        let (prepare, resolve) = (&self.prepare, &self.resolve);
        let mode = Mode::of(tool);
        let (this_local, receiver) = match (this, mode) {
            (false, _) => (None, None),
            (true, Mode::Blocking) => (
                Some(quote!(let __this = ::std::sync::Arc::clone(&self.0);)),
                Some(quote!(&*__this,)),
            ),
            (true, _) => (Some(quote!(let __this = &*self.0;)), Some(quote!(__this,))),
        };
        let args = &self.args;
        // Located at the fallback's path (when given), the parentheses and commas keep the
        // expansion's context: a fallback of the wrong arity is then reported without rustc's
        // suggestion to edit the arguments, which are not the user's to edit.
        let arguments = quote!((#receiver #(#args),*));
        let arguments = match located {
            Some(span) => located_at(&arguments, span),
            None => arguments,
        };
        let call = quote!(#callee #arguments);
        let body = match mode {
            Mode::Async => quote! {
                async move {
                    #(#resolve)*
                    let __result = #call.await;
                    #convert
                }
            },
            Mode::Blocking => quote! {
                #p::blocking(move || {
                    #(#resolve)*
                    let __result = #call;
                    #convert
                })
            },
            Mode::Inline => quote! {
                async move {
                    #(#resolve)*
                    let __result = #call;
                    #convert
                }
            },
        };
        quote! {
            fn #name(
                &self,
                __args: Self::Args,
                __invocation: &#p::Invocation<'_>,
            ) -> impl ::core::future::Future<Output = ::core::result::Result<Self::Output, #p::ToolError>> + ::core::marker::Send {
                let #args_ident { #(#arg_idents),* } = __args;
                #(#prepare)*
                #this_local
                #body
            }
        }
    }

    fn invoke(&self, tool: &ToolFn, names: &Names) -> TokenStream {
        let convert = match &tool.output {
            Output::Result {
                error: (first, last),
                ..
            } => {
                // Spanned at `E` of `Result<T, E>`, where an error type that is not a
                // `ToolError` is blamed.
                let result = spanning(*first, *last, quote!(__result));
                quote_spanned!(*first=> ::toolwright::__private_v0_1::into_result(#result))
            }
            _ => quote!(::core::result::Result::Ok(__result)),
        };
        let fn_ident = names.fn_ident;
        let callee = match &tool.owner {
            Some(owner) => {
                let self_ty = &owner.self_ty;
                quote!(<#self_ty>::#fn_ident)
            }
            None => quote!(#fn_ident),
        };
        let this = tool.receiver().is_some();
        self.method(names, tool, (quote!(invoke), callee, this, convert), None)
    }

    /// The fallback takes the tool's own parameters, injected ones included, and answers with
    /// the tool's result type; it is `async` when the tool is, sync when the tool is. In a
    /// `#[toolset]`, `fallback = Self::name` is a method of the impl, lent `&self` as the tool
    /// is. Spanned at the user's path, so a function of the wrong shape is reported there, not
    /// at the tool's signature.
    fn fallback(&self, tool: &ToolFn, names: &Names) -> Option<TokenStream> {
        let path = tool.attrs.fallback.as_ref()?;
        let span = path_span(path);
        let of_impl = tool.owner.is_some()
            && path.leading_colon.is_none()
            && path.segments.first().is_some_and(|s| s.ident == "Self");
        let this = of_impl && tool.receiver().is_some();
        let callee = located_at(&callee(path, tool.owner.as_ref()), span);
        let args = Calls {
            prepare: self.prepare.clone(),
            resolve: self.resolve.clone(),
            states: Vec::new(),
            args: self.args.iter().map(|a| located_at(a, span)).collect(),
        };
        let convert = match &tool.output {
            Output::Result { .. } => quote_spanned!(span=>
                ::toolwright::__private_v0_1::fallback_result::<Self::Output, _>(__result)
            ),
            _ => quote_spanned!(span=>
                ::core::result::Result::<Self::Output, ::toolwright::__private_v0_1::ToolError>::Ok(__result)
            ),
        };
        Some(args.method(
            names,
            tool,
            (quote!(fallback), callee, this, convert),
            Some(span),
        ))
    }
}

/// How the function runs: awaited, on tokio's blocking pool (a sync `fn`), or inline (a sync
/// `fn` with `blocking = false`).
#[derive(Clone, Copy)]
enum Mode {
    Async,
    Blocking,
    Inline,
}

impl Mode {
    fn of(tool: &ToolFn) -> Mode {
        match (tool.is_sync(), &tool.attrs.blocking) {
            (false, _) => Mode::Async,
            (true, Some(blocking)) if !blocking.value => Mode::Inline,
            (true, _) => Mode::Blocking,
        }
    }
}

/// What stands in for the tool when its attribute or signature has a mistake: the function, and
/// `<Fn>` and `<Fn>Args` under the same names with the same fields, so code that registers the
/// tool or builds its arguments still type-checks and the mistake is the only error (thiserror
/// emits a fallback impl for the same reason). The stand-in's calls fail; it never runs, since
/// the crate does not compile.
pub(crate) fn stub(tool: &ToolFn) -> (TokenStream, TokenStream) {
    // A method stays in its `impl`; the toolset emits it.
    let item = tool.owner.is_none().then_some(&tool.item);
    let (items, register) = stub_items(tool);
    (quote!(#item #items), register)
}

/// The stand-in's items, without the function; and, for a `#[toolset]` method, the block that
/// registers the stand-in.
pub(crate) fn stub_items(tool: &ToolFn) -> (TokenStream, TokenStream) {
    // A method outside a `#[toolset]` stands in an `impl`, where the stand-in's items cannot
    // go; it is not named as a tool anyway.
    if tool.owner.is_none() && tool.receiver().is_some() {
        return (TokenStream::new(), TokenStream::new());
    }
    let p = quote!(::toolwright::__private_v0_1);
    let names = Names::of(tool);
    let (tool_ident, args_ident, vis) = (&names.tool, &names.args, names.vis);
    let args_doc = names.args_doc(&tool.name);
    let args_name = args_ident.to_string();
    // Fields of a type the compiler would reject again (`&str`, `impl Trait`, the impl's `D`)
    // are left out.
    let fields = tool
        .args()
        .filter(|param| !unusable_arg(tool, &param.ty))
        .map(|param| {
            let (ident, ty) = (&param.ident, &param.ty);
            quote!(#vis #ident: #ty,)
        });
    let checked = stub_type_checks(tool, &names);
    let (output, bounds) = (&checked.output, &checked.bounds);
    let tool_struct = tool_struct(tool, &names);
    let (impl_generics, ty_generics, owner_bounds) = match &tool.owner {
        Some(owner) => {
            let (impl_generics, ty_generics, _) = owner.generics.split_for_impl();
            (
                quote!(#impl_generics),
                quote!(#ty_generics),
                owner_bounds(owner),
            )
        }
        None => (TokenStream::new(), TokenStream::new(), TokenStream::new()),
    };
    let links = &checked.links;
    let (type_checks, register) = match (&tool.owner, links.is_empty()) {
        (None, true) => (TokenStream::new(), TokenStream::new()),
        (None, false) => {
            let register = register(tool);
            (
                quote! {
                    const _: () = {
                        #(#links)*
                        let _ = #register;
                    };
                },
                TokenStream::new(),
            )
        }
        (Some(_), true) => (
            TokenStream::new(),
            quote!(builder.tool(#tool_ident(::std::sync::Arc::clone(&set)))),
        ),
        (Some(_), false) => {
            let register = register(tool);
            (
                TokenStream::new(),
                quote! {
                    {
                        #(#links)*
                        #register(builder, &set)
                    }
                },
            )
        }
    };
    let name = &tool.name;
    let items = quote! {
        #[doc = #args_doc]
        #[allow(dead_code)]
        #vis struct #args_ident {
            #(#fields)*
        }

        impl<'de> #p::serde::Deserialize<'de> for #args_ident {
            fn deserialize<D: #p::serde::Deserializer<'de>>(
                _: D,
            ) -> ::core::result::Result<Self, D::Error> {
                ::core::result::Result::Err(<D::Error as #p::serde::de::Error>::custom(
                    "the `#[tool]` of this tool has a mistake",
                ))
            }
        }

        impl #p::schemars::JsonSchema for #args_ident {
            fn schema_name() -> ::std::borrow::Cow<'static, str> {
                ::std::borrow::Cow::Borrowed(#args_name)
            }

            fn json_schema(_: &mut #p::schemars::SchemaGenerator) -> #p::schemars::Schema {
                ::core::default::Default::default()
            }
        }

        #tool_struct

        #[allow(unused_lifetimes)]
        impl #impl_generics #p::Tool for #tool_ident #ty_generics where #(#bounds,)* #owner_bounds {
            type Args = #args_ident;
            type Output = #output;

            const META: #p::ToolMeta = #p::ToolMeta::new(#name, "");

            fn invoke(
                &self,
                _: Self::Args,
                _: &#p::Invocation<'_>,
            ) -> impl ::core::future::Future<Output = ::core::result::Result<Self::Output, #p::ToolError>> + ::core::marker::Send {
                async {
                    ::core::result::Result::Err(#p::ToolError::unavailable(
                        "the `#[tool]` of this tool has a mistake",
                    ))
                }
            }
        }

        #type_checks
    };
    (items, register)
}

/// A type validation already reported, which the stand-in leaves out rather than have the
/// compiler report it again.
fn unusable(tool: &ToolFn, ty: &syn::Type) -> bool {
    matches!(
        ty,
        syn::Type::Reference(_) | syn::Type::ImplTrait(_) | syn::Type::Infer(_)
    ) || tool.impl_parameter_in(ty).is_some()
}

/// An argument type validation already reported: [`unusable`], or one holding std's
/// `SystemTime` or `Instant`.
fn unusable_arg(tool: &ToolFn, ty: &syn::Type) -> bool {
    unusable(tool, ty) || !crate::ast::clock_types(ty).is_empty()
}

/// The stand-in's result type, the bounds of its `Tool` impl and its registration chain.
struct StubChecks {
    output: TokenStream,
    bounds: Vec<TokenStream>,
    links: Vec<TokenStream>,
}

/// The stand-in's result type, the bounds of its `Tool` impl and the checks of the parameter
/// and result types, the same as the real tool's ([`registration`] without the collection
/// entry): a type that cannot be sent or returned is still reported once, at the type, and
/// code that registers the stand-in sees the same bounds as the real tool. Left out (with `()`
/// as the result) when validation already reported a type.
fn stub_type_checks(tool: &ToolFn, names: &Names) -> StubChecks {
    let unusable = |ty: &syn::Type| unusable(tool, ty);
    let none = || StubChecks {
        output: quote!(()),
        bounds: Vec::new(),
        links: Vec::new(),
    };
    let ok = match &tool.output {
        Output::Result { ok, .. } | Output::Plain { ty: ok, .. } if !unusable(ok) => ok,
        _ => return none(),
    };
    if tool.args().any(|param| unusable_arg(tool, &param.ty)) {
        return none();
    }
    let arg_bounds: Vec<TokenStream> = tool.args().map(argument_bound).collect();
    let output_bound = bound(ok, token_spans(ok), "ToolOutput");
    let links = links(tool, &names.tool, &output_bound, &arg_bounds);
    let mut bounds = vec![output_bound];
    bounds.extend(arg_bounds);
    StubChecks {
        output: quote!(#ok),
        bounds,
        links,
    }
}
