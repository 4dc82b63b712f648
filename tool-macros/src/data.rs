//! `#[data]`: the serde and schemars derives for the types a tool takes and returns, with every
//! crate path pointing through `::toolwright::__private_v0_1`, so a user's Cargo.toml names neither
//! serde nor schemars. Parse the options, check the item, expand; every mistake is collected in
//! a [`Ctxt`] and reported at its span, as for `#[tool]`.

use proc_macro2::{Span, TokenStream};
use quote::{quote, ToTokens};
use syn::meta::ParseNestedMeta;
use syn::spanned::Spanned;
use syn::Token;

use crate::attr::{distance, key_of, skip_value, Attr};
use crate::ctxt::Ctxt;

const OPTIONS: &[&str] = &["input", "output"];

/// What the three forms are for, appended to every message about the options.
const FORMS: &str = "`#[data]` derives all three for a type the model both sends and \
    receives, `#[data(input)]` only what an argument needs (`Deserialize` + `JsonSchema`), \
    `#[data(output)]` only what a result needs (`Serialize` + `JsonSchema`)";

/// Options people reach for, from serde, schemars or habit, and what to write here.
const OPTION_HINTS: &[(&str, &str)] = &[
    (
        "serde",
        "serde's options go in their own attribute below `#[data]`: `#[serde(rename_all = \"snake_case\")]`",
    ),
    (
        "schemars",
        "schemars' options go in their own attribute below `#[data]`: `#[schemars(...)]`",
    ),
    (
        "crate",
        "`#[data]` always derives through `toolwright`, so there is no crate path to give",
    ),
    ("Serialize", "a result type is `#[data(output)]`"),
    ("serialize", "a result type is `#[data(output)]`"),
    ("result", "a result type is `#[data(output)]`"),
    ("Deserialize", "an argument type is `#[data(input)]`"),
    ("deserialize", "an argument type is `#[data(input)]`"),
    ("arg", "an argument type is `#[data(input)]`"),
    ("args", "an argument type is `#[data(input)]`"),
    ("argument", "an argument type is `#[data(input)]`"),
    ("both", "`#[data]` alone derives both directions"),
    ("all", "`#[data]` alone derives both directions"),
];

/// Which derives the type gets.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Direction {
    /// `Serialize`, `Deserialize` and `JsonSchema`.
    Both,
    /// `Deserialize` and `JsonSchema`: an argument type.
    Input,
    /// `Serialize` and `JsonSchema`: a result type, which may hold `&'static str`.
    Output,
}

fn unknown_option_message(key: &str) -> String {
    if let Some((_, hint)) = OPTION_HINTS.iter().find(|(k, _)| *k == key) {
        return format!("unknown `#[data]` option `{key}`: {hint}. {FORMS}");
    }
    let closest = OPTIONS
        .iter()
        .map(|v| (distance(key, v), *v))
        .filter(|(d, _)| *d <= 3)
        .min_by_key(|(d, _)| *d);
    match closest {
        Some((_, v)) => {
            format!("unknown `#[data]` option `{key}`: did you mean `{v}`? {FORMS}")
        }
        None => format!("unknown `#[data]` option `{key}`: {FORMS}"),
    }
}

/// Parses `input` / `output`; anything else is recorded and parsing goes on.
pub(crate) fn parse_options(cx: &Ctxt, tokens: TokenStream) -> Direction {
    let mut input = Attr::none(cx, "#[data]", "input");
    let mut output = Attr::none(cx, "#[data]", "output");
    // The flag that completed the pair, where `input, output` is blamed.
    let mut both_at: Option<Span> = None;
    let parser = syn::meta::parser(|meta: ParseNestedMeta| {
        let key = key_of(&meta);
        let (slot, other) = match key.as_str() {
            "input" => (&mut input, output.is_set()),
            "output" => (&mut output, input.is_set()),
            unknown => {
                cx.error_spanned_by(&meta.path, unknown_option_message(unknown));
                return skip_value(&meta);
            }
        };
        if meta.input.peek(Token![=]) || meta.input.peek(syn::token::Paren) {
            cx.error_spanned_by(
                &meta.path,
                format!("`{key}` is a flag: write `#[data({key})]`"),
            );
            skip_value(&meta)?;
        } else {
            if other && !slot.is_set() {
                both_at = Some(meta.path.span());
            }
            slot.set(&meta.path, ());
        }
        Ok(())
    });
    if let Err(e) = syn::parse::Parser::parse2(parser, tokens) {
        cx.error_at(e.span(), format!("{e}: {FORMS}"));
    }
    if let Some(span) = both_at {
        cx.error_at(
            span,
            "`input` and `output` together are what `#[data]` alone derives: write `#[data]`",
        );
        return Direction::Both;
    }
    match (input.get(), output.get()) {
        (Some(()), None) => Direction::Input,
        (None, Some(())) => Direction::Output,
        _ => Direction::Both,
    }
}

