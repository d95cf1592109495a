//! A test that each crate's modules import one way ([architecture.md](https://github.com/crudforge/crudforge/blob/main/docs/architecture.md) draws the floors),
//! for the runtime, the derive and the core crate alike.
//!
//! It parses the sources with `syn`, following the `mod` declarations from `lib.rs` (with
//! their `#[path]`s, leaving `#[cfg(test)]` items out), and collects every path that starts
//! with `crate::`, `super::`, `self::` or a child module: in `use` trees (groups, renames and
//! globs included), in expressions, types and patterns, and in the input of macros other than
//! `quote!` (whose paths belong to the generated code). Each path is resolved to the module
//! that defines what it names, through `use` items on the way. The test fails naming the
//! modules of a cycle, first among a crate's top-level modules, then among the children of
//! each module. A module with children (a `mod.rs`, or `x.rs` beside a folder `x/`) is the
//! face of its folder and not a node of the folder's own graph.

use proc_macro2::{TokenStream, TokenTree};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use syn::visit::Visit;

/// A module path, `["auth", "extract"]` for `auth/extract.rs` and `[]` for `lib.rs`.
type ModPath = Vec<String>;

/// One module of a crate, as the sources declare it.
#[derive(Default)]
struct Module {
    /// The module whose file holds it: itself, unless it is written inline.
    file: ModPath,
    /// The paths its code names, as written there (`crate` and `super` kept).
    paths: Vec<Vec<String>>,
    /// Its `use` items: the name each brings in (`*` for a glob) and the path it stands for.
    uses: Vec<(String, Vec<String>)>,
    /// The names of the items it defines.
    defines: BTreeSet<String>,
    /// The names `extern crate self as name;` gives the crate.
    crate_names: Vec<String>,
}

/// The modules of one crate.
struct Crate {
    modules: BTreeMap<ModPath, Module>,
    /// The names it calls itself by besides `crate`.
    crate_names: BTreeSet<String>,
}

/// Whether `attrs` hold `#[cfg(test)]`.
fn is_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg")
            && a.meta
                .require_list()
                .is_ok_and(|l| l.tokens.to_string() == "test")
    })
}

/// The string of `#[path = "..."]`, if the attributes have one.
fn path_attr(attrs: &[syn::Attribute]) -> Option<String> {
    attrs.iter().find_map(|a| match &a.meta {
        syn::Meta::NameValue(nv) if nv.path.is_ident("path") => match &nv.value {
            syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(s),
                ..
            }) => Some(s.value()),
            _ => None,
        },
        _ => None,
    })
}

/// Appends to `out` each path of a `use` tree with the name it brings in.
fn use_paths(tree: &syn::UseTree, prefix: &mut Vec<String>, out: &mut Vec<(String, Vec<String>)>) {
    match tree {
        syn::UseTree::Path(p) => {
            prefix.push(p.ident.to_string());
            use_paths(&p.tree, prefix, out);
            prefix.pop();
        }
        syn::UseTree::Name(n) if n.ident == "self" => {
            let name = prefix.last().cloned().unwrap_or_default();
            out.push((name, prefix.clone()));
        }
        syn::UseTree::Name(n) => {
            let mut full = prefix.clone();
            full.push(n.ident.to_string());
            out.push((n.ident.to_string(), full));
        }
        syn::UseTree::Rename(r) => {
            let mut full = prefix.clone();
            if r.ident != "self" {
                full.push(r.ident.to_string());
            }
            out.push((r.rename.to_string(), full));
        }
        syn::UseTree::Glob(_) => out.push(("*".to_owned(), prefix.clone())),
        syn::UseTree::Group(g) => {
            for tree in &g.items {
                use_paths(tree, prefix, out);
            }
        }
    }
}

/// The paths in a macro's input that start with `crate`, `$crate`, `super` or `self`.
fn token_paths(tokens: TokenStream, out: &mut Vec<Vec<String>>) {
    let tokens: Vec<TokenTree> = tokens.into_iter().collect();
    let mut i = 0;
    while i < tokens.len() {
        if let TokenTree::Group(g) = &tokens[i] {
            token_paths(g.stream(), out);
        }
        let after_colons =
            i >= 1 && matches!(&tokens[i - 1], TokenTree::Punct(p) if p.as_char() == ':');
        let head = match &tokens[i] {
            TokenTree::Ident(id) if !after_colons => id.to_string(),
            _ => String::new(),
        };
        if !matches!(head.as_str(), "crate" | "super" | "self") {
            i += 1;
            continue;
        }
        let mut path = vec![head];
        i += 1;
        // `::` is two `:` puncts, then an identifier.
        while let (
            Some(TokenTree::Punct(a)),
            Some(TokenTree::Punct(b)),
            Some(TokenTree::Ident(id)),
        ) = (tokens.get(i), tokens.get(i + 1), tokens.get(i + 2))
        {
            if a.as_char() != ':' || b.as_char() != ':' {
                break;
            }
            path.push(id.to_string());
            i += 3;
        }
        out.push(path);
    }
}

