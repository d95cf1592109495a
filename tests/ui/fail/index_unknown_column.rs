use chrono::{DateTime, Utc};
use crudforge::Resource;
use uuid::Uuid;

#[derive(Resource)]
#[diesel(table_name = critters)]
#[resource(index(species, cuteness), index(created_at, id desc))]
//~^ ERROR `cuteness` is not a field of `Critter`; the help lists the fields
//~| ERROR `id desc`: an index lists plain column names
pub struct Critter {
    pub id: Uuid,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub species: String,
    pub cuteness_level: i32,
}

fn main() {}
