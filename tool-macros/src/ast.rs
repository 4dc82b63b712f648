//! The macro's own model of a tool function: what the attribute and the signature say, with
//! `#[arg]` and parameter doc comments taken off the function so it compiles as written.

use proc_macro2::{Span, TokenStream};
use quote::ToTokens;
use syn::ext::IdentExt;
use syn::spanned::Spanned;
use syn::{Attribute, FnArg, GenericArgument, Ident, ItemFn, Pat, PathArguments, ReturnType, Type};

use crate::attr::{self, ArgAttrs, ToolAttrs};
use crate::ctxt::Ctxt;

pub(crate) struct ToolFn {
    /// The function, with parameter attributes the compiler would reject removed.
    pub item: ItemFn,
    pub attrs: ToolAttrs,
    /// The tool name and the span to blame for it.
    pub name: String,
    pub name_span: Span,
    pub description: Option<String>,
    pub params: Vec<Param>,
    pub output: Output,
    /// The `impl` block of a `#[toolset]` method; `None` for a free function.
    pub owner: Option<Owner>,
}

/// The `impl` block a `#[toolset]` method is in.
pub(crate) struct Owner {
    /// `Orders<D>`, as written after `impl<..>`.
    pub self_ty: Type,
    /// `<D: Db>` and its where-clause: the tool struct's own.
    pub generics: syn::Generics,
}

pub(crate) enum Output {
    /// `-> Result<T, E>`: the model sees `T`, written between the spans `first` and `last`.
    /// `error` is where a wrong `E` is blamed (first and last token): `E` itself, or all of
    /// `io::Result<T>`.
    Result {
        ok: Box<Type>,
        first: Span,
        last: Span,
        error: (Span, Span),
    },
    /// `-> T`, `-> Option<T>`, `-> ()`: the value is the result (`None` is `status: empty`).
    Plain {
        ty: Box<Type>,
        first: Span,
        last: Span,
    },
    /// No return type: `()`, a success without data. The span is the parameters' `)`.
    Unit(Span),
    /// A `Result` alias (`ApiResult<T>`), which the macro cannot see through: reported by
    /// validation.
    Unsupported(Box<Type>),
}

impl Output {
    /// The type the model receives, and the first and last spans to blame it at.
    pub(crate) fn value(&self) -> Option<(TokenStream, Span, Span)> {
        match self {
            Output::Result {
                ok, first, last, ..
            } => Some((ok.to_token_stream(), *first, *last)),
            Output::Plain { ty, first, last } => Some((ty.to_token_stream(), *first, *last)),
            Output::Unit(span) => Some((quote::quote_spanned!(*span=> ()), *span, *span)),
            Output::Unsupported(_) => None,
        }
    }
}

pub(crate) struct Param {
    /// The parameter as written (pattern or receiver), for errors about it.
    pub written: TokenStream,
    pub ident: Ident,
    pub ty: Type,
    pub kind: ParamKind,
    pub docs: Vec<Attribute>,
    pub arg: ArgAttrs,
}

pub(crate) enum ParamKind {
    /// Part of the argument struct and the schema.
    Arg,
    /// Injected: `IdempotencyKey`.
    Key,
    /// Injected: `ToolContext`.
    Context,
    /// Injected: `State<T>`, with `T`.
    State(Box<Type>),
    /// `&self` (allowed in a `#[toolset]`), or `self`, `&mut self`, ...: reported by
    /// validation.
    Receiver(Receiver),
    /// A pattern other than a plain name, such as `(a, b): (u32, u32)`: reported by validation.
    Pattern,
}

/// How a method takes `self`.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Receiver {
    /// `&self`: the one a tool can have, the instance being shared by every call.
    Shared,
    /// `&mut self`.
    Mut,
    /// `self` or `mut self`.
    Value,
    /// `self: Box<Self>`, `self: Arc<Self>`, ...
    Typed,
}

fn docs(attrs: &[Attribute]) -> Vec<Attribute> {
    attrs
        .iter()
        .filter(|a| a.path().is_ident("doc"))
        .cloned()
        .collect()
}

/// The text of `///` comments as the model reads it: rustdoc's leading space removed, the lines
/// reflowed by [`crate::doc::reflow`] (a paragraph's lines joined with spaces, paragraphs
/// separated by a blank line), the ends trimmed. A `#[doc]` that is not a string literal is
/// left out.
pub(crate) fn doc_text(attrs: &[Attribute]) -> Option<String> {
    let mut lines = Vec::new();
    for attr in attrs {
        if let syn::Meta::NameValue(nv) = &attr.meta {
            if nv.path.is_ident("doc") {
                if let syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Str(s),
                    ..
                }) = &nv.value
                {
                    let line = s.value();
                    lines.push(line.strip_prefix(' ').map(str::to_owned).unwrap_or(line));
                }
            }
        }
    }
    let text = crate::doc::reflow(&lines.join("\n"));
    (!text.is_empty()).then_some(text)
}

