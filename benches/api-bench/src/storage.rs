//! The storage reference: the SQL statements the reference application runs for W1–W4 (point
//! read by id; count and page of W2's filter and order; INSERT; UPDATE; the reads and the
//! UPDATE among live rows, `deleted_at IS NULL`, since critters keep deleted rows), executed directly with
//! Diesel on the same database, without HTTP, in a loop, with their CPU time per operation.
//!
//! SQLite runs on a synchronous `SqliteConnection` in this thread with the pragmas crudforge
//! sets (so the figure is SQLite's and Diesel's own work); PostgreSQL on an `AsyncPgConnection`
//! driven by a current-thread runtime in this thread, with the server backends' CPU time read
//! from `/proc` alongside.

use crate::procfs;
use crate::setup::Scratch;
use chrono::Utc;
use crudforge::__private::Update;
use crudforge::config::SqliteLocking;
use crudforge::config::SqliteSynchronous;
use crudforge::sql_types::Portable;
use diesel::prelude::*;
use diesel::sql_types::BigInt;
use diesel_async::AsyncPgConnection;
use reference_app::api::critters::Critter;
use reference_app::api::schema::critters;
use std::time::{Duration, Instant};
use uuid::Uuid;

/// Species of the rows W3 and the INSERT reference create (deleted after each measurement).
pub(crate) const INSERTED_SPECIES: &str = "bench";

/// One storage operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Op {
    /// W1: `SELECT … WHERE id = ?`.
    Point,
    /// W2: `SELECT COUNT(*) … WHERE species = ? AND cuteness_level >= ?` and the page query with
    /// `ORDER BY created_at, id LIMIT 25 OFFSET 25`.
    CountAndPage,
    /// W3: `INSERT … RETURNING`.
    Insert,
    /// W4: `UPDATE … WHERE id = ? RETURNING`.
    Update,
    /// W7: [`BATCH`] `INSERT … RETURNING` statements in one transaction (one operation).
    InsertBatch,
}

/// Items of one W7 batch.
pub(crate) const BATCH: usize = 1000;

/// CPU time spent on `ops` operations.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Cost {
    /// Operations done.
    pub(crate) ops: u64,
    /// CPU time of this thread (for SQLite: the whole engine).
    pub(crate) client: Duration,
    /// CPU time of PostgreSQL's server processes (zero on SQLite).
    pub(crate) postgres: Duration,
}

impl Cost {
    /// Total CPU µs per operation.
    pub(crate) fn us_per_op(&self) -> f64 {
        per_op(self.client + self.postgres, self.ops)
    }

    /// PostgreSQL server CPU µs per operation.
    pub(crate) fn pg_us_per_op(&self) -> f64 {
        per_op(self.postgres, self.ops)
    }
}

fn per_op(d: Duration, ops: u64) -> f64 {
    // Operation counts stay far below 2^52.
    #[allow(clippy::cast_precision_loss)]
    let n = ops.max(1) as f64;
    d.as_secs_f64() * 1e6 / n
}

enum Conn {
    Sqlite(diesel::SqliteConnection),
    Pg(Box<AsyncPgConnection>, tokio::runtime::Runtime),
}

/// Runs one Diesel query on either connection: `$m` is the `RunQueryDsl` method, `$q` the
/// query (written out in each arm, so that it is typed for that arm's backend).
macro_rules! run {
    ($conn:expr, $m:ident, $q:expr) => {
        match $conn {
            Conn::Sqlite(c) => diesel::RunQueryDsl::$m($q, c),
            Conn::Pg(c, rt) => rt.block_on(diesel_async::RunQueryDsl::$m($q, &mut **c)),
        }
    };
}

#[derive(QueryableByName)]
struct Count {
    #[diesel(sql_type = BigInt)]
    n: i64,
}

/// A direct connection to the benchmark's database.
pub(crate) struct Storage {
    /// `None` once [`Storage::close`]d (exclusive SQLite locking: the server owns the file).
    conn: Option<Conn>,
    ids: Vec<Uuid>,
    pg_uid: Option<u32>,
    pg_db: String,
}

