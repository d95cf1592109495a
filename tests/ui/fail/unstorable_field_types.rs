use chrono::{DateTime, Utc};
use crudforge::Resource;
use uuid::Uuid;

#[derive(Resource)]
#[resource(table = critters)]
pub struct Critter {
    pub id: Uuid,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub tags: Vec<String>,
    //~^ ERROR `Vec` cannot be stored in a column
    pub legs: u32,
    //~^ ERROR `u32` has no portable SQL type
    pub name: &'static str,
    //~^ ERROR a reference cannot be stored; use `String`
    pub nickname: Option<Vec<u8>>,
    //~^ ERROR `Vec` cannot be stored in a column (on `Vec<u8>`, inside the `Option`)
}

fn main() {}
