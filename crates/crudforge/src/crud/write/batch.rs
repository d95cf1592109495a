//! Batch writes: many creates, updates or deletes of one resource in one request and one
//! transaction. Each item goes through what a single write of its kind goes through (the
//! rules, the members a caller may send, the validators, the hooks, `If-Match` as the item's
//! `if_match`), and the whole batch through one `Idempotency-Key`. A refusal writes nothing and
//! answers one problem whose `errors` point at every item (and member) at fault.
//!
//! Bodies: `{"items": [...]}`. A create's items are the bodies a POST takes; an update's are
//! `{"<key>": ..., "if_match": "\"tag\"", "changes": {...}}`; a delete's `{"<key>": ...,
//! "if_match": ...}`. The answer of a create (201) or update (200) is
//! `{"data": [items], "etags": [their tags]}`, in the order of the request; a delete answers
//! 204.

use super::after::After;
use super::create::{input, refuse_anonymous};
use super::target::Target;
use super::{run, update, Change, Ended, KeyCheck, Needs, Plan};
use crate::condition::{parse_arg, Arg, Cond};
use crate::crud::conditional::{self, Precondition};
use crate::crud::idempotency::{Answer, IdemKey};
use crate::crud::options::Operation;
use crate::crud::relations::keys::Keys;
use crate::crud::relations::rules::{self, Gated, Kind};
use crate::crud::request::{caller, check_members, decode, hash_passwords, parent_conds, Caller};
use crate::crud::shared::Shared;
use crate::crud::soft_delete::Rows;
use crate::crud::write::members::Members;
use crate::crud::{HookCtx, Resource};
use crate::db::tx::Savepoint;
use crate::db::Conn;
use crate::error::{Error, ItemError};
use crate::state::ApiState;
use actix_web::{web, HttpRequest, HttpResponse};
use serde_json::{Map, Value};

/// The path of the batch create and update routes, after the blueprint's prefix.
pub(crate) const PATH: &str = "batch/";
/// The path of the batch delete route, after the blueprint's prefix.
pub(crate) const DELETE_PATH: &str = "batch/delete/";

/// `POST <prefix>batch/`: creates every item, or none (201 with `data` and `etags`).
pub(crate) async fn create<R: Resource>(
    shared: &Shared<R>,
    req: HttpRequest,
    body: web::Bytes,
) -> Result<HttpResponse, Error> {
    let st = ApiState::of(&req)?;
    let who = caller(shared, &req, Operation::Post).await?;
    refuse_anonymous(shared, &who)?;
    let parents = parent_conds(shared, &req)?;
    let held = match KeyCheck::of(shared, st, &req, &body, &who).await? {
        KeyCheck::Replay(stored) => return Ok(stored),
        held => held,
    };
    let items = items(&req, &body, st.config.http.batch_max_items)?;
    let creates = Creates {
        who: &who,
        gated: &Gated::default(),
        parents: &parents,
        key: held.key(),
        answer: Answer::new(201, None),
    };
    Ok(create_all(shared, st, &req, creates, items)
        .await?
        .into_response())
}

/// How a batch of creates runs: its caller (already judged allowed to create), the parent
/// conditions of the path, the claimed idempotency key, and the answer (its status; a body
/// given here is kept, otherwise the created items are rendered into it).
pub(crate) struct Creates<'a> {
    /// The caller, for the rules, the members they may send and the hooks.
    pub(crate) who: &'a Caller,
    /// What a created row must satisfy besides the create rule: the rows the door's own access
    /// narrows it to (an import's, `CrudBlueprint::door`).
    pub(crate) gated: &'a Gated,
    /// The conditions of the path's parent parameters (they set the parent members).
    pub(crate) parents: &'a [Cond],
    /// The idempotency key claimed for the whole batch, if any.
    pub(crate) key: Option<&'a IdemKey>,
    /// The answer's status, and its body when it is not the created items.
    pub(crate) answer: Answer,
}

