//! The rules read rules and named filters follow: a read rule protects a returned member other
//! than the id, an owner is a UUID field, a named filter has a plain name.

use crate::ast::{Kind, Model};
use crate::attr::ReadAttr;
use crate::ctxt::Ctxt;

pub(crate) fn check(cx: &Ctxt, m: &Model) {
    let id = m.id_field().map(|f| f.ident.clone());
    for f in &m.fields {
        let Some((read, span)) = &f.attrs.read else {
            continue;
        };
        let a = &f.attrs;
        if Some(&f.ident) == id.as_ref() || f.is_base() {
            cx.error_at(
                *span,
                format!("`{}` is always returned: clients need it to address and order items\nhelp: remove `read = ..`", f.ident),
            );
        }
        for (set, what) in [
            (a.write_only.is_some(), "write_only"),
            (a.password.is_some(), "password"),
            (a.skip.is_some(), "skip"),
        ] {
            if set {
                cx.error_at(
                    *span,
                    format!("a `{what}` field is never returned, so a read rule has nothing to hide\nhelp: remove `read = ..` or `{what}`"),
                );
            }
        }
        if let ReadAttr::Owner(owner) = read {
            match m.fields.iter().find(|o| o.ident == *owner) {
                None => {
                    let uuids = m
                        .fields
                        .iter()
                        .filter(|o| o.kind == Some(Kind::Uuid))
                        .map(|o| format!("`{}`", o.ident))
                        .collect::<Vec<_>>()
                        .join(", ");
                    cx.error(
                        owner,
                        format!("`{owner}` is not a field of `{}`\nhelp: name the field that holds the owner's user id; UUID fields: {uuids}", m.ident),
                    );
                }
                Some(o) => {
                    let hidden = o.attrs.skip.is_some()
                        || o.attrs.write_only.is_some()
                        || matches!(o.attrs.filter, Some((false, _)));
                    if o.kind != Some(Kind::Uuid) || hidden {
                        cx.error(
                            owner,
                            format!("the owner field `{owner}` must be a returned, filterable `uuid::Uuid` (or `Option<uuid::Uuid>`) holding a user's id\nhelp: name another field, or change `{owner}`"),
                        );
                    }
                }
            }
        }
    }
    for s in &m.attrs.scopes {
        let name = s.name.to_string();
        let plain = !name.starts_with("r#")
            && name
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
        if !plain {
            cx.error(
                &s.name,
                format!("a named filter's name is lower-case letters, digits and `_`: clients write it in `?scope={name}`\nhelp: rename it, for example `{}`", name.trim_start_matches("r#").to_ascii_lowercase()),
            );
        }
    }
}
