//! The delivery of one feed: a task that runs while the feed has subscribers. Woken by a
//! commit (in this process, or heard through PostgreSQL's `NOTIFY`), or every
//! [`POLL`] at the latest, it reads the events after the furthest-behind subscriber's position
//! (one query), then judges them for every group of subscribers whose conditions are equal:
//! one query per group selects the rows of the events' keys that match the group's
//! conditions, as committed now. Each subscriber of the group gets, per event, the row as its
//! `GET` renders it (its read rules, its `fields=`), or word that the row is not in its view.
//! A subscriber whose queue is full is marked and dropped: its stream sends `reset` and ends.
//!
//! So an event costs 1 + (number of distinct conditions among its subscribers) queries, and a
//! batch of events read together costs the same.

use super::{Event, Fact, Feed, Kind, Sub};
use crate::condition::{parse_arg, Arg, Cond, Condition, Op};
use crate::crud::query::sparse;
use crate::crud::rules::read;
use crate::crud::Resource;
use crate::db::monitor::QueryStats;
use crate::db::Database;
use crate::error::Error;
use crate::realtime::Hub;
use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc::error::TrySendError;

/// The longest the delivery sleeps without being woken (a missed wake-up costs this much).
pub(crate) const POLL: Duration = Duration::from_secs(2);

/// Most events read and judged at once.
const BATCH: i64 = 200;

/// Runs the delivery of `feed` until it has no subscribers.
pub(crate) async fn run<R: Resource>(feed: Arc<Feed<R>>, hub: Arc<Hub>, db: Database) {
    let mut woken = hub.woken();
    let mut closing = hub.closing();
    loop {
        // Seen before reading: a commit after this point wakes the wait below.
        woken.borrow_and_update();
        let subs = feed.current_or_stop();
        if subs.is_empty() || *closing.borrow() {
            return;
        }
        let delivered = match deliver(&feed, &hub, &db, &subs).await {
            Ok(n) => n,
            Err(e) => {
                tracing::warn!(target: "crudforge::realtime", error = %e, "delivering events failed");
                0
            }
        };
        if delivered == BATCH as usize {
            continue;
        }
        tokio::select! {
            _ = woken.changed() => {}
            _ = closing.changed() => {}
            () = tokio::time::sleep(POLL) => {}
        }
    }
}

/// One round: the events after the furthest-behind subscriber, judged and queued for each
/// subscriber. How many events were read.
async fn deliver<R: Resource>(
    feed: &Feed<R>,
    hub: &Hub,
    db: &Database,
    subs: &[Arc<Sub>],
) -> Result<usize, Error> {
    let Some(from) = subs.iter().map(|s| s.cursor.load(Ordering::SeqCst)).min() else {
        return Ok(0);
    };
    let stats = Arc::new(QueryStats::default());
    let (events, outcome) = QueryStats::scope(stats.clone(), async {
        let mut conn = db.get().await?;
        let events = super::after(&mut conn, feed.table, from, BATCH).await?;
        if events.is_empty() {
            return Ok::<_, Error>((events, Vec::new()));
        }
        let mut groups: Vec<(&Condition, Vec<&Arc<Sub>>)> = Vec::new();
        for sub in subs {
            match groups.iter_mut().find(|(c, _)| **c == sub.conds) {
                Some((_, members)) => members.push(sub),
                None => groups.push((&sub.conds, vec![sub])),
            }
        }
        let mut outcome = Vec::new();
        for (conds, members) in groups {
            let behind = members
                .iter()
                .map(|s| s.cursor.load(Ordering::SeqCst))
                .min()
                .unwrap_or(i64::MAX);
            let pending: Vec<&Event> = events.iter().filter(|e| e.id > behind).collect();
            if pending.is_empty() {
                continue;
            }
            let rows = in_view::<R>(&mut conn, conds, &pending).await?;
            let rendered = rows
                .into_iter()
                .map(|(key, row)| rendered(row, &members).map(|r| (key, r)))
                .collect::<Result<HashMap<_, _>, Error>>()?;
            outcome.push((members, rendered));
        }
        Ok((events, outcome))
    })
    .await?;
    for (members, rows) in outcome {
        for (i, sub) in members.into_iter().enumerate() {
            queue(feed, sub, i, &events, &rows);
        }
    }
    if !events.is_empty() {
        hub.delivered(events.len() as u64, stats.count());
    }
    Ok(events.len())
}

