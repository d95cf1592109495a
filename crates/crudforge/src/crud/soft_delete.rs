//! Soft delete: which rows an operation sees (live, deleted or all) as one condition on
//! `deleted_at`, the `include_deleted` parameter that asks for deleted rows, and the purge of
//! rows deleted longer ago than `SOFT_DELETE_RETENTION`.
//!
//! The condition is added where the rules' scopes are made (`request::Caller::read_scope_in`,
//! `write_scope_in`, `delete_scope_in`), so every read and write built on them sees live rows
//! only; the storage
//! step of a delete is the generated `Resource::delete`, which sets `deleted_at`.

use super::Resource;
use crate::condition::{Arg, Cond, Condition, Op};
use crate::crud::query::Params;
use crate::db::Database;
use crate::error::Error;

/// The column a soft-delete resource keeps the time of its deletion in.
pub(crate) const DELETED_AT: &str = "deleted_at";

/// The query parameter that asks for deleted rows too (administrators only).
pub(crate) const INCLUDE_DELETED: &str = "include_deleted";

/// Which rows of a soft-delete resource an operation sees. For other resources every row is
/// live.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Rows {
    /// Rows not deleted: every operation's default.
    Live,
    /// Deleted rows only: what a restore addresses.
    Deleted,
    /// Both: a read with `include_deleted=true`.
    All,
}

impl Rows {
    /// The condition on `deleted_at` that selects these rows of `R` (none for a resource
    /// without soft delete, and for [`Rows::All`]).
    pub(crate) fn condition<R: Resource>(self) -> Condition {
        let deleted = |yes: bool| {
            Condition::All(vec![Condition::Is(Cond {
                field: DELETED_AT,
                op: Op::IsNull,
                arg: Arg::Bool(!yes),
                param: format!("{DELETED_AT}__isnull"),
            })])
        };
        match self {
            _ if !R::SOFT_DELETE => Condition::always(),
            Rows::Live => deleted(false),
            Rows::Deleted => deleted(true),
            Rows::All => Condition::always(),
        }
    }

    /// `scope` narrowed to these rows of `R`.
    pub(crate) fn narrow<R: Resource>(self, scope: Condition) -> Condition {
        let rows = self.condition::<R>();
        if rows.is_always() {
            scope
        } else {
            scope.and(rows)
        }
    }
}

/// Whether the query parameters ask for deleted rows (`include_deleted=true`).
///
/// # Errors
///
/// 400 naming the parameter for a value other than `true` or `false`, or when `R` keeps no
/// deleted rows.
pub(crate) fn include_deleted<R: Resource>(params: &Params) -> Result<bool, Error> {
    let Some(value) = params.get(INCLUDE_DELETED) else {
        return Ok(false);
    };
    if !R::SOFT_DELETE {
        return Err(Error::bad_param(
            INCLUDE_DELETED,
            format!("{} keeps no deleted items", R::NAME),
        ));
    }
    crate::condition::parse_bool(value)
        .map_err(|_| Error::bad_param(INCLUDE_DELETED, "expected true or false"))
}

/// Removes for good the rows of `R` deleted before `before`; how many.
///
/// # Errors
///
/// Database errors.
pub(crate) async fn purge<R: Resource>(
    db: &Database,
    before: chrono::DateTime<chrono::Utc>,
) -> Result<u64, Error> {
    if !R::SOFT_DELETE {
        return Ok(0);
    }
    let mut conn = db.get().await?;
    R::purge(&mut conn, before).await
}
