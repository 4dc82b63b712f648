//! The argument struct `<Fn>Args` and what reads and describes it: serde's `Deserialize`
//! and schemars' `JsonSchema`, written as calls of shared functions, and the functions behind
//! `#[arg(default = ..)]`.

use proc_macro2::{Ident, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::ext::IdentExt;

use super::Names;
use crate::ast::{Param, ToolFn};

/// `<Fn>Args`: the public struct, the functions behind `default = ..`, and the serde and
/// schemars impls ([`args_impls`]).
pub(super) fn args_struct(tool: &ToolFn, names: &Names) -> TokenStream {
    let (args_ident, vis) = (&names.args, names.vis);
    let args_doc = names.args_doc(&tool.name);
    let fields = tool.args().map(|param| {
        let (ident, ty, docs) = (&param.ident, &param.ty, &param.docs);
        quote! {
            #(#docs)*
            #vis #ident: #ty,
        }
    });
    let impls = args_impls(tool, names);
    let defaults = tool.args().filter_map(default_value);
    let allow = super::allow_lints();
    quote! {
        #[doc = #args_doc]
        #allow
        #vis struct #args_ident {
            #(#fields)*
        }

        #allow
        impl #args_ident {
            #(#defaults)*
        }

        #impls
    }
}

/// The arguments' serde and schemars impls, without a bound: their bodies reach each field's
/// type through `ArgProbe`, which compiles for any type, so they never check a field's type
/// themselves (which would report an unusable type once more per impl, or, as a where-clause,
/// once more where the tool is registered); the registration proves each bound once, at the
/// parameter. Both are written here, not derived: the per-field code of serde's and
/// schemars' derives becomes calls of shared functions, compiled once for all tools
/// ([`deserialize`], [`json_schema`]). The public struct carries no bounds itself, so users'
/// functions that take it are not checked against them.
///
/// Inside, the parameters' types are named through aliases (`__Arg0` ..) where they stand in
/// generic arguments (`Option<..>`, `of::<..>`): a type that does not resolve is then reported
/// at the alias, with the message and span of the function's own error, so rustc shows it once
/// and suggests no type parameter for a generated item. The alias's name stands at `#[tool]`
/// ([`super::at_call_site`]), where rustc suggests no edit.
fn args_impls(tool: &ToolFn, names: &Names) -> TokenStream {
    let aliases: Vec<Ident> = (0..tool.args().count())
        .map(|i| format_ident!("__Arg{i}"))
        .collect();
    let declared = aliases.iter().zip(tool.args()).map(|(alias, param)| {
        let (alias, ty) = (super::at_call_site(alias), &param.ty);
        quote!(type #alias = #ty;)
    });
    let deserialize = deserialize(tool, &names.args, &aliases);
    let json_schema = json_schema(tool, names, &aliases);
    let allow = super::allow_lints();
    let p = quote!(::toolwright::__private_v0_1);
    quote! {
        #allow
        const _: () = {
            // Unused by a tool without parameters, or when another mistake stops the expansion.
            #[allow(unused_imports)]
            use #p::{Unusable as _, Usable as _};
            #(#declared)*
            #deserialize
            #json_schema
        };
    }
}

/// `JsonSchema` for the arguments: the schema schemars' derive writes for the struct with
/// `#[serde(deny_unknown_fields)]` (doc comments as title and description, defaults, `Option`s
/// not required), as one call of a shared function with a row per parameter.
fn json_schema(tool: &ToolFn, names: &Names, aliases: &[Ident]) -> TokenStream {
    let p = quote!(::toolwright::__private_v0_1);
    let args_ident = &names.args;
    let args_name = args_ident.to_string();
    let args_doc = names.args_doc(&tool.name);
    let rows = tool.args().zip(aliases).map(|(param, ty)| {
        let name = param.ident.unraw().to_string();
        let doc = schemars_doc(&param.docs);
        let default = param.arg.default.as_ref().map(|_| {
            let default = default_fn(param);
            quote! {
                .with_default(|| #p::schemars::_schemars_maybe_to_value!(#args_ident::#default()))
            }
        });
        quote!((&#p::ArgProbe::<#ty>::NEW).schema(#name, #doc) #default)
    });
    quote! {
        impl #p::schemars::JsonSchema for #args_ident {
            fn schema_name() -> ::std::borrow::Cow<'static, str> {
                ::std::borrow::Cow::Borrowed(#args_name)
            }

            fn schema_id() -> ::std::borrow::Cow<'static, str> {
                ::std::borrow::Cow::Borrowed(::core::concat!(::core::module_path!(), "::", #args_name))
            }

            fn json_schema(generator: &mut #p::schemars::SchemaGenerator) -> #p::schemars::Schema {
                #p::args_schema(generator, #args_doc, &[#(#rows),*])
            }
        }
    }
}

/// A parameter's doc comment, as one literal: its lines, each without the one space after
/// `///`, reflowed by [`crate::doc::reflow`] as the tool's description is. Only a `#[doc = ..]`
/// that is not a string literal (a macro call) leaves the lines joined with `\n` as schemars'
/// derive joins them, by `concat!`, a macro expanded inside this one, which rustc hashes by
/// where `#[tool]` stands (see `anchored`).
fn schemars_doc(docs: &[syn::Attribute]) -> TokenStream {
    if let Some(lines) = crate::doc::doc_lines(docs) {
        let text = crate::doc::reflow(&lines.join("\n"));
        return quote!(#text);
    }
    let mut parts = Vec::new();
    let lines = docs
        .iter()
        .filter_map(|attr| attr.meta.require_name_value().ok());
    for (i, line) in lines.enumerate() {
        if i > 0 {
            parts.push(quote!("\n"));
        }
        match &line.value {
            syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(text),
                ..
            }) => {
                let value = text.value();
                let value = value.strip_prefix(' ').unwrap_or(&value);
                parts.push(quote!(#value));
            }
            other => parts.push(quote!(#other)),
        }
    }
    quote!(::core::concat!(#(#parts),*))
}

/// `Deserialize` for the arguments: a JSON object read by a map visitor (an array is the wrong
/// type, not values by position), with serde derive's errors ("missing", "unknown",
/// "duplicate field") and an absent `Option` read as `None`. The key lookup, the duplicate
/// check and the absent value are shared functions, compiled once for all tools.
fn deserialize(tool: &ToolFn, args_ident: &Ident, aliases: &[Ident]) -> TokenStream {
    let p = quote!(::toolwright::__private_v0_1);
    let expecting = format!("struct {args_ident}");
    let params: Vec<&Param> = tool.args().collect();
    let names: Vec<String> = params.iter().map(|p| p.ident.unraw().to_string()).collect();
    let slots: Vec<Ident> = (0..params.len()).map(|i| format_ident!("__f{i}")).collect();
    let types = aliases;
    let arms = slots
        .iter()
        .zip(&names)
        .zip(types)
        .enumerate()
        .map(|(i, ((slot, name), ty))| {
            // The last arm takes every index left: the lookup never returns one past the names.
            let pattern = if i + 1 == params.len() {
                quote!(_)
            } else {
                quote!(#i)
            };
            quote!(#pattern => (&#p::ArgProbe::<#ty>::NEW).value_once(&mut #slot, &mut __map, #name),)
        });
    let fields =
        params
            .iter()
            .zip(&slots)
            .zip(&names)
            .zip(types)
            .map(|(((param, slot), name), ty)| {
                let ident = &param.ident;
                // A call per field, not a `match`: the function is checked and compiled once
                // for every tool, where a `match` here would be for each.
                match param.arg.default {
                    Some(_) => {
                        let default = default_fn(param);
                        quote!(#ident: #slot.unwrap_or_else(#args_ident::#default),)
                    }
                    None => quote!(#ident: (&#p::ArgProbe::<#ty>::NEW).present(#slot, #name)?,),
                }
            });
    // No parameters: every key is unknown, so the loop only ever ends or fails.
    let take = if params.is_empty() {
        quote!(let _: usize = __key;)
    } else {
        // One `?` for every arm.
        quote!(match __key { #(#arms)* }?;)
    };
    quote! {
        impl<'de> #p::serde::Deserialize<'de> for #args_ident {
            fn deserialize<D: #p::serde::Deserializer<'de>>(
                deserializer: D,
            ) -> ::core::result::Result<Self, D::Error> {
                struct __Visitor;

                impl<'de> #p::serde::de::Visitor<'de> for __Visitor {
                    type Value = #args_ident;

                    fn expecting(
                        &self,
                        formatter: &mut ::core::fmt::Formatter<'_>,
                    ) -> ::core::fmt::Result {
                        formatter.write_str(#expecting)
                    }

                    fn visit_map<A: #p::serde::de::MapAccess<'de>>(
                        self,
                        mut __map: A,
                    ) -> ::core::result::Result<#args_ident, A::Error> {
                        const FIELDS: &[&str] = &[#(#names),*];
                        #(let mut #slots: ::core::option::Option<#types> = ::core::option::Option::None;)*
                        while let ::core::option::Option::Some(__key) =
                            #p::serde::de::MapAccess::next_key_seed(&mut __map, #p::FieldIndex(FIELDS))?
                        {
                            #take
                        }
                        ::core::result::Result::Ok(#args_ident { #(#fields)* })
                    }
                }

                #p::serde::Deserializer::deserialize_map(deserializer, __Visitor)
            }
        }
    }
}

fn default_fn(param: &Param) -> Ident {
    format_ident!("__toolwright_default_{}", param.ident.unraw())
}

/// The function behind `#[arg(default = ..)]`, named by serde's `default = "path"`.
fn default_value(param: &Param) -> Option<TokenStream> {
    let expr = param.arg.default.as_ref()?;
    let (fn_name, ty) = (default_fn(param), &param.ty);
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
    Some(quote! {
        #[doc(hidden)]
        fn #fn_name() -> #ty { #value }
    })
}
