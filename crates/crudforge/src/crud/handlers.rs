//! The five generic CRUD handlers: parse, check, one or two queries, respond.

use super::blueprint::Shared;
use super::conditional;
use super::hooks::HookCtx;
use super::idempotency::{self, Answer, IdemKey};
use super::options::Operation;
use super::write::{self, Written};
use super::{Pagination, Resource, Validate};
use crate::condition::{parse_arg, Arg, Cond, Condition};
use crate::db::tx::{self, TxMode};
use crate::db::{snapshot, Conn};
use crate::error::Error;
use crate::state::ApiState;
use actix_web::http::header;
use actix_web::{web, HttpRequest, HttpResponse};
use serde::de::DeserializeOwned;
use std::sync::Arc;

/// Conditions from the parent parameters of a nested prefix. A value that does not parse
/// names no parent: 404.
fn parent_conds<R: Resource>(shared: &Shared<R>, req: &HttpRequest) -> Result<Vec<Cond>, Error> {
    let mut conds = Vec::with_capacity(shared.parents.len() + 1);
    for (field, param) in &shared.parents {
        let raw = req.match_info().get(param).unwrap_or_default();
        let arg = parse_arg(field.kind, raw).map_err(|_| not_found::<R>())?;
        conds.push(Cond::eq(field.name, arg));
    }
    Ok(conds)
}

/// The conditions that address one item: its parents and its key.
fn item_conds<R: Resource>(shared: &Shared<R>, req: &HttpRequest) -> Result<Vec<Cond>, Error> {
    let mut conds = parent_conds(shared, req)?;
    conds.push(key_cond(shared, req)?);
    Ok(conds)
}

fn key_cond<R: Resource>(shared: &Shared<R>, req: &HttpRequest) -> Result<Cond, Error> {
    let raw = req
        .match_info()
        .get(&shared.res_id_param)
        .unwrap_or_default();
    let arg = parse_arg(shared.res_id.kind, raw).map_err(|_| not_found::<R>())?;
    Ok(Cond::eq(shared.res_id.name, arg))
}

/// The caller of an operation: `None` for public operations (which skip authentication and
/// rules) and for anonymous callers. Enforces `admin_only`.
async fn caller<R: Resource>(
    shared: &Shared<R>,
    req: &HttpRequest,
    op: Operation,
) -> Result<Caller, Error> {
    caller_with(shared, req, op, None).await
}

/// [`caller`], with the user loaded on the request's own connection `conn` (in its read
/// snapshot).
async fn caller_on<R: Resource>(
    shared: &Shared<R>,
    req: &HttpRequest,
    op: Operation,
    conn: &mut Conn,
) -> Result<Caller, Error> {
    caller_with(shared, req, op, Some(conn)).await
}

async fn caller_with<R: Resource>(
    shared: &Shared<R>,
    req: &HttpRequest,
    op: Operation,
    conn: Option<&mut Conn>,
) -> Result<Caller, Error> {
    let opts = shared.ops.get(&op);
    if opts.is_some_and(|o| o.public) {
        return Ok(Caller::Public);
    }
    let user = match conn {
        Some(conn) => crate::auth::current_user_on(req, conn).await?,
        None => crate::auth::current_user(req).await?,
    };
    if opts.is_some_and(|o| o.admin_only) {
        match &user {
            None => return Err(Error::Unauthorized("Authentication required.".into())),
            Some(u) if !u.is_admin() => {
                return Err(Error::Forbidden("Administrators only.".into()))
            }
            Some(_) => {}
        }
    }
    Ok(match user {
        Some(u) if u.is_admin() => Caller::Admin(u),
        other => Caller::User(other),
    })
}

/// Who is calling, as far as rules are concerned.
enum Caller {
    /// A public operation: no authentication, no rules.
    Public,
    /// An administrator: every rule passes.
    Admin(crate::auth::CurrentUser),
    /// Anyone else (maybe anonymous): the rules decide.
    User(Option<crate::auth::CurrentUser>),
}

impl Caller {
    fn read_scope<R: Resource>(&self, shared: &Shared<R>) -> Result<Condition, Error> {
        match self {
            Caller::Public | Caller::Admin(_) => Ok(Condition::always()),
            Caller::User(u) => shared.rules.read(u.as_ref()).into_conds(),
        }
    }

