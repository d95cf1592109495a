//! The state every part of a mounted blueprint reads: what the handlers need per request
//! ([`Shared`]) and what the OpenAPI description needs ([`Mounted`]). The blueprint builds
//! them; the handlers and `docs` only read them, so the arrows point one way.
//!
//! Here too is the seam's side for one resource: [`Part`], what an optional surface (the feed,
//! files, export and import, the admin page's hints, ...) adds to a blueprint, which the core
//! calls at mount, when registering routes, when documenting, in a write's transaction and
//! after its commit, without naming the surface.

use super::{FieldInfo, Resource};
use crate::crud::hooks::Hooks;
use crate::crud::idempotency::InFlight;
use crate::crud::limits::At;
use crate::crud::options::{OpOptions, Operation};
use crate::crud::route::CustomRoute;
use crate::crud::scope::Patterns;
use crate::crud::scope::Routes;
use crate::db::Conn;
use crate::error::Error;
pub(crate) use crate::mount::{Author, Touch, Touched};
use crate::openapi::ApiDoc;
use crate::perms::Rules;
use crate::state::ApiState;
use futures_util::future::LocalBoxFuture;
use std::any::Any;
use std::collections::BTreeMap;
use std::sync::Arc;

/// The parts handlers need, shared by every worker.
pub(crate) struct Shared<R: Resource> {
    pub(crate) rules: Arc<dyn Rules<R>>,
    pub(crate) ops: BTreeMap<Operation, OpOptions<R>>,
    pub(crate) parents: Vec<(&'static FieldInfo, String)>,
    pub(crate) res_id: &'static FieldInfo,
    pub(crate) res_id_param: String,
    pub(crate) hooks: Hooks<R>,
    pub(crate) require_if_match: bool,
    pub(crate) in_flight: InFlight,
    /// What optional surfaces added to the blueprint (its feed, its file members, ...).
    pub(crate) parts: Parts<R>,
    /// The access of the doors that have one of their own (`CrudBlueprint::door`).
    pub(crate) gates: crate::crud::rules::door::Gates,
    /// The limits per operation and door (`CrudBlueprint::limit`), with their counts.
    pub(crate) limits: crate::crud::limits::Limits,
}

impl<R: Resource> Shared<R> {
    /// Labels request `req` to route `at` of the blueprint with what it addresses (the
    /// resource, the action, whether the resource holds secrets), which the caller's
    /// authentication judges when the access token carries an API key's scope
    /// ([`crate::auth::key_scope`]). Every generated route does it on entering
    /// (`crud::limits::limited!`).
    pub(crate) fn address(&self, req: &actix_web::HttpRequest, at: At) {
        crate::auth::key_scope::address(
            req,
            crate::auth::key_scope::Target {
                resource: R::NAME,
                action: at.action(),
                secret: holds_secrets::<R>(),
            },
        );
    }
}

/// Whether `R` holds secrets a key limited to scopes never writes: a password member (a user
/// model), or the library's Token records (API keys and refresh tokens).
pub(crate) fn holds_secrets<R: Resource>() -> bool {
    !<R::Create as super::Validate>::PASSWORD_MEMBERS.is_empty() || R::sql_table() == TOKENS
}

/// The SQL name of the library's Token records.
const TOKENS: &str = "tokens";

/// A `true`/`false` query parameter of one operation that a hook reads
/// ([`HookCtx::flag`](super::HookCtx::flag)): its operation, name and description.
pub(crate) type QueryFlag = (Operation, &'static str, &'static str);

/// A mounted blueprint.
pub(crate) struct Mounted<R: Resource> {
    pub(crate) shared: Arc<Shared<R>>,
    pub(crate) prefix: String,
    pub(crate) item_path: String,
    pub(crate) custom: Vec<CustomRoute>,
    /// Query flags that hooks read, documented on their operation.
    pub(crate) flags: Vec<QueryFlag>,
    /// The operations whose batch form is mounted.
    pub(crate) batch: Vec<Operation>,
    /// Whether `GET <prefix>aggregate/` is mounted.
    pub(crate) aggregates: bool,
    /// The routes' patterns for their scope's guard, compiled by the first worker.
    pub(crate) patterns: Patterns,
}

/// A generated operation's route, which a part may serve before or in place of the core
/// ([`Part::serve`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Route {
    /// `POST` on the list's path.
    Create,
    /// `PATCH` on the item's path.
    Update,
    /// `DELETE` on the item's path.
    Delete,
    /// The batch delete's `POST`.
    BatchDelete,
}