/// The rows among `pending`'s keys that match `conds` now, by key: one query.
async fn in_view<R: Resource>(
    conn: &mut crate::db::Conn,
    conds: &Condition,
    pending: &[&Event],
) -> Result<HashMap<Arc<str>, R>, Error> {
    let Some(id) = R::field(R::ID_FIELD) else {
        return Ok(HashMap::new());
    };
    let mut keys: Vec<Arg> = Vec::with_capacity(pending.len());
    let mut seen: Vec<&str> = Vec::with_capacity(pending.len());
    for e in pending {
        if seen.contains(&&*e.key) {
            continue;
        }
        seen.push(&e.key);
        if let Ok(arg) = parse_arg(id.kind, &e.key) {
            keys.push(arg);
        }
    }
    if keys.is_empty() {
        return Ok(HashMap::new());
    }
    let by_key = Condition::Is(Cond {
        field: id.name,
        op: Op::In,
        arg: Arg::List(keys),
        param: id.name.to_owned(),
    });
    let all = Condition::All(vec![conds.clone(), by_key]);
    let rows = R::select(conn, &all, &[], None).await?;
    let mut out = HashMap::with_capacity(rows.len());
    for row in rows {
        if let Some(k) = row.key_of(R::ID_FIELD) {
            out.insert(Arc::from(k.as_str()), row);
        }
    }
    Ok(out)
}

/// A row of a group's view: its generated representation, and for each member of the group
/// (in order) the members that subscriber may not read.
struct Rendered {
    full: Vec<u8>,
    hidden: Vec<Vec<&'static str>>,
}

/// `row` rendered once for all of `members`.
fn rendered<R: Resource>(row: R, members: &[&Arc<Sub>]) -> Result<Rendered, Error> {
    let hidden = members
        .iter()
        .map(|s| read::hidden(&row, s.viewer.as_ref()))
        .collect();
    let mut full = Vec::with_capacity(256);
    read::write_response(&mut full, row, &[])?;
    Ok(Rendered { full, hidden })
}

/// The row as member `i` of its group, `sub`, sees it through its `GET`: without the members
/// it may not read, trimmed to its `fields`.
fn view_of(r: &Rendered, i: usize, sub: &Sub) -> Result<Vec<u8>, Error> {
    let mut out = r.full.clone();
    if let Some(hidden) = r.hidden.get(i) {
        read::strip(&mut out, 0, hidden)?;
    }
    match &sub.fields {
        Some(f) => sparse::project(&out, f),
        None => Ok(out),
    }
}

/// Queues, for `sub` (member `i` of its group), the events after its position: each with the
/// row as `sub` may see it. A row created out of its view is skipped (its key cannot be known
/// to the stream). A full queue marks the subscriber overflowed and removes it; a closed one
/// removes it.
fn queue<R: Resource>(
    feed: &Feed<R>,
    sub: &Arc<Sub>,
    i: usize,
    events: &[Event],
    rows: &HashMap<Arc<str>, Rendered>,
) {
    let start = sub.cursor.load(Ordering::SeqCst);
    for e in events.iter().filter(|e| e.id > start) {
        let data = match rows.get(&e.key) {
            Some(r) => match view_of(r, i, sub) {
                Ok(d) => Some(d),
                Err(err) => {
                    tracing::warn!(target: "crudforge::realtime", error = %err, "rendering an event failed");
                    None
                }
            },
            None => None,
        };
        if data.is_some() || e.kind != Kind::Created {
            let fact = Fact {
                event: e.clone(),
                data,
            };
            match sub.tx.try_send(fact) {
                Ok(()) => {}
                Err(TrySendError::Full(_)) => {
                    sub.overflowed.store(true, Ordering::SeqCst);
                    crate::metrics::global().stream_dropped();
                    feed.unsubscribe(sub.id);
                    return;
                }
                Err(TrySendError::Closed(_)) => {
                    feed.unsubscribe(sub.id);
                    return;
                }
            }
        }
        sub.cursor.store(e.id, Ordering::SeqCst);
    }
}