/// The spans of the first and last tokens of `tokens`: an error spanned from one to the other
/// underlines all of it (stable Rust cannot join spans).
pub(crate) fn token_spans(tokens: &impl ToTokens) -> (Span, Span) {
    let mut iter = tokens.to_token_stream().into_iter();
    let first = iter.next().map_or_else(Span::call_site, |t| t.span());
    let last = iter.last().map_or(first, |t| t.span());
    (first, last)
}

fn last_segment(ty: &Type) -> Option<&syn::PathSegment> {
    match ty {
        Type::Path(p) if p.qself.is_none() => p.path.segments.last(),
        _ => None,
    }
}

fn type_args(segment: &syn::PathSegment) -> impl Iterator<Item = &Type> {
    let args = match &segment.arguments {
        PathArguments::AngleBracketed(args) => Some(args.args.iter()),
        _ => None,
    };
    args.into_iter().flatten().filter_map(|a| match a {
        GenericArgument::Type(t) => Some(t),
        _ => None,
    })
}

fn first_type_arg(segment: &syn::PathSegment) -> Option<&Type> {
    type_args(segment).next()
}

fn classify(ty: &Type) -> ParamKind {
    let Some(segment) = last_segment(ty) else {
        return ParamKind::Arg;
    };
    match segment.ident.to_string().as_str() {
        "IdempotencyKey" => ParamKind::Key,
        "ToolContext" => ParamKind::Context,
        "State" => match first_type_arg(segment) {
            Some(inner) => ParamKind::State(Box::new(inner.clone())),
            None => ParamKind::Arg,
        },
        _ => ParamKind::Arg,
    }
}

/// One parameter, with `#[arg]` and doc attributes taken off the function.
fn param(cx: &Ctxt, input: &mut FnArg) -> Param {
    let pat_type = match input {
        FnArg::Receiver(receiver) => {
            let kind = match (&receiver.reference, &receiver.mutability) {
                _ if receiver.colon_token.is_some() => Receiver::Typed,
                (Some(_), None) => Receiver::Shared,
                (Some(_), Some(_)) => Receiver::Mut,
                (None, _) => Receiver::Value,
            };
            return Param {
                written: receiver.to_token_stream(),
                ident: Ident::new("self_", receiver.span()),
                ty: Type::Verbatim(quote::quote!(Self)),
                kind: ParamKind::Receiver(kind),
                docs: Vec::new(),
                arg: ArgAttrs::default(),
            };
        }
        FnArg::Typed(pat_type) => pat_type,
    };
    let arg = attr::parse_arg_attrs(cx, &pat_type.attrs);
    let param_docs = docs(&pat_type.attrs);
    pat_type
        .attrs
        .retain(|a| !a.path().is_ident("arg") && !a.path().is_ident("doc"));
    let (ident, kind) = match &*pat_type.pat {
        Pat::Ident(p) if p.by_ref.is_none() && p.subpat.is_none() => {
            (p.ident.clone(), classify(&pat_type.ty))
        }
        other => (Ident::new("invalid_", other.span()), ParamKind::Pattern),
    };
    Param {
        written: pat_type.pat.to_token_stream(),
        ident,
        ty: (*pat_type.ty).clone(),
        kind,
        docs: param_docs,
        arg,
    }
}

fn output(sig: &syn::Signature) -> Output {
    let ReturnType::Type(_, ty) = &sig.output else {
        return Output::Unit(sig.paren_token.span.close());
    };
    let name = last_segment(ty).map(|seg| seg.ident.to_string());
    if !name.as_deref().is_some_and(|name| name.contains("Result")) {
        let (first, last) = token_spans(ty);
        return Output::Plain {
            ty: ty.clone(),
            first,
            last,
        };
    }
    let Some(seg) = last_segment(ty).filter(|seg| seg.ident == "Result") else {
        return Output::Unsupported(ty.clone());
    };
    let Some(ok) = first_type_arg(seg) else {
        return Output::Unsupported(ty.clone());
    };
    let (first, last) = token_spans(ok);
    let error = token_spans(type_args(seg).nth(1).unwrap_or(ty));
    Output::Result {
        ok: Box::new(ok.clone()),
        first,
        last,
        error,
    }
}

