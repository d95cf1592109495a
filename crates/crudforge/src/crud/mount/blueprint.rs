//! `CrudBlueprint`: which operations of a resource are mounted where, with which options, and
//! their registration on actix-web.

mod lifecycle;

use crate::auth::CurrentUser;
use crate::condition::Condition;
use crate::crud::limits::At;
use crate::crud::mount::docs;
use crate::crud::route::normalize_prefix;
use crate::crud::shared::{Mounted, Parts, Route, Shared};
use crate::crud::{list, read, write, FieldInfo, Resource};
use crate::mount::{IntoMount, Mount};
use crate::openapi::ApiDoc;
use crate::perms::Rules;
use actix_web::web;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

// Where these lived before the module was split; kept so existing paths still work.
pub(crate) use crate::crud::options::{OpOptions, OpSetting, Operation};
pub(crate) use crate::crud::route::CustomRoute;

/// A resource's endpoints at a URL prefix. Build it with [`Resource::blueprint`] or
/// [`CrudBlueprint::new`], adjust it, and mount it on an [`Api`](crate::Api).
pub struct CrudBlueprint<R: Resource> {
    pub(crate) prefix: String,
    pub(crate) parents: Vec<(&'static FieldInfo, String)>,
    pub(crate) ops: BTreeMap<Operation, OpOptions<R>>,
    pub(crate) res_id: &'static str,
    pub(crate) res_id_param: String,
    pub(crate) custom: Vec<CustomRoute>,
    pub(crate) errors: Vec<String>,
    pub(crate) rules: Arc<dyn Rules<R>>,
    pub(crate) hooks: crate::crud::hooks::Hooks<R>,
    pub(crate) require_if_match: bool,
    /// Query flags that hooks read, documented on their operation.
    pub(crate) flags: Vec<crate::crud::shared::QueryFlag>,
    /// The operations whose batch form is mounted (of POST, PATCH and DELETE).
    pub(crate) batch: Vec<Operation>,
    /// What the resource's default rules do to the blueprint when it is mounted
    /// (`Rules::on_mount`), kept when the application replaces the rules.
    pub(crate) on_mount: Option<fn(&mut dyn std::any::Any)>,
    /// Whether the blueprint offers aggregates (`aggregates`).
    pub(crate) aggregates: bool,
    /// What optional surfaces added (a feed, export and import, the admin page's hints, file
    /// members' routes), each through its own builder method or the crate root.
    pub(crate) parts: Parts<R>,
    /// The doors given an access of their own (`door`), in the order given.
    pub(crate) doors: Vec<(crate::perms::Door, crate::perms::DoorAccess)>,
    /// The limits per operation and door (`limit`), in the order given.
    pub(crate) limits: Vec<(crate::crud::limits::Limited, crate::crud::limits::Limit)>,
}

impl<R: Resource> fmt::Debug for CrudBlueprint<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CrudBlueprint")
            .field("resource", &R::NAME)
            .field("prefix", &self.prefix)
            .field("ops", &self.ops.keys().collect::<Vec<_>>())
            .field("res_id", &self.res_id)
            .finish()
    }
}

impl<R: Resource> CrudBlueprint<R> {
    /// All five operations of `R` at `prefix`. A prefix may carry a parent parameter
    /// (`/api/users/<uuid:user_id>/posts/` or `/api/users/{user_id}/posts/`) naming a field of
    /// `R`: then INDEX, POST and GET item are mounted, every query is filtered by it, and
    /// creation sets it.
    pub fn new(prefix: &str) -> Self {
        let (prefix, params) = normalize_prefix(prefix);
        let mut errors = Vec::new();
        let mut parents = Vec::new();
        for p in params {
            match R::field(&p) {
                Some(f) if f.comparable() => parents.push((f, p)),
                _ => errors.push(format!(
                    "{}: prefix parameter `{p}` is not a filterable field of {}",
                    prefix,
                    R::NAME
                )),
            }
        }
        let mut ops = BTreeMap::new();
        for op in Operation::ALL {
            if parents.is_empty()
                || matches!(op, Operation::Index | Operation::Post | Operation::Get)
            {
                ops.insert(op, OpOptions::default());
            }
        }
        // A resource that keeps deleted rows can restore them.
        if R::SOFT_DELETE && parents.is_empty() {
            ops.insert(Operation::Restore, OpOptions::default());
        }
        let rules = R::default_rules();
        let mut parts = Parts::default();
        crate::resource_parts::<R>(&mut parts);
        CrudBlueprint {
            on_mount: rules.on_mount(),
            prefix,
            parents,
            ops,
            res_id: R::ID_FIELD,
            res_id_param: "id".to_owned(),
            custom: Vec::new(),
            errors,
            rules,
            hooks: crate::crud::hooks::Hooks::default(),
            require_if_match: false,
            flags: Vec::new(),
            batch: Vec::new(),
            aggregates: false,
            parts,
            doors: Vec::new(),
            limits: Vec::new(),
        }
    }

