//! The webhooks' tables, as Diesel sees them, and their statements: each subscription's state,
//! where it has read the events up to, its messages (added by the fan-out, claimed with a
//! lease, ended fenced by their attempt), replays, the dead letters, pruning.

use crate::db::{Conn, Database};
use crate::error::Error;
use crate::realtime::feed::Pos;
use crate::realtime::schema::crudforge_event_readers as readers;
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Integer, Text};

diesel::table! {
    /// The state of each subscription the application declares.
    crudforge_webhooks (name) {
        /// The subscription's name.
        name -> Text,
        /// Whether its endpoint is sent to.
        enabled -> Bool,
        /// Why it is not.
        reason -> Nullable<Text>,
        /// Failed attempts in a row.
        failures -> Integer,
        /// When it last changed (microseconds since 1970).
        updated_at -> BigInt,
    }
}

diesel::table! {
    /// One message to one subscription's endpoint.
    crudforge_webhook_deliveries (id) {
        id -> BigInt,
        webhook -> Text,
        msg_id -> Text,
        event_id -> BigInt,
        resource -> Text,
        kind -> Text,
        row_key -> Text,
        payload -> Text,
        status -> Text,
        attempts -> Integer,
        next_at -> BigInt,
        lease_until -> BigInt,
        last_code -> Nullable<Integer>,
        last_error -> Nullable<Text>,
        latency_ms -> Nullable<Integer>,
        created_at -> BigInt,
        done_at -> Nullable<BigInt>,
    }
}

use crudforge_webhook_deliveries as deliveries;
use crudforge_webhooks as webhooks;

/// A message waiting to be sent.
pub(crate) const PENDING: &str = "pending";
/// A message the endpoint took (a 2xx answer).
pub(crate) const DELIVERED: &str = "delivered";
/// A message whose attempts ran out: a dead letter.
pub(crate) const DEAD: &str = "dead";

/// Now, in microseconds since 1970.
pub(crate) fn now_micros() -> i64 {
    chrono::Utc::now().timestamp_micros()
}

/// The name under which subscription `name` reads the events.
pub(crate) fn reader(name: &str) -> String {
    format!("webhook:{name}")
}

/// A subscription's state.
#[derive(Debug, Clone, Queryable)]
pub(crate) struct State {
    /// Whether its endpoint is sent to.
    pub(crate) enabled: bool,
    /// Why it is not.
    pub(crate) reason: Option<String>,
}

/// Adds the state of subscription `name` (enabled) unless it has one.
///
/// # Errors
///
/// Database errors.
pub(crate) async fn ensure(db: &Database, name: &str) -> Result<(), Error> {
    let mut conn = db.get().await?;
    crate::with_conn!(conn, |c| {
        let q = diesel::insert_into(webhooks::table)
            .values((
                webhooks::name.eq(name),
                webhooks::enabled.eq(true),
                webhooks::failures.eq(0),
                webhooks::updated_at.eq(now_micros()),
            ))
            .on_conflict_do_nothing();
        diesel_async::RunQueryDsl::execute(q, c).await
    })?;
    Ok(())
}

/// The state of subscription `name`, its row locked until the transaction ends on PostgreSQL
/// (SQLite's write transaction holds the whole database): the claims and the fan-out of one
/// subscription take turns across instances.
///
/// # Errors
///
/// Database errors.
pub(crate) async fn lock(conn: &mut Conn, name: &str) -> Result<Option<State>, Error> {
    let q = webhooks::table
        .filter(webhooks::name.eq(name))
        .select((webhooks::enabled, webhooks::reason));
    let state = crate::__by_backend!(*conn, |c|
        sqlite => diesel_async::RunQueryDsl::get_result::<State>(q, c).await.optional(),
        postgres => diesel_async::RunQueryDsl::get_result::<State>(q.for_update(), c).await.optional()
    )?;
    Ok(state)
}

/// The state of subscription `name`.
///
/// # Errors
///
/// Database errors.
pub(crate) async fn state(db: &Database, name: &str) -> Result<Option<State>, Error> {
    let mut conn = db.get().await?;
    let state = crate::with_conn!(conn, |c| {
        let q = webhooks::table
            .filter(webhooks::name.eq(name))
            .select((webhooks::enabled, webhooks::reason));
        diesel_async::RunQueryDsl::get_result::<State>(q, c)
            .await
            .optional()
    })?;
    Ok(state)
}

