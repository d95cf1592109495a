use chrono::{DateTime, Utc};
use crudforge::Resource;
use uuid::Uuid;

#[derive(Resource)]
#[resource(table = critters, soft_delete)]
//~^ ERROR `soft_delete` needs a `deleted_at` field
pub struct Critter {
    pub id: Uuid,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

#[derive(Resource)]
#[resource(table = notes, soft_delete)]
pub struct Note {
    pub id: Uuid,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub deleted_at: DateTime<Utc>,
    //~^ ERROR `deleted_at` must be an `Option<chrono::DateTime<chrono::Utc>>`
}

#[derive(Resource)]
#[resource(table = memos, soft_delete)]
pub struct Memo {
    pub id: Uuid,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    #[resource(filter = false)]
    //~^ ERROR `deleted_at` cannot be `filter = false`
    pub deleted_at: Option<DateTime<Utc>>,
}

fn main() {}
