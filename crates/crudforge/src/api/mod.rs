//! The `Api` builder: mounts blueprints and built-in routes on an actix-web `App`, with
//! problem+json errors everywhere, request ids, metrics, CORS, query statistics, readiness,
//! the OpenAPI description and docs page; serves it with a graceful shutdown (`serve`). The
//! optional surfaces plug in through `surface`.

use crate::config::{Config, ConfigError, SchemaCheck};
use crate::db::indexes::IndexSpec;
use crate::db::schema_check::{self, SchemaDrift, SchemaError, TableSpec};
use crate::db::{Database, DbError};
use crate::error::{self, Error};
use crate::middleware;
use crate::openapi::{self, ApiDoc};
use crate::operation::OperationIds;
use crate::readiness::{Phase, Readiness};
use actix_web::body::MessageBody;
use actix_web::dev::{ServiceFactory, ServiceRequest, ServiceResponse};
use actix_web::http::Method;
use actix_web::middleware::{from_fn, Condition};
use actix_web::{web, App, HttpRequest, HttpResponse};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

mod serve;
mod surface;

pub(crate) use crate::mount::{IntoMount, Mount, MountError};
pub(crate) use crate::state::ApiState;
pub(crate) use surface::{Chore, Entry, Surface};

/// Builds the HTTP application: health check, OpenAPI description, docs page and every
/// mounted blueprint, on one database.
///
/// ```no_run
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let config = crudforge::Config::from_env()?;
/// let db = crudforge::Database::connect(&config).await?;
/// db.run_migrations(None).await?;
/// let api = crudforge::Api::new(config, db)?;
/// api.serve("127.0.0.1:8080").await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Api {
    state: Arc<ApiState>,
    mounts: Vec<Arc<dyn Mount>>,
    spec: Arc<OnceLock<Arc<str>>>,
    operation_ids: Arc<OnceLock<Arc<OperationIds>>>,
    readiness: Readiness,
    /// Whether [`Api::apply_schema_check`] has run (shared by clones), so that the server's
    /// background task does not compare again.
    schema_checked: Arc<AtomicBool>,
    /// What the optional surfaces' builder methods set on the whole API (where the admin
    /// page is mounted), each under its own type.
    #[allow(
        dead_code,
        reason = "a door of the seam: a build without optional surfaces leaves it unused"
    )]
    pub(crate) ext: crate::state::Extensions,
}

impl std::fmt::Debug for Api {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Api")
            .field("state", &self.state)
            .field("mounts", &self.mounts.len())
            .finish()
    }
}

impl Api {
    /// A new API over `db`. Resolves the signing key (see [`Config::signing_key`]).
    ///
    /// # Errors
    ///
    /// An invalid configuration (for example an unsupported `OPENAPI_VERSION`) or an unusable
    /// signing key.
    pub fn new(config: Config, db: Database) -> Result<Api, ConfigError> {
        config.validate()?;
        let signing_key = config.signing_key()?;
        let tokens = crate::jwt::Tokens::new(
            &signing_key,
            config.auth.jwt_access_token_expires,
            config.auth.jwt_refresh_token_expires,
        );
        let mut ext = crate::state::Extensions::default();
        for surface in crate::SURFACES {
            surface.start(&config, &mut ext)?;
        }
        Ok(Api {
            state: Arc::new(ApiState {
                config: Arc::new(config),
                db,
                signing_key,
                tokens,
                ext,
            }),
            mounts: Vec::new(),
            spec: Arc::new(OnceLock::new()),
            operation_ids: Arc::new(OnceLock::new()),
            readiness: Readiness::new(Phase::Ready),
            schema_checked: Arc::new(AtomicBool::new(false)),
            ext: crate::state::Extensions::default(),
        })
    }

    /// Mounts a blueprint (or any [`Mount`]).
    ///
    /// # Errors
    ///
    /// The blueprint's configuration is invalid (for example a prefix parameter or `res_id`
    /// that is not a field of the resource, or an unknown resource name).
    pub fn mount(mut self, m: impl IntoMount) -> Result<Self, MountError> {
        let m = m.into_mount().map_err(MountError)?;
        self.mounts.push(Arc::from(m));
        self.spec = Arc::new(OnceLock::new());
        self.operation_ids = Arc::new(OnceLock::new());
        Ok(self)
    }

