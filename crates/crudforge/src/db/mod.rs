//! Database access: the backend chosen at run time, pools, embedded migrations, monitoring.
//!
//! One [`Database`] handle serves SQLite (the embedded default, through diesel-async's sync
//! connection wrapper and the bundled libsqlite3) or PostgreSQL (natively async). Diesel code
//! is typed by backend, so code that queries takes a [`Conn`] and runs the same Diesel
//! expression on whichever connection it holds, usually through [`with_conn!`](crate::with_conn).

pub(crate) mod constraint;
pub(crate) mod ddl;
#[cfg(feature = "sqlite")]
pub(crate) mod deadline;
pub(crate) mod functions;
pub(crate) mod indexes;
pub(crate) mod locking;
pub(crate) mod maintenance;
pub(crate) mod migrations_gen;
pub(crate) mod monitor;
#[cfg(feature = "sqlite")]
pub(crate) mod plans;
#[cfg(feature = "sqlite")]
pub(crate) mod runner;
pub(crate) mod schema_check;
pub(crate) mod search;
pub(crate) mod snapshot;
#[cfg(feature = "sqlite")]
pub(crate) mod sqlite_direct;
#[cfg(feature = "sqlite")]
pub(crate) mod sqlite_global;
pub(crate) mod statement_cache;
pub(crate) mod tx;
pub(crate) mod update;

use crate::config::{Config, SqliteSynchronous};
#[cfg(feature = "sqlite")]
use crate::owner_only;
#[cfg(feature = "sqlite")]
use diesel::connection::SimpleConnection;
use diesel::Connection;
#[cfg(feature = "postgres")]
use diesel::RunQueryDsl as _;
#[cfg(feature = "postgres")]
use diesel_async::async_connection_wrapper::AsyncConnectionWrapper;
use diesel_async::pooled_connection::deadpool::{Object, Pool};
use diesel_async::pooled_connection::{
    AsyncDieselConnectionManager, ManagerConfig, RecyclingMethod,
};
#[cfg(feature = "sqlite")]
use diesel_async::sync_connection_wrapper::SyncConnectionWrapper;
#[cfg(feature = "postgres")]
use diesel_async::AsyncPgConnection;
use diesel_async::{AsyncConnection, SimpleAsyncConnection};
use diesel_migrations::{EmbeddedMigrations, MigrationHarness};
use futures_util::FutureExt;
pub use indexes::IndexSpec;
pub(crate) use locking::SqliteLocking;
use monitor::QueryMonitor;
pub use monitor::QueryStats;
#[cfg(feature = "sqlite")]
pub use runner::Runner;
pub use schema_check::{SchemaDrift, SchemaError, TableSpec};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
pub use tx::TxMode;

#[cfg(feature = "sqlite")]
pub(crate) use diesel::sqlite::{Sqlite, SqliteConnection};

/// The async SQLite connection type: a sync connection whose statements a [`Runner`] runs
/// (on the calling thread, each bounded by the statement timeout).
#[cfg(feature = "sqlite")]
pub type SqliteConn = SyncConnectionWrapper<SqliteConnection, Runner>;
/// The async PostgreSQL connection type.
#[cfg(feature = "postgres")]
pub type PgConn = AsyncPgConnection;
/// Error returned when no pooled connection can be had.
pub type PoolError = diesel_async::pooled_connection::deadpool::PoolError;

impl From<PoolError> for crate::error::Error {
    fn from(e: PoolError) -> Self {
        crate::error::Error::Unavailable(e.to_string())
    }
}

/// How long a SQLite connection waits for a lock before failing with "database is locked".
#[cfg(feature = "sqlite")]
pub(crate) const BUSY_TIMEOUT_MS: u32 = 5000;

/// Settings applied to every SQLite connection: a busy timeout (first, so that switching to
/// WAL waits for another process's lock instead of failing with "database is locked"), WAL
/// with the given `synchronous` level, a bound on the size the `-wal` file keeps after a
/// checkpoint ([`maintenance::JOURNAL_SIZE_LIMIT`]), foreign keys, and case-sensitive `LIKE`
/// so that `__like` means the same on both backends.
#[cfg(feature = "sqlite")]
pub(crate) fn sqlite_pragmas(synchronous: SqliteSynchronous) -> String {
    format!(
        "PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}; \
         PRAGMA journal_mode = WAL; \
         PRAGMA synchronous = {}; \
         PRAGMA journal_size_limit = {}; \
         PRAGMA foreign_keys = ON; \
         PRAGMA case_sensitive_like = ON;",
        synchronous.as_sql(),
        maintenance::JOURNAL_SIZE_LIMIT
    )
}

/// Run once by each pooled SQLite connection after [`sqlite_pragmas`]: what SQLite recommends
/// when a long-lived connection opens (analyze the tables whose statistics are missing or
/// stale, with a bounded cost; see `maintenance`).
#[cfg(feature = "sqlite")]
pub(crate) const SQLITE_OPTIMIZE_ON_OPEN: &str = "PRAGMA optimize = 0x10002;";

