//! Items only the derive's expansion calls; reachable as `crudforge::__private`, not part of
//! the public API.

use crate::condition::{list_of, Arg, Cond, FromArg};
use crate::crud::IntoBind;
use crate::error::Error;
use serde::{Deserialize, Deserializer};

#[path = "private/validators.rs"]
pub mod validators;

pub use crate::condition::nodes::{Builder, Link, Node, Reach, Related, WhereFn};
pub use crate::crud::aggregate::AggregateUse;
pub use crate::crud::mount::registry::{make, Registration};
pub use crate::crud::relations::sql::{related_order, related_sql, LinkSql, RelSql};
pub use crate::crud::relations::{Relation, RelationKind, Target, WhereSql};
pub use crate::crud::rules::read::Readers;
pub use crate::crud::search::sql::{search_filter, search_rank, SearchSql};
pub use crate::crud::search::{FIELD as SEARCH_FIELD, RANK as SEARCH_RANK};
pub use crate::crud::Generated;
pub use crate::db::functions::{unicode_lower, unicode_lower_nullable};
#[cfg(feature = "sqlite")]
pub use crate::db::sqlite_direct::{first as sqlite_first, load as sqlite_load, one as sqlite_one};
pub use crate::db::statement_cache::{Cached, Shape};
pub use crate::db::update::Update;
pub use crate::timestamp::{
    now, now_after, serialize as timestamp_serialize, serialize_opt as timestamp_serialize_opt,
};
pub use crate::{
    __by_backend as by_backend, __if_postgres as if_postgres, __if_sqlite as if_sqlite,
};
pub use actix_web;
pub use apistos;
pub use chrono;
pub use diesel;
pub use diesel_async;
pub use diesel_migrations;
pub use inventory;
pub use schemars;
pub use serde;
pub use serde_json;
pub use uuid;

/// The SQL name of a Diesel table from its `table!` declaration (`#[sql_name]` included), or
/// `fallback` for a table qualified by a schema.
pub fn sql_table_name<C: std::any::Any>(
    component: &'static C,
    fallback: &'static str,
) -> &'static str {
    match (component as &dyn std::any::Any)
        .downcast_ref::<diesel::internal::table_macro::Identifier<'static>>()
    {
        Some(name) => name.0,
        None => fallback,
    }
}

/// The value `set = me` fills in: the caller's id; for a caller without an account, null
/// when the member is `nullable`, else 401.
///
/// # Errors
///
/// 401: no caller, and the member cannot be null.
pub fn set_me(ctx: &crate::crud::HookCtx, nullable: bool) -> Result<serde_json::Value, Error> {
    match &ctx.user {
        Some(u) => Ok(serde_json::Value::String(u.id.to_string())),
        None if nullable => Ok(serde_json::Value::Null),
        None => Err(Error::Unauthorized("Authentication required.".into())),
    }
}

/// The value `set = now` fills in: the current time, as stored timestamps are written.
pub fn set_now() -> serde_json::Value {
    serde_json::Value::String(now().to_rfc3339_opts(chrono::SecondsFormat::Micros, true))
}

/// The value `set = path::to::function` fills in: what the function gave, as JSON.
///
/// # Errors
///
/// 500: the value does not serialize (a type whose `Serialize` fails).
pub fn set_value<T: serde::Serialize>(member: &str, value: &T) -> Result<serde_json::Value, Error> {
    serde_json::to_value(value).map_err(|e| {
        Error::Internal(format!(
            "the server's value of `{member}` does not serialize: {e}"
        ))
    })
}

/// `rows`, returned by a multi-row `INSERT ... RETURNING`, in the order of the `ids` written
/// (`key` reads a row's id): both backends return them in that order, which this checks,
/// sorting them otherwise.
///
/// # Errors
///
/// 500 when the rows are not those of the ids.
pub fn in_order_of<R>(
    ids: &[uuid::Uuid],
    rows: Vec<R>,
    key: impl Fn(&R) -> uuid::Uuid,
) -> Result<Vec<R>, Error> {
    let wrong = || Error::Internal("an insert returned other rows than it wrote".into());
    if rows.len() != ids.len() {
        return Err(wrong());
    }
    if rows.iter().map(&key).eq(ids.iter().copied()) {
        return Ok(rows);
    }
    let at: std::collections::HashMap<uuid::Uuid, usize> =
        ids.iter().enumerate().map(|(i, id)| (*id, i)).collect();
    let mut keyed = rows
        .into_iter()
        .map(|r| at.get(&key(&r)).map(|&i| (i, r)))
        .collect::<Option<Vec<_>>>()
        .ok_or_else(wrong)?;
    keyed.sort_unstable_by_key(|(i, _)| *i);
    Ok(keyed.into_iter().map(|(_, r)| r).collect())
}

