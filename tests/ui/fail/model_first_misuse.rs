// Model-first mistakes: a type with no column type, a malformed foreign key, unknown and
// impossible `on_delete` values, `on_delete` without `references`, a table in another schema.

use chrono::{DateTime, Utc};
use crudforge::Resource;
use diesel::prelude::*;
use uuid::Uuid;

#[derive(Queryable, Selectable, Resource)]
#[diesel(table_name = books)]
#[resource(model_first)]
pub struct Book {
    pub id: Uuid,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    #[resource(filter = false)]
    pub price: Money,
    //~^ ERROR `Money` has no column type in a model-first table
    #[resource(references = "authors id")]
    pub author_id: Uuid,
    #[resource(references = "shelves", on_delete = "nullify")]
    pub shelf_id: Uuid,
    #[resource(references = "rooms", on_delete = "set_null")]
    pub room_id: Uuid,
    #[resource(on_delete = "cascade")]
    pub box_id: Option<Uuid>,
}

pub struct Money(pub i64);

#[derive(Resource)]
#[resource(model_first, table = library::loans)]
pub struct Loan {
    pub id: Uuid,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

fn main() {}
