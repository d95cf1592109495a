use chrono::{DateTime, Utc};
use crudforge::Resource;
use uuid::Uuid;

#[derive(Resource)]
#[resource(table = critters)]
pub struct Critter {
    pub id: Uuid,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    #[resource(colour = "red")]
    //~^ ERROR unknown resource attribute `colour`; the help lists the valid keys
    pub name: String,
}

fn main() {}
