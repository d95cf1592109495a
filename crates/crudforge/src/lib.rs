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
//! | [`db`] | backends, pools, portable SQL types, migrations, query monitoring |
//! | [`error`] | the problem+json error type |
//! | [`health`] | the health endpoint |
//! | [`json`] | JSON request bodies for hand-written handlers |
//! | [`openapi`] | the OpenAPI description and docs page |
//! | [`crud`] | generated CRUD: resources, blueprints, filters, pagination |
//! | [`auth`] | JWTs, passwords, the current user |
//! | [`perms`] | permission rules |
//! | [`users`] | the user system: users, roles, tokens, settings, domains, login |
//! | [`api`] | the builder that mounts everything on an actix-web `App` |

extern crate self as crudforge;

pub mod api;
pub mod auth;
pub mod config;
pub mod crud;
pub mod db;
pub mod error;
pub mod health;
pub mod json;
pub mod openapi;
pub mod perms;
pub mod users;

pub use api::{Api, ApiState, IntoMount, Mount, MountError};
pub use config::{Config, SqliteSynchronous};
pub use crud::{CrudBlueprint, OpOptions, Operation, Resource};
pub use crudforge_derive::Resource;
pub use db::sql_types;
pub use db::{Backend, Conn, Database, DbOptions};
pub use error::{Error, Problem, Result};
pub use json::Json;

/// Items the derive macro's expansion names; not part of the public API.
#[doc(hidden)]
pub mod __private {
    pub use actix_web;
    pub use apistos;
    pub use chrono;
    pub use diesel;
    pub use diesel_async;
    pub use inventory;
    pub use schemars;
    pub use serde;
    pub use serde_json;
    pub use uuid;
}
