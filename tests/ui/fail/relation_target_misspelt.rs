use chrono::{DateTime, Utc};
use crudforge::Resource;
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
#[resource(has_many(critters = Critters, key = "habitat_id"))]
//~^ ERROR cannot find type `Critters`; the help names `Critter`
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
    #[resource(belongs_to(Habitta))]
    //~^ ERROR cannot find type `Habitta`; the help names `Habitat`
    pub habitat_id: Option<Uuid>,
    pub nickname: String,
}

fn main() {}
