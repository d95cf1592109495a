use chrono::{DateTime, Utc};
use crudforge::Resource;
use uuid::Uuid;

#[derive(Resource)]
#[resource(table = critters)]
pub struct Critter {
    pub id: Uuid,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    #[resource(read_only, write_only)]
    //~^ ERROR a field cannot be both `read_only` and `write_only`
    pub secret: String,
}

fn main() {}
