//! Throttling of failed credential checks (login, refresh, token login, password recovery),
//! counted in the database per account and client address, per client address and per account,
//! so that several instances share the counts; and of requests that are limited whatever their
//! outcome (sign-ups, [`count_request`]), per client address, in the same table.
//!
//! An [`Attempt`] is begun before the expensive work (bcrypt, token lookups): it counts one
//! failure in advance against each of its keys and answers 429 with `Retry-After` when a key is
//! already over its limit. Marking the attempt [`Attempt::succeeded`] takes the advance back;
//! an attempt that is dropped (every early `return Err(..)`) stays counted as a failure.
//! Counting in advance keeps the bound under concurrency: a burst of simultaneous guesses gets
//! exactly as many evaluations as the limit allows, never more.
//!
//! Counters use fixed windows of `LOGIN_FAILURE_WINDOW` seconds, starting at the first failure
//! after the previous window ended. Keys: `user:<id>` for an account that exists,
//! `email:<sha-256 digest>` for an e-mail address that names none (the answer is the same
//! either way), `addr:<ip>` for a client address (IPv6 by its /64), and the two joined
//! (`user:<id>@addr:<ip>`) for one account tried from one address. The joined key carries the
//! low limit that stops guessing; the account alone only a much higher ceiling, so that a
//! guesser elsewhere cannot lock the owner out. See [auth.md](https://github.com/crudforge/crudforge/blob/main/docs/auth.md).

use crate::db::Database;
use crate::error::Error;
use crate::net::{client_ip as pick_client_ip, counting_unit};
use crate::schema::auth_failures as af;
use crate::state::ApiState;
use crate::with_conn;
use actix_web::http::header::HeaderName;
use actix_web::HttpRequest;
use diesel::dsl::case_when;
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Integer};
use sha2::{Digest, Sha256};
use std::net::IpAddr;
use std::sync::atomic::{AtomicU32, Ordering};
use uuid::Uuid;

/// The `X-Forwarded-For` header.
const X_FORWARDED_FOR: HeaderName = HeaderName::from_static("x-forwarded-for");

/// Whose credentials an attempt tries.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub enum Account<'a> {
    /// A user that exists.
    User(Uuid),
    /// An e-mail address that may or may not belong to a user (compared case-insensitively).
    /// Pass [`Account::User`] when it does, so that every endpoint counts against one account.
    Email(&'a str),
    /// Not known (a token that does not decode): only the client address counts.
    Unknown,
}

impl Account<'_> {
    /// The counter key; never the e-mail address itself.
    fn key(&self) -> Option<String> {
        match self {
            Account::User(id) => Some(format!("user:{id}")),
            Account::Email(email) => {
                let digest = Sha256::digest(super::normalize_email(email.trim()).as_bytes());
                let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
                Some(format!("email:{hex}"))
            }
            Account::Unknown => None,
        }
    }
}

/// The counter key of a client address.
fn address_key(ip: IpAddr) -> String {
    format!("addr:{}", counting_unit(ip))
}

/// The counter key of one account tried from one client address. Requests without a peer
/// address (a Unix socket) cannot be told apart, so they share the address `unknown`.
fn pair_key(account_key: &str, ip: Option<IpAddr>) -> String {
    match ip {
        Some(ip) => format!("{account_key}@{}", address_key(ip)),
        None => format!("{account_key}@addr:unknown"),
    }
}

/// The client address of a request: the socket's peer, or, when the peer is one of
/// `TRUSTED_PROXIES`, the right-most untrusted address of `X-Forwarded-For`. `None` when the
/// request has no peer address (as in `actix_web::test` requests without one).
pub(crate) fn client_ip(req: &HttpRequest) -> Option<IpAddr> {
    let trusted = ApiState::of(req)
        .map(|st| st.config.http.trusted_proxies.as_slice())
        .unwrap_or_default();
    let forwarded = req
        .headers()
        .get_all(X_FORWARDED_FOR)
        .filter_map(|v| v.to_str().ok());
    pick_client_ip(req.peer_addr().map(|a| a.ip()), forwarded, trusted)
}

