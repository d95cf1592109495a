//! The reference application's API: models, handlers and routes, one feature a file.
//!
//! | Module | What it holds |
//! |---|---|
//! | [`schema`] | the Diesel tables |
//! | [`users`] | the user model (profile fields, soft delete, display name) |
//! | [`profile`] | the public user schema and `GET /api/user/me` |
//! | [`login`] | the login hook (domain access) and token login |
//! | `user_path` | the user named in a `/api/user/{user_id}/...` path |
//! | [`settings`] | per-user settings |
//! | [`invites`] | the invite model and its endpoints |
//! | [`recovery`] | password recovery |
//! | [`domains`] | the domain model |
//! | [`critters`] | the Critter demo resource |
//! | [`habitats`] | habitats, which critters belong to |
//! | [`visits`] | visits to critters, with rules written as expressions |
//! | [`routes`] | what is mounted where |
//!
//! The module itself holds what they share: the migrations and the current time ([`now`]).

pub mod critters;
pub mod domains;
pub mod habitats;
pub mod invites;
pub mod login;
pub mod profile;
pub mod recovery;
pub mod routes;
pub mod schema;
pub mod settings;
mod user_path;
pub mod users;
pub mod visits;

use chrono::{DateTime, SubsecRound, Utc};
use crudforge::prelude::AppMigrations;

/// The reference application's migrations (`migrations/sqlite` and `migrations/postgres`),
/// run after the library's.
pub fn migrations() -> AppMigrations {
    MIGRATIONS
}

const MIGRATIONS: AppMigrations = crudforge::embed_migrations!("migrations");

/// The current time, cut to the microseconds both databases store, so that a time the
/// application keeps in memory equals the same time read back.
pub fn now() -> DateTime<Utc> {
    Utc::now().trunc_subsecs(6)
}