    /// The shared state.
    pub fn state(&self) -> &Arc<ApiState> {
        &self.state
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.state.config
    }

    /// The database.
    pub fn db(&self) -> &Database {
        &self.state.db
    }

    /// The readiness of this API (ready from [`Api::new`] on). An application that migrates
    /// after it starts listening marks it `Readiness::set_starting` first and
    /// `Readiness::set_ready` after; [`Api::server`] marks it draining on SIGTERM or Ctrl-C.
    pub fn readiness(&self) -> &Readiness {
        &self.readiness
    }

    /// Every index the mounted resources declare (`#[resource(index(...))]`, and the unique
    /// index of each `#[resource(unique(...))]`), in mount order, each once. [`IndexSpec::create_sql`] gives the statement for a migration.
    pub fn declared_indexes(&self) -> Vec<IndexSpec> {
        let mut out: Vec<IndexSpec> = Vec::new();
        for spec in self.mounts.iter().flat_map(|m| m.indexes()) {
            if !out.contains(&spec) {
                out.push(spec);
            }
        }
        out
    }

    /// Checks that the database has every [declared index](Api::declared_indexes) and logs a
    /// warning (target `crudforge::indexes`) naming each missing one with the statement that
    /// creates it; returns the missing ones. It never creates them: the schema belongs to
    /// migrations. A serving API checks them as part of the [schema
    /// check](Api::apply_schema_check), which [`Api::check_schema`] runs on demand.
    ///
    /// # Errors
    ///
    /// The database cannot be reached or a catalog query fails.
    pub async fn check_indexes(&self) -> Result<Vec<IndexSpec>, DbError> {
        crate::db::indexes::warn_missing(&self.state.db, &self.declared_indexes()).await
    }

