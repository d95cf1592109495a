//! One subscriber's stream of Server-Sent Events: what its queue delivers, as the delivery
//! decided it (`created`, `updated`, `deleted` or `restored`); heartbeat comments
//! when idle; its end (the session ended or expired, the caller's roles changed, the
//! subscriber too slow, the view too large, the API shutting down); and, when the client goes
//! away, its state parked for a resume with `Last-Event-ID` (taken over at once by a resume
//! that comes back before the instance saw the connection go).

use super::{Fact, Feed, Kind, Sub, Told};
use crate::auth::extract::Standing;
use crate::auth::RoleGrant;
use crate::crud::Resource;
use crate::db::Database;
use crate::realtime::{Permit, Session};
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, watch};
use tokio::time::Sleep;

/// Everything a stream holds.
pub(crate) struct Stream<R: Resource> {
    pub(crate) feed: Arc<Feed<R>>,
    pub(crate) sub: Arc<Sub>,
    pub(crate) rx: mpsc::Receiver<Fact>,
    /// What it writes first (`reset` when a resume failed, then `ready`).
    pub(crate) opening: Option<Vec<u8>>,
    /// Silence after which a heartbeat comment is written.
    pub(crate) heartbeat: Duration,
    /// When it last wrote (the heartbeat's silence counts from there).
    pub(crate) wrote: tokio::time::Instant,
    /// The one timer of the heartbeat, moved on rather than made anew for each chunk.
    pub(crate) quiet: Pin<Box<Sleep>>,
    /// The API's shutdown.
    pub(crate) closing: watch::Receiver<bool>,
    /// The session it lives in, checked every so often.
    pub(crate) session: Option<Watch>,
    /// The timer of the session's next check.
    pub(crate) check: Pin<Box<Sleep>>,
    /// For a resume: how long its state is kept, at most how many are kept (in all, and for
    /// one user).
    pub(crate) resume_for: Duration,
    pub(crate) park_max: usize,
    pub(crate) park_per_user: usize,
    /// Ended by the server: nothing to resume.
    pub(crate) ended: bool,
    pub(crate) _permit: Permit,
}

/// The session a stream lives in and the rights its view was judged with, checked every
/// `every` against the database.
pub(crate) struct Watch {
    /// The user, the credential version and the expiry of its token.
    pub(crate) session: Session,
    /// The role grants the stream's view was judged with (the caller's when it opened).
    pub(crate) roles: Vec<RoleGrant>,
    /// How often it is checked.
    pub(crate) every: Duration,
    pub(crate) db: Database,
}

/// One SSE event: `id`, `event`, `data`.
fn event(id: &str, kind: &str, data: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len() + id.len() + kind.len() + 24);
    if !id.is_empty() {
        out.extend_from_slice(b"id: ");
        out.extend_from_slice(id.as_bytes());
        out.push(b'\n');
    }
    out.extend_from_slice(b"event: ");
    out.extend_from_slice(kind.as_bytes());
    out.extend_from_slice(b"\ndata: ");
    out.extend_from_slice(data);
    out.extend_from_slice(b"\n\n");
    out
}

/// A `reset` event: the client reloads what it shows (the stream goes on, or ends after it).
pub(crate) fn reset(reason: &str) -> Vec<u8> {
    let data = serde_json::json!({ "reason": reason }).to_string();
    event("", "reset", data.as_bytes())
}

/// The `end` event: the stream ends for `reason` and should not be resumed as it is.
fn end(reason: &str) -> Vec<u8> {
    let data = serde_json::json!({ "reason": reason }).to_string();
    event("", "end", data.as_bytes())
}

/// The `ready` event a stream begins with: its position, as an event id to resume from.
pub(crate) fn ready(id: &str) -> Vec<u8> {
    event(id, "ready", b"{}")
}

/// A stream's event id: the event's number and the stream's token.
pub(crate) fn event_id(id: i64, token: &str) -> String {
    format!("{id}_{token}")
}

/// The event number and token of a `Last-Event-ID`, when it is one of ours.
pub(crate) fn parse_event_id(s: &str) -> Option<(i64, &str)> {
    let (n, token) = s.trim().split_once('_')?;
    let n = n.parse().ok()?;
    (!token.is_empty() && token.len() <= 64).then_some((n, token))
}

impl<R: Resource> Stream<R> {
    /// The next bytes to write, or `None` when the stream ends.
    pub(crate) async fn next_chunk(&mut self) -> Option<Vec<u8>> {
        let chunk = self.next_inner().await;
        self.wrote = tokio::time::Instant::now();
        chunk
    }

