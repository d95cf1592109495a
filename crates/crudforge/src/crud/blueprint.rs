//! `CrudBlueprint`: which operations of a resource are mounted where, with which options.

use super::query::suffixes;
use super::{handlers, FieldInfo, Kind, Page, Resource, Validate};
use crate::api::Mount;
use crate::error::Error;
use crate::openapi::{json_body, json_response, parameter, problem_response, ApiDoc};
use crate::perms::Rules;
use actix_web::http::StatusCode;
use actix_web::{web, HttpRequest};
pub use apistos::paths::OperationType;
use apistos::paths::{Operation as OpDoc, ParameterIn, Responses};
use apistos::reference_or::ReferenceOr;
use schemars::schema::Schema;
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

/// The five generated operations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Operation {
    /// `GET <prefix>`: a filtered, paginated list.
    Index,
    /// `GET <prefix><id>`: one item.
    Get,
    /// `POST <prefix>`: create.
    Post,
    /// `PATCH <prefix><id>`: partial update.
    Patch,
    /// `DELETE <prefix><id>`: delete.
    Delete,
}

impl Operation {
    /// All five, in order.
    pub const ALL: [Operation; 5] = [
        Operation::Index,
        Operation::Get,
        Operation::Post,
        Operation::Patch,
        Operation::Delete,
    ];

    /// The operation id for a model name: `listCritter`, `getCritter`, ...
    pub fn operation_id(self, model: &str) -> String {
        let verb = match self {
            Operation::Index => "list",
            Operation::Get => "get",
            Operation::Post => "create",
            Operation::Patch => "update",
            Operation::Delete => "delete",
        };
        format!("{verb}{model}")
    }
}

/// Serializes a model through a substituted response schema.
pub(crate) type Render<R> = fn(&mut Vec<u8>, R) -> serde_json::Result<()>;
/// Adds a schema to the description.
pub(crate) type SchemaFn = fn(&mut ApiDoc) -> ReferenceOr<Schema>;
/// Turns models into response bodies with database access (see [`Present`]).
pub(crate) type PresentFn<R> =
    for<'a> fn(
        &'a crate::db::Database,
        Vec<R>,
    ) -> futures_util::future::LocalBoxFuture<'a, Result<Vec<Vec<u8>>, Error>>;

/// A response schema built with database access, for whole pages at once (for example to
/// add each user's roles with one query per page).
pub trait Present<R>: Sized + 'static {
    /// The response body of one item.
    type Output: Serialize + schemars::JsonSchema;

    /// Converts a page (or a single item) of models.
    fn present(
        db: &crate::db::Database,
        items: Vec<R>,
    ) -> impl std::future::Future<Output = Result<Vec<Self::Output>, Error>>;
}

fn present_with<'a, R: 'static, P: Present<R>>(
    db: &'a crate::db::Database,
    items: Vec<R>,
) -> futures_util::future::LocalBoxFuture<'a, Result<Vec<Vec<u8>>, Error>> {
    Box::pin(async move {
        let out = P::present(db, items).await?;
        out.iter()
            .map(|o| serde_json::to_vec(o).map_err(|e| Error::Internal(e.to_string())))
            .collect()
    })
}

fn output_schema<R: 'static, P: Present<R>>(doc: &mut ApiDoc) -> ReferenceOr<Schema> {
    doc.schema::<P::Output>()
}

/// Checks a body against a substituted input schema; returns it as JSON for the real input.
pub(crate) type Parse = fn(serde_json::Value) -> Result<serde_json::Value, Error>;

/// Options of one operation: `schema` (response type), `arg_schema` (input type),
/// `admin_only`, `public`.
pub struct OpOptions<R> {
    pub(crate) admin_only: bool,
    pub(crate) public: bool,
    pub(crate) response: Option<(SchemaFn, Render<R>)>,
    pub(crate) presenter: Option<(SchemaFn, PresentFn<R>)>,
    pub(crate) input: Option<(SchemaFn, Parse)>,
}

impl<R> Clone for OpOptions<R> {
    fn clone(&self) -> Self {
        OpOptions {
            admin_only: self.admin_only,
            public: self.public,
            response: self.response,
            presenter: self.presenter,
            input: self.input,
        }
    }
}

impl<R> Default for OpOptions<R> {
    fn default() -> Self {
        OpOptions {
            admin_only: false,
            public: false,
            response: None,
            presenter: None,
            input: None,
        }
    }
}

