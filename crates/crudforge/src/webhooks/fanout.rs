//! One subscription's reading of the events: from where it has read up to, each resource's
//! next events in commit order (the capture a feed reads), each event's row rendered as the
//! subscription's principal's `GET` of the row answers, made into messages; then, in one
//! transaction, the messages added and the place moved on, only if no other instance moved it
//! first. A row the principal may not read makes no message; a deletion makes one only for a
//! row the subscription was shown.

use super::store::{self, NewMessage};
use super::{EventKind, Sub};
use crate::api::Api;
use crate::error::Error;
use crate::realtime::feed;
use actix_web::body::MessageBody;
use actix_web::dev::{Service, ServiceResponse};
use actix_web::http::{header, StatusCode};
use serde_json::{json, Value};

/// Events read at once.
const BATCH: i64 = 200;

/// Reads `sub`'s new events into messages; how many events it read.
///
/// # Errors
///
/// Database errors; a rendering that failed (the events are read again at the next look).
pub(crate) async fn run<S, B>(api: &Api, app: &S, sub: &Sub) -> Result<usize, Error>
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let db = api.db();
    let reader = store::reader(&sub.name);
    let state = match store::state(db, &sub.name).await? {
        Some(state) => state,
        None => {
            store::ensure(db, &sub.name).await?;
            store::state(db, &sub.name)
                .await?
                .ok_or_else(|| Error::Internal(format!("webhook {}: no state", sub.name)))?
        }
    };
    let mut token: Option<String> = None;
    let mut read = 0;
    for (table, item) in &sub.resources {
        loop {
            let mut conn = db.get().await?;
            let Some(at) = store::cursor(&mut conn, &reader, table).await? else {
                // A subscription starts with the events after its first look; one stopped
                // for its backlog starts again once enabled.
                if state.enabled {
                    let newest = feed::newest(&mut conn, table).await?;
                    store::start(&mut conn, &reader, table, newest).await?;
                }
                break;
            };
            let events = feed::after(&mut conn, table, at, BATCH).await?.events;
            let Some(last) = events.last().map(|e| e.pos) else {
                break;
            };
            let backlog = i64::from(api.config().ops.webhooks_backlog_max);
            let coming = i64::try_from(events.len()).unwrap_or(i64::MAX);
            if store::waiting(&mut conn, &sub.name)
                .await?
                .saturating_add(coming)
                > backlog
            {
                drop(conn);
                let why = format!("more than {backlog} messages waiting (WEBHOOKS_BACKLOG_MAX); events are no longer kept for it");
                db.in_tx(async |conn| {
                    store::halt(conn, &sub.name, &why).await?;
                    store::stop(conn, &reader).await
                })
                .await?;
                tracing::warn!(target: "crudforge::webhooks", webhook = %sub.name, "disabled: {why}");
                return Ok(read);
            }
            // No connection is held while rows are rendered: each rendering takes its own.
            drop(conn);
            let now = chrono::Utc::now();
            let mut messages = Vec::new();
            for e in &events {
                if !sub.sends(e.kind) {
                    continue;
                }
                let data = if e.kind == EventKind::Deleted {
                    let mut conn = db.get().await?;
                    store::shown(&mut conn, &sub.name, table, &e.key)
                        .await?
                        .then(|| json!({ "id": &*e.key }))
                } else {
                    if token.is_none() {
                        let Some(t) = principal_token(api, sub, state.enabled).await? else {
                            // The events wait until the principal can read again.
                            return Ok(read);
                        };
                        token = Some(t);
                    }
                    let bearer = token.as_deref().unwrap_or_default();
                    render(app, bearer, &format!("{item}{}", segment(&e.key))).await?
                };
                let Some(data) = data else {
                    continue;
                };
                let payload = json!({
                    "type": format!("{table}.{}", e.kind.as_str()),
                    "timestamp": now.to_rfc3339_opts(chrono::SecondsFormat::Micros, true),
                    "data": data,
                });
                messages.push(NewMessage {
                    webhook: sub.name.clone(),
                    msg_id: format!("msg_{}_{}", sub.name, e.pos.id),
                    event_id: e.pos.id,
                    resource: (*table).to_owned(),
                    kind: e.kind.as_str().to_owned(),
                    row_key: e.key.to_string(),
                    payload: payload.to_string(),
                    status: store::PENDING.to_owned(),
                    next_at: now.timestamp_micros(),
                    created_at: now.timestamp_micros(),
                });
            }
            let moved = db
                .in_tx(async |conn| {
                    if !store::advance(conn, &reader, table, at, last).await? {
                        return Ok(false);
                    }
                    store::add(conn, &messages).await?;
                    Ok(true)
                })
                .await?;
            if !moved {
                // Another instance read these events first.
                break;
            }
            read += events.len();
            if events.len() < usize::try_from(BATCH).unwrap_or(usize::MAX) {
                break;
            }
        }
    }
    Ok(read)
}