/// The one path of many creates (the batch create, an import and each of its chunks): every
/// item judged by the single create's steps (members the caller may send, server-set members,
/// the rules, the validators), then prepared (passwords, `before_create`), then inserted in one
/// transaction through [`run`] (keys of relations, the create rule on the stored row, the
/// after-write hooks, with a feed its events), or none.
///
/// # Errors
///
/// [`Error::Items`] naming every item (by its position in `items`) refused before the
/// transaction, or the first refused in it; the wrapper's errors.
///
/// `items` is taken one item at a time (an import reads each row as it is taken): only the
/// typed inputs are kept.
pub(crate) async fn create_all<R: Resource>(
    shared: &Shared<R>,
    st: &ApiState,
    req: &HttpRequest,
    creates: Creates<'_>,
    items: impl IntoIterator<Item = Value>,
) -> Result<Ended, Error> {
    let Creates {
        who,
        gated,
        parents,
        key,
        answer,
    } = creates;
    let items = items.into_iter();
    let mut inputs = Vec::with_capacity(items.size_hint().0);
    let mut refused = Vec::new();
    // One entry per item once no item is refused (the only case in which they are read).
    let mut keys = Vec::with_capacity(items.size_hint().0);
    let mut members = Vec::with_capacity(items.size_hint().0);
    let ctx = who.hook_ctx(Operation::Post, &st.db, req);
    for (i, item) in items.enumerate() {
        let read = object(item).and_then(|obj| {
            keys.push(Keys::of::<R>(&obj, parents));
            members.push(Members::judge(&*shared.rules, req, who, &obj, true)?);
            input(shared, req, obj, who, &ctx, parents)
        });
        match read {
            Ok(input) => inputs.push(input),
            Err(e) => refused.push(ItemError::new(i, e)),
        }
    }
    let anonymous = who.viewer().is_none();
    let members_judged = members.iter().any(|m| !m.is_empty());
    refuse(refused)?;
    let policy = st.config.password_policy();
    let mut ready = Vec::with_capacity(inputs.len());
    for (i, mut input) in inputs.into_iter().enumerate() {
        let prepared = async {
            hash_passwords(&mut input, policy).await?;
            shared.hooks.before_create(&ctx, input).await
        };
        ready.push(prepared.await.map_err(|e| at(i, e))?);
    }
    let created = match (rules::created_scope(who, shared, req)?, gated.rows()) {
        (Some(rule), Some(door)) => Some(rule.and(door.clone())),
        (rule, door) => rule.or_else(|| door.cloned()),
    };
    let needs = Needs {
        batch: true,
        create_rule: created.is_some() || members_judged,
        ..Needs::default()
    };
    let plan = Plan::new(shared, Operation::Post, key, needs);
    // Without after-create hooks, no step of one item sees another's row: the relations' keys
    // are checked, then every row written by multi-row INSERTs, then the create rule judged
    // on them all at once. With hooks, each row is written and its hooks run before the next.
    let together = !shared.hooks.runs_after(Operation::Post);
    let insert = async |conn: &mut Conn| {
        let rows = if together {
            for (i, keys) in keys.iter().enumerate() {
                keys.check(req, conn, who).await.map_err(|e| at(i, e))?;
            }
            let rows = insert_all(conn, ready).await?;
            if let Some(scope) = &created {
                rules::check_all_created(shared, conn, who, scope, &rows, at).await?;
            }
            for (i, (row, m)) in rows.iter().zip(&members).enumerate() {
                m.check_created(conn, anonymous, row)
                    .await
                    .map_err(|e| at(i, e))?;
            }
            rows
        } else {
            let mut rows = Vec::with_capacity(ready.len());
            for (i, (input, keys)) in ready.into_iter().zip(&keys).enumerate() {
                keys.check(req, conn, who).await.map_err(|e| at(i, e))?;
                let row = R::insert(conn, input).await.map_err(|e| at(i, e))?;
                if let Some(scope) = &created {
                    rules::check_created(shared, conn, who, scope, &row)
                        .await
                        .map_err(|e| at(i, e))?;
                }
                if let Some(m) = members.get(i) {
                    m.check_created(conn, anonymous, &row)
                        .await
                        .map_err(|e| at(i, e))?;
                }
                after_write(shared, conn, &ctx, i, &row).await?;
                rows.push(row);
            }
            rows
        };
        Ok(Change::Batch {
            rows,
            deleted: Vec::new(),
            committed: Vec::new(),
            answer,
        })
    };
    run(shared, st, req, &ctx, plan, insert).await
}