    /// Documents a `true`/`false` query parameter of `op` that one of its hooks reads with
    /// [`HookCtx::flag`](crate::crud::HookCtx::flag) (for example `cascade` on DELETE), so that
    /// clients generated from the description can send it.
    #[must_use]
    pub fn query_flag(
        mut self,
        op: Operation,
        name: &'static str,
        description: &'static str,
    ) -> Self {
        self.flags.push((op, name, description));
        self
    }

    /// Requires `If-Match` on PATCH and DELETE: a request without it gets 428, so no client can
    /// overwrite a change it has not seen. Off by default (`If-Match` is then honoured when
    /// sent).
    #[must_use]
    pub fn require_if_match(mut self, yes: bool) -> Self {
        self.require_if_match = yes;
        self
    }

    /// Mounts the batch form of `ops` (any of [`Operation::Post`], [`Operation::Patch`] and
    /// [`Operation::Delete`], each of which must be mounted too): `POST <prefix>batch/` creates,
    /// `PATCH <prefix>batch/` updates and `POST <prefix>batch/delete/` deletes up to
    /// `BATCH_MAX_ITEMS` items in one request and one transaction, all or nothing. Each item
    /// goes through the rules, validators, hooks and options of the single operation; see
    /// [resources.md](https://github.com/crudforge/crudforge/blob/main/docs/resources.md) ("Batch writes") for the bodies and answers. Off by default.
    #[must_use]
    pub fn batch(mut self, ops: impl IntoIterator<Item = Operation>) -> Self {
        for op in ops {
            if !self.batch.contains(&op) {
                self.batch.push(op);
            }
        }
        self
    }

    /// Replaces the resource's permission rules for this blueprint.
    #[must_use]
    pub fn rules(mut self, rules: impl Rules<R>) -> Self {
        self.rules = Arc::new(rules);
        self
    }

    /// Gives `door` (the export, the import, aggregates, the feed, file downloads) an access of
    /// its own, on top of the rules of the operation it follows: for example an import for
    /// administrators only, an export for signed-in callers, or an expression
    /// (`DoorAccess::expr("@role = 'ANALYST'")`), whose member comparisons narrow the rows the
    /// door reaches. An expression is checked against the resource when the blueprint is
    /// mounted; the description's "Who may call" sentence of the door says the access whole.
    /// Given twice, the last access counts.
    #[must_use]
    pub fn door(mut self, door: crate::perms::Door, access: crate::perms::DoorAccess) -> Self {
        self.doors.push((door, access));
        self
    }

    /// Limits how much a caller may ask of an operation (its batch form included) or a door
    /// in a window: `.limit(Door::Export, Limit::per_hour(100))`,
    /// `.limit(Operation::Index, Limit::per_minute(600).by(LimitKey::Address))`. Requests
    /// cost one unit or more ([`Limit::cost`](crate::crud::limits::Limit::cost)); past the limit
    /// the answer is 429 with `Retry-After`, and every answer of a limited route carries the
    /// `RateLimit` and `RateLimit-Policy` headers. On PostgreSQL all instances share the
    /// count. The description states each limit. Given twice for one target, the last counts.
    #[must_use]
    pub fn limit(
        mut self,
        on: impl Into<crate::crud::limits::Limited>,
        limit: crate::crud::limits::Limit,
    ) -> Self {
        self.limits.push((on.into(), limit));
        self
    }

    /// The URL prefix, in actix form.
    pub(crate) fn prefix(&self) -> &str {
        &self.prefix
    }

