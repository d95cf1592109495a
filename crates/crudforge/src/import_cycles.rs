//! A test that the crate's modules import one way (`docs/architecture.md` draws the floors):
//! it reads the sources, resolves every `crate::`, `super::` and `self::` path to the module
//! that defines what it names (through the re-exports of a directory's `mod.rs`), and fails
//! naming the modules of any cycle, first among the top-level modules, then among the files
//! of each directory. A directory's `mod.rs` is its face (it declares, re-exports and may
//! define the directory's central type, which the files beside it use), so it is not a node
//! of its own directory's graph.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// A module path, `["auth", "extract"]` for `auth/extract.rs` and `["auth"]` for
/// `auth/mod.rs`.
type ModPath = Vec<String>;

/// Every `.rs` file under `dir`: its module path, whether it is a `mod.rs`, and its code
/// (tests and comments left out).
fn sources(dir: &Path, at: &ModPath, out: &mut Vec<(ModPath, bool, String)>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if path.is_dir() {
            let mut inner = at.clone();
            inner.push(name);
            sources(&path, &inner, out);
        } else if let Some(stem) = name.strip_suffix(".rs") {
            let mut module = at.clone();
            let face = stem == "mod";
            match stem {
                "mod" | "lib" => {}
                // `lib.rs` mounts `private.rs` as `__private`.
                "private" if at.is_empty() => module.push("__private".to_owned()),
                _ => module.push(stem.to_owned()),
            }
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            out.push((module, face, code(&text)));
        }
    }
}

/// The code of a file without its tests and comments.
fn code(text: &str) -> String {
    let text = text.split("#[cfg(test)]").next().unwrap_or("");
    text.lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The paths a file names: each `crate::`/`super::`/`self::` path, with `{a, b::c}` groups
/// expanded, as segments (the leading keywords kept).
fn paths(text: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let bytes = text.as_bytes();
    for head in ["crate::", "super::", "self::"] {
        for (i, _) in text.match_indices(head) {
            let before = text[..i].chars().next_back();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
                continue;
            }
            // The whole path: identifiers, `::`, and one level of `{...}`.
            let mut end = i;
            let mut depth = 0;
            while end < bytes.len() {
                let c = bytes[end] as char;
                match c {
                    '{' => depth += 1,
                    '}' if depth > 0 => depth -= 1,
                    '}' => break,
                    ',' | ' ' | '\n' if depth > 0 => {}
                    c if c.is_alphanumeric() || c == '_' || c == ':' => {}
                    _ if depth > 0 => {}
                    _ => break,
                }
                end += 1;
            }
            expand(&text[i..end], &mut out);
        }
    }
    out
}

/// Expands `a::b::{c, d::e}` into `[a, b, c]` and `[a, b, d, e]`.
fn expand(path: &str, out: &mut Vec<Vec<String>>) {
    let split = |p: &str| -> Vec<String> {
        p.split("::")
            .map(|s| s.split(" as ").next().unwrap_or("").trim().to_owned())
            .filter(|s| !s.is_empty())
            .collect()
    };
    match path.split_once('{') {
        Some((prefix, group)) => {
            let group = group.trim_end_matches('}');
            let prefix = split(prefix);
            for item in group.split(',') {
                let mut full = prefix.clone();
                full.extend(split(item).into_iter().filter(|s| s != "self"));
                out.push(full);
            }
        }
        None => out.push(split(path)),
    }
}

/// The module that defines what `path` names, seen from `from` (`is_dir`: `from` is a
/// directory's `mod.rs`, whose `super` is its parent's parent... as Rust counts it).
fn resolve(
    from: &ModPath,
    path: &[String],
    modules: &BTreeSet<ModPath>,
    reexports: &BTreeMap<(ModPath, String), ModPath>,
) -> Option<ModPath> {
    let mut at: ModPath = Vec::new();
    let mut rest = path;
    match rest.first().map(String::as_str) {
        Some("crate") => rest = &rest[1..],
        Some("self") => {
            at = from.clone();
            rest = &rest[1..];
        }
        Some("super") => {
            at = from.clone();
            while rest.first().is_some_and(|s| s == "super") {
                at.pop();
                rest = &rest[1..];
            }
        }
        _ => return None,
    }
    for seg in rest {
        let mut next = at.clone();
        next.push(seg.clone());
        if modules.contains(&next) {
            at = next;
        } else if let Some(owner) = reexports.get(&(at.clone(), seg.clone())) {
            return Some(owner.clone());
        } else {
            break;
        }
    }
    (!at.is_empty()).then_some(at)
}