/// The 429 of a throttled attempt: the same body for every account and address.
fn throttled(retry_after: i64) -> Error {
    Error::TooManyRequests {
        detail: "Too many failed attempts. Try again later.".into(),
        retry_after: u64::try_from(retry_after).unwrap_or(1).max(1),
    }
}

fn now() -> i64 {
    chrono::Utc::now().timestamp()
}

/// One key counted by an attempt, with the window its advance was counted in.
#[derive(Debug)]
struct Held {
    key: String,
    window_start: i64,
}

/// A credential check in progress; see the module documentation.
///
/// Dropping it without calling [`Attempt::succeeded`] leaves it counted as a failure.
#[derive(Debug)]
#[must_use = "an attempt counts as failed unless `succeeded` is called"]
pub struct Attempt {
    db: Database,
    window: i64,
    ip: Option<IpAddr>,
    pair_limit: u32,
    account_limit: u32,
    held: Vec<Held>,
    outcome: Outcome,
}

/// How an attempt ended, for the metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    /// Not settled: dropped so, it failed.
    Failed,
    /// The credentials were right.
    Succeeded,
    /// Refused with 429.
    Throttled,
    /// The database failed: counted neither way.
    Error,
}

impl Drop for Attempt {
    fn drop(&mut self) {
        let metrics = crate::metrics::global();
        match self.outcome {
            Outcome::Failed => metrics.login_failed(),
            Outcome::Throttled => metrics.throttled(),
            Outcome::Succeeded | Outcome::Error => {}
        }
    }
}

impl Attempt {
    /// Begins a credential check for `account` from the request's client address: 429
    /// (`too_many_requests_error`, with `Retry-After`) when the account from this address,
    /// the address over all accounts or the account over all addresses is over its limit,
    /// else an attempt counted as failed until it [`succeeded`](Attempt::succeeded).
    ///
    /// # Errors
    ///
    /// The 429, or a database error.
    pub async fn begin(req: &HttpRequest, account: Account<'_>) -> Result<Attempt, Error> {
        let st = ApiState::of(req)?;
        let cfg = &st.config;
        let mut attempt = Attempt {
            db: st.db.clone(),
            window: i64::try_from(cfg.auth.login_failure_window).unwrap_or(i64::MAX / 2),
            ip: client_ip(req),
            pair_limit: cfg.auth.login_max_failures_per_account_and_address,
            account_limit: cfg.auth.login_max_failures_per_account,
            held: Vec::new(),
            outcome: Outcome::Failed,
        };
        attempt.count(account).await?;
        // The address over all accounts; a request without one is not limited here, since
        // all such requests would share one counter and one guesser could lock them all out.
        let limit = cfg.auth.login_max_failures_per_address;
        if let Some(ip) = attempt.ip.filter(|_| limit > 0) {
            attempt.hold(address_key(ip), limit).await?;
        }
        Ok(attempt)
    }

    /// Counts this attempt against `account` too, for checks that learn the account only
    /// after they began (a token whose subject is known once it decodes), and leaves the
    /// attempt failed.
    ///
    /// # Errors
    ///
    /// The 429 when the account is over its limit, or a database error.
    pub async fn failed_for(mut self, account: Account<'_>) -> Result<(), Error> {
        self.count(account).await
    }

    /// The credentials were right: takes back the failure counted in advance.
    ///
    /// # Errors
    ///
    /// A database error.
    pub async fn succeeded(mut self) -> Result<(), Error> {
        self.outcome = Outcome::Succeeded;
        let held = std::mem::take(&mut self.held);
        release(&self.db, &held).await
    }

    /// The credentials could not be checked (the bcrypt queue was full, the database failed):
    /// takes back the failure counted in advance, so that an overloaded service never counts
    /// towards anyone's lockout, and passes `error` on.
    ///
    /// # Errors
    ///
    /// Always: `error`.
    pub async fn not_checked<T>(mut self, error: Error) -> Result<T, Error> {
        self.outcome = Outcome::Error;
        let held = std::mem::take(&mut self.held);
        let _ = release(&self.db, &held).await;
        Err(error)
    }

