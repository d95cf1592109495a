//! The POST handler: the caller, the model's and the rules' fill of server-owned members, the
//! input, then [`run`](super::run) checks the belongs-to keys it sets ([`Keys`]) and inserts the row.

use super::{run, Change, KeyCheck, Needs, Plan};
use crate::condition::Cond;
use crate::crud::idempotency::Answer;
use crate::crud::options::Operation;
use crate::crud::relations::keys::Keys;
use crate::crud::relations::rules;
use crate::crud::request::{
    caller, check_members, decode, hash_passwords, json_object, parent_conds, Caller,
};
use crate::crud::shared::Shared;
use crate::crud::write::members::Members;
use crate::crud::{HookCtx, Resource};
use crate::db::Conn;
use crate::error::Error;
use crate::state::ApiState;
use actix_web::{web, HttpRequest, HttpResponse};

/// `POST` of the prefix: the generated create, through the blueprint's wrapper when it has
/// one.
pub(crate) async fn post<R: Resource>(
    shared: &Shared<R>,
    req: HttpRequest,
    body: web::Bytes,
) -> Result<HttpResponse, Error> {
    match &shared.hooks.around_post {
        None => create(shared, req, body).await,
        Some(around) => {
            let outer = req.clone();
            around(&outer, Box::pin(create(shared, req, body))).await
        }
    }
}

/// `POST` of the prefix: creates an item (201 with its representation and `Location`).
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
    let obj = json_object(&req, &body)?;
    let keys = Keys::of::<R>(&obj, &parents);
    let ctx = who.hook_ctx(Operation::Post, &st.db, &req);
    let members = Members::judge(&*shared.rules, &req, &who, &obj, true)?;
    let mut input: R::Create = input(shared, &req, obj, &who, &ctx, &parents)?;
    hash_passwords(&mut input, st.config.password_policy()).await?;
    let input = shared.hooks.before_create(&ctx, input).await?;
    // A create rule judges the stored row, in the transaction (crud::relations::rules).
    let created = rules::created_scope(&who, shared, &req)?;
    let needs = Needs {
        create_rule: created.is_some() || !members.is_empty(),
        ..Needs::default()
    };
    let plan = Plan::new(shared, Operation::Post, held.key(), needs);
    let insert = async |conn: &mut Conn| {
        keys.check(&req, conn, &who).await?;
        let change = insert(shared, &req, conn, input).await?;
        if let Change::Stored(row, _) = &change {
            if let Some(scope) = &created {
                rules::check_created(shared, conn, &who, scope, row).await?;
            }
            members
                .check_created(conn, who.viewer().is_none(), row)
                .await?;
        }
        Ok(change)
    };
    let ended = run(shared, st, &req, &ctx, plan, insert).await?;
    Ok(ended.into_response())
}

/// 401 for an anonymous caller the rules refuse, before the body or headers are judged.
///
/// # Errors
///
/// The rules' 401.
pub(crate) fn refuse_anonymous<R: Resource>(shared: &Shared<R>, who: &Caller) -> Result<(), Error> {
    if let Caller::User(None) = who {
        if let Err(e @ Error::Unauthorized(_)) =
            shared.rules.create(None, &mut serde_json::Map::new())
        {
            return Err(e);
        }
    }
    Ok(())
}

/// A body object as the generated create type: members checked against the caller, the
/// model's server-set members filled (`set = ...`, for the request `ctx` describes), then
/// server-owned members filled by the rules, parents from the path, validated.
///
/// # Errors
///
/// The rules' refusal, members the caller may not send, a `set = me` member without a caller
/// (401), the validators' 422.
pub(crate) fn input<R: Resource>(
    shared: &Shared<R>,
    req: &HttpRequest,
    mut obj: serde_json::Map<String, serde_json::Value>,
    who: &Caller,
    ctx: &HookCtx,
    parents: &[Cond],
) -> Result<R::Create, Error> {
    check_members(shared, who, &obj, Operation::Post)?;
    for part in shared.parts.iter() {
        part.add_members(req, Operation::Post, &mut obj);
    }
    R::set_by_server(ctx, &mut obj)?;
    match who {
        Caller::Public => {}
        Caller::Admin(u) => {
            // Administrators may set server-owned members; otherwise the rule fills them.
            // A rule's 403 still binds them (privilege rules such as who grants SUPERADMIN).
            let mut filled = obj.clone();
            match shared.rules.create(Some(u), &mut filled) {
                Ok(()) => {
                    for (k, v) in filled {
                        obj.entry(k).or_insert(v);
                    }
                }
                Err(e @ Error::Forbidden(_)) => return Err(e),
                Err(_) => {}
            }
        }
        Caller::User(u) => shared.rules.create(u.as_ref(), &mut obj)?,
    }
    decode(shared, Operation::Post, obj, parents)
}

/// Inserts the row; the answer is 201 with the item's URL.
async fn insert<R: Resource>(
    shared: &Shared<R>,
    req: &HttpRequest,
    conn: &mut Conn,
    input: R::Create,
) -> Result<Change<R>, Error> {
    let item = R::insert(conn, input).await?;
    let location = item
        .key_of(shared.res_id.name)
        .map(|k| format!("{}{}", req.path(), k));
    Ok(Change::Stored(item, Answer::new(201, location)))
}