    /// The enabled operations.
    pub fn operations(&self) -> Vec<Operation> {
        self.ops.keys().copied().collect()
    }

    /// Enables only the listed operations (on a nested prefix this may also enable PATCH and
    /// DELETE, which nested blueprints leave off by default).
    #[must_use]
    pub fn methods(mut self, only: impl IntoIterator<Item = Operation>) -> Self {
        let only: Vec<Operation> = only.into_iter().collect();
        self.ops.retain(|op, _| only.contains(op));
        for op in only {
            self.ops.entry(op).or_default();
        }
        self
    }

    /// Disables the listed operations.
    #[must_use]
    pub fn skip(mut self, skip: impl IntoIterator<Item = Operation>) -> Self {
        for op in skip {
            self.ops.remove(&op);
        }
        self
    }

    /// An options map: every operation is enabled except those mapped to `false`; operations
    /// mapped to [`OpOptions`] get them.
    #[must_use]
    pub fn options<S: Into<OpSetting<R>>>(
        mut self,
        map: impl IntoIterator<Item = (Operation, S)>,
    ) -> Self {
        for (op, setting) in map {
            match setting.into() {
                OpSetting::Disabled => {
                    self.ops.remove(&op);
                }
                OpSetting::Enabled(o) => {
                    if self.parents.is_empty()
                        || matches!(op, Operation::Index | Operation::Post | Operation::Get)
                    {
                        self.ops.insert(op, o);
                    }
                }
            }
        }
        self
    }

    /// Changes the options of one enabled operation.
    #[must_use]
    pub fn with(mut self, op: Operation, f: impl FnOnce(OpOptions<R>) -> OpOptions<R>) -> Self {
        if let Some(o) = self.ops.remove(&op) {
            self.ops.insert(op, f(o));
        }
        self
    }

    /// Restricts operations to administrators.
    #[must_use]
    pub fn admin_only(mut self, ops: impl IntoIterator<Item = Operation>) -> Self {
        for op in ops {
            self = self.with(op, |o| o.admin_only(true));
        }
        self
    }

    /// Makes operations public.
    #[must_use]
    pub fn public(mut self, ops: impl IntoIterator<Item = Operation>) -> Self {
        for op in ops {
            self = self.with(op, |o| o.public(true));
        }
        self
    }

    /// Looks items up by another unique field instead of the id. The field must be declared
    /// `#[resource(unique)]` (backed by a unique index in the migrations): a key that several
    /// rows share would let one PATCH or DELETE change all of them, so mounting fails.
    #[must_use]
    pub fn res_id(mut self, field: &str) -> Self {
        match R::field(field) {
            Some(f) if f.comparable() && f.unique => self.res_id = f.name,
            Some(f) if f.comparable() => self.errors.push(format!(
                "{}: res_id `{field}` of {} is not unique: declare it `#[resource(unique)]` \
                 and back it with a unique index, or one PATCH or DELETE could change several rows",
                self.prefix,
                R::NAME
            )),
            _ => self.errors.push(format!(
                "{}: res_id `{field}` is not a filterable field of {}",
                self.prefix,
                R::NAME
            )),
        }
        self
    }

    /// Names the URL parameter of the item routes (`/api/users/{user_name}`).
    #[must_use]
    pub fn res_id_param(mut self, param: &str) -> Self {
        let p = param
            .trim_matches(|c| c == '<' || c == '>' || c == '{' || c == '}')
            .rsplit(':')
            .next()
            .unwrap_or(param);
        if p.is_empty() || !p.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            self.errors.push(format!(
                "{}: res_id_param `{param}` is not a valid name",
                self.prefix
            ));
        } else {
            self.res_id_param = p.to_owned();
        }
        self
    }

    /// Adds a hand-written route under the prefix.
    #[must_use]
    pub fn route(mut self, route: CustomRoute) -> Self {
        self.custom.push(route);
        self
    }

    fn item_path(&self) -> String {
        format!("{}{{{}}}", self.prefix, self.res_id_param)
    }
}

