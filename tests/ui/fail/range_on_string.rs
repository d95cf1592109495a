use chrono::{DateTime, Utc};
use crudforge::Resource;
use uuid::Uuid;

#[derive(Resource)]
#[resource(table = critters)]
pub struct Critter {
    pub id: Uuid,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    #[resource(min = 1, max = 20)]
    //~^ ERROR `min` applies to number fields only
    pub name: String,
    #[resource(min_len = 2, pattern = "^[0-9]+$")]
    //~^ ERROR `min_len` applies to String fields only
    pub legs: i32,
    #[resource(one_of = [1.5, 2.5])]
    //~^ ERROR `one_of` applies to String and integer fields only
    pub weight: f64,
}

fn main() {}
