//! SQLite's locking between processes: shared with other processes (the default), or owned by
//! this process alone, whose statements then take their locks in memory.
//!
//! In WAL mode every SQLite statement outside a transaction opens a read (or write)
//! transaction, and that takes and releases locks on the `-shm` file with `fcntl(2)`, so that
//! other processes see them: two system calls per read, more per write, each with the kernel's
//! lock bookkeeping. A profile of a point read (`GET /api/critters/{id}`: the user lookup and
//! the item's query) found about a tenth of the server's time there.
//!
//! With [`SqliteLocking::Exclusive`] the file is opened through SQLite's `unix-excl` VFS: the
//! first lock the process takes on the file is one exclusive lock on its whole shared range,
//! held until the process's last connection to the file closes. No other process can then read
//! or write the file ("database is locked"), and SQLite keeps the WAL index in this process's
//! memory instead of a `-shm` file, so the locks between this process's own connections are
//! taken in memory, without system calls. Everything else is unchanged: WAL, `synchronous`,
//! checkpoints, and the pool's several connections, which still read concurrently and write
//! one at a time.

// Without SQLite the setting is still read (and ignored): nothing here is called.
#![cfg_attr(not(feature = "sqlite"), allow(dead_code))]

use super::DbError;
use std::path::Path;

/// Declared by the configuration (`SQLITE_LOCKING`), which the database layer reads.
pub(crate) use crate::config::SqliteLocking;

/// The VFS that makes the process the file's only user.
pub(crate) const EXCLUSIVE_VFS: &str = "unix-excl";

/// What `SqliteConnection::establish` is given to open the file at `path` with `locking`:
/// the path itself when shared; when exclusive, a `file:` URI of the absolute path naming
/// `EXCLUSIVE_VFS` (SQLite connections are opened with URI names allowed).
///
/// # Errors
///
/// Exclusive locking on a system without the Unix VFS, or a path that cannot be made
/// absolute (the working directory is gone).
pub fn connection_target(path: &Path, locking: SqliteLocking) -> Result<String, DbError> {
    match locking {
        SqliteLocking::Shared => Ok(path.to_string_lossy().into_owned()),
        SqliteLocking::Exclusive => exclusive_uri(path),
    }
}

#[cfg(unix)]
fn exclusive_uri(path: &Path) -> Result<String, DbError> {
    use std::os::unix::ffi::OsStrExt;
    let absolute = std::path::absolute(path)?;
    let bytes = absolute.as_os_str().as_bytes();
    // `file://` with an empty authority, then the absolute path (it starts with `/`). Bytes
    // other than letters, digits and `/-._~` are percent-encoded: `?` and `#` would end the
    // path, `%` would start an escape.
    let mut uri = String::with_capacity(bytes.len() + 32);
    uri.push_str("file://");
    for &b in bytes {
        if b.is_ascii_alphanumeric() || b"/-._~".contains(&b) {
            uri.push(char::from(b));
        } else {
            const HEX: &[u8; 16] = b"0123456789ABCDEF";
            uri.push('%');
            uri.push(char::from(HEX[usize::from(b >> 4)]));
            uri.push(char::from(HEX[usize::from(b & 0xf)]));
        }
    }
    uri.push_str("?vfs=");
    uri.push_str(EXCLUSIVE_VFS);
    Ok(uri)
}

#[cfg(not(unix))]
fn exclusive_uri(_path: &Path) -> Result<String, DbError> {
    Err(DbError::BadUri(
        "SQLITE_LOCKING=EXCLUSIVE needs SQLite's Unix VFS".into(),
    ))
}

/// A hint for an error that says the file is locked: which process may hold it.
pub(crate) fn locked_hint(error: &str, locking: SqliteLocking) -> String {
    if !error.contains("database is locked") {
        return error.to_owned();
    }
    match locking {
        SqliteLocking::Exclusive => format!(
            "{error} (SQLITE_LOCKING=EXCLUSIVE needs this process to be the file's only user; \
             another process has it open)"
        ),
        SqliteLocking::Shared => format!(
            "{error} (another process holds the file: a server started with \
             SQLITE_LOCKING=EXCLUSIVE, or a long write)"
        ),
    }
}

