//! The `Api` builder: mounts blueprints and built-in routes on an actix-web `App`, with
//! problem+json errors everywhere, request ids, metrics, CORS, query statistics, readiness,
//! the OpenAPI description and docs page; serves it with a graceful shutdown.

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

pub(crate) use crate::mount::{IntoMount, Mount, MountError};
pub(crate) use crate::state::ApiState;

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

/// What an optional surface adds to the whole API: the seam's side for the API, as
/// [`Part`](crate::crud::shared::Part) is for one resource. The crate root lists the surfaces
/// compiled in (`SURFACES`); the `Api` calls each hook at its moment and names none of them.
/// Every hook does nothing by default.
pub(crate) trait Surface: Sync {
    /// Keeps the surface's state for a new API in `ext` (the feeds' hub, the files' storage).
    ///
    /// # Errors
    ///
    /// A setting of the surface's is invalid.
    fn start(
        &self,
        config: &Config,
        ext: &mut crate::state::Extensions,
    ) -> Result<(), ConfigError> {
        let _ = (config, ext);
        Ok(())
    }

    /// Registers the surface's routes on the whole API (the admin page).
    fn register(&self, api: &Api, cfg: &mut web::ServiceConfig) {
        let _ = (api, cfg);
    }

    /// Adds the operation ids of the surface's routes that the description leaves out.
    fn operation_ids(&self, api: &Api, ids: &mut OperationIds) {
        let _ = (api, ids);
    }

    /// What the surface does in the background while the API serves, until it drains
    /// ([`Api::draining`]).
    fn upkeep<'a>(&self, api: &'a Api) -> Option<futures_util::future::LocalBoxFuture<'a, ()>> {
        let _ = api;
        None
    }

    /// Wraps the purge of one mount's old deleted rows (`purge`, which gives how many), to
    /// do what must go with them (their stored files).
    fn around_purge<'a>(
        &self,
        api: &'a Api,
        mount: &'a dyn Mount,
        purge: futures_util::future::LocalBoxFuture<'a, Result<u64, Error>>,
    ) -> futures_util::future::LocalBoxFuture<'a, Result<u64, Error>> {
        let _ = (api, mount);
        purge
    }

    /// Whether the surface's blueprint parts may record writes (a feed), so that the command
    /// line's writes are told to the mounts ([`Mount::faces`]'s `Recording`s).
    fn records_writes(&self) -> bool {
        false
    }

    /// What the surface does when a graceful shutdown begins (ending event streams).
    fn shutdown(&self, state: &ApiState) {
        let _ = state;
    }

    /// Adds the surface's periodic work to `out` (pruning events): [`Chore`]s, which the
    /// server runs by itself, or a surface that [runs chores](Surface::runs_chores) does.
    fn chores(&self, api: &Api, out: &mut Vec<Chore>) {
        let _ = (api, out);
    }

    /// The work of a job of `kind` that this surface does itself (mail sends its messages as
    /// jobs of its own), with the job's `payload`; `None` for a kind it does not know.
    #[allow(
        dead_code,
        reason = "a door of the seam: a build without the jobs feature leaves it unused"
    )]
    fn job<'a>(
        &self,
        api: &'a Api,
        kind: &str,
        payload: &'a str,
    ) -> Option<futures_util::future::LocalBoxFuture<'a, Result<(), Error>>> {
        let _ = (api, kind, payload);
        None
    }

    /// Adds what the surface [registers](Surface::register) to the description (the mail
    /// flows' routes).
    fn document(&self, api: &Api, doc: &mut ApiDoc) {
        let _ = (api, doc);
    }

    /// In the transaction that creates an account on a user blueprint (a sign-up, an
    /// administrator's create): what the surface writes with it (the mail that asks to verify
    /// the address), so that it is kept only if the account is.
    fn account_created<'a>(
        &self,
        state: &'a ApiState,
        conn: &'a mut crate::db::Conn,
        user: uuid::Uuid,
        email: &'a str,
    ) -> Option<futures_util::future::LocalBoxFuture<'a, Result<(), Error>>> {
        let _ = (state, conn, user, email);
        None
    }

    /// Before a login issues tokens to `user`, whose password matched: the surface's refusal,
    /// if it has one (an address not verified while verification is required).
    fn admits<'a>(
        &self,
        state: &'a ApiState,
        user: uuid::Uuid,
    ) -> Option<futures_util::future::LocalBoxFuture<'a, Result<(), Error>>> {
        let _ = (state, user);
        None
    }

    /// Whether this surface runs the API's [`Chore`]s itself, in its
    /// [upkeep](Surface::upkeep) (the jobs: as schedules, once per tick across instances),
    /// so that the server does not run them on each instance.
    fn runs_chores(&self) -> bool {
        false
    }
}

