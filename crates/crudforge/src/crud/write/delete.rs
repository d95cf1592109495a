//! The DELETE handler: the caller, the addressed item, `If-Match`, then [`run`](super::run)
//! reads the row when a precondition or a hook needs it, and deletes.

use super::target::{self, Target};
use super::{run, Change, Ended, Needs, Plan};
use crate::crud::conditional::Precondition;
use crate::crud::options::Operation;
use crate::crud::request::caller;
use crate::crud::rows::reload;
use crate::crud::shared::Shared;
use crate::crud::{HookCtx, Resource};
use crate::db::Conn;
use crate::error::Error;
use crate::state::ApiState;
use actix_web::{web, HttpRequest, HttpResponse};
use std::sync::Arc;

/// `DELETE` of one item (204).
pub(crate) async fn delete<R: Resource>(
    shared: &Shared<R>,
    req: HttpRequest,
    _body: web::Bytes,
) -> Result<HttpResponse, Error> {
    let st = ApiState::of(&req)?;
    let who = caller(shared, &req, Operation::Delete).await?;
    let target = Target::to_delete(shared, &req, &who)?;
    let if_match = target::precondition(shared, &req)?;
    let ctx = who.hook_ctx(Operation::Delete, &st.db, &req);
    let needs = Needs {
        if_match: if_match.is_some(),
        ..Needs::default()
    };
    let plan = Plan::new(shared, Operation::Delete, None, needs);
    let pre = if_match.as_ref();
    let write = async |conn: &mut Conn| write(shared, &ctx, conn, &target, pre).await;
    match run(shared, st, &req, &ctx, plan, write).await? {
        Ended::Done(_) => Ok(HttpResponse::NoContent().finish()),
        Ended::Replay(res) => Ok(res),
    }
}

/// In the transaction: the row when `If-Match` or a hook needs it, the before-delete hooks,
/// then the delete.
pub(crate) async fn write<R: Resource>(
    shared: &Shared<R>,
    ctx: &HookCtx,
    conn: &mut Conn,
    target: &Target<'_>,
    if_match: Option<&Precondition>,
) -> Result<Change<R>, Error> {
    target.at_most_one(shared, conn).await?;
    let (row, committed) = if if_match.is_some() || wants_row(shared) {
        read(shared, conn, target, if_match, ctx.user.as_ref()).await?
    } else {
        (None, None)
    };
    if let Some(row) = &row {
        shared.hooks.before_delete(conn, ctx, row).await?;
    }
    if !R::delete(conn, &target.conds).await? {
        return Err(target.refused(shared, conn).await);
    }
    Ok(Change::Deleted { row, committed })
}

/// Whether a hook of the delete sees the row, or a feed records its key.
fn wants_row<R: Resource>(shared: &Shared<R>) -> bool {
    let hooks = &shared.hooks;
    !hooks.after_delete.is_empty()
        || !hooks.before_delete.is_empty()
        || hooks.has_after_commit()
        || super::records(shared)
}

/// The row before the delete, with `If-Match` checked against it: the copy the
/// before- and after-delete hooks see (when any hook does) and the after-commit hooks' copy.
async fn read<R: Resource>(
    shared: &Shared<R>,
    conn: &mut Conn,
    target: &Target<'_>,
    if_match: Option<&Precondition>,
    viewer: crate::crud::rules::read::Viewer<'_>,
) -> Result<(Option<R>, Option<Arc<R>>), Error> {
    let current = target.current::<R>(shared, conn).await?;
    let committed = if shared.hooks.has_after_commit() {
        Some(Arc::new(reload(conn, &current).await?))
    } else {
        None
    };
    let Some(pre) = if_match else {
        return Ok((Some(current), committed));
    };
    let row = if wants_row(shared) {
        Some(reload(conn, &current).await?)
    } else {
        None
    };
    target::check(pre, current, viewer)?;
    Ok((row, committed))
}