    /// Counts the attempt against `account` from this address and against `account` over all
    /// addresses (the ceiling), if the account has a key and the limits are on.
    async fn count(&mut self, account: Account<'_>) -> Result<(), Error> {
        let Some(key) = account.key() else {
            return Ok(());
        };
        if self.pair_limit > 0 {
            self.hold(pair_key(&key, self.ip), self.pair_limit).await?;
        }
        if self.account_limit > 0 {
            self.hold(key, self.account_limit).await?;
        }
        Ok(())
    }

    /// Counts one failure in advance against `key`; over `limit`, takes back everything this
    /// attempt counted and answers 429.
    async fn hold(&mut self, key: String, limit: u32) -> Result<(), Error> {
        let at = now();
        let counted = reserve(&self.db, &key, at, self.window).await;
        let (failures, window_start) = match counted {
            Ok(c) => c,
            Err(e) => {
                self.outcome = Outcome::Error;
                let held = std::mem::take(&mut self.held);
                let _ = release(&self.db, &held).await;
                return Err(e);
            }
        };
        self.held.push(Held { key, window_start });
        if i64::from(failures) > i64::from(limit) {
            self.outcome = Outcome::Throttled;
            let held = std::mem::take(&mut self.held);
            release(&self.db, &held).await?;
            return Err(throttled(window_start + self.window - at));
        }
        Ok(())
    }
}

/// Counts a failed credential check for `account` from the request's client address, without
/// any expensive work to guard (for example a token that does not decode).
///
/// # Errors
///
/// The 429 when the account or the address is already over its limit (the failure is then
/// not counted), or a database error.
pub async fn record_failure(req: &HttpRequest, account: Account<'_>) -> Result<(), Error> {
    let _failed = Attempt::begin(req, account).await?;
    Ok(())
}

/// Counts one request of `kind` (a counter of its own, such as `sign-up`) from the request's
/// client address, whatever its outcome, in fixed windows of `window` seconds: past `limit`
/// requests in a window the answer is 429 with `Retry-After` and `detail`, and the refused
/// request is not counted. The counter shares the table, the windows and the address keys of
/// the failure counters (`<kind>:addr:<ip>`, IPv6 by its /64) but none of their counts.
/// Requests without a client address, and a `limit` of 0, are not counted.
///
/// # Errors
///
/// The 429, or a database error.
pub(crate) async fn count_request(
    req: &HttpRequest,
    kind: &str,
    limit: u32,
    window: u64,
    detail: &'static str,
) -> Result<(), Error> {
    let Some(ip) = client_ip(req).filter(|_| limit > 0) else {
        return Ok(());
    };
    let db = &ApiState::of(req)?.db;
    let key = format!("{kind}:{}", address_key(ip));
    match take(db, &key, limit, window).await? {
        None => Ok(()),
        Some(retry_after) => {
            crate::metrics::global().throttled();
            Err(Error::TooManyRequests {
                detail: detail.into(),
                retry_after,
            })
        }
    }
}

/// Counts one use of `key` in fixed windows of `window` seconds, in the shared table: `None`
/// while the window holds at most `limit` uses, else the seconds until it ends (the refused
/// use is not counted). Keys are the caller's own (`mail:recovery:email:<digest>`); a client
/// address in one goes by [`address_range`].
///
/// # Errors
///
/// Database errors.
pub(crate) async fn take(
    db: &Database,
    key: &str,
    limit: u32,
    window: u64,
) -> Result<Option<u64>, Error> {
    let window = i64::try_from(window).unwrap_or(i64::MAX / 2);
    let at = now();
    let (count, window_start) = reserve(db, key, at, window).await?;
    if i64::from(count) <= i64::from(limit) {
        return Ok(None);
    }
    release(
        db,
        &[Held {
            key: key.to_owned(),
            window_start,
        }],
    )
    .await?;
    Ok(Some(
        u64::try_from(window_start + window - at)
            .unwrap_or(1)
            .max(1),
    ))
}

/// The counting key of a request's client address (`addr:<ip>`, IPv6 by its /64;
/// `addr:unknown` without one).
#[allow(
    dead_code,
    reason = "a door of the seam: a build without the mail feature leaves it unused"
)]
pub(crate) fn address_range(req: &HttpRequest) -> String {
    client_ip(req).map_or_else(|| "addr:unknown".to_owned(), address_key)
}

