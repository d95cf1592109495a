//! The smallest crudforge application: notes that every signed-in user reads and only their
//! author changes, the user system, and the command line (`minimal --help`).
//! `docs/getting-started.md` walks through this file.

use chrono::{DateTime, Utc};
use crudforge::prelude::*;
use diesel::prelude::*;
use uuid::Uuid;

/// A note: read by every signed-in user, changed and deleted by its author alone.
#[derive(Queryable, Selectable, Resource)]
#[diesel(table_name = notes)]
#[resource(model_first, rules(write = "author_id = @me"))]
struct Note {
    id: Uuid,
    created_at: DateTime<Utc>,
    updated_at: DateTime<Utc>,
    /// Who wrote it: the server sets it to the caller.
    #[resource(set = me)]
    author_id: Uuid,
    #[resource(min_len = 1, max_len = 200)]
    title: String,
    body: Option<String>,
}

/// The folder `make-migrations` writes, embedded in the binary.
const MIGRATIONS: AppMigrations = embed_migrations!("migrations");

/// The API every command builds on: the users and the notes.
fn api(config: Config, db: Database) -> Result<Api, BoxError> {
    Ok(Api::new(config, db)?
        .mount(UserBlueprint::default())?
        .mount(Note::blueprint("/api/notes/"))?)
}

fn main() -> std::process::ExitCode {
    App::new("minimal", api).migrations(|| MIGRATIONS).main()
}
