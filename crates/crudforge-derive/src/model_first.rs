//! Model-first resources (`#[resource(model_first)]`): what the struct must say for the derive
//! to declare its table, and the readings of its attributes the table needs (column types,
//! literal defaults, bounds, the foreign keys of `references` and `on_delete`, whose values
//! `attr/model_first.rs` reads).

use crate::ast::{Field, Model};
use crate::ctxt::Ctxt;
use syn::{Expr, Lit, LitStr, Type};

/// The column type of a Rust type: the runtime's `ColumnType` variant and the Diesel SQL type
/// of the `table!` (a path under `crudforge::sql_types` for the portable ones, else under
/// `diesel::sql_types`).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct Sql {
    /// The `ColumnType` variant.
    pub(crate) column: &'static str,
    /// The Diesel SQL type's name.
    pub(crate) diesel: &'static str,
    /// Whether the SQL type is crudforge's (`PortableUuid`, ...).
    pub(crate) portable: bool,
}

/// The column type of `ty` (the type inside an `Option`), by its last path segment.
pub(crate) fn sql_of(ty: &Type) -> Option<Sql> {
    let Type::Path(tp) = ty else { return None };
    if tp.qself.is_some() {
        return None;
    }
    let last = tp.path.segments.last()?;
    let (column, diesel, portable) = match last.ident.to_string().as_str() {
        "String" => ("Text", "Text", false),
        "i16" => ("SmallInt", "SmallInt", false),
        "i32" => ("Integer", "Integer", false),
        "i64" => ("BigInt", "BigInt", false),
        "f32" => ("Real", "Float", false),
        "f64" => ("Double", "Double", false),
        "bool" => ("Bool", "Bool", false),
        "Uuid" => ("Uuid", "PortableUuid", true),
        "DateTime" => ("Timestamp", "PortableTimestamp", true),
        "Value" => ("Json", "PortableJson", true),
        "NaiveDate" => ("Date", "Date", false),
        _ => return None,
    };
    Some(Sql {
        column,
        diesel,
        portable,
    })
}

/// The column type of a model-first field: a file member's is JSON (the file's id, name, size
/// and type; a list's, an array of them), whatever its Rust type is named; any other's is its
/// type's ([`sql_of`]).
pub(crate) fn column_sql(f: &Field) -> Option<Sql> {
    if f.attrs.file.is_some() {
        return sql_of(&syn::parse_quote!(serde_json::Value));
    }
    sql_of(&f.inner)
}

/// `on_delete`'s values and the `OnDelete` variant each names.
const ON_DELETE_VALUES: &[(&str, &str)] = &[
    ("restrict", "Restrict"),
    ("cascade", "Cascade"),
    ("set_null", "SetNull"),
];

/// A field's foreign key: the referenced table and column, and the `OnDelete` variant.
pub(crate) struct Reference {
    pub(crate) table: String,
    pub(crate) column: String,
    pub(crate) on_delete: &'static str,
}

/// Reads `references = "table"` / `"table.column"`; `None` when malformed.
fn parse_reference(lit: &LitStr) -> Option<(String, String)> {
    let value = lit.value();
    let (table, column) = value.split_once('.').unwrap_or((value.as_str(), "id"));
    let plain = |s: &str| {
        !s.is_empty()
            && s.chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    };
    (plain(table) && plain(column)).then(|| (table.to_owned(), column.to_owned()))
}

/// The foreign key of `f`, when it declares one (checked in [`check`]).
pub(crate) fn reference(f: &Field) -> Option<Reference> {
    let (lit, _) = f.attrs.references.as_ref()?;
    let (table, column) = parse_reference(lit)?;
    let on_delete = match &f.attrs.on_delete {
        None => "Restrict",
        Some((lit, _)) => ON_DELETE_VALUES
            .iter()
            .find(|(word, _)| *word == lit.value())
            .map(|(_, variant)| *variant)?,
    };
    Some(Reference {
        table,
        column,
        on_delete,
    })
}

