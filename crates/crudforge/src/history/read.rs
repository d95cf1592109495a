//! `GET <item>/history/`: a row's entries, newest first, under the row's read rules and each
//! member's read rule. The row must be one the caller's `GET` would show now; of each entry
//! the caller sees only the members it may read on the row now, so no past value of a member
//! it cannot read reaches it.

use super::store::{self, Shown};
use crate::condition::Condition;
use crate::crud::options::Operation;
use crate::crud::query::Params;
use crate::crud::relations;
use crate::crud::request::{item_conds, not_found};
use crate::crud::rows::select_one;
use crate::crud::rules::read;
use crate::crud::shared::Shared;
use crate::crud::view::json;
use crate::crud::Resource;
use crate::db::snapshot;
use crate::error::Error;
use crate::perms::Door;
use crate::state::ApiState;
use actix_web::http::StatusCode;
use actix_web::{web, HttpRequest, HttpResponse};
use serde_json::{Map, Value};

/// The path below an item.
pub(crate) const SEGMENT: &str = "history/";

/// Entries per page unless `limit` says otherwise.
pub(crate) const DEFAULT_LIMIT: i64 = 20;

/// The most entries one page holds.
pub(crate) const MAX_LIMIT: i64 = 100;

/// One entry as a reader sees it.
#[derive(Debug, serde::Serialize, schemars::JsonSchema)]
pub(crate) struct HistoryEntry {
    /// The entry's number; entries of a row are numbered in the order they were written.
    pub(crate) id: i64,
    /// `created`, `updated`, `deleted` (soft-deleted or gone) or `restored`.
    pub(crate) action: String,
    /// When it was written (RFC 3339).
    #[serde(serialize_with = "crate::timestamp::serialize")]
    pub(crate) at: chrono::DateTime<chrono::Utc>,
    /// The id of the account that wrote; `null` for an anonymous caller or the command line.
    pub(crate) actor: Option<String>,
    /// The id of the request that wrote (its `X-Request-Id`); `null` outside a request.
    pub(crate) request_id: Option<String>,
    /// The members that changed, each `{"old": ..., "new": ...}` (`old` absent for a new row
    /// or when no earlier entry is kept, `new` absent when the row is gone), or
    /// `{"redacted": true}` for a write-only member the write set. Members the caller may not
    /// read are left out.
    pub(crate) changes: Map<String, Value>,
}

/// A page of a row's history.
#[derive(Debug, serde::Serialize, schemars::JsonSchema)]
pub(crate) struct HistoryPage {
    /// The entries, newest first.
    pub(crate) data: Vec<HistoryEntry>,
    /// Send as `cursor` for the older entries; `null` on the last page.
    pub(crate) next_cursor: Option<String>,
}

/// `limit` and `cursor`, the only parameters.
fn paging(req: &HttpRequest) -> Result<(i64, Option<i64>), Error> {
    let pairs: Vec<(String, String)> = serde_urlencoded::from_str(req.query_string())
        .map_err(|_| Error::bad_param("query", "is malformed"))?;
    let (mut limit, mut cursor) = (DEFAULT_LIMIT, None);
    for (k, v) in pairs {
        match k.as_str() {
            "limit" => {
                limit = v
                    .parse::<i64>()
                    .ok()
                    .filter(|n| (1..=MAX_LIMIT).contains(n))
                    .ok_or_else(|| {
                        Error::bad_param(
                            "limit",
                            format!("must be a whole number from 1 to {MAX_LIMIT}"),
                        )
                    })?;
            }
            "cursor" => {
                cursor = Some(v.parse::<i64>().ok().filter(|n| *n > 0).ok_or_else(|| {
                    Error::bad_param("cursor", "is not a cursor this route gave")
                })?);
            }
            other => {
                return Err(Error::bad_param(
                    other,
                    "is not a parameter of a history (`limit`, `cursor`)",
                ))
            }
        }
    }
    Ok((limit, cursor))
}

/// `GET <item>/history/`.
///
/// # Errors
///
/// 400 for a bad parameter; 401, 403 or 404 as the item's `GET` would answer; database errors.
pub(crate) async fn history<R: Resource>(
    shared: &Shared<R>,
    req: HttpRequest,
    _body: web::Bytes,
) -> Result<HttpResponse, Error> {
    let st = ApiState::of(&req)?;
    let (limit, cursor) = paging(&req)?;
    let user = crate::auth::current_user(&req).await?;
    let (who, gated) =
        relations::rules::at_door_for(shared, &req, Operation::Get, Door::History, user.as_ref())?;
    let (hidden, shown) = snapshot::read(&st.db, async |conn| {
        let rows = who.rows_read::<R>(&Params::of("")?)?;
        let scope = gated.read_scope(&who, shared, &req, rows)?;
        let addressed = Condition::from(item_conds(shared, &req)?);
        let conds = if scope.is_always() {
            addressed
        } else {
            addressed.and(scope)
        };
        let item = select_one::<R>(conn, &conds)
            .await?
            .ok_or_else(not_found::<R>)?;
        let hidden = read::hidden(&item, who.viewer());
        let key = item.key_of(R::ID_FIELD).ok_or_else(not_found::<R>)?;
        let shown = store::page(conn, R::sql_table(), &key, cursor, limit + 1).await?;
        Ok((hidden, shown))
    })
    .await?;
    let page = page_of(shown, limit, &hidden)?;
    let body = serde_json::to_vec(&page)
        .map_err(|e| Error::Internal(format!("serializing a history: {e}")))?;
    Ok(json(StatusCode::OK, body))
}

/// The page of `shown` (one more than `limit` when there are older entries), without the
/// members in `hidden`.
fn page_of(mut shown: Vec<Shown>, limit: i64, hidden: &[&str]) -> Result<HistoryPage, Error> {
    let more = shown.len() as i64 > limit;
    shown.truncate(usize::try_from(limit).unwrap_or(usize::MAX));
    let next_cursor = if more {
        shown.last().map(|e| e.id.to_string())
    } else {
        None
    };
    let data = shown
        .into_iter()
        .map(|e| {
            let mut changes: Map<String, Value> = serde_json::from_str(&e.changes)
                .map_err(|err| Error::Internal(format!("a stored history entry: {err}")))?;
            changes.retain(|name, _| !hidden.contains(&name.as_str()));
            Ok(HistoryEntry {
                id: e.id,
                action: e.action,
                at: chrono::DateTime::from_timestamp_micros(e.at).unwrap_or_default(),
                actor: e.actor,
                request_id: e.request_id,
                changes,
            })
        })
        .collect::<Result<_, Error>>()?;
    Ok(HistoryPage { data, next_cursor })
}
