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
    #[cfg_attr(not(feature = "files"), allow(unused_mut))]
    let mut obj = json_object(&req, &body)?;
    #[cfg(feature = "files")]
    let lists = crate::files::lists::ListEdits::take(&req, R::FIELDS, &mut obj)?;
    check_members(shared, &who, &obj, Operation::Patch)?;
    #[cfg(feature = "files")]
    crate::files::upload::merge(&req, &mut obj, R::FIELDS, false);
    let keys = Keys::of::<R>(&obj, &[]);
    let mut input: R::Update = decode(shared, Operation::Patch, obj, &[])?;
    hash_passwords(&mut input, st.config.password_policy()).await?;
    let ctx = who.hook_ctx(Operation::Patch, &st.db, &req);
    let input = shared.hooks.before_update_input(&ctx, input).await?;
    let needs = Needs {
        if_match: if_match.is_some(),
        updated_rule: after.judges(),
        #[cfg(feature = "files")]
        file_lists: lists.is_some(),
        ..Needs::default()
    };
    let plan = Plan::new(shared, Operation::Patch, held.key(), needs);
    let pre = if_match.as_ref();
    let write = async |conn: &mut Conn| {
        keys.check(&req, conn, &who).await?;
        let change = write(shared, &ctx, conn, &target, &after, pre, input).await?;
        #[cfg(feature = "files")]
        if let Some(lists) = &lists {
            return edit_lists(shared, &req, conn, change, lists).await;
        }
        Ok(change)
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

/// In the transaction, after the update (which holds the row's lock): applies the list edits
/// to the lists the row holds now and writes them, addressing the row by its key alone (the
/// update passed the rules); notes the files they took out.
#[cfg(feature = "files")]
async fn edit_lists<R: Resource>(
    shared: &Shared<R>,
    req: &HttpRequest,
    conn: &mut Conn,
    change: Change<R>,
    lists: &crate::files::lists::ListEdits,
) -> Result<Change<R>, Error> {
    let Change::Stored(item, answer) = change else {
        return Ok(change);
    };
    let current = serde_json::to_value(R::Response::from(item))
        .map_err(|e| Error::Internal(format!("rendering a row: {e}")))?;
    let mut set = serde_json::Map::new();
    let mut removed = Vec::new();
    for edit in &lists.edits {
        let holds = current
            .get(edit.member)
            .map(crate::files::files_in)
            .unwrap_or_default();
        let (list, dropped) = edit.apply(holds)?;
        removed.extend(dropped.iter().map(|f| f.id));
        let value = if list.is_empty() {
            serde_json::Value::Null
        } else {
            crate::files::FileList(list).to_json()
        };
        set.insert(edit.member.to_owned(), value);
    }
    let input: R::Update = serde_json::from_value(serde_json::Value::Object(set))
        .map_err(|e| Error::Internal(format!("a file list's update: {e}")))?;
    let conds = crate::condition::Condition::from(crate::crud::request::item_conds(shared, req)?);
    let item = R::update(conn, &conds, input)
        .await?
        .ok_or_else(|| Error::Internal("the updated row is gone".into()))?;
    lists.note_removed(removed);
    Ok(Change::Stored(item, answer))
}
