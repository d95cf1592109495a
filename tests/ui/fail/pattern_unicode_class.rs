use chrono::{DateTime, Utc};
use crudforge::Resource;
use uuid::Uuid;

#[derive(Resource)]
#[resource(table = critters)]
pub struct Critter {
    pub id: Uuid,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    #[resource(pattern = r"^\p{L}+$")]
    //~^ ERROR `\p{..}` and `\P{..}` are Unicode classes here but a plain `p` in JSON Schema's `pattern`
    pub name: String,
}

fn main() {}
