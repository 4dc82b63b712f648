//! The `#[tool]` attribute of [toolwright](https://docs.rs/toolwright). Use it through the
//! `toolwright` crate, which documents it in full.
//!
//! The macro reads parse -> model -> validate -> expand, one module each: [`attr`] parses the
//! attribute arguments, [`ast`] builds the tool's model from the function, [`valid`] reports
//! every mistake at its span, [`expand`] generates code.

mod ast;
mod attr;
mod ctxt;
mod expand;
mod valid;

use proc_macro::TokenStream;
use quote::quote;

/// Turns an `async fn` into an LLM tool: argument struct, schema, validation, registry entry.
///
/// See the `toolwright` crate documentation for the keys of `#[tool(...)]` and `#[arg(...)]`.
#[proc_macro_attribute]
pub fn tool(attr: TokenStream, item: TokenStream) -> TokenStream {
    let item = match syn::parse::<syn::ItemFn>(item) {
        Ok(item) => item,
        Err(e) => {
            let message = format!("`#[tool]` goes on an `async fn` with a `///` doc comment ({e})");
            return syn::Error::new(e.span(), message).to_compile_error().into();
        }
    };
    let cx = ctxt::Ctxt::default();
    let attrs = attr::parse_tool_attrs(&cx, attr.into());
    let tool = ast::ToolFn::from_item(&cx, attrs, item);
    valid::check(&cx, &tool);
    match cx.check() {
        Ok(()) => expand::expand(&tool).into(),
        Err(errors) => {
            // Keep the function itself so the rest of the crate still type-checks and the user
            // sees only the mistakes in the attribute.
            let errors = errors.to_compile_error();
            let item = &tool.item;
            quote!(#errors #item).into()
        }
    }
}
