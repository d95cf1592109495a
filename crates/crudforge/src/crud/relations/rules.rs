//! The scopes of permission rules, with the relations a rule crosses (`event.organizer_id =
//! @me`, `critter.habitat.keeper_id = @me`) linked: each crossing is a correlated subquery
//! that also applies the related resource's own read scope for the same caller, so a rule
//! never reaches a row through one its caller could not read. Every generated read and write
//! takes its scope from here; a create rule is judged on the stored row in the create's
//! transaction ([`check_created`]).

use super::{mounted, relation};
use crate::auth::CurrentUser;
use crate::condition::{parse_arg, Arg, Cond, Condition, Link, Op};
use crate::crud::options::Operation;
use crate::crud::request::{caller_for, Caller};
use crate::crud::shared::Shared;
use crate::crud::soft_delete::Rows;
use crate::crud::Resource;
use crate::db::Conn;
use crate::error::Error;
use crate::perms::Access;
use actix_web::HttpRequest;

/// How many relations deep a rule's crossings may reach, counting those of the related
/// resources' own rules; a crossing beyond it matches no row (rules that cross into each
/// other cannot loop).
pub(crate) const MAX_RULE_DEPTH: usize = 6;

/// Which of the rules a scope comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// `read`: lists, counts, `GET`, relations.
    Read,
    /// `write`: `PATCH` (and restore).
    Update,
    /// `delete`: `DELETE`.
    Delete,
}

/// The condition no row matches.
fn never() -> Condition {
    Condition::Any(Vec::new())
}

/// The scope the rules of `kind` give `who` among `rows`, its crossings linked.
///
/// # Errors
///
/// The rules' refusal (401, 403).
pub(crate) fn scope_in<R: Resource>(
    who: &Caller,
    shared: &Shared<R>,
    req: &HttpRequest,
    rows: Rows,
    kind: Kind,
) -> Result<Condition, Error> {
    scope_at(who, shared, req, rows, kind, 0)
}

/// The read scope of `who`, live rows only.
///
/// # Errors
///
/// The rules' refusal (401, 403).
pub(crate) fn read_scope<R: Resource>(
    who: &Caller,
    shared: &Shared<R>,
    req: &HttpRequest,
) -> Result<Condition, Error> {
    scope_at(who, shared, req, Rows::Live, Kind::Read, 0)
}

fn scope_at<R: Resource>(
    who: &Caller,
    shared: &Shared<R>,
    req: &HttpRequest,
    rows: Rows,
    kind: Kind,
    depth: usize,
) -> Result<Condition, Error> {
    let c = match kind {
        Kind::Read => who.read_scope_in(shared, rows)?,
        Kind::Update => who.write_scope_in(shared, rows)?,
        Kind::Delete => who.delete_scope_in(shared, rows)?,
    };
    Ok(if pending(&c) {
        link::<R>(req, c, who.viewer(), depth)
    } else {
        c
    })
}

/// Whether `c` holds a crossing not linked yet.
pub(super) fn pending(c: &Condition) -> bool {
    match c {
        Condition::All(v) | Condition::Any(v) => v.iter().any(pending),
        Condition::Not(c) => pending(c),
        Condition::Is(_) => false,
        Condition::Related(r) => r.link.is_none(),
    }
}

