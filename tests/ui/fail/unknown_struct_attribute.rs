use chrono::{DateTime, Utc};
use crudforge::Resource;
use uuid::Uuid;

#[derive(Resource)]
#[resource(tabel = critters)]
//~^ ERROR unknown resource attribute `tabel`; the help suggests `table` and lists the valid keys
pub struct Critter {
    //~^ ERROR Resource needs the model's table (the misspelt key did not set it)
    pub id: Uuid,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

fn main() {}
