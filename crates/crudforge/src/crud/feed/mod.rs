//! Live updates of one blueprint (the `realtime` feature): what a write records
//! ([`record`], in the write's own transaction), the subscribers of a feed ([`Feed`], one per
//! blueprint that offers one), their delivery ([`pump`]: the recorded events read in order, the
//! rules of every group of subscribers with equal conditions judged in one query against the
//! rows as committed) and each subscriber's stream ([`stream`]: Server-Sent Events, the keys
//! it has shown, resume, heartbeats, the end of a session).
//!
//! "Was the row in this subscriber's view before?" is answered by the delivery, from the keys
//! of the rows the subscriber has been shown or has queued (seeded at subscription with the
//! keys of its view, bounded by `REALTIME_VIEW_MAX`), changed only together with its queue. A
//! row now in view is `updated` when its key is known, `created` otherwise; a row out of view
//! is `deleted` (key only) when its key is known, and nothing otherwise: not queued, the
//! stream not woken. So a subscriber hears only of keys it was shown, and nothing about a row
//! it cannot read but the number of events between two it receives (their ids are positions
//! in one counter of the events table, shared by every feed: docs/realtime.md says what that
//! reveals). A stream that goes away takes back what its queue still held. A dropped stream's
//! keys stay with this instance for `REALTIME_RESUME_SECONDS` (bounded per user and in all); a
//! client reconnecting with the `Last-Event-ID` of its last event gets what it missed from the
//! retained events, and any other reconnection gets `reset` and leaves the parked state to
//! its owner.

pub(crate) mod pump;
pub(crate) mod stream;

use crate::auth::CurrentUser;
use crate::condition::Condition;
use crate::crud::Resource;
use crate::db::Conn;
use crate::error::Error;
use crate::realtime::Hub;
use crate::schema::crudforge_events as events;
use diesel::prelude::*;
use std::collections::{HashMap, HashSet};
use std::marker::PhantomData;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

/// The PostgreSQL advisory lock a write holds from its first event to its commit, so that
/// event ids are committed in the order they were taken (a reader never passes an id that a
/// transaction still open would commit later).
#[cfg(feature = "postgres")]
pub(crate) const EVENTS_LOCK_KEY: i64 = 0x6372_7564_6576_7473;

/// What happened to a row, as a feed's events say it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A row was created.
    Created,
    /// A row was changed.
    Updated,
    /// A row was deleted (or soft-deleted).
    Deleted,
    /// A soft-deleted row was restored.
    Restored,
}

impl Kind {
    /// The event's name on the wire and in the table.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Kind::Created => "created",
            Kind::Updated => "updated",
            Kind::Deleted => "deleted",
            Kind::Restored => "restored",
        }
    }

    /// The kind stored as `s`.
    pub(crate) fn parse(s: &str) -> Option<Kind> {
        Some(match s {
            "created" => Kind::Created,
            "updated" => Kind::Updated,
            "deleted" => Kind::Deleted,
            "restored" => Kind::Restored,
            _ => return None,
        })
    }
}

/// Records, in the transaction `conn` is in, that the row `key` of `R` was created, updated,
/// deleted or restored: for writes a hook makes directly through [`Resource`]'s functions
/// (`Resource::insert`, ...) to a resource whose blueprint offers a feed, which the
/// blueprints' own writes record by themselves. Subscribers hear of it once the transaction
/// commits (on PostgreSQL through its `NOTIFY`; on SQLite at their next read of the events,
/// within 2 seconds).
///
/// ```ignore
/// .after_create(|conn, _ctx, order: &Order| Box::pin(async move {
///     let line = Line::insert(conn, line_for(order)?).await?;
///     crudforge::crud::record_change::<Line>(conn, EventKind::Created, &line.id.to_string()).await
/// }))
/// ```
///
/// # Errors
///
/// Database errors (the hook's write then rolls back with it).
pub async fn record_change<R: Resource>(
    conn: &mut Conn,
    kind: Kind,
    key: &str,
) -> Result<(), Error> {
    record(conn, R::sql_table(), &vec![(kind, key.to_owned())]).await
}

/// Records, like [`record_change`], that the rows `keys` of `R` were all created, updated,
/// deleted or restored: for a bulk write of many rows (a seeding command, an import), in
/// the transaction that wrote them, with one lock and one notification for all.
///
/// # Errors
///
/// Database errors (the write then rolls back with its events).
pub async fn record_changes<R: Resource>(
    conn: &mut Conn,
    kind: Kind,
    keys: impl IntoIterator<Item = String>,
) -> Result<(), Error> {
    let journal: Journal = keys.into_iter().map(|k| (kind, k)).collect();
    record(conn, R::sql_table(), &journal).await
}