    fn write_scope<R: Resource>(&self, shared: &Shared<R>) -> Result<Condition, Error> {
        match self {
            Caller::Public | Caller::Admin(_) => Ok(Condition::always()),
            Caller::User(u) => shared.rules.write(u.as_ref()).into_conds(),
        }
    }

    fn is_admin(&self) -> bool {
        matches!(self, Caller::Admin(_))
    }
}

/// Checks members only the server or administrators may send.
fn check_members<R: Resource>(
    shared: &Shared<R>,
    caller: &Caller,
    obj: &serde_json::Map<String, serde_json::Value>,
    op: Operation,
) -> Result<(), Error> {
    if caller.is_admin() {
        return Ok(());
    }
    for f in shared.rules.server_fields() {
        if obj.contains_key(*f) {
            return Err(Error::invalid_field(
                *f,
                "is set by the server and cannot be sent",
            ));
        }
    }
    let on_update = match op {
        Operation::Patch => shared.rules.admin_update_fields(),
        _ => &[],
    };
    for f in shared.rules.admin_fields().iter().chain(on_update) {
        if obj.contains_key(*f) {
            let why = format!("Only administrators may set `{f}`.");
            // Without credentials the answer is "authenticate" (401), as for every other
            // operation that needs a user; with a non-admin user it is 403.
            return Err(match caller {
                Caller::User(None) => Error::Unauthorized(why.into()),
                _ => Error::Forbidden(why.into()),
            });
        }
    }
    Ok(())
}

/// Replaces plaintext `#[resource(password)]` members with bcrypt hashes, after checking them
/// against the password policy (`PASSWORD_MIN_LENGTH`).
async fn hash_passwords<T: Validate>(
    input: &mut T,
    policy: crate::auth::PasswordPolicy,
) -> Result<(), Error> {
    for (field, value) in input.passwords_mut() {
        let plain = std::mem::take(value);
        *value = crate::auth::hash_password_for(field, plain, policy).await?;
    }
    Ok(())
}

fn not_found<R: Resource>() -> Error {
    Error::NotFound(format!("No {} exists at this path.", R::NAME).into())
}

use crate::json::from_value;

/// Reads a JSON object body.
fn json_object(
    req: &HttpRequest,
    body: &[u8],
) -> Result<serde_json::Map<String, serde_json::Value>, Error> {
    let v = crate::json::parse(req, body)?;
    match v {
        serde_json::Value::Object(m) => Ok(m),
        _ => Err(Error::Validation {
            detail: "The request body must be a JSON object.".into(),
            field: None,
        }),
    }
}

/// Decodes a body into `T`, through a substituted input schema when the operation has one.
fn decode<R: Resource, T: DeserializeOwned + Validate>(
    shared: &Shared<R>,
    op: Operation,
    obj: serde_json::Map<String, serde_json::Value>,
    parents: &[Cond],
) -> Result<T, Error> {
    // Parent members come from the path; a body may not set them.
    for (field, _) in &shared.parents {
        if obj.contains_key(field.name) {
            return Err(Error::invalid_field(
                field.name,
                "is taken from the URL and cannot be set in the body",
            ));
        }
    }
    let mut v = serde_json::Value::Object(obj);
    // A substituted input schema checks the body first; the same members then feed `T`.
    if let Some((_, check)) = shared.ops.get(&op).and_then(|o| o.input) {
        check(&v)?;
    }
    if let serde_json::Value::Object(m) = &mut v {
        for c in parents {
            m.insert(c.field.to_owned(), arg_json(&c.arg));
        }
    }
    let t: T = from_value(v)?;
    t.validate()?;
    Ok(t)
}

fn arg_json(arg: &Arg) -> serde_json::Value {
    match arg {
        Arg::Text(s) => s.clone().into(),
        Arg::Int(i) => (*i).into(),
        Arg::Float(f) => (*f).into(),
        Arg::Bool(b) => (*b).into(),
        Arg::Uuid(u) => u.to_string().into(),
        Arg::DateTime(t) => t.to_rfc3339().into(),
        Arg::Date(d) => d.to_string().into(),
        Arg::List(items) => items.iter().map(arg_json).collect::<Vec<_>>().into(),
    }
}

