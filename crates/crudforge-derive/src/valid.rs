//! Rules a model must follow beyond its syntax; each broken rule is reported on the token that
//! breaks it, with what to write instead.

use crate::ast::{Field, Kind, Model};
use crate::ctxt::Ctxt;

mod files;
mod members;
mod pattern;
mod rules;

pub(crate) use pattern::ecma as ecma_pattern;

pub(crate) fn check(cx: &Ctxt, m: &Model) {
    crate::relations::check(cx, m);
    crate::aggregates::check(cx, m);
    check_table(cx, m);
    check_id(cx, m);
    check_base_fields(cx, m);
    if let Some(span) = m.attrs.soft_delete {
        check_soft_delete(cx, m, span);
    }
    rules::check(cx, m);
    crate::rule_exprs::check(cx, m);
    check_indexes(cx, m);
    check_search(cx, m);
    for f in &m.fields {
        check_field(cx, m, f);
    }
}

/// The model names its table.
fn check_table(cx: &Ctxt, m: &Model) {
    if m.attrs.table.is_none() {
        cx.error(
            &m.ident,
            "Resource needs the model's table\nhelp: add `#[diesel(table_name = critters)]` (as Selectable needs) or `#[resource(table = critters)]`",
        );
    }
}

/// One id field, a `uuid::Uuid` that clients can filter on and see.
fn check_id(cx: &Ctxt, m: &Model) {
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
}

/// `created_at` and `updated_at`, timestamps the service maintains and returns.
fn check_base_fields(cx: &Ctxt, m: &Model) {
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
}

/// Declared indexes and composite unique constraints name fields of the model.
fn check_indexes(cx: &Ctxt, m: &Model) {
    let lists = m
        .attrs
        .indexes
        .iter()
        .map(|i| (i, "an index"))
        .chain(m.attrs.uniques.iter().map(|u| (u, "a unique constraint")));
    for (index, what) in lists {
        for col in &index.columns {
            if !m.fields.iter().any(|f| f.name() == col.value()) {
                cx.error(
                    col,
                    format!(
                        "`{}` is not a field of `{}`: {what} names the struct's fields (its table's columns)\nhelp: the fields are {}",
                        col.value(),
                        m.ident,
                        field_list(m)
                    ),
                );
            }
        }
    }
}