/// `tokens` with every `Self` replaced by `self_ty`: generated items outside the `impl` name
/// the type a method's `Self` stands for. `Self::Row` becomes `<Orders<D>>::Row`; the
/// replacement keeps the span of `Self`.
pub(crate) fn replace_self(tokens: TokenStream, self_ty: &Type) -> TokenStream {
    use proc_macro2::{Punct, Spacing, TokenTree};
    let mut out = TokenStream::new();
    let mut iter = tokens.into_iter().peekable();
    while let Some(tree) = iter.next() {
        match tree {
            TokenTree::Ident(ident) if ident == "Self" => {
                let span = ident.span();
                let ty: TokenStream = self_ty
                    .to_token_stream()
                    .into_iter()
                    .map(|mut t| {
                        t.set_span(t.span().located_at(span));
                        t
                    })
                    .collect();
                let qualified =
                    matches!(iter.peek(), Some(TokenTree::Punct(p)) if p.as_char() == ':');
                if qualified {
                    let mut open = Punct::new('<', Spacing::Alone);
                    open.set_span(span);
                    let mut close = Punct::new('>', Spacing::Alone);
                    close.set_span(span);
                    out.extend([TokenTree::Punct(open)]);
                    out.extend(ty);
                    out.extend([TokenTree::Punct(close)]);
                } else {
                    out.extend(ty);
                }
            }
            TokenTree::Group(group) => {
                let mut inner = proc_macro2::Group::new(
                    group.delimiter(),
                    replace_self(group.stream(), self_ty),
                );
                inner.set_span(group.span());
                out.extend([TokenTree::Group(inner)]);
            }
            other => out.extend([other]),
        }
    }
    out
}

fn mentions(tokens: TokenStream, names: &[String]) -> Option<String> {
    tokens.into_iter().find_map(|tree| match tree {
        proc_macro2::TokenTree::Ident(ident) => {
            let ident = ident.to_string();
            names.contains(&ident).then_some(ident)
        }
        proc_macro2::TokenTree::Group(group) => mentions(group.stream(), names),
        _ => None,
    })
}

fn replace_self_in<T: syn::parse::Parse + ToTokens>(value: &mut T, self_ty: &Type) {
    if let Ok(replaced) = syn::parse2(replace_self(value.to_token_stream(), self_ty)) {
        *value = replaced;
    }
}

impl ToolFn {
    /// A `#[tool]` method of a `#[toolset]` impl: `Self` in its types is the impl's type, since
    /// the generated items live outside the `impl` (paths are rewritten where they are called).
    pub(crate) fn in_impl(&mut self, owner: Owner) {
        let self_ty = &owner.self_ty;
        for param in &mut self.params {
            if !matches!(param.kind, ParamKind::Receiver(_)) {
                replace_self_in(&mut param.ty, self_ty);
                if let ParamKind::State(inner) = &mut param.kind {
                    replace_self_in(&mut **inner, self_ty);
                }
            }
        }
        match &mut self.output {
            Output::Result { ok, .. } => replace_self_in(&mut **ok, self_ty),
            Output::Plain { ty, .. } => replace_self_in(&mut **ty, self_ty),
            Output::Unit(_) | Output::Unsupported(_) => {}
        }
        self.owner = Some(owner);
    }

    /// The first type parameter of the `impl` that `ty` names, if any.
    pub(crate) fn impl_parameter_in(&self, ty: &Type) -> Option<String> {
        let owner = self.owner.as_ref()?;
        let names: Vec<String> = owner
            .generics
            .type_params()
            .map(|p| p.ident.to_string())
            .collect();
        mentions(ty.to_token_stream(), &names)
    }

    /// The receiver, if the function has one.
    pub(crate) fn receiver(&self) -> Option<Receiver> {
        self.params.iter().find_map(|p| match p.kind {
            ParamKind::Receiver(r) => Some(r),
            _ => None,
        })
    }

    /// Whether the function is a plain `fn`, run on the blocking pool or inline.
    pub(crate) fn is_sync(&self) -> bool {
        self.item.sig.asyncness.is_none()
    }

    pub(crate) fn from_item(cx: &Ctxt, attrs: ToolAttrs, mut item: ItemFn) -> ToolFn {
        let description = doc_text(&item.attrs);
        let (name, name_span) = match &attrs.name {
            Some(lit) => (lit.value(), lit.span()),
            None => (item.sig.ident.unraw().to_string(), item.sig.ident.span()),
        };
        let params = item
            .sig
            .inputs
            .iter_mut()
            .map(|input| param(cx, input))
            .collect();
        let output = output(&item.sig);
        ToolFn {
            item,
            attrs,
            name,
            name_span,
            description,
            params,
            output,
            owner: None,
        }
    }

