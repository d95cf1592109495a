use chrono::{DateTime, Utc};
use crudforge::Resource;
use diesel::prelude::*;
use uuid::Uuid;

diesel::table! {
    use diesel::sql_types::*;
    use crudforge::sql_types::*;

    tickets (id) {
        id -> PortableUuid,
        created_at -> PortableTimestamp,
        updated_at -> PortableTimestamp,
        channel -> Text,
    }
}

fn channel(_user: Option<&crudforge::auth::CurrentUser>) -> String {
    "web".to_owned()
}

#[derive(Queryable, Selectable, Resource)]
#[diesel(table_name = tickets)]
pub struct Ticket {
    pub id: Uuid,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    #[resource(set = channel)]
    //~^ ERROR a server's value is a `fn(&HookCtx) -> T`: mismatched types on `channel`
    pub channel: String,
}

fn main() {}