fn render<R: Resource>(
    shared: &Shared<R>,
    op: Operation,
    out: &mut Vec<u8>,
    item: R,
) -> Result<(), Error> {
    let r = match shared.ops.get(&op).and_then(|o| o.response) {
        Some((_, render)) => render(out, item),
        None => serde_json::to_writer(&mut *out, &R::Response::from(item)),
    };
    r.map_err(|e| Error::Internal(format!("serializing a response: {e}")))
}

/// Renders items through the operation's presenter (with database access) or schema.
async fn render_all<R: Resource>(
    shared: &Shared<R>,
    op: Operation,
    db: &crate::db::Database,
    items: Vec<R>,
) -> Result<Vec<Vec<u8>>, Error> {
    if let Some((_, present)) = shared.ops.get(&op).and_then(|o| o.presenter) {
        return present(db, items).await;
    }
    items
        .into_iter()
        .map(|item| {
            let mut out = Vec::with_capacity(256);
            render(shared, op, &mut out, item).map(|()| out)
        })
        .collect()
}

async fn render_one<R: Resource>(
    shared: &Shared<R>,
    op: Operation,
    db: &crate::db::Database,
    item: R,
) -> Result<Vec<u8>, Error> {
    if shared.ops.get(&op).and_then(|o| o.presenter).is_none() {
        let mut out = Vec::with_capacity(256);
        render(shared, op, &mut out, item)?;
        return Ok(out);
    }
    render_all(shared, op, db, vec![item])
        .await?
        .pop()
        .ok_or_else(|| Error::Internal("the presenter returned nothing".into()))
}

fn json(status: actix_web::http::StatusCode, body: Vec<u8>) -> HttpResponse {
    HttpResponse::build(status)
        .insert_header((header::CONTENT_TYPE, "application/json"))
        .body(body)
}

/// What a list request read: up to one row more than the page, the total when asked for,
/// the parsed query and the page's number.
struct Listed<R> {
    items: Vec<R>,
    total: Option<i64>,
    q: super::query::ListQuery,
    page: u32,
}

/// The reading part of a list request, on `conn`: the caller, the parameters, the page and
/// its total.
async fn list<R: Resource>(
    shared: &Shared<R>,
    req: &HttpRequest,
    st: &ApiState,
    conn: &mut Conn,
) -> Result<Listed<R>, Error> {
    use super::cursor;
    use super::query::CountMode;
    let who = caller_on(shared, req, Operation::Index, conn).await?;
    // The caller's scope first: an anonymous caller the rules refuse gets 401 before any
    // parameter is judged.
    let scope = who.read_scope(shared)?;
    let limits = super::ListLimits::of(&st.config);
    let mut q = super::Filter::<R>::parse_with(req.query_string(), &limits)?.query;
    super::ListCaps::of(&st.config).check(&q)?;
    // The read scope is one member of the top-level AND: no `or` of the caller's can widen it.
    let mut conds = Condition::from(parent_conds(shared, req)?)
        .and(scope)
        .and(std::mem::take(&mut q.conds));
    if let Some(f) = q.filter.take() {
        conds = conds.and(Condition::All(vec![f]));
    }
    let key = st.signing_key.expose();
    let (page, offset, after) = match &q.cursor {
        Some(token) => {
            let at = cursor::decode(key, R::NAME, R::FIELDS, R::ID_FIELD, &q.sort, token)?;
            let after = cursor::keyset(R::FIELDS, &q.sort, R::ID_FIELD, &at);
            (at.page, 0, Some(after))
        }
        None => (q.page, q.offset(), None),
    };
    // Rows before the cursor are excluded from the page, not from the total.
    let total_conds = conds.clone();
    let page_conds = match after {
        Some(a) => conds.and(Condition::All(vec![a])),
        None => conds,
    };
    // One row more than the page tells whether a next page exists, without a count.
    let items = R::select(
        conn,
        &page_conds,
        &q.sort,
        Some((i64::from(q.page_size) + 1, offset)),
    )
    .await?;
    let total = match q.count {
        CountMode::Exact => Some(R::count(conn, &total_conds).await?),
        CountMode::Estimated => Some(R::estimate_count(conn, &total_conds).await?),
        CountMode::None => None,
    };
    Ok(Listed {
        items,
        total,
        q,
        page,
    })
}

