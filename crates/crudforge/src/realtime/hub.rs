//! Live updates' part of one API that every feed shares (the `realtime` feature): the wake-up
//! of the feeds' delivery (a write's commit in this process, or on PostgreSQL a `NOTIFY` from
//! any instance, heard on one `LISTEN` connection), the caps on open streams (per process and
//! per user), the single-use stream tickets, and the signal that closes every
//! stream at shutdown, and the hand-over of a stream's state between instances (PostgreSQL).
//! The feeds themselves (what a subscriber receives) are `feed`.

use crate::error::Error;
use std::collections::HashMap;
use std::sync::atomic::AtomicBool;
#[cfg(feature = "postgres")]
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};
use tokio::sync::watch;
use uuid::Uuid;

#[cfg(feature = "postgres")]
pub(crate) mod handoff;

/// Who may take a stream over: the caller, the view, the stream's token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Owner {
    /// The part of every event id that names the stream.
    pub(crate) token: String,
    /// Whose stream it is.
    pub(crate) user: Option<uuid::Uuid>,
    /// The request's query string (the same view is asked for again).
    pub(crate) query: String,
}

/// Where a resumed stream starts: the keys its client had been shown and the place after
/// which its events come.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct Resume {
    /// The shown keys.
    pub(crate) keys: Vec<String>,
    /// The place's transaction.
    pub(crate) tx: i64,
    /// The place's event number.
    pub(crate) id: i64,
    /// The number of the last event the client received (the `ready` event repeats it).
    pub(crate) last: i64,
    /// Events after the place that the keys already account for (see [`unsettled`]): passed
    /// over.
    #[serde(default)]
    pub(crate) skip: Vec<i64>,
}

/// A feed's part in resumes, whatever its resource: another instance's request for a stream's
/// state is answered through it.
pub(crate) trait Resumes: Send + Sync {
    /// The state of the stream `owner` names, taken (from a live stream, which ends, or from a
    /// parked one) and rewound to `last`, when it is that caller's stream of that view and
    /// `last` is a place it could have stopped at. Anything else takes nothing.
    fn take_over(&self, owner: &Owner, last: i64) -> Option<Resume>;
}

/// The PostgreSQL channel a write notifies (in its transaction, so at its commit) and every
/// instance listens on.
#[cfg(feature = "postgres")]
pub(crate) const CHANNEL: &str = "crudforge_events";

/// How long a stream ticket stays valid.
pub(crate) const TICKET_TTL: Duration = Duration::from_secs(30);

/// Most tickets outstanding at once in a process: past it, a new one is refused (503) until
/// some expire or are used; another user's ticket is never forgotten to make room.
const MAX_TICKETS: usize = 10_000;

/// The feeds' part of one API.
pub(crate) struct Hub {
    /// Bumped when events may have been recorded: the feeds' delivery reads the table then.
    wake: watch::Sender<u64>,
    /// True once the API shuts down: every stream ends.
    closing: watch::Sender<bool>,
    /// Open streams, in all and per user.
    open: Mutex<Open>,
    /// Whether the PostgreSQL listener runs.
    #[cfg_attr(not(feature = "postgres"), allow(dead_code))]
    listening: AtomicBool,
    /// Stream tickets: ticket -> the session it stands for, and its expiry.
    tickets: Mutex<HashMap<String, (Session, Instant)>>,
    /// The last delivery's (events, queries), for tests and benchmarks.
    last_delivery: Mutex<Option<(u64, u64)>>,
    /// The feeds that have had streams in this process, by table: what another instance's
    /// request for a stream's state is answered from.
    feeds: Mutex<HashMap<&'static str, Weak<dyn Resumes>>>,
    /// Commits announced to the other instances (PostgreSQL), and whether the task that
    /// announces them runs.
    #[cfg(feature = "postgres")]
    announced: Arc<tokio::sync::Notify>,
    #[cfg(feature = "postgres")]
    announcing: AtomicBool,
    /// The PostgreSQL backend of this process's `LISTEN` connection (0: none), left out when
    /// the announcer asks whether any other instance listens.
    #[cfg(feature = "postgres")]
    listener_pid: Arc<std::sync::atomic::AtomicI32>,
}

impl std::fmt::Debug for Hub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hub").finish_non_exhaustive()
    }
}

#[derive(Default)]
struct Open {
    all: usize,
    per_user: HashMap<Option<Uuid>, usize>,
}

