//! The hand-written baseline: what a careful developer writes with actix-web and diesel-async
//! for the same two endpoints, without any crudforge query machinery.
//!
//! - `GET /hand/critters/{id}`: one typed `SELECT ... WHERE id = $1` (`get_result`; with
//!   `--hand-get-limit`, Diesel's `.first()`, which adds `LIMIT $2`).
//! - `GET /hand/critters/?species=&cuteness_level__gte=&page=&page_size=`: one page query and
//!   one count query, both typed, with the optional filters added through `into_boxed()` (the
//!   usual Diesel idiom for optional filters), answered in the same `{data, pagination}`
//!   envelope and the same default order (`created_at`, then `id`) as the generated INDEX.
//!
//! Only the pooled connection comes from crudforge ([`Database::get`], matched on [`Conn`]),
//! plus the portable column types of the shared `critters` table.

use actix_web::http::StatusCode;
use actix_web::{web, HttpResponse, ResponseError};
use chrono::{DateTime, NaiveDate, Utc};
use crudforge::db::Conn;
use crudforge::db::{PgConn, SqliteConn};
use crudforge::sql_types::Portable;
use crudforge::Database;
use crudforge_tests::critters::critters;
use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// Page size when none is given (the generated endpoints' default).
const DEFAULT_PAGE_SIZE: u32 = 25;
/// Largest page size accepted (the generated endpoints' default maximum).
const MAX_PAGE_SIZE: u32 = 100;

/// A critter as returned over HTTP: every column but `secret`, in declaration order.
#[derive(Debug, Queryable, Selectable, Serialize)]
#[diesel(table_name = critters)]
pub(crate) struct CritterOut {
    id: Uuid,
    created_at: DateTime<Utc>,
    updated_at: DateTime<Utc>,
    name: String,
    species: String,
    cuteness_level: i32,
    weight: Option<f64>,
    nickname: Option<String>,
    vaccinated: bool,
    born_on: Option<NaiveDate>,
    seen_at: Option<DateTime<Utc>>,
    keeper_id: Option<Uuid>,
    tag: Option<String>,
    notes: Option<serde_json::Value>,
    score: i32,
}

/// The query parameters the hand-written INDEX understands.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ListParams {
    species: Option<String>,
    #[serde(rename = "cuteness_level__gte")]
    min_cuteness: Option<i32>,
    page: Option<u32>,
    page_size: Option<u32>,
}

#[derive(Debug, Serialize)]
struct PageOut {
    data: Vec<CritterOut>,
    pagination: PaginationOut,
}

#[derive(Debug, Serialize)]
struct PaginationOut {
    page: u32,
    page_size: u32,
    total: i64,
    total_pages: i64,
}

/// Errors of the hand-written handlers.
#[derive(Debug)]
pub(crate) enum HandError {
    /// No such row.
    NotFound,
    /// A bad query parameter.
    BadRequest(&'static str),
    /// No connection or a failed query.
    Database(String),
}

impl std::fmt::Display for HandError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HandError::NotFound => f.write_str("not found"),
            HandError::BadRequest(why) => f.write_str(why),
            HandError::Database(e) => write!(f, "database error: {e}"),
        }
    }
}

