//! The `Api` builder: mounts blueprints and built-in routes on an actix-web `App`, with
//! problem+json errors everywhere, query statistics, the OpenAPI description and docs page.

use crate::config::{Config, ConfigError, Secret};
use crate::db::monitor::QueryStats;
use crate::db::Database;
use crate::error::{self, Error, Problem, ProblemError, PROBLEM_CONTENT_TYPE};
use crate::openapi::{self, ApiDoc};
use actix_web::body::{BoxBody, MessageBody};
use actix_web::dev::{ServiceFactory, ServiceRequest, ServiceResponse};
use actix_web::http::header::{self, HeaderValue};
use actix_web::middleware::{from_fn, Next};
use actix_web::{web, App, HttpRequest, HttpResponse};
use std::sync::{Arc, OnceLock};

/// Shared state every handler can reach as `web::Data<ApiState>`.
#[derive(Debug)]
pub struct ApiState {
    /// The configuration.
    pub config: Arc<Config>,
    /// The database.
    pub db: Database,
    /// The key that signs tokens.
    pub signing_key: Secret,
    /// Token signing and verification.
    pub tokens: crate::auth::Tokens,
}

impl ApiState {
    /// The state of the `Api` serving `req`.
    ///
    /// # Errors
    ///
    /// 500 when the route is not mounted on an [`Api`].
    pub fn of(req: &HttpRequest) -> Result<&ApiState, Error> {
        req.app_data::<web::Data<ApiState>>()
            .map(|d| d.get_ref())
            .ok_or_else(|| Error::Internal("the route is not mounted on an Api".into()))
    }
}

/// Something an [`Api`] can mount: it registers routes and documents them.
pub trait Mount: Send + Sync + 'static {
    /// Adds the routes to the application.
    fn register(&self, cfg: &mut web::ServiceConfig);
    /// Adds the operations to the OpenAPI description.
    fn document(&self, doc: &mut ApiDoc);
}

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
        let tokens = crate::auth::Tokens::new(
            &signing_key,
            config.jwt_access_token_expires,
            config.jwt_refresh_token_expires,
        );
        Ok(Api {
            state: Arc::new(ApiState {
                config: Arc::new(config),
                db,
                signing_key,
                tokens,
            }),
            mounts: Vec::new(),
            spec: Arc::new(OnceLock::new()),
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

    /// The OpenAPI description of everything mounted.
    pub fn openapi(&self) -> apistos::OpenApi {
        let cfg = &self.state.config;
        let mut doc =
            ApiDoc::new(&cfg.api_title, &cfg.api_version).with_max_page_size(cfg.max_page_size);
        if cfg.health_endpoint_enabled {
            crate::health::document(&mut doc, &cfg.health_endpoint_path);
        }
        for m in &self.mounts {
            m.document(&mut doc);
        }
        doc.finish()
    }

    /// The OpenAPI description as JSON text (built once).
    pub fn openapi_json(&self) -> Arc<str> {
        self.spec
            .get_or_init(|| {
                serde_json::to_string_pretty(&self.openapi())
                    .unwrap_or_else(|_| "{}".to_owned())
                    .into()
            })
            .clone()
    }

    /// Registers every route on a service config (for embedding in an existing `App`; the
    /// error middleware of [`Api::app`] is then the caller's to add).
    pub fn configure(&self, cfg: &mut web::ServiceConfig) {
        let state = &self.state;
        let limit = state.config.max_body_size;
        cfg.app_data(web::Data::from(state.clone()))
            .app_data(web::Data::new(state.db.clone()))
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
        if state.config.health_endpoint_enabled {
            cfg.service(
                web::resource(state.config.health_endpoint_path.as_str())
                    .route(web::get().to(crate::health::health)),
            );
        }
        openapi::register(cfg, &state.config.api_title, self.openapi_json());
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
        App::new()
            .app_data(web::Data::from(self.state.clone()))
            .wrap(from_fn(problem_layer))
            .configure(move |cfg| this.configure(cfg))
            .default_service(web::to(not_found))
    }

    /// Serves the application on `addr` until the process is stopped.
    ///
    /// # Errors
    ///
    /// The address cannot be bound.
    pub async fn serve(self, addr: &str) -> std::io::Result<()> {
        let api = self.clone();
        actix_web::HttpServer::new(move || api.app())
            .bind(addr)?
            .run()
            .await
    }
}

async fn not_found(req: HttpRequest) -> Result<HttpResponse, Error> {
    Err(Error::NotFound(
        format!("No resource exists at {}.", req.path()).into(),
    ))
}

/// Turns every error response into problem+json with `instance` (and `debug` in debug mode),
/// and, with query monitoring on, measures the request's queries into `Server-Timing`.
async fn problem_layer(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
    let path = req.path().to_owned();
    let state = req.app_data::<web::Data<ApiState>>().cloned();
    let debug = state.as_ref().is_some_and(|s| s.config.debug);
    let stats = state
        .as_ref()
        .filter(|s| s.db.monitoring())
        .map(|_| Arc::new(QueryStats::default()));
    if let Some(stats) = &stats {
        actix_web::HttpMessage::extensions_mut(&req).insert(stats.clone());
    }
    // The request runs as a task of its own, so it finishes even when the connection's
    // future is dropped (a client that goes away): diesel-async cannot drop an unfinished
    // SQLite query on actix-web's single-threaded workers.
    let task = match stats.clone() {
        Some(stats) => {
            actix_web::rt::spawn(async move { QueryStats::scope(stats, next.call(req)).await })
        }
        None => actix_web::rt::spawn(next.call(req)),
    };
    let result = task
        .await
        .map_err(|e| actix_web::Error::from(Error::Internal(format!("request task: {e}"))))?;
    // Handler and extractor errors arrive as responses; an `Err` here comes from another
    // middleware and already renders as problem+json through its `ResponseError`.
    let mut res = result?.map_into_boxed_body();
    if let Some(stats) = &stats {
        let value = format!(
            "db;dur={:.3};desc=\"{} queries\"",
            stats.total().as_secs_f64() * 1000.0,
            stats.count()
        );
        if let Ok(v) = HeaderValue::from_str(&value) {
            res.headers_mut()
                .insert(header::HeaderName::from_static("server-timing"), v);
        }
    }
    let status = res.status();
    if !(status.is_client_error() || status.is_server_error()) {
        return Ok(res);
    }
    let known = res.response().extensions().get::<Problem>().cloned();
    // A handler's own error body (JSON, such as the health report) stays; bare or plain-text
    // error responses from the framework become problems.
    let own_body = res
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| !ct.starts_with("text/plain") && !ct.starts_with(PROBLEM_CONTENT_TYPE));
    if known.is_none() && own_body {
        return Ok(res);
    }
    let mut problem = known.unwrap_or_else(|| Problem::from_status(status));
    if problem.instance.is_empty() {
        problem.instance = path;
    }
    let body = problem.to_body(debug);
    let (req, old) = res.into_parts();
    let mut new = HttpResponse::build(status);
    for (name, value) in old.headers() {
        if name != header::CONTENT_TYPE && name != header::CONTENT_LENGTH {
            new.append_header((name.clone(), value.clone()));
        }
    }
    new.insert_header((
        header::CONTENT_TYPE,
        HeaderValue::from_static(PROBLEM_CONTENT_TYPE),
    ));
    let mut new = new.body(body);
    new.extensions_mut().insert(problem);
    Ok(ServiceResponse::new(req, new))
}

impl From<Problem> for actix_web::Error {
    fn from(p: Problem) -> Self {
        ProblemError(p).into()
    }
}