impl Default for Hub {
    fn default() -> Self {
        Hub {
            wake: watch::channel(0).0,
            closing: watch::channel(false).0,
            open: Mutex::new(Open::default()),
            listening: AtomicBool::new(false),
            tickets: Mutex::new(HashMap::new()),
            last_delivery: Mutex::new(None),
            feeds: Mutex::new(HashMap::new()),
            #[cfg(feature = "postgres")]
            announced: Arc::new(tokio::sync::Notify::new()),
            #[cfg(feature = "postgres")]
            announcing: AtomicBool::new(false),
            #[cfg(feature = "postgres")]
            listener_pid: Arc::default(),
        }
    }
}

/// The session a stream lives in: the user, the credential version its token carried and the
/// token's expiry (seconds since 1970).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Session {
    /// The user.
    pub(crate) user: Uuid,
    /// The credential version of the token.
    pub(crate) version: i64,
    /// When the token expires, seconds since 1970.
    pub(crate) expires: i64,
}

/// One open stream, counted until it is dropped.
pub(crate) struct Permit {
    hub: Arc<Hub>,
    user: Option<Uuid>,
}

impl Drop for Permit {
    fn drop(&mut self) {
        let mut open = lock(&self.hub.open);
        open.all = open.all.saturating_sub(1);
        if let Some(n) = open.per_user.get_mut(&self.user) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                open.per_user.remove(&self.user);
            }
        }
        super::metrics().streams_open.dec();
    }
}

