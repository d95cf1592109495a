//! A test that `crud/`'s modules import one way: it reads their source, takes the imports of
//! one sibling by another (`super::x`, `crate::crud::x`, and items `mod.rs` re-exports from
//! `x`), and fails naming the modules of any cycle.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Every `.rs` file under `dir`, with its path relative to `dir`.
fn sources(dir: &Path, rel: &str, out: &mut Vec<(String, String)>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        let rel = if rel.is_empty() {
            name
        } else {
            format!("{rel}/{name}")
        };
        if path.is_dir() {
            sources(&path, &rel, out);
        } else if rel.ends_with(".rs") {
            out.push((rel, std::fs::read_to_string(&path).unwrap_or_default()));
        }
    }
}

/// The code of a file without its tests and line comments.
fn code(text: &str) -> String {
    let text = text.split("#[cfg(test)]").next().unwrap_or("");
    text.lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The names `text` uses after `prefix` (`prefix::name` or `prefix::{a, b::c}`).
fn names_after(text: &str, prefix: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (i, _) in text.match_indices(prefix) {
        let before = text[..i].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
            continue;
        }
        let rest = &text[i + prefix.len()..];
        let group = match rest.strip_prefix('{') {
            Some(inner) => &inner[..inner.find('}').unwrap_or(inner.len())],
            None => rest,
        };
        let words = group.split(|c: char| !(c.is_alphanumeric() || c == '_'));
        let words: Vec<&str> = if rest.starts_with('{') {
            words.collect()
        } else {
            words.take(1).collect()
        };
        out.extend(
            words
                .into_iter()
                .filter(|w| !w.is_empty())
                .map(str::to_owned),
        );
    }
    out
}

#[test]
fn crud_modules_import_one_way() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/crud");
    let mut files = Vec::new();
    sources(&dir, "", &mut files);
    let module = |rel: &str| {
        rel.split('/')
            .next()
            .unwrap_or(rel)
            .trim_end_matches(".rs")
            .to_owned()
    };
    let modules: BTreeSet<String> = files.iter().map(|(rel, _)| module(rel)).collect();
    // Items `mod.rs` re-exports (`pub use blueprint::CrudBlueprint;`) stand for their module.
    let mut owner: BTreeMap<String, String> = BTreeMap::new();
    for (rel, text) in &files {
        if rel != "mod.rs" {
            continue;
        }
        for line in text.lines().filter(|l| l.starts_with("pub use ")) {
            let path = &line["pub use ".len()..];
            let first = path.split("::").next().unwrap_or("");
            if modules.contains(first) {
                for name in names_after(line, &format!("{first}::")) {
                    owner.insert(name, first.to_owned());
                }
            }
        }
    }
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (rel, text) in files.iter().filter(|(rel, _)| rel != "mod.rs") {
        let from = module(rel);
        let text = code(text);
        let parent = if rel.contains('/') {
            "super::super::"
        } else {
            "super::"
        };
        let used = names_after(&text, parent)
            .into_iter()
            .chain(names_after(&text, "crate::crud::"));
        for name in used {
            let to = if modules.contains(&name) {
                Some(name)
            } else {
                owner.get(&name).cloned()
            };
            if let Some(to) = to.filter(|to| *to != from && to != "mod") {
                edges.entry(from.clone()).or_default().insert(to);
            }
        }
    }
    // A cycle exists when some module reaches itself.
    for start in &modules {
        let mut seen = BTreeSet::new();
        let mut stack = vec![vec![start.clone()]];
        while let Some(path) = stack.pop() {
            let last = path.last().cloned().unwrap_or_default();
            for next in edges.get(&last).into_iter().flatten() {
                assert!(
                    next != start,
                    "import cycle in crud/: {} -> {start}",
                    path.join(" -> ")
                );
                if seen.insert(next.clone()) {
                    let mut longer = path.clone();
                    longer.push(next.clone());
                    stack.push(longer);
                }
            }
        }
    }
    assert!(
        edges.len() > 10,
        "the test found too few imports to judge: {edges:?}"
    );
}
