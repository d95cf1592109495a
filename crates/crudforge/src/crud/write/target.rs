//! The item a PATCH, DELETE or restore addresses: its conditions, the `If-Match` precondition, the
//! guard against a key that matches several rows, and why a write that matched no row was
//! refused (403 or 404; for a restore, 404 or, to administrators, 409).

use crate::condition::{Cond, Condition};
use crate::crud::conditional::{self, Precondition};
use crate::crud::relations::rules::{self, Kind};
use crate::crud::request::{item_conds, not_found, Caller};
use crate::crud::rows::select_one;
use crate::crud::shared::Shared;
use crate::crud::soft_delete::Rows;
use crate::crud::write::members::Members;
use crate::crud::Resource;
use crate::db::Conn;
use crate::error::Error;
use actix_web::HttpRequest;

/// The item a write addresses, for a caller.
pub(crate) struct Target<'a> {
    /// The caller.
    pub(crate) who: &'a Caller,
    /// The rows the write may change: the key, the parents, the caller's write scope and the
    /// member rules the write's body touches.
    pub(crate) conds: Condition,
    /// The member rules the body touches ([`Target::sending`]).
    members: Members,
    /// The key, the parents and the write scope, without the member rules (`None`: no member
    /// rule narrows `conds`, which are these).
    scoped: Option<Condition>,
    /// The key and the parents alone, to tell a row the caller may not change from none.
    addressed: Vec<Cond>,
    /// Which rows the write addresses: live ones, or deleted ones for a restore.
    rows: Rows,
    /// The request, whose caller's read scope tells a refusal from a missing row.
    req: HttpRequest,
}

