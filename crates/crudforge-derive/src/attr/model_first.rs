//! Reading the keys that describe the table beyond its columns' types: a field's
//! `references = "authors"`, `on_delete = "cascade"` and `default = ...`, and the struct's
//! `index("col_a", "col_b")` and `unique("col_a", "col_b")` (both repeatable), and
//! `search("name", "species")`, the members of its full-text index. On a field,
//! `unique` is a flag. A model-first table's DDL reads them, and `default`, `index` and
//! `unique(...)` serve every model (the API's defaults, `Resource::INDEXES`,
//! `Resource::UNIQUES`); `crate::model_first` checks them against the model.

use super::keys::skip_value;
use crate::ctxt::Ctxt;
use quote::ToTokens as _;
use syn::meta::ParseNestedMeta;
use syn::{Expr, Ident, LitStr};

/// One `index("col_a", "col_b")` or `unique("col_a", "col_b")`: the columns in order, each
/// with its span.
pub(crate) struct IndexAttr {
    pub(crate) columns: Vec<LitStr>,
}

/// What a column list declares, for the words of its errors.
struct Listed {
    /// The key (`index`, `unique`).
    key: &'static str,
    /// What it is, after "this" (`index`, `unique constraint`).
    what: &'static str,
    /// What the list holds, as a sentence's subject and verb.
    lists: &'static str,
    /// How it is written.
    help: &'static str,
}

const INDEX_LIST: Listed = Listed {
    key: "index",
    what: "index",
    lists: "an index lists",
    help: "help: write `index(\"species\", \"cuteness_level\")`",
};

const UNIQUE_LIST: Listed = Listed {
    key: "unique",
    what: "unique constraint",
    lists: "a unique constraint lists",
    help: "help: write `unique(\"event_id\", \"seat\")`: no two rows share both values",
};

const SEARCH_LIST: Listed = Listed {
    key: "search",
    what: "search",
    lists: "a search lists",
    help: "help: write `search(\"name\", \"species\")`: the text members `q=` looks in, the one that weighs most first",
};

/// Reads `search(...)`, the key `meta` is at, into `search` (`None` until read): the
/// searchable members in order. Given twice, the second is reported.
pub(super) fn search(
    cx: &Ctxt,
    meta: &ParseNestedMeta<'_>,
    search: &mut Option<Vec<LitStr>>,
) -> syn::Result<()> {
    let columns = index_columns(cx, meta, &SEARCH_LIST)?;
    if search.is_some() {
        cx.error(
            &meta.path,
            "`search(...)` is given twice\nhelp: list every searchable member in one `search(...)`",
        );
    } else {
        *search = Some(columns);
    }
    Ok(())
}

/// Reads the value of `references = "authors"` (checked in [`crate::model_first::check`]).
pub(super) fn references(meta: &ParseNestedMeta<'_>) -> syn::Result<LitStr> {
    meta.value().and_then(|v| v.parse()).map_err(|_| {
        meta.error("expected the referenced table in quotes: `references = \"authors\"`")
    })
}

/// Reads the value of `on_delete = "cascade"` (checked in [`crate::model_first::check`]).
pub(super) fn on_delete(meta: &ParseNestedMeta<'_>) -> syn::Result<LitStr> {
    meta.value().and_then(|v| v.parse()).map_err(|_| {
        meta.error("expected `on_delete = \"restrict\"`, `\"cascade\"` or `\"set_null\"`")
    })
}

/// Reads the value of `default = ...`, the key `meta` is at: any expression.
pub(super) fn default(meta: &ParseNestedMeta<'_>) -> syn::Result<Expr> {
    meta.value()
        .and_then(|v| v.parse())
        .map_err(|_| meta.error("expected a value: `default = 10`"))
}

/// Reads `index(...)`, the key `meta` is at, into `indexes`; an index declared twice is
/// reported at its second occurrence, and an index with mistakes is left out.
pub(super) fn index(
    cx: &Ctxt,
    meta: &ParseNestedMeta<'_>,
    indexes: &mut Vec<IndexAttr>,
) -> syn::Result<()> {
    let columns = index_columns(cx, meta, &INDEX_LIST)?;
    if !columns.is_empty() {
        let same = |i: &IndexAttr| {
            i.columns
                .iter()
                .map(LitStr::value)
                .eq(columns.iter().map(LitStr::value))
        };
        if indexes.iter().any(same) {
            cx.error(
                &meta.path,
                "this index is declared twice\nhelp: remove this `index(...)`",
            );
        }
        indexes.push(IndexAttr { columns });
    }
    Ok(())
}

