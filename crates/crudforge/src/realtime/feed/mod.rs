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
use crate::crud::shared::{Touch, Touched};
use crate::crud::Resource;
use crate::db::Conn;
use crate::error::Error;
use crate::realtime::schema::crudforge_event_readers as readers;
use crate::realtime::schema::crudforge_events as events;
use crate::realtime::Hub;
pub(crate) use crate::realtime::{Owner, Resume, Resumes};
use diesel::prelude::*;
use std::collections::{HashMap, HashSet};
use std::marker::PhantomData;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

/// A place in the order of events: `(tx, id)`, the writing transaction's id (PostgreSQL; 0 on
/// SQLite) and the event's number. Every event that can still appear sorts after every event
/// a reader has taken (see [`after`]), so a reader's place never passes one it has not seen.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct Pos {
    /// The transaction that wrote the event (0 on SQLite).
    pub(crate) tx: i64,
    /// The event's number (0: before every event).
    pub(crate) id: i64,
}

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

impl From<Touch> for Kind {
    fn from(t: Touch) -> Kind {
        match t {
            Touch::Created => Kind::Created,
            Touch::Updated => Kind::Updated,
            Touch::Deleted => Kind::Deleted,
            Touch::Restored => Kind::Restored,
        }
    }
}

impl From<Kind> for Touch {
    fn from(k: Kind) -> Touch {
        match k {
            Kind::Created => Touch::Created,
            Kind::Updated => Touch::Updated,
            Kind::Deleted => Touch::Deleted,
            Kind::Restored => Touch::Restored,
        }
    }
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
///     crudforge::realtime::record_change::<Line>(conn, EventKind::Created, &line.id.to_string()).await
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
    record(
        conn,
        R::sql_table(),
        &vec![(kind.into(), key.to_owned())],
        Notify::InTransaction,
    )
    .await
}

/// Records, like [`record_change`], that the rows `keys` of `R` were all created, updated,
/// deleted or restored: for a bulk write of many rows (a seeding command, an import), in
/// the transaction that wrote them, with one notification for all.
///
/// # Errors
///
/// Database errors (the write then rolls back with its events).
pub async fn record_changes<R: Resource>(
    conn: &mut Conn,
    kind: Kind,
    keys: impl IntoIterator<Item = String>,
) -> Result<(), Error> {
    let journal: Touched = keys.into_iter().map(|k| (kind.into(), k)).collect();
    record(conn, R::sql_table(), &journal, Notify::InTransaction).await
}

/// How the instances hear of recorded events on PostgreSQL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Notify {
    /// A `NOTIFY` in the write's transaction: for writes whose caller does nothing after the
    /// commit (a hook's, a command's). PostgreSQL orders the commits of notifying transactions
    /// with one lock, so the hot path does not take it.
    InTransaction,
    /// The caller announces the commit afterwards (`Hub::announce`): a blueprint's writes.
    AfterCommit,
}

/// How a write records its events on PostgreSQL: the rows from two arrays (kinds and keys,
/// in order), in one statement.
#[cfg(feature = "postgres")]
const RECORD_PG: &str = "INSERT INTO crudforge_events (resource, kind, row_key, created_at) \
     SELECT $1, e.kind, e.row_key, $4 FROM unnest($2::text[], $3::text[]) \
     WITH ORDINALITY AS e(kind, row_key, n) ORDER BY e.n";

/// [`RECORD_PG`] with the notification every instance hears at the commit.
#[cfg(feature = "postgres")]
const RECORD_NOTIFY_PG: &str = "WITH recorded AS (\
     INSERT INTO crudforge_events (resource, kind, row_key, created_at) \
     SELECT $1, e.kind, e.row_key, $4 FROM unnest($2::text[], $3::text[]) \
     WITH ORDINALITY AS e(kind, row_key, n) ORDER BY e.n) \
     SELECT pg_notify('crudforge_events', '')";

