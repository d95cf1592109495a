//! The delivery of one feed: a task that runs while the feed has subscribers. Woken by a
//! commit (in this process, or heard through PostgreSQL's `NOTIFY`), or every
//! [`POLL`] at the latest, it reads the events after the furthest-behind subscriber's position
//! (one query), then judges them for every group of subscribers whose conditions are equal:
//! one query per group selects the rows of the events' keys that match the group's
//! conditions, as committed now. The row is rendered once per distinct (hidden members,
//! `fields=`) among the group's subscribers, and shared. For each subscriber the delivery then
//! decides, from the keys it was shown ([`judge`]), what its stream writes: the row (`created`
//! or `updated`), its deletion, or nothing, in which case nothing is queued and the stream is
//! not woken. A subscriber whose queue is full is marked and dropped: its stream sends `reset`
//! and ends.
//!
//! So an event costs 1 + (number of distinct conditions among its subscribers) queries, and a
//! batch of events read together costs the same: once woken, the delivery waits [`GATHER`]
//! so that the commits of those few milliseconds make one batch.

use super::{lock, Change, Event, Fact, Feed, Kind, Known, Pos, Sub, Told};
use crate::condition::{parse_arg, Arg, Cond, Condition, Op};
use crate::crud::view::{write_generated, View};
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

/// How long the delivery waits, once woken, before it reads: the commits of these few
/// milliseconds are judged in one round (two queries and one pass over the subscribers for
/// all of them) instead of one round each. At thousands of writes per second this is what
/// keeps the delivery's share of the core small; it adds at most this much to a delivery's
/// delay.
const GATHER: Duration = Duration::from_millis(4);

/// Most events read and judged at once.
const BATCH: i64 = 200;

/// The first wait before reading again when committed events were held back behind a
/// transaction still running (doubled at each such round, up to [`POLL`]).
const HELD: Duration = Duration::from_millis(5);

/// Runs the delivery of `feed` until it has no subscribers.
pub(crate) async fn run<R: Resource>(feed: Arc<Feed<R>>, hub: Arc<Hub>, db: Database) {
    let mut woken = hub.woken();
    let mut closing = hub.closing();
    let mut held_for = HELD;
    loop {
        // Seen before reading: a commit after this point wakes the wait below.
        woken.borrow_and_update();
        let subs = feed.current_or_stop();
        if subs.is_empty() || *closing.borrow() {
            return;
        }
        let (delivered, held) = match deliver(&feed, &hub, &db, &subs).await {
            Ok(round) => round,
            Err(e) => {
                tracing::warn!(target: "crudforge::realtime", error = %e, "delivering events failed");
                (0, false)
            }
        };
        if delivered == BATCH as usize {
            continue;
        }
        // Events held back behind a transaction still running: read again soon, since that
        // transaction may record no event and so wake nobody when it ends.
        let wait = if held {
            let wait = held_for;
            held_for = (held_for * 2).min(POLL);
            wait
        } else {
            held_for = HELD;
            POLL
        };
        tokio::select! {
            _ = woken.changed() => tokio::time::sleep(GATHER).await,
            _ = closing.changed() => {}
            () = tokio::time::sleep(wait) => {}
        }
    }
}