/// The changes one write made to a resource with a feed: kind and row key, in order.
pub(crate) type Journal = Vec<(Kind, String)>;

/// Records `journal` for `table` on `conn`, inside the write's transaction: on PostgreSQL
/// after taking [`EVENTS_LOCK_KEY`] (held until the commit) and with a `NOTIFY` that every
/// instance hears at the commit.
///
/// # Errors
///
/// Database errors (the write then rolls back with its events).
pub(crate) async fn record(conn: &mut Conn, table: &str, journal: &Journal) -> Result<(), Error> {
    if journal.is_empty() {
        return Ok(());
    }
    let now = chrono::Utc::now().timestamp_micros();
    let rows: Vec<_> = journal
        .iter()
        .map(|(kind, key)| {
            (
                events::resource.eq(table),
                events::kind.eq(kind.as_str()),
                events::row_key.eq(key.as_str()),
                events::created_at.eq(now),
            )
        })
        .collect();
    crate::__by_backend!(*conn, |c|
        sqlite => {
            // One statement a row: SQLite's Diesel backend has no multi-row `INSERT`.
            for row in &rows {
                let q = diesel::insert_into(events::table).values(*row);
                diesel_async::RunQueryDsl::execute(q, c).await?;
            }
            Ok::<_, diesel::result::Error>(())
        },
        postgres => {
            let lock = format!(
                "SELECT pg_advisory_xact_lock({EVENTS_LOCK_KEY}); SELECT pg_notify('{}', '')",
                crate::realtime::CHANNEL
            );
            diesel_async::SimpleAsyncConnection::batch_execute(c, &lock).await?;
            // Up to 1,000 rows a statement (4 parameters each, far below PostgreSQL's limit).
            for chunk in rows.chunks(1000) {
                let q = diesel::insert_into(events::table).values(chunk.to_vec());
                diesel_async::RunQueryDsl::execute(q, c).await?;
            }
            Ok::<_, diesel::result::Error>(())
        }
    )?;
    Ok(())
}

/// One recorded event.
#[derive(Debug, Clone)]
pub(crate) struct Event {
    /// Its id.
    pub(crate) id: i64,
    /// What happened.
    pub(crate) kind: Kind,
    /// The row's key.
    pub(crate) key: Arc<str>,
}

/// The events of `table` after `after`, in order, at most `limit`.
///
/// # Errors
///
/// Database errors.
pub(crate) async fn after(
    conn: &mut Conn,
    table: &str,
    after: i64,
    limit: i64,
) -> Result<Vec<Event>, Error> {
    let rows: Vec<(i64, String, String)> = crate::with_conn!(conn, |c| {
        let q = events::table
            .filter(events::resource.eq(table))
            .filter(events::id.gt(after))
            .order(events::id.asc())
            .limit(limit)
            .select((events::id, events::kind, events::row_key));
        diesel_async::RunQueryDsl::load(q, c).await
    })?;
    Ok(rows
        .into_iter()
        .filter_map(|(id, kind, key)| {
            Some(Event {
                id,
                kind: Kind::parse(&kind)?,
                key: key.into(),
            })
        })
        .collect())
}

/// The newest event id of `table` (0 when there is none).
///
/// # Errors
///
/// Database errors.
pub(crate) async fn newest(conn: &mut Conn, table: &str) -> Result<i64, Error> {
    let newest: Option<i64> = crate::with_conn!(conn, |c| {
        let q = events::table
            .filter(events::resource.eq(table))
            .select(diesel::dsl::max(events::id));
        diesel_async::RunQueryDsl::get_result(q, c).await
    })?;
    Ok(newest.unwrap_or(0))
}

/// Whether the event `id` of `table` is still retained: a resume after it misses nothing
/// (pruning removes the oldest events first). Position 0 (no event yet) always is.
///
/// # Errors
///
/// Database errors.
pub(crate) async fn retained(conn: &mut Conn, table: &str, id: i64) -> Result<bool, Error> {
    if id == 0 {
        return Ok(true);
    }
    let found: Option<i64> = crate::with_conn!(conn, |c| {
        let q = events::table
            .filter(events::resource.eq(table))
            .filter(events::id.eq(id))
            .select(events::id);
        diesel_async::RunQueryDsl::get_result(q, c).await.optional()
    })?;
    Ok(found.is_some())
}