/// Walks a file's items, recording into the crate's modules and loading the files of the
/// modules it declares.
struct Walker<'a> {
    modules: &'a mut BTreeMap<ModPath, Module>,
    /// The module being walked.
    at: ModPath,
    /// The module of the file being walked.
    file: ModPath,
    /// Where the files of modules declared here are looked for.
    dir: PathBuf,
    /// Where a `#[path]` of a module declared here starts from.
    path_dir: PathBuf,
}

impl Walker<'_> {
    fn module(&mut self) -> &mut Module {
        let file = self.file.clone();
        self.modules
            .entry(self.at.clone())
            .or_insert_with(|| Module {
                file,
                ..Module::default()
            })
    }
}

impl<'ast> Visit<'ast> for Walker<'_> {
    fn visit_item(&mut self, item: &'ast syn::Item) {
        let attrs: &[syn::Attribute] = match item {
            syn::Item::Const(i) => &i.attrs,
            syn::Item::Enum(i) => &i.attrs,
            syn::Item::Fn(i) => &i.attrs,
            syn::Item::Impl(i) => &i.attrs,
            syn::Item::Macro(i) => &i.attrs,
            syn::Item::Mod(i) => &i.attrs,
            syn::Item::Static(i) => &i.attrs,
            syn::Item::Struct(i) => &i.attrs,
            syn::Item::Trait(i) => &i.attrs,
            syn::Item::Type(i) => &i.attrs,
            syn::Item::Union(i) => &i.attrs,
            syn::Item::Use(i) => &i.attrs,
            _ => &[],
        };
        if is_test(attrs) {
            return;
        }
        let name = match item {
            syn::Item::Const(i) => Some(&i.ident),
            syn::Item::Enum(i) => Some(&i.ident),
            syn::Item::Fn(i) => Some(&i.sig.ident),
            syn::Item::Macro(i) => i.ident.as_ref(),
            syn::Item::Static(i) => Some(&i.ident),
            syn::Item::Struct(i) => Some(&i.ident),
            syn::Item::Trait(i) => Some(&i.ident),
            syn::Item::Type(i) => Some(&i.ident),
            syn::Item::Union(i) => Some(&i.ident),
            _ => None,
        };
        if let Some(name) = name {
            self.module().defines.insert(name.to_string());
        }
        if let syn::Item::ExternCrate(e) = item {
            if let (true, Some((_, name))) = (e.ident == "self", &e.rename) {
                self.module().crate_names.push(name.to_string());
            }
        }
        syn::visit::visit_item(self, item);
    }

    fn visit_item_mod(&mut self, item: &'ast syn::ItemMod) {
        let name = item.ident.to_string();
        let mut inner = self.at.clone();
        inner.push(name.clone());
        match &item.content {
            Some((_, items)) => {
                let outer = std::mem::replace(&mut self.at, inner);
                let outer_dir = self.dir.clone();
                let outer_path_dir = self.path_dir.clone();
                self.dir.push(&name);
                self.path_dir.clone_from(&self.dir);
                self.module();
                for item in items {
                    self.visit_item(item);
                }
                self.at = outer;
                self.dir = outer_dir;
                self.path_dir = outer_path_dir;
            }
            None => match path_attr(&item.attrs) {
                Some(p) => load(self.modules, &self.path_dir.join(p), inner, true),
                None => {
                    let flat = self.dir.join(format!("{name}.rs"));
                    if flat.exists() {
                        load(self.modules, &flat, inner, false);
                    } else {
                        load(
                            self.modules,
                            &self.dir.join(&name).join("mod.rs"),
                            inner,
                            true,
                        );
                    }
                }
            },
        }
    }

    fn visit_item_use(&mut self, item: &'ast syn::ItemUse) {
        let mut uses = Vec::new();
        use_paths(&item.tree, &mut Vec::new(), &mut uses);
        let module = self.module();
        module.paths.extend(uses.iter().map(|(_, p)| p.clone()));
        module.uses.extend(uses);
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        if path.leading_colon.is_none() {
            let segments = path.segments.iter().map(|s| s.ident.to_string()).collect();
            self.module().paths.push(segments);
        }
        syn::visit::visit_path(self, path);
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        let quoting = [
            "quote",
            "quote_spanned",
            "parse_quote",
            "parse_quote_spanned",
        ];
        if !quoting.iter().any(|q| mac.path.is_ident(q)) {
            let mut paths = Vec::new();
            token_paths(mac.tokens.clone(), &mut paths);
            self.module().paths.extend(paths);
        }
        syn::visit::visit_macro(self, mac);
    }
}