/// One round: the events after the furthest-behind subscriber, judged and queued for each
/// subscriber. How many events were read, and whether later ones were held back.
async fn deliver<R: Resource>(
    feed: &Feed<R>,
    hub: &Hub,
    db: &Database,
    subs: &[Arc<Sub>],
) -> Result<(usize, bool), Error> {
    let Some(from) = subs.iter().map(|s| cursor(s)).min() else {
        return Ok((0, false));
    };
    let stats = Arc::new(QueryStats::default());
    let (events, held, outcome, passed) = QueryStats::scope(stats.clone(), async {
        let mut conn = db.get().await?;
        let super::Read { events, held } = super::after(&mut conn, feed.table, from, BATCH).await?;
        if events.is_empty() {
            return Ok::<_, Error>((events, held, Vec::new(), Vec::new()));
        }
        // Grouped by the number of their equal conditions, given at subscription (comparing
        // the conditions themselves for every subscriber and round cost more than the rest).
        let mut groups: Vec<(u64, &Condition, Vec<&Arc<Sub>>)> = Vec::new();
        for sub in subs {
            match groups.iter_mut().find(|(g, _, _)| *g == sub.group) {
                Some((_, _, members)) => members.push(sub),
                None => groups.push((sub.group, &sub.conds, vec![sub])),
            }
        }
        let mut outcome = Vec::new();
        let mut passed = Vec::new();
        for (_, conds, members) in groups {
            let Some(behind) = members.iter().map(|s| cursor(s)).min() else {
                continue;
            };
            let pending: Vec<&Event> = events.iter().filter(|e| e.pos > behind).collect();
            if pending.is_empty() {
                continue;
            }
            let rows = in_view::<R>(&mut conn, conds, &pending).await?;
            if rows.is_empty() && !feed.any_shown(pending.iter().copied()) {
                // No row in the group's view and no key any stream was shown: every member
                // is told nothing, so only their positions move.
                passed.push((members, pending.last().map_or(behind, |e| e.pos)));
                continue;
            }
            let rendered = rows
                .into_iter()
                .map(|(key, row)| rendered(row, &members).map(|r| (key, r)))
                .collect::<Result<HashMap<_, _>, Error>>()?;
            outcome.push((members, rendered));
        }
        Ok((events, held, outcome, passed))
    })
    .await?;
    for (members, last) in passed {
        for sub in members {
            // Only this task changes shown keys, so none of these events can concern a member
            // by now; a stream parking meanwhile resumes from before them, which tells it
            // nothing more.
            let mut trail = lock(&sub.trail);
            trail.cursor = trail.cursor.max(last);
        }
    }
    for (members, rows) in outcome {
        for (i, sub) in members.into_iter().enumerate() {
            queue(feed, sub, i, &events, &rows);
        }
    }
    if !events.is_empty() {
        hub.delivered(events.len() as u64, stats.count());
    }
    Ok((events.len(), held))
}

