//! crudforge: secure, documented, fast REST APIs over Diesel models.
//!
//! Mount blueprints on an [`Api`] and get CRUD endpoints with filtering and pagination, RFC 7807
//! errors, a health check, an OpenAPI description at `/openapi.json` and a self-hosted docs page
//! at `/docs`, on SQLite (embedded, the default) or PostgreSQL, chosen at run time.
//!
//! ```no_run
//! use crudforge::{Api, Config, Database};
//!
//! #[actix_web::main]
//! async fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     let config = Config::from_env()?; // ORM_DATABASE_URI unset: SQLite in ./data
//!     let db = Database::connect(&config).await?;
//!     db.run_migrations(None).await?;
//!     Api::new(config, db)?.serve("127.0.0.1:8080").await?;
//!     Ok(())
//! }
//! ```
//!
//! | Module | Purpose |
//! |---|---|
//! | [`config`] | the configuration keys, from the environment or code |
//! | [`error`] | the problem+json error type |
//! | [`net`] | IP networks (CIDR) and the client address behind trusted proxies |
//! | [`db`] | backends, pools, portable SQL types, SQL functions, migrations, query monitoring |
//! | [`schema`] | the library's own tables |
//! | [`field`] | field metadata: kinds and flags of a resource's fields |
//! | [`condition`] | filter values, operators and condition trees |
//! | [`json`] | JSON request bodies for hand-written handlers |
//! | [`auth`] | JWTs, passwords, the current user |
//! | [`state`] | the shared state of a running API |
//! | [`openapi`] | the OpenAPI description and docs page |
//! | [`mount`] | what an API mounts |
//! | [`perms`] | permission rules |
//! | [`health`] | the health endpoint |
//! | [`middleware`] | problem+json rendering, query timing, request tasks |
//! | [`request_id`] | request ids: `X-Request-Id`, the request span, `request_id` in problems |
//! | [`operation`] | the operation id of a request, for metrics labels and log lines |
//! | [`metrics`] | Prometheus metrics and their endpoint |
//! | [`cors`] | CORS for the configured origins |
//! | [`logging`] | the log subscriber (text or JSON) and one line per request |
//! | [`readiness`] | the readiness endpoint and graceful shutdown |
//! | [`crud`] | generated CRUD: resources, blueprints, list queries, handlers, lifecycle hooks, ETags and conditional requests, idempotency keys |
//! | [`users`] | the user system: users, roles, tokens, settings, domains, login |
//! | [`api`] | the builder that mounts everything on an actix-web `App` |
//!
//! `docs/architecture.md` in the repository draws how they fit together.

extern crate self as crudforge;

pub(crate) mod api;
pub mod auth;
pub mod condition;
pub mod config;
pub(crate) mod cors;
pub mod crud;
pub mod db;
pub mod error;
pub mod field;
pub(crate) mod health;
#[cfg(test)]
mod import_cycles;
pub(crate) mod json;
mod jwt;
pub mod logging;
pub mod metrics;
pub(crate) mod middleware;
pub(crate) mod mount;
pub mod net;
pub mod openapi;
pub(crate) mod operation;
pub mod perms;
pub(crate) mod readiness;
pub(crate) mod request_id;
pub mod schema;
pub mod sql_types;
pub(crate) mod state;
pub(crate) mod timestamp;
pub mod users;

pub use api::Api;
pub use config::Config;
pub use crud::{CrudBlueprint, Resource};
pub use crudforge_derive::Resource;

pub use db::Database;
pub use error::{Error, Result};
pub use json::Json;
pub use mount::{IntoMount, Mount, MountError};
pub use state::ApiState;

/// What the workspace's benchmarks and tests reach inside the crate; not part of the public
/// API.
#[doc(hidden)]
#[path = "bench.rs"]
pub mod __bench;

/// Items the derive macro's expansion names; not part of the public API.
#[doc(hidden)]
#[path = "private.rs"]
pub mod __private;
