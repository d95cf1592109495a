//! Procedural macros of crudforge: `#[derive(Resource)]`.
//!
//! Use them through the `crudforge` crate, which re-exports them; generated code names runtime
//! items through `::crudforge::__private`, so applications need no extra dependencies to compile
//! the expansion.

mod aggregates;
mod ast;
mod attr;
mod ctxt;
#[cfg(test)]
mod documented_keys;
mod embed;
mod expand;
mod model_first;
mod relations;
mod rule_exprs;
mod symbol;
mod valid;

use proc_macro::TokenStream;

/// Generates CRUD endpoints for a Diesel model. See `crudforge::Resource` and
/// [the resources guide](https://github.com/crudforge/crudforge/blob/main/docs/resources.md)
/// for the complete guide.
///
/// The model derives Diesel's `Queryable` and `Selectable` for a `table!` whose UUID, timestamp
/// and JSON columns use crudforge's portable SQL types, and has `id: uuid::Uuid`,
/// `created_at` and `updated_at: chrono::DateTime<chrono::Utc>` fields.
///
/// Generated: `<Name>Create` (POST body), `<Name>Update` (PATCH body, every member optional),
/// `<Name>Filter` (the list parameters, as an extractor),
/// `<Name>Response` (the model without write-only fields), an implementation of
/// `crudforge::Resource` (so `<Name>::blueprint("/api/critters/")` works), and an entry in the
/// registry of resources by name.
///
/// Struct attributes, in `#[resource(...)]`:
///
/// | attribute | meaning |
/// |---|---|
/// | `table = path` | the Diesel table (default: `#[diesel(table_name = ...)]`) |
/// | `name = "Name"` | the resource name in operation ids (default: the struct's name) |
/// | `rules = expr` | the resource's permission rules, a `crudforge::perms::Rules` value (default: signed-in users may do everything, admins always) |
/// | `rules(read = "...", update = "...", delete = "...", write = "...", create = "...")` | the permission rules as expressions in the `filter` grammar with the caller's values (`owner_id = @me`); a kind left out lets signed-in callers in; not together with `rules = expr`. Member rules: `update(state, message) = "..."` and `create(state) = "..."`, where `@new.state` is the value a write sends |
/// | `crate = "path"` | where the runtime crate is (default: `::crudforge`) |
/// | `index("col", ...)` | an index the resource's queries need, columns in order, each a field, as strings (repeatable; `Resource::INDEXES`, checked when the API starts) |
/// | `unique("col", "col", ...)` | a composite unique constraint: no two rows share the values of all its members (two or more fields, as strings; repeatable; `Resource::UNIQUES`). A unique index `<table>_<col>_<col>_key` enforces it: model-first migrations create it, `print-indexes` prints it, the schema check reports it missing; a write that breaks it is a 409 naming every member |
/// | `search("col", ...)` | full-text search: the text members (at most four, as strings, the one that weighs most first) that `q=` looks in on the list, the export, aggregates and the feed, within what the caller may read; ranked best first without `sort` (`Resource::SEARCH`). `make-migrations` writes the index; the schema check reports it missing |
/// | `model_first` | the struct declares the table: the derive writes its `table!` (named by `#[diesel(table_name = ...)]`) and `Resource::MODEL`, from which `crudforge::migrations::make_migrations` writes migrations |
/// | `soft_delete` | DELETE keeps the row and sets its `deleted_at`, a required `Option<chrono::DateTime<chrono::Utc>>` field (read-only, filterable); reads and writes see live rows only, administrators list deleted ones with `include_deleted=true` and restore them (`POST <prefix><id>/restore/`, `restore<Name>`) |
/// | `scope(name = "expression", ...)` | named filters clients ask for with `?scope=name`, each a condition in the `filter` grammar where `now` and `today` are the server's clock (repeatable) |
/// | `has_many(name = Target, key = "field")` | a has-many relation `name`: the `Target` items whose UUID field `field` holds this item's id (repeatable; `expand=name`, filters `name.member=...`) |
///
/// Field attributes, in `#[resource(...)]`:
///
/// | attribute | meaning |
/// |---|---|
/// | `id` | the primary key (default: the field named `id`) |
/// | `read_only` | returned but never written by clients (`id`, `created_at`, `updated_at` always are) |
/// | `write_only` | written but never returned nor filterable (secrets) |
/// | `skip` | loaded from the table but absent from the API |
/// | `filter = false` | not usable in filters or `sort` |
/// | `max_len = N` | strings of at most N characters (422 otherwise) |
/// | `min_len = N` | strings of at least N characters |
/// | `min = N`, `max = N` | numbers within the bounds (inclusive) |
/// | `pattern = "regex"` | strings the regular expression matches (anywhere, unless anchored) |
/// | `one_of = [..]` | one of the listed strings or integers (`enum` in the OpenAPI schema) |
/// | `validate = path` | the application's own check, `fn(&T) -> Result<(), impl Display>` |
/// | `email` | must look like an e-mail address; a user model's (mounted with `UserBlueprint`) are stored normalized |
/// | `default = expr` | value when a POST body omits the member |
/// | `password` | plaintext in POST/PATCH bodies, checked against the password policy (`PASSWORD_MIN_LENGTH`), stored as a bcrypt hash, never returned nor filterable |
/// | `unique` | a unique index backs the column: the field may serve as a blueprint's `res_id` (model-first: `UNIQUE` in the DDL) |
/// | `references = "table"` | model-first: a foreign key to `table(id)` (`"table.column"` for another column) |
/// | `on_delete = "..."` | with `references`: `"restrict"` (default: a referenced row cannot be deleted, 409), `"cascade"` or `"set_null"` |
/// | `read = admin`, `read = owner(field)`, `read = path` | who may read the member besides administrators: nobody, the user whose id the row's `field` holds, or the callers a `fn(Option<&CurrentUser>) -> bool` accepts |
/// | `set = me`, `set = now`, `set = path` | the server fills the member on create (the caller's id, the time of the create, or what a `fn(&HookCtx) -> T` gives); clients never send it |
/// | `create_only` | clients send the member on create and never change it (a PATCH that sends it is 422) |
/// | `file(max_size = "5 MiB", types = [..])` | the member (an `Option<crudforge::files::File>`) holds an uploaded file of at most `max_size` of one of the media `types`; `max_count = N` makes it an `Option<FileList>` of at most N files, `thumbs = ["WxH", ..]` offers thumbnails (feature `files`) |
/// | `aggregate(none)`, `aggregate(group_by, sum, ..)` | what aggregates (`GET <prefix>aggregate/`) may do with the member instead of its type's defaults: uses among `group_by`, `count_distinct`, `sum`, `avg`, `min`, `max` |
/// | `belongs_to(Target)`, `belongs_to(Target, name = "rel")` | the UUID field holds a `Target` item's id: a belongs-to relation named after the field without `_id` (`expand=rel`, filters `rel.member=...`, `sort=rel.member`) |
#[proc_macro_derive(Resource, attributes(resource))]
pub fn derive_resource(input: TokenStream) -> TokenStream {
    derive_resource_inner(input.into()).into()
}

