//! The Critter fixture: a resource with every kind of field, on both backends.

use crate::Backend;
use chrono::{DateTime, NaiveDate, Utc};
use crudforge::{with_conn, Database, Resource};
use diesel::prelude::*;
use diesel_async::SimpleAsyncConnection;
use uuid::Uuid;

diesel::table! {
    use diesel::sql_types::*;
    use crudforge::sql_types::*;

    /// Critters.
    critters (id) {
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
        /// Weight.
        weight -> Nullable<Double>,
        /// Nickname.
        nickname -> Nullable<Text>,
        /// Vaccinated.
        vaccinated -> Bool,
        /// Born.
        born_on -> Nullable<Date>,
        /// Last seen.
        seen_at -> Nullable<PortableTimestamp>,
        /// Keeper.
        keeper_id -> Nullable<PortableUuid>,
        /// Tag.
        tag -> Nullable<Text>,
        /// Secret.
        secret -> Nullable<Text>,
        /// Notes.
        notes -> Nullable<PortableJson>,
        /// Score.
        score -> Integer,
    }
}

/// A critter: one field of every supported kind. Open to anonymous callers, so the CRUD
/// tests exercise the endpoints alone; permission tests use other resources.
#[derive(Debug, Clone, Queryable, Selectable, Resource)]
#[diesel(table_name = critters)]
#[resource(rules = crudforge::perms::Open)]
pub struct Critter {
    /// Identifier.
    pub id: Uuid,
    /// Creation time.
    pub created_at: DateTime<Utc>,
    /// Last change.
    pub updated_at: DateTime<Utc>,
    /// Its name.
    #[resource(max_len = 100)]
    pub name: String,
    /// Its species.
    #[resource(max_len = 50)]
    pub species: String,
    /// How cute, 10 by default.
    #[resource(default = 10)]
    pub cuteness_level: i32,
    /// Weight in kilograms.
    pub weight: Option<f64>,
    /// A nickname.
    pub nickname: Option<String>,
    /// Vaccinated?
    #[resource(default = false)]
    pub vaccinated: bool,
    /// Birthday.
    pub born_on: Option<NaiveDate>,
    /// Last sighting.
    pub seen_at: Option<DateTime<Utc>>,
    /// Keeper (a parent for nesting).
    pub keeper_id: Option<Uuid>,
    /// A unique tag (for `res_id`; the table has a unique index on it).
    #[resource(unique)]
    pub tag: Option<String>,
    /// Never returned.
    #[resource(write_only)]
    pub secret: Option<String>,
    /// Free-form notes.
    pub notes: Option<serde_json::Value>,
    /// Computed by the database; clients cannot set it.
    #[resource(read_only)]
    pub score: i32,
}

/// Creates the critters table.
///
/// # Panics
///
/// The DDL fails.
pub async fn create_table(db: &Database) {
    let ddl = match db.backend() {
        Backend::Sqlite => {
            "CREATE TABLE IF NOT EXISTS critters (id TEXT PRIMARY KEY, created_at TEXT NOT NULL, updated_at TEXT NOT NULL,
             name TEXT NOT NULL, species TEXT NOT NULL, cuteness_level INTEGER NOT NULL, weight DOUBLE,
             nickname TEXT, vaccinated BOOLEAN NOT NULL, born_on TEXT, seen_at TEXT, keeper_id TEXT,
             tag TEXT UNIQUE, secret TEXT, notes TEXT, score INTEGER NOT NULL DEFAULT 7)"
        }
        Backend::Postgres => {
            "CREATE TABLE IF NOT EXISTS critters (id UUID PRIMARY KEY, created_at TIMESTAMPTZ NOT NULL, updated_at TIMESTAMPTZ NOT NULL,
             name TEXT NOT NULL, species TEXT NOT NULL, cuteness_level INTEGER NOT NULL, weight DOUBLE PRECISION,
             nickname TEXT, vaccinated BOOLEAN NOT NULL, born_on DATE, seen_at TIMESTAMPTZ, keeper_id UUID,
             tag TEXT UNIQUE, secret TEXT, notes JSONB, score INTEGER NOT NULL DEFAULT 7)"
        }
    };
    let mut conn = db.get().await.expect("connection");
    with_conn!(conn, |c| c.batch_execute(ddl).await).expect("create critters");
}

/// Reads a critter's stored secret (never exposed over HTTP).
///
/// # Panics
///
/// The query fails.
pub async fn stored_secret(db: &Database, id: Uuid) -> Option<String> {
    let mut conn = db.get().await.expect("connection");
    with_conn!(conn, |c| {
        diesel_async::RunQueryDsl::get_result(
            critters::table
                .filter(critters::id.eq(crudforge::sql_types::Portable(id)))
                .select(critters::secret),
            c,
        )
        .await
    })
    .expect("secret")
}