/// An access token of `sub`'s principal; `None` when it is not a user or is disabled (the
/// subscription, `enabled` until now, is then disabled with the reason, and told once).
///
/// # Errors
///
/// Database errors.
async fn principal_token(api: &Api, sub: &Sub, enabled: bool) -> Result<Option<String>, Error> {
    match crate::users::find_by_email(api.db(), &sub.principal).await? {
        Some((user, _, true)) => crate::users::access_token(api.state(), user)
            .await
            .map(Some),
        _ if !enabled => Ok(None),
        found => {
            let why = if found.is_some() {
                format!("its principal {} is disabled", sub.principal)
            } else {
                format!("its principal {} is not a user", sub.principal)
            };
            api.db()
                .in_tx(async |conn| store::disable(conn, &sub.name, &why).await)
                .await?;
            tracing::warn!(target: "crudforge::webhooks", webhook = %sub.name, "disabled: {why}");
            Ok(None)
        }
    }
}

/// The bytes a path segment keeps as they are (RFC 3986's unreserved characters).
const SEGMENT: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');

/// `key` as one segment of a path: a text key may hold any character.
fn segment(key: &str) -> String {
    percent_encoding::utf8_percent_encode(key, SEGMENT).to_string()
}

/// The row at `path` as the bearer of `token` reads it (`None`: it may not, or it is gone).
///
/// # Errors
///
/// Any other answer (the events are read again later).
async fn render<S, B>(app: &S, token: &str, path: &str) -> Result<Option<Value>, Error>
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    // Checked first: the test request's builder would not take a malformed one.
    actix_web::http::Uri::try_from(path)
        .map_err(|e| Error::Internal(format!("reading {path} for a webhook: {e}")))?;
    let req = actix_web::test::TestRequest::get()
        .uri(path)
        .insert_header((header::AUTHORIZATION, format!("Bearer {token}")))
        .to_request();
    let resp = app
        .call(req)
        .await
        .map_err(|e| Error::Internal(format!("reading {path} for a webhook: {e}")))?;
    let status = resp.status();
    match status {
        StatusCode::OK => {
            let body = actix_web::body::to_bytes(resp.into_body())
                .await
                .map_err(|_| Error::Internal(format!("reading {path} for a webhook")))?;
            serde_json::from_slice(&body)
                .map(Some)
                .map_err(|e| Error::Internal(format!("reading {path} for a webhook: {e}")))
        }
        StatusCode::NOT_FOUND | StatusCode::FORBIDDEN | StatusCode::UNAUTHORIZED => Ok(None),
        other => Err(Error::Internal(format!(
            "reading {path} for a webhook answered {other}"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::segment;

    #[test]
    fn a_text_key_is_one_path_segment() {
        assert_eq!(segment("3f2a-b_c.d~e"), "3f2a-b_c.d~e");
        assert_eq!(segment("a b/c?d#é"), "a%20b%2Fc%3Fd%23%C3%A9");
        let path = format!("/api/notes/{}", segment("x y/ü"));
        assert!(actix_web::http::Uri::try_from(path.as_str()).is_ok());
    }
}
