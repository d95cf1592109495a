//! SQLite upkeep: `PRAGMA optimize` as SQLite recommends for long-lived connections, and WAL
//! checkpoints that keep the `-wal` file bounded under constant load.
//!
//! SQLite's own advice (<https://sqlite.org/pragma.html#pragma_optimize>): a long-lived
//! connection runs `PRAGMA optimize=0x10002` when it opens (the pool's connection setup does),
//! then plain `PRAGMA optimize` from time to time and after schema changes (migrations do). In
//! WAL mode the automatic checkpoint copies pages back but can only restart the log when no
//! reader is using it; with readers always active the `-wal` file grows without end, so a
//! server also runs `PRAGMA wal_checkpoint(TRUNCATE)` regularly ([`run`]), and every connection
//! sets `journal_size_limit` ([`JOURNAL_SIZE_LIMIT`]). On PostgreSQL all of this does nothing.

use super::{Backend, Database, DbError};
#[cfg(feature = "sqlite")]
use diesel::{
    connection::SimpleConnection as _, sql_types::Integer, Connection as _, RunQueryDsl as _,
    SqliteConnection,
};
use std::time::Duration;

/// `PRAGMA journal_size_limit` of every SQLite connection, in bytes (64 MiB): after a
/// checkpoint restarts the log, a `-wal` file larger than this is truncated to it.
pub const JOURNAL_SIZE_LIMIT: u64 = 64 * 1024 * 1024;

/// How often a server checkpoints the WAL with `TRUNCATE`.
pub(crate) const CHECKPOINT_INTERVAL: Duration = Duration::from_secs(30);

/// How often a server runs `PRAGMA optimize` (SQLite suggests hourly to daily).
pub(crate) const OPTIMIZE_INTERVAL: Duration = Duration::from_secs(60 * 60);

/// Longest wait of a maintenance checkpoint for the write lock and for readers of older
/// snapshots; past it the checkpoint gives up (`busy`) and the next one tries again.
#[cfg(feature = "sqlite")]
const CHECKPOINT_BUSY_TIMEOUT_MS: u32 = 1000;

/// What `PRAGMA wal_checkpoint` reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Checkpoint {
    /// The checkpoint could not finish (a writer or a reader of an older snapshot was busy).
    pub busy: bool,
    /// Frames in the WAL before the checkpoint (-1 when the database is not in WAL mode).
    pub log_frames: i32,
    /// Frames copied back into the database.
    pub checkpointed: i32,
}

#[cfg(feature = "sqlite")]
#[derive(diesel::QueryableByName)]
struct CheckpointRow {
    #[diesel(sql_type = Integer)]
    busy: i32,
    #[diesel(sql_type = Integer)]
    log: i32,
    #[diesel(sql_type = Integer)]
    checkpointed: i32,
}

impl Database {
    /// Runs `PRAGMA optimize` (SQLite; nothing on PostgreSQL): it runs `ANALYZE` on the tables
    /// whose statistics are missing or out of date, with a bounded cost, so the planner
    /// chooses between indexes on real figures.
    ///
    /// # Errors
    ///
    /// The database cannot be reached or the pragma fails.
    pub async fn optimize(&self) -> Result<(), DbError> {
        #[cfg(feature = "sqlite")]
        if self.backend() == Backend::Sqlite {
            return self
                .on_own_connection(|c| optimize_with(c, "PRAGMA optimize;"))
                .await;
        }
        Ok(())
    }

