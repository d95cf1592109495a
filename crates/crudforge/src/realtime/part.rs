//! The blueprint's feed (`CrudBlueprint::events`) and the part it adds: the checks at mount,
//! the feed's and the ticket's routes, their description, the events each write records in
//! its transaction, and the wake-up after the commit.

use super::feed::{self, Notify};
use super::{Events, Hub};
use crate::crud::mount::blueprint::handler;
use crate::crud::options::{OpOptions, Operation};
use crate::crud::scope::Routes;
use crate::crud::shared::{Author, Mounted, Part, Touched};
use crate::crud::{CrudBlueprint, Resource};
use crate::db::Conn;
use crate::error::Error;
use crate::openapi::ApiDoc;
use crate::state::ApiState;
use actix_web::web;
use futures_util::future::LocalBoxFuture;
use std::any::Any;
use std::collections::BTreeMap;
use std::sync::Arc;

impl<R: Resource> CrudBlueprint<R> {
    /// Offers the resource's change feed (the `realtime` feature): `GET <prefix>events/`
    /// streams Server-Sent Events (`created`, `updated`, `deleted`, `restored`) of the rows the
    /// subscriber may read, under the list's filters, `scope=` and `fields=`, each rendered as
    /// the subscriber's `GET` would; `POST <prefix>events/ticket` gives a browser's
    /// `EventSource` a single-use ticket. Every write through this blueprint then records its
    /// events in its own transaction. See [realtime.md](https://github.com/crudforge/crudforge/blob/main/docs/realtime.md). Needs INDEX and the generated
    /// `GET` representation (no substituted schema or presenter).
    #[must_use]
    pub fn events(mut self) -> Self {
        self.parts.entry(capture::<R>).offered = true;
        self
    }
}

/// The part that records `R`'s events, without the feed's routes until `events()` offers them.
pub(crate) fn capture<R: Resource>() -> Events<R> {
    Events::<R>::new(record_outside)
}

/// Records a write outside the handlers, with the notification in its transaction.
fn record_outside<'a>(
    table: &'a str,
    conn: &'a mut Conn,
    touched: &'a Touched,
    _by: &'a Author<'a>,
) -> LocalBoxFuture<'a, Result<(), Error>> {
    Box::pin(feed::record(conn, table, touched, Notify::InTransaction))
}

impl<R: Resource> Part<R> for Events<R> {
    /// A feed needs what it renders and judges with: INDEX (its caller and scope), the
    /// generated `GET` representation (rendered once per event for all subscribers).
    fn check(
        &self,
        prefix: &str,
        ops: &BTreeMap<Operation, OpOptions<R>>,
        errors: &mut Vec<String>,
    ) {
        if !self.offered {
            return;
        }
        if !ops.contains_key(&Operation::Index) {
            errors.push(format!(
                "{prefix}: a feed (`events()`) needs the INDEX operation"
            ));
        }
        if ops
            .get(&Operation::Get)
            .is_some_and(|o| o.response.is_some() || o.presenter.is_some())
        {
            errors.push(format!(
                "{prefix}: a feed (`events()`) renders the generated representation; GET has a substituted schema or presenter"
            ));
        }
    }

    /// The feed and its ticket.
    fn routes(&self, m: &Mounted<R>, routes: &mut Routes) {
        if !self.offered {
            return;
        }
        let feed = format!("{}{}", m.prefix, super::PATH);
        routes.add(&feed, |r| {
            r.route(web::get().to(handler!(
                m.shared,
                crate::crud::limits::At::Door(crate::perms::Door::Feed),
                super::handlers::feed
            )))
        });
        let ticket = format!("{}{}", m.prefix, super::TICKET_PATH);
        routes.add(&ticket, |r| {
            r.route(web::post().to(handler!(
                m.shared,
                crate::crud::limits::At::Door(crate::perms::Door::Feed),
                super::handlers::ticket
            )))
        });
    }

    fn document(&self, m: &Mounted<R>, doc: &mut ApiDoc) {
        if self.offered {
            super::docs::document(doc, m);
        }
    }

    fn records(&self) -> bool {
        true
    }

    /// The write's events, in its transaction, with no notification: the commit is announced
    /// afterwards ([`Part::committed`]).
    fn record<'a>(
        &'a self,
        conn: &'a mut Conn,
        touched: &'a Touched,
        _by: &'a Author<'a>,
    ) -> LocalBoxFuture<'a, Result<(), Error>> {
        Box::pin(feed::record(
            conn,
            R::sql_table(),
            touched,
            Notify::AfterCommit,
        ))
    }

    /// Committed: this process's feeds read the new events now; on PostgreSQL the other
    /// instances hear of them from a `NOTIFY` sent after the commit.
    fn committed(&self, st: &ApiState) {
        if let Some(hub) = st.ext.get::<Arc<Hub>>() {
            hub.wake();
            #[cfg(feature = "postgres")]
            hub.announce(&st.db);
        }
    }

    fn faces(&self) -> Vec<&(dyn Any + Send + Sync)> {
        vec![&self.table, &self.recording]
    }
}
