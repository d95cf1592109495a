use chrono::{DateTime, Utc};
use crudforge::Resource;
use diesel::prelude::*;
use uuid::Uuid;

diesel::table! {
    use diesel::sql_types::*;
    use crudforge::sql_types::*;

    loans (id) {
        id -> PortableUuid,
        created_at -> PortableTimestamp,
        updated_at -> PortableTimestamp,
        note -> Nullable<Text>,
    }
}

fn staff(_user: &str) -> bool {
    true
}

#[derive(Queryable, Selectable, Resource)]
#[diesel(table_name = loans)]
pub struct Loan {
    pub id: Uuid,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    #[resource(read = staff)]
    //~^ ERROR a read rule is a `fn(Option<&CurrentUser>) -> bool`: mismatched types on `staff`
    pub note: Option<String>,
}

fn main() {}
