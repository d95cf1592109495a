//! The history's rows (the library's migration `crudforge_history`): an entry written per
//! row a write touched, the latest state of a row, a row's entries newest first.

use crate::db::Conn;
use crate::error::Error;
use crate::with_conn;
use diesel::prelude::*;

diesel::table! {
    /// The entries of the resources that keep history.
    crudforge_history (id) {
        /// The entry's number, in the order it was written; never reused.
        id -> BigInt,
        /// The resource's table.
        resource -> Text,
        /// The row's id, as text.
        row_key -> Text,
        /// `created`, `updated`, `deleted` or `restored`.
        action -> Text,
        /// The account that wrote (`NULL`: anonymous, the command line).
        actor -> Nullable<Text>,
        /// The request's id.
        request_id -> Nullable<Text>,
        /// When (microseconds since 1970, UTC).
        at -> BigInt,
        /// The row after the write, as its generated representation (JSON); `NULL` once gone.
        state -> Nullable<Text>,
        /// The members that changed: `{"member": {"old": ..., "new": ...}}` (JSON).
        changes -> Text,
        /// The writing transaction's id on PostgreSQL; 0 on SQLite.
        tx -> BigInt,
        /// The entry's place in its resource's chain, once sealed.
        seq -> Nullable<BigInt>,
        /// The hash of the entry before it in the chain, once sealed.
        prev -> Nullable<Text>,
        /// The entry's own hash, once sealed.
        hash -> Nullable<Text>,
    }
}

pub(crate) use crudforge_history as h;

/// An entry to write.
pub(crate) struct New<'a> {
    /// The resource's table.
    pub(crate) resource: &'a str,
    /// The row's id.
    pub(crate) row_key: &'a str,
    /// What happened.
    pub(crate) action: &'a str,
    /// Who wrote.
    pub(crate) actor: Option<String>,
    /// The request's id.
    pub(crate) request_id: Option<&'a str>,
    /// When.
    pub(crate) at: i64,
    /// The row after the write.
    pub(crate) state: Option<String>,
    /// The members that changed.
    pub(crate) changes: String,
}

/// Writes `entry` on `conn` (inside the write's transaction).
///
/// # Errors
///
/// Database errors.
pub(crate) async fn insert(conn: &mut Conn, entry: &New<'_>) -> Result<(), Error> {
    with_conn!(conn, |c| {
        diesel_async::RunQueryDsl::execute(
            diesel::insert_into(h::table).values((
                h::resource.eq(entry.resource),
                h::row_key.eq(entry.row_key),
                h::action.eq(entry.action),
                h::actor.eq(entry.actor.as_deref()),
                h::request_id.eq(entry.request_id),
                h::at.eq(entry.at),
                h::state.eq(entry.state.as_deref()),
                h::changes.eq(&entry.changes),
            )),
            c,
        )
        .await
    })?;
    Ok(())
}

/// The state the latest entry of row `key` of `resource` holds: `None` when the row has no
/// entry, `Some(None)` when its latest entry says it is gone.
///
/// # Errors
///
/// Database errors.
pub(crate) async fn latest(
    conn: &mut Conn,
    resource: &str,
    key: &str,
) -> Result<Option<Option<String>>, Error> {
    Ok(with_conn!(conn, |c| {
        diesel_async::RunQueryDsl::get_result(
            h::table
                .filter(h::resource.eq(resource))
                .filter(h::row_key.eq(key))
                .order(h::id.desc())
                .select(h::state)
                .limit(1),
            c,
        )
        .await
        .optional()
    })?)
}

/// One entry as a row's history shows it.
#[derive(Debug, Queryable)]
pub(crate) struct Shown {
    /// Its number.
    pub(crate) id: i64,
    /// What happened.
    pub(crate) action: String,
    /// Who wrote.
    pub(crate) actor: Option<String>,
    /// The request's id.
    pub(crate) request_id: Option<String>,
    /// When.
    pub(crate) at: i64,
    /// The members that changed (JSON).
    pub(crate) changes: String,
}

/// Up to `limit` entries of row `key` of `resource`, newest first, those before entry
/// `before` when given.
///
/// # Errors
///
/// Database errors.
pub(crate) async fn page(
    conn: &mut Conn,
    resource: &str,
    key: &str,
    before: Option<i64>,
    limit: i64,
) -> Result<Vec<Shown>, Error> {
    let before = before.unwrap_or(i64::MAX);
    Ok(with_conn!(conn, |c| {
        diesel_async::RunQueryDsl::load(
            h::table
                .filter(h::resource.eq(resource))
                .filter(h::row_key.eq(key))
                .filter(h::id.lt(before))
                .order(h::id.desc())
                .select((h::id, h::action, h::actor, h::request_id, h::at, h::changes))
                .limit(limit),
            c,
        )
        .await
    })?)
}