/// Records `journal` for `table` on `conn`, inside the write's transaction, with a `NOTIFY`
/// in it or not (`notify`, PostgreSQL). No lock: the readers' order, not the writers', keeps
/// late commits from being skipped (see [`after`]).
///
/// # Errors
///
/// Database errors (the write then rolls back with its events).
pub(crate) async fn record(
    conn: &mut Conn,
    table: &str,
    journal: &Touched,
    notify: Notify,
) -> Result<(), Error> {
    if journal.is_empty() {
        return Ok(());
    }
    let now = chrono::Utc::now().timestamp_micros();
    crate::__by_backend!(*conn, |c|
        sqlite => {
            // No notification on SQLite: one process writes, and wakes its own feeds.
            let _ = notify;
            // One statement a row: SQLite's Diesel backend has no multi-row `INSERT`.
            for (kind, key) in journal {
                let q = diesel::insert_into(events::table).values((
                    events::resource.eq(table),
                    events::kind.eq(Kind::from(*kind).as_str()),
                    events::row_key.eq(key.as_str()),
                    events::created_at.eq(now),
                ));
                diesel_async::RunQueryDsl::execute(q, c).await?;
            }
            Ok::<_, diesel::result::Error>(())
        },
        postgres => {
            // The common case, one row and no notification: a statement the connection has
            // prepared once.
            if let ([(kind, key)], Notify::AfterCommit) = (journal.as_slice(), notify) {
                let q = diesel::insert_into(events::table).values((
                    events::resource.eq(table),
                    events::kind.eq(Kind::from(*kind).as_str()),
                    events::row_key.eq(key.as_str()),
                    events::created_at.eq(now),
                ));
                diesel_async::RunQueryDsl::execute(q, c).await?;
                return Ok(());
            }
            // Otherwise one statement, one round trip: the rows (as arrays, however many),
            // and the notification that every instance hears at the commit when asked for.
            let kinds: Vec<&str> = journal.iter().map(|(k, _)| Kind::from(*k).as_str()).collect();
            let keys: Vec<&str> = journal.iter().map(|(_, k)| k.as_str()).collect();
            let sql = match notify {
                Notify::InTransaction => RECORD_NOTIFY_PG,
                Notify::AfterCommit => RECORD_PG,
            };
            let q = diesel::sql_query(sql)
                .bind::<diesel::sql_types::Text, _>(table)
                .bind::<diesel::sql_types::Array<diesel::sql_types::Text>, _>(&kinds)
                .bind::<diesel::sql_types::Array<diesel::sql_types::Text>, _>(&keys)
                .bind::<diesel::sql_types::BigInt, _>(now);
            diesel_async::RunQueryDsl::execute(q, c).await?;
            Ok::<_, diesel::result::Error>(())
        }
    )?;
    Ok(())
}

/// One recorded event.
#[derive(Debug, Clone)]
pub(crate) struct Event {
    /// Its place in the order of events.
    pub(crate) pos: Pos,
    /// What happened.
    pub(crate) kind: Kind,
    /// The row's key.
    pub(crate) key: Arc<str>,
}

/// What a read of the events found.
pub(crate) struct Read {
    /// The events after the place asked for, in order.
    pub(crate) events: Vec<Event>,
    /// Whether committed events after them were left for later because a transaction older
    /// than theirs was still running (PostgreSQL): the reader reads again soon, not at its
    /// next wake-up only (that transaction may write no event, and so notify nobody).
    pub(crate) held: bool,
}

/// The SQL that tells, on PostgreSQL, whether an event's transaction is older than every
/// transaction still running in the statement's snapshot: such an event is committed (or
/// rolled back, then absent) for good, and any event not yet visible will have a larger `tx`.
#[cfg(feature = "postgres")]
const SETTLED: &str = "tx < pg_snapshot_xmin(pg_current_snapshot())::text::bigint";

/// The contrary of [`SETTLED`], written so that the index on `(resource, tx, id)` serves it.
#[cfg(feature = "postgres")]
const UNSETTLED: &str = "tx >= pg_snapshot_xmin(pg_current_snapshot())::text::bigint";