impl Storage {
    /// Connects to the database of `scratch`; `ids` are the rows point reads and updates cycle
    /// over.
    pub(crate) fn open(scratch: &Scratch, ids: Vec<Uuid>) -> Result<Storage, String> {
        let conn = match scratch.sqlite_file() {
            Some(file) => {
                // The connection settings crudforge's own connections get (QPSG, pragmas).
                crudforge::__bench::install_plans();
                // The same locking as the server's, so both pay the same for their locks.
                let locking = if scratch.exclusive {
                    SqliteLocking::Exclusive
                } else {
                    SqliteLocking::Shared
                };
                let target = crudforge::__bench::connection_target(&file, locking)
                    .map_err(|e| format!("open {}: {e}", file.display()))?;
                let mut c = diesel::SqliteConnection::establish(&target)
                    .map_err(|e| format!("open {}: {e}", file.display()))?;
                diesel::connection::SimpleConnection::batch_execute(
                    &mut c,
                    &crudforge::__bench::sqlite_pragmas(SqliteSynchronous::Normal),
                )
                .map_err(|e| format!("pragmas: {e}"))?;
                Conn::Sqlite(c)
            }
            None => {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .map_err(|e| format!("runtime: {e}"))?;
                let c = rt
                    .block_on(
                        <AsyncPgConnection as diesel_async::AsyncConnection>::establish(
                            &scratch.uri,
                        ),
                    )
                    .map_err(|e| format!("connect to the bench database: {e}"))?;
                Conn::Pg(Box::new(c), rt)
            }
        };
        let pg_uid = if scratch.pg.is_some() {
            let uid = procfs::postgres_uid();
            if uid.is_none() {
                eprintln!(
                    "warning: no postgres user in /etc/passwd; PostgreSQL CPU is not counted"
                );
            }
            uid
        } else {
            None
        };
        let pg_db = scratch
            .pg
            .as_ref()
            .map(|(_, db)| db.clone())
            .unwrap_or_default();
        Ok(Storage {
            conn: Some(conn),
            ids,
            pg_uid,
            pg_db,
        })
    }

    /// Closes the connection, so that a server with exclusive SQLite locking can open the file;
    /// afterwards only [`Storage::postgres_cpu`] works, and [`Storage::delete_inserted`] does
    /// nothing.
    pub(crate) fn close(&mut self) {
        self.conn = None;
    }

    fn conn(&mut self) -> Result<&mut Conn, String> {
        self.conn
            .as_mut()
            .ok_or_else(|| "the storage reference's connection is closed".to_owned())
    }

    /// CPU time of PostgreSQL's server processes now (zero on SQLite).
    pub(crate) fn postgres_cpu(&self) -> Duration {
        self.pg_uid
            .map(|uid| procfs::postgres_cpu(uid, &self.pg_db))
            .unwrap_or_default()
    }

    /// Whether the PostgreSQL CPU is counted.
    pub(crate) fn counts_postgres(&self) -> bool {
        self.pg_uid.is_some()
    }

    /// Runs `op` in a loop for `duration` and returns its CPU cost.
    pub(crate) fn measure(&mut self, op: Op, duration: Duration) -> Result<Cost, String> {
        let pg_before = self.postgres_cpu();
        let cpu_before = procfs::thread_cpu();
        let until = Instant::now() + duration;
        let mut ops = 0u64;
        while Instant::now() < until {
            for _ in 0..16 {
                self.once(op, ops)?;
                ops += 1;
            }
        }
        let client = procfs::thread_cpu().saturating_sub(cpu_before);
        let postgres = self.postgres_cpu().saturating_sub(pg_before);
        if matches!(op, Op::Insert | Op::InsertBatch) {
            self.delete_inserted()?;
        }
        Ok(Cost {
            ops,
            client,
            postgres,
        })
    }