pub(crate) async fn index<R: Resource>(
    shared: &Shared<R>,
    req: HttpRequest,
    _body: web::Bytes,
) -> Result<HttpResponse, Error> {
    use super::cursor;
    let st = ApiState::of(&req)?;
    // The caller's account, the page and its total are read in one snapshot.
    let Listed {
        mut items,
        total,
        q,
        page,
    } = snapshot::read(&st.db, async |conn| list(shared, &req, st, conn).await).await?;
    let key = st.signing_key.expose();
    let more = items.len() > q.page_size as usize;
    items.truncate(q.page_size as usize);
    let next_cursor = match items.last() {
        Some(last) if more => position_of(last, &q.sort, page.saturating_add(1))
            .map(|p| cursor::encode(key, R::NAME, &q.sort, &p)),
        _ => None,
    };
    let mut out = Vec::with_capacity(64 + items.len() * 256);
    out.extend_from_slice(b"{\"data\":[");
    let sparse = q.fields.as_deref();
    if shared
        .ops
        .get(&Operation::Index)
        .and_then(|o| o.presenter)
        .is_some()
    {
        let rendered = render_all(shared, Operation::Index, &st.db, items).await?;
        for (i, item) in rendered.into_iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            match sparse {
                Some(f) => out.extend_from_slice(&super::sparse::project(&item, f)?),
                None => out.extend_from_slice(&item),
            }
        }
    } else {
        let mut one = Vec::new();
        for (i, item) in items.into_iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            match sparse {
                Some(f) => {
                    one.clear();
                    render(shared, Operation::Index, &mut one, item)?;
                    out.extend_from_slice(&super::sparse::project(&one, f)?);
                }
                None => render(shared, Operation::Index, &mut out, item)?,
            }
        }
    }
    out.extend_from_slice(b"],\"pagination\":");
    let pagination = Pagination::counted(page, q.page_size, total, next_cursor);
    serde_json::to_writer(&mut out, &pagination).map_err(|e| Error::Internal(e.to_string()))?;
    out.push(b'}');
    Ok(json(actix_web::http::StatusCode::OK, out))
}

/// The cursor position after `row`; `None` when a sort key holds a value no cursor can carry.
fn position_of<R: Resource>(
    row: &R,
    sort: &[super::Sort],
    page: u32,
) -> Option<super::cursor::Position> {
    let values = super::cursor::keys(sort)
        .iter()
        .map(|k| row.sort_value(k.field))
        .collect::<Option<Vec<_>>>()?;
    let id = row.sort_value(R::ID_FIELD)??;
    Some(super::cursor::Position { page, values, id })
}

/// What a `GET` of one item read, with the request's sparse fields and `If-None-Match`.
struct Fetched {
    etag: String,
    out: Vec<u8>,
    sparse: Option<Vec<&'static str>>,
    if_none_match: Option<conditional::Precondition>,
}

/// The reading part of a `GET` of one item, on `conn`: the caller, the item, its `ETag` and
/// body.
async fn fetch<R: Resource>(
    shared: &Shared<R>,
    req: &HttpRequest,
    st: &ApiState,
    conn: &mut Conn,
) -> Result<Fetched, Error> {
    let who = caller_on(shared, req, Operation::Get, conn).await?;
    let scope = who.read_scope(shared)?;
    let sparse = super::sparse::requested(R::FIELDS, req.query_string())?;
    let addressed = item_conds(shared, req)?;
    let if_none_match = conditional::if_none_match(req.headers())?;
    let conds = if scope.is_always() {
        // Lookup by key alone (no rule scope) is a static, statement-cached query.
        Condition::from(addressed)
    } else {
        Condition::from(addressed).and(scope)
    };
    let item = select_one::<R>(conn, &conds)
        .await?
        .ok_or_else(not_found::<R>)?;
    let (etag, out) = represent(shared, Operation::Get, conn, &st.db, item).await?;
    Ok(Fetched {
        etag,
        out,
        sparse,
        if_none_match,
    })
}

