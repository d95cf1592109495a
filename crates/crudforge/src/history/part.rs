//! The blueprint's `history()` and the part it adds: the check at mount, the route of a row's
//! history, its description, the entries each write records in its transaction, the
//! write-only members a body sets, and how the command line's writes are recorded.

use super::{read, record, Retention};
use crate::crud::limits::At;
use crate::crud::mount::blueprint::handler;
use crate::crud::options::{OpOptions, Operation};
use crate::crud::scope::Routes;
use crate::crud::shared::{Author, Mounted, Part, Touched};
use crate::crud::{CrudBlueprint, Resource};
use crate::db::Conn;
use crate::error::Error;
use crate::mount::Recording;
use crate::openapi::ApiDoc;
use crate::perms::Door;
use actix_web::web;
use futures_util::future::LocalBoxFuture;
use std::any::Any;
use std::collections::BTreeMap;
use std::marker::PhantomData;

/// A blueprint's history: what it shows the API (how the command line's writes are recorded,
/// and what the server seals and prunes).
pub(crate) struct Keeps<R> {
    recording: Recording,
    kept: Kept,
    _of: PhantomData<fn() -> R>,
}

/// What a blueprint that keeps history shows the whole API: its table, whose entries the
/// server seals into a chain, and how long they are kept.
pub(crate) struct Kept {
    /// The resource's table.
    pub(crate) table: &'static str,
    /// How much of its history is kept (`None`: all of it).
    pub(crate) retention: Option<Retention>,
}

impl<R: Resource> CrudBlueprint<R> {
    /// Keeps the resource's history (the `history` feature): every create, update, delete and
    /// restore through this blueprint, and the command line's writes, records an entry in the
    /// write's own transaction (who, when, the request, the members changed with their old and
    /// new values; a write-only member's values never), and `GET <item>/history/` shows a
    /// row's entries under its `GET` rules, without the members the caller may not read. See
    /// [history.md](https://github.com/crudforge/crudforge/blob/main/docs/history.md). Needs
    /// the generated `GET` representation (no substituted schema or presenter).
    #[must_use]
    pub fn history(mut self) -> Self {
        self.parts.entry(keeps::<R>);
        self
    }

    /// Keeps the resource's history ([`CrudBlueprint::history`]) no longer than `keep` says:
    /// the server removes the older entries hourly, oldest first in the resource's chain, in
    /// small batches ([`Api::prune_history`](crate::Api::prune_history)).
    #[must_use]
    pub fn history_retention(mut self, keep: Retention) -> Self {
        self.parts.entry(keeps::<R>).kept.retention = Some(keep);
        self
    }
}

/// A new history part of `R`, kept whole.
fn keeps<R: Resource>() -> Keeps<R> {
    Keeps {
        recording: Recording {
            table: R::sql_table(),
            record: record_outside::<R>,
        },
        kept: Kept {
            table: R::sql_table(),
            retention: None,
        },
        _of: PhantomData,
    }
}

/// Records a write outside the handlers (the command line's).
fn record_outside<'a, R: Resource>(
    _table: &'a str,
    conn: &'a mut Conn,
    touched: &'a Touched,
    by: &'a Author<'a>,
) -> LocalBoxFuture<'a, Result<(), Error>> {
    Box::pin(record::record::<R>(conn, touched, by))
}

impl<R: Resource> Part<R> for Keeps<R> {
    /// A history shows what the `GET` shows: it needs the generated representation.
    fn check(
        &self,
        prefix: &str,
        ops: &BTreeMap<Operation, OpOptions<R>>,
        errors: &mut Vec<String>,
    ) {
        match ops.get(&Operation::Get) {
            None => errors.push(format!(
                "{prefix}: a history (`history()`) needs the GET operation"
            )),
            Some(o) if o.response.is_some() || o.presenter.is_some() => errors.push(format!(
                "{prefix}: a history (`history()`) shows the generated representation; GET has a substituted schema or presenter"
            )),
            Some(_) => {}
        }
    }

    /// `GET <item>/history/`.
    fn late_routes(&self, m: &Mounted<R>, routes: &mut Routes) {
        routes.add(&format!("{}/{}", m.item_path, read::SEGMENT), |r| {
            r.route(web::get().to(handler!(m.shared, At::Door(Door::History), read::history)))
        });
    }

    fn document(&self, m: &Mounted<R>, doc: &mut ApiDoc) {
        super::docs::document(doc, m);
    }

    /// The write-only members a create or an update sets, named in its entry.
    fn add_members(
        &self,
        req: &actix_web::HttpRequest,
        op: Operation,
        obj: &mut serde_json::Map<String, serde_json::Value>,
    ) {
        let _ = op;
        record::note_redacted::<R>(req, obj);
    }

    fn records(&self) -> bool {
        true
    }

    fn record<'a>(
        &'a self,
        conn: &'a mut Conn,
        touched: &'a Touched,
        by: &'a Author<'a>,
    ) -> LocalBoxFuture<'a, Result<(), Error>> {
        Box::pin(record::record::<R>(conn, touched, by))
    }

    fn faces(&self) -> Vec<&(dyn Any + Send + Sync)> {
        vec![&self.recording, &self.kept]
    }
}
