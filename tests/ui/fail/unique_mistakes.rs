use chrono::{DateTime, Utc};
use crudforge::Resource;
use uuid::Uuid;

#[derive(Resource)]
#[resource(table = tickets)]
#[resource(unique("event_id", "row"), unique("seat"), unique("seat", "seat"))]
//~^ ERROR `row` is not a field of `Ticket`, on the string; the help lists the fields
//~| ERROR one member: the help says to mark the field `unique`
//~| ERROR `seat` twice in one constraint
#[resource(unique("event_id", "seat"), unique("seat", "event_id"), unique())]
//~^ ERROR the same constraint twice (in another order), at the second
//~| ERROR no members
pub struct Ticket {
    pub id: Uuid,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub event_id: Uuid,
    pub seat: i32,
}

fn main() {}
