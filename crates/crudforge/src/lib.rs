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
//! The types every application names are at the root: [`Api`] (the builder that mounts
//! everything on an actix-web `App`), [`Config`], [`Database`], [`Resource`] (the trait and
//! its derive), [`CrudBlueprint`], [`Error`] and [`Result`], [`Json`] (JSON bodies for
//! hand-written handlers), [`ApiState`] (the state of a running API, for hand-written
//! handlers) and [`Mount`] / [`IntoMount`] / [`MountError`]. Everything else has one home:
//!
//! | Module | Purpose |
//! |---|---|
//! | [`config`] | the configuration keys in sections, from the environment or code; the same reader for an application's own keys |
//! | [`error`] | the problem+json error type |
//! | [`db`] | backends, pools, connections and their transactions, declared indexes, schema drift |
//! | [`sql_types`] | portable SQL types for `table!` (UUIDs, timestamps, JSON on both backends) |
//! | [`migrations`] | migrations written from model-first resources (and the description of their tables), and a folder of migrations run |
//! | [`field`] | field metadata: kinds and flags of a resource's fields |
//! | [`condition`] | filter values, operators and condition trees |
//! | [`auth`] | JWTs, passwords, the current user (extractors), throttling of failed checks |
//! | [`openapi`] | the OpenAPI description and docs page |
//! | [`perms`] | permission rules |
//! | [`metrics`] | the Prometheus registry, for metrics of an application's own |
//! | [`logging`] | the log subscriber (text or JSON) and one line per request |
//! | [`crud`] | generated CRUD: resources, blueprints, options, custom routes, lifecycle hooks, the registry of resources by name |
//! | [`jobs`] | durable jobs and schedules (the `jobs` feature) |
//! | [`mail`] | mail enqueued in a transaction and sent by jobs (the `mail` feature) |
//! | [`users`] | the user system: users, roles, tokens, settings, domains, login, and their tables ([`users::schema`]) |
//! | [`cli`] | the command line every application embeds: serve, migrate, schema check, create-user, create-token, grant-role, revoke-role, print-indexes |
//!
//! [`prelude`] gathers the names an application writes most: `use crudforge::prelude::*;`.
//!
//! [The architecture guide](https://github.com/crudforge/crudforge/blob/main/docs/architecture.md)
//! draws how they fit together; [the guides' index](https://github.com/crudforge/crudforge/blob/main/docs/README.md)
//! lists every guide.
//!
//! # Features
//!
//! | Feature | Default | What it compiles in |
//! |---|---|---|
//! | `sqlite` | yes | SQLite, embedded: diesel's SQLite backend, the bundled SQLite C library and the generated SQLite queries |
//! | `postgres` | yes | PostgreSQL: diesel-async's PostgreSQL connection (tokio-postgres) and the generated PostgreSQL queries |
//! | `realtime` | no | live updates: the change feed a blueprint offers with `CrudBlueprint::events` (`GET <prefix>events/`, Server-Sent Events) judged by each subscriber's read rules, the events table written in each write's transaction, `LISTEN`/`NOTIFY` across instances on PostgreSQL ([guide](https://github.com/crudforge/crudforge/blob/main/docs/realtime.md)) |
//! | `admin` | no | the admin page, mounted with `Api::admin`: a single-page app embedded in the binary that works through the public API only, with the signed-in user's rights ([guide](https://github.com/crudforge/crudforge/blob/main/docs/admin.md)) |
//! | `files` | no | file members (`#[resource(file(...))]`, one file or a bounded `FileList`): multipart uploads recognized by content, downloads under the row's read rules with signed links, `files gc` ([guide](https://github.com/crudforge/crudforge/blob/main/docs/files.md)) |
//! | `s3` | no | `files` kept in S3-compatible object storage (`FILES_STORAGE=s3://...`, through `object_store`); turns on `files` |
//! | `thumbnails` | no | thumbnails of image file members in declared boxes (`?thumb=WxH`), made on first request and kept, through `image`; turns on `files` |
//! | `export` | no | a list exported as CSV or NDJSON, streamed in keyset chunks under the list's rules (`CrudBlueprint::export`), and CSV or NDJSON files imported through the batch create's path (`CrudBlueprint::import`); the command line's `export` and `import` ([guide](https://github.com/crudforge/crudforge/blob/main/docs/data.md)) |
//! | `jobs` | no | durable jobs in the application's own database, enqueued in a request's transaction (`jobs::Job`), claimed with leases by every instance and retried with backoff (`Api::job`); cron schedules run once per tick across instances (`Api::schedule`); the server's own periodic work (purging, pruning) as schedules; the command line's `jobs` ([guide](https://github.com/crudforge/crudforge/blob/main/docs/jobs.md)) |
//! | `mail` | no | mail sent by durable jobs (a committed request's mail is never lost, a rolled-back one's never leaves) over SMTP with STARTTLS or implicit TLS (`lettre`), or into files or the log; templates per flow and locale, HTML auto-escaped (`minijinja`); the account flows beside every user blueprint (address verification, e-mail change with a revert link, a forgotten password, sign-in links) with single-use hashed tokens and limits; turns on `jobs` ([guide](https://github.com/crudforge/crudforge/blob/main/docs/mail.md)) |
//! | `providers` | no | sign-in through OpenID Connect and OAuth 2.0 providers by configuration alone (`AUTH_PROVIDERS`): any OpenID provider from its issuer, presets for ten common ones; PKCE, `state`, `nonce`, `iss`; a sealed single-use ticket; ID tokens checked against the provider's keys; accounts linked by (provider, subject) and by verified addresses; roles from claims (`openidconnect`, `oauth2`, `reqwest`) ([guide](https://github.com/crudforge/crudforge/blob/main/docs/auth.md#sign-in-providers)) |
//! | `factors` | no | second factors beside every user blueprint: TOTP (`totp-rs`) with each code accepted once, recovery codes; a challenge at sign-in, tokens at assurance level 2 (`@second_factor` in rules); required per role or domain with a grace period ([guide](https://github.com/crudforge/crudforge/blob/main/docs/auth.md#second-factors)) |
//! | `passkeys` | no | passkeys (`webauthn-rs`, RustCrypto) as a second factor or as the only one, with `factors`; on when `AUTH_PASSKEY_ORIGINS` names the pages' origins; each ceremony's state in a sealed single-use ticket ([guide](https://github.com/crudforge/crudforge/blob/main/docs/auth.md#passkeys)) |
//! | `history` | no | record history: a blueprint's `history()` writes an entry per written row in the write's own transaction (who, when, the request, the members changed with old and new values, write-only members named, never their values), `GET <item>/history/` under the row's and each member's read rules ([guide](https://github.com/crudforge/crudforge/blob/main/docs/history.md)) |
//! | `webhooks` | no | webhook subscriptions (`Api::webhook`) on resources whose blueprint has `webhooks()`: the change capture read in order, each row rendered as the subscription's principal's `GET` shows it (a row it may not read never sent), signed per Standard Webhooks 1.0, at least once with backoff over about a day, `Retry-After`, dead letters, replays, leases shared by instances under a per-endpoint cap, a guard against private addresses (`reqwest`); turns on `realtime` ([guide](https://github.com/crudforge/crudforge/blob/main/docs/webhooks.md)) |
//!
//! At least one of the two backends must be on. An application on one backend alone compiles
//! that one: `crudforge = { version = "0.1", default-features = false, features = ["sqlite"] }`.
//! A connection string for a backend that is not compiled in is refused when the configuration
//! is read ([`db::Target::parse`]), naming the feature to turn on.
//!
//! The same table is in the crate's `README.md` and the repository's; a test of this crate
//! (`feature_table`) holds all three equal to `[features]` in `Cargo.toml`. On docs.rs every
//! item that a feature gates says which one it needs.

