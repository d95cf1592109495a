// The generated impl gives `Model::blueprint`, and its options type-check; nothing is mounted.

use chrono::{DateTime, Utc};
use crudforge::crud::Operation;
use crudforge::{CrudBlueprint, Resource};
use diesel::prelude::*;
use uuid::Uuid;

diesel::table! {
    use diesel::sql_types::*;
    use crudforge::sql_types::*;

    xs (id) {
        id -> PortableUuid,
        created_at -> PortableTimestamp,
        updated_at -> PortableTimestamp,
        label -> Text,
    }
}

#[derive(Queryable, Selectable, Resource)]
#[diesel(table_name = xs)]
pub struct X {
    pub id: Uuid,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub label: String,
}

fn read_only_endpoints() -> CrudBlueprint<X> {
    X::blueprint("/x/").methods([Operation::Index, Operation::Get])
}

fn main() {
    let bp = read_only_endpoints();
    assert_eq!(bp.operations(), [Operation::Index, Operation::Get]);
}