/// A periodic piece of the server's own work (purging old soft-deleted rows, pruning
/// events): its name, how often it runs, and what it does (how many rows it removed).
#[derive(Clone, Copy)]
pub(crate) struct Chore {
    /// Its name, unique among the chores (`purge_deleted`).
    pub(crate) name: &'static str,
    /// How often it runs.
    pub(crate) every: std::time::Duration,
    /// Its work: how many rows it removed.
    pub(crate) run:
        for<'a> fn(&'a Api) -> futures_util::future::LocalBoxFuture<'a, Result<u64, Error>>,
}

impl std::fmt::Debug for Chore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Chore")
            .field("name", &self.name)
            .field("every", &self.every)
            .finish_non_exhaustive()
    }
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
        let this = self.clone();
        let cors = crate::cors::middleware(&self.state.config);
        // Wrapped from the inside out: the last is the first to see a request.
        App::new()
            .app_data(web::Data::from(self.state.clone()))
            .app_data(web::Data::from(self.operation_ids()))
            .wrap(from_fn(middleware::request_timeout))
            .wrap(from_fn(middleware::own_task))
            .wrap(from_fn(middleware::query_timing))
            .wrap(Condition::new(cors.is_some(), cors.unwrap_or_default()))
            .wrap(from_fn(middleware::problems))
            .wrap(from_fn(crate::metrics::track))
            .wrap(from_fn(crate::logging::access_log))
            .wrap(from_fn(crate::request_id::request_id))
            .configure(move |cfg| this.configure(cfg))
            .default_service(web::to(not_found))
    }

    /// Serves the application on `addr` until the process is stopped (see [`Api::server`]).
    /// When the API is ready (migrated) already, the [schema check](Api::apply_schema_check)
    /// runs first, and with `SCHEMA_CHECK=strict` a differing database stops it before it
    /// binds.
    ///
    /// # Errors
    ///
    /// The address cannot be bound, or `SCHEMA_CHECK=strict` refuses the database (an error
    /// of kind `InvalidData` whose message names every difference).
    pub async fn serve(self, addr: &str) -> std::io::Result<()> {
        if self.readiness.phase() == Phase::Ready {
            self.apply_schema_check()
                .await
                .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
        }
        self.server(addr)?.await
    }

    /// Removes for good the rows of every mounted soft-delete resource that were deleted more
    /// than `SOFT_DELETE_RETENTION` seconds ago, and (with the `files` feature) the files they
    /// held; how many rows. Nothing when the setting is 0 (the default: deleted rows are kept).
    /// [`Api::server`] runs it in the background.
    ///
    /// # Errors
    ///
    /// Database errors (the resources purged before the error stay purged).
    pub async fn purge_deleted(&self) -> Result<u64, Error> {
        let retention = self.state.config.db.soft_delete_retention;
        if retention == 0 {
            return Ok(0);
        }
        let before = chrono::Utc::now() - chrono::Duration::seconds(i64::from(retention));
        let mut purged = 0;
        for m in &self.mounts {
            // Each surface may wrap the purge (the purged rows' files go with them).
            let mut purge = m.purge_deleted(&self.state.db, before);
            for surface in crate::SURFACES {
                purge = surface.around_purge(self, m.as_ref(), purge);
            }
            purged += purge.await?;
        }
        Ok(purged)
    }

    /// Binds `addr` and starts serving; await the returned server to wait until it stops.
    ///
    /// On SIGTERM or Ctrl-C the readiness turns 503 at once, the listener closes, and
    /// requests in flight get up to `SHUTDOWN_TIMEOUT` seconds to finish; on SQLite,
    /// `PRAGMA optimize` runs once more as the shutdown begins.
    ///
    /// In the background, once the API is [ready](Api::readiness) (an application that
    /// migrates after binding marks it so), it runs the [schema
    /// check](Api::apply_schema_check) (declared indexes included) unless the application ran
    /// it already; when `SCHEMA_CHECK=strict` refuses, it logs each difference as an error and
    /// stops the server, which then returns without an error, so an application that wants
    /// the error runs the check itself before it turns ready. Then on SQLite it runs the
    /// database's upkeep
    /// (`crate::db::maintenance::run`: WAL checkpoints, `PRAGMA optimize`) until it drains;
    /// with `SOFT_DELETE_RETENTION`, it also [purges](Api::purge_deleted) old deleted rows.
    ///
    /// # Errors
    ///
    /// The address cannot be bound.
    pub fn server(&self, addr: &str) -> std::io::Result<actix_web::dev::Server> {
        let api = self.clone();
        // A request's head must arrive within 5 seconds (actix-web's default, kept), the whole
        // request within REQUEST_TIMEOUT (middleware::request_timeout).
        let server = actix_web::HttpServer::new(move || api.app())
            .disable_signals()
            .shutdown_timeout(self.state.config.ops.shutdown_timeout)
            .client_request_timeout(std::time::Duration::from_secs(5))
            .bind(addr)?
            .run();
        let handle = server.handle();
        let readiness = self.readiness.clone();
        let db = self.state.db.clone();
        let state = self.state.clone();
        actix_web::rt::spawn(async move {
            stop_signal().await;
            readiness.begin_shutdown();
            // What never finishes by itself (event streams) is ended, so that the requests in
            // flight drain within SHUTDOWN_TIMEOUT.
            for surface in crate::SURFACES {
                surface.shutdown(&state);
            }
            tracing::info!("shutting down: readiness is 503, finishing requests in flight");
            // SQLite's advice for connections about to close. Before the stop: once the server
            // has stopped, the application may exit before this task runs again.
            if let Err(e) = db.optimize().await {
                tracing::warn!(target: "crudforge::db", error = %e, "PRAGMA optimize failed");
            }
            handle.stop(true).await;
        });
        actix_web::rt::spawn(self.clone().background(server.handle()));
        Ok(server)
    }

    /// What a serving API does besides answering: once ready, the schema check (unless the
    /// application ran it; a strict refusal stops the server), then the database's upkeep
    /// until it drains.
    async fn background(self, server: actix_web::dev::ServerHandle) {
        loop {
            match self.readiness.phase() {
                Phase::Starting => {
                    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
                }
                Phase::Ready => break,
                Phase::Draining => return,
            }
        }
        if !self.schema_checked.load(Ordering::SeqCst) {
            if let Err(e) = self.apply_schema_check().await {
                tracing::error!(target: "crudforge::schema", error = %e, "refusing to serve");
                self.readiness.begin_shutdown();
                server.stop(false).await;
                return;
            }
        }
        let readiness = self.readiness.clone();
        let upkeep = crate::db::maintenance::run(self.state.db.clone(), move || {
            readiness.phase() == Phase::Draining
        });
        let surfaces =
            futures_util::future::join_all(crate::SURFACES.iter().filter_map(|s| s.upkeep(&self)));
        // The chores run here, on each instance, unless a surface runs them.
        let chores = if crate::SURFACES.iter().any(|s| s.runs_chores()) {
            Vec::new()
        } else {
            self.chores()
        };
        let chores = futures_util::future::join_all(chores.into_iter().map(|c| self.chore_loop(c)));
        futures_util::future::join3(upkeep, chores, surfaces).await;
    }

    /// The periodic work of the server and of its surfaces: the purge of old soft-deleted
    /// rows (with `SOFT_DELETE_RETENTION`), hourly or every retention period when shorter,
    /// and what each surface adds ([`Surface::chores`]).
    pub(crate) fn chores(&self) -> Vec<Chore> {
        let mut out = Vec::new();
        let retention = self.state.config.db.soft_delete_retention;
        if retention > 0 {
            out.push(Chore {
                name: "purge_deleted",
                every: PURGE_INTERVAL.min(std::time::Duration::from_secs(u64::from(retention))),
                run: |api| Box::pin(api.purge_deleted()),
            });
        }
        for surface in crate::SURFACES {
            surface.chores(self, &mut out);
        }
        out
    }

    /// Runs `chore` now and then at its interval until the API drains.
    async fn chore_loop(&self, chore: Chore) {
        loop {
            match (chore.run)(self).await {
                Ok(0) => {}
                Ok(n) => {
                    tracing::info!(target: "crudforge::db", chore = chore.name, rows = n, "removed old rows")
                }
                Err(e) => {
                    tracing::warn!(target: "crudforge::db", chore = chore.name, error = %e, "periodic work failed")
                }
            }
            let until = std::time::Instant::now() + chore.every;
            while std::time::Instant::now() < until {
                if self.readiness.phase() == Phase::Draining {
                    return;
                }
                tokio::time::sleep(std::time::Duration::from_secs(1).min(chore.every)).await;
            }
        }
    }

    /// Whether the API has begun to drain: the background work of a surface stops then.
    #[allow(
        dead_code,
        reason = "a door of the seam: a build without optional surfaces leaves it unused"
    )]
    pub(crate) fn draining(&self) -> bool {
        self.readiness.phase() == Phase::Draining
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

/// How often a serving API purges old soft-deleted rows (more often with a shorter
/// `SOFT_DELETE_RETENTION`).
const PURGE_INTERVAL: std::time::Duration = std::time::Duration::from_secs(60 * 60);

/// Waits for Ctrl-C, or on Unix also SIGTERM (what orchestrators send).
async fn stop_signal() {
    #[cfg(unix)]
    {
        use actix_web::rt::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = actix_web::rt::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                let _ = actix_web::rt::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = actix_web::rt::signal::ctrl_c().await;
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
