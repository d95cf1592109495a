//! Idempotent retries of POST and PATCH through the `Idempotency-Key` request header (the IETF
//! HTTP API working group's draft "The Idempotency-Key HTTP Header Field").
//!
//! A request carrying a key is processed once per caller and key; the caller is the
//! authenticated user, or for an anonymous request its client address (as throttling finds it,
//! `TRUSTED_PROXIES` honoured), so that anonymous clients never share keys. The key row is inserted
//! (state `in_progress`) at the start of the write's transaction and completed with the answer
//! (status, body, `Location`, `ETag`) before the commit, so the write and its key are stored
//! together or not at all, in the database every instance shares. A retry with the same key:
//!
//! - same request (method, path, query string and body hash to the same fingerprint): the
//!   stored answer,
//!   without writing again, marked `Idempotent-Replayed: true`;
//! - another request: 422 naming the header;
//! - while the first request is still being processed by this instance: 409. A duplicate on
//!   another instance waits on the key's unique index until the first commits, then receives
//!   the stored answer.
//!
//! Keys expire after `IDEMPOTENCY_KEY_TTL` seconds (default 24 hours); an expired key is
//! processed anew. Failed requests store nothing (their transaction rolls back), so their
//! retries are processed anew too.

use crate::db::Conn;
use crate::error::Error;
use crate::schema::crudforge_idempotency_keys as keys;
use actix_web::http::header::{self, HeaderName, HeaderValue};
use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse};
use diesel::prelude::*;
use sha2::{Digest, Sha256};
use std::collections::HashSet;
use std::sync::{Arc, Mutex};

/// The request header.
pub(crate) const HEADER: &str = "Idempotency-Key";
/// The response header marking a replayed answer.
pub(crate) const REPLAYED: &str = "Idempotent-Replayed";
/// Longest key accepted, in characters.
pub(crate) const MAX_KEY_LEN: usize = 255;

const IN_PROGRESS: &str = "in_progress";
const DONE: &str = "done";

/// A request's idempotency key, scoped to its caller, with the fingerprint of the request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct IdemKey {
    /// The caller's user id; for anonymous callers `addr:<client address>`, or empty when the
    /// request has no peer address.
    pub caller: String,
    /// The client's key.
    pub key: String,
    /// Hex SHA-256 of the method, path, query string and body.
    pub fingerprint: String,
}

impl IdemKey {
    /// The key of a request, if it carries one. The value is the key itself, or a quoted
    /// string (`"abc"`, the draft's structured-field form); 1 to 255 visible ASCII characters.
    ///
    /// # Errors
    ///
    /// A 400 naming the header when it is repeated, empty, too long or not visible ASCII.
    pub(crate) fn from_request(
        req: &HttpRequest,
        body: &[u8],
        caller: Option<uuid::Uuid>,
    ) -> Result<Option<IdemKey>, Error> {
        let name = HeaderName::from_static("idempotency-key");
        let mut values = req.headers().get_all(&name);
        let Some(value) = values.next() else {
            return Ok(None);
        };
        if values.next().is_some() {
            return Err(Error::bad_param(HEADER, "send the header once"));
        }
        let key = parse_key(value)?;
        let mut h = Sha256::new();
        h.update(req.method().as_str().as_bytes());
        h.update(b" ");
        h.update(req.path().as_bytes());
        // A path never holds a raw `?`; without a query the fingerprint is as it always was.
        let query = req.query_string();
        if !query.is_empty() {
            h.update(b"?");
            h.update(query.as_bytes());
        }
        h.update(b"\n");
        h.update(body);
        let caller = match caller {
            Some(user) => user.to_string(),
            None => crate::auth::throttle::client_ip(req)
                .map(|ip| format!("addr:{ip}"))
                .unwrap_or_default(),
        };
        Ok(Some(IdemKey {
            caller,
            key,
            fingerprint: hex(&h.finalize()),
        }))
    }
}