/// Binds a value for its column (see [`IntoBind`]).
pub fn bind<T: IntoBind>(v: T) -> T::Bind {
    v.into_bind()
}

/// Deserializes a PATCH member of a nullable field: absent stays `None` (through
/// `#[serde(default)]`), `null` becomes `Some(None)`.
///
/// # Errors
///
/// The inner value's errors.
pub fn double_option<'de, T, D>(d: D) -> Result<Option<Option<T>>, D::Error>
where
    T: Deserialize<'de>,
    D: Deserializer<'de>,
{
    Option::<T>::deserialize(d).map(Some)
}

/// Deserializes a PATCH member of a non-null field: absent stays `None` (through
/// `#[serde(default)]`); `null` is refused, because the field cannot be cleared.
///
/// # Errors
///
/// `null`, or the inner value's errors.
pub fn present<'de, T, D>(d: D) -> Result<Option<T>, D::Error>
where
    T: Deserialize<'de>,
    D: Deserializer<'de>,
{
    T::deserialize(d).map(Some)
}

/// Converts a condition's value for generated code; a value out of range is a 400 naming the
/// parameter.
///
/// # Errors
///
/// The value does not fit the field's type.
pub fn arg<T: FromArg>(cond: &Cond) -> Result<T, Error> {
    T::from_arg(&cond.arg).map_err(|e| arg_error(cond, e))
}

/// Converts the members of an `__in` condition for generated code.
///
/// # Errors
///
/// A member does not fit the field's type.
pub fn args<T: FromArg + IntoBind>(cond: &Cond) -> Result<Vec<T::Bind>, Error> {
    list_of::<T>(&cond.arg)
        .map(|v| v.into_iter().map(IntoBind::into_bind).collect())
        .map_err(|e| arg_error(cond, e))
}

/// The error generated code returns for a condition it cannot apply (never reached through
/// the HTTP layer, which checks conditions first).
pub fn unsupported(cond: &Cond) -> Error {
    Error::bad_param(
        cond.param.clone(),
        format!("this filter does not apply to `{}`", cond.field),
    )
}

/// Maps a conversion failure inside generated code to a 400 naming the parameter.
pub fn arg_error(cond: &Cond, why: String) -> Error {
    Error::bad_param(cond.param.clone(), why)
}

/// A field value as a condition value, for cursors (see [`to_arg`]).
pub trait ToArg {
    /// The conversion.
    fn to_arg(&self) -> Arg;
}

macro_rules! to_arg {
    ($($t:ty => |$v:ident| $e:expr),* $(,)?) => {$(
        impl ToArg for $t {
            fn to_arg(&self) -> Arg {
                let $v = self;
                $e
            }
        }
    )*};
}
to_arg!(
    String => |v| Arg::Text(v.clone()),
    i16 => |v| Arg::Int(i64::from(*v)),
    i32 => |v| Arg::Int(i64::from(*v)),
    i64 => |v| Arg::Int(*v),
    f32 => |v| Arg::Float(f64::from(*v)),
    f64 => |v| Arg::Float(*v),
    bool => |v| Arg::Bool(*v),
    uuid::Uuid => |v| Arg::Uuid(*v),
    chrono::DateTime<chrono::Utc> => |v| Arg::DateTime(*v),
    chrono::NaiveDate => |v| Arg::Date(*v),
);

/// The value of a field as a condition value (a sort key in a cursor).
pub fn to_arg<T: ToArg>(v: &T) -> Arg {
    v.to_arg()
}

/// `EXPLAIN (FORMAT JSON)` of a PostgreSQL query, which keeps the query's bound parameters:
/// the plan of exactly the query that would run, without running it.
#[derive(Debug)]
pub struct Explain<Q>(pub Q);

