//! The restore handler of a soft-delete resource: the caller, the deleted item it addresses,
//! `If-Match`, an `Idempotency-Key`, then [`run`](super::run) runs the update hooks (a restore
//! is an update of `deleted_at`), clears `deleted_at` and judges the row as written as an
//! update's ([`After`]).

use super::after::After;
use super::target::{self, Target};
use super::{run, Change, KeyCheck, Needs, Plan};
use crate::condition::{parse_arg, Cond};
use crate::crud::conditional::Precondition;
use crate::crud::idempotency::Answer;
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

/// `POST <prefix><id>/restore/`: makes a deleted item live again (200 with its
/// representation). Same rules as PATCH (the write scope, among deleted rows), same hooks
/// (`before_update_input` and `before_update` with an empty input, whose members are then
/// written, and `after_update`), `If-Match` and `Idempotency-Key`. The body is ignored. A
/// restore that matches no deleted row the caller may write is 404 for everyone but
/// administrators (the callers who may list deleted rows), who get 409 when the item is live.
pub(crate) async fn restore<R: Resource>(
    shared: &Shared<R>,
    req: HttpRequest,
    body: web::Bytes,
) -> Result<HttpResponse, Error> {
    let st = ApiState::of(&req)?;
    let who = caller(shared, &req, Operation::Restore).await?;
    let target = Target::deleted(shared, &req, &who)?;
    let after = After::of(&who, shared, &req)?;
    let if_match = target::precondition(shared, &req)?;
    let held = match KeyCheck::of(shared, st, &req, &body, &who).await? {
        KeyCheck::Replay(stored) => return Ok(stored),
        held => held,
    };
    let ctx = who.hook_ctx(Operation::Restore, &st.db, &req);
    let hooks = &shared.hooks;
    // The update hooks see an empty input; without them the restore is one statement.
    let input = if hooks.wrap(Operation::Restore) {
        let empty = crate::json::from_value(serde_json::Value::Object(serde_json::Map::new()))?;
        Some(hooks.before_update_input(&ctx, empty).await?)
    } else {
        None
    };
    let needs = Needs {
        if_match: if_match.is_some(),
        updated_rule: after.judges(),
        ..Needs::default()
    };
    let plan = Plan::new(shared, Operation::Restore, held.key(), needs);
    let pre = if_match.as_ref();
    let write =
        async |conn: &mut Conn| write(shared, &ctx, conn, &target, &after, pre, input).await;
    let ended = run(shared, st, &req, &ctx, plan, write).await?;
    Ok(ended.into_response())
}

/// In the transaction: the deleted row when `If-Match` or a `before_update` hook needs it,
/// the restore, then the members the hooks set, then the row as written judged by the rules
/// (`after`).
async fn write<R: Resource>(
    shared: &Shared<R>,
    ctx: &HookCtx,
    conn: &mut Conn,
    target: &Target<'_>,
    after: &After,
    if_match: Option<&Precondition>,
    mut input: Option<R::Update>,
) -> Result<Change<R>, Error> {
    target.at_most_one(shared, conn).await?;
    if if_match.is_some() || shared.hooks.reads_before_update() {
        let current = target.current::<R>(shared, conn).await?;
        let seen = if shared.hooks.reads_before_update() {
            Some(reload(conn, &current).await?)
        } else {
            None
        };
        if let Some(pre) = if_match {
            target::check(pre, current, ctx.user.as_ref())?;
        }
        if let (Some(row), Some(i)) = (seen, input.take()) {
            input = Some(shared.hooks.before_update(ctx, i, Arc::new(row)).await?);
        }
    }
    let was_created = after.created_before::<R>(conn, &target.conds).await?;
    let Some(item) = R::restore(conn, &target.conds).await? else {
        return Err(target.refused(shared, conn).await);
    };
    let item = match input {
        Some(input) => R::update(conn, &by_id(&item)?, input)
            .await?
            .ok_or_else(vanished::<R>)?,
        None => item,
    };
    after.check(conn, target.who, &item, was_created).await?;
    Ok(Change::Stored(item, Answer::new(200, None)))
}

/// The condition of `item`'s id.
fn by_id<R: Resource>(item: &R) -> Result<Vec<Cond>, Error> {
    let field = R::field(R::ID_FIELD).ok_or_else(vanished::<R>)?;
    let key = item.key_of(R::ID_FIELD).ok_or_else(vanished::<R>)?;
    let arg = parse_arg(field.kind, &key).map_err(|_| vanished::<R>())?;
    Ok(vec![Cond::eq(field.name, arg)])
}

fn vanished<R: Resource>() -> Error {
    Error::Internal(format!("a {} row vanished while being restored", R::NAME))
}