// docs.rs builds with every feature and `--cfg docsrs` on a nightly compiler, whose `doc_cfg`
// marks each item gated by a feature with the features it needs.
#![cfg_attr(docsrs, feature(doc_cfg))]

extern crate self as crudforge;

#[cfg(feature = "admin")]
pub(crate) mod admin;
pub(crate) mod api;
pub mod auth;
mod backends;
pub mod cli;
pub mod condition;
pub mod config;
pub(crate) mod cors;
pub mod crud;
pub mod db;
mod dialect;
pub mod error;
#[cfg(feature = "export")]
pub(crate) mod export;
#[cfg(test)]
mod feature_table;
pub mod field;
#[cfg(feature = "files")]
pub mod files;
pub(crate) mod health;
#[cfg(test)]
mod import_cycles;
#[cfg(feature = "jobs")]
pub mod jobs;
pub(crate) mod json;
#[cfg(feature = "mail")]
pub mod mail;
pub mod limits {
    //! Limits per operation and per door: how much a caller may ask of a route in a window
    //! ([`CrudBlueprint::limit`](crate::CrudBlueprint::limit); see
    //! [configuration.md](https://github.com/crudforge/crudforge/blob/main/docs/configuration.md)).
    pub use crate::crud::limits::{Limit, LimitKey, Limited};
}
#[cfg(feature = "factors")]
pub(crate) mod factors;
#[cfg(feature = "history")]
pub mod history;
mod jwt;
pub mod logging;
pub mod metrics;
pub(crate) mod middleware;
pub mod migrations;
pub(crate) mod mount;
pub(crate) mod net;
pub mod openapi;
pub(crate) mod operation;
pub(crate) mod owner_only;
pub mod perms;
#[cfg(any(feature = "export", feature = "thumbnails"))]
pub(crate) mod places;
pub mod prelude;
#[cfg(feature = "providers")]
pub(crate) mod providers;
pub(crate) mod readiness;
#[cfg(feature = "realtime")]
pub mod realtime;
pub(crate) mod request_id;
mod schema;
pub(crate) mod seal;
pub(crate) mod spent;
pub mod sql_types;
pub(crate) mod state;
pub(crate) mod timestamp;
pub mod users;
#[cfg(feature = "webhooks")]
pub mod webhooks;