impl<R> fmt::Debug for OpOptions<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpOptions")
            .field("admin_only", &self.admin_only)
            .field("public", &self.public)
            .field("schema", &self.response.is_some())
            .field("arg_schema", &self.input.is_some())
            .finish()
    }
}

fn render_as<R, S: From<R> + Serialize>(out: &mut Vec<u8>, r: R) -> serde_json::Result<()> {
    serde_json::to_writer(out, &S::from(r))
}

fn schema_of<S: schemars::JsonSchema>(doc: &mut ApiDoc) -> ReferenceOr<Schema> {
    doc.schema::<S>()
}

fn parse_as<T: DeserializeOwned + Serialize + Validate>(
    v: serde_json::Value,
) -> Result<serde_json::Value, Error> {
    let t: T = handlers::from_value(v)?;
    t.validate()?;
    serde_json::to_value(&t).map_err(|e| Error::Internal(e.to_string()))
}

impl<R: Resource> OpOptions<R> {
    /// Default options.
    pub fn new() -> Self {
        OpOptions::default()
    }

    /// Only administrators may call the operation (401 anonymous, 403 other users).
    #[must_use]
    pub fn admin_only(mut self, yes: bool) -> Self {
        self.admin_only = yes;
        self
    }

    /// Anyone may call the operation, without a token.
    #[must_use]
    pub fn public(mut self, yes: bool) -> Self {
        self.public = yes;
        self
    }

    /// Responds with `S` (built `From` the model) instead of the generated response schema.
    #[must_use]
    pub fn schema<S>(mut self) -> Self
    where
        S: From<R> + Serialize + schemars::JsonSchema,
    {
        self.response = Some((schema_of::<S>, render_as::<R, S>));
        self.presenter = None;
        self
    }

    /// Responds with `P::Output`, built by `P` with database access.
    #[must_use]
    pub fn present<P: Present<R>>(mut self) -> Self
    where
        R: 'static,
    {
        self.presenter = Some((output_schema::<R, P>, present_with::<R, P>));
        self.response = None;
        self
    }

    /// Accepts bodies of type `T` instead of the generated input schema: a body must first
    /// be a valid `T`; `T`'s members then feed the generated input.
    #[must_use]
    pub fn arg_schema<T>(mut self) -> Self
    where
        T: DeserializeOwned + Serialize + schemars::JsonSchema + Validate,
    {
        self.input = Some((schema_of::<T>, parse_as::<T>));
        self
    }
}

/// The setting of one operation in an options map: `false` disables it, options enable it.
#[derive(Debug, Clone)]
pub enum OpSetting<R> {
    /// The operation is not mounted.
    Disabled,
    /// The operation is mounted with these options.
    Enabled(OpOptions<R>),
}

impl<R> From<bool> for OpSetting<R> {
    fn from(on: bool) -> Self {
        if on {
            OpSetting::Enabled(OpOptions::default())
        } else {
            OpSetting::Disabled
        }
    }
}

impl<R> From<OpOptions<R>> for OpSetting<R> {
    fn from(o: OpOptions<R>) -> Self {
        OpSetting::Enabled(o)
    }
}

/// Documentation of a custom route.
#[derive(Debug, Clone, Default)]
pub struct RouteDoc {
    /// Operation id.
    pub operation_id: Option<String>,
    /// Summary line.
    pub summary: Option<String>,
    /// Longer description.
    pub description: Option<String>,
    /// Response schema of the success response.
    pub response: Option<SchemaFn>,
    /// Status of the success response (`None`: 200).
    pub status: Option<u16>,
    /// The success response may also be plain text.
    pub text: bool,
    /// Public marker.
    pub public: bool,
    /// Request body schema.
    pub body: Option<SchemaFn>,
    /// Documented error statuses.
    pub errors: Vec<u16>,
    /// Tag (default: the resource name).
    pub tag: Option<String>,
}

/// A hand-written route mounted under a blueprint's prefix.
/// Build one with [`CustomRoute::get`], [`CustomRoute::post`] and friends, or
/// [`CustomRoute::new`] with an [`OperationType`].
pub struct CustomRoute {
    pub(crate) path: String,
    pub(crate) method: OperationType,
    pub(crate) route: Box<dyn Fn() -> actix_web::Route + Send + Sync>,
    pub(crate) doc: RouteDoc,
}

