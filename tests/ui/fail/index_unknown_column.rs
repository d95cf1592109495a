use chrono::{DateTime, Utc};
use crudforge::Resource;
use uuid::Uuid;

#[derive(Resource)]
#[resource(table = critters)]
#[resource(index("species", "cuteness"), index(created_at, "id"))]
//~^ ERROR `cuteness` is not a field of `Critter`, on the string; the help lists the fields
//~| ERROR `created_at` must be written as a string; the help says why
pub struct Critter {
    pub id: Uuid,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub species: String,
    pub cuteness_level: i32,
}

fn main() {}
