use chrono::{DateTime, Utc};
use crudforge::Resource;

#[derive(Resource)]
#[resource(table = habitats, has_many(critters = Critter))]
//~^ ERROR expected `, key = "..."`; the help shows the whole form
pub struct Habitat {
    pub id: uuid::Uuid,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    #[resource(belongs_to)]
    //~^ ERROR expected the related resource; the help shows `belongs_to(Habitat)`
    pub parent_id: Option<uuid::Uuid>,
    #[resource(belongs_to(Habitat))]
    //~^ ERROR the relation `name` has the name of a field
    pub name_id: Option<uuid::Uuid>,
    pub name: String,
}

fn main() {}
