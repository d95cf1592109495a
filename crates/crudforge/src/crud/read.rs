//! Reading one item: the `GET` handler. The caller and the item in one read snapshot, its
//! `ETag` and `If-None-Match` (304, [`crate::crud::conditional`]), shown through the `GET`'s
//! view of a row ([`crate::crud::view`]: its embedded relations and sparse fields).

use crate::condition::Condition;
use crate::crud::conditional;
use crate::crud::options::Operation;
use crate::crud::query::Params;
use crate::crud::relations;
use crate::crud::request::{caller_on, item_conds, not_found};
use crate::crud::rows::select_one;
use crate::crud::shared::Shared;
use crate::crud::view::{json, set_etag, View};
use crate::crud::Resource;
use crate::db::{snapshot, Conn};
use crate::error::Error;
use crate::state::ApiState;
use actix_web::http::header;
use actix_web::{web, HttpRequest, HttpResponse};

/// What a `GET` of one item read: its tag and body (kept to `fields`), and `If-None-Match`.
struct Fetched {
    etag: String,
    out: Vec<u8>,
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
    let params = Params::of(req.query_string())?;
    let rows = who.rows_read::<R>(&params)?;
    let scope = relations::rules::scope_in(&who, shared, req, rows, relations::rules::Kind::Read)?;
    let expand = relations::expand::parse::<R>(&params)?;
    let sparse = relations::expand::requested::<R>(&params)?;
    let members = shared.ops.get(&Operation::Get).and_then(|o| o.members);
    let own = relations::expand::own_fields::<R>(sparse.as_deref());
    crate::crud::query::sparse::check_selectable(R::FIELDS, members, own.as_deref())?;
    crate::crud::rules::read::check_fields::<R>(own.as_deref(), who.viewer())?;
    relations::expand::check_fields::<R>(sparse.as_deref(), &expand, who.viewer())?;
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
    let extra = if expand.is_empty() {
        None
    } else {
        let cx = relations::expand::Cx { req, db: &st.db };
        let one = std::slice::from_ref(&item);
        relations::expand::members::<R>(&cx, conn, one, &expand, who.viewer())
            .await?
            .pop()
    };
    let view = View::new(shared, Operation::Get, who.viewer()).fields(sparse.as_deref());
    let (etag, out) = view.represent(conn, &st.db, item, extra).await?;
    Ok(Fetched {
        etag,
        out,
        if_none_match,
    })
}

/// `GET` of one item: its representation and `ETag`, or 304 when `If-None-Match` matches.
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
        if_none_match,
    } = snapshot::read(&st.db, async |conn| fetch(shared, &req, st, conn).await).await?;
    if if_none_match.is_some_and(|p| p.matches_weak(&etag)) {
        return Ok(HttpResponse::NotModified()
            .insert_header((header::ETAG, etag))
            .finish());
    }
    let mut res = json(actix_web::http::StatusCode::OK, out);
    set_etag(&mut res, &etag);
    Ok(res)
}