/// The counting key of an e-mail address: its digest, never the address itself.
#[allow(
    dead_code,
    reason = "a door of the seam: a build without the mail feature leaves it unused"
)]
pub(crate) fn email_key(email: &str) -> String {
    Account::Email(email).key().unwrap_or_default()
}

/// Every this many reservations, a process deletes expired counters.
const SWEEP_EVERY: u32 = 256;
static RESERVATIONS: AtomicU32 = AtomicU32::new(0);

/// Adds one failure to `key` (starting a new window at `now` when the last one has ended) in
/// one atomic upsert; returns the failures counted in the window and when it began.
async fn reserve(db: &Database, key: &str, now: i64, window: i64) -> Result<(i32, i64), Error> {
    let expired_before = now.saturating_sub(window);
    let mut conn = db.get().await?;
    let row: (i32, i64) = with_conn!(conn, |c| {
        diesel_async::RunQueryDsl::get_result(
            diesel::insert_into(af::table)
                .values((
                    af::key.eq(key),
                    af::window_start.eq(now),
                    af::failures.eq(1),
                    af::updated_at.eq(now),
                ))
                .on_conflict(af::key)
                .do_update()
                .set((
                    af::failures.eq(case_when(
                        af::window_start.le(expired_before),
                        1.into_sql::<Integer>(),
                    )
                    .otherwise(af::failures + 1)),
                    af::window_start.eq(case_when(
                        af::window_start.le(expired_before),
                        now.into_sql::<BigInt>(),
                    )
                    .otherwise(af::window_start)),
                    af::updated_at.eq(now),
                ))
                .returning((af::failures, af::window_start)),
            c,
        )
        .await
    })?;
    if RESERVATIONS.fetch_add(1, Ordering::Relaxed) % SWEEP_EVERY == SWEEP_EVERY - 1 {
        with_conn!(conn, |c| {
            diesel_async::RunQueryDsl::execute(
                diesel::delete(af::table.filter(af::window_start.le(expired_before))),
                c,
            )
            .await
        })?;
    }
    Ok(row)
}

/// Takes back one failure from each held key, unless its window has ended since.
async fn release(db: &Database, held: &[Held]) -> Result<(), Error> {
    if held.is_empty() {
        return Ok(());
    }
    let mut conn = db.get().await?;
    for h in held {
        with_conn!(conn, |c| {
            diesel_async::RunQueryDsl::execute(
                diesel::update(
                    af::table
                        .filter(af::key.eq(&h.key))
                        .filter(af::window_start.eq(h.window_start))
                        .filter(af::failures.gt(0)),
                )
                .set(af::failures.eq(af::failures - 1)),
                c,
            )
            .await
        })?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_never_hold_the_email() {
        let id = Uuid::nil();
        assert_eq!(
            Account::User(id).key().as_deref(),
            Some("user:00000000-0000-0000-0000-000000000000")
        );
        let a = Account::Email("Alice@Example.com")
            .key()
            .unwrap_or_default();
        let b = Account::Email(" alice@example.com")
            .key()
            .unwrap_or_default();
        assert_eq!(a, b, "case and surrounding blanks do not matter");
        assert!(a.starts_with("email:") && a.len() == 6 + 64, "{a}");
        assert!(!a.contains("alice"));
        assert!(Account::Unknown.key().is_none());
        let v6: IpAddr = "2001:db8::1".parse().unwrap_or(IpAddr::from([0, 0, 0, 0]));
        assert_eq!(address_key(v6), "addr:2001:db8::/64");
        let v4: IpAddr = "192.0.2.7".parse().unwrap_or(IpAddr::from([0, 0, 0, 0]));
        assert_eq!(pair_key("user:1", Some(v4)), "user:1@addr:192.0.2.7/32");
        assert_eq!(pair_key(&a, Some(v6)), format!("{a}@addr:2001:db8::/64"));
        assert_eq!(pair_key("user:1", None), "user:1@addr:unknown");
    }

    #[test]
    fn throttled_answers_look_alike() {
        let a = throttled(30).problem();
        let b = throttled(0).problem();
        assert_eq!(a.detail, b.detail);
        assert_eq!(a.status, 429);
        assert!(matches!(
            throttled(-5),
            Error::TooManyRequests { retry_after: 1, .. }
        ));
    }
}