impl<R: Resource> CrudBlueprint<R> {
    pub(crate) fn into_mount(mut self) -> Result<Mounted<R>, String> {
        // What the resource's default rules add at mount time (the user system's role rows
        // are guarded unless the application said otherwise in code).
        if let Some(on_mount) = self.on_mount {
            on_mount(&mut self as &mut dyn std::any::Any);
        }
        self.check_rule_fields();
        self.check_batch();
        self.check_aggregates();
        // Named filters parse against the resource's fields, or the API does not start.
        if let Err(e) = crate::crud::list::named_filters::check_declared::<R>() {
            self.errors.push(format!("{}: {e}", self.prefix));
        }
        if self.ops.contains_key(&Operation::Restore) && !R::SOFT_DELETE {
            self.errors.push(format!(
                "{}: restore needs a resource that keeps deleted rows: add `#[resource(soft_delete)]` to {}",
                self.prefix,
                R::NAME
            ));
        }
        for part in self.parts.iter() {
            part.check(&self.prefix, &self.ops, &mut self.errors);
        }
        let gates =
            crate::crud::rules::door::Gates::compile::<R>(&self.doors).unwrap_or_else(|problems| {
                for p in problems {
                    self.errors.push(format!("{}: {p}", self.prefix));
                }
                crate::crud::rules::door::Gates::default()
            });
        if !self.errors.is_empty() {
            return Err(self.errors.join("; "));
        }
        let item_path = self.item_path();
        let res_id = R::field(self.res_id)
            .ok_or_else(|| format!("{}: no field {}", self.prefix, self.res_id))?;
        for part in self.parts.iter_mut() {
            part.mounted(&self.prefix, res_id);
        }
        Ok(Mounted {
            shared: Arc::new(Shared {
                rules: self.rules,
                ops: self.ops,
                parents: self.parents,
                res_id,
                res_id_param: self.res_id_param,
                hooks: self.hooks,
                require_if_match: self.require_if_match,
                in_flight: crate::crud::idempotency::InFlight::default(),
                parts: self.parts,
                gates,
                limits: crate::crud::limits::Limits::new(&self.prefix, &self.limits),
            }),
            prefix: self.prefix,
            item_path,
            custom: self.custom,
            flags: self.flags,
            batch: self.batch,
            aggregates: self.aggregates,
            patterns: crate::crud::scope::Patterns::new(),
        })
    }
}

impl<R: Resource> CrudBlueprint<R> {
    /// Checks that every field the rules name (server-set and admin-only members, the fields
    /// their scopes compare) is a field of `R`, so that a misspelt owner field fails at mount
    /// time rather than on the first request.
    fn check_rule_fields(&mut self) {
        let probe = CurrentUser {
            id: uuid::Uuid::nil(),
            email: String::new(),
            is_enabled: true,
            second_factor: false,
            roles: Vec::new(),
        };
        // Expression rules check themselves: members, paths, operators and values.
        for problem in self.rules.problems() {
            self.errors.push(format!("{}: {problem}", self.prefix));
        }
        let mut named: Vec<&'static str> = Vec::new();
        named.extend(self.rules.server_fields());
        named.extend(self.rules.admin_fields());
        for user in [None, Some(&probe)] {
            for access in [
                self.rules.read(user),
                self.rules.write(user),
                self.rules.delete(user),
                self.rules.created(user),
            ] {
                if let Ok(c) = access.into_conds() {
                    collect_fields(&c, &mut named);
                }
            }
        }
        named.sort_unstable();
        named.dedup();
        for name in named {
            if R::field(name).is_none() {
                self.errors.push(format!(
                    "{}: the rules name `{name}`, which is not a field of {}",
                    self.prefix,
                    R::NAME
                ));
            }
        }
    }
}

impl<R: Resource> CrudBlueprint<R> {
    /// Checks that each batch operation is a write and is mounted itself.
    fn check_batch(&mut self) {
        for op in &self.batch {
            if !matches!(op, Operation::Post | Operation::Patch | Operation::Delete) {
                self.errors.push(format!(
                    "{}: only POST, PATCH and DELETE have a batch form, not {op:?}",
                    self.prefix
                ));
            } else if !self.ops.contains_key(op) {
                self.errors.push(format!(
                    "{}: the batch form of {op:?} needs {op:?} itself, which is not mounted",
                    self.prefix
                ));
            }
        }
    }
}