/// Prunes the events of `table` past the retention: those older than `max_age`, and all but
/// the newest `keep` among those older than `resume` (an event a parked stream may still need
/// for its resume is never pruned). Small statements outside any write.
///
/// # Errors
///
/// Database errors.
pub(crate) async fn prune(
    conn: &mut Conn,
    table: &str,
    keep: u32,
    max_age: Duration,
    resume: Duration,
) -> Result<u64, Error> {
    let micros = |d: Duration| i64::try_from(d.as_micros()).unwrap_or(i64::MAX);
    let now = chrono::Utc::now().timestamp_micros();
    let too_old = now.saturating_sub(micros(max_age.max(resume)));
    let resumable = now.saturating_sub(micros(resume));
    let n = crate::with_conn!(conn, |c| {
        // The newest id past the `keep` newest (none: nothing to prune by count).
        let past = events::table
            .filter(events::resource.eq(table))
            .order(events::id.desc())
            .offset(i64::from(keep))
            .limit(1)
            .select(events::id);
        let floor: i64 = diesel_async::RunQueryDsl::get_result(past, c)
            .await
            .optional()?
            .unwrap_or(0);
        let old = diesel::delete(
            events::table.filter(events::resource.eq(table)).filter(
                events::created_at
                    .lt(too_old)
                    .or(events::id.le(floor).and(events::created_at.lt(resumable))),
            ),
        );
        diesel_async::RunQueryDsl::execute(old, c).await
    })?;
    Ok(n as u64)
}

/// What a subscriber is told about one event, decided by the delivery ([`pump::judge`]).
#[derive(Debug)]
pub(crate) struct Fact {
    /// The event's id.
    pub(crate) id: i64,
    /// The row's key.
    pub(crate) key: Arc<str>,
    /// What the stream writes for it.
    pub(crate) told: Told,
}

/// What a stream writes for one event.
#[derive(Debug)]
pub(crate) enum Told {
    /// The row, in its view, as the subscriber's `GET` renders it (trimmed to its `fields`),
    /// as `kind`; `new` when its key was added to the shown keys for it.
    Row {
        /// `created`, `updated` or `restored`.
        kind: Kind,
        /// The row's representation for this subscriber.
        /// (A thin pointer: it keeps each slot of the stream's queue small, 40 bytes.)
        data: Arc<Vec<u8>>,
        /// Whether the key was new to the stream.
        new: bool,
    },
    /// A row it was shown left its view (or was deleted): `deleted`, key only.
    Gone,
    /// A new row would pass the most keys a stream keeps: `reset`, and the stream ends.
    TooLarge,
}

/// The keys one stream was shown, also counted in its feed's tally of the keys any stream was
/// shown, which every change here keeps true (and dropping or taking them takes back): with
/// it, the delivery passes over every subscriber at once for events whose rows are in no view
/// and whose keys no stream was shown.
pub(crate) struct Known {
    keys: HashSet<Arc<str>>,
    tally: Arc<Mutex<HashMap<Arc<str>, u32>>>,
}

impl Known {
    /// `keys`, counted in `tally`.
    pub(crate) fn new(keys: HashSet<Arc<str>>, tally: Arc<Mutex<HashMap<Arc<str>, u32>>>) -> Known {
        {
            let mut t = lock(&tally);
            for k in &keys {
                *t.entry(k.clone()).or_insert(0) += 1;
            }
        }
        Known { keys, tally }
    }

    /// Whether `key` was shown.
    pub(crate) fn contains(&self, key: &str) -> bool {
        self.keys.contains(key)
    }

    /// How many keys were shown.
    pub(crate) fn len(&self) -> usize {
        self.keys.len()
    }

    /// Adds `key`; whether it was new.
    pub(crate) fn insert(&mut self, key: Arc<str>) -> bool {
        if self.keys.contains(&key) {
            return false;
        }
        *lock(&self.tally).entry(key.clone()).or_insert(0) += 1;
        self.keys.insert(key)
    }

    /// Removes `key`; whether it was there.
    pub(crate) fn remove(&mut self, key: &str) -> bool {
        let Some(k) = self.keys.take(key) else {
            return false;
        };
        untally(&mut lock(&self.tally), &k);
        true
    }

