//! `embed_migrations!`: an application's migration folder, both backends, embedded into the
//! binary as a `crudforge::db::AppMigrations`.
//!
//! rustc reruns a macro only when a file the expansion includes changes, so a macro that
//! lists a folder does not notice a new subfolder. This one includes every `up.sql` and
//! `down.sql` it embeds and also the folder's manifest (`migrations.lock`), which
//! `make-migrations` rewrites whenever the folders change: the rewrite makes the build expand
//! the macro again, and the new folder is read.

use proc_macro2::{Span, TokenStream};
use quote::quote;
use std::path::{Path, PathBuf};
use syn::LitStr;

/// The manifest's name (the runtime's `migrations::MANIFEST`).
const MANIFEST: &str = "migrations.lock";

/// The expansion of `embed_migrations!("dir")`, or a compile error naming the problem.
pub(crate) fn embed(input: TokenStream) -> TokenStream {
    match expand(input) {
        Ok(out) => out,
        Err(e) => e.to_compile_error(),
    }
}

fn expand(input: TokenStream) -> syn::Result<TokenStream> {
    let help = "help: write `crudforge::embed_migrations!(\"migrations\")`, the folder that holds `sqlite/` and `postgres/`, relative to Cargo.toml";
    let lit: LitStr = syn::parse2(input.clone()).map_err(|_| {
        syn::Error::new_spanned(
            &input,
            format!("expected the migration folder in quotes\n{help}"),
        )
    })?;
    let root = std::env::var_os("CARGO_MANIFEST_DIR")
        .map(PathBuf::from)
        .unwrap_or_default();
    let dir = root.join(lit.value());
    if !dir.is_dir() {
        return Err(syn::Error::new(
            lit.span(),
            format!(
                "no migration folder at {}\nhelp: run `make-migrations` to write the first migration, or create the folder with `sqlite/` and `postgres/` in it",
                dir.display()
            ),
        ));
    }
    let sqlite = backend(&dir.join("sqlite"), lit.span())?;
    let postgres = backend(&dir.join("postgres"), lit.span())?;
    let manifest = dir.join(MANIFEST);
    if !manifest.is_file() {
        // Without it, nothing would make the build expand this macro again when a folder is
        // added.
        return Err(syn::Error::new(
            lit.span(),
            format!(
                "no {MANIFEST} in {}: the build would not notice new migration folders\nhelp: run `make-migrations`, which writes it (an empty file will do until then)",
                dir.display()
            ),
        ));
    }
    let manifest = manifest.display().to_string();
    let manifest = quote!(
        const _: &str = ::core::include_str!(#manifest);
    );
    Ok(quote! {
        {
            #manifest
            ::crudforge::db::AppMigrations {
                sqlite: #sqlite,
                postgres: #postgres,
            }
        }
    })
}

/// The `EmbeddedMigrations` of one backend's folder (none when it does not exist).
fn backend(dir: &Path, span: Span) -> syn::Result<TokenStream> {
    let m = quote!(::crudforge::__private::diesel_migrations);
    let mut folders: Vec<PathBuf> = Vec::new();
    if dir.is_dir() {
        let entries = std::fs::read_dir(dir)
            .map_err(|e| syn::Error::new(span, format!("cannot read {}: {e}", dir.display())))?;
        for entry in entries.flatten() {
            let path = entry.path();
            let hidden = entry.file_name().to_string_lossy().starts_with('.');
            if path.is_dir() && !hidden {
                folders.push(path);
            }
        }
    }
    folders.sort();
    let mut items = Vec::new();
    for folder in folders {
        let name = folder
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let version_ok = name
            .split('_')
            .next()
            .is_some_and(|v| !v.is_empty() && v.chars().all(|c| c.is_ascii_digit() || c == '-'));
        if !version_ok {
            return Err(syn::Error::new(
                span,
                format!(
                    "migration folder {} does not start with a version\nhelp: name it `<digits>_<name>`, e.g. `20260101000000_create_books`",
                    folder.display()
                ),
            ));
        }
        let up = folder.join("up.sql");
        if !up.is_file() {
            return Err(syn::Error::new(
                span,
                format!(
                    "migration folder {} has no up.sql\nhelp: every migration folder holds up.sql (and down.sql)",
                    folder.display()
                ),
            ));
        }
        let up = up.display().to_string();
        let down = folder.join("down.sql");
        let down = if down.is_file() {
            let down = down.display().to_string();
            quote!(::core::option::Option::Some(::core::include_str!(#down)))
        } else {
            quote!(::core::option::Option::None)
        };
        let metadata = std::fs::read_to_string(folder.join("metadata.toml")).unwrap_or_default();
        let in_transaction = !metadata
            .lines()
            .any(|l| l.replace(' ', "") == "run_in_transaction=false");
        items.push(quote! {
            #m::EmbeddedMigration::new(
                ::core::include_str!(#up),
                #down,
                #m::EmbeddedName::new(#name),
                #m::TomlMetadataWrapper::new(#in_transaction),
            )
        });
    }
    Ok(quote!(#m::EmbeddedMigrations::new(&[#(#items),*])))
}