/// The events of `table` after `from`, in order, at most `limit`, up to the first one that
/// may still be followed by a late commit before it.
///
/// Why nothing is skipped or taken twice: on SQLite one writer at a time commits, so ids are
/// committed in order and `tx` is 0. On PostgreSQL, events are ordered by `(tx, id)`; a
/// statement's snapshot has an `xmin`, every transaction below which has ended, and this read
/// stops at the first event whose `tx` is not below it. Every event it returns has `tx <
/// xmin`, so all events of those transactions are visible to it; an event that commits later
/// belongs to a transaction that was running (`tx >= xmin`) or had not begun writing, so its
/// `tx` is at least this `xmin` and it sorts after every event returned. The next read starts
/// after the last one returned and takes it then.
///
/// # Errors
///
/// Database errors.
pub(crate) async fn after(
    conn: &mut Conn,
    table: &str,
    from: Pos,
    limit: i64,
) -> Result<Read, Error> {
    let rows: Vec<(i64, i64, String, String, bool)> = crate::__by_backend!(*conn, |c|
        sqlite => {
            // `tx` is always 0 here: said outright, so that the index on (resource, tx, id)
            // seeks to the place instead of reading every event of the resource.
            let q = events::table
                .filter(events::resource.eq(table))
                .filter(events::tx.eq(0))
                .filter(events::id.gt(from.id))
                .order((events::tx.asc(), events::id.asc()))
                .limit(limit)
                .select((
                    events::tx,
                    events::id,
                    events::kind,
                    events::row_key,
                    diesel::dsl::sql::<diesel::sql_types::Bool>("1"),
                ));
            diesel_async::RunQueryDsl::load(q, c).await
        },
        postgres => {
            let q = events::table
                .filter(events::resource.eq(table))
                .filter(events::tx.ge(from.tx))
                .filter(events::tx.gt(from.tx).or(events::id.gt(from.id)))
                .order((events::tx.asc(), events::id.asc()))
                .limit(limit)
                .select((
                    events::tx,
                    events::id,
                    events::kind,
                    events::row_key,
                    diesel::dsl::sql::<diesel::sql_types::Bool>(SETTLED),
                ));
            diesel_async::RunQueryDsl::load(q, c).await
        }
    )?;
    let settled = rows.iter().take_while(|r| r.4).count();
    let held = settled < rows.len();
    let events = rows
        .into_iter()
        .take(settled)
        .filter_map(|(tx, id, kind, key, _)| {
            Some(Event {
                pos: Pos { tx, id },
                kind: Kind::parse(&kind)?,
                key: key.into(),
            })
        })
        .collect();
    Ok(Read { events, held })
}

/// The place of `table`'s newest settled event (see [`after`]; `Pos::default()` when there is
/// none): a reader starting after it misses no event that is not settled yet.
///
/// # Errors
///
/// Database errors.
pub(crate) async fn newest(conn: &mut Conn, table: &str) -> Result<Pos, Error> {
    let newest: Option<(i64, i64)> = crate::__by_backend!(*conn, |c|
        sqlite => {
            let q = events::table
                .filter(events::resource.eq(table))
                .filter(events::tx.eq(0))
                .order((events::tx.desc(), events::id.desc()))
                .select((events::tx, events::id))
                .limit(1);
            diesel_async::RunQueryDsl::get_result(q, c).await.optional()
        },
        postgres => {
            let q = events::table
                .filter(events::resource.eq(table))
                .filter(diesel::dsl::sql::<diesel::sql_types::Bool>(SETTLED))
                .order((events::tx.desc(), events::id.desc()))
                .select((events::tx, events::id))
                .limit(1);
            diesel_async::RunQueryDsl::get_result(q, c).await.optional()
        }
    )?;
    Ok(newest.map_or_else(Pos::default, |(tx, id)| Pos { tx, id }))
}

/// The numbers of `table`'s events that are visible but not settled yet (see [`after`]): in a
/// snapshot that also read a view, they are in the view already, and come after the place of
/// [`newest`]; a stream opened from that snapshot passes over them. None on SQLite.
///
/// # Errors
///
/// Database errors.
pub(crate) async fn unsettled(conn: &mut Conn, table: &str) -> Result<Vec<i64>, Error> {
    let ids: Vec<i64> = crate::__by_backend!(*conn, |c|
        sqlite => {
            let _ = (c, table);
            Vec::new()
        },
        postgres => {
            let q = events::table
                .filter(events::resource.eq(table))
                .filter(diesel::dsl::sql::<diesel::sql_types::Bool>(UNSETTLED))
                .select(events::id);
            diesel_async::RunQueryDsl::load(q, c).await?
        }
    );
    Ok(ids)
}

