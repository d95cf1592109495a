//! Single-use tickets: the ids of sealed tickets (a provider sign-in's state, a passkey
//! ceremony's) that came back, kept until the tickets expire, so that none is taken twice on
//! any instance. The table comes with the library's migration `crudforge_identities`; the
//! server prunes it hourly.

use crate::db::{Conn, Database};
use crate::error::Error;
use crate::with_conn;
use diesel::prelude::*;

diesel::table! {
    /// The tickets that came back, until they expire.
    crudforge_used_tickets (id) {
        /// The ticket's id.
        id -> Text,
        /// When it expires (microseconds since 1970, UTC).
        expires_at -> BigInt,
    }
}

use crudforge_used_tickets as ut;

/// How often the server removes the expired rows.
pub(crate) const PRUNE_EVERY: std::time::Duration = std::time::Duration::from_secs(3600);

/// Records the ticket `ticket` (valid until `expires`, seconds since 1970) as used: false
/// when it already was.
///
/// # Errors
///
/// Database errors.
#[allow(
    dead_code,
    reason = "a door of the seam: a build without optional surfaces leaves it unused"
)]
pub(crate) async fn spend(conn: &mut Conn, ticket: &str, expires: i64) -> Result<bool, Error> {
    let n = with_conn!(conn, |c| {
        diesel_async::RunQueryDsl::execute(
            diesel::insert_into(ut::table)
                .values((
                    ut::id.eq(ticket),
                    ut::expires_at.eq(expires.saturating_mul(1_000_000)),
                ))
                .on_conflict_do_nothing(),
            c,
        )
        .await
    })?;
    Ok(n == 1)
}

/// Whether the ticket `ticket` was used.
///
/// # Errors
///
/// Database errors.
#[allow(
    dead_code,
    reason = "a door of the seam: a build without optional surfaces leaves it unused"
)]
pub(crate) async fn spent(conn: &mut Conn, ticket: &str) -> Result<bool, Error> {
    let n: i64 = with_conn!(conn, |c| {
        diesel_async::RunQueryDsl::get_result(ut::table.filter(ut::id.eq(ticket)).count(), c).await
    })?;
    Ok(n > 0)
}

/// Removes the used tickets that expired: how many.
///
/// # Errors
///
/// Database errors.
pub(crate) async fn prune(db: &Database) -> Result<u64, Error> {
    let mut conn = db.get().await?;
    let at = chrono::Utc::now().timestamp_micros();
    let n = with_conn!(conn, |c| {
        diesel_async::RunQueryDsl::execute(
            diesel::delete(ut::table.filter(ut::expires_at.lt(at))),
            c,
        )
        .await
    })?;
    Ok(n as u64)
}