/// Fails naming a cycle of `edges`, if there is one; `what` says which graph.
fn assert_acyclic(edges: &BTreeMap<String, BTreeSet<String>>, what: &str) {
    for start in edges.keys() {
        let mut seen = BTreeSet::new();
        let mut stack = vec![vec![start.clone()]];
        while let Some(path) = stack.pop() {
            let last = path.last().cloned().unwrap_or_default();
            for next in edges.get(&last).into_iter().flatten() {
                assert!(
                    next != start,
                    "import cycle {what}: {} -> {start}",
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
}

#[test]
fn modules_import_one_way() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&dir, &Vec::new(), &mut files);
    let modules: BTreeSet<ModPath> = files.iter().map(|(m, _, _)| m.clone()).collect();
    // Modules with modules inside (a `mod.rs`, or `x.rs` beside a folder `x/`).
    let is_dir = |m: &ModPath| {
        modules
            .iter()
            .any(|o| o.len() > m.len() && o.starts_with(m))
    };
    // `pub use child::Name;` in a directory's `mod.rs`: `dir::Name` stands for `dir::child`.
    let mut reexports = BTreeMap::new();
    for (module, _, text) in files.iter().filter(|(m, _, _)| is_dir(m)) {
        for line in text.lines().map(str::trim) {
            let Some(path) = line
                .strip_prefix("pub use ")
                .or_else(|| line.strip_prefix("pub(crate) use "))
            else {
                continue;
            };
            let mut expanded = Vec::new();
            expand(path.trim_end_matches(';'), &mut expanded);
            for p in expanded {
                let mut target = module.clone();
                target.extend(p.iter().take(p.len().saturating_sub(1)).cloned());
                let target = if p.first().is_some_and(|s| s == "crate") {
                    resolve(module, &p, &modules, &BTreeMap::new())
                } else {
                    modules.contains(&target).then_some(target)
                };
                if let (Some(target), Some(name)) = (target, p.last()) {
                    reexports.insert((module.clone(), name.clone()), target);
                }
            }
        }
    }
    let mut top: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut inner: BTreeMap<ModPath, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    let mut count = 0;
    for (module, face, text) in &files {
        // Inside a directory's `mod.rs` (and `lib.rs`), `super` is the directory's parent.
        let from = if *face || module.is_empty() {
            let mut m = module.clone();
            m.push(String::new());
            m
        } else {
            module.clone()
        };
        for path in paths(text) {
            let Some(to) = resolve(&from, &path, &modules, &reexports) else {
                continue;
            };
            count += 1;
            if let (Some(a), Some(b)) = (module.first(), to.first()) {
                if a != b && a != "__private" {
                    top.entry(a.clone()).or_default().insert(b.clone());
                }
            }
            // Within each directory the two files sit in, below their common ancestor.
            let common = module.iter().zip(&to).take_while(|(a, b)| a == b).count();
            if common > 0 && module.len() > common && to.len() > common {
                let dir: ModPath = module[..common].to_vec();
                inner
                    .entry(dir)
                    .or_default()
                    .entry(module[common].clone())
                    .or_default()
                    .insert(to[common].clone());
            }
        }
    }
    assert!(
        count > 200 && top.len() > 15,
        "the test found too few imports to judge: {count} paths, {top:?}"
    );
    for (dir, edges) in &inner {
        assert_acyclic(edges, &format!("inside {}/", dir.join("/")));
    }
    assert_acyclic(&top, "between the crate's top-level modules");
}
