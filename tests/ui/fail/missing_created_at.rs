use chrono::{DateTime, Utc};
use crudforge::Resource;
use uuid::Uuid;

#[derive(Resource)]
#[resource(table = critters)]
pub struct Critter {
    //~^ ERROR a resource needs a `created_at` field
    pub id: Uuid,
    pub updated_at: DateTime<Utc>,
}

fn main() {}