/// What an optional surface adds to one resource's blueprint: the seam between the core and
/// the surfaces, for one resource. A surface adds its part with a builder method in its own
/// folder (`CrudBlueprint::events`, `export`, ...), or the crate root's `resource_parts` adds
/// it for every resource that needs it (file members); the core calls each hook at its
/// moment and never names a surface. Every hook does nothing by default.
pub(crate) trait Part<R: Resource>: Any + Send + Sync {
    /// Adds the mistakes in the blueprint's operations that the part can see, checked when it
    /// is mounted (`prefix` leads each message).
    fn check(
        &self,
        prefix: &str,
        ops: &BTreeMap<Operation, OpOptions<R>>,
        errors: &mut Vec<String>,
    ) {
        let _ = (prefix, ops, errors);
    }

    /// Called once as the blueprint is mounted, with its prefix and the field that names a
    /// row in its paths.
    fn mounted(&mut self, prefix: &str, res_id: &'static FieldInfo) {
        let _ = (prefix, res_id);
    }

    /// Registers the part's routes that come before the list and the item (paths of one
    /// segment, such as `events/`, which an item id would otherwise take).
    fn routes(&self, m: &Mounted<R>, routes: &mut Routes) {
        let _ = (m, routes);
    }

    /// Registers the part's routes that come after the list and the item.
    fn late_routes(&self, m: &Mounted<R>, routes: &mut Routes) {
        let _ = (m, routes);
    }

    /// Adds to `resource` the routes with which the part serves the generated operation at
    /// `route`, before the core's own handler; true when the part serves it wholly, so that the
    /// core adds no handler of its own (file members' deletes remove their files).
    fn serve(
        &self,
        m: &Mounted<R>,
        route: Route,
        resource: actix_web::Resource,
    ) -> (actix_web::Resource, bool) {
        let _ = (m, route);
        (resource, false)
    }

    /// Changes the description of the request body of a create or an update (`op`), whose
    /// JSON form has the schema `input` (a file member's form upload).
    fn write_body(
        &self,
        op: Operation,
        body: &mut apistos::reference_or::ReferenceOr<apistos::paths::RequestBody>,
        input: &apistos::reference_or::ReferenceOr<schemars::schema::Schema>,
    ) {
        let _ = (op, body, input);
    }

    /// Takes out of a create's or update's JSON body (`op`) the members the part writes
    /// itself, before the caller's members are checked (a file list's edits, kept for the
    /// request); true when it took some, so that the write runs in a transaction and
    /// [`Part::after_update`] writes them.
    ///
    /// # Errors
    ///
    /// A member the part handles is malformed (422 naming it).
    fn take_members(
        &self,
        req: &actix_web::HttpRequest,
        op: Operation,
        obj: &mut serde_json::Map<String, serde_json::Value>,
    ) -> Result<bool, Error> {
        let _ = (req, op, obj);
        Ok(false)
    }

    /// Adds to a create's or update's JSON body (`op`) what the part holds for the request
    /// (the uploaded files' metadata), after the caller's members were checked.
    fn add_members(
        &self,
        req: &actix_web::HttpRequest,
        op: Operation,
        obj: &mut serde_json::Map<String, serde_json::Value>,
    ) {
        let _ = (req, op, obj);
    }