/// A literal default the DDL can carry: `("Text" | "Int" | "Float" | "Bool", literal)`, from
/// `default = "x"`, `default = "x".to_string()` (or `.to_owned()`, `.into()`, `String::from`),
/// `default = 3`, `default = -2.5`, `default = true`. Anything else has no SQL default (the
/// API still fills it in).
pub(crate) fn literal_default(e: &Expr) -> Option<(&'static str, Lit, bool)> {
    match e {
        Expr::Lit(l) => lit_value(&l.lit, false),
        Expr::Unary(u) if matches!(u.op, syn::UnOp::Neg(_)) => match &*u.expr {
            Expr::Lit(l) if matches!(l.lit, Lit::Int(_) | Lit::Float(_)) => lit_value(&l.lit, true),
            _ => None,
        },
        Expr::MethodCall(m)
            if m.args.is_empty()
                && ["to_string", "to_owned", "into"].contains(&m.method.to_string().as_str()) =>
        {
            match &*m.receiver {
                Expr::Lit(syn::ExprLit {
                    lit: lit @ Lit::Str(_),
                    ..
                }) => lit_value(lit, false),
                _ => None,
            }
        }
        Expr::Call(c) if c.args.len() == 1 => {
            let Expr::Path(p) = &*c.func else { return None };
            let from = p.path.segments.len() == 2
                && p.path.segments[0].ident == "String"
                && p.path.segments[1].ident == "from";
            match (from, c.args.first()) {
                (
                    true,
                    Some(Expr::Lit(syn::ExprLit {
                        lit: lit @ Lit::Str(_),
                        ..
                    })),
                ) => lit_value(lit, false),
                _ => None,
            }
        }
        _ => None,
    }
}

fn lit_value(lit: &Lit, negative: bool) -> Option<(&'static str, Lit, bool)> {
    let kind = match lit {
        Lit::Str(_) => "Text",
        Lit::Int(_) => "Int",
        Lit::Float(_) => "Float",
        Lit::Bool(_) => "Bool",
        _ => return None,
    };
    Some((kind, lit.clone(), negative))
}

/// The help of every error about a model-first field's type.
const TYPES_HELP: &str = "help: model-first fields are String, i16, i32, i64, f32, f64, bool, uuid::Uuid, chrono::DateTime<Utc>, chrono::NaiveDate, serde_json::Value, or Option of one of them (a file member, `file(...)`, is stored as JSON); for another type write the `table!` yourself (schema-first) and remove `model_first`";

/// The rules of model-first models, and of `references` / `on_delete` on any model.
pub(crate) fn check(cx: &Ctxt, m: &Model) {
    let Some(model_first) = m.attrs.model_first else {
        for f in &m.fields {
            if let Some((_, span)) = &f.attrs.references {
                cx.error_at(
                    *span,
                    "`references` declares a foreign key of a table the derive writes\nhelp: add `#[resource(model_first)]` to the struct, or declare the key in your migration and remove `references`",
                );
            }
        }
        check_on_delete(cx, m);
        return;
    };
    if let Some(table) = &m.attrs.table {
        if table.segments.len() != 1 || table.leading_colon.is_some() {
            cx.error(
                table,
                "a model-first table is declared next to the struct, so its name is one identifier\nhelp: write `#[diesel(table_name = books)]`; for a table in another schema write the `table!` yourself and remove `model_first`",
            );
        }
    } else {
        cx.error_at(
            model_first,
            "a model-first resource needs its table's name\nhelp: add `#[diesel(table_name = books)]`: the derive declares `books` with `table!`",
        );
    }
    for f in &m.fields {
        if column_sql(f).is_none() && (f.kind.is_some() || f.attrs.skip.is_some()) {
            let inner = &f.inner;
            cx.error(
                inner,
                format!(
                    "`{}` has no column type in a model-first table\n{TYPES_HELP}",
                    quote::quote!(#inner).to_string().replace(' ', "")
                ),
            );
        }
        if let Some((lit, _)) = &f.attrs.references {
            if parse_reference(lit).is_none() {
                cx.error(
                    lit,
                    "expected a table, or a table and a column: `references = \"authors\"` or `references = \"authors.code\"`\nhelp: the key references `authors(id)` unless a column is named",
                );
            }
        }
    }
    check_on_delete(cx, m);
}

/// `on_delete`: a known value, on a field with `references`; `set_null` on an `Option`.
fn check_on_delete(cx: &Ctxt, m: &Model) {
    for f in &m.fields {
        let Some((lit, span)) = &f.attrs.on_delete else {
            continue;
        };
        if f.attrs.references.is_none() {
            cx.error_at(
                *span,
                "`on_delete` needs `references`\nhelp: write `#[resource(references = \"authors\", on_delete = \"cascade\")]`",
            );
            continue;
        }
        let value = lit.value();
        if !ON_DELETE_VALUES.iter().any(|(word, _)| *word == value) {
            cx.error(
                lit,
                format!("unknown `on_delete` value {value:?}\nhelp: write \"restrict\" (the default: a referenced row cannot be deleted), \"cascade\" or \"set_null\""),
            );
        } else if value == "set_null" && !f.nullable {
            cx.error(
                lit,
                "`set_null` needs a column that can be NULL\nhelp: make the field an `Option<...>`, or use \"cascade\" or \"restrict\"",
            );
        }
    }
}
