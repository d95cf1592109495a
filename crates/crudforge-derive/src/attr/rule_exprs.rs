//! Reading `rules(read = "...", update = "...", delete = "...", create = "...")`: the
//! resource's permission rules as expressions, one per kind of operation.

use crate::ctxt::Ctxt;
use syn::meta::ParseNestedMeta;
use syn::LitStr;

/// The kinds of operation a rule expression may be given for.
pub(crate) const KINDS: &[&str] = &["read", "update", "delete", "write", "create"];

/// One `kind = "expression"` of `rules(...)`.
pub(crate) struct RuleExpr {
    /// `read`, `update`, `delete`, `write` (update and delete) or `create`.
    pub(crate) kind: String,
    /// The expression.
    pub(crate) expr: LitStr,
}

/// Reads the parentheses of `rules(...)` at `meta` into `out`.
pub(super) fn expressions(
    cx: &Ctxt,
    meta: &ParseNestedMeta<'_>,
    out: &mut Vec<RuleExpr>,
) -> syn::Result<()> {
    meta.parse_nested_meta(|inner| {
        let Some(kind) = inner.path.get_ident().map(ToString::to_string) else {
            return Err(inner.error("expected `read`, `update`, `delete`, `write` or `create`"));
        };
        if !KINDS.contains(&kind.as_str()) {
            cx.error(
                &inner.path,
                format!(
                    "unknown rule kind `{kind}`\nhelp: the kinds are {}",
                    KINDS
                        .iter()
                        .map(|k| format!("`{k}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            );
            let _: syn::Expr = inner.value()?.parse()?;
            return Ok(());
        }
        let expr: LitStr = inner.value()?.parse()?;
        if out.iter().any(|r| r.kind == kind) {
            cx.error(
                &expr,
                format!("the `{kind}` rule is given twice\nhelp: keep one"),
            );
        }
        out.push(RuleExpr { kind, expr });
        Ok(())
    })
}