/// Whether the event at `pos` of `table` is still retained: a resume after it misses nothing
/// (pruning removes the oldest events first). The place before every event always is.
///
/// # Errors
///
/// Database errors.
pub(crate) async fn retained(conn: &mut Conn, table: &str, pos: Pos) -> Result<bool, Error> {
    if pos.id == 0 {
        return Ok(true);
    }
    let found: Option<i64> = crate::with_conn!(conn, |c| {
        let q = events::table
            .filter(events::id.eq(pos.id))
            .filter(events::resource.eq(table))
            .filter(events::tx.eq(pos.tx))
            .select(events::id);
        diesel_async::RunQueryDsl::get_result(q, c).await.optional()
    })?;
    Ok(found.is_some())
}

/// Prunes the events of `table` past the retention: those older than `max_age`, and all but
/// the newest `keep` among those older than `resume` (an event a parked stream may still need
/// for its resume is never pruned), and never one a reader (a webhook subscription) has not
/// read yet. The newest event always stays, so the largest event
/// number stays in the table and SQLite never gives a number again. Small statements outside
/// any write.
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
        // The newest place past the `keep` newest (none: nothing to prune by count).
        let past = events::table
            .filter(events::resource.eq(table))
            .order((events::tx.desc(), events::id.desc()))
            .offset(i64::from(keep))
            .limit(1)
            .select((events::tx, events::id));
        let floor: Option<(i64, i64)> = diesel_async::RunQueryDsl::get_result(past, c)
            .await
            .optional()?;
        let (ftx, fid) = floor.unwrap_or((i64::MIN, 0));
        let at_or_before = events::tx
            .lt(ftx)
            .or(events::tx.eq(ftx).and(events::id.le(fid)));
        let newest = events::table
            .filter(events::resource.eq(table))
            .order((events::tx.desc(), events::id.desc()))
            .limit(1)
            .select((events::tx, events::id));
        let Some((ntx, nid)) = diesel_async::RunQueryDsl::get_result::<(i64, i64)>(newest, c)
            .await
            .optional()?
        else {
            return Ok(0);
        };
        let before_newest = events::tx
            .lt(ntx)
            .or(events::tx.eq(ntx).and(events::id.lt(nid)));
        // The earliest place a reader (a webhook subscription) has read up to: the events
        // after it wait for that reader, whatever their age.
        let earliest = readers::table
            .filter(readers::resource.eq(table))
            .order((readers::tx.asc(), readers::id.asc()))
            .limit(1)
            .select((readers::tx, readers::id));
        let (rtx, rid) = diesel_async::RunQueryDsl::get_result::<(i64, i64)>(earliest, c)
            .await
            .optional()?
            .unwrap_or((i64::MAX, i64::MAX));
        let read_by_all = events::tx
            .lt(rtx)
            .or(events::tx.eq(rtx).and(events::id.le(rid)));
        let old = diesel::delete(
            events::table
                .filter(events::resource.eq(table))
                .filter(before_newest)
                .filter(read_by_all)
                .filter(
                    events::created_at
                        .lt(too_old)
                        .or(at_or_before.and(events::created_at.lt(resumable))),
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
    /// Whose stream it is, for a resume that takes it over.
    pub(crate) owner: Owner,
    /// What the delivery has queued for it: its place, the keys it was shown, the steps a
    /// resume may take back. The delivery changes them only together with the queue, under
    /// this lock.
    pub(crate) trail: Mutex<Trail>,
    /// Most keys it keeps.
    pub(crate) view_max: usize,
    /// Its queue.
    pub(crate) tx: mpsc::Sender<Fact>,
    /// Set when its queue was full: the stream sends `reset` and ends.
    pub(crate) overflowed: AtomicBool,
    /// Set when a resume took its state over: the stream ends without parking.
    pub(crate) taken: AtomicBool,
    /// Wakes the stream when it was taken over.
    pub(crate) ended: tokio::sync::Notify,
}

/// How one queued fact changed the keys a stream was shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Change {
    /// Its key was added.
    Added,
    /// Its key was removed.
    Removed,
    /// Neither.
    Kept,
}