/// Writes `inputs` with [`Resource::insert_many`] inside a savepoint of the open transaction.
/// When the database refuses the statement (a unique member taken, a check failed), it is
/// undone and the rows written one at a time from copies, so that the error names the item at
/// fault. Without copies (a member of the application's own type), one at a time from the
/// start.
///
/// # Errors
///
/// The first item the database refuses, by its position; the savepoint's errors.
async fn insert_all<R: Resource>(conn: &mut Conn, inputs: Vec<R::Create>) -> Result<Vec<R>, Error> {
    let copies: Option<Vec<R::Create>> = inputs.iter().map(R::__copy_create).collect();
    let inputs = match copies {
        None => inputs,
        Some(copies) => {
            Savepoint::Set.run(conn).await?;
            if let Ok(rows) = R::insert_many(conn, inputs).await {
                Savepoint::Release.run(conn).await?;
                return Ok(rows);
            }
            Savepoint::Undo.run(conn).await?;
            copies
        }
    };
    let mut rows = Vec::with_capacity(inputs.len());
    for (i, input) in inputs.into_iter().enumerate() {
        rows.push(R::insert(conn, input).await.map_err(|e| at(i, e))?);
    }
    Ok(rows)
}

/// `PATCH <prefix>batch/`: applies every item's `changes` to the item its key names, or none
/// (200 with `data` and `etags`).
pub(crate) async fn update<R: Resource>(
    shared: &Shared<R>,
    req: HttpRequest,
    body: web::Bytes,
) -> Result<HttpResponse, Error> {
    let st = ApiState::of(&req)?;
    let who = caller(shared, &req, Operation::Patch).await?;
    let scope = rules::scope_in(&who, shared, &req, Rows::Live, Kind::Update)?;
    let after = After::of(&who, shared, &req)?;
    let parents = parent_conds(shared, &req)?;
    let held = match KeyCheck::of(shared, st, &req, &body, &who).await? {
        KeyCheck::Replay(stored) => return Ok(stored),
        held => held,
    };
    let items = items(&req, &body, st.config.http.batch_max_items)?;
    let addressed = addressed(shared, items, &parents, true)?;
    let mut decoded = Vec::with_capacity(addressed.len());
    let mut keys = Vec::with_capacity(addressed.len());
    let mut refused = Vec::new();
    for (i, item) in addressed.into_iter().enumerate() {
        let changes = item.changes.unwrap_or_default();
        keys.push(Keys::of::<R>(&changes, &[]));
        let input = check_members(shared, &who, &changes, Operation::Patch).and_then(|()| {
            let members = Members::judge(&*shared.rules, &req, &who, &changes, false)?;
            let input = decode::<R, R::Update>(shared, Operation::Patch, changes, &[])?;
            Ok((members, input))
        });
        match input {
            Ok((members, input)) => decoded.push((item.conds, item.if_match, members, input)),
            Err(e) => refused.push(ItemError::within(i, "changes", e)),
        }
    }
    refuse(refused)?;
    let ctx = who.hook_ctx(Operation::Patch, &st.db, &req);
    let policy = st.config.password_policy();
    let mut ready = Vec::with_capacity(decoded.len());
    for (i, (conds, if_match, members, mut input)) in decoded.into_iter().enumerate() {
        let prepared = async {
            hash_passwords(&mut input, policy).await?;
            shared.hooks.before_update_input(&ctx, input).await
        };
        let input = prepared.await.map_err(|e| at_changes(i, e))?;
        ready.push((
            Target::within(&who, &req, conds, scope.clone()).sending(members),
            if_match,
            input,
        ));
    }
    let needs = Needs {
        batch: true,
        if_match: ready.iter().any(|(_, pre, _)| pre.is_some()),
        ..Needs::default()
    };
    let plan = Plan::new(shared, Operation::Patch, held.key(), needs);
    let write = async |conn: &mut Conn| {
        let mut rows = Vec::with_capacity(ready.len());
        for (i, ((target, pre, input), keys)) in ready.into_iter().zip(&keys).enumerate() {
            keys.check(&req, conn, &who)
                .await
                .map_err(|e| at_changes(i, e))?;
            let written =
                update::write(shared, &ctx, conn, &target, &after, pre.as_ref(), input).await;
            let row = match written.map_err(|e| at(i, e))? {
                Change::Stored(row, _) => row,
                _ => return Err(Error::Internal("an update wrote no row".into())),
            };
            after_write(shared, conn, &ctx, i, &row).await?;
            rows.push(row);
        }
        Ok(batch(rows, Vec::new(), 200))
    };
    Ok(run(shared, st, &req, &ctx, plan, write)
        .await?
        .into_response())
}

