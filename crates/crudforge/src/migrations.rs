//! Migrations written for you from model-first resources (`#[resource(model_first)]`), and
//! run from a folder: the library side of the `make-migrations` command.
//!
//! [`make_migrations`] compares the tables the resources mounted on an [`Api`] declare with
//! the schema the migrations already in a folder build, and writes the next migration for
//! both backends; `crudforge::embed_migrations!` embeds the folder into the binary (see
//! [database.md](https://github.com/crudforge/crudforge/blob/main/docs/database.md), "Migrations written for you"). [`ModelTable`] and its parts describe a
//! model-first resource's table (`Resource::MODEL`), from which the migrations are written.

use crate::api::Api;
use std::path::Path;

pub use crate::db::ddl::{ForeignKey, ModelColumn, ModelTable, OnDelete, SqlValue};
use crate::db::migrations_gen::make_migrations_searching;
pub use crate::db::migrations_gen::{
    run_migration_dir, MakeMigrationsError, MigrationReport, Todo,
};
pub use crate::dialect::ColumnType;

/// Writes the next migration of `dir` for the model-first resources mounted on `api`
/// ([`Api::model_tables`]): in `<dir>/sqlite/<version>_<name>/` and
/// `<dir>/postgres/<version>_<name>/`, each with `up.sql` and `down.sql`, the new tables,
/// added columns and added indexes, and the full-text index of every searchable resource
/// mounted (`#[resource(search(...))]`, model-first or not) that the folder lacks; and rewrites `<dir>/migrations.lock`, the manifest
/// `embed_migrations!` includes. Changes it cannot write safely (renames, type or nullability
/// changes, drops, a NOT NULL column without a default) are in the report's
/// [`todo`](MigrationReport::todo), with the SQL to review, and never written. Nothing to
/// write: no folder, and the report says so (its `Display` is what a command prints).
///
/// It reads no database: the present schema is what the folder's SQLite migrations build on a
/// scratch in-memory database. The tables of resources over a hand-written `table!` are left
/// out (their search indexes are not).
///
/// # Errors
///
/// A `name` that is not lower-case letters, digits and `_`; migrations in `dir` that fail;
/// a file that cannot be read or written.
pub fn make_migrations(
    api: &Api,
    dir: &Path,
    name: &str,
) -> Result<MigrationReport, MakeMigrationsError> {
    make_migrations_searching(&api.model_tables(), &api.search_indexes(), dir, name)
}