/// Runs [`SQLITE_OPTIMIZE_ON_OPEN`] without waiting for a lock: storing statistics needs the
/// write lock, and a connection opened while another one writes must not wait for it (nor
/// outlive the pool's checkout timeout). When the lock is taken the step is skipped; the next
/// connection, or the server's periodic upkeep, runs it.
#[cfg(feature = "sqlite")]
fn optimize_on_open(c: &mut SqliteConnection) -> diesel::QueryResult<()> {
    c.batch_execute("PRAGMA busy_timeout = 0;")?;
    if let Err(e) = maintenance::optimize_with(c, SQLITE_OPTIMIZE_ON_OPEN) {
        tracing::debug!(target: "crudforge::db", error = %e, "PRAGMA optimize skipped on a new connection");
    }
    c.batch_execute(&format!("PRAGMA busy_timeout = {BUSY_TIMEOUT_MS};"))
}

/// How a [`Database`] is opened, beyond where it is. The default has no monitoring, no
/// timeouts, and SQLite statements run inline.
#[derive(Debug, Clone, Copy)]
pub struct DbOptions {
    /// Slow-query threshold; `Some` turns query monitoring on.
    pub monitor: Option<Duration>,
    /// SQLite's `synchronous` level (ignored on PostgreSQL).
    pub sqlite_synchronous: SqliteSynchronous,
    /// Whether other processes may use the SQLite file meanwhile (`locking`; ignored on
    /// PostgreSQL).
    pub sqlite_locking: SqliteLocking,
    /// Longest wait for a pooled connection; `None` waits for ever.
    pub checkout_timeout: Option<Duration>,
    /// Longest run of one statement: PostgreSQL's `statement_timeout` on every connection, and
    /// on SQLite an interrupt from a progress handler (`deadline`); `None` leaves them
    /// unbounded.
    pub statement_timeout: Option<Duration>,
    /// Run SQLite statements on the calling thread (the default) rather
    /// than on Tokio's blocking pool (one thread per statement from that pool).
    pub sqlite_inline: bool,
}

impl Default for DbOptions {
    fn default() -> DbOptions {
        DbOptions {
            monitor: None,
            sqlite_synchronous: SqliteSynchronous::default(),
            sqlite_locking: SqliteLocking::default(),
            checkout_timeout: None,
            statement_timeout: None,
            sqlite_inline: true,
        }
    }
}

impl DbOptions {
    /// The options a configuration asks for (`ORM_PERFORMANCE_MONITORING`,
    /// `ORM_SLOW_QUERY_THRESHOLD`, `SQLITE_SYNCHRONOUS`, `SQLITE_LOCKING`, `DB_CHECKOUT_TIMEOUT`,
    /// `DB_STATEMENT_TIMEOUT`).
    pub fn from_config(config: &Config) -> DbOptions {
        DbOptions {
            monitor: config
                .db
                .orm_performance_monitoring
                .then(|| Duration::from_secs_f64(config.db.orm_slow_query_threshold)),
            sqlite_synchronous: config.db.sqlite_synchronous,
            sqlite_locking: config.db.sqlite_locking,
            checkout_timeout: Some(Duration::from_secs(config.db.db_checkout_timeout)),
            statement_timeout: Some(Duration::from_secs(config.db.db_statement_timeout)),
            sqlite_inline: true,
        }
    }
}

/// Migrations of the library's own tables (users, roles, tokens, settings, domains), SQLite.
#[cfg(feature = "sqlite")]
pub(crate) const SQLITE_MIGRATIONS: EmbeddedMigrations =
    diesel_migrations::embed_migrations!("migrations/sqlite");
/// Migrations of the library's own tables, PostgreSQL.
#[cfg(feature = "postgres")]
pub(crate) const POSTGRES_MIGRATIONS: EmbeddedMigrations =
    diesel_migrations::embed_migrations!("migrations/postgres");

pub use crate::dialect::Backend;

/// An application's own migrations, one set per backend, run after the library's.
pub struct AppMigrations {
    /// Migrations for SQLite.
    pub sqlite: EmbeddedMigrations,
    /// Migrations for PostgreSQL.
    pub postgres: EmbeddedMigrations,
}