/// Where `reader` has read `table`'s events up to (`None`: it has not started).
///
/// # Errors
///
/// Database errors.
pub(crate) async fn cursor(
    conn: &mut Conn,
    reader: &str,
    table: &str,
) -> Result<Option<Pos>, Error> {
    let at = crate::with_conn!(*conn, |c| {
        let q = readers::table
            .filter(readers::reader.eq(reader))
            .filter(readers::resource.eq(table))
            .select((readers::tx, readers::id));
        diesel_async::RunQueryDsl::get_result::<(i64, i64)>(q, c)
            .await
            .optional()
    })?;
    Ok(at.map(|(tx, id)| Pos { tx, id }))
}

/// Starts `reader` on `table` at `at`, unless it has started.
///
/// # Errors
///
/// Database errors.
pub(crate) async fn start(
    conn: &mut Conn,
    reader: &str,
    table: &str,
    at: Pos,
) -> Result<(), Error> {
    crate::with_conn!(*conn, |c| {
        let q = diesel::insert_into(readers::table)
            .values((
                readers::reader.eq(reader),
                readers::resource.eq(table),
                readers::tx.eq(at.tx),
                readers::id.eq(at.id),
            ))
            .on_conflict_do_nothing();
        diesel_async::RunQueryDsl::execute(q, c).await
    })?;
    Ok(())
}

/// Moves `reader` on `table` from `from` to `to`; false when it was not at `from` (another
/// instance moved it first).
///
/// # Errors
///
/// Database errors.
pub(crate) async fn advance(
    conn: &mut Conn,
    reader: &str,
    table: &str,
    from: Pos,
    to: Pos,
) -> Result<bool, Error> {
    let n = crate::with_conn!(*conn, |c| {
        let q = diesel::update(
            readers::table
                .filter(readers::reader.eq(reader))
                .filter(readers::resource.eq(table))
                .filter(readers::tx.eq(from.tx))
                .filter(readers::id.eq(from.id)),
        )
        .set((readers::tx.eq(to.tx), readers::id.eq(to.id)));
        diesel_async::RunQueryDsl::execute(q, c).await
    })?;
    Ok(n == 1)
}

/// Stops `reader` on every resource: the events no longer wait for it.
///
/// # Errors
///
/// Database errors.
pub(crate) async fn stop(conn: &mut Conn, reader: &str) -> Result<(), Error> {
    crate::with_conn!(*conn, |c| {
        let q = diesel::delete(readers::table.filter(readers::reader.eq(reader)));
        diesel_async::RunQueryDsl::execute(q, c).await
    })?;
    Ok(())
}

/// Whether subscription `name` was given a message about row `key` of `table`: a deletion is
/// told only to a subscription that was shown the row.
///
/// # Errors
///
/// Database errors.
pub(crate) async fn shown(
    conn: &mut Conn,
    name: &str,
    table: &str,
    key: &str,
) -> Result<bool, Error> {
    let found = crate::with_conn!(*conn, |c| {
        let q = deliveries::table
            .filter(deliveries::webhook.eq(name))
            .filter(deliveries::resource.eq(table))
            .filter(deliveries::row_key.eq(key))
            .filter(deliveries::kind.ne("deleted"))
            .select(deliveries::id)
            .limit(1);
        diesel_async::RunQueryDsl::get_result::<i64>(q, c)
            .await
            .optional()
    })?;
    Ok(found.is_some())
}

/// Messages subscription `name` has waiting.
///
/// # Errors
///
/// Database errors.
pub(crate) async fn waiting(conn: &mut Conn, name: &str) -> Result<i64, Error> {
    let n = crate::with_conn!(*conn, |c| {
        let q = deliveries::table
            .filter(deliveries::webhook.eq(name))
            .filter(deliveries::status.eq(PENDING))
            .count();
        diesel_async::RunQueryDsl::get_result::<i64>(q, c).await
    })?;
    Ok(n)
}

/// A message the fan-out adds.
#[derive(Debug, Clone, Insertable)]
#[diesel(table_name = deliveries)]
pub(crate) struct NewMessage {
    pub(crate) webhook: String,
    pub(crate) msg_id: String,
    pub(crate) event_id: i64,
    pub(crate) resource: String,
    pub(crate) kind: String,
    pub(crate) row_key: String,
    pub(crate) payload: String,
    pub(crate) status: String,
    pub(crate) next_at: i64,
    pub(crate) created_at: i64,
}