#[cfg(test)]
#[cfg(feature = "sqlite")]
mod tests {
    use super::*;
    use diesel::connection::SimpleConnection;
    use diesel::sql_types::{BigInt, Text};
    use diesel::{Connection, QueryableByName, RunQueryDsl, SqliteConnection};

    #[test]
    fn shared_is_the_path_itself() {
        let t = connection_target(Path::new("data/app.db"), SqliteLocking::Shared).unwrap();
        assert_eq!(t, "data/app.db");
    }

    #[test]
    fn exclusive_is_an_absolute_uri_with_the_path_escaped() {
        let t =
            connection_target(Path::new("/srv/a b/x?y#z%.db"), SqliteLocking::Exclusive).unwrap();
        assert_eq!(t, "file:///srv/a%20b/x%3Fy%23z%25.db?vfs=unix-excl");
        let cwd = std::env::current_dir().unwrap();
        let t = connection_target(Path::new("rel.db"), SqliteLocking::Exclusive).unwrap();
        assert!(t.starts_with("file:///"), "{t}");
        assert!(t.ends_with("/rel.db?vfs=unix-excl"), "{t}");
        assert!(
            t.contains(cwd.file_name().unwrap().to_str().unwrap()),
            "{t}"
        );
    }

    #[derive(QueryableByName)]
    struct Row {
        #[diesel(sql_type = Text)]
        journal_mode: String,
    }

    #[derive(QueryableByName)]
    struct Count {
        #[diesel(sql_type = BigInt)]
        n: i64,
    }

    #[test]
    fn an_exclusive_file_works_in_wal_mode_without_a_shm_file_and_opens_shared_afterwards() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("odd name?#%.db");
        let target = connection_target(&path, SqliteLocking::Exclusive).unwrap();
        {
            let mut a = SqliteConnection::establish(&target).unwrap();
            a.batch_execute(
                "PRAGMA journal_mode = WAL; CREATE TABLE t (n INTEGER); INSERT INTO t VALUES (1);",
            )
            .unwrap();
            // A second connection of the same process reads and writes the same file.
            let mut b = SqliteConnection::establish(&target).unwrap();
            b.batch_execute("INSERT INTO t VALUES (2);").unwrap();
            let mode: Row = diesel::sql_query("PRAGMA journal_mode")
                .get_result(&mut a)
                .unwrap();
            assert_eq!(mode.journal_mode, "wal");
            let c: Count = diesel::sql_query("SELECT count(*) AS n FROM t")
                .get_result(&mut a)
                .unwrap();
            assert_eq!(c.n, 2);
            assert!(path.exists(), "the file is at the path named");
            let mut wal = path.clone().into_os_string();
            wal.push("-wal");
            assert!(Path::new(&wal).exists(), "WAL mode writes a -wal file");
            let mut shm = path.clone().into_os_string();
            shm.push("-shm");
            assert!(
                !Path::new(&shm).exists(),
                "the WAL index is kept in memory, not in a -shm file"
            );
        }
        // Once the process's connections are closed, the file opens as usual.
        let shared = connection_target(&path, SqliteLocking::Shared).unwrap();
        let mut c = SqliteConnection::establish(&shared).unwrap();
        let n: Count = diesel::sql_query("SELECT count(*) AS n FROM t")
            .get_result(&mut c)
            .unwrap();
        assert_eq!(n.n, 2);
    }

    #[test]
    fn a_locked_error_names_the_setting() {
        let e = locked_hint("database is locked", SqliteLocking::Exclusive);
        assert!(e.contains("SQLITE_LOCKING=EXCLUSIVE"), "{e}");
        let e = locked_hint("database is locked", SqliteLocking::Shared);
        assert!(e.contains("SQLITE_LOCKING=EXCLUSIVE"), "{e}");
        assert_eq!(
            locked_hint("no such table", SqliteLocking::Shared),
            "no such table"
        );
    }
}