pub(crate) async fn get<R: Resource>(
    shared: &Shared<R>,
    req: HttpRequest,
    _body: web::Bytes,
) -> Result<HttpResponse, Error> {
    let st = ApiState::of(&req)?;
    // The caller's account and the item are read in one snapshot.
    let Fetched {
        etag,
        out,
        sparse,
        if_none_match,
    } = snapshot::read(&st.db, async |conn| fetch(shared, &req, st, conn).await).await?;
    if if_none_match.is_some_and(|p| p.matches_weak(&etag)) {
        return Ok(HttpResponse::NotModified()
            .insert_header((header::ETAG, etag))
            .finish());
    }
    let out = match sparse {
        Some(f) => super::sparse::project(&out, &f)?,
        None => out,
    };
    let mut res = json(actix_web::http::StatusCode::OK, out);
    set_etag(&mut res, &etag);
    Ok(res)
}

/// The one row matching `conds`, if any.
async fn select_one<R: Resource>(
    conn: &mut crate::db::Conn,
    conds: &Condition,
) -> Result<Option<R>, Error> {
    let rows = match conds {
        Condition::All(v) if v.iter().all(|c| matches!(c, Condition::Is(_))) => {
            let flat: Vec<Cond> = v
                .iter()
                .filter_map(|c| match c {
                    Condition::Is(c) => Some(c.clone()),
                    _ => None,
                })
                .collect();
            R::select(conn, &flat, &[], Some((1, 0))).await?
        }
        _ => R::select(conn, conds, &[], Some((1, 0))).await?,
    };
    Ok(rows.into_iter().next())
}

/// A second copy of a row just read or written (models need not be `Clone`), read by its id
/// on the same connection (inside the same transaction).
pub(super) async fn reload<R: Resource>(conn: &mut crate::db::Conn, item: &R) -> Result<R, Error> {
    let missing = || Error::Internal(format!("a {} row vanished while being written", R::NAME));
    let field = R::field(R::ID_FIELD).ok_or_else(missing)?;
    let key = item.key_of(R::ID_FIELD).ok_or_else(missing)?;
    let arg = parse_arg(field.kind, &key).map_err(|_| missing())?;
    let conds = vec![Cond::eq(field.name, arg)];
    R::select(conn, &conds, &[], Some((1, 0)))
        .await?
        .into_iter()
        .next()
        .ok_or_else(missing)
}

/// The item's `ETag` and its body as operation `op` renders it. The tag is computed from the
/// generated representation (see [`conditional`]), so it is the same for every operation.
pub(super) async fn represent<R: Resource>(
    shared: &Shared<R>,
    op: Operation,
    conn: &mut crate::db::Conn,
    db: &crate::db::Database,
    item: R,
) -> Result<(String, Vec<u8>), Error> {
    if !custom_answer(shared, op) {
        return conditional::tag_and_body(item);
    }
    let (etag, _) = conditional::tag_and_body(reload(conn, &item).await?)?;
    let out = render_one(shared, op, db, item).await?;
    Ok((etag, out))
}

/// Whether operation `op` answers with a custom schema or presenter rather than the generated
/// representation (which the `ETag` is always computed from).
pub(super) fn custom_answer<R: Resource>(shared: &Shared<R>, op: Operation) -> bool {
    shared
        .ops
        .get(&op)
        .is_some_and(|o| o.response.is_some() || o.presenter.is_some())
}

fn set_etag(res: &mut HttpResponse, etag: &str) {
    if let Ok(v) = header::HeaderValue::from_str(etag) {
        res.headers_mut().insert(header::ETAG, v);
    }
}

impl Caller {
    /// What hooks are told about the caller.
    fn hook_ctx(&self, op: Operation, db: &crate::db::Database, req: &HttpRequest) -> HookCtx {
        let user = match self {
            Caller::Public => None,
            Caller::Admin(u) => Some(u.clone()),
            Caller::User(u) => u.clone(),
        };
        HookCtx {
            user,
            operation: op,
            db: db.clone(),
            query: req.query_string().to_owned(),
        }
    }

    /// The id idempotency keys are scoped to (`None`: anonymous).
    fn user_id(&self) -> Option<uuid::Uuid> {
        match self {
            Caller::Public | Caller::User(None) => None,
            Caller::Admin(u) | Caller::User(Some(u)) => Some(u.id),
        }
    }
}

