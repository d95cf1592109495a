use chrono::{DateTime, Utc};
use crudforge::Resource;

#[derive(Resource)]
#[resource(table = critters)]
pub struct Critter {
    pub id: i32,
    //~^ ERROR the id field must be a `uuid::Uuid`; the help shows `id: uuid::Uuid`
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

fn main() {}
