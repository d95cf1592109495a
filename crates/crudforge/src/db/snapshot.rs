//! Read snapshots: the statements of one read request (the caller's account, then the
//! resource's rows and count) run in one SQLite read transaction.
//!
//! Outside a transaction every SQLite statement is a transaction of its own: it opens a read
//! transaction, taking SQLite's locks, and ends it, releasing them. With the file shared
//! between processes ([`SqliteLocking::Shared`](super::SqliteLocking)) those locks are
//! `fcntl(2)` calls, so a list request's three statements make six lock calls, and each
//! statement may see a different state of the file: a list's total can disagree with the
//! page it comes with. Inside one read transaction the statements see one state of the file and
//! take the locks once.
//!
//! `BEGIN` and `COMMIT` run as prepared statements from the connection's statement cache
//! rather than as text SQLite parses each time, so with shared locking the snapshot costs less
//! than the locks it saves, and with exclusive locking about nothing. Diesel's transaction
//! manager is told of the transaction, as of any other, so a request dropped inside one (its
//! client went away) hands back a connection the pool discards instead of reusing one still in
//! a transaction.
//!
//! The query monitor does not count `BEGIN` and `COMMIT` as queries of the request: they read
//! no data, and an operation reports the same queries on both backends.
//!
//! On PostgreSQL a snapshot is nothing: a transaction there would cost two more round trips.
//! Each statement runs on a consistent snapshot of its own, so there a list's page and total
//! may still come from two states of the table.

use super::{Conn, Database};
use crate::error::Error;
#[cfg(feature = "sqlite")]
use sqlite::{begin_sqlite, commit_sqlite};

/// The snapshot's statements on SQLite.
#[cfg(feature = "sqlite")]
mod sqlite {
    use super::super::{monitor, Sqlite, SqliteConnection};
    use diesel::connection::{
        AnsiTransactionManager, TransactionDepthChange, TransactionManager,
        TransactionManagerStatus,
    };
    use diesel::query_builder::{AstPass, QueryFragment, QueryId};
    use diesel::query_dsl::methods::ExecuteDsl;
    use diesel::QueryResult;

    // Each is a statement type without parameters, whose text never changes, so that Diesel
    // prepares it once per connection and keeps it in the statement cache.

    /// `BEGIN`: a deferred transaction, which takes the read lock at its first statement.
    #[derive(Debug, Clone, Copy, QueryId)]
    struct Begin;

    /// `COMMIT`: ends a read transaction (it cannot fail for want of a lock).
    #[derive(Debug, Clone, Copy, QueryId)]
    struct Commit;

    impl QueryFragment<Sqlite> for Begin {
        fn walk_ast<'b>(&'b self, mut out: AstPass<'_, 'b, Sqlite>) -> QueryResult<()> {
            out.push_sql("BEGIN");
            Ok(())
        }
    }

    impl QueryFragment<Sqlite> for Commit {
        fn walk_ast<'b>(&'b self, mut out: AstPass<'_, 'b, Sqlite>) -> QueryResult<()> {
            out.push_sql("COMMIT");
            Ok(())
        }
    }

    /// Diesel's record of the connection's transactions.
    fn status(c: &mut SqliteConnection) -> &mut TransactionManagerStatus {
        <AnsiTransactionManager as TransactionManager<SqliteConnection>>::transaction_manager_status_mut(
        c,
    )
    }

    /// Diesel's record of the connection's transaction depth, moved by one.
    fn record(c: &mut SqliteConnection, change: TransactionDepthChange) -> QueryResult<()> {
        match status(c) {
            TransactionManagerStatus::Valid(status) => status.change_transaction_depth(change),
            TransactionManagerStatus::InError => {
                Err(diesel::result::Error::BrokenTransactionManager)
            }
        }
    }

    pub(super) fn begin_sqlite(c: &mut SqliteConnection) -> QueryResult<()> {
        if status(c).transaction_depth()?.is_some() {
            return Err(diesel::result::Error::AlreadyInTransaction);
        }
        monitor::uncounted(|| ExecuteDsl::<SqliteConnection, Sqlite>::execute(Begin, c))?;
        record(c, TransactionDepthChange::IncreaseDepth)
    }

    pub(super) fn commit_sqlite(c: &mut SqliteConnection) -> QueryResult<()> {
        monitor::uncounted(|| ExecuteDsl::<SqliteConnection, Sqlite>::execute(Commit, c))?;
        record(c, TransactionDepthChange::DecreaseDepth)
    }
}

/// Begins a read snapshot on `conn`: a read transaction on SQLite, nothing on PostgreSQL.
/// End it with [`finish`]. Only for statements that read: a write inside it would have to
/// upgrade the read lock, which SQLite refuses while another connection writes.
///
/// # Errors
///
/// The connection is already in a transaction, or the database refuses.
#[cfg_attr(not(feature = "sqlite"), allow(unused_variables))]
pub(crate) async fn begin(conn: &mut Conn) -> Result<(), Error> {
    #[cfg(feature = "sqlite")]
    if let Some(c) = conn.as_sqlite() {
        c.spawn_blocking(begin_sqlite).await?;
    }
    Ok(())
}

/// Ends the snapshot [`begin`] opened, whatever the work in it gave: the work's outcome is
/// returned. A snapshot that cannot be ended leaves the connection marked as in a transaction,
/// so the pool discards it.
///
/// # Errors
///
/// The work's error, else a failure to end the snapshot.
#[cfg_attr(not(feature = "sqlite"), allow(unused_variables))]
pub(crate) async fn finish<T>(conn: &mut Conn, outcome: Result<T, Error>) -> Result<T, Error> {
    #[cfg(feature = "sqlite")]
    if let Some(c) = conn.as_sqlite() {
        let ended = c.spawn_blocking(commit_sqlite).await;
        let value = outcome?;
        ended?;
        return Ok(value);
    }
    outcome
}

