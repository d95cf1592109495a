//! Where a limit counts: per key and window in the process; on PostgreSQL, against a count in
//! the table `crudforge_limits` that all instances share. There an instance leases an eighth of
//! the limit at a time (one upsert that never takes the count past the limit) and spends it in
//! the process, so that most requests under a limit touch no database and the instances
//! together never admit more than the limit. What an instance leased and did not spend by the
//! end of a window is lost to the others: a key may be refused up to an eighth of its limit
//! early for each instance it was spread over.

use super::{Limit, LimitKey, Verdict};
use crate::db::{Backend, Database};
use crate::error::Error;
use crate::schema::crudforge_limits as cl;
use crate::state::ApiState;
use crate::with_conn;
use actix_web::HttpRequest;
use diesel::dsl::case_when;
use diesel::prelude::*;
use diesel::sql_types::BigInt;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;

/// Whose requests count together.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Who {
    User(uuid::Uuid),
    Net(ipnet::IpNet),
    /// No client address (a Unix socket): all such callers share one count.
    Unknown,
}

impl std::fmt::Display for Who {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Who::User(id) => write!(f, "user:{id}"),
            Who::Net(net) => write!(f, "addr:{net}"),
            Who::Unknown => f.write_str("addr:unknown"),
        }
    }
}

/// One key's count in the current window, as this process knows it.
#[derive(Debug, Clone, Copy, Default)]
struct Slot {
    /// Unix time (seconds) the window ends.
    window_end: i64,
    /// Units admitted (SQLite), or leased by all instances (PostgreSQL), in the window.
    used: u64,
    /// Units this process leased and has not spent (PostgreSQL).
    lease: u64,
}

/// The count of one limit of one blueprint.
#[derive(Debug)]
pub(crate) struct Counter {
    /// `<prefix>|<operation or door>`: what the shared table's keys start with.
    scope: String,
    limit: Limit,
    /// The `RateLimit-Policy` header of every answer.
    policy: Option<actix_web::http::header::HeaderValue>,
    slots: Mutex<HashMap<Who, Slot>>,
}

/// Past this many keys, a process forgets the ones whose window has ended.
const KEEP_KEYS: usize = 4096;

impl Counter {
    /// The count of `limit`, named `name` in the headers, for the blueprint keys of `scope`.
    pub(crate) fn new(scope: String, name: &str, limit: Limit) -> Counter {
        let policy = format!("\"{name}\";q={};w={}", limit.max, limit.window);
        Counter {
            scope,
            limit,
            policy: actix_web::http::header::HeaderValue::try_from(policy).ok(),
            slots: Mutex::new(HashMap::new()),
        }
    }

    pub(crate) fn limit(&self) -> &Limit {
        &self.limit
    }

    /// The `RateLimit-Policy` header.
    pub(crate) fn policy(&self) -> Option<&actix_web::http::header::HeaderValue> {
        self.policy.as_ref()
    }