    /// Runs `f` on upkeep's own SQLite connection, on Tokio's blocking pool: upkeep may wait for
    /// locks, and pooled connections run their statements on the request threads
    /// ([`Runner::inline`](super::Runner::inline)), which must not wait. The connection is
    /// opened once and kept (no file opened and closed every [`CHECKPOINT_INTERVAL`]); after an
    /// error it is dropped and opened afresh next time.
    #[cfg(feature = "sqlite")]
    async fn on_own_connection<R: Send + 'static>(
        &self,
        f: impl FnOnce(&mut SqliteConnection) -> diesel::QueryResult<R> + Send + 'static,
    ) -> Result<R, DbError> {
        let target = self.inner.target.clone();
        let synchronous = self.inner.sqlite_synchronous;
        let kept = std::sync::Arc::clone(&self.inner.upkeep);
        tokio::task::spawn_blocking(move || {
            let mut slot = kept
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let c = match slot.as_mut() {
                Some(c) => c,
                None => {
                    let mut c = SqliteConnection::establish(&target)?;
                    c.batch_execute(&super::sqlite_pragmas(synchronous))?;
                    slot.insert(c)
                }
            };
            match f(c) {
                Ok(r) => Ok(r),
                Err(e) => {
                    *slot = None;
                    Err(e.into())
                }
            }
        })
        .await
        .map_err(|e| DbError::Pool(format!("upkeep task: {e}")))?
    }

    /// Runs `PRAGMA wal_checkpoint(TRUNCATE)` (SQLite; `None` on PostgreSQL): copies every
    /// frame of the WAL into the database and truncates the `-wal` file to nothing. It waits
    /// up to a second for the write lock and for readers of older snapshots, then gives up
    /// with `Checkpoint::busy` set.
    ///
    /// # Errors
    ///
    /// The database cannot be reached or the pragma fails.
    pub async fn checkpoint(&self) -> Result<Option<Checkpoint>, DbError> {
        #[cfg(feature = "sqlite")]
        if self.backend() == Backend::Sqlite {
            let row = self
                .on_own_connection(|c| {
                    c.batch_execute(&format!(
                        "PRAGMA busy_timeout = {CHECKPOINT_BUSY_TIMEOUT_MS};"
                    ))?;
                    diesel::sql_query("PRAGMA wal_checkpoint(TRUNCATE)")
                        .get_result::<CheckpointRow>(c)
                })
                .await?;
            return Ok(Some(Checkpoint {
                busy: row.busy != 0,
                log_frames: row.log,
                checkpointed: row.checkpointed,
            }));
        }
        Ok(None)
    }

    /// One round of upkeep: a WAL checkpoint, and `PRAGMA optimize` when `optimize` is set
    /// (see `run`). Nothing on PostgreSQL.
    ///
    /// # Errors
    ///
    /// The database cannot be reached or a pragma fails.
    pub async fn maintain(&self, optimize: bool) -> Result<Option<Checkpoint>, DbError> {
        if optimize {
            self.optimize().await?;
        }
        self.checkpoint().await
    }
}

/// Runs an optimize pragma (`PRAGMA optimize`, with or without a mask) on `c`, then keeps
/// only the statistics that choose indexes.
///
/// SQLite's bundled build enables STAT4: after `ANALYZE`, a cached statement with a bound
/// value on an analyzed index is compiled again every time it runs with a new value (the
/// value might change the plan). Every per-request query of the service (a user by id, an item
/// by id, a filtered page) would then be compiled per request, a quarter of a point read's
/// cost. So the per-value samples (`sqlite_stat4`) are removed and the statistics reloaded;
/// `sqlite_stat1` (rows per index prefix), which is what picks the index for a filter and an
/// order, stays. Nothing is removed when the table is absent or locked.
///
/// # Errors
///
/// The pragma itself fails.
#[cfg(feature = "sqlite")]
pub(crate) fn optimize_with(c: &mut SqliteConnection, pragma: &str) -> diesel::QueryResult<()> {
    c.batch_execute(pragma)?;
    if c.batch_execute("DELETE FROM sqlite_stat4;").is_ok() {
        c.batch_execute("ANALYZE sqlite_schema;")?;
    }
    Ok(())
}

/// Runs upkeep on a SQLite database until `stop` says so (checked before each round): a
/// checkpoint every [`CHECKPOINT_INTERVAL`], `PRAGMA optimize` every [`OPTIMIZE_INTERVAL`].
/// Failures are logged (target `crudforge::db`) and retried at the next round. Returns at
/// once on PostgreSQL. [`Api::server`](crate::Api::server) spawns it.
pub(crate) async fn run(db: Database, stop: impl Fn() -> bool) {
    if db.backend() != Backend::Sqlite {
        return;
    }
    let rounds_per_optimize = (OPTIMIZE_INTERVAL.as_secs() / CHECKPOINT_INTERVAL.as_secs()).max(1);
    let mut round: u64 = 0;
    loop {
        tokio::time::sleep(CHECKPOINT_INTERVAL).await;
        if stop() {
            return;
        }
        round += 1;
        let optimize = round.is_multiple_of(rounds_per_optimize);
        match db.maintain(optimize).await {
            Ok(Some(c)) if c.busy => tracing::debug!(
                target: "crudforge::db",
                log_frames = c.log_frames,
                checkpointed = c.checkpointed,
                "WAL checkpoint could not finish; retrying at the next round"
            ),
            Ok(_) => {}
            Err(e) => tracing::warn!(target: "crudforge::db", error = %e, "database upkeep failed"),
        }
    }
}
