use chrono::{DateTime, Utc};
use crudforge::Resource;
use uuid::Uuid;

#[derive(Resource)]
#[resource(table = critters)]
pub struct Critter {
    pub id: Uuid,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    #[resource(min_len = 10, max_len = 5)]
    //~^ ERROR `min_len = 10` is larger than `max_len = 5`
    pub name: String,
    #[resource(min = 10, max = 1)]
    //~^ ERROR `min = 10` is larger than `max = 1`
    pub legs: i32,
    #[resource(max = 2.5)]
    //~^ ERROR `max` of an integer field must be an integer
    pub ears: i32,
    #[resource(one_of = ["cat", 3, "cat"])]
    //~^ ERROR expected a string literal
    //~| ERROR this value is listed twice
    pub species: String,
}

fn main() {}