    /// The keys, taken out (and out of the tally): what a parked stream keeps.
    pub(crate) fn take(&mut self) -> HashSet<Arc<str>> {
        let keys = std::mem::take(&mut self.keys);
        let mut t = lock(&self.tally);
        for k in &keys {
            untally(&mut t, k);
        }
        keys
    }
}

impl Drop for Known {
    fn drop(&mut self) {
        self.take();
    }
}

/// One stream fewer was shown `key`.
fn untally(tally: &mut HashMap<Arc<str>, u32>, key: &str) {
    if let Some(n) = tally.get_mut(key) {
        *n -= 1;
        if *n == 0 {
            tally.remove(key);
        }
    }
}

impl Fact {
    /// Takes back what queueing this fact did to the shown keys (for a fact that was never
    /// written: refused by the queue, or left in it when the stream went away).
    pub(crate) fn undo(&self, known: &mut Known) {
        match self.told {
            Told::Row { new: true, .. } => {
                known.remove(&self.key);
            }
            Told::Gone => {
                known.insert(self.key.clone());
            }
            Told::Row { new: false, .. } | Told::TooLarge => {}
        }
    }
}

/// What a subscriber sees: the rows matching `conds`, rendered for `viewer`, trimmed to
/// `fields`.
pub(crate) struct View {
    /// The read scope, the parents, the filters, the named filters (relations linked).
    pub(crate) conds: Condition,
    /// Whom rows are rendered for (read rules).
    pub(crate) viewer: Option<CurrentUser>,
    /// The members asked for (`fields=`).
    pub(crate) fields: Option<Vec<&'static str>>,
}

/// One subscriber, as the delivery sees it.
pub(crate) struct Sub {
    /// Its number in its feed.
    pub(crate) id: u64,
    /// Everything a row must match to be in its view: the read scope, the parents, the
    /// filters, the named filters (relations linked).
    pub(crate) conds: Condition,
    /// The number its feed gave its conditions: subscribers with equal conditions have the
    /// same one (the delivery judges them together).
    pub(crate) group: u64,
    /// Whom rows are rendered for (read rules).
    pub(crate) viewer: Option<CurrentUser>,
    /// The members asked for (`fields=`).
    pub(crate) fields: Option<Vec<&'static str>>,
    /// The last event judged for it (queued, or telling it nothing).
    pub(crate) cursor: AtomicI64,
    /// The keys of the rows it has been shown or has queued (or that were in its view when it
    /// began): kept by the delivery, which changes them only together with the queue and
    /// the position, under this lock.
    pub(crate) known: Mutex<Known>,
    /// Most keys it keeps.
    pub(crate) view_max: usize,
    /// Its queue.
    pub(crate) tx: mpsc::Sender<Fact>,
    /// Set when its queue was full: the stream sends `reset` and ends.
    pub(crate) overflowed: AtomicBool,
}

/// A dropped stream's state, kept for a resume on this instance.
pub(crate) struct Parked {
    /// Whose stream it was.
    pub(crate) user: Option<uuid::Uuid>,
    /// The request's query string (the same view is asked for again).
    pub(crate) query: String,
    /// The id of the last event the stream wrote.
    pub(crate) emitted: i64,
    /// The event its resume starts after: the last one it took from its queue, or the
    /// delivery's position when its queue was empty (events between `emitted` and this one
    /// told the client nothing).
    pub(crate) pulled: i64,
    /// The keys it had shown.
    pub(crate) known: HashSet<Arc<str>>,
    /// Until when it is kept.
    pub(crate) until: Instant,
}

/// The feed of one blueprint: its subscribers, the parked states of dropped streams, whether
/// its delivery runs.
pub(crate) struct Feed<R> {
    /// The resource's table, as events name it.
    pub(crate) table: &'static str,
    pub(crate) subs: Mutex<Vec<Arc<Sub>>>,
    pub(crate) parked: Mutex<HashMap<String, Parked>>,
    /// For each key some subscriber was shown, how many were (see [`Known`]).
    pub(crate) shown: Arc<Mutex<HashMap<Arc<str>, u32>>>,
    /// Whether the delivery task runs.
    pumping: AtomicBool,
    next_id: AtomicU64,
    next_group: AtomicU64,
    _resource: PhantomData<fn() -> R>,
}

/// Locks `m`, through a poisoned lock (the lists it guards stay consistent).
pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl<R: Resource> Default for Feed<R> {
    fn default() -> Self {
        Feed {
            table: R::sql_table(),
            subs: Mutex::new(Vec::new()),
            parked: Mutex::new(HashMap::new()),
            shown: Arc::default(),
            pumping: AtomicBool::new(false),
            next_id: AtomicU64::new(1),
            next_group: AtomicU64::new(1),
            _resource: PhantomData,
        }
    }
}