impl ResponseError for HandError {
    fn status_code(&self) -> StatusCode {
        match self {
            HandError::NotFound => StatusCode::NOT_FOUND,
            HandError::BadRequest(_) => StatusCode::BAD_REQUEST,
            HandError::Database(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }
}

impl From<diesel::result::Error> for HandError {
    fn from(e: diesel::result::Error) -> Self {
        HandError::Database(e.to_string())
    }
}

impl From<crudforge::db::PoolError> for HandError {
    fn from(e: crudforge::db::PoolError) -> Self {
        HandError::Database(e.to_string())
    }
}

/// Registers the hand-written routes under `/hand/critters/`. With `get_limit`, the GET handler
/// uses Diesel's `.first()` (`LIMIT 1`) instead of `get_result()`.
pub(crate) fn configure(cfg: &mut web::ServiceConfig, db: Database, get_limit: bool) {
    let get = if get_limit {
        web::get().to(get_one::<true>)
    } else {
        web::get().to(get_one::<false>)
    };
    cfg.service(
        web::resource("/hand/critters/")
            .app_data(web::Data::new(db.clone()))
            .route(web::get().to(list)),
    )
    .service(
        web::resource("/hand/critters/{id}")
            .app_data(web::Data::new(db))
            .route(get),
    );
}

/// The GET query, typed for one backend's connection: `get_result` (no `LIMIT`: the key is
/// unique), or `.first()` (`LIMIT 1`, bound as a parameter) when `$limit` is true.
macro_rules! get_query {
    ($c:expr, $id:expr, $limit:expr) => {{
        let q = critters::table
            .filter(critters::id.eq(Portable($id)))
            .select(CritterOut::as_select());
        if $limit {
            q.first::<CritterOut>($c).await.optional()
        } else {
            q.get_result::<CritterOut>($c).await.optional()
        }
    }};
}

async fn get_one<const LIMIT: bool>(
    db: web::Data<Database>,
    id: web::Path<Uuid>,
) -> Result<HttpResponse, HandError> {
    let id = id.into_inner();
    let mut conn = db.get().await?;
    let row = match &mut conn {
        Conn::Sqlite(c) => {
            let c: &mut SqliteConn = c;
            get_query!(c, id, LIMIT)?
        }
        Conn::Postgres(c) => {
            let c: &mut PgConn = c;
            get_query!(c, id, LIMIT)?
        }
    };
    drop(conn);
    row.map(|r| HttpResponse::Ok().json(r))
        .ok_or(HandError::NotFound)
}

/// The INDEX queries (page, then count), typed for one backend's connection and its `Backend`.
macro_rules! list_queries {
    ($c:expr, $db:ty, $p:expr, $limit:expr, $offset:expr) => {{
        let mut page = critters::table
            .select(CritterOut::as_select())
            .order((critters::created_at.asc(), critters::id.asc()))
            .limit($limit)
            .offset($offset)
            .into_boxed::<$db>();
        let mut count = critters::table.count().into_boxed::<$db>();
        if let Some(s) = &$p.species {
            page = page.filter(critters::species.eq(s));
            count = count.filter(critters::species.eq(s));
        }
        if let Some(n) = $p.min_cuteness {
            page = page.filter(critters::cuteness_level.ge(n));
            count = count.filter(critters::cuteness_level.ge(n));
        }
        let rows: Vec<CritterOut> = page.load($c).await?;
        let total: i64 = count.get_result($c).await?;
        (rows, total)
    }};
}

async fn list(
    db: web::Data<Database>,
    params: web::Query<ListParams>,
) -> Result<HttpResponse, HandError> {
    let p = params.into_inner();
    let page = p.page.unwrap_or(1);
    if page == 0 {
        return Err(HandError::BadRequest("page starts at 1"));
    }
    let page_size = p.page_size.unwrap_or(DEFAULT_PAGE_SIZE);
    if page_size == 0 || page_size > MAX_PAGE_SIZE {
        return Err(HandError::BadRequest("page_size must be 1 to 100"));
    }
    let limit = i64::from(page_size);
    let offset = i64::from(page - 1) * limit;
    let mut conn = db.get().await?;
    let (data, total) = match &mut conn {
        Conn::Sqlite(c) => {
            let c: &mut SqliteConn = c;
            list_queries!(c, diesel::sqlite::Sqlite, p, limit, offset)
        }
        Conn::Postgres(c) => {
            let c: &mut PgConn = c;
            list_queries!(c, diesel::pg::Pg, p, limit, offset)
        }
    };
    drop(conn);
    let body = PageOut {
        data,
        pagination: PaginationOut {
            page,
            page_size,
            total,
            total_pages: (total + limit - 1) / limit,
        },
    };
    Ok(HttpResponse::Ok().json(body))
}
