//! Permission rules as expressions (`#[resource(rules(read = "...", ...))]`, and member rules
//! `update(state) = "..."`): what the derive checks at compile time (each expression parses,
//! names known caller values, starts each comparison with a field of the model or one of its
//! declared relations, and reads sent values `@new.member` only in member rules, of the
//! model's fields), and the
//! `default_rules` it writes (a `crudforge::perms::Expr`, whose members, paths and values the
//! runtime checks against the resources when the blueprint is mounted).

use crate::ast::Model;
use crate::ctxt::Ctxt;
use proc_macro2::TokenStream;
use quote::quote;
use syn::Path;

/// The deepest nesting of parentheses and `not` in a rule, as the runtime allows it.
const MAX_DEPTH: usize = 16;

/// Checks the model's rule expressions.
pub(crate) fn check(cx: &Ctxt, m: &Model) {
    if m.attrs.rule_exprs.is_empty() {
        return;
    }
    if m.attrs.rules.is_some() {
        cx.error(
            &m.attrs.rule_exprs[0].expr,
            "`rules = ...` and `rules(...)` both set the rules\nhelp: keep one of them",
        );
    }
    let relations = crate::relations::names(m);
    let fields: Vec<String> = m.fields.iter().map(crate::ast::Field::name).collect();
    for r in &m.attrs.rule_exprs {
        let src = r.expr.value();
        for member in &r.members {
            if !fields.contains(&member.to_string()) {
                cx.error(
                    member,
                    format!(
                        "the `{}` rule governs `{member}`, which is not a field of {}\nhelp: the \
                         fields are {}",
                        r.name(),
                        m.ident,
                        fields.join(", ")
                    ),
                );
            }
        }
        let outline = match crudforge_core::expr::outline(&src, MAX_DEPTH) {
            Ok(o) => o,
            Err(e) => {
                cx.error(
                    &r.expr,
                    format!(
                        "the `{}` rule does not parse: at character {}: {}\nhelp: rules are \
                         `filter` expressions with the caller's values ({})",
                        r.name(),
                        e.pos,
                        e.message,
                        crudforge_core::expr::caller_values_list()
                    ),
                );
                continue;
            }
        };
        for (member, pos) in &outline.sent {
            let problem = if r.members.is_empty() {
                Some(format!(
                    "`@new.{member}` (a value the write sends) belongs to member rules, such as \
                     `update({member}) = \"...\"`"
                ))
            } else if !fields.contains(member) {
                Some(format!(
                    "`@new.{member}`: `{member}` is not a field of {}; the fields are {}",
                    m.ident,
                    fields.join(", ")
                ))
            } else {
                None
            };
            if let Some(problem) = problem {
                cx.error(
                    &r.expr,
                    format!("the `{}` rule, at character {pos}: {problem}", r.name()),
                );
            }
        }
        for (path, pos) in &outline.paths {
            let problem: Option<(String, String)> = match path.split_once('.') {
                None if fields.contains(path) => None,
                None if relations.contains(path) => Some((
                    format!("`{path}` is a relation, not a field"),
                    format!("compare one of its fields: `{path}.id = ...`"),
                )),
                None => Some((
                    format!("`{path}` is not a field of {}", m.ident),
                    format!("the fields are {}", fields.join(", ")),
                )),
                Some((first, _)) if relations.iter().any(|r| r == first) => None,
                Some((first, _)) => Some((
                    format!("`{first}` (in `{path}`) is not a relation of {}", m.ident),
                    if relations.is_empty() {
                        "declare one with `belongs_to(...)` on its key or `has_many(...)`"
                            .to_owned()
                    } else {
                        format!("the relations are {}", relations.join(", "))
                    },
                )),
            };
            if let Some((what, help)) = problem {
                cx.error(
                    &r.expr,
                    format!(
                        "the `{}` rule, at character {pos}: {what}\nhelp: {help}",
                        r.name()
                    ),
                );
            }
        }
    }
}

/// The body of `default_rules` for the model's rule expressions, if it has any.
pub(crate) fn default_rules(m: &Model, k: &Path) -> Option<TokenStream> {
    if m.attrs.rule_exprs.is_empty() {
        return None;
    }
    let calls = m.attrs.rule_exprs.iter().map(|r| {
        let expr = &r.expr;
        if r.members.is_empty() {
            let method = syn::Ident::new(&r.kind, r.expr.span());
            return quote!(.#method(#expr));
        }
        let method = syn::Ident::new(&format!("{}_members", r.kind), r.expr.span());
        let members = r.members.iter().map(ToString::to_string);
        quote!(.#method([#(#members),*], #expr))
    });
    Some(quote!(#k::perms::Expr::new() #(#calls)*))
}
