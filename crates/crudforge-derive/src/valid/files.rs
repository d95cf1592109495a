//! File members: `file(...)` goes on an `Option<crudforge::files::File>` (or, with
//! `max_count`, an `Option<crudforge::files::FileList>`) that is nothing else (no filter, no
//! validator, no server-set value), and a `File` or `FileList` member needs `file(...)`.

use crate::ast::Field;
use crate::ctxt::Ctxt;

/// The last segment of the type inside `Option<_>`.
fn last_name(f: &Field) -> Option<String> {
    match &f.inner {
        syn::Type::Path(tp) => tp.path.segments.last().map(|s| s.ident.to_string()),
        _ => None,
    }
}

/// Whether the type inside `Option<_>` is named `File` or `FileList`.
fn names_file(f: &Field) -> bool {
    matches!(last_name(f).as_deref(), Some("File" | "FileList"))
}

/// The `file(...)` key of one field, and a `File` field without one.
pub(super) fn check(cx: &Ctxt, f: &Field) {
    let Some((_, span)) = &f.attrs.file else {
        if names_file(f) && f.attrs.skip.is_none() && !f.attrs.file_written {
            cx.error(
                &f.ty,
                format!(
                    "`{}` holds a file but does not say which: a file member declares its size and types\nhelp: add `#[resource(file(max_size = \"5 MiB\", types = [\"image/png\"]))]`",
                    f.ident
                ),
            );
        }
        return;
    };
    let list = f.attrs.file.as_ref().and_then(|(a, _)| a.max_count);
    if !names_file(f) || !f.nullable {
        cx.error(
            &f.ty,
            if list.is_some() {
                "a list of files is an `Option<crudforge::files::FileList>`: null until a file is uploaded\nhelp: write `Option<crudforge::files::FileList>`"
            } else {
                "a file member is an `Option<crudforge::files::File>`: null until a file is uploaded\nhelp: write `Option<crudforge::files::File>`"
            },
        );
    } else {
        match (last_name(f).as_deref(), list) {
            (Some("FileList"), None) => cx.error_at(
                *span,
                "a `FileList` member says how many files it holds\nhelp: add `max_count = 5` (or your bound) to `file(...)`",
            ),
            (Some("File"), Some((_, at))) => cx.error_at(
                at,
                "`max_count` is for a list of files, but this member holds one `File`\nhelp: write `Option<crudforge::files::FileList>`, or remove `max_count`",
            ),
            _ => {}
        }
    }
    let a = &f.attrs;
    let others = [
        (
            matches!(a.filter, Some((true, _))),
            "filter = true",
            "a file cannot be filtered or sorted on",
        ),
        (
            a.max_len.is_some() || a.min_len.is_some(),
            "max_len/min_len",
            "the size is `max_size`",
        ),
        (
            a.min.is_some() || a.max.is_some(),
            "min/max",
            "a file is not a number",
        ),
        (
            a.pattern.is_some() || a.one_of.is_some() || a.email.is_some(),
            "a text validator",
            "a file is not text",
        ),
        (
            a.validate.is_some(),
            "validate",
            "the server checks a file's size and type",
        ),
        (a.set.is_some(), "set", "a file comes from an upload"),
        (
            a.default.is_some(),
            "default",
            "a file comes from an upload",
        ),
        (a.password.is_some(), "password", "a file is not a password"),
        (a.unique.is_some(), "unique", "a file is not a key"),
        (
            a.read_only.is_some(),
            "read_only",
            "clients upload a file member",
        ),
        (
            a.write_only.is_some(),
            "write_only",
            "a file member is returned as its name, size, type and URL",
        ),
        (
            a.skip.is_some(),
            "skip",
            "a skipped member is not in the API",
        ),
        (
            a.references.is_some() || a.belongs_to.is_some(),
            "a relation",
            "a file is not a key",
        ),
    ];
    for (_, key, why) in others.iter().filter(|(on, _, _)| *on) {
        cx.error_at(
            *span,
            format!("`file(...)` and `{key}` do not combine: {why}\nhelp: remove `{key}`"),
        );
    }
}