/// Where a misplaced `#[data]` is blamed: the item's keyword and name, not its whole body.
fn head(item: &syn::Item) -> TokenStream {
    match item {
        syn::Item::Fn(f) => {
            let (asyncness, fn_token, ident) = (&f.sig.asyncness, &f.sig.fn_token, &f.sig.ident);
            quote!(#asyncness #fn_token #ident)
        }
        syn::Item::Union(u) => {
            let (token, ident) = (&u.union_token, &u.ident);
            quote!(#token #ident)
        }
        syn::Item::Type(t) => {
            let (token, ident) = (&t.type_token, &t.ident);
            quote!(#token #ident)
        }
        syn::Item::Trait(t) => {
            let (token, ident) = (&t.trait_token, &t.ident);
            quote!(#token #ident)
        }
        syn::Item::Impl(i) => {
            let (token, ty) = (&i.impl_token, &i.self_ty);
            quote!(#token #ty)
        }
        syn::Item::Mod(m) => {
            let (token, ident) = (&m.mod_token, &m.ident);
            quote!(#token #ident)
        }
        other => other.to_token_stream(),
    }
}

/// Records an error unless `item` is a struct or an enum, saying what to write instead.
pub(crate) fn check_item(cx: &Ctxt, item: &syn::Item) {
    let fix = match item {
        syn::Item::Struct(_) | syn::Item::Enum(_) => return,
        syn::Item::Fn(_) => {
            "`#[data]` goes on a struct or enum that a tool takes or returns, not on a function: \
             to make this function a tool, write `#[tool]` above it"
        }
        syn::Item::Union(_) => {
            "`#[data]` goes on a struct or enum: serde cannot derive for a union; write an enum"
        }
        syn::Item::Type(_) => {
            "`#[data]` goes on a struct or enum, not a type alias: put it where the aliased type \
             is defined"
        }
        syn::Item::Impl(_) => {
            "`#[data]` goes on a struct or enum, not an `impl` block: put it on the type's \
             definition"
        }
        _ => "`#[data]` goes on a struct or enum that a tool takes or returns",
    };
    cx.error_spanned_by(head(item), fix);
}

/// The derives and their crate paths, then the item as written: the user's own `#[serde]` and
/// `#[schemars]` attributes come after the derive that introduces them.
pub(crate) fn expand(direction: Direction, item: &syn::Item) -> TokenStream {
    let p = quote!(::toolwright::__private_v0_1);
    let derives = match direction {
        Direction::Both => quote!(#p::serde::Serialize, #p::serde::Deserialize),
        Direction::Input => quote!(#p::serde::Deserialize),
        Direction::Output => quote!(#p::serde::Serialize),
    };
    let serde_crate = "::toolwright::__private_v0_1::serde";
    let schemars_crate = "::toolwright::__private_v0_1::schemars";
    let mut item = item.clone();
    reflow_descriptions(&mut item);
    quote! {
        #[derive(#derives, #p::schemars::JsonSchema)]
        #[serde(crate = #serde_crate)]
        #[schemars(crate = #schemars_crate)]
        #item
    }
}

/// Every doc comment of the type that schemars' derive makes a `description` (the type's, each
/// variant's and field's), reflowed as a tool's description is ([`crate::doc::reflow`]), as an
/// explicit `#[schemars(description = "..")]`: the derive itself joins the lines with `\n`.
/// Written only where the reflow changes the text, and never where the user wrote a
/// `description` already (or a `#[doc]` that is not a literal).
fn reflow_descriptions(item: &mut syn::Item) {
    fn fields(fields: &mut syn::Fields) {
        for field in fields.iter_mut() {
            describe(&mut field.attrs);
        }
    }
    match item {
        syn::Item::Struct(s) => {
            describe(&mut s.attrs);
            fields(&mut s.fields);
        }
        syn::Item::Enum(e) => {
            describe(&mut e.attrs);
            for variant in &mut e.variants {
                describe(&mut variant.attrs);
                fields(&mut variant.fields);
            }
        }
        _ => {}
    }
}

/// Adds `#[schemars(description = "..")]` with the reflowed description of `attrs`' doc
/// comment, when it differs from what schemars' derive would write.
fn describe(attrs: &mut Vec<syn::Attribute>) {
    let Some(lines) = crate::doc::doc_lines(attrs) else {
        return;
    };
    if lines.is_empty() || has_description(attrs) {
        return;
    }
    // schemars' reading: a first line starting with `#` is the title, the rest the description.
    let doc = lines.join("\n");
    let doc = doc.trim();
    let description = match doc.strip_prefix('#') {
        Some(_) => doc.split_once('\n').map_or("", |(_, rest)| rest).trim(),
        None => doc,
    };
    let reflowed = crate::doc::reflow(description);
    if reflowed != description {
        attrs.push(syn::parse_quote!(#[schemars(description = #reflowed)]));
    }
}

/// Whether a `#[schemars(..)]` among `attrs` sets `description` itself.
fn has_description(attrs: &[syn::Attribute]) -> bool {
    attrs
        .iter()
        .filter(|a| a.path().is_ident("schemars"))
        .any(|a| mentions(a.to_token_stream(), "description"))
}

fn mentions(tokens: TokenStream, name: &str) -> bool {
    tokens.into_iter().any(|tree| match tree {
        proc_macro2::TokenTree::Ident(ident) => ident == name,
        proc_macro2::TokenTree::Group(group) => mentions(group.stream(), name),
        _ => false,
    })
}

/// The whole attribute: the derives, or every mistake next to the unchanged item.
pub(crate) fn data(attr: TokenStream, item: TokenStream) -> TokenStream {
    let cx = Ctxt::default();
    let direction = parse_options(&cx, attr);
    let parsed = match syn::parse2::<syn::Item>(item.clone()) {
        Ok(parsed) => parsed,
        Err(e) => {
            cx.error_at(
                e.span(),
                format!("`#[data]` goes on a struct or enum that a tool takes or returns ({e})"),
            );
            return with_errors(cx, item);
        }
    };
    check_item(&cx, &parsed);
    match cx.check() {
        Ok(()) => {
            // A field of a type the model cannot fill is reported at the field, and the type
            // is derived all the same: the report is the one error.
            let mut parsed = parsed;
            let (errors, probes) = clock_fields(direction, &mut parsed);
            let expanded = expand(direction, &parsed);
            quote!(#errors #expanded #probes)
        }
        Err(errors) => {
            // Keep the item so the rest of the crate still type-checks around the mistake.
            let errors = errors.to_compile_error();
            quote!(#errors #parsed)
        }
    }
}

/// The fields of a type the model sends (`#[data]`, `#[data(input)]`) whose type holds std's
/// `SystemTime` or `Instant` (reported here, by name: see `ast::clock_types`) or a `Duration`
/// (asked of the compiler: see `expand::duration_probes`, not for a generic type, whose fields
/// may name its parameters). A field with its own `with`, `deserialize_with`, `skip` or
/// `skip_deserializing` (serde) or `with`/`schema_with` (schemars) says how it is read and is
/// left alone. An `Instant` field, which serde cannot derive for, is read by a function that
/// always fails, so that the derive adds no error of its own (the crate does not compile
/// anyway).
fn clock_fields(direction: Direction, item: &mut syn::Item) -> (TokenStream, TokenStream) {
    if direction == Direction::Output {
        return (TokenStream::new(), TokenStream::new());
    }
    let cx = Ctxt::default();
    let mut probes = Vec::new();
    let generic = match item {
        syn::Item::Struct(s) => !s.generics.params.is_empty(),
        syn::Item::Enum(e) => !e.generics.params.is_empty(),
        _ => true,
    };
    let mut check = |field: &mut syn::Field| {
        if read_its_own_way(&field.attrs) {
            return;
        }
        let mut instant = false;
        for (path, name) in crate::ast::clock_types(&field.ty) {
            cx.error_spanned_by(path, crate::valid::clock_message(name));
            instant |= name == "Instant";
        }
        if instant {
            let p = "::toolwright::__private_v0_1::clock";
            let de = format!("{p}::refused_deserialize");
            let ser = format!("{p}::refused_serialize");
            field
                .attrs
                .push(syn::parse_quote!(#[serde(deserialize_with = #de)]));
            if direction == Direction::Both {
                field
                    .attrs
                    .push(syn::parse_quote!(#[serde(serialize_with = #ser)]));
            }
            field
                .attrs
                .push(syn::parse_quote!(#[schemars(with = "()")]));
        }
        if !generic {
            probes.push(crate::expand::duration_probes(&field.ty));
        }
    };
    match item {
        syn::Item::Struct(s) => s.fields.iter_mut().for_each(&mut check),
        syn::Item::Enum(e) => e
            .variants
            .iter_mut()
            .flat_map(|v| v.fields.iter_mut())
            .for_each(&mut check),
        _ => {}
    }
    let errors = cx.check().err().map(|e| e.to_compile_error());
    let probes = probes.iter().any(|p| !p.is_empty()).then(|| {
        quote! {
            const _: () = {
                #[allow(dead_code)]
                fn __toolwright_clock_probes() {
                    #(#probes)*
                }
            };
        }
    });
    (quote!(#errors), quote!(#probes))
}

/// Whether a field's own attributes say how it is read (or that it is not).
fn read_its_own_way(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        let tokens = a.to_token_stream();
        (a.path().is_ident("serde")
            && ["with", "deserialize_with", "skip", "skip_deserializing"]
                .iter()
                .any(|k| mentions(tokens.clone(), k)))
            || (a.path().is_ident("schemars")
                && ["with", "schema_with"]
                    .iter()
                    .any(|k| mentions(tokens.clone(), k)))
    })
}

fn with_errors(cx: Ctxt, item: TokenStream) -> TokenStream {
    match cx.check() {
        Ok(()) => item,
        Err(errors) => {
            let errors = errors.to_compile_error();
            quote!(#errors #item)
        }
    }
}

#[cfg(test)]
mod tests {
    use quote::quote;

    use super::{parse_options, Direction};
    use crate::ctxt::Ctxt;

    /// The direction `#[data(attr)]` asks for, and the messages it reports.
    fn options(attr: proc_macro2::TokenStream) -> (Direction, Vec<String>) {
        let cx = Ctxt::default();
        let direction = parse_options(&cx, attr);
        let errors = match cx.check() {
            Ok(()) => Vec::new(),
            Err(e) => e.into_iter().map(|e| e.to_string()).collect(),
        };
        (direction, errors)
    }

    #[test]
    fn each_form_selects_its_derives() {
        assert_eq!(options(quote!()), (Direction::Both, Vec::new()));
        assert_eq!(options(quote!(input)), (Direction::Input, Vec::new()));
        assert_eq!(options(quote!(output)), (Direction::Output, Vec::new()));
    }

    #[test]
    fn every_mistake_in_the_options_is_reported_with_its_fix() {
        let (_, found) = options(quote!(
            outptu,
            serde(rename_all = "snake_case"),
            input = true,
            input,
            output
        ));
        let expected = [
            "did you mean `output`?",
            "serde's options go in their own attribute below `#[data]`",
            "`input` is a flag: write `#[data(input)]`",
            "`input` and `output` together are what `#[data]` alone derives",
        ];
        assert_eq!(found.len(), expected.len(), "{found:#?}");
        for (message, fragment) in found.iter().zip(expected) {
            assert!(message.contains(fragment), "{message:?} lacks {fragment:?}");
        }
    }

    #[test]
    fn only_structs_and_enums_are_accepted() {
        let check = |item: proc_macro2::TokenStream| {
            let cx = Ctxt::default();
            super::check_item(&cx, &syn::parse2(item).unwrap());
            cx.check().map_err(|e| e.to_string())
        };
        assert!(check(quote!(
            struct A {
                x: u32,
            }
        ))
        .is_ok());
        assert!(check(quote!(
            enum B {
                X,
                Y,
            }
        ))
        .is_ok());
        let on_fn = check(quote!(
            async fn f() {}
        ))
        .unwrap_err();
        assert!(on_fn.contains("write `#[tool]`"), "{on_fn}");
        let on_union = check(quote!(union U { a: u32 })).unwrap_err();
        assert!(on_union.contains("write an enum"), "{on_union}");
    }
}