/// Links the crossings of `c`, a rule's condition on `R` for `user`: each one's tables and
/// keys, its nested crossings (on the related resource), and the related resource's read
/// scope for `user`.
pub(crate) fn link<R: Resource>(
    req: &HttpRequest,
    c: Condition,
    user: Option<&CurrentUser>,
    depth: usize,
) -> Condition {
    match c {
        Condition::All(v) => Condition::All(
            v.into_iter()
                .map(|c| link::<R>(req, c, user, depth))
                .collect(),
        ),
        Condition::Any(v) => Condition::Any(
            v.into_iter()
                .map(|c| link::<R>(req, c, user, depth))
                .collect(),
        ),
        Condition::Not(inner) => Condition::Not(Box::new(link::<R>(req, *inner, user, depth))),
        Condition::Related(mut r) if r.link.is_none() => {
            let Some(rel) = relation::<R>(r.name) else {
                return never();
            };
            if depth >= MAX_RULE_DEPTH {
                return never();
            }
            let t = (rel.target)();
            let inner = (t.link_rule)(req, *r.cond, user, depth + 1);
            let scope = (t.rule_scope)(req, user, depth + 1);
            r.cond = Box::new(inner.and(scope));
            r.link = Some(Link {
                outer_key: rel.local,
                table: (t.table)(),
                key: rel.remote,
                #[cfg(feature = "sqlite")]
                sqlite: t.sqlite,
                #[cfg(feature = "postgres")]
                pg: t.pg,
            });
            Condition::Related(r)
        }
        other => other,
    }
}

/// The caller of `door`, judged as operation `op` judges it and then by the door's own access
/// (`CrudBlueprint::door`), with the rows that access narrows the door to ([`Gated`]),
/// crossings linked. The caller is loaded on `conn` when given (in the request's
/// snapshot).
///
/// # Errors
///
/// The operation's or the door's refusal (401, 403).
pub(crate) async fn at_door<R: Resource>(
    shared: &Shared<R>,
    req: &HttpRequest,
    op: Operation,
    door: crate::perms::Door,
    conn: Option<&mut Conn>,
) -> Result<(Caller, Gated), Error> {
    if shared.gates.get(door).is_none() {
        let who = match conn {
            Some(conn) => crate::crud::request::caller_on(shared, req, op, conn).await?,
            None => crate::crud::request::caller(shared, req, op).await?,
        };
        return Ok((who, Gated(None)));
    }
    // A gate judges the caller even where the operation is public.
    let user = match conn {
        Some(conn) => crate::auth::current_user_on(req, conn).await?,
        None => crate::auth::current_user(req).await?,
    };
    at_door_for(shared, req, op, door, user.as_ref())
}

/// [`at_door`] for a caller already known (`None`: anonymous).
///
/// # Errors
///
/// The operation's or the door's refusal (401, 403).
pub(crate) fn at_door_for<R: Resource>(
    shared: &Shared<R>,
    req: &HttpRequest,
    op: Operation,
    door: crate::perms::Door,
    user: Option<&CurrentUser>,
) -> Result<(Caller, Gated), Error> {
    let gated = match shared.gates.get(door) {
        None => None,
        Some(gate) => {
            let c = gate.access(user).into_conds()?;
            if c.is_always() {
                None
            } else if pending(&c) {
                Some(link::<R>(req, c, user, 0))
            } else {
                Some(c)
            }
        }
    };
    Ok((caller_for(shared, op, user)?, Gated(gated)))
}

/// The rows a door's own access narrows it to (`None`: every row; the default, a door
/// without an access of its own).
#[derive(Debug, Default)]
pub(crate) struct Gated(Option<Condition>);

impl Gated {
    /// The read scope of `who` at a door that reads (the export, aggregates, the feed,
    /// downloads): the read rule's among `rows`, narrowed to the door's rows.
    ///
    /// # Errors
    ///
    /// The rules' refusal (401, 403).
    pub(crate) fn read_scope<R: Resource>(
        self,
        who: &Caller,
        shared: &Shared<R>,
        req: &HttpRequest,
        rows: Rows,
    ) -> Result<Condition, Error> {
        let scope = scope_in(who, shared, req, rows, Kind::Read)?;
        Ok(match self.0 {
            Some(gated) => scope.and(gated),
            None => scope,
        })
    }

    /// The door's rows, when its access narrows them.
    pub(crate) fn rows(&self) -> Option<&Condition> {
        self.0.as_ref()
    }
}

