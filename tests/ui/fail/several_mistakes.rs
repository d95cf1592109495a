// Every mistake is reported in one compilation, each on its own token.

use chrono::{DateTime, Utc};
use crudforge::Resource;

#[derive(Resource)]
pub struct Critter {
    //~^ ERROR Resource needs the model's table
    //~| ERROR a resource needs an `updated_at` field
    pub id: i64,
    //~^ ERROR the id field must be a `uuid::Uuid`
    pub created_at: DateTime<Utc>,
    #[resource(read_only, write_only, colour = "red")]
    //~^ ERROR unknown resource attribute `colour`
    //~| ERROR a field cannot be both `read_only` and `write_only`
    pub name: String,
    #[resource(max_len = 2)]
    //~^ ERROR `max_len` applies to String fields only
    pub legs: i32,
    pub tags: Vec<String>,
    //~^ ERROR `Vec` cannot be stored in a column
}

fn main() {}