    /// In an update's transaction, after the row was updated, when [`Part::take_members`]
    /// took members: writes them; gives the row as it then stands.
    fn after_update<'a>(
        &'a self,
        shared: &'a Shared<R>,
        req: &'a actix_web::HttpRequest,
        conn: &'a mut Conn,
        item: R,
    ) -> LocalBoxFuture<'a, Result<R, Error>> {
        let _ = (shared, req, conn);
        Box::pin(async { Ok(item) })
    }

    /// Adds what the part serves to the OpenAPI description.
    fn document(&self, m: &Mounted<R>, doc: &mut ApiDoc) {
        let _ = (m, doc);
    }

    /// Adds extensions (`x-...`) to the description of the generated operation `op`.
    fn extensions(
        &self,
        op: Operation,
        extensions: &mut apistos::IndexMap<String, serde_json::Value>,
    ) {
        let _ = (op, extensions);
    }

    /// Whether the part records the rows each write touches ([`Part::record`]); a deletion
    /// then reads the keys of the rows it deletes.
    fn records(&self) -> bool {
        false
    }

    /// Records, in the write's transaction on `conn`, the rows it touched and who wrote them
    /// (`by`), after its body and its after-write hooks succeeded; an error rolls the write
    /// back. Only called when [`Part::records`] says so.
    fn record<'a>(
        &'a self,
        conn: &'a mut Conn,
        touched: &'a Touched,
        by: &'a Author<'a>,
    ) -> LocalBoxFuture<'a, Result<(), Error>> {
        let _ = (conn, touched, by);
        Box::pin(async { Ok(()) })
    }

    /// Called after the commit of a handler's write that [`Part::record`] recorded.
    fn committed(&self, st: &ApiState) {
        let _ = st;
    }

    /// What the part shows of itself to work on the whole API, each as its own type: the
    /// feed's table for pruning, a [`Recording`](crate::mount::Recording) for writes outside
    /// the handlers, the file members' tables for the orphan sweep.
    fn faces(&self) -> Vec<&(dyn Any + Send + Sync)> {
        Vec::new()
    }
}

/// The parts of one blueprint, at most one of each type.
pub(crate) struct Parts<R: Resource>(Vec<Box<dyn Part<R>>>);

impl<R: Resource> Default for Parts<R> {
    fn default() -> Self {
        Parts(Vec::new())
    }
}

impl<R: Resource> Parts<R> {
    /// The part of type `T`, if the blueprint has one.
    #[allow(
        dead_code,
        reason = "a door of the seam: a build without optional surfaces leaves it unused"
    )]
    pub(crate) fn get<T: Part<R>>(&self) -> Option<&T> {
        self.0
            .iter()
            .find_map(|p| (&**p as &dyn Any).downcast_ref::<T>())
    }

    /// The part of type `T`, added with `make` when the blueprint has none yet.
    #[allow(
        dead_code,
        reason = "a door of the seam: a build without optional surfaces leaves it unused"
    )]
    pub(crate) fn entry<T: Part<R>>(&mut self, make: impl FnOnce() -> T) -> &mut T {
        let at = match self.0.iter().position(|p| (&**p as &dyn Any).is::<T>()) {
            Some(at) => at,
            None => {
                self.0.push(Box::new(make()));
                self.0.len() - 1
            }
        };
        (&mut *self.0[at] as &mut dyn Any)
            .downcast_mut::<T>()
            .unwrap_or_else(|| unreachable!("the part at {at} is a {}", std::any::type_name::<T>()))
    }

    /// Every part, in the order they were added.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &dyn Part<R>> {
        self.0.iter().map(|p| &**p)
    }

    /// Every part, to change.
    pub(crate) fn iter_mut(&mut self) -> impl Iterator<Item = &mut Box<dyn Part<R>>> {
        self.0.iter_mut()
    }

    /// Whether some part records the rows writes touch.
    pub(crate) fn record(&self) -> bool {
        self.0.iter().any(|p| p.records())
    }
}
