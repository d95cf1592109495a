//! How a generated handler answers: an item through the operation's schema or presenter, its
//! `ETag` (always from the generated representation), and the JSON response.

use super::shared::Shared;
use super::Resource;
use crate::crud::options::Operation;
use crate::crud::rows::reload;
use crate::crud::rules::read::{self, Viewer};
use crate::error::Error;
use actix_web::http::header;
use actix_web::HttpResponse;

/// Writes `item` as operation `op` renders it (a substituted schema, or the generated
/// response) to `out`, without the members `viewer` may not read (see [`read`]).
pub(crate) fn render<R: Resource>(
    shared: &Shared<R>,
    op: Operation,
    out: &mut Vec<u8>,
    item: R,
    viewer: Viewer<'_>,
) -> Result<(), Error> {
    let hidden = read::hidden(&item, viewer);
    let Some((_, render)) = shared.ops.get(&op).and_then(|o| o.response) else {
        return read::write_response(out, item, &hidden);
    };
    // A substituted schema may have any shape: its members are removed once written.
    let start = out.len();
    render(out, item).map_err(|e| Error::Internal(format!("serializing a response: {e}")))?;
    read::strip(out, start, &hidden)
}

/// Renders items through the operation's presenter (with database access) or schema, each
/// without the members `viewer` may not read on it.
pub(crate) async fn render_all<R: Resource>(
    shared: &Shared<R>,
    op: Operation,
    db: &crate::db::Database,
    items: Vec<R>,
    viewer: Viewer<'_>,
) -> Result<Vec<Vec<u8>>, Error> {
    if let Some((_, present)) = shared.ops.get(&op).and_then(|o| o.presenter) {
        let hidden: Vec<_> = items
            .iter()
            .map(|item| read::hidden(item, viewer))
            .collect();
        let mut out = present(db, items).await?;
        for (body, hidden) in out.iter_mut().zip(&hidden) {
            read::strip(body, 0, hidden)?;
        }
        return Ok(out);
    }
    items
        .into_iter()
        .map(|item| {
            let mut out = Vec::with_capacity(256);
            render(shared, op, &mut out, item, viewer).map(|()| out)
        })
        .collect()
}

pub(crate) async fn render_one<R: Resource>(
    shared: &Shared<R>,
    op: Operation,
    db: &crate::db::Database,
    item: R,
    viewer: Viewer<'_>,
) -> Result<Vec<u8>, Error> {
    if shared.ops.get(&op).and_then(|o| o.presenter).is_none() {
        let mut out = Vec::with_capacity(256);
        render(shared, op, &mut out, item, viewer)?;
        return Ok(out);
    }
    render_all(shared, op, db, vec![item], viewer)
        .await?
        .pop()
        .ok_or_else(|| Error::Internal("the presenter returned nothing".into()))
}

/// A JSON response with `status` and `body`.
pub(crate) fn json(status: actix_web::http::StatusCode, body: Vec<u8>) -> HttpResponse {
    HttpResponse::build(status)
        .insert_header((header::CONTENT_TYPE, "application/json"))
        .body(body)
}

/// The item's `ETag` and its body as operation `op` renders it for `viewer`. The tag is
/// computed from the generated representation as `viewer` sees it (see
/// [`read::tag_and_body`]), so it is the same for every operation.
pub(crate) async fn represent<R: Resource>(
    shared: &Shared<R>,
    op: Operation,
    conn: &mut crate::db::Conn,
    db: &crate::db::Database,
    item: R,
    viewer: Viewer<'_>,
) -> Result<(String, Vec<u8>), Error> {
    if !custom_answer(shared, op) {
        return read::tag_and_body(item, viewer);
    }
    let (etag, _) = read::tag_and_body(reload(conn, &item).await?, viewer)?;
    let out = render_one(shared, op, db, item, viewer).await?;
    Ok((etag, out))
}

/// [`represent`] for the rows of a batch: their tags, and their bodies (through the operation's
/// presenter once for all of them, when it has one).
pub(crate) async fn represent_all<R: Resource>(
    shared: &Shared<R>,
    op: Operation,
    conn: &mut crate::db::Conn,
    db: &crate::db::Database,
    items: Vec<R>,
    viewer: Viewer<'_>,
) -> Result<(Vec<String>, Vec<Vec<u8>>), Error> {
    if !custom_answer(shared, op) {
        return items
            .into_iter()
            .map(|item| read::tag_and_body(item, viewer))
            .collect();
    }
    let mut etags = Vec::with_capacity(items.len());
    for item in &items {
        etags.push(read::tag_and_body(reload(conn, item).await?, viewer)?.0);
    }
    let bodies = render_all(shared, op, db, items, viewer).await?;
    Ok((etags, bodies))
}

/// Whether operation `op` answers with a custom schema or presenter rather than the generated
/// representation (which the `ETag` is always computed from).
pub(crate) fn custom_answer<R: Resource>(shared: &Shared<R>, op: Operation) -> bool {
    shared
        .ops
        .get(&op)
        .is_some_and(|o| o.response.is_some() || o.presenter.is_some())
}

/// Sets the `ETag` header (a tag that is not a valid header value is left out).
pub(crate) fn set_etag(res: &mut HttpResponse, etag: &str) {
    if let Ok(v) = header::HeaderValue::from_str(etag) {
        res.headers_mut().insert(header::ETAG, v);
    }
}
