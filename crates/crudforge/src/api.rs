//! The `Api` builder: mounts blueprints and built-in routes on an actix-web `App`, with
//! problem+json errors everywhere, query statistics, the OpenAPI description and docs page.

use crate::config::{Config, ConfigError};
use crate::db::Database;
use crate::error::{self, Error};
use crate::middleware;
use crate::openapi::{self, ApiDoc};
use actix_web::body::MessageBody;
use actix_web::dev::{ServiceFactory, ServiceRequest, ServiceResponse};
use actix_web::middleware::from_fn;
use actix_web::{web, App, HttpRequest, HttpResponse};
use std::sync::{Arc, OnceLock};

pub use crate::mount::{IntoMount, Mount, MountError};
pub use crate::state::ApiState;

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
        let tokens = crate::auth::tokens::Tokens::new(
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
            .wrap(from_fn(middleware::request_timeout))
            .wrap(from_fn(middleware::own_task))
            .wrap(from_fn(middleware::query_timing))
            .wrap(from_fn(middleware::problems))
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
        // A request's head must arrive within 5 seconds (actix-web's default, kept), the whole
        // request within REQUEST_TIMEOUT (middleware::request_timeout).
        actix_web::HttpServer::new(move || api.app())
            .client_request_timeout(std::time::Duration::from_secs(5))
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