/// Why the database could not be opened or migrated.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DbError {
    /// The connection string is not one the service understands.
    #[error("ORM_DATABASE_URI: {0}")]
    BadUri(String),
    /// The pool could not be built.
    #[error("database pool: {0}")]
    Pool(String),
    /// Connecting failed.
    #[error("cannot connect to the database: {0}")]
    Connect(#[from] diesel::ConnectionError),
    /// A migration failed.
    #[error("migration failed: {0}")]
    Migration(String),
    /// A query failed.
    #[error("database error: {0}")]
    Query(#[from] diesel::result::Error),
    /// Filesystem trouble with the SQLite file.
    #[error("database file: {0}")]
    Io(#[from] std::io::Error),
}

enum Pools {
    #[cfg(feature = "sqlite")]
    Sqlite(Pool<SqliteConn>),
    #[cfg(feature = "postgres")]
    Postgres(Pool<PgConn>),
}

struct Inner {
    pools: Pools,
    /// Where to connect, in the form each backend's `establish` takes.
    target: String,
    /// Slow-query threshold when monitoring is on.
    monitor: Option<Duration>,
    /// SQLite's `synchronous` level, also used by the migration connection.
    sqlite_synchronous: SqliteSynchronous,
    /// Longest wait for a pooled connection.
    checkout_timeout: Option<Duration>,
    /// SQLite upkeep's own connection, opened on first use and kept (see
    /// [`maintenance`]); dropped after an error, to be opened again next time.
    #[cfg(feature = "sqlite")]
    upkeep: Arc<std::sync::Mutex<Option<SqliteConnection>>>,
}

/// A pooled handle on the service's database. Cheap to clone.
#[derive(Clone)]
pub struct Database {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Database {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Database")
            .field("backend", &self.backend())
            .field("monitoring", &self.inner.monitor.is_some())
            .finish()
    }
}

/// A connection checked out of the pool, of either backend.
// One lives briefly per request; boxing the larger variant would cost an allocation each time.
#[allow(clippy::large_enum_variant)]
///
/// A variant exists when its backend's feature (`sqlite`, `postgres`) is on.
pub enum Conn {
    /// A SQLite connection.
    #[cfg(feature = "sqlite")]
    Sqlite(Object<SqliteConn>),
    /// A PostgreSQL connection.
    #[cfg(feature = "postgres")]
    Postgres(Object<PgConn>),
}

impl Conn {
    /// Which backend this connection talks to.
    pub fn backend(&self) -> Backend {
        match self {
            #[cfg(feature = "sqlite")]
            Conn::Sqlite(_) => Backend::Sqlite,
            #[cfg(feature = "postgres")]
            Conn::Postgres(_) => Backend::Postgres,
        }
    }

    /// The SQLite connection, when this is one: what a step only SQLite needs takes.
    #[cfg(feature = "sqlite")]
    pub(crate) fn as_sqlite(&mut self) -> Option<&mut SqliteConn> {
        match self {
            Conn::Sqlite(c) => Some(&mut **c),
            #[cfg(feature = "postgres")]
            Conn::Postgres(_) => None,
        }
    }

    /// Begins a transaction on this connection; end it with [`Conn::finish`], which commits
    /// an `Ok` outcome and rolls back an `Err`. On SQLite it starts with `BEGIN IMMEDIATE`: the
    /// write lock is taken first (waiting up to the busy timeout), so the transaction never has
    /// to upgrade a read lock. A connection given back to the pool with a transaction still
    /// open is discarded, not reused.
    ///
    /// ```no_run
    /// # async fn f(db: crudforge::Database) -> crudforge::Result<()> {
    /// use crudforge::prelude::*;
    /// let mut conn = db.get().await?;
    /// conn.begin(TxMode::Write).await?;
    /// let outcome = async { /* writes on &mut conn */ Ok(()) }.await;
    /// conn.finish(outcome).await
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// The database refuses (lock timeout, connection lost, already in a transaction).
    pub async fn begin(&mut self, mode: TxMode) -> Result<(), crate::error::Error> {
        tx::begin(self, mode).await
    }

    /// Ends the open transaction by the outcome of the work done in it: commits on `Ok` (a
    /// failed commit becomes the error), rolls back on `Err`.
    ///
    /// # Errors
    ///
    /// The work's error, or the commit's.
    pub async fn finish<T>(
        &mut self,
        outcome: Result<T, crate::error::Error>,
    ) -> Result<T, crate::error::Error> {
        tx::finish(self, outcome).await
    }
}

/// Runs the same Diesel code on whichever backend a [`Conn`] holds.
///
/// ```ignore
/// let n: i64 = crudforge::with_conn!(conn, |c| critters::table.count().get_result(c).await)?;
/// ```
///
/// The body is expanded once per backend, so it type-checks against each.
/// A backend whose feature is off has no arm.
#[macro_export]
macro_rules! with_conn {
    ($conn:expr, |$c:ident| $body:expr) => {
        $crate::__by_backend!($conn, |$c| sqlite => $body, postgres => $body)
    };
}

/// Where an `ORM_DATABASE_URI` points.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// A SQLite file.
    Sqlite(PathBuf),
    /// A PostgreSQL URL.
    Postgres(String),
}

impl Target {
    /// Parses a connection string; `None` means the default SQLite file in `data_dir`.
    ///
    /// # Errors
    ///
    /// A scheme other than `sqlite://`, `postgres://` or `postgresql://`, an empty path, or a
    /// backend whose feature this build leaves out.
    pub fn parse(uri: Option<&str>, data_dir: &std::path::Path) -> Result<Target, DbError> {
        let target = Target::parse_any(uri, data_dir)?;
        if target.compiled() {
            Ok(target)
        } else {
            Err(target.not_compiled(uri.is_none()))
        }
    }

    /// Whether this target's backend is compiled in (its feature is on).
    fn compiled(&self) -> bool {
        match self {
            Target::Sqlite(_) => cfg!(feature = "sqlite"),
            Target::Postgres(_) => cfg!(feature = "postgres"),
        }
    }

    /// The error for a target whose backend is not compiled in; `default` when no
    /// `ORM_DATABASE_URI` named it.
    fn not_compiled(&self, default: bool) -> DbError {
        let (what, feature) = match self {
            Target::Sqlite(_) => ("a SQLite database", "sqlite"),
            Target::Postgres(_) => ("a PostgreSQL database", "postgres"),
        };
        let unset = if default {
            "unset, so the default, "
        } else {
            ""
        };
        DbError::BadUri(format!(
            "{unset}{what} needs crudforge's `{feature}` feature, which this build of the \
             application leaves out: turn it on in Cargo.toml, or use the backend it has"
        ))
    }

    /// [`Target::parse`] whatever the features.
    fn parse_any(uri: Option<&str>, data_dir: &std::path::Path) -> Result<Target, DbError> {
        let Some(uri) = uri else {
            return Ok(Target::Sqlite(data_dir.join("crudforge.db")));
        };
        if let Some(path) = uri.strip_prefix("sqlite://") {
            if path.is_empty() {
                return Err(DbError::BadUri(
                    "sqlite:// needs a file path, e.g. sqlite://data/app.db".into(),
                ));
            }
            return Ok(Target::Sqlite(PathBuf::from(path)));
        }
        if uri.starts_with("postgres://") || uri.starts_with("postgresql://") {
            return Ok(Target::Postgres(uri.to_owned()));
        }
        Err(DbError::BadUri(
            "expected sqlite://<path> or postgres://user@host/db".into(),
        ))
    }
}

/// The pool of SQLite connections to the file at `path` (its folder created if need be), and
/// the target its connections open. Each new connection gets the pragmas, the functions and
/// the optimize step, and runs its statements through the [`Runner`] `options` ask for.
#[cfg(feature = "sqlite")]
fn sqlite_pool(path: &std::path::Path, options: DbOptions) -> Result<(Pools, String), DbError> {
    let DbOptions {
        monitor,
        sqlite_synchronous,
        sqlite_locking,
        statement_timeout,
        sqlite_inline,
        ..
    } = options;
    private_file(path)?;
    let url = locking::connection_target(path, sqlite_locking)?;
    sqlite_global::configure();
    if !plans::install() {
        tracing::warn!("SQLite may compile cached statements again when rebound");
    }
    if statement_timeout.is_some() && !deadline::install() {
        tracing::warn!("SQLite statements are not bounded (DB_STATEMENT_TIMEOUT)");
    }
    let runner = if sqlite_inline {
        Runner::inline(statement_timeout)
    } else {
        Runner::pooled(statement_timeout)
    };
    let mut cfg = ManagerConfig::<SqliteConn>::default();
    cfg.recycling_method = RecyclingMethod::Fast;
    cfg.custom_setup = Box::new(move |url| {
        let url = url.to_owned();
        async move {
            // Opening the file, the pragmas (WAL set-up), the functions and the optimize step
            // are file I/O: done on the blocking pool, once per connection.
            let conn = tokio::task::spawn_blocking(move || {
                let mut c = SqliteConnection::establish(&url)?;
                c.batch_execute(&sqlite_pragmas(sqlite_synchronous))
                    .and_then(|()| functions::register_sqlite_functions(&mut c))
                    .and_then(|()| optimize_on_open(&mut c))
                    .map_err(diesel::ConnectionError::CouldntSetupConfiguration)?;
                Ok::<_, diesel::ConnectionError>(c)
            })
            .await
            .map_err(|e| {
                diesel::ConnectionError::BadConnection(format!("opening the SQLite file: {e}"))
            })??;
            let mut conn = SqliteConn::with_runtime(conn, runner);
            conn.set_instrumentation(QueryMonitor::new(monitor, None));
            Ok(conn)
        }
        .boxed()
    });
    let mgr = AsyncDieselConnectionManager::new_with_config(url.clone(), cfg);
    let pool = Pool::builder(mgr)
        .max_size(8)
        .build()
        .map_err(|e| DbError::Pool(e.to_string()))?;
    Ok((Pools::Sqlite(pool), url))
}

/// Creates the SQLite file at `path` readable by its owner alone, in a private folder, before
/// SQLite opens it (SQLite gives the `-wal` and `-shm` files the database file's mode), and
/// warns about an existing database file, or its companions, that other users may read: they
/// hold password hashes, personal data and stored answers. `:memory:` and `file:` URIs are
/// SQLite's own to open.
#[cfg(feature = "sqlite")]
fn private_file(path: &std::path::Path) -> Result<(), DbError> {
    let text = path.to_string_lossy();
    if text == ":memory:" || text.starts_with("file:") {
        return Ok(());
    }
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        owner_only::create_dir(dir)?;
    }
    owner_only::create_file(path)?;
    for (file, mode) in loose_files(path) {
        tracing::warn!(
            "{} has mode {mode:04o}: other users of this machine may read the database \
             (password hashes, personal data); restrict it with `chmod 600 {}`",
            file.display(),
            file.display()
        );
    }
    Ok(())
}

