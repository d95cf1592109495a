//! Rules a model must follow beyond its syntax; each broken rule is reported on the token that
//! breaks it, with what to write instead.

use crate::ast::{Kind, Model};
use crate::ctxt::Ctxt;

pub(crate) fn check(cx: &Ctxt, m: &Model) {
    if m.attrs.table.is_none() {
        cx.error(
            &m.ident,
            "Resource needs the model's table\nhelp: add `#[diesel(table_name = critters)]` (as Selectable needs) or `#[resource(table = critters)]`",
        );
    }
    let ids: Vec<_> = m.fields.iter().filter(|f| f.attrs.id.is_some()).collect();
    if ids.len() > 1 {
        for f in &ids[1..] {
            if let Some(span) = f.attrs.id {
                cx.error_at(
                    span,
                    "only one field can be the id\nhelp: keep `#[resource(id)]` on the primary key only",
                );
            }
        }
    }
    match m.id_field() {
        None => cx.error(
            &m.ident,
            "a resource needs an id field\nhelp: add `pub id: uuid::Uuid,` (the service assigns it), or mark the key field `#[resource(id)]`",
        ),
        Some(id) => {
            if id.nullable || id.kind != Some(Kind::Uuid) {
                cx.error(
                    &id.ty,
                    format!(
                        "the id field must be a `uuid::Uuid`: the service assigns a new UUID to every row\nhelp: write `{}: uuid::Uuid` (and `-> PortableUuid` in the `table!`)",
                        id.ident
                    ),
                );
            }
            if let Some((false, span)) = id.attrs.filter {
                cx.error_at(
                    span,
                    "the id field is always filterable: single items are looked up by it\nhelp: remove `filter = false`",
                );
            }
            for (flag, what) in [
                (id.attrs.write_only, "write_only"),
                (id.attrs.skip, "skip"),
            ] {
                if let Some(span) = flag {
                    cx.error_at(
                        span,
                        format!("the id field cannot be `{what}`: clients need it to address items\nhelp: remove `{what}`"),
                    );
                }
            }
        }
    }
    for (base, article) in [("created_at", "a"), ("updated_at", "an")] {
        match m.fields.iter().find(|f| f.ident == base) {
            None => cx.error(
                &m.ident,
                format!(
                    "a resource needs {article} `{base}` field\nhelp: add `pub {base}: chrono::DateTime<chrono::Utc>,` (the service maintains it)"
                ),
            ),
            Some(f) => {
                if f.nullable || f.kind != Some(Kind::DateTime) {
                    cx.error(
                        &f.ty,
                        format!("`{base}` must be a `chrono::DateTime<chrono::Utc>`\nhelp: write `{base}: chrono::DateTime<chrono::Utc>` (and `-> PortableTimestamp` in the `table!`)"),
                    );
                }
                for (flag, what) in [(f.attrs.write_only, "write_only"), (f.attrs.skip, "skip")] {
                    if let Some(span) = flag {
                        cx.error_at(
                            span,
                            format!("`{base}` cannot be `{what}`: the service maintains it and returns it\nhelp: remove `{what}`"),
                        );
                    }
                }
            }
        }
    }
    for index in &m.attrs.indexes {
        for col in &index.columns {
            if !m.fields.iter().any(|f| f.name() == col.value()) {
                let fields = m
                    .fields
                    .iter()
                    .map(|f| format!("`{}`", f.ident))
                    .collect::<Vec<_>>()
                    .join(", ");
                cx.error(
                    col,
                    format!(
                        "`{}` is not a field of `{}`: an index names the struct's fields (its table's columns)\nhelp: the fields are {fields}",
                        col.value(),
                        m.ident
                    ),
                );
            }
        }
    }
    for f in &m.fields {
        let a = &f.attrs;
        if let (Some(_), Some(w)) = (a.read_only, a.write_only) {
            cx.error_at(
                w,
                "a field cannot be both `read_only` and `write_only`\nhelp: keep one: `read_only` fields are returned but never written by clients; `write_only` fields are written but never returned",
            );
        }
        if let Some(s) = a.skip {
            let others: Vec<&str> = [
                (a.read_only.is_some(), "read_only"),
                (a.write_only.is_some(), "write_only"),
                (a.filter.is_some(), "filter"),
                (a.max_len.is_some(), "max_len"),
                (a.email.is_some(), "email"),
                (a.default.is_some(), "default"),
            ]
            .into_iter()
            .filter_map(|(set, name)| set.then_some(name))
            .collect();
            if !others.is_empty() {
                let others = others
                    .iter()
                    .map(|o| format!("`{o}`"))
                    .collect::<Vec<_>>()
                    .join(", ");
                cx.error_at(
                    s,
                    format!("`skip` hides the field from the API, so {others} cannot apply to it\nhelp: remove `skip` to expose the field, or remove {others}"),
                );
            }
        }
        if let (Some(_), Some((true, span))) = (a.write_only, a.filter) {
            cx.error_at(
                span,
                "a `write_only` field can never be filtered: a filter would reveal its value\nhelp: remove `filter = true`",
            );
        }
        // A field whose type was already refused gets no second error here.
        let not_text = f.kind.is_some_and(|k| k != Kind::Text);
        if let Some((_, span)) = a.max_len {
            if not_text {
                cx.error_at(
                    span,
                    "`max_len` applies to String fields only\nhelp: remove `max_len`, or make the field a `String` or `Option<String>`",
                );
            }
        }
        if let Some(span) = a.email {
            if not_text {
                cx.error_at(
                    span,
                    "`email` applies to String fields only\nhelp: remove `email`, or make the field a `String` or `Option<String>`",
                );
            }
        }
        if let Some(d) = &a.default {
            let is_id = m.id_field().is_some_and(|id| id.ident == f.ident);
            if a.read_only.is_some() {
                cx.error(d, "a `read_only` field is never written by clients, so it takes no `default`\nhelp: remove `default = ..` and set a default in the table's migration");
            } else if is_id || f.is_base() || f.ident == "id" {
                cx.error(
                    d,
                    format!("the service sets `{}`, so it takes no `default`\nhelp: remove `default = ..`", f.ident),
                );
            }
        }
        if let Some(span) = a.password {
            if f.kind != Some(Kind::Text) {
                cx.error_at(
                    span,
                    "`password` applies to a `String` or `Option<String>` field",
                );
            }
            if a.read_only.is_some() || a.skip.is_some() {
                cx.error_at(span, "a `password` field is written by clients (and stored hashed); it cannot be `read_only` or `skip`");
            }
            if let Some((true, fs)) = a.filter {
                cx.error_at(
                    fs,
                    "a `password` field can never be filtered; remove `filter = true`",
                );
            }
        }
        if f.kind == Some(Kind::Json) {
            if let Some((true, span)) = a.filter {
                cx.error_at(
                    span,
                    "JSON fields cannot be filtered; remove `filter = true`",
                );
            }
        }
    }
}
