// A belongs-to relation on a foreign key and a has-many relation back, checked by the derive.

use chrono::{DateTime, Utc};
use crudforge::Resource;
// The derive's hidden half: the relations it wrote.
use crudforge::__private::Generated as _;
use diesel::prelude::*;
use uuid::Uuid;

diesel::table! {
    use diesel::sql_types::*;
    use crudforge::sql_types::*;

    habitats (id) {
        id -> PortableUuid,
        created_at -> PortableTimestamp,
        updated_at -> PortableTimestamp,
        name -> Text,
    }
}

diesel::table! {
    use diesel::sql_types::*;
    use crudforge::sql_types::*;

    critters (id) {
        id -> PortableUuid,
        created_at -> PortableTimestamp,
        updated_at -> PortableTimestamp,
        habitat_id -> Nullable<PortableUuid>,
        nickname -> Text,
    }
}

#[derive(Queryable, Selectable, Resource)]
#[diesel(table_name = habitats)]
#[resource(has_many(critters = Critter, key = "habitat_id"))]
pub struct Habitat {
    pub id: Uuid,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub name: String,
}

#[derive(Queryable, Selectable, Resource)]
#[diesel(table_name = critters)]
pub struct Critter {
    pub id: Uuid,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    #[resource(belongs_to(Habitat))]
    pub habitat_id: Option<Uuid>,
    pub nickname: String,
}

fn main() {
    use crudforge::__private::RelationKind;
    use crudforge::crud::Resource as _;
    let r = &Critter::RELATIONS[0];
    assert_eq!((r.name, r.kind, r.local, r.remote), ("habitat", RelationKind::BelongsTo, "habitat_id", "id"));
    let r = &Habitat::RELATIONS[0];
    assert_eq!((r.name, r.kind, r.local, r.remote), ("critters", RelationKind::HasMany, "id", "habitat_id"));
}