/// `POST <prefix>batch/delete/`: deletes every item its key names, or none (204).
pub(crate) async fn delete<R: Resource>(
    shared: &Shared<R>,
    req: HttpRequest,
    body: web::Bytes,
) -> Result<HttpResponse, Error> {
    let st = ApiState::of(&req)?;
    let who = caller(shared, &req, Operation::Delete).await?;
    let scope = rules::scope_in(&who, shared, &req, Rows::Live, Kind::Delete)?;
    let parents = parent_conds(shared, &req)?;
    let held = match KeyCheck::of(shared, st, &req, &body, &who).await? {
        KeyCheck::Replay(stored) => return Ok(stored),
        held => held,
    };
    let items = items(&req, &body, st.config.http.batch_max_items)?;
    let targets: Vec<(Target<'_>, Option<Precondition>)> =
        addressed(shared, items, &parents, false)?
            .into_iter()
            .map(|a| {
                (
                    Target::within(&who, &req, a.conds, scope.clone()),
                    a.if_match,
                )
            })
            .collect();
    let ctx = who.hook_ctx(Operation::Delete, &st.db, &req);
    let needs = Needs {
        batch: true,
        if_match: targets.iter().any(|(_, pre)| pre.is_some()),
        ..Needs::default()
    };
    let plan = Plan::new(shared, Operation::Delete, held.key(), needs);
    let write = async |conn: &mut Conn| {
        let mut committed = Vec::new();
        let mut deleted = Vec::new();
        for (i, (target, pre)) in targets.iter().enumerate() {
            let gone = super::delete::write(shared, &ctx, conn, target, pre.as_ref()).await;
            match gone.map_err(|e| at(i, e))? {
                Change::Deleted { row, committed: c } => {
                    if let Some(row) = &row {
                        after_write(shared, conn, &ctx, i, row).await?;
                        deleted.extend(row.key_of(R::ID_FIELD));
                    }
                    committed.extend(c);
                }
                _ => return Err(Error::Internal("a delete reported no deletion".into())),
            }
        }
        Ok(Change::Batch {
            rows: Vec::new(),
            deleted,
            committed,
            answer: Answer::new(204, None),
        })
    };
    Ok(run(shared, st, &req, &ctx, plan, write)
        .await?
        .into_response())
}

/// What a batch wrote, answered with `status`.
fn batch<R>(rows: Vec<R>, committed: Vec<std::sync::Arc<R>>, status: u16) -> Change<R> {
    Change::Batch {
        rows,
        deleted: Vec::new(),
        committed,
        answer: Answer::new(status, None),
    }
}

/// Runs the after-write hooks on item `i`'s row, naming the item when one refuses it.
async fn after_write<R: Resource>(
    shared: &Shared<R>,
    conn: &mut Conn,
    ctx: &HookCtx,
    i: usize,
    row: &R,
) -> Result<(), Error> {
    shared
        .hooks
        .after_write(conn, ctx, row)
        .await
        .map_err(|e| at(i, e))
}

/// The items of a batch body: `{"items": [...]}` with 1 to `max` items.
///
/// # Errors
///
/// 415/400 for a body that is not JSON, 422 naming `items` for any other shape or too many.
fn items(req: &HttpRequest, body: &[u8], max: u32) -> Result<Vec<Value>, Error> {
    let obj = match crate::json::parse(req, body)? {
        Value::Object(obj) => obj,
        _ => {
            return Err(Error::Validation {
                detail: "The request body must be a JSON object: {\"items\": [...]}.".into(),
                field: None,
            })
        }
    };
    let mut items = None;
    for (name, value) in obj {
        match (name.as_str(), value) {
            ("items", Value::Array(v)) => items = Some(v),
            ("items", _) => return Err(Error::invalid_field("items", "must be an array")),
            (other, _) => {
                return Err(Error::invalid_field(
                    other,
                    "is not a member of a batch body; send only `items`",
                ))
            }
        }
    }
    let items = items.ok_or_else(|| Error::invalid_field("items", "is required"))?;
    if items.is_empty() {
        return Err(Error::invalid_field("items", "must hold at least one item"));
    }
    if items.len() > max as usize {
        return Err(Error::invalid_field(
            "items",
            format!(
                "holds {} items; at most {max} are accepted per request (BATCH_MAX_ITEMS)",
                items.len()
            ),
        ));
    }
    Ok(items)
}

/// An item that must be a JSON object.
fn object(item: Value) -> Result<Map<String, Value>, Error> {
    match item {
        Value::Object(obj) => Ok(obj),
        _ => Err(Error::Validation {
            detail: "Each item must be a JSON object.".into(),
            field: None,
        }),
    }
}

/// The refusal of the items in `refused`, if any.
fn refuse(refused: Vec<ItemError>) -> Result<(), Error> {
    if refused.is_empty() {
        Ok(())
    } else {
        Err(Error::Items(refused))
    }
}

/// An error met while writing item `i`: a refusal of the client's (4xx) names the item; a
/// server error, or the loser's side of a write race (which becomes 412 for the whole
/// batch), stays as it is.
fn at(i: usize, e: Error) -> Error {
    refused_item(e, |e| ItemError::new(i, e))
}

/// [`at`] for an error of item `i`'s `changes`.
fn at_changes(i: usize, e: Error) -> Error {
    refused_item(e, |e| ItemError::within(i, "changes", e))
}

/// `e` as the refusal `item` makes of it, when it is the client's.
fn refused_item(e: Error, item: impl FnOnce(Error) -> ItemError) -> Error {
    if matches!(e, Error::Items(_))
        || conditional::is_write_race(&e)
        || !e.problem().status_code().is_client_error()
    {
        return e;
    }
    Error::Items(vec![item(e)])
}

/// An update or delete item: the conditions naming its row, its precondition, its changes.
struct Addressed {
    conds: Vec<Cond>,
    if_match: Option<Precondition>,
    changes: Option<Map<String, Value>>,
}

/// Reads the items of a batch update (`with_changes`) or delete: each names one row by the
/// blueprint's key, at most once in the batch, with an optional `if_match` (required when the
/// blueprint requires `If-Match`).
///
/// # Errors
///
/// [`Error::Items`] naming every item at fault.
fn addressed<R: Resource>(
    shared: &Shared<R>,
    items: Vec<Value>,
    parents: &[Cond],
    with_changes: bool,
) -> Result<Vec<Addressed>, Error> {
    let key = shared.res_id.name;
    let mut out = Vec::with_capacity(items.len());
    let mut refused = Vec::new();
    // Keys as parsed, not as sent: `ABC…`, `{abc…}` and `urn:uuid:abc…` name one row.
    let mut seen: Vec<Option<Arg>> = Vec::with_capacity(items.len());
    for (i, item) in items.into_iter().enumerate() {
        let read = object(item).and_then(|obj| read_item(shared, obj, with_changes));
        match read {
            Ok((parsed, a)) => {
                let parsed = Some(parsed);
                if let Some(first) = seen.iter().position(|k| *k == parsed) {
                    refused.push(ItemError::new(
                        i,
                        Error::invalid_field(key, format!("names the same item as item {first}")),
                    ));
                }
                seen.push(parsed);
                let mut conds = parents.to_vec();
                conds.extend(a.conds);
                out.push(Addressed { conds, ..a });
            }
            Err(e) => {
                seen.push(None);
                refused.push(ItemError::new(i, e));
            }
        }
    }
    refuse(refused)?;
    Ok(out)
}

/// One update or delete item: its key as parsed (to find repeats) and what it asks.
fn read_item<R: Resource>(
    shared: &Shared<R>,
    obj: Map<String, Value>,
    with_changes: bool,
) -> Result<(Arg, Addressed), Error> {
    let key = shared.res_id.name;
    let mut raw = None;
    let mut if_match = None;
    let mut changes = None;
    for (name, value) in obj {
        match name.as_str() {
            n if n == key => {
                raw = Some(match value {
                    Value::String(s) => s,
                    Value::Number(n) => n.to_string(),
                    _ => return Err(Error::invalid_field(key, "must be a string or a number")),
                });
            }
            "if_match" => {
                let Value::String(text) = value else {
                    return Err(Error::invalid_field("if_match", "must be a string"));
                };
                let pre = conditional::parse_text(&text)
                    .map_err(|why| Error::invalid_field("if_match", why))?;
                if_match = Some(pre);
            }
            "changes" if with_changes => match value {
                Value::Object(m) => changes = Some(m),
                _ => return Err(Error::invalid_field("changes", "must be an object")),
            },
            other => {
                let members = if with_changes {
                    format!("`{key}`, `if_match` and `changes`")
                } else {
                    format!("`{key}` and `if_match`")
                };
                return Err(Error::invalid_field(
                    other,
                    format!("is not a member of a batch item; send {members}"),
                ));
            }
        }
    }
    let raw = raw.ok_or_else(|| Error::invalid_field(key, "is required"))?;
    let arg = parse_arg(shared.res_id.kind, &raw)
        .map_err(|_| Error::invalid_field(key, "is not a valid key"))?;
    if with_changes && changes.is_none() {
        return Err(Error::invalid_field("changes", "is required"));
    }
    if if_match.is_none() && shared.require_if_match {
        return Err(conditional::required());
    }
    let conds = vec![Cond::eq(key, arg.clone())];
    Ok((
        arg,
        Addressed {
            conds,
            if_match,
            changes,
        },
    ))
}
