//! Reading the keys of members clients do not always write: a field's `set = me`, `set = now`
//! or `set = path::to::function` (the server fills it on create) and `create_only`.

use proc_macro2::Span;
use syn::meta::ParseNestedMeta;
use syn::spanned::Spanned;
use syn::{Expr, Path};

/// How `set` is written, for the help of every error about one.
const SET_HELP: &str = "help: write `set = me` (the caller's id), `set = now` (the time of the create) or `set = path::to::function` (a `fn(&crudforge::crud::HookCtx) -> T`)";

/// What the server fills a member with on create: `set = ...` on a field.
pub(crate) enum SetAttr {
    /// `set = me`: the caller's id.
    Me,
    /// `set = now`: the time of the create.
    Now,
    /// `set = path::to::function`: what the application's function gives for the request.
    Function(Path),
}

/// Reads the value of `set = ...`, the key `meta` is at.
pub(crate) fn set(meta: &ParseNestedMeta<'_>) -> syn::Result<SetAttr> {
    let bad = |at: Span, what: &str| syn::Error::new(at, format!("{what}\n{SET_HELP}"));
    let value = meta.value()?;
    if value.peek(syn::Token![@]) {
        return Err(bad(
            value.span(),
            "the caller is written `me` here, without `@`",
        ));
    }
    let e: Expr = value.parse().map_err(|_| {
        bad(
            meta.path.span(),
            "expected what the server sets the member to",
        )
    })?;
    match e {
        Expr::Path(p) if p.qself.is_none() && p.path.is_ident("me") => Ok(SetAttr::Me),
        Expr::Path(p) if p.qself.is_none() && p.path.is_ident("now") => Ok(SetAttr::Now),
        Expr::Path(p) if p.qself.is_none() => Ok(SetAttr::Function(p.path)),
        other => Err(bad(
            other.span(),
            "expected `me`, `now` or a function's path",
        )),
    }
}
