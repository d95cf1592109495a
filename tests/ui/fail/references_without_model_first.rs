// `references` describes a table the derive writes: on a resource over a hand-written
// `table!` it is refused.

use chrono::{DateTime, Utc};
use crudforge::Resource;
use diesel::prelude::*;
use uuid::Uuid;

diesel::table! {
    use diesel::sql_types::*;
    use crudforge::sql_types::*;

    loans (id) {
        id -> PortableUuid,
        created_at -> PortableTimestamp,
        updated_at -> PortableTimestamp,
        book_id -> PortableUuid,
    }
}

#[derive(Queryable, Selectable, Resource)]
#[diesel(table_name = loans)]
pub struct Loan {
    pub id: Uuid,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    #[resource(references = "books")]
    pub book_id: Uuid,
}

fn main() {}
