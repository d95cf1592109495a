use chrono::{DateTime, Utc};
use crudforge::Resource;

#[derive(Resource)]
#[resource(table = critters)]
pub struct Critter {
    pub id: uuid::Uuid,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    #[resource(belongs_to(Habitat))]
    pub habitat_id: Option<String>,
    //~^ ERROR a `belongs_to` field holds an id; the help shows `Option<uuid::Uuid>`
    #[resource(belongs_to(Habitat))]
    //~^ ERROR cannot name the relation; the help shows `name = "..."`
    pub home: Option<uuid::Uuid>,
}

fn main() {}