impl fmt::Debug for CustomRoute {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CustomRoute")
            .field("path", &self.path)
            .field("method", &self.method)
            .field("doc", &self.doc)
            .finish()
    }
}

impl CustomRoute {
    /// A route for `method` at `path` (relative to the prefix, e.g. `stats/`), built by `route`
    /// (for example `|| web::get().to(handler)`) for each worker.
    pub fn new<F>(method: OperationType, path: &str, route: F) -> Self
    where
        F: Fn() -> actix_web::Route + Send + Sync + 'static,
    {
        CustomRoute {
            path: path.trim_start_matches('/').to_owned(),
            method,
            route: Box::new(route),
            doc: RouteDoc::default(),
        }
    }

    /// A GET route (see [`CustomRoute::new`]).
    pub fn get<F>(path: &str, route: F) -> Self
    where
        F: Fn() -> actix_web::Route + Send + Sync + 'static,
    {
        CustomRoute::new(OperationType::Get, path, route)
    }

    /// A POST route.
    pub fn post<F>(path: &str, route: F) -> Self
    where
        F: Fn() -> actix_web::Route + Send + Sync + 'static,
    {
        CustomRoute::new(OperationType::Post, path, route)
    }

    /// A PATCH route.
    pub fn patch<F>(path: &str, route: F) -> Self
    where
        F: Fn() -> actix_web::Route + Send + Sync + 'static,
    {
        CustomRoute::new(OperationType::Patch, path, route)
    }

    /// A PUT route.
    pub fn put<F>(path: &str, route: F) -> Self
    where
        F: Fn() -> actix_web::Route + Send + Sync + 'static,
    {
        CustomRoute::new(OperationType::Put, path, route)
    }

    /// A DELETE route.
    pub fn delete<F>(path: &str, route: F) -> Self
    where
        F: Fn() -> actix_web::Route + Send + Sync + 'static,
    {
        CustomRoute::new(OperationType::Delete, path, route)
    }

    /// Sets the operation id.
    #[must_use]
    pub fn operation_id(mut self, id: &str) -> Self {
        self.doc.operation_id = Some(id.to_owned());
        self
    }

    /// Sets the summary.
    #[must_use]
    pub fn summary(mut self, s: &str) -> Self {
        self.doc.summary = Some(s.to_owned());
        self
    }

    /// Documents the success response as `T`.
    #[must_use]
    pub fn responds<T: schemars::JsonSchema>(mut self) -> Self {
        self.doc.response = Some(schema_of::<T>);
        self
    }

    /// Documents a `text/plain` success body, beside the JSON one if [`CustomRoute::responds`]
    /// names one (for a route that answers in either form).
    #[must_use]
    pub fn responds_text(mut self) -> Self {
        self.doc.text = true;
        self
    }

    /// Documents the success status, when it is not 200 (for example 201 for a route that
    /// creates something).
    #[must_use]
    pub fn status(mut self, status: u16) -> Self {
        self.doc.status = Some(status);
        self
    }

    /// Marks the route public (no token needed).
    #[must_use]
    pub fn public(mut self) -> Self {
        self.doc.public = true;
        self
    }

    /// Documents a JSON request body of type `T`.
    #[must_use]
    pub fn body<T: schemars::JsonSchema>(mut self) -> Self {
        self.doc.body = Some(schema_of::<T>);
        self
    }

    /// Documents problem responses with these statuses.
    #[must_use]
    pub fn errors(mut self, statuses: &[u16]) -> Self {
        self.doc.errors = statuses.to_vec();
        self
    }

    /// Sets the OpenAPI tag.
    #[must_use]
    pub fn tag(mut self, tag: &str) -> Self {
        self.doc.tag = Some(tag.to_owned());
        self
    }
}

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