/// The files of the SQLite database at `path` (the file, `-wal`, `-shm`) whose mode lets other
/// users in, with that mode.
#[cfg(feature = "sqlite")]
fn loose_files(path: &std::path::Path) -> Vec<(PathBuf, u32)> {
    let mut files = vec![path.to_owned()];
    for suffix in ["-wal", "-shm"] {
        let mut name = path.as_os_str().to_owned();
        name.push(suffix);
        files.push(PathBuf::from(name));
    }
    files
        .into_iter()
        .filter_map(|f| owner_only::loose_mode(&f).map(|m| (f, m)))
        .collect()
}

/// Opens (and creates) the SQLite file now, so that a bad path fails at start-up. The wait may
/// outlast the busy timeout, so that a file another process holds fails with SQLite's own
/// "database is locked" (and what may hold it), not a pool timeout.
#[cfg(feature = "sqlite")]
async fn open_first(pool: &Pool<SqliteConn>, options: DbOptions) -> Result<(), DbError> {
    let first = pool.get();
    let opened = match options.checkout_timeout {
        Some(limit) => {
            let busy = Duration::from_millis(u64::from(BUSY_TIMEOUT_MS));
            tokio::time::timeout(limit + busy, first)
                .await
                .map_err(|_| {
                    DbError::Pool(format!(
                        "opening the SQLite file took longer than {} s",
                        (limit + busy).as_secs()
                    ))
                })?
        }
        None => first.await,
    };
    opened
        .map(drop)
        .map_err(|e| DbError::Pool(locking::locked_hint(&e.to_string(), options.sqlite_locking)))
}

