//! The Part fixture of the export and import tests (HTTP and the command line): each user
//! reads and writes their own parts, the server sets the owner, only administrators read and
//! write the staff note; its table on both backends.

use crate::Backend;
use crudforge::auth::CurrentUser;
use crudforge::perms::{Access, Rules};
use crudforge::{with_conn, Database, Error, Resource};
use diesel::prelude::*;
use diesel_async::SimpleAsyncConnection;
use serde_json::{Map, Value};
use uuid::Uuid;

diesel::table! {
    use diesel::sql_types::*;
    use crudforge::sql_types::*;

    /// Parts.
    parts (id) {
        /// Id.
        id -> PortableUuid,
        /// Created.
        created_at -> PortableTimestamp,
        /// Updated.
        updated_at -> PortableTimestamp,
        /// Owner.
        owner_id -> PortableUuid,
        /// Name.
        name -> Text,
        /// Quantity.
        qty -> Integer,
        /// In stock.
        stocked -> Bool,
        /// Staff note.
        staff_note -> Nullable<Text>,
    }
}

type DateTime = chrono::DateTime<chrono::Utc>;

/// A part: each user reads and writes their own; the server sets the owner; only
/// administrators read and write the staff note.
#[derive(Debug, Clone, Queryable, Selectable, Resource)]
#[diesel(table_name = parts)]
#[resource(rules = OwnParts)]
pub struct Part {
    /// Identifier.
    pub id: Uuid,
    /// Creation time.
    pub created_at: DateTime,
    /// Last change.
    pub updated_at: DateTime,
    /// Its owner.
    pub owner_id: Uuid,
    /// Its name.
    #[resource(min_len = 1, max_len = 80)]
    pub name: String,
    /// How many.
    #[resource(min = 0, max = 1_000_000)]
    pub qty: i32,
    /// Whether it is in stock.
    pub stocked: bool,
    /// What the staff noted.
    #[resource(read = admin)]
    pub staff_note: Option<String>,
}

/// The parts' rules: their owner's, the owner set by the server, the staff note for
/// administrators.
#[derive(Debug, Clone, Copy)]
pub struct OwnParts;

impl Rules<Part> for OwnParts {
    fn read(&self, user: Option<&CurrentUser>) -> Access {
        Access::owned_by(user, "owner_id")
    }

    fn write(&self, user: Option<&CurrentUser>) -> Access {
        Access::owned_by(user, "owner_id")
    }

    fn create(
        &self,
        user: Option<&CurrentUser>,
        body: &mut Map<String, Value>,
    ) -> Result<(), Error> {
        let u = user.ok_or_else(|| Error::Unauthorized("Authentication required.".into()))?;
        body.insert("owner_id".to_owned(), Value::String(u.id.to_string()));
        Ok(())
    }

    fn server_fields(&self) -> &[&'static str] {
        &["owner_id"]
    }

    fn admin_fields(&self) -> &[&'static str] {
        &["staff_note"]
    }
}

/// Creates the `parts` table in `db`.
pub async fn create_table(db: &Database) {
    let ddl = match db.backend() {
        Backend::Sqlite => "CREATE TABLE parts (id TEXT PRIMARY KEY, created_at TEXT NOT NULL, updated_at TEXT NOT NULL, owner_id TEXT NOT NULL, name TEXT NOT NULL, qty INTEGER NOT NULL, stocked BOOLEAN NOT NULL, staff_note TEXT)",
        Backend::Postgres => "CREATE TABLE parts (id UUID PRIMARY KEY, created_at TIMESTAMPTZ NOT NULL, updated_at TIMESTAMPTZ NOT NULL, owner_id UUID NOT NULL, name TEXT NOT NULL, qty INTEGER NOT NULL, stocked BOOLEAN NOT NULL, staff_note TEXT)",
    };
    let mut conn = db.get().await.expect("a connection");
    with_conn!(conn, |c| c.batch_execute(ddl).await).expect("the parts table");
}