/// One fact queued for a stream, as a resume takes it back.
#[derive(Debug, Clone)]
struct Step {
    /// The event's place.
    pos: Pos,
    /// The row's key.
    key: Arc<str>,
    /// What it did to the shown keys.
    change: Change,
}

/// What the delivery has given one stream: its place (every event up to it judged), the keys
/// it was shown, and the last facts it queued (at most `REALTIME_QUEUE`, oldest first), so that
/// a client that names the last one it received, even one before others already written into
/// a connection that was dead, resumes from there with the keys it had then.
pub(crate) struct Trail {
    /// The keys of the rows it was shown or has queued (or that were in its view when it
    /// began).
    pub(crate) known: Known,
    /// The place up to which the delivery has judged every event for it.
    pub(crate) cursor: Pos,
    /// The place before the first of `steps`: where the stream began, or the last step let go.
    base: Pos,
    steps: std::collections::VecDeque<Step>,
    /// Most steps kept.
    cap: usize,
    /// Events its keys already account for (see [`unsettled`]), passed over when they come.
    pub(crate) skip: Vec<i64>,
}

impl Change {
    /// What a fact told does to the shown keys; `None` for the end of a view grown too large
    /// (no event the client can name).
    pub(crate) fn of(told: &Told) -> Option<Change> {
        Some(match told {
            Told::Row { new: true, .. } => Change::Added,
            Told::Gone => Change::Removed,
            Told::Row { new: false, .. } => Change::Kept,
            Told::TooLarge => return None,
        })
    }
}

impl Trail {
    /// A stream's trail from `start`, having shown `known`, keeping at most `cap` steps.
    pub(crate) fn new(known: Known, start: Pos, cap: usize) -> Trail {
        Trail {
            known,
            cursor: start,
            base: start,
            steps: std::collections::VecDeque::new(),
            cap: cap.max(1),
            skip: Vec::new(),
        }
    }

    /// Whether the event numbered `id` is one the keys already account for (it is passed
    /// over, once).
    pub(crate) fn skips(&mut self, id: i64) -> bool {
        match self.skip.iter().position(|&s| s == id) {
            Some(i) => {
                self.skip.swap_remove(i);
                true
            }
            None => false,
        }
    }

    /// Notes that a fact about `key`, at `pos`, was queued, and what it did to the keys.
    pub(crate) fn queued(&mut self, pos: Pos, key: Arc<str>, change: Change) {
        if self.steps.len() >= self.cap {
            if let Some(first) = self.steps.pop_front() {
                self.base = first.pos;
            }
        }
        self.steps.push_back(Step { pos, key, change });
    }

    /// Taken out of the feed's tally: what a parked stream keeps.
    pub(crate) fn take(&mut self) -> Kept {
        Kept {
            keys: self.known.take(),
            cursor: self.cursor,
            base: self.base,
            steps: std::mem::take(&mut self.steps),
        }
    }
}

/// A stream's trail out of its feed: what a parked stream keeps, and what a resume rewinds.
#[derive(Debug, Clone, Default)]
pub(crate) struct Kept {
    keys: HashSet<Arc<str>>,
    cursor: Pos,
    base: Pos,
    steps: std::collections::VecDeque<Step>,
}

impl Resume {
    /// The place after which its events come.
    pub(crate) fn pos(&self) -> Pos {
        Pos {
            tx: self.tx,
            id: self.id,
        }
    }
}

impl Kept {
    /// Whether the client may have stopped at the event numbered `last`: where the stream
    /// began, the last step let go, or a step it keeps.
    fn has(&self, last: i64) -> bool {
        stops_at(self.base, &self.steps, last)
    }

    /// The state of a client whose last event was numbered `last`: the steps after it taken
    /// back, newest first; its events then come after `last`'s place, or after the cursor when
    /// nothing was queued after it (every event between told it nothing). `None` when `last` is
    /// no place this stream could have stopped at.
    fn rewound(mut self, last: i64) -> Option<Resume> {
        if !self.has(last) {
            return None;
        }
        let mut at = self.base;
        let mut newest = true;
        while let Some(step) = self.steps.pop_back() {
            if step.pos.id == last {
                at = step.pos;
                break;
            }
            newest = false;
            match step.change {
                Change::Added => {
                    self.keys.remove(&step.key);
                }
                Change::Removed => {
                    self.keys.insert(step.key);
                }
                Change::Kept => {}
            }
        }
        let from = if newest { at.max(self.cursor) } else { at };
        Some(Resume {
            keys: self.keys.iter().map(|k| k.to_string()).collect(),
            tx: from.tx,
            id: from.id,
            last,
            skip: Vec::new(),
        })
    }
}