/// Converts `<uuid:user_id>` / `<user_id>` segments to actix's `{user_id}`; returns the path
/// and the parameter names in order.
fn normalize_prefix(prefix: &str) -> (String, Vec<String>) {
    let mut out = String::new();
    let mut params = Vec::new();
    let mut rest = prefix;
    while let Some(i) = rest.find(['<', '{']) {
        out.push_str(&rest[..i]);
        let close = if rest.as_bytes()[i] == b'<' { '>' } else { '}' };
        match rest[i..].find(close) {
            Some(j) => {
                let inner = &rest[i + 1..i + j];
                let name = inner.rsplit(':').next().unwrap_or(inner).trim().to_owned();
                out.push('{');
                out.push_str(&name);
                out.push('}');
                params.push(name);
                rest = &rest[i + j + 1..];
            }
            None => {
                out.push_str(&rest[i..]);
                rest = "";
            }
        }
    }
    out.push_str(rest);
    if !out.starts_with('/') {
        out.insert(0, '/');
    }
    if !out.ends_with('/') {
        out.push('/');
    }
    (out, params)
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
        CrudBlueprint {
            prefix,
            parents,
            ops,
            res_id: R::ID_FIELD,
            res_id_param: "id".to_owned(),
            custom: Vec::new(),
            errors,
            rules: R::default_rules(),
        }
    }

    /// Replaces the resource's permission rules for this blueprint.
    #[must_use]
    pub fn rules(mut self, rules: impl Rules<R>) -> Self {
        self.rules = Arc::new(rules);
        self
    }

    /// The URL prefix, in actix form.
    pub fn prefix(&self) -> &str {
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

    /// Looks items up by another unique field instead of the id.
    #[must_use]
    pub fn res_id(mut self, field: &str) -> Self {
        match R::field(field) {
            Some(f) if f.comparable() => self.res_id = f.name,
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

/// The parts handlers need, shared by every worker.
pub(crate) struct Shared<R: Resource> {
    pub(crate) rules: Arc<dyn Rules<R>>,
    pub(crate) ops: BTreeMap<Operation, OpOptions<R>>,
    pub(crate) parents: Vec<(&'static FieldInfo, String)>,
    pub(crate) res_id: &'static FieldInfo,
    pub(crate) res_id_param: String,
}

/// A mounted blueprint.
pub(crate) struct Mounted<R: Resource> {
    shared: Arc<Shared<R>>,
    prefix: String,
    item_path: String,
    custom: Vec<CustomRoute>,
}

impl<R: Resource> CrudBlueprint<R> {
    pub(crate) fn into_mount(self) -> Result<Mounted<R>, String> {
        if !self.errors.is_empty() {
            return Err(self.errors.join("; "));
        }
        let item_path = self.item_path();
        let res_id = R::field(self.res_id)
            .ok_or_else(|| format!("{}: no field {}", self.prefix, self.res_id))?;
        Ok(Mounted {
            shared: Arc::new(Shared {
                rules: self.rules,
                ops: self.ops,
                parents: self.parents,
                res_id,
                res_id_param: self.res_id_param,
            }),
            prefix: self.prefix,
            item_path,
            custom: self.custom,
        })
    }
}

impl<R: Resource> crate::api::IntoMount for CrudBlueprint<R> {
    fn into_mount(self) -> Result<Box<dyn Mount>, String> {
        CrudBlueprint::into_mount(self).map(|m| Box::new(m) as Box<dyn Mount>)
    }
}

macro_rules! handler {
    ($shared:expr, $f:ident) => {{
        let shared = $shared.clone();
        move |req: HttpRequest, body: web::Bytes| {
            let shared = shared.clone();
            async move { handlers::$f::<R>(&shared, req, body).await }
        }
    }};
}

impl<R: Resource> Mount for Mounted<R> {
    fn register(&self, cfg: &mut web::ServiceConfig) {
        // Custom routes first, so that `stats/` is not taken for an item id. Routes sharing a
        // path (GET and POST `settings/`) go on one resource: actix stops at the first resource
        // whose path matches, so a second resource for the same path would never be reached.
        let mut paths: Vec<&str> = Vec::new();
        for c in &self.custom {
            if !paths.contains(&c.path.as_str()) {
                paths.push(&c.path);
            }
        }
        for p in paths {
            let mut resource = web::resource(format!("{}{}", self.prefix, p));
            for c in self.custom.iter().filter(|c| c.path == p) {
                resource = resource.route((c.route)());
            }
            cfg.service(resource);
        }
        let ops = &self.shared.ops;
        let mut list = web::resource(self.prefix.as_str());
        if ops.contains_key(&Operation::Index) {
            list = list.route(web::get().to(handler!(self.shared, index)));
        }
        if ops.contains_key(&Operation::Post) {
            list = list.route(web::post().to(handler!(self.shared, create)));
        }
        let mut item = web::resource(self.item_path.as_str());
        if ops.contains_key(&Operation::Get) {
            item = item.route(web::get().to(handler!(self.shared, get)));
        }
        if ops.contains_key(&Operation::Patch) {
            item = item.route(web::patch().to(handler!(self.shared, update)));
        }
        if ops.contains_key(&Operation::Delete) {
            item = item.route(web::delete().to(handler!(self.shared, delete)));
        }
        if ops.contains_key(&Operation::Index) || ops.contains_key(&Operation::Post) {
            cfg.service(list);
        }
        if ops.contains_key(&Operation::Get)
            || ops.contains_key(&Operation::Patch)
            || ops.contains_key(&Operation::Delete)
        {
            cfg.service(item);
        }
    }

    fn document(&self, doc: &mut ApiDoc) {
        for (op, options) in &self.shared.ops {
            document_op::<R>(doc, *op, options, self);
        }
        for c in &self.custom {
            let mut responses = Responses::default();
            let status = c
                .doc
                .status
                .and_then(|s| StatusCode::from_u16(s).ok())
                .unwrap_or(StatusCode::OK);
            let reason = status.canonical_reason().unwrap_or("OK");
            let mut ok = match c.doc.response {
                Some(f) => json_response(reason, f(doc)),
                None => ReferenceOr::Object(apistos::paths::Response {
                    description: reason.to_owned(),
                    ..Default::default()
                }),
            };
            if let (true, ReferenceOr::Object(r)) = (c.doc.text, &mut ok) {
                let text = doc.schema::<String>();
                r.content.insert(
                    "text/plain".to_owned(),
                    apistos::paths::MediaType {
                        schema: Some(text),
                        ..Default::default()
                    },
                );
            }
            responses.responses.insert(status.as_u16().to_string(), ok);
            for status in &c.doc.errors {
                if let Ok(s) = StatusCode::from_u16(*status) {
                    let (k, v) = problem_response(doc, s);
                    responses.responses.insert(k, v);
                }
            }
            let path = format!("{}{}", self.prefix, c.path);
            let mut extensions = apistos::IndexMap::new();
            if c.doc.public {
                extensions.insert("x-public".to_owned(), serde_json::Value::Bool(true));
            }
            let mut parameters = path_params(doc, &self.shared.parents, None);
            // Parameters of the route's own path (`{user_id}/settings/`) must be declared too.
            let (_, own) = normalize_prefix(&c.path);
            for p in own {
                if !self.shared.parents.iter().any(|(_, q)| *q == p) {
                    let s = doc.generator().subschema_for::<String>();
                    parameters.push(parameter(&p, ParameterIn::Path, true, None, s));
                }
            }
            let op = OpDoc {
                tags: vec![c.doc.tag.clone().unwrap_or_else(|| R::NAME.to_owned())],
                summary: c.doc.summary.clone(),
                description: c.doc.description.clone(),
                operation_id: c.doc.operation_id.clone(),
                parameters,
                request_body: c.doc.body.map(|f| json_body(f(doc))),
                responses,
                security: security(c.doc.public),
                extensions,
                ..Default::default()
            };
            doc.add_operation(&path, c.method, op);
        }
    }
}

/// A query parameter holding a non-empty comma-separated list of `item` values.
fn list_parameter(
    name: &str,
    description: String,
    item: Schema,
) -> ReferenceOr<apistos::paths::Parameter> {
    use schemars::schema::{ArrayValidation, InstanceType, SchemaObject, SingleOrVec};
    let schema = Schema::Object(SchemaObject {
        instance_type: Some(InstanceType::Array.into()),
        array: Some(Box::new(ArrayValidation {
            items: Some(SingleOrVec::Single(Box::new(item))),
            min_items: Some(1),
            ..Default::default()
        })),
        ..Default::default()
    });
    let mut p = parameter(name, ParameterIn::Query, false, Some(description), schema);
    if let ReferenceOr::Object(p) = &mut p {
        p.style = Some(apistos::paths::ParameterStyle::Form);
        p.explode = Some(false);
    }
    p
}

/// `sort`: a string whose pattern lists the sortable fields.
fn sort_schema<R: Resource>() -> Schema {
    use schemars::schema::{InstanceType, SchemaObject, StringValidation};
    let keys = R::FIELDS
        .iter()
        .filter(|f| f.comparable())
        .map(|f| f.name)
        .collect::<Vec<_>>()
        .join("|");
    Schema::Object(SchemaObject {
        instance_type: Some(InstanceType::String.into()),
        string: Some(Box::new(StringValidation {
            pattern: Some(format!("^([+-]?({keys})(,[+-]?({keys}))*)?$")),
            ..Default::default()
        })),
        ..Default::default()
    })
}

/// An integer schema with bounds.
fn integer_schema(min: u32, max: u32) -> Schema {
    use schemars::schema::{InstanceType, NumberValidation, SchemaObject};
    let format = if i32::try_from(max).is_ok() {
        "int32"
    } else {
        "int64"
    };
    Schema::Object(SchemaObject {
        instance_type: Some(InstanceType::Integer.into()),
        format: Some(format.to_owned()),
        number: Some(Box::new(NumberValidation {
            minimum: Some(f64::from(min)),
            maximum: Some(f64::from(max)),
            ..Default::default()
        })),
        ..Default::default()
    })
}

/// The schema of a filter value of field `f`: its kind's, with the range of narrow integers.
fn field_schema(doc: &mut ApiDoc, f: &FieldInfo) -> Schema {
    let mut s = kind_schema(doc, f.kind);
    if let (Some((min, max)), Schema::Object(o)) = (f.int_range, &mut s) {
        o.format = Some("int32".to_owned());
        let n = o.number();
        n.minimum = Some(min as f64);
        n.maximum = Some(max as f64);
    }
    s
}

fn kind_schema(doc: &mut ApiDoc, kind: Kind) -> Schema {
    let g = doc.generator();
    match kind {
        Kind::Text | Kind::Other => g.subschema_for::<String>(),
        Kind::Integer => g.subschema_for::<i64>(),
        Kind::Float => g.subschema_for::<f64>(),
        Kind::Bool => g.subschema_for::<bool>(),
        Kind::Uuid => g.subschema_for::<uuid::Uuid>(),
        Kind::DateTime => g.subschema_for::<chrono::DateTime<chrono::Utc>>(),
        Kind::Date => g.subschema_for::<chrono::NaiveDate>(),
        Kind::Json => g.subschema_for::<serde_json::Value>(),
    }
}

fn path_params(
    doc: &mut ApiDoc,
    parents: &[(&'static FieldInfo, String)],
    item: Option<(&'static FieldInfo, &str)>,
) -> Vec<ReferenceOr<apistos::paths::Parameter>> {
    let mut out = Vec::new();
    for (f, p) in parents {
        let s = kind_schema(doc, f.kind);
        out.push(parameter(
            p,
            ParameterIn::Path,
            true,
            Some(format!("Parent `{}`", f.name)),
            s,
        ));
    }
    if let Some((f, p)) = item {
        let s = kind_schema(doc, f.kind);
        out.push(parameter(
            p,
            ParameterIn::Path,
            true,
            Some(format!("The item's `{}`", f.name)),
            s,
        ));
    }
    out
}

fn document_op<R: Resource>(doc: &mut ApiDoc, op: Operation, o: &OpOptions<R>, m: &Mounted<R>) {
    let shared = &m.shared;
    let response = match (o.presenter, o.response) {
        (Some((schema, _)), _) | (None, Some((schema, _))) => schema(doc),
        (None, None) => doc.schema::<R::Response>(),
    };
    let mut responses = BTreeMap::new();
    let mut params;
    let mut body = None;
    let (path, method, summary) = match op {
        Operation::Index => {
            params = path_params(doc, &shared.parents, None);
            let max = doc.max_page_size();
            params.push(parameter(
                "page",
                ParameterIn::Query,
                false,
                Some("Page number, from 1 (default 1).".into()),
                integer_schema(1, u32::MAX),
            ));
            params.push(parameter(
                "page_size",
                ParameterIn::Query,
                false,
                Some(format!(
                    "Items per page, 1 to {max} (the default is set by configuration)."
                )),
                integer_schema(1, max),
            ));
            params.push(parameter("sort", ParameterIn::Query, false, Some("Comma-separated fields; `-field` sorts descending. Default: created_at, then id.".into()), sort_schema::<R>()));
            for f in R::FIELDS.iter().filter(|f| f.filterable && !f.write_only) {
                let s = field_schema(doc, f);
                params.push(parameter(
                    f.name,
                    ParameterIn::Query,
                    false,
                    Some(format!("`{}` equals", f.name)),
                    s,
                ));
                for suffix in suffixes(f.kind, f.nullable) {
                    if suffix == "in" {
                        // Comma-separated values: OpenAPI's form style without explode.
                        let item = field_schema(doc, f);
                        params.push(list_parameter(
                            &format!("{}__in", f.name),
                            format!("`{}` is one of (comma-separated)", f.name),
                            item,
                        ));
                        continue;
                    }
                    let s = match suffix {
                        "like" | "ilike" => doc.generator().subschema_for::<String>(),
                        "isnull" => doc.generator().subschema_for::<bool>(),
                        _ => field_schema(doc, f),
                    };
                    let what = match suffix {
                        "ne" => "differs from",
                        "in" => "is one of (comma-separated)",
                        "gt" => "is greater than",
                        "lt" => "is less than",
                        "gte" => "is at least",
                        "lte" => "is at most",
                        "from" => "is on or after (YYYY-MM-DD)",
                        "to" => "is on or before (YYYY-MM-DD, whole day)",
                        "like" => "matches the SQL LIKE pattern (case-sensitive)",
                        "ilike" => "matches the SQL LIKE pattern (case-insensitive)",
                        _ => "is null (true) or not (false)",
                    };
                    params.push(parameter(
                        &format!("{}__{suffix}", f.name),
                        ParameterIn::Query,
                        false,
                        Some(format!("`{}` {what}", f.name)),
                        s,
                    ));
                }
            }
            let page = page_schema(doc, response);
            responses.insert("200".to_owned(), json_response("One page of items", page));
            responses.extend([problem_response(doc, StatusCode::BAD_REQUEST)]);
            (
                m.prefix.clone(),
                OperationType::Get,
                format!("List {}", R::NAME),
            )
        }
        Operation::Get => {
            params = path_params(
                doc,
                &shared.parents,
                Some((shared.res_id, &shared.res_id_param)),
            );
            responses.insert("200".to_owned(), json_response("The item", response));
            responses.extend([problem_response(doc, StatusCode::NOT_FOUND)]);
            (
                m.item_path.clone(),
                OperationType::Get,
                format!("Get one {}", R::NAME),
            )
        }
        Operation::Post => {
            params = path_params(doc, &shared.parents, None);
            let input = match o.input {
                Some((schema, _)) => schema(doc),
                None => doc.schema::<R::Create>(),
            };
            // Parent fields come from the path; the body may not carry them.
            let parents: Vec<&str> = shared.parents.iter().map(|(f, _)| f.name).collect();
            let input = doc.without_properties(input, &parents);
            body = Some(json_body(input));
            responses.insert("201".to_owned(), json_response("Created", response));
            // 400/413/415/422 (body) are added by `ApiDoc::add_operation`.
            responses.extend([problem_response(doc, StatusCode::CONFLICT)]);
            (
                m.prefix.clone(),
                OperationType::Post,
                format!("Create a {}", R::NAME),
            )
        }
        Operation::Patch => {
            params = path_params(
                doc,
                &shared.parents,
                Some((shared.res_id, &shared.res_id_param)),
            );
            let input = match o.input {
                Some((schema, _)) => schema(doc),
                None => doc.schema::<R::Update>(),
            };
            body = Some(json_body(input));
            responses.insert(
                "200".to_owned(),
                json_response("The updated item", response),
            );
            // 400/413/415/422 (body) and 404 (path) are added by `ApiDoc::add_operation`.
            responses.extend([problem_response(doc, StatusCode::CONFLICT)]);
            (
                m.item_path.clone(),
                OperationType::Patch,
                format!("Update a {}", R::NAME),
            )
        }
        Operation::Delete => {
            params = path_params(
                doc,
                &shared.parents,
                Some((shared.res_id, &shared.res_id_param)),
            );
            responses.insert(
                "204".to_owned(),
                ReferenceOr::Object(apistos::paths::Response {
                    description: "Deleted".to_owned(),
                    ..Default::default()
                }),
            );
            responses.extend([
                problem_response(doc, StatusCode::NOT_FOUND),
                problem_response(doc, StatusCode::CONFLICT),
            ]);
            (
                m.item_path.clone(),
                OperationType::Delete,
                format!("Delete a {}", R::NAME),
            )
        }
    };
    let mut extensions = apistos::IndexMap::new();
    let mut description = None;
    if o.admin_only {
        responses.extend([
            problem_response(doc, StatusCode::UNAUTHORIZED),
            problem_response(doc, StatusCode::FORBIDDEN),
        ]);
        extensions.insert("x-admin-only".to_owned(), serde_json::Value::Bool(true));
        description = Some("Administrators only.".to_owned());
    }
    // Rules that let anonymous callers in (a public-read resource, `Open`) make the token
    // optional rather than required.
    let anonymous_ok = !o.admin_only
        && match op {
            Operation::Index | Operation::Get => lets_in(shared.rules.read(None)),
            Operation::Patch | Operation::Delete => lets_in(shared.rules.write(None)),
            Operation::Post => shared
                .rules
                .create(None, &mut serde_json::Map::new())
                .is_ok(),
        };
    if o.public {
        extensions.insert("x-public".to_owned(), serde_json::Value::Bool(true));
    } else if !responses.contains_key("401") {
        let (k, v) = problem_response(doc, StatusCode::UNAUTHORIZED);
        responses.insert(k, v);
    }
    let op_doc = OpDoc {
        tags: vec![R::NAME.to_owned()],
        summary: Some(summary),
        description,
        operation_id: Some(op.operation_id(R::NAME)),
        parameters: params,
        request_body: body,
        responses: Responses {
            responses,
            ..Default::default()
        },
        security: if anonymous_ok && !o.public {
            optional_security()
        } else {
            security(o.public)
        },
        extensions,
        ..Default::default()
    };
    doc.add_operation(&path, method, op_doc);
}

fn lets_in(access: crate::perms::Access) -> bool {
    matches!(
        access,
        crate::perms::Access::All | crate::perms::Access::Rows(_)
    )
}

/// Either no credentials or the bearer token: for operations whose rules admit anonymous
/// callers but treat a token, when one is sent, as who is calling.
fn optional_security() -> Option<Vec<apistos::security::SecurityRequirement>> {
    let mut both = security(false).unwrap_or_default();
    both.insert(0, apistos::security::SecurityRequirement::default());
    Some(both)
}

/// The security requirement of an operation: none for public ones, the bearer token otherwise.
fn security(public: bool) -> Option<Vec<apistos::security::SecurityRequirement>> {
    if public {
        Some(Vec::new())
    } else {
        Some(vec![apistos::security::SecurityRequirement {
            requirements: BTreeMap::from([(crate::openapi::BEARER_SCHEME.to_owned(), Vec::new())]),
        }])
    }
}

/// The envelope schema around an item schema.
fn page_schema(doc: &mut ApiDoc, item: ReferenceOr<Schema>) -> ReferenceOr<Schema> {
    use schemars::schema::{
        ArrayValidation, InstanceType, ObjectValidation, SchemaObject, SingleOrVec,
    };
    let ReferenceOr::Object(item) = item else {
        return doc.schema::<Page<serde_json::Value>>();
    };
    let pagination = doc.generator().subschema_for::<super::Pagination>();
    let data = Schema::Object(SchemaObject {
        instance_type: Some(SingleOrVec::Single(Box::new(InstanceType::Array))),
        array: Some(Box::new(ArrayValidation {
            items: Some(SingleOrVec::Single(Box::new(item))),
            ..Default::default()
        })),
        ..Default::default()
    });
    let mut object = ObjectValidation::default();
    object.properties.insert("data".to_owned(), data);
    object
        .properties
        .insert("pagination".to_owned(), pagination);
    object.required.insert("data".to_owned());
    object.required.insert("pagination".to_owned());
    ReferenceOr::Object(Schema::Object(SchemaObject {
        instance_type: Some(SingleOrVec::Single(Box::new(InstanceType::Object))),
        object: Some(Box::new(object)),
        ..Default::default()
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_are_normalized() {
        assert_eq!(
            normalize_prefix("/api/critters/"),
            ("/api/critters/".to_owned(), vec![])
        );
        assert_eq!(
            normalize_prefix("api/critters"),
            ("/api/critters/".to_owned(), vec![])
        );
        assert_eq!(
            normalize_prefix("/api/users/<uuid:user_id>/posts/"),
            (
                "/api/users/{user_id}/posts/".to_owned(),
                vec!["user_id".to_owned()]
            )
        );
        assert_eq!(
            normalize_prefix("/api/users/{user_id}/posts/"),
            (
                "/api/users/{user_id}/posts/".to_owned(),
                vec!["user_id".to_owned()]
            )
        );
    }
}
