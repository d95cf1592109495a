//! The PATCH handler: the caller, the addressed item, `If-Match`, the input, then
//! [`run`](super::run) reads the current row when a precondition or a hook needs it, updates,
//! and judges the row as written ([`After`]).

use super::after::After;
use super::target::{self, Target};
use super::{run, Change, KeyCheck, Needs, Plan};
use crate::crud::conditional::Precondition;
use crate::crud::idempotency::Answer;
use crate::crud::options::Operation;
use crate::crud::relations::keys::Keys;
use crate::crud::request::{caller, check_members, decode, hash_passwords, json_object};
use crate::crud::rows::reload;
use crate::crud::shared::Shared;
use crate::crud::write::members::Members;
use crate::crud::Resource;
use crate::db::Conn;
use crate::error::Error;
use crate::state::ApiState;
use actix_web::{web, HttpRequest, HttpResponse};
use std::sync::Arc;

/// `PATCH` of one item: changes the members the body sends (200 with the representation).
pub(crate) async fn update<R: Resource>(
    shared: &Shared<R>,
    req: HttpRequest,
    body: web::Bytes,
) -> Result<HttpResponse, Error> {
    let st = ApiState::of(&req)?;
    let who = caller(shared, &req, Operation::Patch).await?;
    let target = Target::of(shared, &req, &who)?;
    let after = After::of(&who, shared, &req)?;
    let if_match = target::precondition(shared, &req)?;
    let held = match KeyCheck::of(shared, st, &req, &body, &who).await? {
        KeyCheck::Replay(stored) => return Ok(stored),
        held => held,
    };
    let mut obj = json_object(&req, &body)?;
    let mut taken = false;
    for part in shared.parts.iter() {
        taken |= part.take_members(&req, Operation::Patch, &mut obj)?;
    }
    check_members(shared, &who, &obj, Operation::Patch)?;
    let target = target.sending(Members::judge(&*shared.rules, &req, &who, &obj, false)?);
    for part in shared.parts.iter() {
        part.add_members(&req, Operation::Patch, &mut obj);
    }
    let keys = Keys::of::<R>(&obj, &[]);
    let mut input: R::Update = decode(shared, Operation::Patch, obj, &[])?;
    hash_passwords(&mut input, st.config.password_policy()).await?;
    let ctx = who.hook_ctx(Operation::Patch, &st.db, &req);
    let input = shared.hooks.before_update_input(&ctx, input).await?;
    let needs = Needs {
        if_match: if_match.is_some(),
        updated_rule: after.judges(),
        part_members: taken,
        ..Needs::default()
    };
    let plan = Plan::new(shared, Operation::Patch, held.key(), needs);
    let pre = if_match.as_ref();
    let write = async |conn: &mut Conn| {
        keys.check(&req, conn, &who).await?;
        let change = write(shared, &ctx, conn, &target, &after, pre, input).await?;
        match change {
            Change::Stored(mut item, answer) if taken => {
                for part in shared.parts.iter() {
                    item = part.after_update(shared, &req, conn, item).await?;
                }
                Ok(Change::Stored(item, answer))
            }
            change => Ok(change),
        }
    };
    let ended = run(shared, st, &req, &ctx, plan, write).await?;
    Ok(ended.into_response())
}

/// In the transaction: the current row when `If-Match` or a `before_update` hook needs it,
/// then the update, then the row as written judged by the rules (`after`).
pub(crate) async fn write<R: Resource>(
    shared: &Shared<R>,
    ctx: &crate::crud::HookCtx,
    conn: &mut Conn,
    target: &Target<'_>,
    after: &After,
    if_match: Option<&Precondition>,
    mut input: R::Update,
) -> Result<Change<R>, Error> {
    target.at_most_one(shared, conn).await?;
    if if_match.is_some() || shared.hooks.reads_before_update() {
        let current = target.current::<R>(shared, conn).await?;
        if let Some(current) = checked(shared, conn, if_match, current, ctx.user.as_ref()).await? {
            input = shared
                .hooks
                .before_update(ctx, input, Arc::new(current))
                .await?;
        }
    }
    let was_created = after.created_before::<R>(conn, &target.conds).await?;
    let Some(item) = R::update(conn, &target.conds, input).await? else {
        return Err(target.refused(shared, conn).await);
    };
    after.check(conn, target.who, &item, was_created).await?;
    Ok(Change::Stored(item, Answer::new(200, None)))
}

/// Checks `If-Match` (when sent) against `current`; gives the row the `before_update` hooks
/// see (a second copy when the check consumed the first), or `None` when no hook reads it.
async fn checked<R: Resource>(
    shared: &Shared<R>,
    conn: &mut Conn,
    if_match: Option<&Precondition>,
    current: R,
    viewer: crate::crud::rules::read::Viewer<'_>,
) -> Result<Option<R>, Error> {
    let Some(pre) = if_match else {
        return Ok(Some(current));
    };
    let copy = if shared.hooks.reads_before_update() {
        Some(reload(conn, &current).await?)
    } else {
        None
    };
    target::check(pre, current, viewer)?;
    Ok(copy)
}