/// The pool of PostgreSQL connections to `url`, made lazily; each new one gets the statement
/// timeout `options` ask for.
#[cfg(feature = "postgres")]
fn postgres_pool(url: &str, options: DbOptions) -> Result<Pool<PgConn>, DbError> {
    let DbOptions {
        monitor,
        statement_timeout,
        ..
    } = options;
    let mut cfg = ManagerConfig::<PgConn>::default();
    cfg.recycling_method = RecyclingMethod::Fast;
    let set =
        statement_timeout.map(|limit| format!("SET statement_timeout = {}", limit.as_millis()));
    cfg.custom_setup = Box::new(move |url| {
        let url = url.to_owned();
        let set = set.clone();
        async move {
            let mut conn = PgConn::establish(&url).await?;
            if let Some(set) = set {
                diesel_async::SimpleAsyncConnection::batch_execute(&mut conn, &set)
                    .await
                    .map_err(diesel::ConnectionError::CouldntSetupConfiguration)?;
            }
            conn.set_instrumentation(QueryMonitor::new(monitor, None));
            Ok(conn)
        }
        .boxed()
    });
    let mgr = AsyncDieselConnectionManager::new_with_config(url.to_owned(), cfg);
    Pool::builder(mgr)
        .max_size(16)
        .build()
        .map_err(|e| DbError::Pool(e.to_string()))
}

impl Database {
    /// Opens the database the configuration names (`ORM_DATABASE_URI`, else a SQLite file in
    /// the data directory, created on first start), with monitoring as configured.
    /// PostgreSQL connections are made lazily; call [`Database::run_migrations`] or
    /// [`Database::ping`] to find out early whether the server is reachable.
    ///
    /// # Errors
    ///
    /// A malformed URI, or a SQLite file that cannot be opened.
    pub async fn connect(config: &Config) -> Result<Database, DbError> {
        let target = Target::parse(config.db.database_uri.as_deref(), &config.db.data_dir)?;
        Database::open(target, DbOptions::from_config(config)).await
    }