/// Whether a client whose stream began (or last let go of a step) at `base` and queued `steps`
/// may have stopped at the event numbered `last`.
fn stops_at(base: Pos, steps: &std::collections::VecDeque<Step>, last: i64) -> bool {
    base.id == last || steps.iter().any(|s| s.pos.id == last)
}

/// A dropped stream's state, kept for a resume on this instance.
pub(crate) struct Parked {
    /// Whose stream it was.
    pub(crate) owner: Owner,
    /// Its trail.
    pub(crate) kept: Kept,
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
    /// Adds a subscriber with `view`, owned by `owner`, from `resume`'s place on, having shown
    /// its keys (at most `view_max`), with a queue of `queue` events; starts the delivery if it
    /// is not running.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn subscribe(
        self: &Arc<Self>,
        hub: &Arc<Hub>,
        db: &crate::db::Database,
        view: View,
        owner: Owner,
        resume: Resume,
        view_max: usize,
        queue: usize,
    ) -> (Arc<Sub>, mpsc::Receiver<Fact>) {
        let (tx, rx) = mpsc::channel(queue.max(1));
        let start = resume.pos();
        let skip = resume.skip;
        let known = Known::new(
            resume.keys.into_iter().map(Arc::from).collect(),
            self.shown.clone(),
        );
        let mut subs = lock(&self.subs);
        let group = subs.iter().find(|s| s.conds == view.conds).map_or_else(
            || self.next_group.fetch_add(1, Ordering::Relaxed),
            |s| s.group,
        );
        let mut trail = Trail::new(known, start, queue);
        trail.skip = skip;
        let sub = Arc::new(Sub {
            id: self.next_id.fetch_add(1, Ordering::Relaxed),
            conds: view.conds,
            group,
            viewer: view.viewer,
            fields: view.fields,
            owner,
            trail: Mutex::new(trail),
            view_max,
            tx,
            overflowed: AtomicBool::new(false),
            taken: AtomicBool::new(false),
            ended: tokio::sync::Notify::new(),
        });
        subs.push(sub.clone());
        drop(subs);
        hub.enlist(self.table, self.clone());
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

    /// Keeps the state of `sub`, whose stream went away, until `until` (unless it overflowed
    /// or a resume took it over already), bounded: at most `per_user` for its user (anonymous
    /// callers share one count; that user's oldest go first), and at most `max` in all (the
    /// oldest go first). So one caller dropping streams in a loop pushes out its own states,
    /// never other callers'. Under the lock of the parked states, which a resume holds too:
    /// a resume finds the state live or parked, never in between.
    pub(crate) fn park(&self, sub: &Sub, until: Instant, max: usize, per_user: usize) {
        let mut all = lock(&self.parked);
        let kept = {
            let mut trail = lock(&sub.trail);
            if sub.overflowed.load(Ordering::SeqCst) || sub.taken.swap(true, Ordering::SeqCst) {
                return;
            }
            trail.take()
        };
        let now = Instant::now();
        all.retain(|_, p| p.until > now);
        let user = sub.owner.user;
        let oldest = |all: &HashMap<String, Parked>, user: Option<Option<uuid::Uuid>>| {
            all.iter()
                .filter(|(_, p)| user.is_none_or(|u| p.owner.user == u))
                .min_by_key(|(_, p)| p.until)
                .map(|(k, _)| k.clone())
        };
        while all.values().filter(|p| p.owner.user == user).count() >= per_user.max(1) {
            let Some(k) = oldest(&all, Some(user)) else {
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
        all.insert(
            sub.owner.token.clone(),
            Parked {
                owner: sub.owner.clone(),
                kept,
                until,
            },
        );
    }
}

impl<R: Resource> Resumes for Feed<R> {
    fn take_over(&self, owner: &Owner, last: i64) -> Option<Resume> {
        // Under the lock a stream parks under: the state is live or parked, never in between.
        let mut all = lock(&self.parked);
        // A live stream first: the client came back before this instance saw it go (its
        // last events may have been written into the dead connection).
        let live = lock(&self.subs)
            .iter()
            .find(|s| s.owner.token == owner.token)
            .cloned();
        if let Some(sub) = live {
            if sub.owner != *owner {
                return None;
            }
            let kept = {
                let mut trail = lock(&sub.trail);
                let open =
                    !sub.taken.load(Ordering::SeqCst) && !sub.overflowed.load(Ordering::SeqCst);
                if open && !stops_at(trail.base, &trail.steps, last) {
                    return None;
                }
                open.then(|| {
                    sub.taken.store(true, Ordering::SeqCst);
                    trail.take()
                })
            };
            if let Some(kept) = kept {
                drop(all);
                self.unsubscribe(sub.id);
                sub.ended.notify_one();
                return kept.rewound(last);
            }
        }
        let p = all.get(&owner.token)?;
        if p.until <= Instant::now() {
            all.remove(&owner.token);
            return None;
        }
        if p.owner != *owner || !p.kept.has(last) {
            return None;
        }
        all.remove(&owner.token)?.kept.rewound(last)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(feature = "postgres")]
    #[test]
    fn writes_notify_the_channel_instances_listen_on() {
        let notify = format!("pg_notify('{}', '')", crate::realtime::hub::CHANNEL);
        assert!(RECORD_NOTIFY_PG.contains(&notify), "{RECORD_NOTIFY_PG}");
        assert!(RECORD_NOTIFY_PG.contains(RECORD_PG), "the same rows");
    }

    fn kept(base: i64, steps: &[(i64, &str, Change)], keys: &[&str], cursor: i64) -> Kept {
        let pos = |id| Pos { tx: 0, id };
        Kept {
            keys: keys.iter().map(|k| Arc::from(*k)).collect(),
            cursor: pos(cursor),
            base: pos(base),
            steps: steps
                .iter()
                .map(|(id, key, change)| Step {
                    pos: pos(*id),
                    key: Arc::from(*key),
                    change: *change,
                })
                .collect(),
        }
    }

    fn sorted(r: &Resume) -> Vec<&str> {
        let mut k: Vec<&str> = r.keys.iter().map(String::as_str).collect();
        k.sort_unstable();
        k
    }

    #[test]
    fn a_resume_takes_back_the_steps_after_the_clients_last_event() {
        // Began at 3 showing `a`; then `b` added at 5, `a` removed at 7, `c` kept at 9;
        // judged up to 12.
        let steps = [
            (5, "b", Change::Added),
            (7, "a", Change::Removed),
            (9, "c", Change::Kept),
        ];
        let k = || kept(3, &steps, &["b", "c"], 12);
        // From the last step: nothing taken back, from the cursor.
        let r = k().rewound(9).expect("a step");
        assert_eq!((sorted(&r), r.id, r.last), (vec!["b", "c"], 12, 9));
        // From 5: `a` is back, and the events after 5 come again.
        let r = k().rewound(5).expect("a step");
        assert_eq!((sorted(&r), r.id), (vec!["a", "b", "c"], 5));
        // From where it began: `b` was never received.
        let r = k().rewound(3).expect("the start");
        assert_eq!((sorted(&r), r.id), (vec!["a", "c"], 3));
        // An id the stream never sent: nothing.
        assert!(k().rewound(6).is_none());
        assert!(k().rewound(12).is_none());
        // With no steps, from where it began: from the cursor.
        let r = kept(3, &[], &["a"], 12).rewound(3).expect("the start");
        assert_eq!((sorted(&r), r.id), (vec!["a"], 12));
    }

    #[test]
    fn a_trail_keeps_its_last_steps_only() {
        let tally = Arc::default();
        let mut t = Trail::new(Known::new(HashSet::new(), tally), Pos::default(), 2);
        for id in 1..=3 {
            t.queued(Pos { tx: 0, id }, Arc::from("k"), Change::Kept);
        }
        let kept = t.take();
        // Where it began is too far back now; the step let go is the earliest place.
        assert!(!kept.has(0));
        assert!(kept.has(1) && kept.has(2) && kept.has(3));
        assert_eq!(kept.base.id, 1);
    }
}
