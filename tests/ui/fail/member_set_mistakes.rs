use chrono::{DateTime, Utc};
use crudforge::Resource;
use uuid::Uuid;

fn channel(_ctx: &crudforge::crud::HookCtx) -> String {
    "web".to_owned()
}

#[derive(Resource)]
#[resource(table = tickets)]
pub struct Ticket {
    #[resource(set = me)]
    //~^ ERROR the service already sets `id`
    pub id: Uuid,
    #[resource(set = now)]
    //~^ ERROR the service already sets `created_at`
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    #[resource(set = me)]
    pub holder: String,
    //~^ ERROR `set = me` fills the caller's id
    #[resource(set = now)]
    pub sold_on: String,
    //~^ ERROR `set = now` fills the time of the create
    #[resource(set = channel, create_only)]
    //~^ ERROR `set` and `create_only` do not combine
    pub channel: String,
    #[resource(read_only, set = me)]
    //~^ ERROR `set` and `read_only` do not combine
    pub seller: Uuid,
    #[resource(set = now, default = "2020-01-01")]
    //~^ ERROR `set` and `default` do not combine
    pub checked_at: DateTime<Utc>,
    #[resource(read_only, create_only)]
    //~^ ERROR `create_only` applies to a member clients send on create
    pub score: i32,
    #[resource(set = @me)]
    //~^ ERROR the caller is written `me` here, without `@`
    pub buyer: Uuid,
    #[resource(set = "now")]
    //~^ ERROR expected `me`, `now` or a function's path
    pub paid_at: DateTime<Utc>,
}

fn main() {}