    /// Opens a database at `target` with `options`.
    ///
    /// # Errors
    ///
    /// A SQLite file that cannot be created or opened, or a pool that cannot be built.
    pub async fn open(target: Target, options: DbOptions) -> Result<Database, DbError> {
        let (pools, target) = match target {
            #[cfg(feature = "sqlite")]
            Target::Sqlite(path) => sqlite_pool(&path, options)?,
            #[cfg(feature = "postgres")]
            Target::Postgres(url) => (Pools::Postgres(postgres_pool(&url, options)?), url),
            #[cfg(not(all(feature = "sqlite", feature = "postgres")))]
            other => return Err(other.not_compiled(false)),
        };
        let db = Database {
            inner: Arc::new(Inner {
                pools,
                target,
                monitor: options.monitor,
                sqlite_synchronous: options.sqlite_synchronous,
                checkout_timeout: options.checkout_timeout,
                #[cfg(feature = "sqlite")]
                upkeep: Arc::default(),
            }),
        };
        #[cfg(feature = "sqlite")]
        #[allow(irrefutable_let_patterns)]
        if let Pools::Sqlite(p) = &db.inner.pools {
            open_first(p, options).await?;
        }
        Ok(db)
    }

    /// The backend in use.
    pub fn backend(&self) -> Backend {
        match self.inner.pools {
            #[cfg(feature = "sqlite")]
            Pools::Sqlite(_) => Backend::Sqlite,
            #[cfg(feature = "postgres")]
            Pools::Postgres(_) => Backend::Postgres,
        }
    }

    /// The pool's connections: `(open, in use, requests waiting for one)`.
    pub(crate) fn pool_status(&self) -> (usize, usize, usize) {
        let st = match &self.inner.pools {
            #[cfg(feature = "sqlite")]
            Pools::Sqlite(p) => p.status(),
            #[cfg(feature = "postgres")]
            Pools::Postgres(p) => p.status(),
        };
        (st.size, st.size.saturating_sub(st.available), st.waiting)
    }

    /// Whether query monitoring is on.
    pub(crate) fn monitoring(&self) -> bool {
        self.inner.monitor.is_some()
    }

    /// Checks a connection out of the pool. With monitoring on, its queries are timed and
    /// counted towards the current request's `QueryStats`.
    ///
    /// # Errors
    ///
    /// The database cannot be reached.
    pub async fn get(&self) -> Result<Conn, PoolError> {
        // An idle connection is taken at once, without arming the checkout timer; a full pool
        // or a silent server answers 503 after the checkout timeout, never hangs.
        let mut conn = match self.take(Some(Duration::ZERO)).await {
            Ok(conn) => conn,
            Err(PoolError::Timeout(deadpool::managed::TimeoutType::Wait)) => {
                match self.inner.checkout_timeout {
                    Some(limit) => tokio::time::timeout(limit, self.take(None))
                        .await
                        .map_err(|_| PoolError::Timeout(deadpool::managed::TimeoutType::Wait))??,
                    None => self.take(None).await?,
                }
            }
            Err(e) => return Err(e),
        };
        // Every query is counted and timed for the metrics by the monitor each connection got
        // when it opened; with monitoring on, slow ones are logged and the request's
        // statistics kept too, so the monitor is given the request's statistics here.
        if self.inner.monitor.is_some() {
            let monitor = QueryMonitor::new(self.inner.monitor, QueryStats::current());
            crate::with_conn!(conn, |c| c.set_instrumentation(monitor));
        }
        Ok(conn)
    }

    /// A pooled connection: `wait` `Some(ZERO)` takes an idle one or fails at once with a
    /// wait timeout; `None` waits as long as it takes (the pools have no runtime for
    /// deadpool's own timers, so other waits are bounded by the caller).
    async fn take(&self, wait: Option<Duration>) -> Result<Conn, PoolError> {
        let timeouts = deadpool::managed::Timeouts {
            wait,
            create: None,
            recycle: None,
        };
        match &self.inner.pools {
            #[cfg(feature = "sqlite")]
            Pools::Sqlite(p) => p.timeout_get(&timeouts).await.map(Conn::Sqlite),
            #[cfg(feature = "postgres")]
            Pools::Postgres(p) => p.timeout_get(&timeouts).await.map(Conn::Postgres),
        }
    }

    /// Runs a trivial query; true when it succeeds within `timeout`.
    pub async fn ping(&self, timeout: Duration) -> bool {
        let db = self.clone();
        // A task of its own: on timeout only the wait is abandoned; the probe finishes by
        // itself and gives its connection back.
        // The request's query statistics (if any) follow the probe into its task.
        let stats = QueryStats::current();
        let probe = tokio::task::spawn_local(async move {
            let run = async {
                let mut conn = db.get().await.ok()?;
                let r: Result<(), diesel::result::Error> =
                    crate::with_conn!(conn, |c| c.batch_execute("SELECT 1").await);
                r.ok()
            };
            match stats {
                Some(stats) => QueryStats::scope(stats, run).await,
                None => run.await,
            }
        });
        matches!(tokio::time::timeout(timeout, probe).await, Ok(Ok(Some(()))))
    }

