//! SQLite queries through the connection's own synchronous interface, run where the pool's
//! [`Runner`](super::runner::Runner) runs statements (inline by default, each bounded by
//! `DB_STATEMENT_TIMEOUT`).
//!
//! The async wrapper's generic path (`diesel_async::RunQueryDsl` on a [`SqliteConn`]) has to
//! hand a query to another thread, so it first writes out its SQL and bind values and then
//! copies every value of every result row (`sqlite3_value_dup`, two allocations each) before
//! decoding. Run on the synchronous connection instead, a query with a static shape is found
//! in the statement cache without writing its SQL, and rows are decoded straight from the
//! statement. Same statements, same results, same instrumentation (the query monitor sits on
//! the synchronous connection).

use super::SqliteConn;
use diesel::query_dsl::LoadQuery;
use diesel::{OptionalExtension, QueryResult, SqliteConnection};

/// All rows of `q`.
///
/// # Errors
///
/// The query's error, or a statement stopped at its deadline.
pub async fn load<Q, U>(c: &mut SqliteConn, q: Q) -> QueryResult<Vec<U>>
where
    Q: for<'a> LoadQuery<'a, SqliteConnection, U> + Send + 'static,
    U: Send + 'static,
{
    c.spawn_blocking(move |inner| diesel::RunQueryDsl::load(q, inner))
        .await
}

/// The first row of `q`, if any.
///
/// # Errors
///
/// The query's error, or a statement stopped at its deadline.
pub async fn first<Q, U>(c: &mut SqliteConn, q: Q) -> QueryResult<Option<U>>
where
    Q: for<'a> LoadQuery<'a, SqliteConnection, U> + Send + 'static,
    U: Send + 'static,
{
    c.spawn_blocking(move |inner| diesel::RunQueryDsl::get_result(q, inner).optional())
        .await
}

/// The one row `q` returns (an `INSERT … RETURNING`, a `COUNT(*)`).
///
/// # Errors
///
/// The query's error (`NotFound` when there is no row), or a statement stopped at its
/// deadline.
pub async fn one<Q, U>(c: &mut SqliteConn, q: Q) -> QueryResult<U>
where
    Q: for<'a> LoadQuery<'a, SqliteConnection, U> + Send + 'static,
    U: Send + 'static,
{
    c.spawn_blocking(move |inner| diesel::RunQueryDsl::get_result(q, inner))
        .await
}