impl<'a> Target<'a> {
    /// The item the request's path addresses, within the caller's write scope.
    ///
    /// # Errors
    ///
    /// The rules' refusal (401, 403), or 404 for a key that does not parse.
    pub(crate) fn of<R: Resource>(
        shared: &Shared<R>,
        req: &HttpRequest,
        who: &'a Caller,
    ) -> Result<Target<'a>, Error> {
        Target::for_kind(shared, req, who, Kind::Update)
    }

    /// The item a DELETE addresses, within the caller's delete scope.
    ///
    /// # Errors
    ///
    /// The rules' refusal (401, 403), or 404 for a key that does not parse.
    pub(crate) fn to_delete<R: Resource>(
        shared: &Shared<R>,
        req: &HttpRequest,
        who: &'a Caller,
    ) -> Result<Target<'a>, Error> {
        Target::for_kind(shared, req, who, Kind::Delete)
    }

    fn for_kind<R: Resource>(
        shared: &Shared<R>,
        req: &HttpRequest,
        who: &'a Caller,
        kind: Kind,
    ) -> Result<Target<'a>, Error> {
        let scope = rules::scope_in(who, shared, req, Rows::Live, kind)?;
        let addressed = item_conds(shared, req)?;
        Ok(Target::within(who, req, addressed, scope))
    }

    /// The item `addressed` names (its key and parents), within the caller's write `scope`.
    pub(crate) fn within(
        who: &'a Caller,
        req: &HttpRequest,
        addressed: Vec<Cond>,
        scope: Condition,
    ) -> Target<'a> {
        let conds = Condition::from(addressed.clone()).and(scope);
        Target {
            who,
            scoped: None,
            conds,
            members: Members::default(),
            addressed,
            rows: Rows::Live,
            req: req.clone(),
        }
    }

    /// The target narrowed by the member rules an update's body touches: its statement
    /// changes the row only where they hold.
    pub(crate) fn sending(mut self, members: Members) -> Target<'a> {
        if members.is_empty() {
            return self;
        }
        let scoped = self.scoped.take().unwrap_or_else(|| self.conds.clone());
        self.conds = members.narrow(scoped.clone());
        self.scoped = Some(scoped);
        self.members = members;
        self
    }

    /// The deleted item the request's path addresses, within the caller's write scope: what a
    /// restore changes.
    ///
    /// # Errors
    ///
    /// The rules' refusal (401, 403), or 404 for a key that does not parse.
    pub(crate) fn deleted<R: Resource>(
        shared: &Shared<R>,
        req: &HttpRequest,
        who: &'a Caller,
    ) -> Result<Target<'a>, Error> {
        let scope = rules::scope_in(who, shared, req, Rows::Deleted, Kind::Update)?;
        let addressed = item_conds(shared, req)?;
        let conds = Condition::from(addressed.clone()).and(scope);
        Ok(Target {
            who,
            scoped: None,
            conds,
            members: Members::default(),
            addressed,
            rows: Rows::Deleted,
            req: req.clone(),
        })
    }

    /// The current row, or why the caller may not change it.
    ///
    /// # Errors
    ///
    /// 403 or 404 (see [`Target::refused`]), database errors.
    pub(crate) async fn current<R: Resource>(
        &self,
        shared: &Shared<R>,
        conn: &mut Conn,
    ) -> Result<R, Error> {
        match select_one::<R>(conn, &self.conds).await? {
            Some(row) => Ok(row),
            None => Err(self.refused(shared, conn).await),
        }
    }

    /// Why a write matched no row: 403 naming the members when the member rules refused them,
    /// 403 when the caller can read the row (it exists but is not writable for them), 404
    /// otherwise (so existence does not leak).
    /// A restore tells an administrator (who may list deleted rows) 409 for an item that is not
    /// deleted; to everyone else it is 404 in every case, so that a restore does not tell a
    /// deleted row they may not restore from a live one or from none.
    pub(crate) async fn refused<R: Resource>(&self, shared: &Shared<R>, conn: &mut Conn) -> Error {
        if self.rows == Rows::Deleted && !self.who.is_admin() {
            return not_found::<R>();
        }
        let anonymous = self.who.viewer().is_none();
        match self
            .members
            .refused::<R>(conn, self.scoped.as_ref().unwrap_or(&self.conds), anonymous)
            .await
        {
            Ok(Some(refusal)) => return refusal,
            Ok(None) => {}
            Err(e) => return e,
        }
        match self.readable(shared, conn, self.rows).await {
            Ok(true) => return Error::Forbidden("You may not change this item.".into()),
            Ok(false) => {}
            Err(e) => return e,
        }
        if self.rows == Rows::Deleted {
            match self.readable(shared, conn, Rows::Live).await {
                Ok(true) => {
                    return Error::Conflict(format!("This {} is not deleted.", R::NAME).into())
                }
                Ok(false) => {}
                Err(e) => return e,
            }
        }
        not_found::<R>()
    }

    /// Whether the addressed item is among `rows` and the caller may read it.
    async fn readable<R: Resource>(
        &self,
        shared: &Shared<R>,
        conn: &mut Conn,
        rows: Rows,
    ) -> Result<bool, Error> {
        let read = rules::scope_in(self.who, shared, &self.req, rows, Kind::Read);
        let Ok(read) = read else {
            return Ok(false);
        };
        let addressed = Condition::from(self.addressed.clone()).and(read);
        Ok(R::count(conn, &addressed).await? > 0)
    }

    /// 409 when the write addresses its item by a key other than the id field and the
    /// conditions match more than one row. The blueprint accepts only unique keys; the write
    /// still counts the rows first and refuses to change more than one, so a key whose
    /// unique index is missing can never change several rows.
    ///
    /// # Errors
    ///
    /// 409, database errors.
    pub(crate) async fn at_most_one<R: Resource>(
        &self,
        shared: &Shared<R>,
        conn: &mut Conn,
    ) -> Result<(), Error> {
        if !by_other_key(shared) {
            return Ok(());
        }
        if R::count(conn, &self.conds).await? > 1 {
            return Err(Error::Conflict(
                format!(
                    "The key matches several {} items; nothing was changed.",
                    R::NAME
                )
                .into(),
            ));
        }
        Ok(())
    }
}

/// Whether a write addresses its item by a key other than the id field (then it counts the
/// rows first, see [`Target::at_most_one`]).
pub(crate) fn by_other_key<R: Resource>(shared: &Shared<R>) -> bool {
    shared.res_id.name != R::ID_FIELD
}

/// The request's `If-Match`; 428 without one when the blueprint requires it.
///
/// # Errors
///
/// A malformed header (400), or 428.
pub(crate) fn precondition<R: Resource>(
    shared: &Shared<R>,
    req: &HttpRequest,
) -> Result<Option<Precondition>, Error> {
    let pre = conditional::if_match(req.headers())?;
    if pre.is_none() && shared.require_if_match {
        return Err(conditional::required());
    }
    Ok(pre)
}

/// Checks `If-Match` against the current row's tag as `viewer` sees it, the tag their reads
/// gave them (which consumes the row).
///
/// # Errors
///
/// 412 when the tag does not match.
pub(crate) fn check<R: Resource>(
    pre: &Precondition,
    current: R,
    viewer: crate::crud::rules::read::Viewer<'_>,
) -> Result<(), Error> {
    let (etag, _) = crate::crud::view::View::generated(viewer).tagged(current)?;
    conditional::check_if_match(Some(pre), &etag)
}
