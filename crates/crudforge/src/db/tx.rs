//! Transactions on a checked-out [`Conn`], begun and ended explicitly so that the generated
//! `Resource` operations (which take `&mut Conn`) can run inside them.
//!
//! `Database::in_tx` wraps both around a body on a connection of the pool.
//!
//! Diesel's own transaction manager tracks every transaction begun here, so a connection that
//! goes back to the pool with one still open is discarded rather than reused.

use super::Conn;
#[cfg(feature = "postgres")]
use super::PgConn;
#[cfg(feature = "sqlite")]
use super::SqliteConn;
use crate::error::Error;
#[cfg(feature = "postgres")]
use diesel_async::AnsiTransactionManager;
#[cfg(feature = "sqlite")]
use diesel_async::AsyncConnection;
use diesel_async::TransactionManager;

/// How a write transaction isolates itself from concurrent ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TxMode {
    /// Reads see committed data (PostgreSQL's default); on SQLite the transaction still takes
    /// the write lock at once.
    Write,
    /// Concurrent writers of the same rows cannot both commit: on PostgreSQL the transaction
    /// runs at `REPEATABLE READ` (the loser of a race gets a serialization failure); on SQLite
    /// it takes the write lock at once (`BEGIN IMMEDIATE`), so writers run one after another.
    Serialized,
}

/// Begins a transaction. On SQLite it always starts with `BEGIN IMMEDIATE`: the write lock is
/// taken first (waiting up to the busy timeout), so a transaction never has to upgrade a read
/// lock, which SQLite cannot do without failing.
///
/// # Errors
///
/// The database refuses (lock timeout, connection lost, already in a transaction).
pub(crate) async fn begin(conn: &mut Conn, mode: TxMode) -> Result<(), Error> {
    let sql = crate::dialect::begin_write(conn.backend(), mode == TxMode::Serialized);
    crate::__by_backend!(*conn, |c| sqlite => {
        c.spawn_blocking(move |inner| {
            diesel::connection::AnsiTransactionManager::begin_transaction_sql(inner, sql)
        })
        .await?;
    }, postgres => {
        AnsiTransactionManager::begin_transaction_sql(c, sql).await?;
    });
    Ok(())
}

/// A point inside the open transaction that its later statements can be undone to: the
/// statement that marks it, and the two that end it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Savepoint {
    /// `SAVEPOINT`: marks the point.
    Set,
    /// `RELEASE SAVEPOINT`: keeps what was written since.
    Release,
    /// `ROLLBACK TO SAVEPOINT` then `RELEASE`: undoes it; the transaction goes on (on
    /// PostgreSQL, even after a statement failed).
    Undo,
}

impl Savepoint {
    /// Runs the statement on `conn`, inside a transaction it began.
    ///
    /// # Errors
    ///
    /// The database refuses (no transaction open, connection lost).
    pub(crate) async fn run(self, conn: &mut Conn) -> Result<(), Error> {
        let sql = match self {
            Savepoint::Set => "SAVEPOINT crudforge_rows",
            Savepoint::Release => "RELEASE SAVEPOINT crudforge_rows",
            Savepoint::Undo => {
                "ROLLBACK TO SAVEPOINT crudforge_rows; RELEASE SAVEPOINT crudforge_rows"
            }
        };
        crate::__by_backend!(*conn, |c| sqlite => {
            c.spawn_blocking(move |inner| diesel::connection::SimpleConnection::batch_execute(inner, sql))
                .await?;
        }, postgres => {
            diesel_async::SimpleAsyncConnection::batch_execute(c, sql).await?;
        });
        Ok(())
    }
}

/// Whether Diesel has a transaction open on `conn` (begun by [`begin`], by a read snapshot or
/// by Diesel itself).
pub(crate) fn in_transaction(conn: &mut Conn) -> bool {
    let status = crate::__by_backend!(*conn, |c| sqlite => {
        <SqliteConn as AsyncConnection>::TransactionManager::transaction_manager_status_mut(c)
    }, postgres => {
        <AnsiTransactionManager as TransactionManager<PgConn>>::transaction_manager_status_mut(c)
    });
    // A transaction manager in error still has a transaction open (it must be rolled back).
    status.transaction_depth().map_or(true, |d| d.is_some())
}

/// Commits the open transaction.
///
/// # Errors
///
/// The commit fails (the transaction is then rolled back by the database).
pub(crate) async fn commit(conn: &mut Conn) -> Result<(), Error> {
    crate::__by_backend!(*conn, |c| sqlite => {
        <SqliteConn as AsyncConnection>::TransactionManager::commit_transaction(c).await?;
    }, postgres => {
        AnsiTransactionManager::commit_transaction(c).await?;
    });
    Ok(())
}

/// Rolls the open transaction back. A failure is logged: the connection is then marked broken
/// by Diesel and the pool discards it.
pub(crate) async fn rollback(conn: &mut Conn) {
    let r = crate::__by_backend!(*conn, |c| sqlite => {
        <SqliteConn as AsyncConnection>::TransactionManager::rollback_transaction(c).await
    }, postgres => {
        AnsiTransactionManager::rollback_transaction(c).await
    });
    if let Err(e) = r {
        tracing::warn!(error = %e, "rollback failed");
    }
}

/// Ends the open transaction by the outcome of the work done in it: commits on `Ok` (a failed
/// commit becomes the error), rolls back on `Err`.
///
/// # Errors
///
/// The work's error, or the commit's.
pub(crate) async fn finish<T>(conn: &mut Conn, outcome: Result<T, Error>) -> Result<T, Error> {
    match outcome {
        Ok(v) => {
            commit(conn).await?;
            Ok(v)
        }
        Err(e) => {
            rollback(conn).await;
            Err(e)
        }
    }
}

impl super::Database {
    /// Runs `body` in a write transaction on a connection of the pool: committed when it
    /// answers `Ok` (a failed commit becomes the error), rolled back when it answers `Err`.
    ///
    /// # Errors
    ///
    /// No connection, the body's error, or the commit's.
    #[allow(
        dead_code,
        reason = "a door of the seam: a build without optional surfaces leaves it unused"
    )]
    pub(crate) async fn in_tx<T>(
        &self,
        body: impl for<'c> AsyncFnOnce(&'c mut Conn) -> Result<T, crate::error::Error>,
    ) -> Result<T, crate::error::Error> {
        let mut conn = self.get().await?;
        conn.begin(super::TxMode::Write).await?;
        let outcome = body(&mut conn).await;
        conn.finish(outcome).await
    }
}
