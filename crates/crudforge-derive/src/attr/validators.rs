//! Reading the values of the validation keys on a field: `max_len`, `min_len`, `min`, `max`
//! (a [`Number`]), `pattern`, `one_of` and `validate`. `email` is a flag; the checks between
//! keys (bounds in order, the field's type) are `valid`'s.

use crate::ctxt::Ctxt;
use crate::symbol::Symbol;
use syn::meta::ParseNestedMeta;
use syn::spanned::Spanned;
use syn::{Expr, LitInt, LitStr, Path};

/// A numeric bound (`min = -5`, `max = 2.5`).
pub(crate) struct Number {
    /// Its value.
    pub(crate) value: f64,
    /// Its exact value when written as an integer (no `.`, no exponent).
    pub(crate) integer: Option<i64>,
}

/// Reads a numeric bound: an integer or float literal, optionally negated.
pub(super) fn number(meta: &ParseNestedMeta<'_>, key: Symbol) -> syn::Result<Number> {
    let bad = || meta.error(format!("expected a number: `{key} = 10`"));
    let e: Expr = meta.value()?.parse().map_err(|_| bad())?;
    let (negative, lit) = match &e {
        Expr::Unary(u) if matches!(u.op, syn::UnOp::Neg(_)) => (true, &*u.expr),
        other => (false, other),
    };
    let Expr::Lit(syn::ExprLit { lit, .. }) = lit else {
        return Err(bad());
    };
    let sign: i32 = if negative { -1 } else { 1 };
    Ok(match lit {
        syn::Lit::Int(i) => {
            let n = i64::from(sign) * i.base10_parse::<i64>()?;
            // Only compared with the other bound, where a rounded value is fine.
            #[allow(clippy::cast_precision_loss)]
            let value = n as f64;
            Number {
                value,
                integer: Some(n),
            }
        }
        syn::Lit::Float(f) => {
            let value = f64::from(sign) * f.base10_parse::<f64>()?;
            if !value.is_finite() {
                return Err(bad());
            }
            Number {
                value,
                integer: None,
            }
        }
        _ => return Err(bad()),
    })
}

/// Reads the value of `max_len = N`, the key `meta` is at; a length of 0 is reported and the
/// keys after it are still read.
pub(super) fn max_len(cx: &Ctxt, meta: &ParseNestedMeta<'_>) -> syn::Result<usize> {
    let n: LitInt = meta
        .value()
        .and_then(|v| v.parse())
        .map_err(|_| meta.error("expected a length: `max_len = 100`"))?;
    let n: usize = n.base10_parse()?;
    if n == 0 {
        cx.error(&meta.path, "`max_len` must be at least 1");
    }
    Ok(n)
}

/// Reads the value of `min_len = N`, the key `meta` is at.
pub(super) fn min_len(meta: &ParseNestedMeta<'_>) -> syn::Result<usize> {
    let n: LitInt = meta
        .value()
        .and_then(|v| v.parse())
        .map_err(|_| meta.error("expected a length: `min_len = 1`"))?;
    n.base10_parse()
}

/// Reads the value of `pattern = "regex"`, the key `meta` is at.
pub(super) fn pattern(meta: &ParseNestedMeta<'_>) -> syn::Result<LitStr> {
    meta.value().and_then(|v| v.parse()).map_err(|_| {
        meta.error("expected a regular expression in quotes: `pattern = \"^[a-z]+$\"`")
    })
}

/// Reads the value of `one_of = [..]`, the key `meta` is at: string or integer literals, a
/// negative integer kept as one literal.
pub(super) fn one_of(meta: &ParseNestedMeta<'_>) -> syn::Result<Vec<syn::Lit>> {
    let bad = || meta.error("expected a list of literals: `one_of = [\"cat\", \"dog\"]`");
    let e: Expr = meta.value()?.parse().map_err(|_| bad())?;
    let Expr::Array(a) = e else { return Err(bad()) };
    a.elems
        .iter()
        .map(|el| match el {
            Expr::Lit(l) => Ok(l.lit.clone()),
            // A negative integer: `-1` is a negation of the literal `1`.
            Expr::Unary(syn::ExprUnary {
                op: syn::UnOp::Neg(_),
                expr,
                ..
            }) => match &**expr {
                Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Int(i),
                    ..
                }) => Ok(syn::Lit::Int(LitInt::new(
                    &format!("-{}", i.base10_digits()),
                    el.span(),
                ))),
                _ => Err(syn::Error::new(
                    el.span(),
                    "expected a string or integer literal",
                )),
            },
            _ => Err(syn::Error::new(
                el.span(),
                "expected a string or integer literal",
            )),
        })
        .collect()
}

/// Reads the value of `validate = path::to::function`, the key `meta` is at.
pub(super) fn validate(meta: &ParseNestedMeta<'_>) -> syn::Result<Path> {
    meta.value()
        .and_then(|v| v.parse())
        .map_err(|_| meta.error("expected a function's path: `validate = checks::isbn`"))
}
