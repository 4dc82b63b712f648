//! Where generated tokens stand, and so what rustc reads them as: the user's item (hashed
//! relative to it, and read as the user's code, hence the lints allowed) or the attribute
//! (the macro's, where rustc suggests no edit).

use proc_macro2::{Delimiter, Group, Ident, Span, TokenStream, TokenTree};
use quote::quote;

/// `tokens` shown at `span` in diagnostics, each keeping its own hygiene.
pub(super) fn located_at(tokens: &TokenStream, span: Span) -> TokenStream {
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

/// The generated tokens of `tokens` (those spanned at `Span::call_site()`, the attribute)
/// re-spanned at `anchor`, a token of the item itself (its `fn`); the user's own tokens (types,
/// docs, rule arguments) as they were, and what [`at_call_site`] marked at the attribute. With
/// no anchor (a `#[toolset]` method), only the marks are taken off.
///
/// Why: rustc's incremental compilation hashes a span made at a macro's call site, and the
/// expansion itself, by the attribute's offset from the start of its module. An edit that moves
/// the tools below it without moving the module's start (the first tool's doc comment made
/// longer) changes that hash for every tool below, and each one's generated items are
/// type-checked and compiled again. At a token of the item, a generated token hashes relative
/// to the item that holds it, as hand-written code does. Name resolution is the same:
/// call-site hygiene resolves names as the item's own tokens do.
///
/// A `#[toolset]`'s methods are not anchored: its expansion stands at the `impl`, which an edit
/// of the methods does not move, so a line added to one of them leaves the generated code of
/// those below alone; anchored, each method's code would move with it (fewer items compiled
/// again after an edit that shifts the text without adding a line, more after one that adds a
/// line: measured, neither wins both).
///
/// A macro expanded inside the output (a derive, `concat!`) is hashed with this expansion as
/// its parent, whatever its tokens' spans: the expansion writes none where it can.
pub(crate) fn anchored(tokens: TokenStream, anchor: Option<Span>) -> TokenStream {
    let Some(site) = Span::call_site().source_text() else {
        return unmarked(tokens);
    };
    // The trees, each re-spanned if it was generated, a mark replaced by what it holds;
    // `None` when nothing changed (a user's group is then kept as it came, with its own open
    // and close spans).
    fn walk(tokens: &TokenStream, site: &str, anchor: Option<Span>) -> Option<TokenStream> {
        let mut changed = false;
        let mut trees = Vec::new();
        for mut tree in tokens.clone() {
            let generated = tree.span().source_text().is_some_and(|text| text == site);
            if let TokenTree::Group(group) = &tree {
                if generated && is_mark(group) {
                    trees.extend(group.stream());
                    changed = true;
                    continue;
                }
                let inner = walk(&group.stream(), site, anchor);
                let respan = generated && anchor.is_some();
                if respan || inner.is_some() {
                    let stream = inner.unwrap_or_else(|| group.stream());
                    let mut rebuilt = Group::new(group.delimiter(), stream);
                    rebuilt.set_span(anchor.filter(|_| respan).unwrap_or_else(|| group.span()));
                    tree = TokenTree::Group(rebuilt);
                    changed = true;
                }
            } else if let Some(anchor) = anchor.filter(|_| generated) {
                tree.set_span(anchor);
                changed = true;
            }
            trees.push(tree);
        }
        changed.then(|| trees.into_iter().collect())
    }
    walk(&tokens, &site, anchor).unwrap_or(tokens)
}

/// `tokens` with the marks of [`at_call_site`] taken off, when the call site has no source
/// text to tell generated tokens by: every invisible group holding one identifier, which reads
/// the same without its group.
fn unmarked(tokens: TokenStream) -> TokenStream {
    tokens
        .into_iter()
        .map(|tree| match tree {
            TokenTree::Group(group) if is_mark(&group) => group.stream(),
            TokenTree::Group(group) => {
                let mut rebuilt = Group::new(group.delimiter(), unmarked(group.stream()));
                rebuilt.set_span(group.span());
                TokenTree::Group(rebuilt).into()
            }
            other => other.into(),
        })
        .collect()
}

fn is_mark(group: &Group) -> bool {
    let mut inner = group.stream().into_iter();
    group.delimiter() == Delimiter::None
        && matches!(inner.next(), Some(TokenTree::Ident(_)))
        && inner.next().is_none()
}

/// `name` marked to stay at `#[tool]` when [`anchored`] moves the rest: a generated name that
/// rustc must read as the macro's, so that it suggests no edit at it, in an item whose hash no
/// other item's code depends on (a type alias). The mark is an invisible group that
/// [`anchored`] takes off; it never reaches the compiler.
pub(crate) fn at_call_site(name: &Ident) -> TokenStream {
    let name = Ident::new(&name.to_string(), Span::call_site());
    TokenTree::Group(Group::new(Delimiter::None, quote!(#name))).into()
}

/// The lints allowed on every generated item. Spanned at the function (see [`anchored`]), a
/// generated item reads to rustc and clippy as the user's own code, so the lints a user turns
/// on for their code would fire on it: a `for<..>` binder that names a lifetime it does not use
/// (on purpose, see `argument_bound`), an argument struct without `Debug` (its fields' types
/// need not have one), `Duration::from_millis(2000)`, and the like.
pub(crate) fn allow_lints() -> TokenStream {
    quote! {
        #[allow(
            unused_lifetimes,
            single_use_lifetimes,
            unit_bindings,
            unused_qualifications,
            unused_results,
            unreachable_pub,
            missing_copy_implementations,
            missing_debug_implementations,
            clippy::all,
            clippy::pedantic,
            clippy::nursery,
            clippy::restriction
        )]
    }
}