    fn once(&mut self, op: Op, i: u64) -> Result<(), String> {
        use critters::dsl as c;
        let n = usize::try_from(i).unwrap_or(0);
        let id = self.ids[n.wrapping_mul(7919) % self.ids.len()];
        match op {
            Op::Point => {
                let _: Critter = run!(
                    self.conn()?,
                    get_result,
                    c::critters
                        .filter(c::id.eq(Portable(id)))
                        .filter(c::deleted_at.is_null())
                        .select(Critter::as_select())
                )
                .map_err(|e| format!("point read: {e}"))?;
            }
            Op::CountAndPage => {
                let n: i64 = run!(
                    self.conn()?,
                    get_result,
                    c::critters
                        .filter(c::species.eq("cat").and(c::cuteness_level.ge(5)))
                        .filter(c::deleted_at.is_null())
                        .count()
                )
                .map_err(|e| format!("count: {e}"))?;
                let rows: Vec<Critter> = run!(
                    self.conn()?,
                    load,
                    c::critters
                        .filter(c::species.eq("cat").and(c::cuteness_level.ge(5)))
                        .filter(c::deleted_at.is_null())
                        .order((c::created_at.asc(), c::id.asc()))
                        .limit(25)
                        .offset(25)
                        .select(Critter::as_select())
                )
                .map_err(|e| format!("page: {e}"))?;
                if n <= 25 || rows.is_empty() {
                    return Err(format!("the W2 filter matched {n} rows only"));
                }
            }
            Op::InsertBatch => {
                self.execute("BEGIN")?;
                for j in 0..BATCH as u64 {
                    self.once(Op::Insert, i << 20 | j)?;
                }
                self.execute("COMMIT")?;
            }
            Op::Insert => {
                let now = Utc::now();
                let _: Critter = run!(
                    self.conn()?,
                    get_result,
                    diesel::insert_into(c::critters)
                        .values((
                            c::id.eq(Portable(Uuid::new_v4())),
                            c::created_at.eq(Portable(now)),
                            c::updated_at.eq(Portable(now)),
                            c::name.eq(format!("stored {i}")),
                            c::species.eq(INSERTED_SPECIES),
                            c::cuteness_level.eq(3),
                        ))
                        .returning(Critter::as_returning())
                )
                .map_err(|e| format!("insert: {e}"))?;
            }
            Op::Update => {
                let now = Utc::now();
                let _: Critter = run!(
                    self.conn()?,
                    get_result,
                    // The statement the reference application runs: kept in the statement
                    // cache, unlike `diesel::update`'s.
                    Update::new(
                        c::critters,
                        (
                            c::name.eq(format!("updated {i}")),
                            c::updated_at.eq(Portable(now)),
                        )
                            .as_changeset(),
                        c::id.eq(Portable(id)).and(c::deleted_at.is_null()),
                        Critter::as_returning(),
                    )
                )
                .map_err(|e| format!("update: {e}"))?;
            }
        }
        Ok(())
    }

    /// Runs one SQL statement without results (`BEGIN`, `COMMIT`).
    fn execute(&mut self, sql: &str) -> Result<(), String> {
        let done = match self.conn()? {
            Conn::Sqlite(c) => diesel::connection::SimpleConnection::batch_execute(c, sql),
            Conn::Pg(c, rt) => rt.block_on(diesel_async::SimpleAsyncConnection::batch_execute(
                &mut **c, sql,
            )),
        };
        done.map_err(|e| format!("{sql}: {e}"))
    }

    /// Deletes the rows W3 and [`Op::Insert`] created, so that every workload sees the seeded
    /// table; returns how many.
    pub(crate) fn delete_inserted(&mut self) -> Result<usize, String> {
        use critters::dsl as c;
        let Some(conn) = self.conn.as_mut() else {
            return Ok(0);
        };
        run!(
            conn,
            execute,
            diesel::delete(c::critters.filter(c::species.eq(INSERTED_SPECIES)))
        )
        .map_err(|e| format!("deleting inserted rows: {e}"))
    }

    /// The number of critters now.
    pub(crate) fn count_rows(&mut self) -> Option<i64> {
        use critters::dsl as c;
        run!(self.conn.as_mut()?, get_result, c::critters.count()).ok()
    }

    /// PostgreSQL: the connections to the benchmark's database other than this one.
    pub(crate) fn pg_connections(&mut self) -> Option<i64> {
        let Some(Conn::Pg(..)) = &self.conn else {
            return None;
        };
        let q = diesel::sql_query(
            "SELECT count(*) AS n FROM pg_stat_activity \
             WHERE datname = current_database() AND pid <> pg_backend_pid()",
        );
        let rows: Vec<Count> = run!(self.conn.as_mut()?, load, q.clone()).ok()?;
        rows.first().map(|r| r.n)
    }
}
