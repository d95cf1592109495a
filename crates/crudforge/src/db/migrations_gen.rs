//! Migrations written from model-first resources: the difference between the tables the
//! models declare ([`ModelTable`]) and the schema the migrations already present build, as a
//! new migration folder per backend, plus the manifest that `crudforge::embed_migrations!`
//! includes so that a new folder reaches the binary without a `build.rs`.
//!
//! The present schema is found by applying the library's migrations and the folder's SQLite
//! migrations to a scratch in-memory SQLite database and reading its catalog with the drift
//! check's queries (`dialect::table_columns`, `dialect::index_columns`) and its comparison of
//! one field with its column (`schema_check::field_drift`). New tables, added columns and added
//! indexes (composite unique constraints as unique indexes) are written; what cannot be written safely (a column that would be added NOT NULL
//! without a default, a type or nullability change, a dropped column, a possible rename) is
//! returned as a [`Todo`] with the SQL to review, never written.
//!
//! Applications reach it through `crudforge::migrations` (the workspace's tests through
//! `crudforge::__bench`); this path is hidden from the documentation.
#![doc(hidden)]
// Without SQLite only `run_migration_dir` remains: the generator's pure steps are unused.
#![cfg_attr(not(feature = "sqlite"), allow(dead_code, unused_imports))]

mod folder;

use super::ddl::{ModelColumn, ModelTable};
use super::indexes::{self, ident, IndexColumn, IndexSpec};
use super::schema_check::{self, Column, SchemaDrift};
use super::search::SearchIndex;
use super::{functions, Database, DbError};
use crate::dialect::{self, Backend};
use diesel::connection::SimpleConnection as _;
use diesel::sql_types::Text;
#[cfg(feature = "sqlite")]
use diesel::sqlite::SqliteConnection;
use diesel::{Connection as _, RunQueryDsl as _};
use diesel_migrations::{FileBasedMigrations, MigrationHarness as _};
use folder::{backend_dir, next_version, write_manifest};
use std::fmt;
use std::path::{Path, PathBuf};

/// The file, beside the `sqlite` and `postgres` folders, that lists every migration folder:
/// the generator rewrites it, and `crudforge::embed_migrations!` includes it, so the compiler
/// sees a change when a folder is added.
pub const MANIFEST: &str = "migrations.lock";

/// What [`make_migrations_for`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct MigrationReport {
    /// The new folder's name (`<version>_<name>`), when one was written.
    pub folder: Option<String>,
    /// The folders written: `<dir>/sqlite/<folder>` and `<dir>/postgres/<folder>`.
    pub written: Vec<PathBuf>,
    /// One line per change written (`books: new table`, `books.isbn: new column`, ...).
    pub changes: Vec<String>,
    /// What differs but was not written, each with the SQL to review.
    pub todo: Vec<Todo>,
}

/// A difference the generator does not write: a change that could lose data or needs a
/// decision (a rename, a type or nullability change, a drop, a NOT NULL column without a
/// default).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Todo {
    /// One line, `table.column: what differs`.
    pub what: String,
    /// The SQL that would make the change on SQLite, to review and adapt.
    pub sqlite: String,
    /// The SQL that would make the change on PostgreSQL.
    pub postgres: String,
}

impl fmt::Display for MigrationReport {
    /// The report as a command prints it: the folder written and its changes, or that there
    /// was nothing to write; then each to-do with its SQL.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.folder {
            Some(folder) => {
                writeln!(f, "wrote migration {folder}:")?;
                for path in &self.written {
                    writeln!(f, "  {}", path.display())?;
                }
                for change in &self.changes {
                    writeln!(f, "  + {change}")?;
                }
            }
            None => writeln!(
                f,
                "no changes: the migrations already create what the models declare; nothing written"
            )?,
        }
        if !self.todo.is_empty() {
            writeln!(
                f,
                "to do by hand ({} not written; review the SQL, then add it to a migration):",
                self.todo.len()
            )?;
            for todo in &self.todo {
                writeln!(f, "  - {}", todo.what)?;
                writeln!(
                    f,
                    "    SQLite:     {}",
                    todo.sqlite.replace('\n', "\n                ")
                )?;
                writeln!(
                    f,
                    "    PostgreSQL: {}",
                    todo.postgres.replace('\n', "\n                ")
                )?;
            }
        }
        Ok(())
    }
}