/// Parses the file of `module` and the files of the modules it declares. `lib.rs`, `mod.rs`
/// and a file named by `#[path]` (`beside`) have their children's files beside them; `x.rs`
/// has them in the folder `x/`.
fn load(modules: &mut BTreeMap<ModPath, Module>, file: &Path, module: ModPath, beside: bool) {
    let text = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    let ast = syn::parse_file(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    let parent = file.parent().unwrap_or(Path::new("")).to_path_buf();
    let dir = match file.file_stem() {
        Some(stem) if !beside => parent.join(stem),
        _ => parent.clone(),
    };
    let mut walker = Walker {
        modules,
        at: module.clone(),
        file: module,
        dir,
        path_dir: parent,
    };
    walker.module();
    walker.visit_file(&ast);
}

impl Crate {
    /// The crate whose `lib.rs` is in `src`.
    fn read(src: &Path) -> Crate {
        let mut modules = BTreeMap::new();
        load(&mut modules, &src.join("lib.rs"), Vec::new(), true);
        let crate_names = modules
            .values()
            .flat_map(|m| m.crate_names.clone())
            .collect();
        Crate {
            modules,
            crate_names,
        }
    }

    /// The module that defines what `path` names, seen from the module `from`; `None` for
    /// another crate's items and the crate root.
    fn resolve(&self, from: &ModPath, path: &[String], depth: usize) -> Option<ModPath> {
        let (mut at, mut rest) = match path.first().map(String::as_str) {
            Some(name) if name == "crate" || self.crate_names.contains(name) => {
                (Vec::new(), &path[1..])
            }
            Some("self") => (from.clone(), &path[1..]),
            Some("super") => {
                let mut at = from.clone();
                let mut rest = path;
                while rest.first().is_some_and(|s| s == "super") {
                    at.pop();
                    rest = &rest[1..];
                }
                (at, rest)
            }
            Some(first)
                if self
                    .modules
                    .contains_key(&[from.as_slice(), &[first.to_owned()]].concat()) =>
            {
                (from.clone(), path)
            }
            _ => return None,
        };
        while let Some((seg, more)) = rest.split_first() {
            let mut next = at.clone();
            next.push(seg.clone());
            if self.modules.contains_key(&next) {
                at = next;
                rest = more;
                continue;
            }
            if let Some(owner) = self.imported(&at, seg, depth) {
                return Some(owner);
            }
            break;
        }
        (!at.is_empty()).then_some(at)
    }

    /// The module that defines `name` as `module` sees it through its `use` items, if they
    /// bring it in from this crate.
    fn imported(&self, module: &ModPath, name: &str, depth: usize) -> Option<ModPath> {
        let m = self.modules.get(module)?;
        if depth > 8 || m.defines.contains(name) {
            return None;
        }
        if let Some((_, path)) = m.uses.iter().find(|(n, _)| n == name) {
            return self.resolve(module, path, depth + 1);
        }
        m.uses
            .iter()
            .filter(|(n, _)| n == "*")
            .filter_map(|(_, path)| self.resolve(module, path, depth + 1))
            .find_map(|glob| {
                let g = self.modules.get(&glob)?;
                if g.defines.contains(name) {
                    Some(glob.clone())
                } else {
                    self.imported(&glob, name, depth + 1)
                }
            })
    }

    /// The file modules' imports: (importing file, imported file) pairs, and how many paths
    /// were resolved.
    fn imports(&self) -> (BTreeSet<(ModPath, ModPath)>, usize) {
        let mut edges = BTreeSet::new();
        let mut count = 0;
        for (path, module) in &self.modules {
            for named in &module.paths {
                let Some(to) = self.resolve(path, named, 0) else {
                    continue;
                };
                let to = self.modules.get(&to).map_or(to, |m| m.file.clone());
                count += 1;
                if to != module.file {
                    edges.insert((module.file.clone(), to));
                }
            }
        }
        (edges, count)
    }
}

/// The cycles of a crate's imports, each as `a -> b -> a` with the graph it is in, and how
/// many paths and top-level modules the judgement rests on.
fn cycles(src: &Path) -> (Vec<String>, usize, usize) {
    let krate = Crate::read(src);
    let (edges, count) = krate.imports();
    let mut top: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut inner: BTreeMap<ModPath, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    for (from, to) in &edges {
        if let (Some(a), Some(b)) = (from.first(), to.first()) {
            // The hidden module for generated code re-exports from everywhere.
            if a != b && a != "__private" {
                top.entry(a.clone()).or_default().insert(b.clone());
            }
        }
        // Within the folder the two files sit in, below their common ancestor.
        let common = from.iter().zip(to).take_while(|(a, b)| a == b).count();
        if common > 0 && from.len() > common && to.len() > common {
            inner
                .entry(from[..common].to_vec())
                .or_default()
                .entry(from[common].clone())
                .or_default()
                .insert(to[common].clone());
        }
    }
    let mut found = Vec::new();
    if let Some(c) = cycle(&top) {
        found.push(format!("between the top-level modules: {c}"));
    }
    for (dir, edges) in &inner {
        if let Some(c) = cycle(edges) {
            found.push(format!("inside {}/: {c}", dir.join("/")));
        }
    }
    let tops = krate.modules.keys().filter(|m| m.len() == 1).count();
    (found, count, tops)
}

/// A cycle of `edges` as `a -> b -> a`, if there is one.
fn cycle(edges: &BTreeMap<String, BTreeSet<String>>) -> Option<String> {
    for start in edges.keys() {
        let mut seen = BTreeSet::new();
        let mut stack = vec![vec![start.clone()]];
        while let Some(path) = stack.pop() {
            let last = path.last().cloned().unwrap_or_default();
            for next in edges.get(&last).into_iter().flatten() {
                if next == start {
                    return Some(format!("{} -> {start}", path.join(" -> ")));
                }
                if seen.insert(next.clone()) {
                    let mut longer = path.clone();
                    longer.push(next.clone());
                    stack.push(longer);
                }
            }
        }
    }
    None
}

#[test]
fn modules_import_one_way() {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    // (crate, fewest paths and top-level modules for the test to have seen enough)
    for (name, least_paths, least_tops) in [
        ("crudforge", 2000, 25),
        ("crudforge-derive", 200, 8),
        ("crudforge-core", 20, 1),
    ] {
        let (found, count, tops) = cycles(&crates.join(name).join("src"));
        assert!(
            count >= least_paths && tops >= least_tops,
            "{name}: the test found too few imports to judge: {count} paths, {tops} modules"
        );
        assert!(found.is_empty(), "{name}: import cycles {found:#?}");
    }
}

#[test]
fn a_cycle_is_found_in_uses_paths_and_macros() {
    let write = |dir: &Path, files: &[(&str, &str)]| {
        for (name, text) in files {
            let path = dir.join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
    };
    let judge = |files: &[(&str, &str)]| {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), files);
        cycles(dir.path()).0
    };
    let lib = (
        "lib.rs",
        "mod a;\nmod b;\n#[path = \"c_file.rs\"]\nmod c;\n",
    );
    let a = ("a.rs", "mod x;\nmod y;\npub struct A;\n");
    // One way only: no cycle.
    let one_way = judge(&[
        lib,
        a,
        ("a/x.rs", "pub use super::y::Y as Z;\n"),
        ("a/y.rs", "pub struct Y;\n"),
        ("b.rs", "use crate::{a::A, c};\n"),
        (
            "c_file.rs",
            "pub fn f() {}\n#[cfg(test)]\nmod tests { use crate::b; }\n",
        ),
    ]);
    assert_eq!(one_way, Vec::<String>::new());
    // Between top-level modules, through a group, a `#[path]` file and an expression.
    let top = judge(&[
        lib,
        a,
        ("a/x.rs", ""),
        ("a/y.rs", ""),
        ("b.rs", "use crate::{a::A, c};\n"),
        (
            "c_file.rs",
            "pub fn f() -> usize { std::mem::size_of::<super::b::B>() }\n",
        ),
    ]);
    assert_eq!(top, ["between the top-level modules: b -> c -> b"]);
    // Inside a folder, through a re-export and a macro's input.
    let inner = judge(&[
        lib,
        a,
        ("a/x.rs", "pub use super::y::Y as Z;\npub struct X;\n"),
        (
            "a/y.rs",
            "pub struct Y;\nfn f() { assert!(matches!(crate::a::x::X, _)); }\n",
        ),
        ("b.rs", ""),
        ("c_file.rs", ""),
    ]);
    assert_eq!(inner, ["inside a/: x -> y -> x"]);
}
