//! Writes through a relation: a belongs-to key that a POST, a PATCH or a batch item sets (or a
//! nested prefix's parent from the path) must name a row the caller may read through the
//! related resource's `GET` (its rules' read scope, live rows only). Otherwise the write is
//! refused with one 422 naming the member, the same for an id that does not exist, names a
//! row the caller may not read or a soft-deleted one: a write is no existence oracle, and
//! nobody attaches rows to parents they cannot see.

use super::{Relation, RelationKind};
use crate::condition::{Arg, Cond, Condition};
use crate::crud::options::Operation;
use crate::crud::request::{caller_on, Caller};
use crate::crud::soft_delete::Rows;
use crate::crud::Resource;
use crate::db::Conn;
use crate::error::Error;
use actix_web::HttpRequest;
use futures_util::future::LocalBoxFuture;
use serde_json::{Map, Value};

/// Whether the related row whose key member `key` holds `value` is one the request's caller
/// may read (`admin`: the written resource's caller is an administrator), for a target of any
/// type.
pub(crate) type ReadableFn = for<'a> fn(
    &'a HttpRequest,
    &'a mut Conn,
    &'static str,
    Arg,
    bool,
) -> LocalBoxFuture<'a, Result<bool, Error>>;

/// The belongs-to keys one write sets: each relation with the value the write gives its key
/// (`None`: a value that is not an id, which the body's decoding refuses first).
#[derive(Debug, Default)]
pub(crate) struct Keys(Vec<(&'static Relation, Option<Arg>)>);

impl Keys {
    /// The belongs-to keys of `R` that the body `obj` sets to a value other than `null`, and
    /// those a nested prefix's parents set from the path.
    pub(crate) fn of<R: Resource>(obj: &Map<String, Value>, parents: &[Cond]) -> Keys {
        let mut keys = Vec::new();
        for rel in R::RELATIONS
            .iter()
            .filter(|r| r.kind == RelationKind::BelongsTo)
        {
            if let Some(c) = parents.iter().find(|c| c.field == rel.local) {
                keys.push((rel, Some(c.arg.clone())));
            } else if let Some(v) = obj.get(rel.local).filter(|v| !v.is_null()) {
                let id = v.as_str().and_then(|s| uuid::Uuid::parse_str(s).ok());
                keys.push((rel, id.map(Arg::Uuid)));
            }
        }
        Keys(keys)
    }

    /// Refuses (422 naming the member) a key that names no row the caller may read.
    ///
    /// # Errors
    ///
    /// The 422; database errors.
    pub(crate) async fn check(
        &self,
        req: &HttpRequest,
        conn: &mut Conn,
        who: &Caller,
    ) -> Result<(), Error> {
        for (rel, value) in &self.0 {
            let readable = match value {
                Some(v) => {
                    let t = (rel.target)();
                    (t.readable)(req, conn, rel.remote, v.clone(), who.is_admin()).await?
                }
                None => false,
            };
            if !readable {
                return Err(Error::invalid_field(
                    rel.local,
                    format!("names no `{}` you may read", rel.name),
                ));
            }
        }
        Ok(())
    }
}

/// [`ReadableFn`] for the target `T`: through its mounted blueprint's `GET`, the row must be
/// within the read scope the caller gets there (none when that `GET` refuses them). A target
/// that is not mounted (or has no `GET`) has no rules to read it by: administrators may name
/// any of its live rows, others none.
pub(crate) async fn readable<T: Resource>(
    req: &HttpRequest,
    conn: &mut Conn,
    key: &'static str,
    value: Arg,
    admin: bool,
) -> Result<bool, Error> {
    let scope = match super::mounted::<T>(req) {
        Some(shared) => {
            let scope = match caller_on(&shared, req, Operation::Get, conn).await {
                Ok(who) => super::rules::read_scope(&who, &shared, req),
                Err(e) => Err(e),
            };
            match scope {
                Ok(scope) => scope,
                Err(Error::Unauthorized(_) | Error::Forbidden(_)) => return Ok(false),
                Err(e) => return Err(e),
            }
        }
        None if admin => Rows::Live.condition::<T>(),
        None => return Ok(false),
    };
    let Some(field) = T::field(key) else {
        return Ok(false);
    };
    let found = Condition::from(Cond::eq(field.name, value)).and(scope);
    Ok(T::count(conn, &found).await? > 0)
}
