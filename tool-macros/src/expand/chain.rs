//! How a tool reaches a registry: the chain of `__register` links that proves every bound
//! where the user's types stand, and the collection entry of a free function.

use super::*;

/// The collection entry of a free function, naming link 0 of the registration chain
/// ([`links`]) spanned at the result type, where the output bound is proven. A `#[toolset]`
/// method has no entry (its tool needs the instance): the chain is called by the set's
/// `Toolset::register`, from the block returned second.
pub(super) fn registration(
    tool: &ToolFn,
    tool_ident: &Ident,
    output_bound: &TokenStream,
    arg_bounds: &[TokenStream],
) -> (TokenStream, TokenStream) {
    let p = quote!(::toolwright::__private_v0_1);
    let register = register(tool);
    let links = links(tool, tool_ident, output_bound, arg_bounds);
    let allow = allow_lints();
    match tool.owner {
        None => (
            quote! {
                #allow
                const _: () = {
                    #(#links)*
                    #p::inventory::submit! { #p::CollectedTool::new(#register) }
                };
            },
            TokenStream::new(),
        ),
        Some(_) => (
            TokenStream::new(),
            quote! {
                {
                    #(#links)*
                    #register(builder, &set)
                }
            },
        ),
    }
}

/// `__register::<>`, link 0, spanned from the first to the last token of the result type,
/// which it underlines when the output bound fails.
pub(super) fn register(tool: &ToolFn) -> TokenStream {
    let Some((_, first, last)) = tool.output.value() else {
        return TokenStream::new();
    };
    let ident = Ident::new("__register", first);
    let open = quote_spanned!(first=> ::<);
    let close = quote_spanned!(last=> >);
    quote!(#ident #open #close)
}

/// The registration function, as a chain with one link per argument.
///
/// Link `k` carries the output bound and the bounds of the first `k` arguments; each link calls
/// the next, and that call, spanned at argument `k`'s type, is the one place where its bound is
/// proven. So an unusable argument is one error at its own type, and the `Tool` impl (which
/// carries every bound, as the argument struct's impls do) is never named with an unmet bound.
/// Link 0 is named by the collection entry, where the output bound is proven.
pub(super) fn links(
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
    // `arg_bounds`, one per argument ([`argument_bound`]): a bound's own tokens stand at the
    // type ([`bound`]), so that rustc's note "required by this bound" underlines the type: at
    // `#[tool]` they would hash by the attribute's place in the module (see `anchored`). The
    // type keeps its own tokens: a type that does not resolve is then one error, at the
    // parameter.
    let types: Vec<&syn::Type> = args.iter().map(|param| &param.ty).collect();
    // A method's chain carries the impl's generics and takes the instance along.
    let (generics, set, set_arg, owner_bounds, tool_value) = match &tool.owner {
        Some(owner) => {
            let self_ty = &owner.self_ty;
            let (impl_generics, _, _) = owner.generics.split_for_impl();
            (
                quote!(#impl_generics),
                quote!(, set: &::std::sync::Arc<#self_ty>),
                quote!(, set),
                owner_bounds(owner),
                quote!(#tool_ident(::std::sync::Arc::clone(set))),
            )
        }
        None => (
            TokenStream::new(),
            TokenStream::new(),
            TokenStream::new(),
            TokenStream::new(),
            quote!(#tool_ident),
        ),
    };
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
                    let probes = duration_probes(ty);
                    quote! {
                        #probes
                        let next = #next #open #close;
                        next(builder #set_arg)
                    }
                }
                None => quote!(builder.tool(#tool_value)),
            };
            quote! {
                #[allow(unused_lifetimes)]
                fn #name #generics (builder: #p::RegistryBuilder #set) -> #p::RegistryBuilder
                where
                    #output_bound,
                    #(#bounds,)*
                    #owner_bounds
                {
                    #body
                }
            }
        })
        .collect()
}

/// What a method's tool needs of the impl: its where-clause, and a type that can be shared
/// between the calls of every thread.
pub(super) fn owner_bounds(owner: &Owner) -> TokenStream {
    let self_ty = &owner.self_ty;
    let (first, _) = token_spans(self_ty);
    let predicates = owner
        .generics
        .where_clause
        .as_ref()
        .map(|w| w.predicates.iter().collect::<Vec<_>>())
        .unwrap_or_default();
    let send = quote_spanned!(first=> ::core::marker::Send + ::core::marker::Sync + 'static);
    quote!(#(#predicates,)* #self_ty: #send,)
}

/// For each path in an argument's type whose last segment is `Duration`, a check that it is not
/// `std::time::Duration` (which serializes as `{secs, nanos}`), reported at the path. The name
/// alone cannot tell: `Duration` may be chrono's or the user's own, so the compiler is asked,
/// by autoref specialization: `(&ClockProbe::<T>::NEW).probe()` finds the by-value method that
/// only `ClockProbe<std::time::Duration>` has, and every other `T` the by-reference one; the
/// first returns a type that fails `refuse_duration`'s bound, with its message.
pub(crate) fn duration_probes(ty: &syn::Type) -> TokenStream {
    let probes = crate::ast::duration_candidates(ty).into_iter().map(|path| {
        let (first, last) = token_spans(path);
        let p = quote_spanned!(first=> ::toolwright::__private_v0_1::clock);
        let probe = quote_spanned!(first=> (&#p::ClockProbe::<#path>::NEW));
        let call = quote_spanned!(last=> .probe());
        let check = spanning(first, last, quote!(#probe #call));
        let refuse = quote_spanned!(first=> #p::refuse_duration);
        quote!(#refuse(#check);)
    });
    let probes: Vec<TokenStream> = probes.collect();
    if probes.is_empty() {
        return TokenStream::new();
    }
    quote! {
        #[allow(unused_imports)]
        use ::toolwright::__private_v0_1::clock::{ByReference as _, ByValue as _};
        #(#probes)*
    }
}
