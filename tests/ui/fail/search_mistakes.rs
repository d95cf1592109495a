use chrono::{DateTime, Utc};
use crudforge::Resource;

#[derive(Resource)]
#[resource(table = notes, search("title", "colour", "views", "secret"))]
//~^ ERROR `colour` is not a field of `Note`
//~| ERROR `views` is not text
//~| ERROR `secret` is a `write_only` field
pub struct Note {
    pub id: uuid::Uuid,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub title: String,
    pub views: i32,
    #[resource(write_only)]
    pub secret: String,
}

#[derive(Resource)]
#[resource(table = notes, search("title", "title"), search())]
//~^ ERROR `title` appears twice in this search
//~| ERROR `search(...)` is given twice
pub struct Twice {
    pub id: uuid::Uuid,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub title: String,
}

#[derive(Resource)]
#[resource(table = notes, search(title))]
//~^ ERROR write the column as a string
pub struct Bare {
    pub id: uuid::Uuid,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub title: String,
}

#[derive(Resource)]
#[resource(table = notes, search("a", "b", "c", "d", "e"))]
//~^ ERROR a search holds at most four members
pub struct Wide {
    pub id: uuid::Uuid,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub a: String,
    pub b: String,
    pub c: String,
    pub d: String,
    pub e: String,
}

fn main() {}
