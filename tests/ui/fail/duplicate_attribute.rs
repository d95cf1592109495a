use chrono::{DateTime, Utc};
use crudforge::Resource;
use uuid::Uuid;

#[derive(Resource)]
#[resource(table = critters)]
#[resource(table = animals)]
//~^ ERROR duplicate resource attribute `table`
pub struct Critter {
    pub id: Uuid,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    #[resource(max_len = 10, max_len = 20)]
    //~^ ERROR duplicate resource attribute `max_len`
    pub name: String,
    #[resource(write_only)]
    #[resource(write_only)]
    //~^ ERROR duplicate resource attribute `write_only`
    pub secret: String,
}

fn main() {}
