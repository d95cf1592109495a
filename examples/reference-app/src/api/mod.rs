//! The reference application's API: models, handlers and routes.

#[path = "settings.rs"]
pub mod handlers;
#[path = "users.rs"]
pub mod models;
pub mod routes;

use diesel_migrations::EmbeddedMigrations;

const SQLITE: EmbeddedMigrations = diesel_migrations::embed_migrations!("migrations/sqlite");
const POSTGRES: EmbeddedMigrations = diesel_migrations::embed_migrations!("migrations/postgres");

/// The reference application's migrations, run after the library's.
pub fn migrations() -> crudforge::db::AppMigrations {
    crudforge::db::AppMigrations {
        sqlite: SQLITE,
        postgres: POSTGRES,
    }
}