/// The idempotency key of a request: `Err(response)` carries the stored answer of a retry;
/// `Ok(Some(..))` holds the key (and this process's claim on it) while the request runs.
async fn idempotency_key<R: Resource>(
    shared: &Shared<R>,
    st: &ApiState,
    req: &HttpRequest,
    body: &[u8],
    who: &Caller,
) -> Result<Result<Option<(IdemKey, idempotency::Claim)>, HttpResponse>, Error> {
    let Some(key) = IdemKey::from_request(req, body, who.user_id())? else {
        return Ok(Ok(None));
    };
    let claim = shared.in_flight.claim(&key)?;
    let mut conn = st.db.get().await?;
    if let Some(stored) = idempotency::lookup(&mut conn, &key).await? {
        return stored.replay(&key).map(Err);
    }
    Ok(Ok(Some((key, claim))))
}

pub(crate) async fn create<R: Resource>(
    shared: &Shared<R>,
    req: HttpRequest,
    body: web::Bytes,
) -> Result<HttpResponse, Error> {
    let st = ApiState::of(&req)?;
    let who = caller(shared, &req, Operation::Post).await?;
    // An anonymous caller the rules refuse gets 401 before the body or headers are judged.
    if let Caller::User(None) = &who {
        if let Err(e @ Error::Unauthorized(_)) =
            shared.rules.create(None, &mut serde_json::Map::new())
        {
            return Err(e);
        }
    }
    let parents = parent_conds(shared, &req)?;
    let key = match idempotency_key(shared, st, &req, &body, &who).await? {
        Ok(k) => k,
        Err(replay) => return Ok(replay),
    };
    let mut obj = json_object(&req, &body)?;
    check_members(shared, &who, &obj, Operation::Post)?;
    match &who {
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
    let mut input: R::Create = decode(shared, Operation::Post, obj, &parents)?;
    hash_passwords(&mut input, st.config.password_policy()).await?;
    let ctx = who.hook_ctx(Operation::Post, &st.db, &req);
    let input = shared.hooks.before_create(&ctx, input).await?;
    let key = key.as_ref().map(|(k, _)| k);
    let mut lost_claim = false;
    // A plain insert is one statement; keys and hooks need a transaction around it.
    let in_tx = key.is_some() || shared.hooks.wrap(Operation::Post);
    let mut conn = st.db.get().await?;
    if in_tx {
        tx::begin(&mut conn, TxMode::Write).await?;
    }
    let outcome = async {
        if let Some(k) = key {
            if !idempotency::claim(&mut conn, k, st.config.idempotency_key_ttl).await? {
                lost_claim = true;
                return Err(write::claim_lost());
            }
        }
        let item = R::insert(&mut conn, input).await?;
        shared.hooks.after_write(&mut conn, &ctx, &item).await?;
        let location = item
            .key_of(shared.res_id.name)
            .map(|k| format!("{}{}", req.path(), k));
        let answer = Answer {
            status: 201,
            body: Vec::new(),
            location,
            etag: None,
        };
        write::written(shared, st, &mut conn, Operation::Post, item, answer, key).await
    }
    .await;
    let ended = write::end_write(&mut conn, in_tx, key, outcome, lost_claim).await;
    let written = match named_constraint(shared, &req, &mut conn, Operation::Post, ended).await? {
        Ok(w) => w,
        Err(replay) => return Ok(replay),
    };
    drop(conn);
    let answer = written.finish(shared, st, &ctx, Operation::Post).await?;
    Ok(answer.to_response(false))
}

fn write_precondition<R: Resource>(
    shared: &Shared<R>,
    req: &HttpRequest,
) -> Result<Option<conditional::Precondition>, Error> {
    let pre = conditional::if_match(req.headers())?;
    if pre.is_none() && shared.require_if_match {
        return Err(conditional::required());
    }
    Ok(pre)
}

pub(crate) async fn update<R: Resource>(
    shared: &Shared<R>,
    req: HttpRequest,
    body: web::Bytes,
) -> Result<HttpResponse, Error> {
    let st = ApiState::of(&req)?;
    let who = caller(shared, &req, Operation::Patch).await?;
    let scope = who.write_scope(shared)?;
    let addressed = item_conds(shared, &req)?;
    let if_match = write_precondition(shared, &req)?;
    let key = match idempotency_key(shared, st, &req, &body, &who).await? {
        Ok(k) => k,
        Err(replay) => return Ok(replay),
    };
    let obj = json_object(&req, &body)?;
    check_members(shared, &who, &obj, Operation::Patch)?;
    let mut input: R::Update = decode(shared, Operation::Patch, obj, &[])?;
    hash_passwords(&mut input, st.config.password_policy()).await?;
    let conds = Condition::from(addressed.clone()).and(scope);
    let ctx = who.hook_ctx(Operation::Patch, &st.db, &req);
    input = shared.hooks.before_update_input(&ctx, input).await?;
    let key = key.as_ref().map(|(k, _)| k);
    let mode = if if_match.is_some() || shared.hooks.serialized_update {
        TxMode::Serialized
    } else {
        TxMode::Write
    };
    let guard = by_other_key(shared);
    let in_tx = key.is_some() || if_match.is_some() || guard || shared.hooks.wrap(Operation::Patch);
    let mut lost_claim = false;
    let mut conn = st.db.get().await?;
    if in_tx {
        tx::begin(&mut conn, mode).await?;
    }
    let outcome = async {
        if let Some(k) = key {
            if !idempotency::claim(&mut conn, k, st.config.idempotency_key_ttl).await? {
                lost_claim = true;
                return Err(write::claim_lost());
            }
        }
        if guard {
            at_most_one::<R>(&mut conn, &conds).await?;
        }
        if if_match.is_some() || shared.hooks.reads_before_update() {
            let Some(current) = select_one::<R>(&mut conn, &conds).await? else {
                return Err(refused(shared, &who, &mut conn, addressed.clone()).await);
            };
            let current = if let Some(pre) = &if_match {
                let copy = if shared.hooks.reads_before_update() {
                    Some(reload(&mut conn, &current).await?)
                } else {
                    None
                };
                let (etag, _) = conditional::tag_and_body(current)?;
                conditional::check_if_match(Some(pre), &etag)?;
                copy
            } else {
                Some(current)
            };
            if let Some(current) = current {
                input = shared
                    .hooks
                    .before_update(&ctx, input, Arc::new(current))
                    .await?;
            }
        }
        let Some(item) = R::update(&mut conn, &conds, input).await? else {
            return Err(refused(shared, &who, &mut conn, addressed.clone()).await);
        };
        shared.hooks.after_write(&mut conn, &ctx, &item).await?;
        let answer = Answer {
            status: 200,
            body: Vec::new(),
            location: None,
            etag: None,
        };
        write::written(shared, st, &mut conn, Operation::Patch, item, answer, key).await
    }
    .await;
    let ended = write::end_write(&mut conn, in_tx, key, outcome, lost_claim).await;
    let written = match named_constraint(shared, &req, &mut conn, Operation::Patch, ended).await? {
        Ok(w) => w,
        Err(replay) => return Ok(replay),
    };
    drop(conn);
    let answer = written.finish(shared, st, &ctx, Operation::Patch).await?;
    Ok(answer.to_response(false))
}

pub(crate) async fn delete<R: Resource>(
    shared: &Shared<R>,
    req: HttpRequest,
    _body: web::Bytes,
) -> Result<HttpResponse, Error> {
    let st = ApiState::of(&req)?;
    let who = caller(shared, &req, Operation::Delete).await?;
    let scope = who.write_scope(shared)?;
    let addressed = item_conds(shared, &req)?;
    let if_match = write_precondition(shared, &req)?;
    let conds = Condition::from(addressed.clone()).and(scope);
    let ctx = who.hook_ctx(Operation::Delete, &st.db, &req);
    let hooks = &shared.hooks;
    let wants_row = !hooks.after_delete.is_empty()
        || !hooks.before_delete.is_empty()
        || hooks.has_after_commit();
    let mode = if if_match.is_some() {
        TxMode::Serialized
    } else {
        TxMode::Write
    };
    let guard = by_other_key(shared);
    let in_tx = if_match.is_some() || guard || hooks.wrap(Operation::Delete);
    let mut conn = st.db.get().await?;
    if in_tx {
        tx::begin(&mut conn, mode).await?;
    }
    let outcome = async {
        let mut row = None;
        let mut committed = None;
        if guard {
            at_most_one::<R>(&mut conn, &conds).await?;
        }
        if if_match.is_some() || wants_row {
            let Some(current) = select_one::<R>(&mut conn, &conds).await? else {
                return Err(refused(shared, &who, &mut conn, addressed.clone()).await);
            };
            if hooks.has_after_commit() {
                committed = Some(Arc::new(reload(&mut conn, &current).await?));
            }
            if let Some(pre) = &if_match {
                if wants_row {
                    row = Some(reload(&mut conn, &current).await?);
                }
                let (etag, _) = conditional::tag_and_body(current)?;
                conditional::check_if_match(Some(pre), &etag)?;
            } else {
                row = Some(current);
            }
        }
        if let Some(row) = &row {
            hooks.before_delete(&mut conn, &ctx, row).await?;
        }
        if !R::delete(&mut conn, &conds).await? {
            return Err(refused(shared, &who, &mut conn, addressed.clone()).await);
        }
        if let Some(row) = &row {
            hooks.after_write(&mut conn, &ctx, row).await?;
        }
        Ok(Written::Answered {
            answer: Answer {
                status: 204,
                body: Vec::new(),
                location: None,
                etag: None,
            },
            committed,
        })
    }
    .await;
    let ended = write::end_write(&mut conn, in_tx, None, outcome, false).await;
    let written = match named_constraint(shared, &req, &mut conn, Operation::Delete, ended).await? {
        Ok(w) => w,
        Err(replay) => return Ok(replay),
    };
    drop(conn);
    written.finish(shared, st, &ctx, Operation::Delete).await?;
    Ok(HttpResponse::NoContent().finish())
}

/// A write's result, with a SQLite constraint failure completed with the table (and field)
/// the database did not name (see [`crate::error::constraint`]).
async fn named_constraint<R: Resource, T>(
    shared: &Shared<R>,
    req: &HttpRequest,
    conn: &mut Conn,
    op: Operation,
    ended: Result<T, Error>,
) -> Result<T, Error> {
    let e = match ended {
        Ok(t) => return Ok(t),
        Err(e) => e,
    };
    let key = (op != Operation::Post)
        .then(|| key_cond(shared, req).ok())
        .flatten()
        .and_then(|c| match arg_json(&c.arg) {
            serde_json::Value::String(s) => Some(s),
            serde_json::Value::Number(n) => Some(n.to_string()),
            _ => None,
        })
        .map(|k| (shared.res_id.name, k));
    let write = crate::error::constraint::Write {
        table: R::TABLE,
        delete: op == Operation::Delete,
        key,
    };
    Err(crate::error::constraint::name_on_sqlite(conn, write, e).await)
}

/// Whether a write addresses its item by a key other than the id field. The blueprint accepts
/// only unique keys; the write still counts the rows first and refuses (409) to change more
/// than one, so a key whose unique index is missing can never change several rows.
fn by_other_key<R: Resource>(shared: &Shared<R>) -> bool {
    shared.res_id.name != R::ID_FIELD
}

/// 409 when `conds` match more than one row (see [`by_other_key`]).
async fn at_most_one<R: Resource>(
    conn: &mut crate::db::Conn,
    conds: &Condition,
) -> Result<(), Error> {
    if R::count(conn, conds).await? > 1 {
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

/// Why a write matched no row: 403 when the caller can read the row (it exists but is not
/// writable for them), 404 otherwise (so existence does not leak).
async fn refused<R: Resource>(
    shared: &Shared<R>,
    who: &Caller,
    conn: &mut crate::db::Conn,
    addressed: Vec<Cond>,
) -> Error {
    let Ok(read) = who.read_scope(shared) else {
        return not_found::<R>();
    };
    match R::count(conn, &Condition::from(addressed).and(read)).await {
        Ok(n) if n > 0 => Error::Forbidden("You may not change this item.".into()),
        Ok(_) => not_found::<R>(),
        Err(e) => e,
    }
}
