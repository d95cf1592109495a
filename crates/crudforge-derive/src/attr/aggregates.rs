//! Reading `aggregate(...)` on a field: `aggregate(none)`, or the uses aggregates may make of
//! the member (`group_by`, `count_distinct`, `sum`, `avg`, `min`, `max`), which replace the
//! defaults of its type. `crate::aggregates` checks them against the type.

use syn::meta::ParseNestedMeta;

/// The uses `aggregate(...)` names, in the order the runtime's flags have them.
pub(crate) const USES: [&str; 6] = ["group_by", "count_distinct", "sum", "avg", "min", "max"];

/// How `aggregate` is written, for the help of every error about one.
const HELP: &str = "help: write `aggregate(none)`, or the uses allowed among `group_by`, `count_distinct`, `sum`, `avg`, `min`, `max`, as in `aggregate(group_by, sum)`";

/// `aggregate(...)`: the uses named (each with its span), none for `aggregate(none)`.
pub(crate) struct AggregateAttr {
    pub(crate) uses: Vec<(&'static str, proc_macro2::Span)>,
}

/// Reads `aggregate(...)`, the key `meta` is at.
pub(crate) fn aggregate(meta: &ParseNestedMeta<'_>) -> syn::Result<AggregateAttr> {
    if !meta.input.peek(syn::token::Paren) {
        return Err(meta.error(format!("expected a list of uses\n{HELP}")));
    }
    let mut uses = Vec::new();
    let mut none = false;
    meta.parse_nested_meta(|inner| {
        let Some(ident) = inner.path.get_ident() else {
            return Err(inner.error(format!("expected the name of a use\n{HELP}")));
        };
        let name = ident.to_string();
        if name == "none" {
            none = true;
            return Ok(());
        }
        let Some(known) = USES.iter().find(|u| **u == name) else {
            return Err(inner.error(format!("unknown use `{name}`\n{HELP}")));
        };
        if uses.iter().any(|(u, _)| u == known) {
            return Err(inner.error(format!("`{name}` is named twice")));
        }
        uses.push((*known, ident.span()));
        Ok(())
    })?;
    if none && !uses.is_empty() {
        return Err(meta.error(format!(
            "`none` allows nothing: it takes no other use\n{HELP}"
        )));
    }
    if !none && uses.is_empty() {
        return Err(meta.error(format!("expected a list of uses\n{HELP}")));
    }
    Ok(AggregateAttr { uses })
}
