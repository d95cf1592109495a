//! What the commands share about the database: the `.env` file, opening and migrating, and
//! connection errors that name the server without its credentials.

use super::BoxError;
use crate::config::Config;
use crate::db::{AppMigrations, Database, DbError};
use std::path::Path;

/// Loads `<dir>/.env`, if there is one, into the environment; variables already set keep
/// their values. Only that directory is read, never its parents: a `.env` somewhere above
/// the working directory (another user's, a checkout's) must not set `JWT_SECRET_KEY`.
///
/// # Errors
///
/// The file exists but cannot be read or has a malformed line.
pub(crate) fn load_dotenv(dir: &Path) -> Result<(), String> {
    let path = dir.join(".env");
    match dotenvy::from_path(&path) {
        Ok(()) => Ok(()),
        Err(dotenvy::Error::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(format!("{}: {e}", path.display())),
    }
}

/// Opens the database the configuration names and runs pending migrations (the library's,
/// then `app`'s); returns it with the names of the migrations applied now.
///
/// # Errors
///
/// Bad configuration, an unreachable database (the message names the server, never its
/// credentials), or a failed migration.
pub(crate) async fn open_and_migrate(
    config: &Config,
    app: Option<AppMigrations>,
) -> Result<(Database, Vec<String>), BoxError> {
    let db = connect(config).await?;
    let applied = db
        .run_migrations(app)
        .await
        .map_err(|e| describe(config, e))?;
    Ok((db, applied))
}

/// Opens the database the configuration names, without migrating it.
///
/// # Errors
///
/// Bad configuration or an unreachable database (see [`open_and_migrate`]).
pub(crate) async fn connect(config: &Config) -> Result<Database, BoxError> {
    Database::connect(config)
        .await
        .map_err(|e| describe(config, e))
}

/// A database error for one line on stderr: the driver's message ("error connecting to
/// server") does not say which server, so a connection error gets `(server host:port)`.
pub(crate) fn describe(config: &Config, e: DbError) -> BoxError {
    match (&e, config.db.database_uri.as_deref().and_then(server_of)) {
        (DbError::Connect(_), Some(server)) => format!("{e} (server {server})").into(),
        _ => Box::<dyn std::error::Error>::from(e),
    }
}

/// The `host:port` part of a PostgreSQL URL, without user or password.
fn server_of(uri: &str) -> Option<String> {
    let rest = uri.split_once("://")?.1;
    let rest = rest.rsplit_once('@').map_or(rest, |(_, r)| r);
    let server = rest.split(['/', '?']).next().unwrap_or(rest);
    (!server.is_empty() && !uri.starts_with("sqlite")).then(|| server.to_owned())
}

#[cfg(test)]
mod tests {
    use super::server_of;

    #[test]
    fn the_server_is_named_without_credentials() {
        assert_eq!(
            server_of("postgres://user:secret@db.example:5433/app?sslmode=require").as_deref(),
            Some("db.example:5433")
        );
        assert_eq!(server_of("postgres://h/db").as_deref(), Some("h"));
        assert_eq!(server_of("sqlite://data/app.db"), None);
        assert_eq!(server_of("no scheme"), None);
    }
}
