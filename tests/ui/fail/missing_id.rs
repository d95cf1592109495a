use chrono::{DateTime, Utc};
use crudforge::Resource;

#[derive(Resource)]
#[resource(table = critters)]
pub struct Critter {
    //~^ ERROR a resource needs an id field
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub name: String,
}

fn main() {}