    /// The table of every model-first resource mounted (`#[resource(model_first)]`), in mount
    /// order, each table once (the first resource mounted over it describes it): what
    /// [`make_migrations`](crate::migrations::make_migrations) writes migrations for.
    pub fn model_tables(&self) -> Vec<&'static crate::db::ddl::ModelTable> {
        let mut out: Vec<&'static crate::db::ddl::ModelTable> = Vec::new();
        for model in self.mounts.iter().filter_map(|m| m.model()) {
            if !out.iter().any(|t| t.table == model.table) {
                out.push(model);
            }
        }
        out
    }

    /// The full-text index of every searchable resource mounted, each table once.
    pub(crate) fn search_indexes(&self) -> Vec<crate::db::search::SearchIndex> {
        let mut out: Vec<crate::db::search::SearchIndex> = Vec::new();
        for t in self.declared_tables() {
            if !t.search.is_empty() && !out.iter().any(|s| s.table == t.table) {
                out.push(crate::db::search::SearchIndex {
                    table: t.table,
                    members: t.search,
                });
            }
        }
        out
    }

    /// The table of every mounted resource with the fields it expects there, in mount order
    /// (a resource mounted twice appears twice; the check reads each table once).
    fn declared_tables(&self) -> Vec<TableSpec> {
        self.mounts.iter().filter_map(|m| m.table()).collect()
    }

    /// Compares the live database with every mounted resource (the user blueprint's model
    /// included) and returns every difference, in mount order, each once: a missing table; per
    /// field, a missing column, a nullability that differs from the field's `Option`, a column
    /// type that cannot hold the field's kind; a missing [declared index](Api::declared_indexes).
    /// Each difference displays as one line, `table.column: what differs`; none means the
    /// schema agrees. It reads the catalog only, whatever `SCHEMA_CHECK` says, and logs nothing:
    /// for a command that prints the lines and exits 0 or 1. See [database.md](https://github.com/crudforge/crudforge/blob/main/docs/database.md) for which
    /// column types fit which field on each backend.
    ///
    /// # Errors
    ///
    /// The database cannot be reached or a catalog query fails.
    pub async fn check_schema(&self) -> Result<Vec<SchemaDrift>, DbError> {
        schema_check::compare(
            &self.state.db,
            &self.declared_tables(),
            &self.declared_indexes(),
        )
        .await
    }

    /// Runs the start-up schema check as `SCHEMA_CHECK` says: `off` compares nothing; `warn`
    /// logs one warning per difference (target `crudforge::schema`; a missing index with the
    /// statement that adds it) and returns them, also when the check itself fails (logged);
    /// `strict` logs each difference as an error and refuses. [`Api::serve`] runs it before
    /// binding when the API is already ready, and [`Api::server`]'s background task once the
    /// API turns ready, unless it has run already: an application that binds first and
    /// migrates after calls it between its migrations and `Readiness::set_ready`, and stops
    /// when it fails.
    ///
    /// # Errors
    ///
    /// With `SCHEMA_CHECK=strict`: the database differs (the error names every difference),
    /// or the check could not run.
    pub async fn apply_schema_check(&self) -> Result<Vec<SchemaDrift>, SchemaError> {
        self.schema_checked.store(true, Ordering::SeqCst);
        match self.state.config.db.schema_check {
            SchemaCheck::Off => Ok(Vec::new()),
            SchemaCheck::Warn => match self.check_schema().await {
                Ok(drifts) => {
                    schema_check::warn(&drifts);
                    Ok(drifts)
                }
                Err(e) => {
                    tracing::warn!(target: "crudforge::schema", error = %e, "cannot check the database schema");
                    Ok(Vec::new())
                }
            },
            SchemaCheck::Strict => {
                let drifts = self.check_schema().await?;
                if drifts.is_empty() {
                    return Ok(drifts);
                }
                for drift in &drifts {
                    tracing::error!(target: "crudforge::schema", "schema drift: {drift}");
                }
                Err(SchemaError::Drift(drifts))
            }
        }
    }

    /// The operation id of every documented route, plus the built-in undocumented ones
    /// (metrics, the description and docs page), for metrics labels and log lines.
    pub(crate) fn operation_ids(&self) -> Arc<OperationIds> {
        self.operation_ids
            .get_or_init(|| {
                let cfg = &self.state.config;
                let mut ids = OperationIds::from_openapi(&self.openapi());
                if cfg.ops.metrics_enabled {
                    ids.add(Method::GET, &cfg.ops.metrics_path, "metrics");
                }
                ids.add(Method::GET, openapi::OPENAPI_PATH, "openapi");
                ids.add(Method::GET, openapi::DOCS_PATH, "docs");
                for surface in crate::SURFACES {
                    surface.operation_ids(self, &mut ids);
                }
                Arc::new(ids)
            })
            .clone()
    }

    /// The OpenAPI description of everything mounted.
    pub fn openapi(&self) -> apistos::OpenApi {
        let cfg = &self.state.config;
        let mut doc = ApiDoc::new(&cfg.http.api_title, &cfg.http.api_version)
            .with_max_page_size(cfg.list.max_page_size)
            .with_filter_max_length(cfg.list.filter_max_length)
            .with_password_min_length(cfg.auth.password_min_length);
        if cfg.ops.health_endpoint_enabled {
            crate::health::document(&mut doc, &cfg.ops.health_endpoint_path);
        }
        crate::readiness::document(&mut doc, &cfg.ops.readiness_path);
        for m in &self.mounts {
            m.document(&mut doc);
        }
        for surface in crate::SURFACES {
            surface.document(self, &mut doc);
        }
        doc.finish()
    }

    /// The OpenAPI description as JSON text (built once).
    pub fn openapi_json(&self) -> Arc<str> {
        self.spec
            .get_or_init(|| {
                let mut spec = serde_json::to_value(self.openapi()).unwrap_or_default();
                openapi::forbid_nul_in_text(&mut spec);
                openapi::polish_for_clients(&mut spec);
                serde_json::to_string_pretty(&spec)
                    .unwrap_or_else(|_| "{}".to_owned())
                    .into()
            })
            .clone()
    }

    /// Registers every route on a service config (for embedding in an existing `App`; the
    /// error middleware of [`Api::app`] is then the caller's to add).
    pub fn configure(&self, cfg: &mut web::ServiceConfig) {
        let state = &self.state;
        let limit = state.config.http.max_body_size;
        cfg.app_data(web::Data::from(state.clone()))
            .app_data(web::Data::new(state.db.clone()))
            .app_data(web::Data::new(self.readiness.clone()))
            .app_data(web::Data::new(crate::crud::relations::Readers::new(
                self.mounts.iter().filter_map(|m| m.reader()),
            )))
            .app_data(web::Data::new(crate::auth::key_scope::Resources::new(
                self.mounts.iter().filter_map(|m| m.resource()),
            )))
            .app_data(
                web::JsonConfig::default()
                    .limit(limit)
                    .error_handler(error::json_error),
            )
            .app_data(web::PayloadConfig::new(limit))
            .app_data(
                web::FormConfig::default()
                    .limit(limit)
                    .error_handler(error::form_error),
            )
            .app_data(web::QueryConfig::default().error_handler(error::query_error))
            .app_data(web::PathConfig::default().error_handler(error::path_error));
        if state.config.ops.health_endpoint_enabled {
            cfg.service(
                web::resource(state.config.ops.health_endpoint_path.as_str())
                    .route(web::get().to(crate::health::health)),
            );
        }
        cfg.service(
            web::resource(state.config.ops.readiness_path.as_str())
                .route(web::get().to(crate::readiness::ready)),
        );
        if state.config.ops.metrics_enabled {
            cfg.service(
                web::resource(state.config.ops.metrics_path.as_str())
                    .route(web::get().to(metrics_route)),
            );
        }
        openapi::register(cfg, &state.config.http.api_title, self.openapi_json());
        for surface in crate::SURFACES {
            surface.register(self, cfg);
        }
        for m in &self.mounts {
            m.register(cfg);
        }
    }

    /// The complete actix-web application.
    pub fn app(
        &self,
    ) -> App<
        impl ServiceFactory<
            ServiceRequest,
            Config = (),
            Response = ServiceResponse<impl MessageBody>,
            Error = actix_web::Error,
            InitError = (),
        >,
    > {
        let cors = crate::cors::middleware(&self.state.config);
        // Wrapped from the inside out: the last is the first to see a request.
        self.inner_app()
            .wrap(from_fn(middleware::request_timeout))
            .wrap(from_fn(middleware::own_task))
            .wrap(from_fn(middleware::query_timing))
            .wrap(Condition::new(cors.is_some(), cors.unwrap_or_default()))
            .wrap(from_fn(middleware::problems))
            .wrap(from_fn(crate::metrics::track))
            .wrap(from_fn(crate::logging::access_log))
            .wrap(from_fn(crate::request_id::request_id))
    }

    /// The API's routes alone, without the middleware that faces the outside (access log,
    /// metrics, CORS, timeouts, request ids): what [`Api::app`] wraps, and what a surface that
    /// reads as a principal in process calls (webhooks render each row as their principal's
    /// `GET`).
    pub(crate) fn inner_app(
        &self,
    ) -> App<
        impl ServiceFactory<
            ServiceRequest,
            Config = (),
            Response = ServiceResponse<impl MessageBody>,
            Error = actix_web::Error,
            InitError = (),
        >,
    > {
        let this = self.clone();
        App::new()
            .app_data(web::Data::from(self.state.clone()))
            .app_data(web::Data::from(self.operation_ids()))
            .configure(move |cfg| this.configure(cfg))
            .default_service(web::to(not_found))
    }

    /// Forgets the operation ids worked out so far: a surface's builder method changed the
    /// routes.
    #[allow(
        dead_code,
        reason = "a door of the seam: a build without optional surfaces leaves it unused"
    )]
    pub(crate) fn routes_changed(&mut self) {
        self.operation_ids = Arc::new(OnceLock::new());
    }

    /// The mounts, in the order they were mounted.
    pub(crate) fn mounts(&self) -> &[Arc<dyn Mount>] {
        &self.mounts
    }
}

async fn not_found(req: HttpRequest) -> Result<HttpResponse, Error> {
    Err(Error::NotFound(
        format!("No resource exists at {}.", req.path()).into(),
    ))
}

/// `GET METRICS_PATH`: the Prometheus text format; 401 without the configured bearer token.
async fn metrics_route(req: HttpRequest, state: web::Data<ApiState>) -> HttpResponse {
    if !crate::metrics::authorized(&req, state.config.ops.metrics_token.as_ref()) {
        return crate::metrics::unauthorized();
    }
    crate::metrics::text(state.db.pool_status(), &state.config.http.api_version)
}
