//! What an [`Api`](crate::Api) mounts: routes that document themselves.

use crate::db::indexes::IndexSpec;
use crate::db::schema_check::TableSpec;
use crate::db::Database;
use crate::error::Error;
use crate::openapi::ApiDoc;
use actix_web::web;
use chrono::{DateTime, Utc};
use futures_util::future::LocalBoxFuture;

/// Something an [`Api`](crate::Api) can mount: it registers routes and documents them.
pub trait Mount: Send + Sync + 'static {
    /// Adds the routes to the application.
    fn register(&self, cfg: &mut web::ServiceConfig);
    /// Adds the operations to the OpenAPI description.
    fn document(&self, doc: &mut ApiDoc);
    /// The indexes the mounted resource declares (`#[resource(index(...))]`, and the unique
    /// indexes of its `#[resource(unique(...))]`), which the
    /// [`Api`](crate::Api) checks for when it starts serving. None by default.
    fn indexes(&self) -> Vec<IndexSpec> {
        Vec::new()
    }
    /// The table the mounted resource uses and the fields it expects there, which the
    /// [`Api`](crate::Api) compares with the database
    /// ([`Api::check_schema`](crate::Api::check_schema)). None by default.
    fn table(&self) -> Option<TableSpec> {
        None
    }
    /// The table a model-first resource declares (`#[resource(model_first)]`), from which
    /// [`make_migrations`](crate::migrations::make_migrations) writes migrations. None by
    /// default.
    fn model(&self) -> Option<&'static crate::db::ddl::ModelTable> {
        None
    }
    /// The mounted resource's name and the shared state of its handlers, through which
    /// relations from other resources read it (`expand`, filters across relations). None by
    /// default; a mounted blueprint without parent parameters gives its own.
    #[doc(hidden)]
    fn reader(
        &self,
    ) -> Option<(
        &'static str,
        std::sync::Arc<dyn std::any::Any + Send + Sync>,
    )> {
        None
    }
    /// The mounted resource's name and whether it holds secrets (a password member, or the
    /// Token records): what the scope of an API key may name, and what it never writes. None
    /// by default.
    #[doc(hidden)]
    fn resource(&self) -> Option<(&'static str, bool)> {
        None
    }
    /// Removes for good the rows of the mounted resource deleted before `before`, when it keeps
    /// deleted rows (`#[resource(soft_delete)]`); how many. Nothing by default.
    /// [`Api::purge_deleted`](crate::Api::purge_deleted) calls it.
    fn purge_deleted<'a>(
        &'a self,
        db: &'a Database,
        before: DateTime<Utc>,
    ) -> LocalBoxFuture<'a, Result<u64, Error>> {
        let _ = (db, before);
        Box::pin(async { Ok(0) })
    }
    /// What the optional surfaces' parts of the mounted blueprint show of themselves to work
    /// on the whole API (each as its surface's own type). None by default.
    #[doc(hidden)]
    fn faces(&self) -> Vec<&(dyn std::any::Any + Send + Sync)> {
        Vec::new()
    }
}

/// What happened to a row a write touched, as the write path tells the parts that record
/// writes (a feed's events).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Touch {
    /// The row was created.
    Created,
    /// The row was changed.
    Updated,
    /// The row was deleted (or soft-deleted).
    Deleted,
    /// A soft-deleted row was restored.
    Restored,
}

/// The rows one write touched: what happened and the row's key, in order.
pub(crate) type Touched = Vec<(Touch, String)>;

/// Who made a write, as the parts that record writes hear it besides the rows (a record's
/// history keeps it): the caller's account and the request, neither outside a request (the
/// command line's writes).
#[derive(Debug, Clone, Copy, Default)]
#[allow(
    dead_code,
    reason = "a door of the seam: a build without optional surfaces leaves it unused"
)]
pub(crate) struct Author<'a> {
    /// The caller's account (`None`: anonymous, a public operation, the command line).
    pub(crate) user: Option<uuid::Uuid>,
    /// The request that wrote (`None` outside one).
    pub(crate) req: Option<&'a actix_web::HttpRequest>,
}

/// How a part that records writes (a feed) records those made outside the blueprint's
/// handlers (the command line's): one of the faces its part shows ([`Mount::faces`]).
pub(crate) struct Recording {
    /// The table whose writes it records.
    pub(crate) table: &'static str,
    /// Records the rows of `table` touched, in the transaction `conn` is in (whatever must
    /// follow the commit is arranged in the transaction: the writer has no "after").
    pub(crate) record: RecordFn,
}

/// How a part records the rows of a table touched outside the blueprint's handlers, on a
/// connection inside the writer's transaction, with who wrote them (see [`Recording`]).
pub(crate) type RecordFn = for<'a> fn(
    &'a str,
    &'a mut crate::db::Conn,
    &'a Touched,
    &'a Author<'a>,
) -> LocalBoxFuture<'a, Result<(), Error>>;

/// Something that becomes a [`Mount`] once checked: a blueprint, or a ready `Mount`.
pub trait IntoMount {
    /// Checks the configuration and produces the mount.
    ///
    /// # Errors
    ///
    /// A message saying what is wrong (unknown field, bad prefix parameter, ...).
    fn into_mount(self) -> Result<Box<dyn Mount>, String>;
}

impl<M: Mount> IntoMount for M {
    fn into_mount(self) -> Result<Box<dyn Mount>, String> {
        Ok(Box::new(self))
    }
}

impl IntoMount for Box<dyn Mount> {
    fn into_mount(self) -> Result<Box<dyn Mount>, String> {
        Ok(self)
    }
}

impl<M: IntoMount> IntoMount for Result<M, String> {
    fn into_mount(self) -> Result<Box<dyn Mount>, String> {
        self.and_then(IntoMount::into_mount)
    }
}

/// A blueprint that could not be mounted.
#[derive(Debug, thiserror::Error)]
#[error("cannot mount: {0}")]
pub struct MountError(pub String);
