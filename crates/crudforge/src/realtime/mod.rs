//! Live updates (the `realtime` feature), one folder plugged into the core through the seam:
//! a blueprint's change feed (`CrudBlueprint::events`), the events recorded in each write's
//! transaction, their delivery to Server-Sent Event streams under the read rules, resumes, and
//! the instances' wake-up on PostgreSQL. See
//! [realtime.md](https://github.com/crudforge/crudforge/blob/main/docs/realtime.md).
//!
//! | Module | Owns |
//! |---|---|
//! | `hub` | what every feed of one API shares: the wake-up, the caps on streams, tickets, shutdown |
//! | `hub/handoff` | a stream's state handed between instances (PostgreSQL) |
//! | `feed` | one blueprint's feed: recording, reading in commit order, subscribers, delivery, streams |
//! | `handlers` | `GET <prefix>events/` and `POST <prefix>events/ticket` |
//! | `docs` | what the feed adds to the OpenAPI description |
//! | `part` | the blueprint's `events()` and its part: checks, routes, recording, the commit's wake-up |
//! | `schema` | the events table, as Diesel sees it |
//!
//! This file holds what the whole API sees of it: the surface (the hub's start, pruning in
//! the background, streams ended at shutdown), its metrics, and `Api`'s methods.

pub(crate) mod docs;
pub(crate) mod feed;
pub(crate) mod handlers;
pub(crate) mod hub;
mod part;
pub(crate) mod schema;

pub use feed::{record_change, record_changes, Kind as EventKind};
pub(crate) use hub::{Hub, Owner, Permit, Resume, Resumes, Session, TICKET_TTL};
pub(crate) use part::capture;

use crate::api::{Api, Chore, Surface};
use crate::config::{Config, ConfigError};
use crate::crud::Resource;
use crate::error::Error;
use crate::mount::{RecordFn, Recording};
use crate::state::{ApiState, Extensions};
use feed::Feed;
use prometheus::{IntCounter, IntGauge};
use std::sync::{Arc, LazyLock};

/// The feed's path below the blueprint's prefix.
pub(crate) const PATH: &str = "events/";
/// The ticket's path below the blueprint's prefix.
pub(crate) const TICKET_PATH: &str = "events/ticket";

/// A blueprint's feed: its subscribers and delivery ([`Feed`]), and what it shows the API.
pub(crate) struct Events<R: Resource> {
    /// The feed.
    pub(crate) feed: Arc<Feed<R>>,
    /// Its table, for pruning.
    pub(crate) table: FeedTable,
    /// How writes outside the handlers are recorded.
    pub(crate) recording: Recording,
    /// Whether the blueprint offers the feed's routes (`events()`); without them the part
    /// only records the writes' events, for the webhooks that read them.
    pub(crate) offered: bool,
}

impl<R: Resource> Events<R> {
    /// A new feed of `R`, whose writes outside the handlers `record` records.
    pub(crate) fn new(record: RecordFn) -> Self {
        Events {
            feed: Arc::default(),
            table: FeedTable(R::sql_table()),
            recording: Recording {
                table: R::sql_table(),
                record,
            },
            offered: false,
        }
    }
}

/// How often a serving API prunes recorded events.
const PRUNE_INTERVAL: std::time::Duration = std::time::Duration::from_secs(60);

/// The live updates' side of the whole API.
pub(crate) struct Realtime;

impl Surface for Realtime {
    fn start(&self, _config: &Config, ext: &mut Extensions) -> Result<(), ConfigError> {
        // The streams' metrics are listed from the start, at zero.
        LazyLock::force(&METRICS);
        ext.insert(Arc::new(Hub::default()));
        Ok(())
    }

    /// Prunes recorded events every [`PRUNE_INTERVAL`] when a mounted blueprint has a feed;
    /// outside any write, so writes never wait for it.
    fn chores(&self, api: &Api, out: &mut Vec<Chore>) {
        let feeds = api.mounts().iter().any(|m| {
            m.faces()
                .iter()
                .any(|face| face.downcast_ref::<FeedTable>().is_some())
        });
        if !feeds {
            return;
        }
        out.push(Chore {
            name: "prune_events",
            every: PRUNE_INTERVAL,
            run: |api| Box::pin(api.prune_events()),
        });
    }

    fn records_writes(&self) -> bool {
        true
    }

    /// Event streams never finish by themselves: they are ended.
    fn shutdown(&self, state: &ApiState) {
        if let Some(hub) = state.ext.get::<Arc<Hub>>() {
            hub.close();
        }
    }
}

/// The hub of the API serving a request.
///
/// # Errors
///
/// 500 when the API was built without it (cannot happen: the surface starts it).
pub(crate) fn hub(st: &ApiState) -> Result<&Arc<Hub>, Error> {
    st.ext
        .get::<Arc<Hub>>()
        .ok_or_else(|| Error::Internal("live updates are not started".into()))
}

/// The table of a mounted blueprint whose writes record events (a feed's, or one webhooks
/// read): what pruning reads.
pub(crate) struct FeedTable(pub(crate) &'static str);

/// The event streams' metrics.
pub(crate) struct Metrics {
    /// Event streams open now.
    pub(crate) streams_open: IntGauge,
    /// Events written to event streams.
    pub(crate) events_sent: IntCounter,
    /// Streams the server ended because the subscriber could not keep up.
    pub(crate) streams_dropped: IntCounter,
}

static METRICS: LazyLock<Metrics> = LazyLock::new(|| {
    let m = crate::metrics::global();
    Metrics {
        streams_open: m.register(IntGauge::new(
            "crudforge_realtime_streams_open",
            "Event streams open now.",
        )),
        events_sent: m.register(IntCounter::new(
            "crudforge_realtime_events_sent_total",
            "Events written to event streams.",
        )),
        streams_dropped: m.register(IntCounter::new(
            "crudforge_realtime_streams_dropped_total",
            "Event streams the server ended because the subscriber could not keep up.",
        )),
    }
});

/// The event streams' metrics, registered in the process's registry.
pub(crate) fn metrics() -> &'static Metrics {
    &METRICS
}

impl Api {
    /// Prunes the recorded events of every mounted feed past their retention
    /// (`REALTIME_RETENTION_EVENTS`, `REALTIME_RETENTION_SECONDS`; never an event younger than
    /// `REALTIME_RESUME_SECONDS`); how many. [`Api::server`] runs it in the background.
    ///
    /// # Errors
    ///
    /// Database errors.
    pub async fn prune_events(&self) -> Result<u64, Error> {
        let st = self.state();
        let ops = &st.config.ops;
        let mut pruned = 0;
        for m in self.mounts() {
            for face in m.faces() {
                let Some(FeedTable(table)) = face.downcast_ref::<FeedTable>() else {
                    continue;
                };
                pruned += feed::prune(
                    &mut st.db.get().await?,
                    table,
                    ops.realtime_retention_events,
                    std::time::Duration::from_secs(ops.realtime_retention_seconds),
                    std::time::Duration::from_secs(ops.realtime_resume_seconds),
                )
                .await?;
            }
        }
        Ok(pruned)
    }

    /// Ends every open event stream of this API (the `realtime` feature), as a graceful
    /// shutdown does: each stream writes `event: end` (`{"reason":"shutdown"}`) and closes.
    pub fn close_event_streams(&self) {
        Realtime.shutdown(self.state());
    }
}
