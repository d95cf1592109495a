//! Sparse fields: `fields=id,name` keeps only those members of each item (INDEX and GET). The
//! names are checked against the resource's readable fields when the query is parsed
//! ([`parse_fields_rel`](super::parse_fields_rel)), and here against an operation's substituted
//! answer; the view of a row ([`crate::crud::view`]) keeps them.

use crate::error::Error;

/// The top-level members of `S`'s schema: what `fields` may name when an operation answers
/// with `S` instead of the resource's response schema.
pub(crate) fn members_of<S: schemars::JsonSchema>() -> Vec<String> {
    let root = schemars::gen::SchemaSettings::openapi3()
        .into_generator()
        .into_root_schema_for::<S>();
    root.schema
        .object
        .map(|o| o.properties.into_keys().collect())
        .unwrap_or_default()
}

/// The resource's readable fields that `fields` may name on an operation whose answer has
/// the top-level `members` (all readable fields when `None`).
pub(crate) fn selectable(
    fields: &'static [crate::field::FieldInfo],
    members: Option<fn() -> Vec<String>>,
) -> Vec<&'static str> {
    let members = members.map(|m| m());
    fields
        .iter()
        .filter(|f| !f.write_only)
        .filter(|f| {
            members
                .as_ref()
                .is_none_or(|m| m.iter().any(|n| n == f.name))
        })
        .map(|f| f.name)
        .collect()
}

/// Refuses (400) a `fields` list naming a member the operation's answer does not have (its
/// response schema was substituted with `members`).
///
/// # Errors
///
/// A 400 naming `fields`.
pub(crate) fn check_selectable(
    all: &'static [crate::field::FieldInfo],
    members: Option<fn() -> Vec<String>>,
    requested: Option<&[&str]>,
) -> Result<(), Error> {
    let (Some(requested), Some(_)) = (requested, members) else {
        return Ok(());
    };
    let ok = selectable(all, members);
    let bad: Vec<String> = requested
        .iter()
        .filter(|r| !ok.contains(r))
        .map(|r| format!("`{r}`"))
        .collect();
    if bad.is_empty() {
        return Ok(());
    }
    Err(Error::bad_param(
        "fields",
        format!(
            "not a member of this operation's answer: {}; selectable fields: {}",
            bad.join(", "),
            ok.join(", ")
        ),
    ))
}