/// Adds `messages`.
///
/// # Errors
///
/// Database errors.
pub(crate) async fn add(conn: &mut Conn, messages: &[NewMessage]) -> Result<(), Error> {
    crate::__by_backend!(*conn, |c|
        sqlite => {
            for m in messages {
                let q = diesel::insert_into(deliveries::table).values(m);
                diesel_async::RunQueryDsl::execute(q, c).await?;
            }
            Ok::<_, diesel::result::Error>(())
        },
        postgres => {
            if !messages.is_empty() {
                let q = diesel::insert_into(deliveries::table).values(messages);
                diesel_async::RunQueryDsl::execute(q, c).await?;
            }
            Ok::<_, diesel::result::Error>(())
        }
    )?;
    Ok(())
}

/// A claimed message.
#[derive(Debug, Clone, QueryableByName)]
pub(crate) struct Claimed {
    #[diesel(sql_type = BigInt)]
    pub(crate) id: i64,
    #[diesel(sql_type = Text)]
    pub(crate) msg_id: String,
    #[diesel(sql_type = Text)]
    pub(crate) payload: String,
    /// This claim's number: the fence of its outcome.
    #[diesel(sql_type = Integer)]
    pub(crate) attempts: i32,
}

/// Claims, in the transaction `conn` is in (after [`lock`]), up to `cap` less the messages of
/// `name` in flight now, the due ones first, leased until `lease_until`.
///
/// # Errors
///
/// Database errors.
pub(crate) async fn claim(
    conn: &mut Conn,
    name: &str,
    cap: i64,
    now: i64,
    lease_until: i64,
) -> Result<Vec<Claimed>, Error> {
    let claimed = crate::__by_backend!(*conn, |c|
        sqlite => {
            let q = diesel::sql_query(
                "UPDATE crudforge_webhook_deliveries SET attempts = attempts + 1, lease_until = ?1 \
                 WHERE id IN (SELECT id FROM crudforge_webhook_deliveries \
                 WHERE webhook = ?2 AND status = 'pending' AND next_at <= ?3 AND lease_until <= ?3 \
                 ORDER BY next_at, id LIMIT max(0, ?4 - (SELECT count(*) FROM crudforge_webhook_deliveries \
                 WHERE webhook = ?2 AND status = 'pending' AND lease_until > ?3))) \
                 RETURNING id, msg_id, payload, attempts",
            )
            .bind::<BigInt, _>(lease_until)
            .bind::<Text, _>(name)
            .bind::<BigInt, _>(now)
            .bind::<BigInt, _>(cap);
            diesel_async::RunQueryDsl::load::<Claimed>(q, c).await
        },
        postgres => {
            let q = diesel::sql_query(
                "UPDATE crudforge_webhook_deliveries SET attempts = attempts + 1, lease_until = $1 \
                 WHERE id IN (SELECT id FROM crudforge_webhook_deliveries \
                 WHERE webhook = $2 AND status = 'pending' AND next_at <= $3 AND lease_until <= $3 \
                 ORDER BY next_at, id LIMIT greatest(0, $4 - (SELECT count(*) FROM crudforge_webhook_deliveries \
                 WHERE webhook = $2 AND status = 'pending' AND lease_until > $3))) \
                 RETURNING id, msg_id, payload, attempts",
            )
            .bind::<BigInt, _>(lease_until)
            .bind::<Text, _>(name)
            .bind::<BigInt, _>(now)
            .bind::<BigInt, _>(cap);
            diesel_async::RunQueryDsl::load::<Claimed>(q, c).await
        }
    )?;
    Ok(claimed)
}

/// How one attempt ended, as stored.
#[derive(Debug, Clone)]
pub(crate) struct Ended {
    /// `delivered`, `pending` (to be tried again at `next_at`) or `dead`.
    pub(crate) status: &'static str,
    /// When to try again (pending).
    pub(crate) next_at: i64,
    /// The answer's status code.
    pub(crate) code: Option<i32>,
    /// What went wrong (clipped), with the start of the answer's body.
    pub(crate) error: Option<String>,
    /// Milliseconds the attempt took.
    pub(crate) latency_ms: i32,
}

