use chrono::{DateTime, Utc};
use crudforge::Resource;
use uuid::Uuid;

#[derive(Resource)]
#[resource(table = critters)]
pub struct Critter {
    pub id: Uuid,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    #[resource(skip, max_len = 10)]
    //~^ ERROR `skip` hides the field from the API, so `max_len` cannot apply to it
    pub internal: String,
}

fn main() {}