/// Reads `unique(...)`, the key `meta` is at, into `uniques`: a composite unique constraint
/// of two or more members (one member is the field flag `unique`). A constraint declared twice
/// (the same members, in any order) is reported at its second occurrence, and one with
/// mistakes is left out.
pub(super) fn unique(
    cx: &Ctxt,
    meta: &ParseNestedMeta<'_>,
    uniques: &mut Vec<IndexAttr>,
) -> syn::Result<()> {
    let columns = index_columns(cx, meta, &UNIQUE_LIST)?;
    if let [only] = columns.as_slice() {
        cx.error(
            &meta.path,
            format!(
                "a composite unique constraint needs two members or more\nhelp: for `{0}` alone, mark the field: `#[resource(unique)] {0}: ...`",
                only.value()
            ),
        );
        return Ok(());
    }
    if columns.len() > 1 {
        let mut names: Vec<String> = columns.iter().map(LitStr::value).collect();
        names.sort();
        let same = |u: &IndexAttr| {
            let mut other: Vec<String> = u.columns.iter().map(LitStr::value).collect();
            other.sort();
            other == names
        };
        if uniques.iter().any(same) {
            cx.error(
                &meta.path,
                "this unique constraint is declared twice (the order of its members does not matter)\nhelp: remove this `unique(...)`",
            );
        }
        uniques.push(IndexAttr { columns });
    }
    Ok(())
}

/// Reads the columns of `index("col_a", "col_b")` (or `unique(...)`, as `listed` says), the
/// key `meta` is at. A column that is not a string literal holding a plain name, or a list
/// without columns, is reported; the keys after it are still read.
///
/// The columns are strings, not bare names: Clippy's `duplicated_attributes` reads bare words
/// inside an attribute as attributes, and would flag every column two indexes share.
fn index_columns(
    cx: &Ctxt,
    meta: &ParseNestedMeta<'_>,
    listed: &Listed,
) -> syn::Result<Vec<LitStr>> {
    let Listed {
        key,
        what,
        lists,
        help,
    } = listed;
    if !meta.input.peek(syn::token::Paren) {
        skip_value(meta)?;
        let columns = if *key == "index" {
            "indexed columns"
        } else {
            "members"
        };
        cx.error(
            &meta.path,
            format!("expected the {columns} in parentheses\n{help}"),
        );
        return Ok(Vec::new());
    }
    let content;
    syn::parenthesized!(content in meta.input);
    let mut columns: Vec<LitStr> = Vec::new();
    let mut malformed = false;
    while !content.is_empty() {
        // One entry: the tokens up to the next comma.
        let mut entry = proc_macro2::TokenStream::new();
        while !content.is_empty() && !content.peek(syn::Token![,]) {
            let tt: proc_macro2::TokenTree = content.parse()?;
            entry.extend([tt]);
        }
        if !content.is_empty() {
            let _: syn::Token![,] = content.parse()?;
        }
        let at = if entry.is_empty() {
            meta.path.to_token_stream()
        } else {
            entry.clone()
        };
        match syn::parse2::<LitStr>(entry.clone()) {
            Ok(col) if syn::parse_str::<Ident>(&col.value()).is_ok() => {
                if columns.iter().any(|c| c.value() == col.value()) {
                    cx.error(
                        &col,
                        format!(
                            "`{}` appears twice in this {what}\nhelp: name each column once",
                            col.value()
                        ),
                    );
                }
                columns.push(col);
            }
            Ok(col) => {
                malformed = true;
                cx.error(
                    &col,
                    format!(
                        "expected a column name, not {:?}: {lists} fields of the struct, without `DESC` or expressions\n{help}",
                        col.value()
                    ),
                );
            }
            Err(_) => {
                malformed = true;
                let bare = syn::parse2::<Ident>(entry).ok();
                cx.error(
                    at,
                    match bare {
                        Some(ident) => format!(
                            "write the column as a string: `\"{ident}\"` (bare names inside an attribute trip Clippy's `duplicated_attributes` when two indexes share a column)\n{help}"
                        ),
                        None => format!(
                            "expected a column name in quotes: {lists} fields of the struct, without `DESC` or expressions\n{help}"
                        ),
                    },
                );
            }
        }
    }
    if malformed {
        return Ok(Vec::new());
    }
    if columns.is_empty() {
        let least = match *key {
            "index" => "an index needs at least one column",
            "search" => "a search needs at least one member",
            _ => "a composite unique constraint needs two members or more",
        };
        cx.error(&meta.path, format!("{least}\n{help}"));
    }
    Ok(columns)
}
