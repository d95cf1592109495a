use chrono::{DateTime, Utc};
use crudforge::Resource;
use uuid::Uuid;

#[derive(Resource)]
#[resource(table = critters)]
pub struct Critter {
    //~^ ERROR a resource needs an `updated_at` field
    pub id: Uuid,
    pub created_at: DateTime<Utc>,
}

fn main() {}
