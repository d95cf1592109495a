use chrono::{DateTime, Utc};
use crudforge::Resource;
use uuid::Uuid;

#[derive(Resource)]
pub struct Critter {
    //~^ ERROR Resource needs the model's table
    pub id: Uuid,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

fn main() {}