pub use api::Api;
pub use config::Config;
pub use crud::{CrudBlueprint, Resource};
pub use crudforge_derive::embed_migrations;
pub use crudforge_derive::Resource;

pub use db::Database;
pub use error::{Error, Result};
pub use json::Json;
pub use mount::{IntoMount, Mount, MountError};
pub use state::ApiState;

// The composition root: the one place that names the optional surfaces compiled in. The core
// reaches them only through the seam's traits, `api::Surface` (the whole API) and
// `crud::shared::Part` (one resource); docs/architecture.md draws it.

/// The optional surfaces compiled into this build, in the order the `Api` calls them.
pub(crate) static SURFACES: &[&dyn api::Surface] = &[
    #[cfg(feature = "realtime")]
    &realtime::Realtime,
    #[cfg(feature = "admin")]
    &admin::Admin,
    #[cfg(feature = "files")]
    &files::Files,
    #[cfg(feature = "jobs")]
    &jobs::Jobs,
    #[cfg(feature = "mail")]
    &mail::MailSurface,
    #[cfg(feature = "providers")]
    &providers::Providers,
    #[cfg(feature = "factors")]
    &factors::Factors,
    #[cfg(feature = "history")]
    &history::History,
    #[cfg(feature = "webhooks")]
    &webhooks::Webhooks,
];

/// Adds to a new blueprint of `R` the parts that surfaces add by themselves, from what the
/// resource declares rather than from a builder method.
pub(crate) fn resource_parts<R: Resource>(parts: &mut crud::shared::Parts<R>) {
    let _ = &parts;
    #[cfg(feature = "files")]
    files::add_part(parts);
}

/// The optional surfaces' subcommands, flattened among the command line's own.
#[derive(Debug, clap::Subcommand)]
pub(crate) enum SurfaceCommand {
    /// Stored files of file members (the `files` feature).
    #[cfg(feature = "files")]
    Files {
        /// What to do.
        #[command(subcommand)]
        command: files::cli::FilesCommand,
    },
    /// Write a resource's rows, those a user may list, to a CSV or NDJSON file (the `export`
    /// feature); `exported N rows` on stderr.
    #[cfg(feature = "export")]
    Export(export::cli::ExportArgs),
    /// Create a resource's rows from a CSV or NDJSON file, as a user (the `export` feature):
    /// all or nothing unless `--chunk-size`; `imported N rows` on stderr, or each refused line.
    #[cfg(feature = "export")]
    Import(export::cli::ImportArgs),
    /// Durable jobs (the `jobs` feature): list them, retry a failed one, cancel a queued
    /// one, run the due ones now.
    #[cfg(feature = "jobs")]
    Jobs {
        /// What to do.
        #[command(subcommand)]
        command: jobs::cli::JobsCommand,
    },
    /// Record history (the `history` feature): check each resource's hash chain.
    #[cfg(feature = "history")]
    History {
        /// What to do.
        #[command(subcommand)]
        command: history::cli::HistoryCommand,
    },
}

impl SurfaceCommand {
    /// Runs the command.
    async fn run(
        self,
        shared: &cli::Shared,
        config: Config,
        console: &mut cli::Console,
    ) -> Result<(), cli::BoxError> {
        let _ = (shared, &config, &console);
        match self {
            #[cfg(feature = "files")]
            SurfaceCommand::Files { command } => {
                files::cli::run(shared, config, command, console).await
            }
            #[cfg(feature = "export")]
            SurfaceCommand::Export(args) => {
                export::cli::export(shared, config, args, console).await
            }
            #[cfg(feature = "export")]
            SurfaceCommand::Import(args) => {
                export::cli::import(shared, config, args, console).await
            }
            #[cfg(feature = "jobs")]
            SurfaceCommand::Jobs { command } => {
                jobs::cli::run(shared, config, command, console).await
            }
            #[cfg(feature = "history")]
            SurfaceCommand::History { command } => {
                history::cli::run(shared, config, command, console).await
            }
        }
    }
}

/// What the surfaces keep set while one row is serialized, until it is dropped: file
/// members' download URLs under the row's own path.
pub(crate) struct Rendering {
    #[cfg(feature = "files")]
    _files: Option<files::UrlBase>,
}

/// What the surfaces set around the serialization of `item` (see [`Rendering`]).
pub(crate) fn rendering<R: Resource>(item: &R) -> Rendering {
    let _ = item;
    Rendering {
        #[cfg(feature = "files")]
        _files: files::UrlBase::for_item(std::any::TypeId::of::<R>(), R::FIELDS, |m| {
            item.key_of(m)
        }),
    }
}

/// What the workspace's benchmarks and tests reach inside the crate; not part of the public
/// API.
#[doc(hidden)]
#[path = "bench.rs"]
pub mod __bench;

/// Items the derive macro's expansion names; not part of the public API.
#[doc(hidden)]
#[path = "private.rs"]
pub mod __private;