/// Ends the claim `m`, fenced by its attempt (a claim whose lease another instance took over
/// changes nothing); whether it held.
///
/// # Errors
///
/// Database errors.
pub(crate) async fn end(conn: &mut Conn, m: &Claimed, ended: &Ended) -> Result<bool, Error> {
    let now = now_micros();
    let done = (ended.status != PENDING).then_some(now);
    let n = crate::with_conn!(*conn, |c| {
        let q = diesel::update(
            deliveries::table
                .filter(deliveries::id.eq(m.id))
                .filter(deliveries::attempts.eq(m.attempts))
                .filter(deliveries::status.eq(PENDING)),
        )
        .set((
            deliveries::status.eq(ended.status),
            deliveries::next_at.eq(ended.next_at),
            deliveries::lease_until.eq(0),
            deliveries::last_code.eq(ended.code),
            deliveries::last_error.eq(ended.error.as_deref()),
            deliveries::latency_ms.eq(ended.latency_ms),
            deliveries::done_at.eq(done),
        ));
        diesel_async::RunQueryDsl::execute(q, c).await
    })?;
    Ok(n == 1)
}

/// Counts a failed attempt of subscription `name`; the failures in a row now.
///
/// # Errors
///
/// Database errors.
pub(crate) async fn failed(conn: &mut Conn, name: &str) -> Result<i32, Error> {
    let n = crate::with_conn!(*conn, |c| {
        let q = diesel::update(webhooks::table.filter(webhooks::name.eq(name)))
            .set(webhooks::failures.eq(webhooks::failures + 1))
            .returning(webhooks::failures);
        diesel_async::RunQueryDsl::get_result::<i32>(q, c).await
    })?;
    Ok(n)
}

/// Counts a delivered message of subscription `name`: no failures in a row.
///
/// # Errors
///
/// Database errors.
pub(crate) async fn succeeded(conn: &mut Conn, name: &str) -> Result<(), Error> {
    crate::with_conn!(*conn, |c| {
        let q = diesel::update(
            webhooks::table
                .filter(webhooks::name.eq(name))
                .filter(webhooks::failures.ne(0)),
        )
        .set(webhooks::failures.eq(0));
        diesel_async::RunQueryDsl::execute(q, c).await
    })?;
    Ok(())
}

/// Disables subscription `name`'s endpoint for `reason` (unless it is disabled already).
///
/// # Errors
///
/// Database errors.
pub(crate) async fn disable(conn: &mut Conn, name: &str, reason: &str) -> Result<(), Error> {
    set_disabled(conn, name, reason, false).await
}

/// Disables subscription `name` for `reason`, whatever disabled it before (its backlog
/// stopped it: the reason that matters most).
///
/// # Errors
///
/// Database errors.
pub(crate) async fn halt(conn: &mut Conn, name: &str, reason: &str) -> Result<(), Error> {
    set_disabled(conn, name, reason, true).await
}

async fn set_disabled(
    conn: &mut Conn,
    name: &str,
    reason: &str,
    always: bool,
) -> Result<(), Error> {
    crate::with_conn!(*conn, |c| {
        let q = diesel::update(
            webhooks::table.filter(webhooks::name.eq(name)).filter(
                webhooks::enabled
                    .eq(true)
                    .or(always.into_sql::<diesel::sql_types::Bool>()),
            ),
        )
        .set((
            webhooks::enabled.eq(false),
            webhooks::reason.eq(reason),
            webhooks::updated_at.eq(now_micros()),
        ));
        diesel_async::RunQueryDsl::execute(q, c).await
    })?;
    Ok(())
}

/// Enables subscription `name`'s endpoint again, its failures forgotten; whether it exists.
///
/// # Errors
///
/// Database errors.
pub(crate) async fn enable(db: &Database, name: &str) -> Result<bool, Error> {
    let mut conn = db.get().await?;
    let n = crate::with_conn!(conn, |c| {
        let q = diesel::update(webhooks::table.filter(webhooks::name.eq(name))).set((
            webhooks::enabled.eq(true),
            webhooks::reason.eq(None::<String>),
            webhooks::failures.eq(0),
            webhooks::updated_at.eq(now_micros()),
        ));
        diesel_async::RunQueryDsl::execute(q, c).await
    })?;
    Ok(n == 1)
}

/// The columns of a message sent again: pending, due `now`, its attempts afresh (its
/// `msg_id` kept).
macro_rules! requeued {
    ($now:expr) => {
        (
            deliveries::status.eq(PENDING),
            deliveries::attempts.eq(0),
            deliveries::next_at.eq($now),
            deliveries::lease_until.eq(0),
            deliveries::done_at.eq(None::<i64>),
        )
    };
}