/// Runs `work` on a connection checked out of `db`, inside one read snapshot ([`begin`], then
/// [`finish`]), and gives the connection back.
///
/// ```ignore
/// let (page, total) = crudforge::db::snapshot::read(&db, async |conn| {
///     Ok((Critter::select(conn, &conds, &sort, Some(crudforge::crud::Window::first(25))).await?, Critter::count(conn, &conds).await?))
/// })
/// .await?;
/// ```
///
/// # Errors
///
/// No connection could be had, the snapshot could not begin or end, or `work` failed.
pub(crate) async fn read<T>(
    db: &Database,
    work: impl AsyncFnOnce(&mut Conn) -> Result<T, Error>,
) -> Result<T, Error> {
    let mut conn = db.get().await?;
    begin(&mut conn).await?;
    let outcome = work(&mut conn).await;
    finish(&mut conn, outcome).await
}

#[cfg(test)]
#[cfg(feature = "sqlite")]
mod tests {
    use super::*;
    use crate::db::SqliteConn;
    use crate::db::{DbOptions, Target};
    use diesel::connection::SimpleConnection;
    use diesel::QueryResult;
    use diesel_async::SimpleAsyncConnection;

    /// A database with a table `t` of one row.
    async fn open(dir: &tempfile::TempDir) -> Database {
        let db = Database::open(
            Target::Sqlite(dir.path().join("snap.db")),
            DbOptions::default(),
        )
        .await
        .expect("open");
        let mut conn = db.get().await.expect("conn");
        crate::with_conn!(conn, |c| c
            .batch_execute("CREATE TABLE t (n INTEGER); INSERT INTO t VALUES (1);")
            .await)
        .expect("create");
        db
    }

    /// Whether SQLite has the connection in a transaction, asked of SQLite itself (a
    /// second `BEGIN` fails inside one).
    async fn in_transaction(conn: &mut Conn) -> bool {
        let c: &mut SqliteConn = conn.as_sqlite().expect("a SQLite connection");
        c.spawn_blocking(|inner| {
            Ok(match inner.batch_execute("BEGIN") {
                Ok(()) => {
                    inner.batch_execute("ROLLBACK")?;
                    false
                }
                Err(_) => true,
            })
        })
        .await
        .expect("probe")
    }

    async fn count(conn: &mut Conn) -> QueryResult<i64> {
        let c: &mut SqliteConn = conn.as_sqlite().expect("a SQLite connection");
        c.spawn_blocking(|inner| {
            diesel::RunQueryDsl::get_result::<i64>(
                diesel::dsl::sql::<diesel::sql_types::BigInt>("SELECT count(*) FROM t"),
                inner,
            )
        })
        .await
    }

    #[tokio::test(flavor = "current_thread")]
    async fn statements_in_a_snapshot_see_one_state_of_the_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = open(&dir).await;
        let mut setup = db.get().await.expect("conn");
        let mut reader = db.get().await.expect("conn");
        begin(&mut reader).await.expect("begin");
        assert!(in_transaction(&mut reader).await);
        assert_eq!(count(&mut reader).await.expect("count"), 1);
        // Another connection commits a row meanwhile: the snapshot does not see it.
        crate::with_conn!(setup, |c| c
            .batch_execute("INSERT INTO t VALUES (2);")
            .await)
        .expect("insert");
        assert_eq!(count(&mut reader).await.expect("count"), 1);
        let outcome: Result<u8, Error> = Ok(7);
        assert_eq!(finish(&mut reader, outcome).await.expect("finish"), 7);
        assert!(!in_transaction(&mut reader).await);
        assert_eq!(count(&mut reader).await.expect("count"), 2);
        // The work's error wins, and the snapshot is still ended.
        begin(&mut reader).await.expect("begin");
        let failed: Result<u8, Error> = Err(Error::NotFound("gone".into()));
        assert!(matches!(
            finish(&mut reader, failed).await,
            Err(Error::NotFound(_))
        ));
        assert!(!in_transaction(&mut reader).await);
        // Repeated snapshots use the cached statements, and never nest.
        begin(&mut reader).await.expect("begin");
        assert!(begin(&mut reader).await.is_err());
        finish(&mut reader, Ok(())).await.expect("finish");
    }

    #[tokio::test(flavor = "current_thread")]
    async fn read_runs_the_work_in_a_snapshot_and_ends_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = open(&dir).await;
        let (inside, n) = read(&db, async |conn| {
            Ok((in_transaction(conn).await, count(conn).await?))
        })
        .await
        .expect("read");
        assert!(inside, "the work runs inside a read transaction");
        assert_eq!(n, 1);
        let failed = read(&db, async |_| -> Result<(), Error> {
            Err(Error::NotFound("gone".into()))
        })
        .await;
        assert!(matches!(failed, Err(Error::NotFound(_))));
        // One connection served all of it, and it was given back out of its transaction.
        assert_eq!(db.pool_status(), (1, 0, 0));
        let mut next = db.get().await.expect("conn");
        assert!(!in_transaction(&mut next).await);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_connection_dropped_inside_a_snapshot_is_not_reused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = open(&dir).await;
        let mut conn = db.get().await.expect("conn");
        begin(&mut conn).await.expect("begin");
        drop(conn);
        // The pool has one idle connection, still in its transaction; the next checkout
        // discards it and opens another, which is not in one.
        assert_eq!(db.pool_status().0, 1);
        let mut next = db.get().await.expect("conn");
        assert!(!in_transaction(&mut next).await);
    }
}