    async fn next_inner(&mut self) -> Option<Vec<u8>> {
        if let Some(first) = self.opening.take() {
            return Some(first);
        }
        if self.ended {
            return None;
        }
        loop {
            if self.sub.overflowed.load(Ordering::SeqCst) {
                return Some(self.finish(reset("too_slow")));
            }
            if self.sub.taken.load(Ordering::SeqCst) {
                // A resume took this stream over: its client is on another connection.
                self.ended = true;
                return None;
            }
            tokio::select! {
                () = self.sub.ended.notified() => {}
                fact = self.rx.recv() => match fact {
                    Some(fact) => return Some(self.apply(fact)),
                    None => {
                        if self.sub.overflowed.load(Ordering::SeqCst) {
                            return Some(self.finish(reset("too_slow")));
                        }
                        self.ended = true;
                        return None;
                    }
                },
                () = &mut self.quiet => {
                    // The timer is moved on lazily: it fires at most once per heartbeat, and
                    // writes only when nothing was written since it was set.
                    let due = self.wrote + self.heartbeat;
                    if tokio::time::Instant::now() >= due {
                        let next = tokio::time::Instant::now() + self.heartbeat;
                        self.quiet.as_mut().reset(next);
                        return Some(b": heartbeat\n\n".to_vec());
                    }
                    self.quiet.as_mut().reset(due);
                }
                _ = self.closing.changed() => {
                    return Some(self.finish(end("shutdown")));
                }
                () = &mut self.check, if self.session.is_some() => {
                    // Boxed: the check's query is large and rare; inline it would make every
                    // idle stream's state as large as the query's.
                    if let Some(reason) = Box::pin(self.session_over()).await {
                        return Some(self.finish(end(reason)));
                    }
                    let every = self.session.as_ref().map_or(Duration::from_secs(5), |s| s.every);
                    self.check.as_mut().reset(tokio::time::Instant::now() + every);
                }
            }
        }
    }

    /// Ends the stream after `last`.
    fn finish(&mut self, last: Vec<u8>) -> Vec<u8> {
        self.ended = true;
        self.feed.unsubscribe(self.sub.id);
        last
    }

    /// Why the session no longer holds, if it does not: the token expired; the user logged
    /// out everywhere, changed their password or was disabled (their credential version
    /// moved on); or a role was granted or revoked (the view was judged for other rights, so
    /// the stream ends without a resume rather than go on with them). A database error keeps
    /// the stream (checked again next time).
    async fn session_over(&self) -> Option<&'static str> {
        let w = self.session.as_ref()?;
        if chrono::Utc::now().timestamp() >= w.session.expires {
            return Some("token_expired");
        }
        let s = &w.session;
        match crate::auth::extract::standing(&w.db, s.user, s.version, &w.roles).await {
            Ok(Standing::Holds) | Err(_) => None,
            Ok(Standing::Ended) => Some("session_ended"),
            Ok(Standing::RightsChanged) => Some("rights_changed"),
        }
    }

    /// What `fact` tells this client (the delivery decided it).
    fn apply(&mut self, fact: Fact) -> Vec<u8> {
        let Fact { id, key, told } = fact;
        let deleted;
        let (kind, body): (Kind, &[u8]) = match &told {
            Told::Row { kind, data, .. } => (*kind, data),
            Told::Gone => {
                deleted = deleted_key::<R>(&key);
                (Kind::Deleted, &deleted)
            }
            Told::TooLarge => return self.finish(reset("view_too_large")),
        };
        crate::realtime::metrics().events_sent.inc();
        event(&event_id(id, &self.sub.owner.token), kind.as_str(), body)
    }
}

/// The data of a deletion: the key alone, `{"<id field>": key}` (a number for an integer
/// key).
fn deleted_key<R: Resource>(key: &str) -> Vec<u8> {
    let value = match R::field(R::ID_FIELD).map(|f| f.kind) {
        Some(crate::crud::Kind::Integer) => key
            .parse::<i64>()
            .map_or_else(|_| serde_json::Value::from(key), serde_json::Value::from),
        _ => serde_json::Value::from(key),
    };
    let mut map = serde_json::Map::new();
    map.insert(R::ID_FIELD.to_owned(), value);
    serde_json::to_vec(&map).unwrap_or_default()
}

impl<R: Resource> Drop for Stream<R> {
    fn drop(&mut self) {
        self.rx.close();
        if !(self.ended || self.resume_for.is_zero()) {
            // What its queue still held is among the trail's steps, which a resume takes back
            // from the last event the client names.
            self.feed.park(
                &self.sub,
                Instant::now() + self.resume_for,
                self.park_max,
                self.park_per_user,
            );
        }
        self.feed.unsubscribe(self.sub.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_ids_round_trip() {
        assert_eq!(parse_event_id(&event_id(42, "ab12")), Some((42, "ab12")));
        assert_eq!(parse_event_id("42"), None);
        assert_eq!(parse_event_id("x_ab"), None);
        assert_eq!(parse_event_id("7_"), None);
    }

    #[test]
    fn events_are_written_as_sse() {
        assert_eq!(
            event("3_t", "created", b"{\"id\":1}"),
            b"id: 3_t\nevent: created\ndata: {\"id\":1}\n\n".to_vec()
        );
        assert_eq!(
            reset("too_slow"),
            b"event: reset\ndata: {\"reason\":\"too_slow\"}\n\n".to_vec()
        );
    }
}
