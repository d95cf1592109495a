//! `schema check` (the live database against the mounted resources), `make-migrations` (the
//! next migration of the model-first resources) and `print-indexes` (the SQL of the declared
//! indexes).

use super::database::connect;
use super::{BoxError, Shared};
use crate::api::Api;
use crate::config::{Config, Secret};
use crate::db::{Database, DbOptions, Target};
use crate::migrations::MigrationReport;
use std::path::Path;

/// One `table.column: what differs` line per difference between the database and the
/// mounted resources; the database is opened, not migrated.
///
/// # Errors
///
/// Bad configuration, an unreachable database, or a catalog query that failed.
pub(crate) async fn schema_drift(shared: &Shared, config: Config) -> Result<Vec<String>, BoxError> {
    let db = connect(&config).await?;
    let api = (shared.build)(config, db)?;
    let drifts = api.check_schema().await?;
    Ok(drifts.iter().map(ToString::to_string).collect())
}

/// The `CREATE INDEX` (or, with `down`, `DROP INDEX`) statement of every index the mounted
/// resources declare, without touching a database (see [`scratch_api`]).
///
/// # Errors
///
/// Bad configuration, or a blueprint that cannot be mounted.
pub(crate) async fn index_statements(
    shared: &Shared,
    config: Config,
    down: bool,
) -> Result<Vec<String>, BoxError> {
    let api = scratch_api(shared, config).await?;
    Ok(api
        .declared_indexes()
        .iter()
        .map(|spec| {
            if down {
                spec.drop_sql()
            } else {
                spec.create_sql()
            }
        })
        .collect())
}

/// Writes the next migration of `dir` for the model-first resources the application mounts
/// (see [`crate::migrations::make_migrations`]), without touching the application's database.
///
/// # Errors
///
/// Bad configuration, a blueprint that cannot be mounted, a malformed name, migrations in
/// `dir` that fail, or a file that cannot be read or written.
pub(crate) async fn make_migrations(
    shared: &Shared,
    config: Config,
    dir: &Path,
    name: &str,
) -> Result<MigrationReport, BoxError> {
    let api = scratch_api(shared, config).await?;
    Ok(crate::migrations::make_migrations(&api, dir, name)?)
}

/// The application's API built over a private in-memory database and a placeholder signing
/// key, so no file is opened, created or migrated: for the commands that only read what the
/// resources declare.
async fn scratch_api(shared: &Shared, config: Config) -> Result<Api, BoxError> {
    #[cfg(feature = "sqlite")]
    let target = Target::Sqlite(":memory:".into());
    // Without SQLite, a PostgreSQL pool that is never asked for a connection: its connections
    // are made lazily, so nothing is contacted.
    #[cfg(not(feature = "sqlite"))]
    let target = Target::Postgres("postgres://localhost/crudforge-scratch".into());
    let scratch = Database::open(target, DbOptions::default()).await?;
    // No token is ever signed here: a fixed key keeps `Api::new` from generating a key file.
    let config = config.with(|c| {
        c.db.database_uri = None;
        c.auth.jwt_secret_key = Some(Secret::new(
            "commands that sign nothing use this placeholder key",
        ));
    });
    (shared.build)(config, scratch)
}