/// Sends again subscription `name`'s delivered and dead messages of events from `event` on,
/// or made from `since` on (microseconds); how many. Each keeps its `webhook-id`.
///
/// # Errors
///
/// Database errors.
pub(crate) async fn replay(
    db: &Database,
    name: &str,
    event: Option<i64>,
    since: Option<i64>,
) -> Result<u64, Error> {
    let mut conn = db.get().await?;
    let now = now_micros();
    let n = crate::with_conn!(conn, |c| {
        let q = diesel::update(
            deliveries::table
                .filter(deliveries::webhook.eq(name))
                .filter(deliveries::status.ne(PENDING))
                .filter(deliveries::event_id.ge(event.unwrap_or(i64::MIN)))
                .filter(deliveries::created_at.ge(since.unwrap_or(i64::MIN))),
        )
        .set(requeued!(now));
        diesel_async::RunQueryDsl::execute(q, c).await
    })?;
    Ok(n as u64)
}

/// Sends message `id` again (a dead letter, or one delivered); whether it was found.
///
/// # Errors
///
/// Database errors.
pub(crate) async fn redeliver(db: &Database, id: i64) -> Result<bool, Error> {
    let mut conn = db.get().await?;
    let now = now_micros();
    let n = crate::with_conn!(conn, |c| {
        let q = diesel::update(
            deliveries::table
                .filter(deliveries::id.eq(id))
                .filter(deliveries::status.ne(PENDING)),
        )
        .set(requeued!(now));
        diesel_async::RunQueryDsl::execute(q, c).await
    })?;
    Ok(n == 1)
}

/// A message as the administrators see it.
#[derive(Debug, Clone, Queryable)]
pub(crate) struct Listed {
    pub(crate) id: i64,
    pub(crate) msg_id: String,
    pub(crate) event_id: i64,
    pub(crate) resource: String,
    pub(crate) kind: String,
    pub(crate) row_key: String,
    pub(crate) status: String,
    pub(crate) attempts: i32,
    pub(crate) next_at: i64,
    pub(crate) last_code: Option<i32>,
    pub(crate) last_error: Option<String>,
    pub(crate) latency_ms: Option<i32>,
}

/// Subscription `name`'s messages of `status` (all when `None`), newest first, at most `limit`.
///
/// # Errors
///
/// Database errors.
pub(crate) async fn list(
    db: &Database,
    name: &str,
    status: Option<&str>,
    limit: i64,
) -> Result<Vec<Listed>, Error> {
    let mut conn = db.get().await?;
    let rows = crate::with_conn!(conn, |c| {
        let mut q = deliveries::table
            .filter(deliveries::webhook.eq(name))
            .order(deliveries::id.desc())
            .limit(limit)
            .select((
                deliveries::id,
                deliveries::msg_id,
                deliveries::event_id,
                deliveries::resource,
                deliveries::kind,
                deliveries::row_key,
                deliveries::status,
                deliveries::attempts,
                deliveries::next_at,
                deliveries::last_code,
                deliveries::last_error,
                deliveries::latency_ms,
            ))
            .into_boxed();
        if let Some(s) = status {
            q = q.filter(deliveries::status.eq(s.to_owned()));
        }
        diesel_async::RunQueryDsl::load::<Listed>(q, c).await
    })?;
    Ok(rows)
}

/// Removes the delivered and dead messages ended before `before` (microseconds), at most 1,000
/// a statement; how many.
///
/// # Errors
///
/// Database errors.
pub(crate) async fn prune(db: &Database, before: i64) -> Result<u64, Error> {
    let mut total = 0u64;
    loop {
        let mut conn = db.get().await?;
        let n = crate::with_conn!(conn, |c| {
            let old = deliveries::table
                .filter(deliveries::status.ne(PENDING))
                .filter(deliveries::done_at.lt(before))
                .select(deliveries::id)
                .limit(1000);
            let ids: Vec<i64> = diesel_async::RunQueryDsl::load(old, c).await?;
            let q = diesel::delete(deliveries::table.filter(deliveries::id.eq_any(ids)));
            diesel_async::RunQueryDsl::execute(q, c).await
        })?;
        total += n as u64;
        if n < 1000 {
            return Ok(total);
        }
    }
}