/// The read scope of `T` for `user` as a rule's crossing applies it: through its mounted
/// blueprint's `GET`, as [`super::keys::readable`] judges keys; a resource not mounted there
/// gives administrators its live rows and others none, and a refusal gives none.
pub(crate) fn read_scope_of<T: Resource>(
    req: &HttpRequest,
    user: Option<&CurrentUser>,
    depth: usize,
) -> Condition {
    let Some(shared) = mounted::<T>(req) else {
        return if user.is_some_and(CurrentUser::is_admin) {
            Rows::Live.condition::<T>()
        } else {
            never()
        };
    };
    caller_for(&shared, Operation::Get, user)
        .and_then(|who| scope_at(&who, &shared, req, Rows::Live, Kind::Read, depth))
        .unwrap_or_else(|_| never())
}

/// The condition a row created by `who` must meet (`None`: none beyond the create rule's
/// gate), crossings linked.
///
/// # Errors
///
/// The rules' refusal.
pub(crate) fn created_scope<R: Resource>(
    who: &Caller,
    shared: &Shared<R>,
    req: &HttpRequest,
) -> Result<Option<Condition>, Error> {
    let Caller::User(user) = who else {
        return Ok(None);
    };
    match shared.rules.created(user.as_ref()) {
        Access::All => Ok(None),
        access => {
            let c = access.into_conds()?;
            Ok(Some(link::<R>(req, c, user.as_ref(), 0)))
        }
    }
}

/// Refuses a created row outside `scope` (401 for an anonymous caller, 403 for others); run
/// in the create's transaction, so the refused row is never committed.
///
/// # Errors
///
/// The refusal; database errors.
pub(crate) async fn check_created<R: Resource>(
    shared: &Shared<R>,
    conn: &mut Conn,
    who: &Caller,
    scope: &Condition,
    item: &R,
) -> Result<(), Error> {
    let found = Condition::from(Cond::eq(shared.res_id.name, created_key(shared, item)?))
        .and(scope.clone());
    if R::count(conn, &found).await? > 0 {
        return Ok(());
    }
    let why = format!("You are not allowed to create this {}.", R::NAME);
    Err(match who.viewer() {
        None => Error::Unauthorized(why.into()),
        Some(_) => Error::Forbidden(why.into()),
    })
}

/// Refuses the first of rows created together that is outside `scope`, as
/// [`check_created`] does, with one count per 1,000 rows when every row is inside it.
///
/// # Errors
///
/// The first refused row's refusal, given to `at` with its position; database errors.
pub(crate) async fn check_all_created<R: Resource>(
    shared: &Shared<R>,
    conn: &mut Conn,
    who: &Caller,
    scope: &Condition,
    items: &[R],
    at: impl Fn(usize, Error) -> Error,
) -> Result<(), Error> {
    /// Rows counted by one statement.
    const PER_COUNT: usize = 1000;
    for (n, chunk) in items.chunks(PER_COUNT).enumerate() {
        let keys = chunk
            .iter()
            .map(|item| created_key(shared, item))
            .collect::<Result<Vec<_>, _>>()?;
        let all = Cond {
            field: shared.res_id.name,
            op: Op::In,
            arg: Arg::List(keys),
            param: shared.res_id.name.to_owned(),
        };
        let found = Condition::from(all).and(scope.clone());
        let inside = R::count(conn, &found).await?;
        if usize::try_from(inside).is_ok_and(|k| k == chunk.len()) {
            continue;
        }
        for (i, item) in chunk.iter().enumerate() {
            check_created(shared, conn, who, scope, item)
                .await
                .map_err(|e| at(n * PER_COUNT + i, e))?;
        }
    }
    Ok(())
}

/// The key of a created row, as a condition compares it.
fn created_key<R: Resource>(shared: &Shared<R>, item: &R) -> Result<Arg, Error> {
    item.key_of(shared.res_id.name)
        .and_then(|k| parse_arg(shared.res_id.kind, &k).ok())
        .ok_or_else(|| Error::Internal("a created row has no key to judge it by".into()))
}
