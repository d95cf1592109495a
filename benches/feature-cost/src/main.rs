//! Benchmark server for `benches/callgrind/run.py`: one small resource served three times,
//! identical but for one optional surface each, so that callgrind can count what a change feed
//! (`/feed/`) or a file member (`/file/`) adds to each request of the same resource (`/plain/`),
//! and, built with `--no-default-features` (only `/plain/`), what a resource that uses none of
//! them pays for crudforge's `realtime`, `files` and `export` features being compiled in.
//! `/limited/` is `/plain/` with a limit on each operation it measures (never reached).
//! See `benches/feature-cost/README.md`.

use chrono::{DateTime, Utc};
use crudforge::prelude::*;
use diesel::prelude::*;
use uuid::Uuid;

diesel::table! {
    use diesel::sql_types::*;
    use crudforge::prelude::{PortableTimestamp, PortableUuid};

    /// The resource without any optional surface.
    fc_plain (id) {
        /// Id.
        id -> PortableUuid,
        /// Created.
        created_at -> PortableTimestamp,
        /// Updated.
        updated_at -> PortableTimestamp,
        /// Name.
        name -> Text,
        /// Species.
        species -> Text,
        /// Cuteness.
        cuteness_level -> Integer,
    }
}

diesel::table! {
    use diesel::sql_types::*;
    use crudforge::prelude::{PortableTimestamp, PortableUuid};

    /// The same resource, with a change feed.
    fc_feed (id) {
        /// Id.
        id -> PortableUuid,
        /// Created.
        created_at -> PortableTimestamp,
        /// Updated.
        updated_at -> PortableTimestamp,
        /// Name.
        name -> Text,
        /// Species.
        species -> Text,
        /// Cuteness.
        cuteness_level -> Integer,
    }
}

diesel::table! {
    use diesel::sql_types::*;
    use crudforge::prelude::{PortableJson, PortableTimestamp, PortableUuid};

    /// The same resource, with a file member.
    fc_file (id) {
        /// Id.
        id -> PortableUuid,
        /// Created.
        created_at -> PortableTimestamp,
        /// Updated.
        updated_at -> PortableTimestamp,
        /// Name.
        name -> Text,
        /// Species.
        species -> Text,
        /// Cuteness.
        cuteness_level -> Integer,
        /// Photo (JSON).
        photo -> Nullable<PortableJson>,
    }
}

/// The rules of every variant: any signed-in user reads, writes and creates, so no request
/// pays for a per-caller check.
#[derive(Debug, Clone, Copy, Default)]
struct SignedIn;

impl<R> Rules<R> for SignedIn {
    fn read(&self, user: Option<&CurrentUser>) -> Access {
        Access::authenticated(user)
    }

    fn write(&self, user: Option<&CurrentUser>) -> Access {
        Access::authenticated(user)
    }
}

/// The resource at `/plain/`: the reference application's critter without soft delete,
/// relations, administrators' notes or photo. Its indexes serve the default order and the
/// benchmark's filtered list (`?species=cat&cuteness_level__gte=5`): its count, then its page.
#[derive(Debug, Clone, Queryable, Selectable, Resource)]
#[diesel(table_name = fc_plain)]
#[resource(
    rules = SignedIn,
    index("created_at", "id"),
    index("species", "cuteness_level"),
    index("species", "created_at", "id", "cuteness_level")
)]
struct Plain {
    id: Uuid,
    created_at: DateTime<Utc>,
    updated_at: DateTime<Utc>,
    #[resource(min_len = 1, max_len = 100)]
    name: String,
    #[resource(max_len = 50)]
    species: String,
    #[resource(default = 10, min = 0, max = 100)]
    cuteness_level: i32,
}

/// The resource at `/feed/`: [`Plain`] in a table of its own, mounted with a change feed, so
/// each write also records its event.
#[cfg(feature = "surfaces")]
#[derive(Debug, Clone, Queryable, Selectable, Resource)]
#[diesel(table_name = fc_feed)]
#[resource(
    rules = SignedIn,
    index("created_at", "id"),
    index("species", "cuteness_level"),
    index("species", "created_at", "id", "cuteness_level")
)]
struct Feed {
    id: Uuid,
    created_at: DateTime<Utc>,
    updated_at: DateTime<Utc>,
    #[resource(min_len = 1, max_len = 100)]
    name: String,
    #[resource(max_len = 50)]
    species: String,
    #[resource(default = 10, min = 0, max = 100)]
    cuteness_level: i32,
}

/// The resource at `/file/`: [`Plain`] with a photo member (never sent by the benchmark, so
/// what it measures is the cost of the member being there).
#[cfg(feature = "surfaces")]
#[derive(Debug, Clone, Queryable, Selectable, Resource)]
#[diesel(table_name = fc_file)]
#[resource(
    rules = SignedIn,
    index("created_at", "id"),
    index("species", "cuteness_level"),
    index("species", "created_at", "id", "cuteness_level")
)]
struct FileRes {
    id: Uuid,
    created_at: DateTime<Utc>,
    updated_at: DateTime<Utc>,
    #[resource(min_len = 1, max_len = 100)]
    name: String,
    #[resource(max_len = 50)]
    species: String,
    #[resource(default = 10, min = 0, max = 100)]
    cuteness_level: i32,
    #[resource(file(max_size = "5 MiB", types = ["image/png"]))]
    photo: Option<crudforge::files::File>,
}

/// `/limited/`: [`Plain`]'s table again, each of the benchmark's operations under a limit
/// per caller it never reaches (a million units a minute), so that `/limited/` against
/// `/plain/` is what counting a request against a limit costs.
fn limited(blueprint: CrudBlueprint<Plain>) -> CrudBlueprint<Plain> {
    [
        Operation::Index,
        Operation::Get,
        Operation::Post,
        Operation::Patch,
    ]
    .into_iter()
    .fold(blueprint, |b, op| b.limit(op, Limit::per_minute(1_000_000)))
}

/// The migrations of the three tables (`migrations/sqlite`, `migrations/postgres`).
const MIGRATIONS: AppMigrations = embed_migrations!("migrations");

/// The users at `/api/user/` (where `run.py` signs in, as in the reference application) and
/// the variants this build has.
fn api(config: Config, db: Database) -> Result<Api, BoxError> {
    let api = Api::new(config, db)?
        .mount(UserBlueprint::<crudforge::users::User>::new("/api/user/"))?
        .mount(Plain::blueprint("/plain/"))?
        .mount(limited(Plain::blueprint("/limited/")))?;
    #[cfg(feature = "surfaces")]
    let api = api
        .mount(Feed::blueprint("/feed/").events())?
        .mount(FileRes::blueprint("/file/"))?;
    Ok(api)
}

fn main() -> std::process::ExitCode {
    App::new("feature-cost", api)
        .about("Benchmark server: one resource with and without crudforge's optional surfaces")
        .migrations(|| MIGRATIONS)
        .main()
}
