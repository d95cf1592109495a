//! How long a resource's history is kept ([`Retention`]), and the pruning that applies it:
//! the oldest sealed entries of the resource's chain, removed in small batches, so the chain
//! keeps holding from its oldest entry kept.

use super::store::h;
use crate::db::Database;
use crate::error::Error;
use crate::with_conn;
use diesel::prelude::*;
use std::time::Duration;

/// How much of a resource's history is kept (`CrudBlueprint::history_retention`): entries
/// older than an age, or past a number of entries, are removed by the server, oldest first
/// in the resource's chain. Only entries already sealed into the chain are removed.
///
/// ```
/// use crudforge::history::Retention;
/// use std::time::Duration;
///
/// let r = Retention::age(Duration::from_secs(90 * 24 * 3600)).and_entries(1_000_000);
/// # let _ = r;
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Retention {
    max_age: Option<Duration>,
    max_entries: Option<u64>,
}

impl Retention {
    /// Keeps the entries younger than `age`.
    #[must_use]
    pub fn age(age: Duration) -> Retention {
        Retention {
            max_age: Some(age),
            max_entries: None,
        }
    }

    /// Keeps the resource's newest `n` entries.
    #[must_use]
    pub fn entries(n: u64) -> Retention {
        Retention {
            max_age: None,
            max_entries: Some(n),
        }
    }

    /// Keeps, besides, no more than the newest `n` entries.
    #[must_use]
    pub fn and_entries(mut self, n: u64) -> Retention {
        self.max_entries = Some(n);
        self
    }

    /// Keeps, besides, only the entries younger than `age`.
    #[must_use]
    pub fn and_age(mut self, age: Duration) -> Retention {
        self.max_age = Some(age);
        self
    }
}

/// Entries removed per statement.
const BATCH: i64 = 500;

/// Removes the sealed entries of `table`'s history that `keep` no longer keeps, oldest first
/// in its chain, at most [`BATCH`] places per statement; how many.
///
/// # Errors
///
/// Database errors.
pub(crate) async fn prune(db: &Database, table: &str, keep: Retention) -> Result<u64, Error> {
    let mut conn = db.get().await?;
    let mut upto: i64 = 0;
    if let Some(n) = keep.max_entries {
        let last: Option<i64> = with_conn!(conn, |c| {
            diesel_async::RunQueryDsl::get_result(
                h::table
                    .filter(h::resource.eq(table))
                    .select(diesel::dsl::max(h::seq)),
                c,
            )
            .await
        })?;
        upto = upto.max(last.unwrap_or(0) - i64::try_from(n).unwrap_or(i64::MAX));
    }
    if let Some(age) = keep.max_age {
        let before = chrono::Utc::now().timestamp_micros()
            - i64::try_from(age.as_micros()).unwrap_or(i64::MAX);
        let old: Option<i64> = with_conn!(conn, |c| {
            diesel_async::RunQueryDsl::get_result(
                h::table
                    .filter(h::resource.eq(table))
                    .filter(h::seq.is_not_null())
                    .filter(h::at.lt(before))
                    .select(diesel::dsl::max(h::seq)),
                c,
            )
            .await
        })?;
        upto = upto.max(old.unwrap_or(0));
    }
    // In ranges of places, each one statement: a chain's places follow each other.
    let first: Option<i64> = with_conn!(conn, |c| {
        diesel_async::RunQueryDsl::get_result(
            h::table
                .filter(h::resource.eq(table))
                .select(diesel::dsl::min(h::seq)),
            c,
        )
        .await
    })?;
    let mut removed = 0;
    let mut from = first.unwrap_or(upto + 1);
    while from <= upto {
        let to = upto.min(from + BATCH - 1);
        let n = with_conn!(conn, |c| {
            diesel_async::RunQueryDsl::execute(
                diesel::delete(h::table.filter(h::resource.eq(table)).filter(h::seq.le(to))),
                c,
            )
            .await
        })?;
        removed += n as u64;
        from = to + 1;
    }
    Ok(removed)
}