/// The field names a condition compares.
fn collect_fields(c: &Condition, out: &mut Vec<&'static str>) {
    match c {
        Condition::Is(c) => out.push(c.field),
        Condition::All(v) | Condition::Any(v) => v.iter().for_each(|c| collect_fields(c, out)),
        Condition::Not(c) => collect_fields(c, out),
        // Another resource's fields.
        Condition::Related(_) => {}
    }
}

impl<R: Resource> IntoMount for CrudBlueprint<R> {
    fn into_mount(self) -> Result<Box<dyn Mount>, String> {
        CrudBlueprint::into_mount(self).map(|m| Box::new(m) as Box<dyn Mount>)
    }
}

/// An actix handler that runs the generic handler `$f` with the blueprint's shared state, under
/// the limit the blueprint gives route `$at` (`CrudBlueprint::limit`), if any.
macro_rules! handler {
    ($shared:expr, $at:expr, $f:path) => {{
        let shared = $shared.clone();
        move |req: actix_web::HttpRequest, body: actix_web::web::Bytes| {
            let shared = shared.clone();
            async move {
                crate::crud::limits::limited!(&shared, &req, $at, $f(&*shared, req.clone(), body))
            }
        }
    }};
}
#[allow(
    unused_imports,
    reason = "a door of the seam: a build without optional surfaces leaves it unused"
)]
pub(crate) use handler;

// After `handler!`, which its routes use.
mod aggregate;

impl<R: Resource> Mounted<R> {
    /// The routes the application added. Routes sharing a path (GET and POST `settings/`) go
    /// on one resource: actix stops at the first resource whose path matches, so a second
    /// resource for the same path would never be reached.
    fn custom_routes(&self, routes: &mut crate::crud::scope::Routes) {
        let mut paths: Vec<&str> = Vec::new();
        for c in &self.custom {
            if !paths.contains(&c.path.as_str()) {
                paths.push(&c.path);
            }
        }
        for p in paths {
            routes.add(&format!("{}{}", self.prefix, p), |mut resource| {
                for c in self.custom.iter().filter(|c| c.path == p) {
                    resource = resource.route((c.route)());
                }
                resource
            });
        }
    }

    /// The batch routes the blueprint enables: `batch/` for creates and updates, and the
    /// batch delete's own path.
    fn batch_routes(&self, routes: &mut crate::crud::scope::Routes) {
        let batch = &self.batch;
        if batch.contains(&Operation::Post) || batch.contains(&Operation::Patch) {
            let path = format!("{}{}", self.prefix, write::batch::PATH);
            routes.add(&path, |mut resource| {
                if batch.contains(&Operation::Post) {
                    resource = resource.route(web::post().to(handler!(
                        self.shared,
                        At::Batch(Operation::Post),
                        write::batch::create
                    )));
                }
                if batch.contains(&Operation::Patch) {
                    resource = resource.route(web::patch().to(handler!(
                        self.shared,
                        At::Batch(Operation::Patch),
                        write::batch::update
                    )));
                }
                resource
            });
        }
        if batch.contains(&Operation::Delete) {
            let path = format!("{}{}", self.prefix, write::batch::DELETE_PATH);
            routes.add(&path, |resource| {
                let (resource, taken) = self.served(Route::BatchDelete, resource);
                if taken {
                    return resource;
                }
                resource.route(web::post().to(handler!(
                    self.shared,
                    At::Batch(Operation::Delete),
                    write::batch::delete
                )))
            });
        }
    }

    /// `resource` with the routes the parts serve `route` with, and whether one of them serves
    /// it wholly.
    fn served(
        &self,
        route: Route,
        mut resource: actix_web::Resource,
    ) -> (actix_web::Resource, bool) {
        for part in self.shared.parts.iter() {
            let (r, taken) = part.serve(self, route, resource);
            resource = r;
            if taken {
                return (resource, true);
            }
        }
        (resource, false)
    }