/// The model's fields as an error's help lists them: `` `id`, `name`, ... ``.
fn field_list(m: &Model) -> String {
    m.fields
        .iter()
        .map(|f| format!("`{}`", f.ident))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The searchable members: at most four (PostgreSQL tells a member's words apart by one of
/// four weights), each a text field the API returns.
fn check_search(cx: &Ctxt, m: &Model) {
    if m.attrs.search.len() > 4 {
        cx.error(
            &m.attrs.search[4],
            "a search holds at most four members\nhelp: keep the four that matter most, the one that weighs most first",
        );
    }
    for member in &m.attrs.search {
        let Some(f) = m.fields.iter().find(|f| f.name() == member.value()) else {
            cx.error(
                member,
                format!(
                    "`{}` is not a field of `{}`: a search names the struct's text fields\nhelp: the fields are {}",
                    member.value(),
                    m.ident,
                    field_list(m)
                ),
            );
            continue;
        };
        let a = &f.attrs;
        let hidden = if a.skip.is_some() {
            Some("a `skip`")
        } else if a.write_only.is_some() {
            Some("a `write_only`")
        } else if a.password.is_some() {
            Some("a `password`")
        } else {
            None
        };
        if let Some(what) = hidden {
            cx.error(
                member,
                format!(
                    "`{}` is {what} field: a search would tell which rows hold a word in it\nhelp: search only members the API returns",
                    member.value()
                ),
            );
        } else if f.kind.is_some_and(|k| k != Kind::Text) || a.file.is_some() {
            cx.error(
                member,
                format!(
                    "`{}` is not text: a search looks in `String` or `Option<String>` fields\nhelp: remove it from `search(...)`",
                    member.value()
                ),
            );
        }
    }
}

/// One field's flags: which combine, and which apply to its kind.
fn check_field(cx: &Ctxt, m: &Model, f: &Field) {
    let a = &f.attrs;
    if let (Some(_), Some(w)) = (a.read_only, a.write_only) {
        cx.error_at(
            w,
            "a field cannot be both `read_only` and `write_only`\nhelp: keep one: `read_only` fields are returned but never written by clients; `write_only` fields are written but never returned",
        );
    }
    check_skip(cx, f);
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
    check_validators(cx, f);
    check_default(cx, m, f);
    check_password(cx, f);
    members::check(cx, m, f);
    files::check(cx, f);
    if f.kind == Some(Kind::Json) && a.file.is_none() {
        if let Some((true, span)) = a.filter {
            cx.error_at(
                span,
                "JSON fields cannot be filtered; remove `filter = true`",
            );
        }
    }
}

/// `skip` hides a field from the API, so no other API flag applies to it.
fn check_skip(cx: &Ctxt, f: &Field) {
    let a = &f.attrs;
    if let Some(s) = a.skip {
        let others: Vec<&str> = [
            (a.read_only.is_some(), "read_only"),
            (a.write_only.is_some(), "write_only"),
            (a.filter.is_some(), "filter"),
            (a.max_len.is_some(), "max_len"),
            (a.email.is_some(), "email"),
            (a.default.is_some(), "default"),
            (a.min_len.is_some(), "min_len"),
            (a.min.is_some(), "min"),
            (a.max.is_some(), "max"),
            (a.pattern.is_some(), "pattern"),
            (a.one_of.is_some(), "one_of"),
            (a.validate.is_some(), "validate"),
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
}

/// A `default` belongs to fields clients write and the service does not set.
fn check_default(cx: &Ctxt, m: &Model, f: &Field) {
    let a = &f.attrs;
    if let Some(d) = &a.default {
        let is_id = m.id_field().is_some_and(|id| id.ident == f.ident);
        if a.read_only.is_some() {
            cx.error(d, "a `read_only` field is never written by clients, so it takes no `default`\nhelp: remove `default = ..` and set a default in the table's migration");
        } else if is_id || f.is_base() || f.ident == "id" {
            cx.error(
                d,
                format!(
                    "the service sets `{}`, so it takes no `default`\nhelp: remove `default = ..`",
                    f.ident
                ),
            );
        }
    }
}

/// A `password` field is text that clients write and nobody reads or filters.
fn check_password(cx: &Ctxt, f: &Field) {
    let a = &f.attrs;
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
}

/// The validators of one field (`min_len`, `min`/`max`, `pattern`, `one_of`): each applies to
/// the kinds of field it can check, with bounds that leave some value possible.
fn check_validators(cx: &Ctxt, f: &Field) {
    let a = &f.attrs;
    // A field whose type was already refused gets no second error here.
    let Some(kind) = f.kind else { return };
    let text = kind == Kind::Text;
    let number = matches!(kind, Kind::Integer | Kind::Float);
    if let Some((min_len, span)) = a.min_len {
        if !text {
            cx.error_at(span, "`min_len` applies to String fields only\nhelp: remove `min_len`, or use `min` for a number");
        } else if let Some((max_len, _)) = a.max_len {
            if min_len > max_len {
                cx.error_at(span, format!("`min_len = {min_len}` is larger than `max_len = {max_len}`: no value could pass\nhelp: make `min_len` at most `max_len`"));
            }
        }
    }
    for (bound, key) in [(&a.min, "min"), (&a.max, "max")] {
        let Some((n, span)) = bound else { continue };
        if !number {
            let help = if text {
                format!("help: for a length write `{key}_len = ..`")
            } else {
                format!("help: remove `{key}`")
            };
            cx.error_at(
                *span,
                format!("`{key}` applies to number fields only (integers and floats)\n{help}"),
            );
        } else if kind == Kind::Integer && n.integer.is_none() {
            cx.error_at(
                *span,
                format!(
                    "`{key}` of an integer field must be an integer\nhelp: write `{key} = {}`",
                    n.value.trunc()
                ),
            );
        }
    }
    if let (Some((lo, span)), Some((hi, _))) = (&a.min, &a.max) {
        if number && lo.value > hi.value {
            cx.error_at(
                *span,
                format!(
                    "`min = {}` is larger than `max = {}`: no value could pass\nhelp: swap them",
                    lo.value, hi.value
                ),
            );
        }
    }
    if let Some((p, span)) = &a.pattern {
        if !text {
            cx.error_at(
                *span,
                "`pattern` applies to String fields only\nhelp: remove `pattern`",
            );
        } else if let Err(e) = regex_syntax::Parser::new().parse(&p.value()) {
            cx.error(p, format!("this regular expression does not compile: {}\nhelp: the syntax is the `regex` crate's; keep to what JSON Schema's `pattern` also reads (no look-around, no back-references)", first_line(&e.to_string())));
        } else if let Err(e) = pattern::ecma(&p.value()) {
            cx.error(p, e);
        }
    }
    if let Some((values, span)) = &a.one_of {
        check_one_of(cx, kind, values, *span);
    }
}

/// `one_of`: a non-empty list of distinct literals of the field's kind (strings for a String
/// field, integers for an integer field).
fn check_one_of(cx: &Ctxt, kind: Kind, values: &[syn::Lit], span: proc_macro2::Span) {
    let wanted = match kind {
        Kind::Text => "string",
        Kind::Integer => "integer",
        _ => {
            cx.error_at(
                span,
                "`one_of` applies to String and integer fields only\nhelp: remove `one_of`",
            );
            return;
        }
    };
    if values.is_empty() {
        cx.error_at(
            span,
            "`one_of` needs at least one value\nhelp: `one_of = [\"cat\", \"dog\"]`",
        );
    }
    let mut seen: Vec<String> = Vec::new();
    for v in values {
        let (ok, text) = match v {
            syn::Lit::Str(s) => (kind == Kind::Text, s.value()),
            syn::Lit::Int(i) => (kind == Kind::Integer, i.base10_digits().to_owned()),
            _ => (false, String::new()),
        };
        if !ok {
            cx.error(
                v,
                format!("expected a {wanted} literal: the field holds {wanted}s"),
            );
        } else if seen.contains(&text) {
            cx.error(v, "this value is listed twice\nhelp: list each value once");
        } else {
            seen.push(text);
        }
    }
}

/// The first line of a multi-line message (`regex-syntax` errors draw the pattern below it).
fn first_line(s: &str) -> String {
    s.lines()
        .find(|l| l.starts_with("error:"))
        .unwrap_or_else(|| s.lines().next().unwrap_or(s))
        .trim_start_matches("error: ")
        .to_owned()
}

/// `soft_delete` needs a `deleted_at: Option<DateTime<Utc>>` field that the service sets and
/// that filters (and so the live-rows condition) can name.
fn check_soft_delete(cx: &Ctxt, m: &Model, span: proc_macro2::Span) {
    let help = "help: add `pub deleted_at: Option<chrono::DateTime<chrono::Utc>>,` (and `deleted_at -> Nullable<PortableTimestamp>` in the `table!`)";
    let Some(f) = m.fields.iter().find(|f| f.ident == "deleted_at") else {
        cx.error_at(
            span,
            format!("`soft_delete` needs a `deleted_at` field: a deleted row keeps the time it was deleted\n{help}"),
        );
        return;
    };
    if !f.nullable || f.kind != Some(Kind::DateTime) {
        cx.error(
            &f.ty,
            format!("with `soft_delete`, `deleted_at` must be an `Option<chrono::DateTime<chrono::Utc>>`: null while the row is live\n{help}"),
        );
    }
    for (flag, what) in [
        (f.attrs.write_only, "write_only"),
        (f.attrs.skip, "skip"),
        (
            f.attrs.filter.and_then(|(on, s)| (!on).then_some(s)),
            "filter = false",
        ),
    ] {
        if let Some(s) = flag {
            cx.error_at(
                s,
                format!("with `soft_delete`, `deleted_at` cannot be `{what}`: the service filters on it and returns it\nhelp: remove `{what}`"),
            );
        }
    }
}