    pub(crate) fn args(&self) -> impl Iterator<Item = &Param> {
        self.params
            .iter()
            .filter(|p| matches!(p.kind, ParamKind::Arg))
    }

    pub(crate) fn takes_key(&self) -> bool {
        self.params.iter().any(|p| matches!(p.kind, ParamKind::Key))
    }
}

/// A function whose body syn cannot read: the signature parsed, the body kept as written.
pub(crate) struct UnparsedBody {
    /// The function with an empty body, for the model.
    pub item: ItemFn,
    pub body: proc_macro2::Group,
}

impl syn::parse::Parse for UnparsedBody {
    fn parse(input: syn::parse::ParseStream) -> syn::Result<Self> {
        let attrs = input.call(Attribute::parse_outer)?;
        let vis: syn::Visibility = input.parse()?;
        let sig: syn::Signature = input.parse()?;
        let body: proc_macro2::Group = input.parse()?;
        if body.delimiter() != proc_macro2::Delimiter::Brace || !input.is_empty() {
            return Err(input.error("expected a function body"));
        }
        let item = ItemFn {
            attrs,
            vis,
            sig,
            block: Box::new(syn::parse_quote!({})),
        };
        Ok(UnparsedBody { item, body })
    }
}

/// Every type path in `ty`, `ty` itself included: through generic arguments (`Option<..>`,
/// `Vec<..>`, `HashMap<.., ..>`), tuples, arrays, slices, references and parentheses.
pub(crate) fn type_paths<'t>(ty: &'t Type, found: &mut Vec<&'t syn::TypePath>) {
    match ty {
        Type::Path(p) => {
            found.push(p);
            for segment in &p.path.segments {
                for inner in type_args(segment) {
                    type_paths(inner, found);
                }
            }
        }
        Type::Tuple(t) => t.elems.iter().for_each(|e| type_paths(e, found)),
        Type::Array(a) => type_paths(&a.elem, found),
        Type::Slice(s) => type_paths(&s.elem, found),
        Type::Reference(r) => type_paths(&r.elem, found),
        Type::Paren(p) => type_paths(&p.elem, found),
        Type::Group(g) => type_paths(&g.elem, found),
        _ => {}
    }
}

/// The clock types of std that a model cannot fill, as written in `ty` (inside `Option<..>`,
/// `Vec<..>` and so on too): `SystemTime` and `Instant`, written bare or as `std::time::X`.
/// These names are std's own, so a bare one is taken to be std's; `time::Instant` (the `time`
/// crate's, or `use std::time`) is not matched. `Duration` is not matched by name here: a
/// bare `Duration` may be chrono's or the user's own, so the expansion asks the compiler
/// whether the type is `std::time::Duration` (`ClockProbe`).
pub(crate) fn clock_types(ty: &Type) -> Vec<(&syn::TypePath, &'static str)> {
    let mut paths = Vec::new();
    type_paths(ty, &mut paths);
    paths
        .into_iter()
        .filter_map(|p| clock_type(p).map(|name| (p, name)))
        .collect()
}

fn clock_type(p: &syn::TypePath) -> Option<&'static str> {
    if p.qself.is_some() {
        return None;
    }
    let segments: Vec<String> = p
        .path
        .segments
        .iter()
        .map(|s| s.ident.to_string())
        .collect();
    let last = p.path.segments.last()?;
    if !last.arguments.is_none() {
        return None;
    }
    let name = match segments.last()?.as_str() {
        "SystemTime" => "SystemTime",
        "Instant" => "Instant",
        _ => return None,
    };
    let std_path = segments.len() == 3 && segments[0] == "std" && segments[1] == "time";
    (std_path || (segments.len() == 1 && p.path.leading_colon.is_none())).then_some(name)
}

/// The paths in `ty` whose last segment is `Duration` (any path, no generic arguments): the
/// expansion asks the compiler of each whether it is `std::time::Duration`.
pub(crate) fn duration_candidates(ty: &Type) -> Vec<&syn::TypePath> {
    let mut paths = Vec::new();
    type_paths(ty, &mut paths);
    paths.retain(|p| {
        p.qself.is_none()
            && p.path
                .segments
                .last()
                .is_some_and(|s| s.ident == "Duration" && s.arguments.is_none())
    });
    paths
}