/// Why no migration could be written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MakeMigrationsError {
    /// The name is not a plain lower-case name.
    #[error("migration name {0:?}: use lower-case letters, digits and `_`, e.g. add_books")]
    BadName(String),
    /// The migrations present do not apply to an empty SQLite database.
    #[error("the migrations in {dir} do not apply: {message}")]
    Existing {
        /// The folder of SQLite migrations.
        dir: PathBuf,
        /// What failed.
        message: String,
    },
    /// Reading the folder or writing the migration failed.
    #[error("migration folder: {0}")]
    Io(#[from] std::io::Error),
    /// This build leaves SQLite out (crudforge's `sqlite` feature), which the generator needs:
    /// it reads the schema the migrations build from a scratch in-memory SQLite database.
    #[error(
        "writing migrations needs crudforge's `sqlite` feature: the schema the migrations \
         build is read from a scratch in-memory SQLite database"
    )]
    SqliteNotCompiled,
}

/// One change that is written: its statements up and down, per backend.
struct Step {
    line: String,
    up: [Vec<String>; 2],
    down: [Vec<String>; 2],
}

const BACKENDS: [Backend; 2] = [Backend::Sqlite, Backend::Postgres];

/// The same statements on both backends.
fn both(sql: String) -> [Vec<String>; 2] {
    [vec![sql.clone()], vec![sql]]
}

