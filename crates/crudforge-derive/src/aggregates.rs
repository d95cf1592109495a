//! What aggregates (`GET <prefix>aggregate/`) may do with each member, decided here at compile
//! time: by default from the member's type (numbers: everything; booleans, text, UUIDs:
//! `group_by` and `count_distinct`; timestamps and dates: `group_by`, `min`, `max`; JSON,
//! files, passwords, write-only and skipped members: nothing), or by `aggregate(...)`
//! (`attr/aggregates.rs` reads it), which must stay within what the type allows. Writes the
//! `AGGREGATES` constant of the `Resource` impl.

use crate::ast::{Field, Kind, Model};
use crate::attr::AggregateAttr;
use crate::ctxt::Ctxt;
use proc_macro2::TokenStream;
use quote::quote;

/// The runtime's flags (`crudforge::__private::AggregateUse`), in the order of
/// `attr::aggregates::USES`.
const GROUP_BY: u8 = 1;
const COUNT_DISTINCT: u8 = 2;
const SUM: u8 = 4;
const AVG: u8 = 8;
const MIN: u8 = 16;
const MAX: u8 = 32;

/// The flag of a use's name.
fn flag(name: &str) -> u8 {
    match name {
        "group_by" => GROUP_BY,
        "count_distinct" => COUNT_DISTINCT,
        "sum" => SUM,
        "avg" => AVG,
        "min" => MIN,
        _ => MAX,
    }
}

/// Whether clients never read `f` (so no aggregate may reveal it).
fn never_read(f: &Field) -> bool {
    let a = &f.attrs;
    a.write_only.is_some() || a.password.is_some() || a.skip.is_some() || a.file.is_some()
}

/// Everything the type of `f` allows aggregates to do.
fn permitted(f: &Field) -> u8 {
    if never_read(f) {
        return 0;
    }
    match f.kind {
        Some(Kind::Integer | Kind::Float) => GROUP_BY | COUNT_DISTINCT | SUM | AVG | MIN | MAX,
        Some(Kind::Text | Kind::Date | Kind::DateTime) => GROUP_BY | COUNT_DISTINCT | MIN | MAX,
        Some(Kind::Bool | Kind::Uuid | Kind::Other) => GROUP_BY | COUNT_DISTINCT,
        Some(Kind::Json) | None => 0,
    }
}

/// What aggregates may do with `f` when it says nothing.
fn defaults(f: &Field) -> u8 {
    match f.kind {
        Some(Kind::Other) => 0,
        Some(Kind::Text | Kind::Bool | Kind::Uuid) => permitted(f) & (GROUP_BY | COUNT_DISTINCT),
        Some(Kind::Date | Kind::DateTime) => permitted(f) & (GROUP_BY | MIN | MAX),
        _ => permitted(f),
    }
}

/// The uses of `f`: its `aggregate(...)`, else its type's defaults.
fn uses(f: &Field) -> u8 {
    match &f.attrs.aggregate {
        Some((AggregateAttr { uses }, _)) => uses.iter().fold(0, |b, (u, _)| b | flag(u)),
        None => defaults(f),
    }
}

/// Checks each `aggregate(...)` against what its member's type allows.
pub(crate) fn check(cx: &Ctxt, m: &Model) {
    for f in &m.fields {
        let Some((attr, span)) = &f.attrs.aggregate else {
            continue;
        };
        if never_read(f) && !attr.uses.is_empty() {
            cx.error_at(
                *span,
                format!(
                    "aggregates cannot use `{}`: clients never read it (write-only, password, file or skipped)\nhelp: remove `aggregate(...)`",
                    f.ident
                ),
            );
            continue;
        }
        let Some(kind) = f.kind else { continue };
        let allowed = permitted(f);
        for (name, at) in &attr.uses {
            if allowed & flag(name) != 0 {
                continue;
            }
            let why = match *name {
                "sum" | "avg" => "it applies to numbers only",
                "min" | "max" => "it applies to numbers, text, dates and timestamps only",
                _ => "JSON members cannot be grouped or counted",
            };
            cx.error_at(
                *at,
                format!(
                    "`{name}` cannot apply to `{}`, a {} member: {why}\nhelp: remove `{name}` from `aggregate(...)`",
                    f.ident,
                    kind.name()
                ),
            );
        }
    }
}

/// `AGGREGATES`: each member aggregates may use, with its column's SQL name (Diesel's, for a
/// column renamed with `#[sql_name]`) and its uses.
pub(crate) fn aggregates_const(m: &Model, k: &syn::Path, p: &TokenStream) -> TokenStream {
    let Some(table) = m.attrs.table.as_ref() else {
        return TokenStream::new();
    };
    let entries: Vec<TokenStream> = m
        .fields
        .iter()
        .filter_map(|f| {
            let bits = uses(f);
            if bits == 0 {
                return None;
            }
            let (name, fi) = (f.name(), &f.ident);
            Some(quote! {
                (#name, <#table::#fi as #p::diesel::Column>::NAME, #k::__private::AggregateUse(#bits))
            })
        })
        .collect();
    if entries.is_empty() {
        return TokenStream::new();
    }
    quote! {
        const AGGREGATES: &'static [(&'static str, &'static str, #k::__private::AggregateUse)] = &[#(#entries),*];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_follow_the_runtime_order_of_uses() {
        let bits: Vec<u8> = crate::attr::AGGREGATE_USES
            .iter()
            .map(|u| flag(u))
            .collect();
        assert_eq!(bits, [GROUP_BY, COUNT_DISTINCT, SUM, AVG, MIN, MAX]);
        assert_eq!(bits, [1, 2, 4, 8, 16, 32]);
    }
}
