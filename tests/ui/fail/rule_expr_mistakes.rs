use chrono::{DateTime, Utc};
use crudforge::Resource;

#[derive(Resource)]
#[resource(table = tickets, rules(
    read = "holder = @me",
    //~^ ERROR `holder` is not a field of Ticket
    update = "holder_id = @you",
    //~^ ERROR `@you` is not a caller value
    delete = "holder_id =",
    //~^ ERROR the `delete` rule does not parse
    create = "show.starts_at > now and event = @me",
    //~^ ERROR `show` is not a relation; `event` is a relation, not a field
    list = "true",
    //~^ ERROR unknown rule kind `list`
))]
pub struct Ticket {
    pub id: uuid::Uuid,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    #[resource(belongs_to(Ticket))]
    pub event_id: uuid::Uuid,
    pub holder_id: uuid::Uuid,
}

#[derive(Resource)]
#[resource(
    table = tickets,
    rules = crudforge::perms::DefaultRules,
    rules(read = "true"),
    //~^ ERROR `rules = ...` and `rules(...)` both set the rules
)]
pub struct Both {
    pub id: uuid::Uuid,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

fn main() {}
