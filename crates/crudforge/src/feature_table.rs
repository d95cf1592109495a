//! Holds the three copies of the feature table equal to the truth, `[features]` in the crate's
//! `Cargo.toml`: the crate documentation's (`lib.rs`), the crate's `README.md` (crates.io) and
//! the repository's `README.md` each list exactly the crate's features, once each, and say
//! "yes" under "Default" for exactly those `default` turns on.

use std::collections::BTreeSet;

/// The crate's manifest.
const MANIFEST: &str = include_str!("../Cargo.toml");

/// The features `[features]` declares (without `default`), and those `default` lists.
fn declared() -> (BTreeSet<String>, BTreeSet<String>) {
    let mut names = BTreeSet::new();
    let mut defaults = BTreeSet::new();
    let section = MANIFEST
        .lines()
        .skip_while(|l| l.trim() != "[features]")
        .skip(1)
        .take_while(|l| !l.starts_with('['));
    for line in section {
        // A feature starts a line; its list's continuation lines are indented.
        let Some((name, value)) = line.split_once(" = ") else {
            continue;
        };
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        {
            continue;
        }
        if name == "default" {
            defaults = value
                .split('"')
                .skip(1)
                .step_by(2)
                .map(str::to_owned)
                .collect();
        } else {
            names.insert(name.to_owned());
        }
    }
    (names, defaults)
}

/// The rows of the table under the heading `heading` in `text`: the feature (the first cell,
/// without its backticks) and whether the "Default" cell says yes.
fn table(text: &str, heading: &str) -> Vec<(String, bool)> {
    let mut lines = text
        .lines()
        .map(|l| {
            let l = l.strip_prefix("//!").unwrap_or(l);
            l.strip_prefix(' ').unwrap_or(l)
        })
        .skip_while(|l| *l != heading);
    assert!(lines.next().is_some(), "no heading `{heading}`");
    lines
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .skip(2)
        .map(|row| {
            let cells: Vec<&str> = row.split('|').map(str::trim).collect();
            let feature = cells.get(1).copied().unwrap_or_default();
            let default = cells.get(2).copied().unwrap_or_default();
            (feature.trim_matches('`').to_owned(), default == "yes")
        })
        .collect()
}

#[test]
fn every_feature_table_lists_exactly_the_crates_features() {
    let (features, defaults) = declared();
    assert!(
        features.len() >= 2 && defaults.is_subset(&features),
        "[features] as read: {features:?}, default {defaults:?}"
    );
    for (name, text, heading) in [
        (
            "crates/crudforge/src/lib.rs",
            include_str!("lib.rs"),
            "# Features",
        ),
        (
            "crates/crudforge/README.md",
            include_str!("../README.md"),
            "## Features",
        ),
        (
            "README.md",
            include_str!("../../../README.md"),
            "## Features",
        ),
    ] {
        let rows = table(text, heading);
        let listed: BTreeSet<String> = rows.iter().map(|(f, _)| f.clone()).collect();
        assert_eq!(
            listed.len(),
            rows.len(),
            "{name}: a feature is listed twice"
        );
        assert_eq!(listed, features, "{name}: the table against [features]");
        let on: BTreeSet<String> = rows
            .iter()
            .filter(|(_, yes)| *yes)
            .map(|(f, _)| f.clone())
            .collect();
        assert_eq!(on, defaults, "{name}: the Default column against `default`");
    }
}