/// Writes into `dir` (`<dir>/sqlite/<version>_<name>/` and `<dir>/postgres/<version>_<name>/`,
/// each with `up.sql` and `down.sql`) the migration that takes the schema the migrations in
/// `dir` build to the one `models` declare, and rewrites the [`MANIFEST`]. With nothing to
/// write, no folder is written (the manifest is still brought up to date). The version is the
/// current UTC time (`YYYYMMDDHHMMSS`), or one more than the newest folder's when that is
/// later.
///
/// # Errors
///
/// A bad `name`, migrations in `dir` that fail on SQLite, or a file that cannot be read or
/// written.
pub fn make_migrations_for(
    models: &[&'static ModelTable],
    dir: &Path,
    name: &str,
) -> Result<MigrationReport, MakeMigrationsError> {
    make_migrations_searching(models, &[], dir, name)
}

/// [`make_migrations_for`], also writing the full-text index of each of `searches` that the
/// folder's migrations do not build (or build over other members), on a table that exists or
/// that this migration creates. The index is derived from the rows, so one over other members
/// is dropped and made anew.
///
/// # Errors
///
/// As [`make_migrations_for`].
pub(crate) fn make_migrations_searching(
    models: &[&'static ModelTable],
    searches: &[SearchIndex],
    dir: &Path,
    name: &str,
) -> Result<MigrationReport, MakeMigrationsError> {
    let plain = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if !plain {
        return Err(MakeMigrationsError::BadName(name.to_owned()));
    }
    write_migration(models, searches, dir, name)
}

/// [`make_migrations_for`] without SQLite: refused.
#[cfg(not(feature = "sqlite"))]
fn write_migration(
    _models: &[&'static ModelTable],
    _searches: &[SearchIndex],
    _dir: &Path,
    _name: &str,
) -> Result<MigrationReport, MakeMigrationsError> {
    Err(MakeMigrationsError::SqliteNotCompiled)
}

/// [`make_migrations_for`] once the name is checked.
#[cfg(feature = "sqlite")]
fn write_migration(
    models: &[&'static ModelTable],
    searches: &[SearchIndex],
    dir: &Path,
    name: &str,
) -> Result<MigrationReport, MakeMigrationsError> {
    let mut conn = scratch(dir)?;
    let mut steps: Vec<Step> = Vec::new();
    let mut todo: Vec<Todo> = Vec::new();
    let mut new_tables: Vec<&'static ModelTable> = Vec::new();
    for &model in models {
        let columns = load_columns(&mut conn, model.table, dir)?;
        if columns.is_empty() {
            new_tables.push(model);
        } else {
            diff_table(&mut conn, model, &columns, dir, &mut steps, &mut todo)?;
        }
    }
    for model in in_reference_order(&new_tables) {
        let mut up = [Vec::new(), Vec::new()];
        for (i, backend) in BACKENDS.into_iter().enumerate() {
            up[i] = model.create_sql(backend);
        }
        steps.push(Step {
            line: format!("{}: new table", model.table),
            up,
            down: both(model.drop_sql()),
        });
    }
    for index in searches {
        if let Some(step) = search_step(&mut conn, index, &new_tables, dir)? {
            steps.push(step);
        }
    }
    let mut report = MigrationReport {
        todo,
        ..MigrationReport::default()
    };
    if !steps.is_empty() {
        let folder = format!("{}_{name}", next_version(dir)?);
        for (i, backend) in BACKENDS.into_iter().enumerate() {
            let path = dir.join(backend_dir(backend)).join(&folder);
            std::fs::create_dir_all(&path)?;
            std::fs::write(
                path.join("up.sql"),
                up_sql(&steps, &report.todo, i, backend),
            )?;
            std::fs::write(path.join("down.sql"), down_sql(&steps, i))?;
            report.written.push(path);
        }
        report.changes = steps.iter().map(|s| s.line.clone()).collect();
        report.folder = Some(folder);
    }
    write_manifest(dir)?;
    Ok(report)
}

/// Runs the library's pending migrations, then the pending ones of `<dir>/sqlite` or
/// `<dir>/postgres` (the database's backend), read from disk; returns the versions applied.
/// For tools and tests: an application embeds its migrations with
/// `crudforge::embed_migrations!` and runs them with [`Database::run_migrations`].
///
/// # Errors
///
/// The database cannot be reached, the folder is not a migration folder, or a migration fails.
pub async fn run_migration_dir(db: &Database, dir: &Path) -> Result<Vec<String>, DbError> {
    let target = db.inner.target.clone();
    let backend = db.backend();
    let synchronous = db.inner.sqlite_synchronous;
    let path = dir.join(backend_dir(backend));
    let (tx, rx) = tokio::sync::oneshot::channel();
    std::thread::spawn(move || {
        let _ = tx.send(migrate_dir_blocking(backend, &target, synchronous, &path));
    });
    rx.await
        .map_err(|_| DbError::Migration("the migration thread stopped".into()))?
}

/// The work of [`run_migration_dir`], on a thread of its own.
#[cfg_attr(not(feature = "sqlite"), allow(unused_variables))]
fn migrate_dir_blocking(
    backend: Backend,
    target: &str,
    synchronous: crate::config::SqliteSynchronous,
    path: &Path,
) -> Result<Vec<String>, DbError> {
    let failed = |e: diesel_migrations::MigrationError| DbError::Migration(e.to_string());
    let source = if path.is_dir() {
        Some(FileBasedMigrations::from_path(path).map_err(failed)?)
    } else {
        None
    };
    fn apply<B: diesel::backend::Backend>(
        conn: &mut impl diesel_migrations::MigrationHarness<B>,
        library: diesel_migrations::EmbeddedMigrations,
        source: Option<FileBasedMigrations>,
    ) -> Result<Vec<String>, DbError> {
        let run = |e: Box<dyn std::error::Error + Send + Sync>| DbError::Migration(e.to_string());
        let mut applied: Vec<String> = conn
            .run_pending_migrations(library)
            .map_err(run)?
            .into_iter()
            .map(|v| v.to_string())
            .collect();
        if let Some(source) = source {
            applied.extend(
                conn.run_pending_migrations(source)
                    .map_err(run)?
                    .into_iter()
                    .map(|v| v.to_string()),
            );
        }
        Ok(applied)
    }
    match backend {
        #[cfg(feature = "sqlite")]
        Backend::Sqlite => {
            let mut conn = SqliteConnection::establish(target)?;
            conn.batch_execute(&super::sqlite_pragmas(synchronous))?;
            functions::register_sqlite_functions(&mut conn)?;
            apply(&mut conn, super::SQLITE_MIGRATIONS, source)
        }
        #[cfg(feature = "postgres")]
        Backend::Postgres => {
            use diesel_async::async_connection_wrapper::AsyncConnectionWrapper;
            let mut conn = <AsyncConnectionWrapper<diesel_async::AsyncPgConnection> as diesel::Connection>::establish(target)?;
            let lock = super::MIGRATION_LOCK_KEY;
            diesel::sql_query(format!("SELECT pg_advisory_lock({lock})")).execute(&mut conn)?;
            let result = apply(&mut conn, super::POSTGRES_MIGRATIONS, source);
            let _ =
                diesel::sql_query(format!("SELECT pg_advisory_unlock({lock})")).execute(&mut conn);
            result
        }
        // Never reached: a database of a backend not compiled in is never opened.
        #[cfg(not(all(feature = "sqlite", feature = "postgres")))]
        _ => Err(DbError::Migration(format!(
            "{backend:?} is not compiled in"
        ))),
    }
}

/// A scratch in-memory SQLite database with the library's migrations and those of
/// `<dir>/sqlite` applied.
#[cfg(feature = "sqlite")]
fn scratch(dir: &Path) -> Result<SqliteConnection, MakeMigrationsError> {
    let sqlite_dir = dir.join("sqlite");
    let fail = |message: String| MakeMigrationsError::Existing {
        dir: sqlite_dir.clone(),
        message,
    };
    let mut conn = SqliteConnection::establish(":memory:").map_err(|e| fail(e.to_string()))?;
    conn.batch_execute("PRAGMA foreign_keys = ON;")
        .map_err(|e| fail(e.to_string()))?;
    functions::register_sqlite_functions(&mut conn).map_err(|e| fail(e.to_string()))?;
    conn.run_pending_migrations(super::SQLITE_MIGRATIONS)
        .map_err(|e| fail(e.to_string()))?;
    if sqlite_dir.is_dir() {
        let source =
            FileBasedMigrations::from_path(&sqlite_dir).map_err(|e| fail(e.to_string()))?;
        conn.run_pending_migrations(source)
            .map_err(|e| fail(e.to_string()))?;
    }
    Ok(conn)
}

/// The step that makes `index` when the scratch database lacks it (or indexes other members
/// there), on a table that exists there or is among `new_tables`.
#[cfg(feature = "sqlite")]
fn search_step(
    conn: &mut SqliteConnection,
    index: &SearchIndex,
    new_tables: &[&'static ModelTable],
    dir: &Path,
) -> Result<Option<Step>, MakeMigrationsError> {
    let present: Vec<String> = load_columns(conn, &SearchIndex::fts_table(index.table), dir)?
        .into_iter()
        .map(|c| c.column_name)
        .collect();
    if present
        .iter()
        .map(String::as_str)
        .eq(index.members.iter().copied())
    {
        return Ok(None);
    }
    let table_exists = new_tables.iter().any(|t| t.table == index.table)
        || !load_columns(conn, index.table, dir)?.is_empty();
    if !table_exists {
        return Ok(None);
    }
    let old: Vec<&str> = present.iter().map(String::as_str).collect();
    let mut up = [Vec::new(), Vec::new()];
    let mut down = [Vec::new(), Vec::new()];
    for (i, backend) in BACKENDS.into_iter().enumerate() {
        down[i] = SearchIndex::drop_sql(index.table, backend);
        if !old.is_empty() {
            up[i] = SearchIndex::drop_sql(index.table, backend);
            down[i].extend(SearchIndex::create(index.table, &old, backend));
        }
        up[i].extend(index.create_sql(backend));
    }
    let members = index.members.join(", ");
    Ok(Some(Step {
        line: if old.is_empty() {
            format!("{}: search index over ({members})", index.table)
        } else {
            format!(
                "{}: search index over ({members}), was ({})",
                index.table,
                old.join(", ")
            )
        },
        up,
        down,
    }))
}

/// The columns of `table` in the scratch database (empty: no such table).
#[cfg(feature = "sqlite")]
fn load_columns(
    conn: &mut SqliteConnection,
    table: &str,
    dir: &Path,
) -> Result<Vec<Column>, MakeMigrationsError> {
    diesel::sql_query(dialect::table_columns(Backend::Sqlite))
        .bind::<Text, _>(table)
        .load(conn)
        .map_err(|e| catalog(dir, e))
}

/// The indexes of `table` in the scratch database, by `sql` (all, or the unique ones).
#[cfg(feature = "sqlite")]
fn load_indexes(
    conn: &mut SqliteConnection,
    sql: &str,
    table: &str,
    dir: &Path,
) -> Result<indexes::Present, MakeMigrationsError> {
    let rows: Vec<IndexColumn> = diesel::sql_query(sql)
        .bind::<Text, _>(table)
        .load(conn)
        .map_err(|e| catalog(dir, e))?;
    Ok(indexes::group(rows))
}

fn catalog(dir: &Path, e: diesel::result::Error) -> MakeMigrationsError {
    MakeMigrationsError::Existing {
        dir: dir.join("sqlite"),
        message: format!("reading the schema they build: {}", DbError::from(e)),
    }
}

/// The steps and to-dos that take the existing `table` (its `columns`) to `model`.
#[cfg(feature = "sqlite")]
fn diff_table(
    conn: &mut SqliteConnection,
    model: &'static ModelTable,
    columns: &[Column],
    dir: &Path,
    steps: &mut Vec<Step>,
    todo: &mut Vec<Todo>,
) -> Result<(), MakeMigrationsError> {
    let added: Vec<&'static ModelColumn> = model
        .columns
        .iter()
        .filter(|c| !columns.iter().any(|col| col.column_name == c.name()))
        .collect();
    let gone: Vec<&Column> = columns
        .iter()
        .filter(|col| model.column(&col.column_name).is_none())
        .collect();
    let renamed = !added.is_empty() && !gone.is_empty();
    for col in &gone {
        todo.push(gone_column(model.table, col, &added, renamed));
    }
    for column in &added {
        match added_column(model.table, column, renamed) {
            Ok(step) => steps.push(step),
            Err(t) => todo.push(t),
        }
    }
    for column in model.columns {
        if added.iter().any(|a| a.name() == column.name()) {
            continue;
        }
        changed_column(model, column, columns, todo);
    }
    missing_indexes(conn, model, &added, dir, steps)
}

/// What to do about a column of the table that no field declares any more: drop it, or, when
/// other fields are new, perhaps rename it (left to the user either way).
fn gone_column(table: &str, col: &Column, added: &[&'static ModelColumn], renamed: bool) -> Todo {
    let c = ident(&col.column_name);
    let what = if renamed {
        let new: Vec<&str> = added.iter().map(|a| a.name()).collect();
        format!(
            "{table}.{}: no field any more, and {} {} new: a rename? (nothing written for either)",
            col.column_name,
            new.join(", "),
            if new.len() == 1 { "is" } else { "are" }
        )
    } else {
        format!("{table}.{}: no field any more (drop it?)", col.column_name)
    };
    let rename = added
        .first()
        .filter(|_| renamed)
        .map(|a| {
            format!(
                "ALTER TABLE {} RENAME COLUMN {c} TO {};\n-- or: ",
                ident(table),
                ident(a.name())
            )
        })
        .unwrap_or_default();
    let sql = format!("{rename}ALTER TABLE {} DROP COLUMN {c};", ident(table));
    Todo {
        what,
        sqlite: sql.clone(),
        postgres: sql,
    }
}

/// The step that adds a new field's column (and its unique index), or, when that cannot be
/// written safely (a possible rename, a `NOT NULL` column without a default), what the user
/// must decide.
fn added_column(table: &str, column: &ModelColumn, renamed: bool) -> Result<Step, Todo> {
    let add = |backend| {
        format!(
            "ALTER TABLE {} ADD COLUMN {};",
            ident(table),
            column.definition(backend, false)
        )
    };
    let needs_value = !column.field.nullable && column.default.is_none();
    if renamed || needs_value {
        let what = if renamed {
            format!(
                "{table}.{}: new column, while others are gone: a rename? (not written)",
                column.name()
            )
        } else {
            format!(
                "{table}.{}: new NOT NULL column without a default: existing rows need a value (give the field `#[resource(default = ...)]` or make it an Option)",
                column.name()
            )
        };
        return Err(Todo {
            what,
            sqlite: add(Backend::Sqlite),
            postgres: add(Backend::Postgres),
        });
    }
    let mut up = [vec![add(Backend::Sqlite)], vec![add(Backend::Postgres)]];
    let mut down = both(format!(
        "ALTER TABLE {} DROP COLUMN {};",
        ident(table),
        ident(column.name())
    ));
    if column.field.unique {
        let index = column.unique_index_sql(table);
        let drop = unique_index_drop(table, column);
        for i in 0..2 {
            up[i].push(index.clone());
            down[i].insert(0, drop.clone());
        }
    }
    Ok(Step {
        line: format!("{table}.{}: new column", column.name()),
        up,
        down,
    })
}

/// The steps that add the declared indexes, the unique indexes of existing unique fields (new
/// columns' unique indexes come with the column) and those of the composite unique
/// constraints, that the table does not have.
#[cfg(feature = "sqlite")]
fn missing_indexes(
    conn: &mut SqliteConnection,
    model: &'static ModelTable,
    added: &[&'static ModelColumn],
    dir: &Path,
    steps: &mut Vec<Step>,
) -> Result<(), MakeMigrationsError> {
    let table = model.table;
    let present = load_indexes(conn, dialect::index_columns(Backend::Sqlite), table, dir)?;
    for spec in model.index_specs() {
        if indexes::served(&present, spec.columns) {
            continue;
        }
        steps.push(index_step(spec));
    }
    let unique = load_indexes(conn, dialect::SQLITE_UNIQUE_INDEX_COLUMNS, table, dir)?;
    for spec in model.unique_specs() {
        if !indexes::served_unique(&unique, spec.columns) {
            steps.push(index_step(spec));
        }
    }
    for column in model.columns.iter().filter(|c| {
        c.field.unique
            && !c.primary_key
            && !added.iter().any(|a| a.name() == c.name())
            && !unique
                .iter()
                .any(|(_, cols)| *cols == [Some(c.name().to_owned())])
    }) {
        steps.push(Step {
            line: format!("{table}.{}: new unique index", column.name()),
            up: both(column.unique_index_sql(table)),
            down: both(unique_index_drop(table, column)),
        });
    }
    Ok(())
}

/// The statement that drops the unique index of `column` (named `<table>_<column>_key`).
fn unique_index_drop(table: &str, column: &ModelColumn) -> String {
    format!(
        "DROP INDEX IF EXISTS {};",
        ident(&format!("{table}_{}_key", column.name()))
    )
}

/// The step that adds a declared index, or the unique index of a composite unique constraint.
fn index_step(spec: IndexSpec) -> Step {
    Step {
        line: format!(
            "{}({}): new {}index",
            spec.table,
            spec.columns.join(", "),
            if spec.unique { "unique " } else { "" }
        ),
        up: both(spec.create_sql()),
        down: both(spec.drop_sql()),
    }
}

/// The to-dos of a column present in both: a nullability or type the drift check would
/// report (read on the scratch SQLite database), or an integer of another width.
fn changed_column(
    model: &'static ModelTable,
    column: &'static ModelColumn,
    columns: &[Column],
    todo: &mut Vec<Todo>,
) {
    let table = model.table;
    let name = column.name();
    let mut drifts = schema_check::field_drift(Backend::Sqlite, table, &column.field, columns);
    if let Some(col) = columns.iter().find(|c| c.column_name == name) {
        let integers = ["SMALLINT", "INTEGER", "BIGINT"];
        let declared = col.column_type.to_ascii_uppercase();
        let wanted = column.sql_type(Backend::Sqlite);
        if integers.contains(&declared.as_str())
            && integers.contains(&wanted.as_str())
            && declared != wanted
        {
            drifts.push(SchemaDrift::Type {
                table,
                column: name,
                kind: column.field.kind,
                found: col.column_type.clone(),
                expected: "another integer width",
            });
        }
    }
    for drift in drifts {
        let (what, change) = match &drift {
            SchemaDrift::Nullable { .. } => (
                format!("{drift} (make it NOT NULL once every row has a value)"),
                "SET NOT NULL".to_owned(),
            ),
            SchemaDrift::NotNull { .. } => (drift.to_string(), "DROP NOT NULL".to_owned()),
            SchemaDrift::Type { found, .. } => {
                let ty = column.sql_type(Backend::Postgres);
                (
                    format!(
                        "{table}.{name}: declared {found}, the field needs {} (a type change)",
                        column.sql_type(Backend::Sqlite)
                    ),
                    format!("TYPE {ty} USING {}::{ty}", ident(name)),
                )
            }
            _ => continue,
        };
        todo.push(Todo {
            what,
            sqlite: dialect::alter_column(
                Backend::Sqlite,
                &ident(table),
                &ident(name),
                &change,
                &model.create_table_sql(Backend::Sqlite),
            ),
            postgres: dialect::alter_column(
                Backend::Postgres,
                &ident(table),
                &ident(name),
                &change,
                "",
            ),
        });
    }
}

/// `tables` ordered so that each comes after the new tables it references (a cycle keeps
/// the given order).
fn in_reference_order(tables: &[&'static ModelTable]) -> Vec<&'static ModelTable> {
    let mut left: Vec<&'static ModelTable> = tables.to_vec();
    let mut out: Vec<&'static ModelTable> = Vec::new();
    while !left.is_empty() {
        let ready = left.iter().position(|t| {
            t.referenced_tables()
                .iter()
                .all(|r| !left.iter().any(|l| l.table == *r))
        });
        out.push(left.remove(ready.unwrap_or(0)));
    }
    out
}

/// `up.sql` for the backend at `i`: the steps in order, then the to-dos as comments.
fn up_sql(steps: &[Step], todo: &[Todo], i: usize, backend: Backend) -> String {
    let mut out =
        String::from("-- Written by crudforge's make-migrations from the mounted resources.\n");
    for step in steps {
        out.push_str(&format!("\n-- {}\n", step.line));
        for sql in &step.up[i] {
            out.push_str(sql);
            out.push('\n');
        }
    }
    if !todo.is_empty() {
        out.push_str("\n-- Not written (review, then add by hand):\n");
        for t in todo {
            let sql = match backend {
                Backend::Sqlite => &t.sqlite,
                Backend::Postgres => &t.postgres,
            };
            out.push_str(&format!("-- {}\n", t.what));
            for line in sql.lines() {
                out.push_str(&format!("--   {line}\n"));
            }
        }
    }
    out
}

/// `down.sql` for the backend at `i`: the steps undone in reverse order.
fn down_sql(steps: &[Step], i: usize) -> String {
    let mut out = String::from("-- Undoes up.sql, in reverse order.\n");
    for step in steps.iter().rev() {
        for sql in &step.down[i] {
            out.push_str(sql);
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bad_name_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["", "Add Books", "../x"] {
            assert!(matches!(
                make_migrations_for(&[], dir.path(), name),
                Err(MakeMigrationsError::BadName(_))
            ));
        }
    }
}