    /// Counts a request of `cost` units, when the limit admits it.
    ///
    /// # Errors
    ///
    /// Database errors (PostgreSQL).
    pub(crate) async fn admit(&self, req: &HttpRequest, cost: u32) -> Result<Verdict, Error> {
        let st = ApiState::of(req)?;
        let who = self.who(req);
        let now = chrono::Utc::now().timestamp();
        let window = i64::try_from(self.limit.window).unwrap_or(i64::MAX / 4);
        let window_end = (now.div_euclid(window) + 1) * window;
        let reset = u64::try_from(window_end - now).unwrap_or(1);
        let max = u64::from(self.limit.max);
        let cost = u64::from(cost);
        let shared = st.db.backend() == Backend::Postgres;
        let want = {
            let mut slots = self.lock();
            let slot = slot(&mut slots, &who, window_end);
            if !shared {
                let admitted = slot.used + cost <= max;
                if admitted {
                    slot.used += cost;
                }
                return Ok(Verdict {
                    admitted,
                    remaining: max.saturating_sub(slot.used),
                    reset,
                });
            }
            if slot.lease >= cost {
                slot.lease -= cost;
                return Ok(shared_verdict(true, slot, max, reset));
            }
            (cost - slot.lease).max((max / 8).max(1))
        };
        let key = format!("{}|{who}", self.scope);
        let (used, granted) = lease(&st.db, &key, window_end, want, max).await?;
        let mut slots = self.lock();
        let slot = slot(&mut slots, &who, window_end);
        slot.lease += granted;
        slot.used = slot.used.max(used);
        let admitted = slot.lease >= cost;
        if admitted {
            slot.lease -= cost;
        }
        Ok(shared_verdict(admitted, slot, max, reset))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Who, Slot>> {
        // A count is a plain number: a panic elsewhere cannot leave it half-written.
        self.slots
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Whose count a request is: for a limit per caller, the user its access token names (read
    /// from the token alone: the handler then loads the user on its own connection); a request
    /// without a valid token counts by its address (the handler answers a bad token with the
    /// 401 it would give anyway).
    fn who(&self, req: &HttpRequest) -> Who {
        if self.limit.key == LimitKey::Caller {
            if let Some(id) = crate::auth::token_subject(req) {
                return Who::User(id);
            }
        }
        match crate::auth::throttle::client_ip(req) {
            Some(ip) => Who::Net(crate::net::counting_unit(ip)),
            None => Who::Unknown,
        }
    }
}

/// The slot of `who` for the window ending at `window_end` (a new one when its window ended).
fn slot<'a>(slots: &'a mut HashMap<Who, Slot>, who: &Who, window_end: i64) -> &'a mut Slot {
    if slots.len() > KEEP_KEYS && !slots.contains_key(who) {
        slots.retain(|_, s| s.window_end >= window_end);
    }
    let slot = slots.entry(who.clone()).or_default();
    if slot.window_end != window_end {
        *slot = Slot {
            window_end,
            used: 0,
            lease: 0,
        };
    }
    slot
}

/// A verdict on PostgreSQL: what no instance has leased, and what this one holds.
fn shared_verdict(admitted: bool, slot: &Slot, max: u64, reset: u64) -> Verdict {
    Verdict {
        admitted,
        remaining: max.saturating_sub(slot.used) + slot.lease,
        reset,
    }
}

/// Every this many leases, a process deletes the counts of ended windows.
const SWEEP_EVERY: u32 = 256;
static LEASES: AtomicU32 = AtomicU32::new(0);

/// Leases up to `want` units of `key`'s count in the window ending at `window_end`, never
/// taking it past `max`, in one upsert; gives the units leased by all instances so far and
/// those granted now.
async fn lease(
    db: &Database,
    key: &str,
    window_end: i64,
    want: u64,
    max: u64,
) -> Result<(u64, u64), Error> {
    let want = i64::try_from(want).unwrap_or(i64::MAX / 4);
    let max = i64::try_from(max).unwrap_or(i64::MAX / 4);
    let first = want.min(max);
    let mut conn = db.get().await?;
    let (used, granted): (i64, i64) = with_conn!(conn, |c| {
        diesel_async::RunQueryDsl::get_result(
            diesel::insert_into(cl::table)
                .values((
                    cl::key.eq(key),
                    cl::window_end.eq(window_end),
                    cl::used.eq(first),
                    cl::granted.eq(first),
                ))
                .on_conflict(cl::key)
                .do_update()
                .set((
                    // Every expression reads the row as it was before the statement.
                    cl::granted.eq(case_when(
                        cl::window_end.ne(window_end),
                        first.into_sql::<BigInt>(),
                    )
                    .when((cl::used + want).le(max), want.into_sql::<BigInt>())
                    .otherwise(max.into_sql::<BigInt>() - cl::used)),
                    cl::used.eq(case_when(
                        cl::window_end.ne(window_end),
                        first.into_sql::<BigInt>(),
                    )
                    .when((cl::used + want).le(max), cl::used + want)
                    .otherwise(max.into_sql::<BigInt>())),
                    cl::window_end.eq(window_end),
                ))
                .returning((cl::used, cl::granted)),
            c,
        )
        .await
    })?;
    if LEASES.fetch_add(1, Ordering::Relaxed) % SWEEP_EVERY == SWEEP_EVERY - 1 {
        let now = chrono::Utc::now().timestamp();
        with_conn!(conn, |c| {
            diesel_async::RunQueryDsl::execute(
                diesel::delete(cl::table.filter(cl::window_end.lt(now))),
                c,
            )
            .await
        })?;
    }
    Ok((
        u64::try_from(used).unwrap_or(0),
        u64::try_from(granted).unwrap_or(0),
    ))
}
