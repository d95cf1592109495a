use chrono::{DateTime, Utc};
use crudforge::Resource;

#[derive(Resource)]
#[resource(table = offers, rules(
    update = "@new.state = 'open'",
    //~^ ERROR `@new.state` (a value the write sends) belongs to member rules
    update(colour) = "buyer_id = @me",
    //~^ ERROR the `update(colour)` rule governs `colour`, which is not a field of Offer
    update(state) = "@new.colour = 'red'",
    //~^ ERROR `@new.colour`: `colour` is not a field of Offer
    create(state) = "@new.state =",
    //~^ ERROR the `create(state)` rule does not parse
    read(state) = "true",
    //~^ ERROR member rules are `update(members) = "..."` and `create(members) = "..."`
))]
pub struct Offer {
    pub id: uuid::Uuid,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub buyer_id: uuid::Uuid,
    pub state: String,
}

fn main() {}
