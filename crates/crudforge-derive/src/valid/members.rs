//! Members clients do not always write: `set = ...` (the server fills it on create) goes on a
//! member the service does not already maintain, of the type its value has, and combines with
//! no flag that lets clients write it; `create_only` goes on a member clients write.

use crate::ast::{Field, Kind, Model};
use crate::attr::SetAttr;
use crate::ctxt::Ctxt;

/// The `set` and `create_only` keys of one field.
pub(super) fn check(cx: &Ctxt, m: &Model, f: &Field) {
    if let Some((set, span)) = &f.attrs.set {
        check_set(cx, m, f, set, *span);
    } else if let Some(span) = f.attrs.create_only {
        check_create_only(cx, m, f, span);
    }
}

/// Whether the service maintains `f` itself: the id, the timestamps, a soft-delete model's
/// `deleted_at`.
fn maintained(m: &Model, f: &Field) -> bool {
    let is_id = m.id_field().is_some_and(|id| id.ident == f.ident);
    is_id
        || f.ident == "id"
        || f.is_base()
        || (m.attrs.soft_delete.is_some() && f.ident == "deleted_at")
}

fn check_set(cx: &Ctxt, m: &Model, f: &Field, set: &SetAttr, span: proc_macro2::Span) {
    let a = &f.attrs;
    if maintained(m, f) {
        cx.error_at(
            span,
            format!(
                "the service already sets `{}`, so it takes no `set`\nhelp: remove `set = ..`",
                f.ident
            ),
        );
        return;
    }
    let others = [
        (a.create_only.is_some(), "create_only"),
        (a.read_only.is_some(), "read_only"),
        (a.default.is_some(), "default"),
        (a.write_only.is_some(), "write_only"),
        (a.password.is_some(), "password"),
        (a.skip.is_some(), "skip"),
    ];
    for (_, other) in others.iter().filter(|(on, _)| *on) {
        cx.error_at(
            span,
            format!(
                "`set` and `{other}` do not combine: the server sets this member on create and clients never send it\nhelp: remove `{other}` (or `set`, to let clients send it)"
            ),
        );
    }
    // A field whose type was already refused gets no second error here.
    let Some(kind) = f.kind else { return };
    match set {
        SetAttr::Me if kind != Kind::Uuid => cx.error(
            &f.ty,
            "`set = me` fills the caller's id, a `uuid::Uuid`\nhelp: make the field `uuid::Uuid` (or `Option<uuid::Uuid>`, null for anonymous callers), or write `set = path::to::function`",
        ),
        SetAttr::Now if kind != Kind::DateTime => cx.error(
            &f.ty,
            "`set = now` fills the time of the create, a `chrono::DateTime<chrono::Utc>`\nhelp: make the field `chrono::DateTime<chrono::Utc>`, or write `set = path::to::function`",
        ),
        SetAttr::Me | SetAttr::Now | SetAttr::Function(_) => {}
    }
}

fn check_create_only(cx: &Ctxt, m: &Model, f: &Field, span: proc_macro2::Span) {
    let a = &f.attrs;
    let never = if maintained(m, f) {
        Some("the service sets it")
    } else if a.read_only.is_some() {
        Some("it is `read_only`")
    } else if a.skip.is_some() {
        Some("it is `skip`")
    } else {
        None
    };
    if let Some(why) = never {
        cx.error_at(
            span,
            format!(
                "`create_only` applies to a member clients send on create, and clients never send `{}`: {why}\nhelp: remove `create_only`",
                f.ident
            ),
        );
    }
}