    /// The list, the item and the restore routes, for the operations the blueprint enables.
    fn standard_routes(&self, routes: &mut crate::crud::scope::Routes) {
        let ops = &self.shared.ops;
        if ops.contains_key(&Operation::Index) || ops.contains_key(&Operation::Post) {
            routes.add(&self.prefix, |mut list| {
                if ops.contains_key(&Operation::Index) {
                    list = list.route(web::get().to(handler!(
                        self.shared,
                        At::Op(Operation::Index),
                        list::index
                    )));
                }
                if ops.contains_key(&Operation::Post) {
                    let taken;
                    (list, taken) = self.served(Route::Create, list);
                    if !taken {
                        list = list.route(web::post().to(handler!(
                            self.shared,
                            At::Op(Operation::Post),
                            write::create::post
                        )));
                    }
                }
                list
            });
        }
        if ops.contains_key(&Operation::Get)
            || ops.contains_key(&Operation::Patch)
            || ops.contains_key(&Operation::Delete)
        {
            routes.add(&self.item_path, |mut item| {
                if ops.contains_key(&Operation::Get) {
                    item = item.route(web::get().to(handler!(
                        self.shared,
                        At::Op(Operation::Get),
                        read::get
                    )));
                }
                if ops.contains_key(&Operation::Patch) {
                    let taken;
                    (item, taken) = self.served(Route::Update, item);
                    if !taken {
                        item = item.route(web::patch().to(handler!(
                            self.shared,
                            At::Op(Operation::Patch),
                            write::update::update
                        )));
                    }
                }
                if ops.contains_key(&Operation::Delete) {
                    let taken;
                    (item, taken) = self.served(Route::Delete, item);
                    if !taken {
                        item = item.route(web::delete().to(handler!(
                            self.shared,
                            At::Op(Operation::Delete),
                            write::delete::delete
                        )));
                    }
                }
                item
            });
        }
        if ops.contains_key(&Operation::Restore) {
            routes.add(&crate::crud::route::restore_path(&self.item_path), |r| {
                r.route(web::post().to(handler!(
                    self.shared,
                    At::Op(Operation::Restore),
                    write::restore::restore
                )))
            });
        }
    }
}

impl<R: Resource> Mount for Mounted<R> {
    fn reader(&self) -> Option<(&'static str, Arc<dyn std::any::Any + Send + Sync>)> {
        if !self.shared.parents.is_empty() {
            return None;
        }
        let shared: Arc<dyn std::any::Any + Send + Sync> = self.shared.clone();
        Some((R::NAME, shared))
    }

    fn resource(&self) -> Option<(&'static str, bool)> {
        Some((R::NAME, crate::crud::shared::holds_secrets::<R>()))
    }

    fn register(&self, cfg: &mut web::ServiceConfig) {
        let mut routes = crate::crud::scope::Routes::new(&self.prefix);
        // Custom and batch routes first, so that `stats/` or `batch/` is not taken for an
        // item id. The files' routes (`{id}/files/{file}` and its `link`) come after the list
        // and the item: no path of theirs is one segment, so neither takes theirs, and the
        // list's and the item's requests, the most frequent, are not tried against them
        // first (a pattern with a parameter costs a regular-expression search).
        self.custom_routes(&mut routes);
        self.batch_routes(&mut routes);
        self.aggregate_routes(&mut routes);
        for part in self.shared.parts.iter() {
            part.routes(self, &mut routes);
        }
        self.standard_routes(&mut routes);
        for part in self.shared.parts.iter() {
            part.late_routes(self, &mut routes);
        }
        routes.register(cfg, &self.patterns);
    }

    fn document(&self, doc: &mut ApiDoc) {
        docs::document(doc, self);
    }

    fn indexes(&self) -> Vec<crate::db::indexes::IndexSpec> {
        R::indexes()
    }

    fn table(&self) -> Option<crate::db::schema_check::TableSpec> {
        Some(
            crate::db::schema_check::TableSpec::new(R::sql_table(), R::FIELDS)
                .searchable(R::SEARCH),
        )
    }

    fn model(&self) -> Option<&'static crate::db::ddl::ModelTable> {
        R::MODEL
    }

    fn purge_deleted<'a>(
        &'a self,
        db: &'a crate::db::Database,
        before: chrono::DateTime<chrono::Utc>,
    ) -> futures_util::future::LocalBoxFuture<'a, Result<u64, crate::error::Error>> {
        Box::pin(crate::crud::soft_delete::purge::<R>(db, before))
    }

    fn faces(&self) -> Vec<&(dyn std::any::Any + Send + Sync)> {
        self.shared.parts.iter().flat_map(|p| p.faces()).collect()
    }
}