    /// Runs the library's pending migrations, then the application's (if given). Returns the
    /// versions applied. On PostgreSQL an advisory lock keeps concurrent starts of several
    /// instances from racing.
    ///
    /// When the migration that introduced normalized e-mail addresses is among them, the
    /// addresses stored before it are normalized next
    /// ([`normalize_stored_emails`](crate::users::normalize_stored_emails)): collisions are
    /// logged as warnings naming the users' ids and left untouched; a failure of that step is
    /// logged as an error and does not fail the migrations (run the step again then).
    ///
    /// # Errors
    ///
    /// The database cannot be reached, or a migration fails.
    pub async fn run_migrations(&self, app: Option<AppMigrations>) -> Result<Vec<String>, DbError> {
        let applied = self.run_sql_migrations(app).await?;
        for step in inventory::iter::<AfterMigration> {
            if applied.iter().any(|v| v == step.version) {
                if let Err(e) = (step.run)(self).await {
                    tracing::error!(
                        error = %e,
                        step = step.name,
                        "a data step after a migration failed; run it again"
                    );
                }
            }
        }
        Ok(applied)
    }

    /// The SQL part of [`Database::run_migrations`].
    async fn run_sql_migrations(&self, app: Option<AppMigrations>) -> Result<Vec<String>, DbError> {
        let target = self.inner.target.clone();
        let backend = self.backend();
        let synchronous = self.inner.sqlite_synchronous;
        // Migrations use a sync connection; give them a thread of their own (and, for
        // PostgreSQL, a private runtime inside the connection wrapper).
        let (tx, rx) = tokio::sync::oneshot::channel();
        std::thread::spawn(move || {
            let _ = tx.send(migrate_blocking(backend, &target, synchronous, app));
        });
        rx.await
            .map_err(|_| DbError::Migration("the migration thread stopped".into()))?
    }
}

/// Refuses migration sets (the library's, then the application's) that share a version: the
/// database records applied migrations by version alone, so the later one would be taken as
/// applied and silently never run.
///
/// # Errors
///
/// A [`DbError::Migration`] naming both folders.
fn distinct_versions<B: diesel::backend::Backend>(
    sets: &[EmbeddedMigrations],
) -> Result<(), DbError> {
    use diesel::migration::MigrationSource;
    let mut seen: Vec<(String, String)> = Vec::new();
    for set in sets {
        let list =
            MigrationSource::<B>::migrations(set).map_err(|e| DbError::Migration(e.to_string()))?;
        for m in list {
            let name = m.name().to_string();
            let version = m.name().version().to_string();
            if let Some((_, first)) = seen.iter().find(|(v, _)| *v == version) {
                return Err(DbError::Migration(format!(
                    "the migrations `{first}` and `{name}` have the same version {version}: the \
                     database records a migration by its version, so the second would never run; \
                     give the application's folder another version (a later timestamp)"
                )));
            }
            seen.push((version, name));
        }
    }
    Ok(())
}

/// A data step that runs once, right after the migration `version` was applied by
/// [`Database::run_migrations`] (its failure is logged and does not fail the migrations). The
/// module that owns the data registers it with `inventory::submit!`, so the database layer
/// need not know the features above it.
pub(crate) struct AfterMigration {
    /// The migration's version (the leading digits of its folder name).
    pub(crate) version: &'static str,
    /// What to run again by hand if it fails, for the log line.
    pub(crate) name: &'static str,
    /// The step.
    pub(crate) run:
        for<'a> fn(
            &'a Database,
        )
            -> futures_util::future::LocalBoxFuture<'a, Result<(), crate::error::Error>>,
}

inventory::collect!(AfterMigration);

/// The PostgreSQL advisory lock (`pg_advisory_lock`) held while migrations run, so that
/// instances starting together migrate one after the other.
pub(crate) const MIGRATION_LOCK_KEY: i64 = 0x6372_7564_666f_7267; // "crudforg"

