//! Reading the keys of read rules and named filters: a field's `read = admin`, `read =
//! owner(user_id)` or `read = path::to::rule`, and the struct's `scope(name = "expression",
//! ...)`.

use crate::ctxt::Ctxt;
use proc_macro2::Span;
use syn::meta::ParseNestedMeta;
use syn::spanned::Spanned;
use syn::{Expr, Ident, LitStr, Path};

/// How a read rule is written, for the help of every error about one.
pub(crate) const READ_HELP: &str = "help: write `read = admin`, `read = owner(user_id)` (the field holding the owner's id) or `read = path::to::rule` (a `fn(Option<&CurrentUser>) -> bool`)";

/// How a named filter is written, for the help of every error about one.
const SCOPE_HELP: &str =
    "help: write `scope(overdue = \"due_date < now and returned_at is null\")`";

/// Who may read a member: `read = ...` on a field.
pub(crate) enum ReadAttr {
    /// `read = admin`.
    Admins,
    /// `read = owner(user_id)`: the field holding the owner's id.
    Owner(Ident),
    /// `read = path::to::rule`.
    Rule(Path),
}

/// One named filter of `scope(...)`: its name and its `filter` expression.
pub(crate) struct ScopeAttr {
    pub(crate) name: Ident,
    pub(crate) expr: LitStr,
}

/// Reads the value of `read = ...`, the key `meta` is at.
pub(crate) fn read_rule(meta: &ParseNestedMeta<'_>) -> syn::Result<ReadAttr> {
    let bad = |at: Span, what: &str| syn::Error::new(at, format!("{what}\n{READ_HELP}"));
    let e: Expr = meta
        .value()?
        .parse()
        .map_err(|_| bad(meta.path.span(), "expected who may read the member"))?;
    match e {
        Expr::Path(p) if p.path.is_ident("admin") => Ok(ReadAttr::Admins),
        Expr::Path(p) if p.path.is_ident("owner") => Err(bad(
            p.span(),
            "`owner` needs the field that holds the owner's id",
        )),
        Expr::Path(p) if p.qself.is_none() => Ok(ReadAttr::Rule(p.path)),
        Expr::Call(call) => {
            let is_owner = matches!(&*call.func, Expr::Path(f) if f.path.is_ident("owner"));
            let field = match call.args.first() {
                Some(Expr::Path(a)) if call.args.len() == 1 => a.path.get_ident().cloned(),
                _ => None,
            };
            match (is_owner, field) {
                (true, Some(field)) => Ok(ReadAttr::Owner(field)),
                (true, None) => Err(bad(call.args.span(), "`owner(...)` takes one field name")),
                (false, _) => Err(bad(
                    call.func.span(),
                    "expected `admin`, `owner(field)` or a function's path",
                )),
            }
        }
        other => Err(bad(
            other.span(),
            "expected `admin`, `owner(field)` or a function's path",
        )),
    }
}

/// Reads `scope(name = "expression", ...)`, the key `meta` is at, into `out`; a name declared
/// twice (here or in an earlier `scope(...)`) is reported on its second occurrence.
pub(crate) fn scopes(
    cx: &Ctxt,
    meta: &ParseNestedMeta<'_>,
    out: &mut Vec<ScopeAttr>,
) -> syn::Result<()> {
    if !meta.input.peek(syn::token::Paren) {
        return Err(meta.error(format!(
            "expected the named filters in parentheses\n{SCOPE_HELP}"
        )));
    }
    meta.parse_nested_meta(|inner| {
        let Some(name) = inner.path.get_ident().cloned() else {
            return Err(inner.error(format!(
                "a named filter's name is one word\n{SCOPE_HELP}"
            )));
        };
        let expr: LitStr = inner.value()?.parse().map_err(|_| {
            inner.error(format!(
                "expected the filter expression in quotes\n{SCOPE_HELP}"
            ))
        })?;
        if expr.value().trim().is_empty() {
            cx.error(&expr, format!("a named filter needs a condition\n{SCOPE_HELP}"));
        }
        if out.iter().any(|s| s.name == name) {
            cx.error(
                &name,
                format!("the named filter `{name}` is declared twice\nhelp: give each named filter its own name"),
            );
        }
        out.push(ScopeAttr { name, expr });
        Ok(())
    })
}