/// Embeds an application's migration folder into the binary, both backends, as a
/// `crudforge::db::AppMigrations`: `const MIGRATIONS: AppMigrations =
/// crudforge::embed_migrations!("migrations");` reads `<dir>/sqlite/*/` and
/// `<dir>/postgres/*/` (the path is relative to the crate's `Cargo.toml`) and includes
/// `<dir>/migrations.lock`, the manifest `make-migrations` rewrites, so that a new folder is
/// noticed by the build without a `build.rs`. See
/// [the database guide](https://github.com/crudforge/crudforge/blob/main/docs/database.md).
#[proc_macro]
pub fn embed_migrations(input: TokenStream) -> TokenStream {
    embed::embed(input.into()).into()
}

fn derive_resource_inner(input: proc_macro2::TokenStream) -> proc_macro2::TokenStream {
    let input: syn::DeriveInput = match syn::parse2(input) {
        Ok(i) => i,
        Err(e) => return e.to_compile_error(),
    };
    let cx = ctxt::Ctxt::default();
    let model = ast::parse(&cx, &input);
    if let Some(m) = &model {
        valid::check(&cx, m);
        model_first::check(&cx, m);
    }
    match (cx.check(), model) {
        (Ok(()), Some(m)) => {
            let out = expand::expand(&m);
            if std::env::var_os("CRUDFORGE_MACRO_DEBUG").is_some() {
                eprintln!("{out}");
            }
            out
        }
        (Err(e), _) => {
            let mut out = e.to_compile_error();
            out.extend(expand::fallback(&input.ident, &input.vis));
            out
        }
        (Ok(()), None) => expand::fallback(&input.ident, &input.vis),
    }
}

#[cfg(test)]
mod tests {
    use super::derive_resource_inner;
    use quote::quote;

    #[test]
    fn a_valid_model_expands_to_the_trait_impl() {
        let out = derive_resource_inner(quote! {
            #[diesel(table_name = critters)]
            pub struct Critter {
                pub id: Uuid,
                pub created_at: DateTime<Utc>,
                pub updated_at: DateTime<Utc>,
                #[resource(max_len = 100)]
                pub name: String,
            }
        })
        .to_string();
        assert!(out.contains("CritterCreate"));
        assert!(out.contains("impl :: crudforge :: crud :: Resource for Critter"));
        assert!(!out.contains("compile_error"));
    }

    #[test]
    fn a_model_first_model_declares_its_table_and_model() {
        let out = derive_resource_inner(quote! {
            #[diesel(table_name = books)]
            #[resource(model_first)]
            pub struct Book {
                pub id: Uuid,
                pub created_at: DateTime<Utc>,
                pub updated_at: DateTime<Utc>,
                #[resource(max_len = 100, default = "x")]
                pub title: String,
                #[resource(references = "authors", on_delete = "set_null")]
                pub author_id: Option<Uuid>,
            }
        })
        .to_string();
        assert!(!out.contains("compile_error"), "{out}");
        assert!(out.contains("diesel :: table !"), "{out}");
        assert!(
            out.contains("author_id -> :: crudforge :: __private :: diesel :: sql_types :: Nullable < :: crudforge :: sql_types :: PortableUuid >"),
            "{out}"
        );
        assert!(out.contains("const MODEL"), "{out}");
        assert!(out.contains("OnDelete :: SetNull"), "{out}");
        assert!(out.contains("SqlValue :: Text (\"x\")"), "{out}");
        let schema_first = derive_resource_inner(quote! {
            #[diesel(table_name = books)]
            pub struct Book {
                pub id: Uuid,
                pub created_at: DateTime<Utc>,
                pub updated_at: DateTime<Utc>,
            }
        })
        .to_string();
        assert!(!schema_first.contains("table !") && !schema_first.contains("const MODEL"));
    }

    #[test]
    fn every_mistake_is_reported_at_once() {
        let out = derive_resource_inner(quote! {
            pub struct Critter {
                #[resource(read_only, write_only, colour = "red")]
                pub name: String,
            }
        })
        .to_string();
        assert!(out.matches("compile_error").count() >= 4, "{out}");
        assert!(out.contains("CritterCreate"), "fallback items are emitted");
    }
}