impl<R: Resource> Feed<R> {
    /// Adds a subscriber with `view`, from event `cursor` on, having shown `known` (at most
    /// `view_max` keys), with a queue of `queue` events; starts the delivery if it is not
    /// running.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn subscribe(
        self: &Arc<Self>,
        hub: &Arc<Hub>,
        db: &crate::db::Database,
        view: View,
        cursor: i64,
        known: HashSet<Arc<str>>,
        view_max: usize,
        queue: usize,
    ) -> (Arc<Sub>, mpsc::Receiver<Fact>) {
        let (tx, rx) = mpsc::channel(queue.max(1));
        let mut subs = lock(&self.subs);
        let group = subs.iter().find(|s| s.conds == view.conds).map_or_else(
            || self.next_group.fetch_add(1, Ordering::Relaxed),
            |s| s.group,
        );
        let sub = Arc::new(Sub {
            id: self.next_id.fetch_add(1, Ordering::Relaxed),
            conds: view.conds,
            group,
            viewer: view.viewer,
            fields: view.fields,
            cursor: AtomicI64::new(cursor),
            known: Mutex::new(Known::new(known, self.shown.clone())),
            view_max,
            tx,
            overflowed: AtomicBool::new(false),
        });
        subs.push(sub.clone());
        drop(subs);
        if !self.pumping.swap(true, Ordering::SeqCst) {
            actix_web::rt::spawn(pump::run(self.clone(), hub.clone(), db.clone()));
        }
        hub.wake();
        (sub, rx)
    }

    /// Whether some subscriber was shown one of the keys of `events`.
    pub(crate) fn any_shown<'e>(&self, mut events: impl Iterator<Item = &'e Event>) -> bool {
        let shown = lock(&self.shown);
        events.any(|e| shown.contains_key(&e.key))
    }

    /// Removes subscriber `id`.
    pub(crate) fn unsubscribe(&self, id: u64) {
        lock(&self.subs).retain(|s| s.id != id);
    }

    /// The subscribers now; when there are none, marks the delivery stopped (under the same
    /// lock that [`subscribe`](Self::subscribe) adds under, so none is left without one).
    pub(crate) fn current_or_stop(&self) -> Vec<Arc<Sub>> {
        let subs = lock(&self.subs);
        if subs.is_empty() {
            self.pumping.store(false, Ordering::SeqCst);
        }
        subs.clone()
    }

    /// Keeps a dropped stream's state under `token`, bounded: at most `per_user` for its
    /// user (anonymous callers share one count; that user's oldest go first), and at most
    /// `max` in all (the oldest go first). So one caller dropping streams in a loop pushes
    /// out its own states, never other callers'.
    pub(crate) fn park(&self, token: String, parked: Parked, max: usize, per_user: usize) {
        let now = Instant::now();
        let mut all = lock(&self.parked);
        all.retain(|_, p| p.until > now);
        let oldest = |all: &HashMap<String, Parked>, user: Option<Option<uuid::Uuid>>| {
            all.iter()
                .filter(|(_, p)| user.is_none_or(|u| p.user == u))
                .min_by_key(|(_, p)| p.until)
                .map(|(k, _)| k.clone())
        };
        while all.values().filter(|p| p.user == parked.user).count() >= per_user.max(1) {
            let Some(k) = oldest(&all, Some(parked.user)) else {
                break;
            };
            all.remove(&k);
        }
        while all.len() >= max.max(1) {
            let Some(k) = oldest(&all, None) else {
                break;
            };
            all.remove(&k);
        }
        all.insert(token, parked);
    }

    /// The parked state under `token`, taken, if it is still kept and was `user`'s stream of
    /// the same view, and its last event written was `emitted`. A state that does not match
    /// stays where it is for its owner (a foreign `Last-Event-ID` takes nothing); an expired
    /// one is dropped.
    pub(crate) fn unpark(
        &self,
        token: &str,
        user: Option<uuid::Uuid>,
        query: &str,
        emitted: i64,
    ) -> Option<Parked> {
        let mut all = lock(&self.parked);
        let p = all.get(token)?;
        if p.until <= Instant::now() {
            all.remove(token);
            return None;
        }
        if p.user != user || p.query != query || p.emitted != emitted {
            return None;
        }
        all.remove(token)
    }
}
