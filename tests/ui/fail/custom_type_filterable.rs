// A field of the application's own type is filterable by default, so its value must be parsed
// from the query string.

use chrono::{DateTime, Utc};
use crudforge::crud::IntoBind;
use crudforge::Resource;
use diesel::prelude::*;
use uuid::Uuid;

diesel::table! {
    use diesel::sql_types::*;
    use crudforge::sql_types::*;

    paints (id) {
        id -> PortableUuid,
        created_at -> PortableTimestamp,
        updated_at -> PortableTimestamp,
        colour -> Text,
    }
}

#[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct Colour(pub String);

impl From<String> for Colour {
    fn from(s: String) -> Self {
        Colour(s)
    }
}

impl IntoBind for Colour {
    type Bind = String;
    fn into_bind(self) -> String {
        self.0
    }
}

#[derive(Queryable, Selectable, Resource)]
#[diesel(table_name = paints)]
pub struct Paint {
    pub id: Uuid,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    #[diesel(deserialize_as = String)]
    pub colour: Colour,
    //~^ ERROR `Colour` cannot be used as a filter value; add `#[resource(filter = false)]` or implement `FromArg`
}

fn main() {}
