//! What the workspace's benchmarks and tests reach inside the crate, in one place: hidden from
//! the documentation and not part of the public API (it changes with any release).

pub use crate::auth::workers::run as run_on_bcrypt_workers;
pub use crate::db::functions::digest_hex;
pub use crate::db::indexes::{index_sql, missing, table_indexes};
pub use crate::db::locking::connection_target;
pub use crate::db::maintenance::JOURNAL_SIZE_LIMIT;
pub use crate::db::migrations_gen::{make_migrations_for, MANIFEST};
#[cfg(feature = "sqlite")]
pub use crate::db::plans::install as install_plans;
#[cfg(feature = "sqlite")]
pub use crate::db::sqlite_global::configure as configure_sqlite_globally;
pub use crate::db::statement_cache::MAX_SHAPES;

/// The statements that create the full-text index of `members` on `table`, what
/// `make-migrations` writes, for tests that create their tables by hand.
pub fn search_index_sql(table: &str, members: &[&str], backend: crate::db::Backend) -> Vec<String> {
    crate::db::search::SearchIndex::create(table, members, backend)
}

/// How long a SQLite connection waits for a lock (`PRAGMA busy_timeout`), in milliseconds.
#[cfg(feature = "sqlite")]
pub const BUSY_TIMEOUT_MS: u32 = crate::db::BUSY_TIMEOUT_MS;

/// The PostgreSQL advisory lock held while migrations run.
pub const MIGRATION_LOCK_KEY: i64 = crate::db::MIGRATION_LOCK_KEY;

/// The pragmas every pooled SQLite connection runs when it opens.
#[cfg(feature = "sqlite")]
pub fn sqlite_pragmas(synchronous: crate::config::SqliteSynchronous) -> String {
    crate::db::sqlite_pragmas(synchronous)
}

/// What the last delivery of an API's feeds cost: (events, queries), the queries counted when
/// `ORM_PERFORMANCE_MONITORING` is on (the `realtime` feature).
#[cfg(feature = "realtime")]
pub fn realtime_last_delivery(api: &crate::Api) -> Option<(u64, u64)> {
    crate::realtime::hub(api.state()).ok()?.last_delivery()
}
