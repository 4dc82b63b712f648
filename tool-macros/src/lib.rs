//! The `#[tool]` and `#[data]` attributes of [toolwright](https://docs.rs/toolwright). Use them
//! through the `toolwright` crate, which documents them in full.
//!
//! `#[tool]` reads parse -> model -> validate -> expand, one module each: `attr` parses the
//! attribute arguments, `ast` builds the tool's model from the function, `valid` reports
//! every mistake at its span, `expand` generates code. `#[data]`, a few derives and two flags,
//! does the same steps in `data`.

#![forbid(unsafe_code)]
#![deny(unreachable_pub)]

mod ast;
mod attr;
mod ctxt;
mod data;
mod doc;
mod expand;
mod toolset;
mod valid;

use proc_macro::TokenStream;
use quote::quote;

/// Turns a function (`async` or not) into an LLM tool: argument struct, schema, validation,
/// registry entry. On a method, with `#[toolset]` on its `impl` block.
///
/// See the `toolwright` crate documentation for the keys of `#[tool(...)]` and `#[arg(...)]`.
///
/// Doc comments (the function's and its parameters') become descriptions reflowed for the
/// model: a paragraph's lines joined with spaces, paragraphs, list items and code blocks kept.
/// A parameter of std's `SystemTime` or `Instant` (bare or `std::time::X`) or of
/// `std::time::Duration` (however it is named: the compiler is asked, so chrono's `Duration`
/// passes), also inside `Option<..>` or `Vec<..>`, is a compile error naming what to take
/// instead: an RFC 3339 `String`, `chrono::DateTime<Utc>`/`jiff::Timestamp`, or an integer with
/// its unit in the name (`timeout_ms: u64`).
#[proc_macro_attribute]
pub fn tool(attr: TokenStream, item: TokenStream) -> TokenStream {
    let item = proc_macro2::TokenStream::from(item);
    let tool_fn = match syn::parse2::<syn::ItemFn>(item.clone()) {
        Ok(tool_fn) => tool_fn,
        Err(e) => return unparsed(attr.into(), item, e).into(),
    };
    let (tool, checked) = model(attr.into(), tool_fn, None);
    match checked {
        Ok(()) => expand::expand(&tool).0.into(),
        Err(errors) => {
            let errors = errors.to_compile_error();
            let (stub, _) = expand::stub(&tool);
            // Anchored as the tool's items are, so that a mistake reads the same either way.
            let stub = expand::anchored(stub, Some(tool.item.sig.fn_token.span));
            quote!(#errors #stub).into()
        }
    }
}

/// Turns the `#[tool]` methods of an `impl` block into tools that share one instance of the
/// type, registered together with `Registry::builder().toolset(value)`.
///
/// See the `toolwright` crate documentation ("Tools as methods").
#[proc_macro_attribute]
pub fn toolset(attr: TokenStream, item: TokenStream) -> TokenStream {
    toolset::toolset(attr.into(), item.into()).into()
}

/// An item that is not a function syn can read. A function whose body has a syntax error is
/// emitted again with its body as written, so the compiler reports that error itself and
/// nothing else (as tracing-attributes does), with the tool's stand-in beside it so that code
/// using the tool still type-checks. Anything else is not a function at all.
fn unparsed(
    attr: proc_macro2::TokenStream,
    item: proc_macro2::TokenStream,
    error: syn::Error,
) -> proc_macro2::TokenStream {
    if let Ok(ast::UnparsedBody {
        item: tool_fn,
        body,
    }) = syn::parse2(item.clone())
    {
        let (tool, _) = model(attr, tool_fn, None);
        let (attrs, vis, sig) = (&tool.item.attrs, &tool.item.vis, &tool.item.sig);
        let (stub, _) = expand::stub_items(&tool);
        return quote!(#(#attrs)* #vis #sig #body #stub);
    }
    if syn::parse2::<syn::Item>(item.clone()).is_err() {
        // Not an item the compiler accepts either: it reports the syntax error.
        return item;
    }
    let message =
        format!("`#[tool]` goes on a function (`async` or not) with a `///` doc comment ({error})");
    syn::Error::new(error.span(), message).to_compile_error()
}

/// Derives serde's `Serialize` and `Deserialize` and schemars' `JsonSchema` for a struct or enum
/// that a tool takes or returns, through `toolwright`'s own copies of those crates, so
/// Cargo.toml needs `toolwright` alone.
///
/// - `#[data]`: all three, for a type the model both sends and receives;
/// - `#[data(input)]`: `Deserialize` + `JsonSchema`, for an argument type;
/// - `#[data(output)]`: `Serialize` + `JsonSchema`, for a result type (which may then hold
///   `&'static str`).
///
/// Put it above the type's other attributes: `#[serde(...)]` and `#[schemars(...)]` on the type
/// and its fields work as with the derives written out, and `///` docs on fields and variants
/// become descriptions in the schema. The `toolwright` crate documentation has an example
/// ("Your own types").
#[proc_macro_attribute]
pub fn data(attr: TokenStream, item: TokenStream) -> TokenStream {
    data::data(attr.into(), item.into()).into()
}

/// Parse, model and validate: the tool, and every mistake found. `owner`: the `impl` block
/// of a `#[toolset]` method.
fn model(
    attr: proc_macro2::TokenStream,
    item: syn::ItemFn,
    owner: Option<ast::Owner>,
) -> (ast::ToolFn, syn::Result<()>) {
    let cx = ctxt::Ctxt::default();
    let attrs = attr::parse_tool_attrs(&cx, attr);
    let mut tool = ast::ToolFn::from_item(&cx, attrs, item);
    if let Some(owner) = owner {
        tool.in_impl(owner);
    }
    valid::check(&cx, &tool);
    (tool, cx.check())
}

#[cfg(test)]
mod tests {
    use quote::quote;

    /// The messages `#[tool(attr)]` on `item` reports.
    fn errors(attr: proc_macro2::TokenStream, item: proc_macro2::TokenStream) -> Vec<String> {
        let item = syn::parse2(item).unwrap();
        match super::model(attr, item, None).1 {
            Ok(()) => Vec::new(),
            Err(e) => e.into_iter().map(|e| e.to_string()).collect(),
        }
    }

    #[test]
    fn a_well_formed_tool_has_no_errors() {
        let item = quote! {
            /// Refund an order.
            async fn refund(
                key: IdempotencyKey,
                /// The order.
                #[arg(pattern = "^A[0-9]+$", length(max = 20))]
                order_id: String,
                #[arg(range(min = 0.01, max = 500.0))]
                amount: f64,
            ) -> Result<Refund, ToolError> { todo!() }
        };
        assert_eq!(
            errors(quote!(timeout_ms = 8000, retries = 2), item.clone()),
            Vec::<String>::new()
        );
        assert_eq!(
            errors(quote!(read_only, idempotent = true, retries = 3), item),
            Vec::<String>::new()
        );
    }

    #[test]
    fn retries_are_allowed_when_repeating_is_safe() {
        let item = quote! {
            /// Look up an order.
            async fn get(order_id: String) -> Result<String, ToolError> { todo!() }
        };
        for attr in [
            quote!(idempotent = true, retries = 2),
            quote!(read_only, retries = 2),
            quote!(retries = 0),
        ] {
            assert_eq!(
                errors(attr.clone(), item.clone()),
                Vec::<String>::new(),
                "{attr}"
            );
        }
        assert_eq!(errors(quote!(retries = 1), item).len(), 1);
    }

    #[test]
    fn every_mistake_is_reported_in_one_pass() {
        let item = quote! {
            async fn bad<T>(
                &self,
                #[arg(range(min = 9, max = 1), lenght(max = 3))]
                n: u32,
                #[arg(pattern = "(")]
                s: &str,
                #[arg(sensitive)]
                key: IdempotencyKey,
            ) -> ApiResult<String> { todo!() }
        };
        let found = errors(
            quote!(
                name = "a b",
                timeout_ms = 0,
                idempotnet = true,
                blocking = false
            ),
            item,
        );
        let expected = [
            "unknown `#[tool]` key `idempotnet`",
            "unknown `#[arg]` key `lenght`",
            "`blocking` is for a sync `fn`",
            "cannot be generic",
            "tool name `a b` contains ' '",
            "has no description",
            "`timeout_ms = 0`",
            "needs `#[toolset]` on its `impl` block",
            "`range` has min 9 above max 1",
            "write `s: String`",
            "`pattern` is not a valid regular expression",
            "`key` is injected by the registry",
            "cannot see what `ApiResult` stands for",
        ];
        assert_eq!(found.len(), expected.len(), "{found:#?}");
        for (message, fragment) in found.iter().zip(expected) {
            assert!(message.contains(fragment), "{message:?} lacks {fragment:?}");
        }
    }

    #[test]
    fn plain_and_sync_tools_have_no_errors() {
        for item in [
            quote! {
                /// Add.
                fn add(a: i64, b: i64) -> i64 { a + b }
            },
            quote! {
                /// Maybe.
                async fn maybe(id: String) -> Option<String> { None }
            },
            quote! {
                /// Nothing.
                fn nothing() {}
            },
        ] {
            assert_eq!(errors(quote!(read_only), item), Vec::<String>::new());
        }
    }

    #[test]
    fn integer_bounds_beyond_i64_and_u64_are_refused_at_the_literal() {
        let item = quote! {
            /// Count.
            async fn count(
                #[arg(range(min = -9223372036854775808, max = 18446744073709551615))]
                n: u64,
                #[arg(range(max = 18446744073709551616))]
                m: u64,
                #[arg(range(min = -9223372036854775809))]
                k: i64,
            ) -> Result<u64, ToolError> { todo!() }
        };
        let found = errors(quote!(read_only), item);
        assert_eq!(found.len(), 2, "{found:#?}");
        assert!(found[0].contains("too large"), "{}", found[0]);
        assert!(found[1].contains("too small"), "{}", found[1]);
        assert!(
            found[0].contains("18446744073709551615 (`u64::MAX`)"),
            "{}",
            found[0]
        );
    }

    /// The macros a tool's expansion invokes, by name, and whether it derives anything.
    fn invoked_macros(tokens: proc_macro2::TokenStream) -> (Vec<String>, bool) {
        use proc_macro2::{Spacing, TokenTree};
        let (mut names, mut derives) = (Vec::new(), false);
        let trees: Vec<TokenTree> = tokens.into_iter().collect();
        for (i, tree) in trees.iter().enumerate() {
            match (tree, trees.get(i + 1)) {
                (TokenTree::Ident(name), Some(TokenTree::Punct(bang)))
                    if bang.as_char() == '!' && bang.spacing() == Spacing::Alone =>
                {
                    names.push(name.to_string());
                }
                (TokenTree::Ident(name), _) if name == "derive" => derives = true,
                (TokenTree::Group(group), _) => {
                    let (inner, derived) = invoked_macros(group.stream());
                    names.extend(inner);
                    derives |= derived;
                }
                _ => {}
            }
        }
        (names, derives)
    }

    /// rustc hashes a macro expanded inside `#[tool]`'s output with the attribute's place in
    /// the module, so every tool below an edit that moves them would be compiled again: the
    /// expansion writes its impls itself and joins doc comments itself. What is left is the
    /// collection entry (`inventory::submit!`) and the schema id's `module_path!()`.
    #[test]
    fn a_tool_expands_to_no_macro_but_its_collection_entry_and_schema_id() {
        let item = quote! {
            /// Look up an order.
            async fn get_order(
                /// The order's id,
                /// as printed on the receipt.
                #[arg(length(min = 1, max = 20), pattern = "^A[0-9]+$")]
                order_id: String,
                /// How many lines.
                #[arg(range(min = 1, max = 50))]
                limit: u32,
            ) -> Result<String, ToolError> {
                Ok(order_id)
            }
        };
        let (tool, checked) = super::model(quote!(read_only), syn::parse2(item).unwrap(), None);
        assert!(checked.is_ok());
        let (expanded, _) = crate::expand::expand(&tool);
        let (mut names, derives) = invoked_macros(expanded);
        names.sort();
        assert_eq!(names, ["concat", "module_path", "submit"]);
        assert!(!derives);
    }
}
