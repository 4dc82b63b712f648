//! `#[toolset]`: the `#[tool]` methods of an `impl` block, each a tool holding the one shared
//! instance (`Arc<Self>`), and the `Toolset` impl that registers them together. Each method is
//! modelled, validated and expanded as a free `#[tool]` function is; what is the set's own
//! (the block's form, names unique within it) is checked here.

use std::collections::HashMap;

use proc_macro2::{Span, TokenStream};
use quote::quote;
use syn::{ImplItem, ImplItemFn, ItemFn, ItemImpl};

use crate::ast::Owner;
use crate::ctxt::Ctxt;
use crate::expand;

pub(crate) fn toolset(attr: TokenStream, item: TokenStream) -> TokenStream {
    let cx = Ctxt::default();
    if !attr.is_empty() {
        cx.error_spanned_by(
            &attr,
            "`#[toolset]` takes no arguments; put the keys on each method's `#[tool(..)]`",
        );
    }
    let mut block = match syn::parse2::<ItemImpl>(item.clone()) {
        Ok(block) => block,
        Err(_) if syn::parse2::<syn::Item>(item.clone()).is_ok() => {
            let message = "`#[toolset]` goes on an `impl` block whose `#[tool]` methods become tools: `#[toolset] impl Orders { /// .. #[tool] async fn get_order(&self, ..) }`";
            let error = syn::Error::new_spanned(&item, message).to_compile_error();
            return quote!(#error #item);
        }
        // Not an item the compiler accepts either: it reports the syntax error.
        Err(_) => return item,
    };
    form(&cx, &block);
    let (self_ty, generics) = ((*block.self_ty).clone(), block.generics.clone());
    let mut items = Vec::new();
    let mut registers = Vec::new();
    let mut errors = Vec::new();
    let mut names: HashMap<String, Span> = HashMap::new();
    for impl_item in &mut block.items {
        let ImplItem::Fn(method) = impl_item else {
            continue;
        };
        let Some(index) = tool_attr(method) else {
            continue;
        };
        let attr = method.attrs.remove(index);
        let args = match attr.meta {
            syn::Meta::List(list) => list.tokens,
            _ => TokenStream::new(),
        };
        let owner = Owner {
            self_ty: self_ty.clone(),
            generics: generics.clone(),
        };
        let (tool, checked) = crate::model(args, as_fn(method), Some(owner));
        // The method keeps its signature, with the `#[arg]`s and parameter docs taken off.
        method.sig = tool.item.sig.clone();
        if names.contains_key(&tool.name) {
            cx.error_at(
                tool.name_span,
                format!("two tools of this toolset are named `{}`; a model could not tell them apart: give one of them `#[tool(name = \"...\")]`", tool.name),
            );
        } else {
            names.insert(tool.name.clone(), tool.name_span);
        }
        let (generated, register) = match checked {
            Ok(()) => expand::expand(&tool),
            Err(e) => {
                errors.push(e.to_compile_error());
                expand::stub(&tool)
            }
        };
        items.push(generated);
        registers.push(register);
    }
    let errors_here = cx.check().err().map(|e| e.to_compile_error());
    let set = register_impl(&block, &registers);
    quote! {
        #errors_here
        #(#errors)*
        #block
        #(#items)*
        #set
    }
}

/// The position of a method's `#[tool]` (or `#[toolwright::tool]`) attribute.
fn tool_attr(method: &ImplItemFn) -> Option<usize> {
    method.attrs.iter().position(|attr| {
        attr.path()
            .segments
            .last()
            .is_some_and(|segment| segment.ident == "tool")
    })
}

fn as_fn(method: &ImplItemFn) -> ItemFn {
    ItemFn {
        attrs: method.attrs.clone(),
        vis: method.vis.clone(),
        sig: method.sig.clone(),
        block: Box::new(method.block.clone()),
    }
}

/// The block's own form: an inherent impl of a `'static` type.
fn form(cx: &Ctxt, block: &ItemImpl) {
    if let Some((_, path, _)) = &block.trait_ {
        cx.error_spanned_by(
            path,
            "`#[toolset]` goes on an inherent `impl Orders { .. }`, not on a trait impl: the tools are the type's own methods",
        );
    }
    if let Some(lifetime) = block.generics.lifetimes().next() {
        cx.error_spanned_by(
            lifetime,
            "a toolset is shared by every call behind an `Arc` and must be `'static`: remove the lifetime parameter and own the data (or hold it in an `Arc`)",
        );
    }
}

/// `impl Toolset for Orders`: each tool given a clone of the one `Arc<Self>`.
fn register_impl(block: &ItemImpl, registers: &[TokenStream]) -> TokenStream {
    let p = quote!(::toolwright::__private_v0_1);
    let self_ty = &block.self_ty;
    let (impl_generics, _, where_clause) = block.generics.split_for_impl();
    let predicates = where_clause.map(|w| w.predicates.iter().collect::<Vec<_>>());
    let predicates = predicates.unwrap_or_default();
    quote! {
        impl #impl_generics #p::Toolset for #self_ty
        where
            #(#predicates,)*
            #self_ty: ::core::marker::Send + ::core::marker::Sync + 'static,
        {
            fn register(
                set: ::std::sync::Arc<Self>,
                builder: #p::RegistryBuilder,
            ) -> #p::RegistryBuilder {
                #(let builder = #registers;)*
                let _ = &set;
                builder
            }
        }
    }
}