fn parse_key(value: &HeaderValue) -> Result<String, Error> {
    let text = value
        .to_str()
        .map_err(|_| Error::bad_param(HEADER, "must be visible ASCII"))?
        .trim();
    let key = match text.strip_prefix('"') {
        Some(rest) => rest
            .strip_suffix('"')
            .ok_or_else(|| Error::bad_param(HEADER, "a quoted key is missing its closing quote"))?,
        None => text,
    };
    if key.is_empty() {
        return Err(Error::bad_param(HEADER, "must not be empty"));
    }
    if key.chars().count() > MAX_KEY_LEN {
        return Err(Error::bad_param(
            HEADER,
            format!("at most {MAX_KEY_LEN} characters allowed"),
        ));
    }
    if !key.bytes().all(|b| (0x20..0x7f).contains(&b)) {
        return Err(Error::bad_param(HEADER, "must be visible ASCII"));
    }
    Ok(key.to_owned())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The answer to a write, as sent and as stored for replays.
#[derive(Debug, Clone)]
pub(crate) struct Answer {
    /// Status code.
    pub status: u16,
    /// JSON body.
    pub body: Vec<u8>,
    /// `Location` header.
    pub location: Option<String>,
    /// `ETag` header.
    pub etag: Option<String>,
}

impl Answer {
    /// The answer of a write that ended with `status` (and, for a created item, its
    /// `location`); the body and `ETag` are made afterwards from the written row.
    pub(crate) fn new(status: u16, location: Option<String>) -> Answer {
        Answer {
            status,
            body: Vec::new(),
            location,
            etag: None,
        }
    }

    /// The HTTP response; `replayed` adds `Idempotent-Replayed: true`.
    pub(crate) fn to_response(&self, replayed: bool) -> HttpResponse {
        let status = StatusCode::from_u16(self.status).unwrap_or(StatusCode::OK);
        let mut res = HttpResponse::build(status);
        res.insert_header((header::CONTENT_TYPE, "application/json"));
        for (name, value) in [
            (header::LOCATION, &self.location),
            (header::ETAG, &self.etag),
        ] {
            if let Some(v) = value.as_deref().and_then(|v| HeaderValue::from_str(v).ok()) {
                res.insert_header((name, v));
            }
        }
        if replayed {
            res.insert_header((REPLAYED, "true"));
        }
        res.body(self.body.clone())
    }
}

/// A key row found in the database.
#[derive(Debug, Queryable)]
pub(crate) struct Stored {
    fingerprint: String,
    state: String,
    status: i32,
    body: String,
    location: Option<String>,
    etag: Option<String>,
}

impl Stored {
    /// The answer a retry of `key` receives: the stored one, 422 when the request differs,
    /// 409 while the first is still in progress.
    ///
    /// # Errors
    ///
    /// 422 or 409 as above.
    pub(crate) fn replay(self, key: &IdemKey) -> Result<HttpResponse, Error> {
        if self.fingerprint != key.fingerprint {
            return Err(Error::Validation {
                detail: format!(
                    "The {HEADER} was already used for a different request; use a new key for a new request."
                ),
                field: Some(HEADER.to_owned()),
            });
        }
        if self.state != DONE {
            return Err(in_progress());
        }
        Ok(Answer {
            status: u16::try_from(self.status).unwrap_or(200),
            body: self.body.into_bytes(),
            location: self.location,
            etag: self.etag,
        }
        .to_response(true))
    }
}

fn in_progress() -> Error {
    Error::Conflict(
        format!("A request with this {HEADER} is still being processed; retry later.").into(),
    )
}

fn micros_now() -> i64 {
    chrono::Utc::now().timestamp_micros()
}

/// The unexpired row of `key`, if any. Also forgets every expired key (one indexed
/// statement); call it outside a write's transaction.
///
/// # Errors
///
/// A database error.
pub(crate) async fn lookup(conn: &mut Conn, key: &IdemKey) -> Result<Option<Stored>, Error> {
    let now = micros_now();
    let row = crate::with_conn!(conn, |c| {
        let expired = diesel::delete(keys::table.filter(keys::expires_at.le(now)));
        diesel_async::RunQueryDsl::execute(expired, c).await?;
        let q = keys::table
            .filter(keys::caller.eq(&key.caller))
            .filter(keys::idem_key.eq(&key.key))
            .filter(keys::expires_at.gt(now))
            .select((
                keys::fingerprint,
                keys::state,
                keys::status,
                keys::body,
                keys::location,
                keys::etag,
            ));
        diesel_async::RunQueryDsl::get_result::<Stored>(q, c)
            .await
            .optional()
    })?;
    Ok(row)
}

/// Inserts the `in_progress` row of `key` inside the write's transaction, after removing
/// expired keys. `false` when an unexpired row of the key exists (another request holds or
/// completed it); the transaction must then be rolled back.
///
/// # Errors
///
/// A database error.
pub(crate) async fn claim(conn: &mut Conn, key: &IdemKey, ttl_secs: u64) -> Result<bool, Error> {
    let now = micros_now();
    let ttl = i64::try_from(ttl_secs)
        .unwrap_or(i64::MAX / 1_000_000)
        .saturating_mul(1_000_000);
    let r = crate::with_conn!(conn, |c| {
        // Only this key's expired row: other keys are swept by `lookup`, outside any write's
        // transaction, so that concurrent writes never contend on each other's keys.
        let expired = diesel::delete(
            keys::table
                .filter(keys::caller.eq(&key.caller))
                .filter(keys::idem_key.eq(&key.key))
                .filter(keys::expires_at.le(now)),
        );
        diesel_async::RunQueryDsl::execute(expired, c).await?;
        let q = diesel::insert_into(keys::table).values((
            keys::caller.eq(&key.caller),
            keys::idem_key.eq(&key.key),
            keys::fingerprint.eq(&key.fingerprint),
            keys::state.eq(IN_PROGRESS),
            keys::status.eq(0),
            keys::body.eq(""),
            keys::created_at.eq(now),
            keys::expires_at.eq(now.saturating_add(ttl)),
        ));
        diesel_async::RunQueryDsl::execute(q, c).await
    });
    match r {
        Ok(_) => Ok(true),
        Err(diesel::result::Error::DatabaseError(
            diesel::result::DatabaseErrorKind::UniqueViolation,
            _,
        )) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// Stores the answer of `key` (state `done`), inside the write's transaction.
///
/// # Errors
///
/// A database error, or a body that is not UTF-8.
pub(crate) async fn complete(conn: &mut Conn, key: &IdemKey, answer: &Answer) -> Result<(), Error> {
    let body = std::str::from_utf8(&answer.body)
        .map_err(|_| Error::Internal("a stored answer must be UTF-8".into()))?;
    crate::with_conn!(conn, |c| {
        let q = diesel::update(
            keys::table
                .filter(keys::caller.eq(&key.caller))
                .filter(keys::idem_key.eq(&key.key)),
        )
        .set((
            keys::state.eq(DONE),
            keys::status.eq(i32::from(answer.status)),
            keys::body.eq(body),
            keys::location.eq(answer.location.as_deref()),
            keys::etag.eq(answer.etag.as_deref()),
        ));
        diesel_async::RunQueryDsl::execute(q, c).await
    })?;
    Ok(())
}

/// What to do after a claim failed and the transaction was rolled back: replay what the other
/// request stored, or 422 / 409.
///
/// # Errors
///
/// 422, 409 or a database error.
pub(crate) async fn after_lost_claim(
    conn: &mut Conn,
    key: &IdemKey,
) -> Result<HttpResponse, Error> {
    match lookup(conn, key).await? {
        Some(stored) => stored.replay(key),
        None => Err(in_progress()),
    }
}

/// The keys this process is working on, so that a concurrent duplicate gets 409 at once.
#[derive(Debug, Default)]
pub(crate) struct InFlight {
    keys: Arc<Mutex<HashSet<(String, String)>>>,
}

/// Holds a key in [`InFlight`] until dropped.
#[derive(Debug)]
pub(crate) struct Claim {
    keys: Arc<Mutex<HashSet<(String, String)>>>,
    id: (String, String),
}

impl InFlight {
    /// Marks `key` as being processed.
    ///
    /// # Errors
    ///
    /// 409 when it already is.
    pub(crate) fn claim(&self, key: &IdemKey) -> Result<Claim, Error> {
        let id = (key.caller.clone(), key.key.clone());
        let mut set = self.keys.lock().unwrap_or_else(|p| p.into_inner());
        if !set.insert(id.clone()) {
            return Err(in_progress());
        }
        Ok(Claim {
            keys: self.keys.clone(),
            id,
        })
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        let mut set = self.keys.lock().unwrap_or_else(|p| p.into_inner());
        set.remove(&self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(v: &str) -> Result<String, Error> {
        parse_key(&HeaderValue::from_str(v).unwrap())
    }

    #[test]
    fn keys_are_plain_or_quoted() {
        assert_eq!(key("abc-1").unwrap(), "abc-1");
        assert_eq!(key("\"abc 1\"").unwrap(), "abc 1");
        assert!(key(&"x".repeat(255)).is_ok());
        for bad in ["", "\"\"", "\"abc", &"x".repeat(256)] {
            match key(bad) {
                Err(Error::BadRequest { field, .. }) => {
                    assert_eq!(field.as_deref(), Some(HEADER))
                }
                other => panic!("{bad}: {other:?}"),
            }
        }
    }

    #[test]
    fn a_key_is_claimed_once_at_a_time() {
        let f = InFlight::default();
        let k = IdemKey {
            caller: String::new(),
            key: "k".into(),
            fingerprint: String::new(),
        };
        let c = f.claim(&k).unwrap();
        assert!(matches!(f.claim(&k), Err(Error::Conflict(_))));
        drop(c);
        assert!(f.claim(&k).is_ok());
    }
}
