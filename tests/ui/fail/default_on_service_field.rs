use chrono::{DateTime, Utc};
use crudforge::Resource;
use uuid::Uuid;

#[derive(Resource)]
#[resource(table = critters)]
pub struct Critter {
    pub id: Uuid,
    #[resource(default = Utc::now())]
    //~^ ERROR the service sets `created_at`, so it takes no `default`
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    #[resource(read_only, default = 0)]
    //~^ ERROR a `read_only` field is never written by clients, so it takes no `default`
    pub score: i32,
}

fn main() {}