/// The place up to which `sub`'s events were judged.
fn cursor(sub: &Sub) -> Pos {
    lock(&sub.trail).cursor
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

/// A row of a group's view, rendered once per distinct way its subscribers see it: the
/// members they may not read and the `fields=` they asked for. Subscribers with the same hidden
/// members and fields share one rendering.
struct Rendered {
    /// Each distinct view of the row (`None` when rendering it failed: the row then counts as
    /// out of view for those subscribers).
    views: Vec<Option<Arc<Vec<u8>>>>,
    /// For each member of the group (in order), the index of its view.
    of: Vec<usize>,
}

impl Rendered {
    /// The row as member `i` of its group sees it.
    fn view(&self, i: usize) -> Option<Arc<Vec<u8>>> {
        self.of
            .get(i)
            .and_then(|&v| self.views.get(v))
            .cloned()
            .flatten()
    }
}

/// `row` rendered once for each distinct shape among `members`' views of it (the generated
/// representation, as each subscriber's `GET` shows it, kept to its `fields`).
fn rendered<R: Resource>(row: R, members: &[&Arc<Sub>]) -> Result<Rendered, Error> {
    let mut shapes = Vec::new();
    let mut of = Vec::with_capacity(members.len());
    for s in members {
        let shape = View::generated(s.viewer.as_ref())
            .fields(s.fields.as_deref())
            .shape(&row);
        let at = match shapes.iter().position(|h| *h == shape) {
            Some(at) => at,
            None => {
                shapes.push(shape);
                shapes.len() - 1
            }
        };
        of.push(at);
    }
    let mut whole = Vec::with_capacity(256);
    write_generated(&mut whole, row, &[])?;
    let views = shapes
        .iter()
        .map(|shape| match shape.apply(&whole) {
            Ok(v) => Some(Arc::new(v)),
            Err(err) => {
                tracing::warn!(target: "crudforge::realtime", error = %err, "rendering an event failed");
                None
            }
        })
        .collect();
    Ok(Rendered { views, of })
}

/// What `sub` is told of `e`, whose row is `row` as `sub` sees it (`None`: not in its view),
/// given the keys it was shown (`known`, updated here): the row, `created`/`restored` when
/// its key is new to the stream and `updated` otherwise; a deletion when a shown row left the
/// view; nothing when a row it was never shown is out of view (so nothing is queued and the
/// stream is not woken); the view's end when a new key would pass `view_max`.
pub(crate) fn judge(
    known: &mut Known,
    view_max: usize,
    e: &Event,
    row: Option<Arc<Vec<u8>>>,
) -> Option<Told> {
    match row {
        Some(data) => {
            let new = !known.contains(&e.key);
            if new {
                if known.len() >= view_max {
                    return Some(Told::TooLarge);
                }
                known.insert(e.key.clone());
            }
            // A row the stream was shown is `updated`, whatever the event (its creation may
            // come after the view that showed it).
            let kind = match e.kind {
                Kind::Restored if new => Kind::Restored,
                _ if new => Kind::Created,
                _ => Kind::Updated,
            };
            Some(Told::Row { kind, data, new })
        }
        None => known.remove(&e.key).then_some(Told::Gone),
    }
}

/// Queues, for `sub` (member `i` of its group), what it is told of each event after its
/// place ([`judge`]), under the lock of its trail, so that the keys, the queue, the steps a
/// resume takes back and the place always agree. A full queue marks the subscriber
/// overflowed and removes it; a closed one, or a view grown too large, removes it.
fn queue<R: Resource>(
    feed: &Feed<R>,
    sub: &Arc<Sub>,
    i: usize,
    events: &[Event],
    rows: &HashMap<Arc<str>, Rendered>,
) {
    let mut trail = lock(&sub.trail);
    if sub.taken.load(Ordering::SeqCst) {
        return;
    }
    let start = trail.cursor;
    // The place moves once, at the end: under the lock nobody reads it between events.
    let mut judged = start;
    for e in events.iter().filter(|e| e.pos > start) {
        if !trail.skip.is_empty() && trail.skips(e.pos.id) {
            judged = e.pos;
            continue;
        }
        let row = rows.get(&e.key).and_then(|r| r.view(i));
        if let Some(told) = judge(&mut trail.known, sub.view_max, e, row) {
            let change = Change::of(&told);
            let fact = Fact {
                id: e.pos.id,
                key: e.key.clone(),
                told,
            };
            match sub.tx.try_send(fact) {
                Ok(()) => {}
                Err(TrySendError::Full(fact)) => {
                    fact.undo(&mut trail.known);
                    trail.cursor = judged;
                    sub.overflowed.store(true, Ordering::SeqCst);
                    crate::realtime::metrics().streams_dropped.inc();
                    feed.unsubscribe(sub.id);
                    return;
                }
                Err(TrySendError::Closed(fact)) => {
                    fact.undo(&mut trail.known);
                    trail.cursor = judged;
                    feed.unsubscribe(sub.id);
                    return;
                }
            }
            match change {
                Some(change) => trail.queued(e.pos, e.key.clone(), change),
                None => {
                    // The view grew too large: the stream ends with `reset`.
                    trail.cursor = e.pos;
                    feed.unsubscribe(sub.id);
                    return;
                }
            }
        }
        judged = e.pos;
    }
    trail.cursor = judged;
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    fn ev(id: i64, kind: Kind, key: &str) -> Event {
        Event {
            pos: Pos { tx: 0, id },
            kind,
            key: Arc::from(key),
        }
    }

    fn row() -> Option<Arc<Vec<u8>>> {
        Some(Arc::new(b"{}".to_vec()))
    }

    fn said(t: Option<&Told>) -> Option<Kind> {
        match t? {
            Told::Row { kind, .. } => Some(*kind),
            Told::Gone => Some(Kind::Deleted),
            Told::TooLarge => None,
        }
    }

    #[test]
    fn the_delivery_tells_only_of_keys_it_showed() {
        let tally = Arc::default();
        let mut known = Known::new(HashSet::new(), Arc::clone(&tally));
        // Never shown and out of view: nothing, whatever the event.
        for kind in [Kind::Created, Kind::Updated, Kind::Deleted, Kind::Restored] {
            assert!(judge(&mut known, 10, &ev(1, kind, "a"), None).is_none());
        }
        assert_eq!(known.len(), 0);
        // Moved in by an update: created; then updated; moved out: deleted; then nothing.
        let t = judge(&mut known, 10, &ev(2, Kind::Updated, "a"), row());
        assert_eq!(said(t.as_ref()), Some(Kind::Created));
        let t = judge(&mut known, 10, &ev(3, Kind::Updated, "a"), row());
        assert_eq!(said(t.as_ref()), Some(Kind::Updated));
        let t = judge(&mut known, 10, &ev(4, Kind::Updated, "a"), None);
        assert_eq!(said(t.as_ref()), Some(Kind::Deleted));
        assert!(judge(&mut known, 10, &ev(5, Kind::Updated, "a"), None).is_none());
        // A restore of a row never shown is `restored`; of a shown one, `updated`.
        let t = judge(&mut known, 10, &ev(6, Kind::Restored, "b"), row());
        assert_eq!(said(t.as_ref()), Some(Kind::Restored));
        let t = judge(&mut known, 10, &ev(7, Kind::Restored, "b"), row());
        assert_eq!(said(t.as_ref()), Some(Kind::Updated));
        // A new key past the most kept: the view's end, the keys unchanged.
        let t = judge(&mut known, 1, &ev(8, Kind::Created, "c"), row());
        assert!(matches!(t, Some(Told::TooLarge)));
        assert_eq!(known.len(), 1);
        // The feed's tally counts what the stream was shown, and forgets it with the stream.
        assert_eq!(lock(&tally).get("b"), Some(&1));
        assert_eq!(lock(&tally).len(), 1);
        let other = Known::new(
            ["b".into(), "d".into()].into_iter().collect(),
            Arc::clone(&tally),
        );
        assert_eq!(lock(&tally).get("b"), Some(&2));
        drop(known);
        drop(other);
        assert!(lock(&tally).is_empty());
    }

    #[test]
    fn a_queue_slot_stays_small() {
        // Each stream's queue allocates its first block of 32 slots at once.
        assert!(
            std::mem::size_of::<Fact>() <= 40,
            "{}",
            std::mem::size_of::<Fact>()
        );
    }

    #[test]
    fn facts_left_unwritten_are_taken_back_in_reverse() {
        let before: HashSet<Arc<str>> = [Arc::from("a")].into_iter().collect();
        let tally = Arc::default();
        let mut known = Known::new(before.clone(), Arc::clone(&tally));
        let mut left = Vec::new();
        for (id, kind, key, in_view) in [
            (1, Kind::Updated, "a", false),
            (2, Kind::Updated, "a", true),
            (3, Kind::Created, "b", true),
            (4, Kind::Deleted, "b", false),
            (5, Kind::Updated, "a", true),
        ] {
            let e = ev(id, kind, key);
            let told = judge(&mut known, 10, &e, if in_view { row() } else { None });
            if let Some(told) = told {
                left.push(Fact {
                    id: e.pos.id,
                    key: e.key,
                    told,
                });
            }
        }
        assert_eq!(left.len(), 5);
        let kinds: Vec<_> = left.iter().map(|f| said(Some(&f.told))).collect();
        assert_eq!(
            kinds,
            [
                Kind::Deleted,
                Kind::Created,
                Kind::Created,
                Kind::Deleted,
                Kind::Updated
            ]
            .map(Some)
        );
        for fact in left.iter().rev() {
            fact.undo(&mut known);
        }
        assert_eq!(lock(&tally).keys().cloned().collect::<HashSet<_>>(), before);
        assert_eq!(known.take(), before);
        assert!(lock(&tally).is_empty());
    }
}
