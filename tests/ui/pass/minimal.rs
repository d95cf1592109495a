// The smallest model: an id, the two timestamps and a table.

use chrono::{DateTime, Utc};
use crudforge::Resource;
use diesel::prelude::*;
use uuid::Uuid;

diesel::table! {
    use diesel::sql_types::*;
    use crudforge::sql_types::*;

    notes (id) {
        id -> PortableUuid,
        created_at -> PortableTimestamp,
        updated_at -> PortableTimestamp,
    }
}

#[derive(Queryable, Selectable, Resource)]
#[diesel(table_name = notes)]
pub struct Note {
    pub id: Uuid,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

fn main() {
    assert_eq!(<Note as crudforge::crud::Resource>::NAME, "Note");
}