/// Locks `m`, through a poisoned lock (what it guards stays consistent: counters and maps).
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Hub {
    /// Wakes the feeds' delivery: events may have been committed.
    pub(crate) fn wake(&self) {
        self.wake.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// What the delivery waits on.
    pub(crate) fn woken(&self) -> watch::Receiver<u64> {
        self.wake.subscribe()
    }

    /// Ends every stream (graceful shutdown).
    pub(crate) fn close(&self) {
        self.closing.send_replace(true);
    }

    /// What a stream watches to end at shutdown.
    pub(crate) fn closing(&self) -> watch::Receiver<bool> {
        self.closing.subscribe()
    }

    /// Admits one more stream for `user`: 503 past `max_all` streams in this process, 429 past
    /// `max_per_user` for one user (anonymous callers share one count), each with
    /// `Retry-After`.
    ///
    /// # Errors
    ///
    /// The 503 or the 429.
    pub(crate) fn admit(
        self: &Arc<Self>,
        user: Option<Uuid>,
        max_all: u32,
        max_per_user: u32,
    ) -> Result<Permit, Error> {
        let mut open = lock(&self.open);
        if open.all >= max_all as usize {
            return Err(Error::Busy {
                detail: "Too many open event streams on this server; retry later.".into(),
                retry_after: 5,
            });
        }
        let mine = open.per_user.get(&user).copied().unwrap_or(0);
        if mine >= max_per_user as usize {
            return Err(Error::TooManyRequests {
                detail: "Too many open event streams for this caller; close one first.".into(),
                retry_after: 5,
            });
        }
        open.all += 1;
        *open.per_user.entry(user).or_insert(0) += 1;
        super::metrics().streams_open.inc();
        Ok(Permit {
            hub: self.clone(),
            user,
        })
    }

    /// A new single-use ticket standing for `session` (a bearer token's) for [`TICKET_TTL`]:
    /// at most `per_user` outstanding (unused, unexpired) for one user, and [`MAX_TICKETS`] in
    /// all. Expired tickets are dropped; unexpired ones are never evicted to make room.
    ///
    /// # Errors
    ///
    /// 429 past `per_user` tickets of this user, 503 past [`MAX_TICKETS`] in all, each with
    /// `Retry-After` (when the oldest ticket in the way expires); no randomness (500).
    pub(crate) fn issue_ticket(&self, session: Session, per_user: u32) -> Result<String, Error> {
        let now = Instant::now();
        let mut tickets = lock(&self.tickets);
        tickets.retain(|_, (_, until)| *until > now);
        // Seconds until `until`, rounded up: when a refused caller may ask again.
        let wait = |until: Instant| until.saturating_duration_since(now).as_secs() + 1;
        let mine = tickets.values().filter(|(s, _)| s.user == session.user);
        let (count, first) = mine.fold((0usize, None::<Instant>), |(n, first), (_, until)| {
            (n + 1, Some(first.map_or(*until, |f| f.min(*until))))
        });
        if count >= per_user as usize {
            return Err(Error::TooManyRequests {
                detail: "Too many stream tickets outstanding for this caller; use one first."
                    .into(),
                retry_after: first.map_or(TICKET_TTL.as_secs(), wait),
            });
        }
        if tickets.len() >= MAX_TICKETS {
            let first = tickets.values().map(|(_, until)| *until).min();
            return Err(Error::Busy {
                detail: "Too many stream tickets outstanding on this server; retry later.".into(),
                retry_after: first.map_or(TICKET_TTL.as_secs(), wait),
            });
        }
        let mut raw = [0u8; 24];
        getrandom::fill(&mut raw).map_err(|e| Error::Internal(format!("randomness: {e}")))?;
        let ticket = raw.iter().map(|b| format!("{b:02x}")).collect::<String>();
        tickets.insert(ticket.clone(), (session, now + TICKET_TTL));
        Ok(ticket)
    }

    /// The session a ticket stands for, once: a redeemed or expired ticket is `None`.
    pub(crate) fn redeem(&self, ticket: &str) -> Option<Session> {
        let (session, until) = lock(&self.tickets).remove(ticket)?;
        (until > Instant::now()).then_some(session)
    }

    /// Notes what one delivery cost.
    pub(crate) fn delivered(&self, events: u64, queries: u64) {
        *lock(&self.last_delivery) = Some((events, queries));
    }

    /// The last delivery's (events, queries).
    pub(crate) fn last_delivery(&self) -> Option<(u64, u64)> {
        *lock(&self.last_delivery)
    }

    /// Notes that the feed of `table` has streams here (another instance may ask it for one).
    pub(crate) fn enlist(&self, table: &'static str, feed: Arc<dyn Resumes>) {
        let mut feeds = lock(&self.feeds);
        if feeds.get(table).is_none_or(|f| f.strong_count() == 0) {
            feeds.insert(table, Arc::downgrade(&feed));
        }
    }

    /// The state of the stream `owner` names on the feed of `table`, taken over from wherever
    /// it is in this process (for another instance that asked for it).
    #[cfg(feature = "postgres")]
    pub(crate) fn take_over(&self, table: &str, owner: &Owner, last: i64) -> Option<Resume> {
        let feed = lock(&self.feeds).get(table)?.upgrade()?;
        feed.take_over(owner, last)
    }

    /// Tells the other instances on PostgreSQL that a write of this process committed events:
    /// a `NOTIFY` on [`CHANNEL`] sent by a task of its own, outside the write's transaction
    /// (PostgreSQL orders the commits of notifying transactions with one lock, which the writes
    /// should not wait for). Announcements made while one is being sent are sent as one more,
    /// so a burst of writes costs a few notifications, not one each; and none is sent while no
    /// other instance listens (asked of `pg_stat_activity` at most once a second: a listener's
    /// connection is named [`LISTENER`]), so a single instance pays nothing for it.
    #[cfg(feature = "postgres")]
    pub(crate) fn announce(&self, db: &crate::db::Database) {
        if db.backend() != crate::db::Backend::Postgres {
            return;
        }
        if !self.announcing.swap(true, Ordering::SeqCst) {
            let announced = Arc::clone(&self.announced);
            let mut closing = self.closing();
            let db = db.clone();
            let own = Arc::clone(&self.listener_pid);
            actix_web::rt::spawn(async move {
                let mut others: Option<(Instant, bool)> = None;
                loop {
                    tokio::select! {
                        () = announced.notified() => {}
                        _ = closing.changed() => return,
                    }
                    let listening = match others {
                        Some((at, known)) if at.elapsed() < Duration::from_secs(1) => known,
                        _ => {
                            let pid = own.load(Ordering::SeqCst);
                            // Unknown (an error): announce, as if someone listened.
                            let known = others_listen(&db, pid).await.unwrap_or(true);
                            others = Some((Instant::now(), known));
                            known
                        }
                    };
                    if !listening {
                        continue;
                    }
                    if let Err(e) = notify(&db).await {
                        tracing::warn!(target: "crudforge::realtime", error = %e, "announcing events failed");
                    }
                }
            });
        }
        self.announced.notify_one();
    }

    /// Starts listening for other instances on PostgreSQL at `url` (once per API): a
    /// connection of its own `LISTEN`s on [`CHANNEL`] and wakes the delivery on each
    /// notification, and on the channel of the hand-over of streams, which it answers
    /// ([`handoff`]) through `db`; after an error it connects again, and it wakes the
    /// delivery then too, since notifications may have been missed meanwhile.
    #[cfg(feature = "postgres")]
    pub(crate) fn listen(self: &Arc<Self>, url: &str, db: &crate::db::Database) {
        if self.listening.swap(true, Ordering::SeqCst) {
            return;
        }
        let hub = Arc::downgrade(self);
        let url = url.to_owned();
        let db = db.clone();
        actix_web::rt::spawn(async move {
            use diesel_async::{AsyncConnection, AsyncPgConnection, SimpleAsyncConnection};
            use futures_util::StreamExt;
            loop {
                let Some(h) = hub.upgrade() else { return };
                if *h.closing.borrow() {
                    return;
                }
                drop(h);
                match AsyncPgConnection::establish(&url).await {
                    Ok(mut conn) => {
                        let handoff = handoff::CHANNEL;
                        let pid = diesel_async::RunQueryDsl::get_result::<i32>(
                            diesel::select(diesel::dsl::sql::<diesel::sql_types::Integer>(
                                "pg_backend_pid()",
                            )),
                            &mut conn,
                        )
                        .await
                        .unwrap_or(0);
                        if let Some(h) = hub.upgrade() {
                            h.listener_pid.store(pid, Ordering::SeqCst);
                        }
                        let setup = format!(
                            "SET application_name = '{LISTENER}'; LISTEN {CHANNEL}; LISTEN {handoff}"
                        );
                        if conn.batch_execute(&setup).await.is_ok() {
                            if let Some(h) = hub.upgrade() {
                                h.wake();
                            }
                            let mut heard = std::pin::pin!(conn.notifications_stream());
                            while let Some(n) = heard.next().await {
                                let Some(h) = hub.upgrade() else { return };
                                let Ok(n) = n else { break };
                                if n.channel == handoff {
                                    let db = db.clone();
                                    actix_web::rt::spawn(async move {
                                        handoff::answer(&h, &db, &n.payload).await;
                                    });
                                } else {
                                    h.wake();
                                }
                            }
                        }
                    }
                    Err(e) => {
                        tracing::warn!(target: "crudforge::realtime", error = %e, "cannot listen for events");
                    }
                }
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        });
    }
}

/// The `application_name` of the connection each instance `LISTEN`s on.
#[cfg(feature = "postgres")]
pub(crate) const LISTENER: &str = "crudforge_listener";

/// Whether a `LISTEN` connection of another instance (not the backend `own`) is open on the
/// database.
#[cfg(feature = "postgres")]
async fn others_listen(db: &crate::db::Database, own: i32) -> Result<bool, Error> {
    #[derive(diesel::QueryableByName)]
    struct Found {
        #[diesel(sql_type = diesel::sql_types::Bool)]
        found: bool,
    }
    let mut conn = db.get().await?;
    let found = crate::__by_backend!(conn, |c|
        sqlite => {
            let _ = (c, own);
            false
        },
        postgres => {
            let q = diesel::sql_query(
                "SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE datname = current_database() \
                 AND application_name = $1 AND pid <> $2) AS found",
            )
            .bind::<diesel::sql_types::Text, _>(LISTENER)
            .bind::<diesel::sql_types::Integer, _>(own);
            diesel_async::RunQueryDsl::get_result::<Found>(q, c).await?.found
        }
    );
    Ok(found)
}

/// Sends one `NOTIFY` on [`CHANNEL`], outside any transaction.
#[cfg(feature = "postgres")]
async fn notify(db: &crate::db::Database) -> Result<(), Error> {
    let mut conn = db.get().await?;
    crate::__by_backend!(conn, |c|
        sqlite => {
            let _ = c;
        },
        postgres => {
            let q = diesel::sql_query(format!("NOTIFY {CHANNEL}"));
            diesel_async::RunQueryDsl::execute(q, c).await?;
        }
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session(user: Uuid) -> Session {
        Session {
            user,
            version: 0,
            expires: i64::MAX,
        }
    }

    #[test]
    fn a_full_ticket_map_refuses_rather_than_evicts() {
        let hub = Hub::default();
        let first = hub
            .issue_ticket(session(Uuid::new_v4()), 1)
            .expect("a ticket");
        for _ in 1..MAX_TICKETS {
            hub.issue_ticket(session(Uuid::new_v4()), 1)
                .expect("a ticket");
        }
        match hub.issue_ticket(session(Uuid::new_v4()), 1) {
            Err(Error::Busy { retry_after, .. }) => {
                assert!((1..=TICKET_TTL.as_secs() + 1).contains(&retry_after));
            }
            other => panic!("expected 503, got {other:?}"),
        }
        // The first ticket was not pushed out; used, it makes room for one more.
        assert!(hub.redeem(&first).is_some());
        assert!(hub.issue_ticket(session(Uuid::new_v4()), 1).is_ok());
    }

    #[test]
    fn tickets_are_capped_per_user() {
        let hub = Hub::default();
        let (me, other) = (Uuid::new_v4(), Uuid::new_v4());
        let mine = hub.issue_ticket(session(me), 2).expect("a ticket");
        hub.issue_ticket(session(me), 2).expect("a second");
        assert!(matches!(
            hub.issue_ticket(session(me), 2),
            Err(Error::TooManyRequests { .. })
        ));
        assert!(hub.issue_ticket(session(other), 2).is_ok());
        assert!(hub.redeem(&mine).is_some());
        assert!(hub.issue_ticket(session(me), 2).is_ok());
    }
}
