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

pub struct Habitat;

#[derive(Queryable, Selectable, Resource)]
#[diesel(table_name = critters)]
pub struct Critter {
    pub id: Uuid,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    #[resource(belongs_to(Habitat))]
    //~^ ERROR `Habitat` is not a resource; the help says to derive it
    pub habitat_id: Option<Uuid>,
    pub nickname: String,
}

fn main() {}