#[cfg(feature = "postgres")]
impl<Q: diesel::query_builder::QueryFragment<diesel::pg::Pg>>
    diesel::query_builder::QueryFragment<diesel::pg::Pg> for Explain<Q>
{
    fn walk_ast<'b>(
        &'b self,
        mut out: diesel::query_builder::AstPass<'_, 'b, diesel::pg::Pg>,
    ) -> diesel::QueryResult<()> {
        out.unsafe_to_cache_prepared();
        out.push_sql("EXPLAIN (FORMAT JSON) ");
        self.0.walk_ast(out.reborrow())
    }
}

impl<Q> diesel::query_builder::QueryId for Explain<Q> {
    type QueryId = ();
    const HAS_STATIC_QUERY_ID: bool = false;
}

impl<Q> diesel::query_builder::Query for Explain<Q> {
    type SqlType = diesel::sql_types::Text;
}

/// The planner's estimate of the rows of the top node of an `EXPLAIN (FORMAT JSON)` plan.
///
/// # Errors
///
/// 500 when the plan has no row estimate.
pub fn plan_rows(plan: &str) -> Result<i64, Error> {
    let v: serde_json::Value = serde_json::from_str(plan)
        .map_err(|e| Error::Internal(format!("reading a query plan: {e}")))?;
    let rows = v
        .get(0)
        .and_then(|p| p.get("Plan"))
        .and_then(|p| p.get("Plan Rows"))
        .and_then(serde_json::Value::as_f64)
        .ok_or_else(|| Error::Internal("the query plan has no row estimate".into()))?;
    // Estimates are whole, non-negative and far below i64::MAX.
    #[allow(clippy::cast_possible_truncation)]
    Ok(rows.max(0.0).round() as i64)
}

/// Checks a string's length in characters.
///
/// # Errors
///
/// A 422 naming the field.
pub fn check_max_len(field: &str, value: &str, max: usize) -> Result<(), Error> {
    validators::max_len(value, max).map_err(|e| Error::invalid_field(field, e))
}

/// Checks that a string looks like an e-mail address (`local@domain.tld`, no spaces).
///
/// # Errors
///
/// A 422 naming the field.
pub fn check_email(field: &str, value: &str) -> Result<(), Error> {
    validators::email(value).map_err(|e| Error::invalid_field(field, e))
}

/// A type named by `belongs_to(...)` or `has_many(...)`: a resource.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a resource, so no relation can point to it",
    label = "named as a relation's target",
    note = "help: name a type that derives `Resource`, or add `#[derive(Resource)]` to `{Self}`"
)]
pub trait RelationTarget {}

impl<R: crate::crud::Resource> RelationTarget for R {}

/// Checks that `T` is a resource (a relation's target).
pub fn relation_target<T: RelationTarget>() {}

/// A field that holds the id of another resource's item.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot hold the key of a related item",
    label = "the relation's key field",
    note = "help: a relation's key holds a resource id: make the field `uuid::Uuid` or `Option<uuid::Uuid>`"
)]
pub trait RelationKey {}

impl RelationKey for uuid::Uuid {}
impl RelationKey for Option<uuid::Uuid> {}

/// Checks that `key` can hold a resource id.
pub fn foreign_key<K: RelationKey>(key: &K) {
    let _ = key;
}

/// The schema of a file list member in an update: the ids of the files it keeps, in their
/// order (or `null`, none).
pub type FileIds = Option<Vec<uuid::Uuid>>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn returned_rows_are_put_in_the_order_written() {
        let ids: Vec<uuid::Uuid> = (0..4).map(|_| uuid::Uuid::new_v4()).collect();
        let key = |r: &(uuid::Uuid, usize)| r.0;
        let rows: Vec<_> = ids.iter().copied().zip(0..).collect();
        let in_order = in_order_of(&ids, rows.clone(), key).unwrap();
        assert_eq!(in_order, rows);
        let shuffled = vec![rows[2], rows[0], rows[3], rows[1]];
        assert_eq!(in_order_of(&ids, shuffled, key).unwrap(), rows);
        // Another row, or one missing: the insert did not return what it wrote.
        let other = vec![rows[0], rows[1], rows[2], (uuid::Uuid::new_v4(), 9)];
        assert!(in_order_of(&ids, other, key).is_err());
        assert!(in_order_of(&ids, rows[..3].to_vec(), key).is_err());
    }
}