#[cfg_attr(not(feature = "sqlite"), allow(unused_variables))]
fn migrate_blocking(
    backend: Backend,
    target: &str,
    synchronous: SqliteSynchronous,
    app: Option<AppMigrations>,
) -> Result<Vec<String>, DbError> {
    fn apply<C, B>(conn: &mut C, sets: Vec<EmbeddedMigrations>) -> Result<Vec<String>, DbError>
    where
        B: diesel::backend::Backend,
        C: MigrationHarness<B>,
    {
        distinct_versions::<B>(&sets)?;
        let mut applied = Vec::new();
        for set in sets {
            let done = conn
                .run_pending_migrations(set)
                .map_err(|e| DbError::Migration(e.to_string()))?;
            applied.extend(done.into_iter().map(|v| v.to_string()));
        }
        Ok(applied)
    }
    match backend {
        #[cfg(feature = "sqlite")]
        Backend::Sqlite => {
            let mut conn = SqliteConnection::establish(target)?;
            conn.batch_execute(&sqlite_pragmas(synchronous))?;
            // Migrations may call the library's SQL functions (and create triggers that do).
            functions::register_sqlite_functions(&mut conn)?;
            let mut sets = vec![SQLITE_MIGRATIONS];
            sets.extend(app.map(|a| a.sqlite));
            let applied = apply(&mut conn, sets)?;
            // After a schema change (new indexes above all), as SQLite recommends.
            maintenance::optimize_with(&mut conn, "PRAGMA optimize;")?;
            Ok(applied)
        }
        #[cfg(feature = "postgres")]
        Backend::Postgres => {
            let mut conn =
                <AsyncConnectionWrapper<AsyncPgConnection> as Connection>::establish(target)?;
            diesel::sql_query(format!("SELECT pg_advisory_lock({MIGRATION_LOCK_KEY})"))
                .execute(&mut conn)?;
            let mut sets = vec![POSTGRES_MIGRATIONS];
            sets.extend(app.map(|a| a.postgres));
            let result = apply(&mut conn, sets);
            let _ = diesel::sql_query(format!("SELECT pg_advisory_unlock({MIGRATION_LOCK_KEY})"))
                .execute(&mut conn);
            result
        }
        // Never reached: a database of a backend not compiled in is never opened.
        #[cfg(not(all(feature = "sqlite", feature = "postgres")))]
        _ => Err(DbError::Migration(format!(
            "{backend:?} is not compiled in"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An application's migration numbered like the library's second one.
    const CLASHING: EmbeddedMigrations =
        diesel_migrations::embed_migrations!("src/db/testdata/clash");

    #[test]
    fn migration_sets_sharing_a_version_are_refused() {
        let mut refused = Vec::new();
        #[cfg(feature = "sqlite")]
        {
            assert!(distinct_versions::<Sqlite>(&[SQLITE_MIGRATIONS]).is_ok());
            refused.push(distinct_versions::<Sqlite>(&[SQLITE_MIGRATIONS, CLASHING]));
        }
        #[cfg(feature = "postgres")]
        {
            use diesel::pg::Pg;
            assert!(distinct_versions::<Pg>(&[POSTGRES_MIGRATIONS]).is_ok());
            refused.push(distinct_versions::<Pg>(&[POSTGRES_MIGRATIONS, CLASHING]));
        }
        for err in refused {
            let Err(DbError::Migration(msg)) = err else {
                panic!("{err:?}");
            };
            assert!(
                msg.contains("00000000000002_crudforge_idempotency_keys")
                    && msg.contains("00000000000002_app_tables"),
                "{msg}"
            );
        }
    }

    #[test]
    fn a_target_whose_backend_is_left_out_is_refused_naming_its_feature() {
        let dir = std::path::Path::new("data");
        let cases = [
            (
                Some("postgres://u@h/db"),
                cfg!(feature = "postgres"),
                "`postgres`",
            ),
            (
                Some("postgresql://u@h/db"),
                cfg!(feature = "postgres"),
                "`postgres`",
            ),
            (
                Some("sqlite://app.db"),
                cfg!(feature = "sqlite"),
                "`sqlite`",
            ),
            (None, cfg!(feature = "sqlite"), "`sqlite`"),
        ];
        for (uri, compiled, feature) in cases {
            match Target::parse(uri, dir) {
                Ok(_) => assert!(compiled, "{uri:?} parsed without its backend"),
                Err(DbError::BadUri(msg)) => {
                    assert!(!compiled, "{uri:?}: {msg}");
                    assert!(msg.contains(feature), "{msg}");
                }
                Err(e) => panic!("{uri:?}: {e}"),
            }
        }
    }

    #[tokio::test]
    async fn opening_a_target_whose_backend_is_left_out_is_an_error() {
        let dir = tempfile::tempdir().expect("tempdir");
        for target in [
            Target::Postgres("postgres://u@127.0.0.1:1/db".into()),
            Target::Sqlite(dir.path().join("t.db")),
        ] {
            let compiled = target.compiled();
            match Database::open(target, DbOptions::default()).await {
                Ok(db) => assert!(compiled, "{:?} opened without its backend", db.backend()),
                Err(e) => {
                    assert!(!compiled, "{e}");
                    assert!(e.to_string().contains("feature"), "{e}");
                }
            }
        }
    }

    #[cfg(feature = "sqlite")]
    #[tokio::test]
    async fn a_clashing_application_migration_stops_the_migrations() {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = Database::open(
            Target::Sqlite(dir.path().join("t.db")),
            DbOptions::default(),
        )
        .await
        .expect("open");
        let app = AppMigrations {
            sqlite: CLASHING,
            postgres: CLASHING,
        };
        let err = db.run_migrations(Some(app)).await.expect_err("refused");
        assert!(err.to_string().contains("same version"), "{err}");
    }
}
