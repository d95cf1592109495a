//! Holds the derive's attribute tables equal to its parser: every key `#[resource(...)]` accepts
//! on a struct or a field (`attr::STRUCT_KEYS`, `attr::FIELD_KEYS`, the lists the parser's
//! "unknown key" errors print) has a row in the derive's own documentation (`lib.rs`) and in the
//! resources guide ([resources.md](https://github.com/crudforge/crudforge/blob/main/docs/resources.md)), no row names a key the parser refuses, and no row is
//! written twice.

use crate::attr::{FIELD_KEYS, STRUCT_KEYS};
use crate::symbol::Symbol;
use std::collections::BTreeSet;

/// The derive's documentation: the doc comments of `lib.rs`, without their `///`.
fn derive_docs() -> String {
    include_str!("lib.rs")
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix("///"))
        .map(|l| l.strip_prefix(' ').unwrap_or(l))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The resources guide.
const GUIDE: &str = include_str!("../../../docs/resources.md");

/// The first cells of the rows of the first Markdown table after the first line that contains
/// `heading` (header and separator rows left out).
fn first_cells(text: &str, heading: &str) -> Vec<String> {
    let mut lines = text.lines().skip_while(|l| !l.contains(heading));
    assert!(lines.next().is_some(), "no line `{heading}`");
    lines
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .skip(2)
        .filter_map(|row| row.split('|').nth(1))
        .map(|cell| cell.trim().to_owned())
        .collect()
}

/// The keys a first cell names: the leading identifier of each of its code spans
/// (`` `read = admin` ``, `` `file(max_size = "...")` ``).
fn keys_named(cell: &str) -> BTreeSet<String> {
    cell.split('`')
        .skip(1)
        .step_by(2)
        .map(|span| {
            span.chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect::<String>()
        })
        .filter(|k| !k.is_empty())
        .collect()
}

/// Checks one table of `doc` against the keys the parser accepts.
fn check(doc: &str, doc_name: &str, heading: &str, accepted: &[Symbol]) {
    let cells = first_cells(doc, heading);
    assert!(!cells.is_empty(), "{doc_name}: no table after `{heading}`");
    let accepted: BTreeSet<String> = accepted.iter().map(|k| k.as_str().to_owned()).collect();
    let documented: BTreeSet<String> = cells.iter().flat_map(|c| keys_named(c)).collect();
    let missing: Vec<&String> = accepted.difference(&documented).collect();
    assert!(
        missing.is_empty(),
        "{doc_name}, `{heading}`: keys the parser accepts but the table lacks: {missing:?}"
    );
    let stale: Vec<&String> = documented.difference(&accepted).collect();
    assert!(
        stale.is_empty(),
        "{doc_name}, `{heading}`: keys the table lists but the parser refuses: {stale:?}"
    );
    let mut seen = BTreeSet::new();
    for cell in &cells {
        assert!(
            seen.insert(cell.as_str()),
            "{doc_name}, `{heading}`: the row {cell} is written twice"
        );
    }
}

#[test]
fn every_attribute_key_is_documented_in_the_derive_and_the_guide() {
    let docs = derive_docs();
    check(
        &docs,
        "the derive's documentation",
        "Struct attributes",
        STRUCT_KEYS,
    );
    check(
        &docs,
        "the derive's documentation",
        "Field attributes",
        FIELD_KEYS,
    );
    check(
        GUIDE,
        "docs/resources.md",
        "### Struct attributes",
        STRUCT_KEYS,
    );
    check(
        GUIDE,
        "docs/resources.md",
        "### Field attributes",
        FIELD_KEYS,
    );
}

#[test]
fn a_row_names_the_leading_identifier_of_each_code_span() {
    let keys = keys_named(r#"`read = admin`, `read = owner(field)`, `min = N`, `file(x = "y")`"#);
    let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
    assert_eq!(keys, ["file", "min", "read"]);
}
