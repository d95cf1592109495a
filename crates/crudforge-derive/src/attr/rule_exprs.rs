//! Reading `rules(read = "...", update = "...", delete = "...", create = "...")`: the
//! resource's permission rules as expressions, one per kind of operation; and the member rules
//! `update(state, message) = "..."`, `create(state) = "..."`.

use crate::ctxt::Ctxt;
use syn::ext::IdentExt;
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
    /// The members a member rule (`update(a, b) = "..."`) governs; empty for a row rule.
    pub(crate) members: Vec<syn::Ident>,
}

impl RuleExpr {
    /// How messages name the rule: `update` or `update(state, message)`.
    pub(crate) fn name(&self) -> String {
        if self.members.is_empty() {
            return self.kind.clone();
        }
        let members: Vec<String> = self.members.iter().map(ToString::to_string).collect();
        format!("{}({})", self.kind, members.join(", "))
    }
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
        let mut members = Vec::new();
        if inner.input.peek(syn::token::Paren) {
            let list;
            syn::parenthesized!(list in inner.input);
            let names = list.parse_terminated(syn::Ident::parse_any, syn::Token![,])?;
            members.extend(names);
            if kind != "update" && kind != "create" {
                cx.error(
                    &inner.path,
                    format!(
                        "`{kind}(...)`: member rules are `update(members) = \"...\"` and \
                         `create(members) = \"...\"`"
                    ),
                );
            } else if members.is_empty() {
                cx.error(
                    &inner.path,
                    format!("`{kind}()` names no member\nhelp: `{kind}(state) = \"...\"`"),
                );
            }
        }
        let expr: LitStr = inner.value()?.parse()?;
        if members.is_empty() && out.iter().any(|r| r.kind == kind && r.members.is_empty()) {
            cx.error(
                &expr,
                format!("the `{kind}` rule is given twice\nhelp: keep one"),
            );
        }
        out.push(RuleExpr {
            kind,
            expr,
            members,
        });
        Ok(())
    })
}
