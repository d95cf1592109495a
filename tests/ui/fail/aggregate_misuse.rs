use chrono::{DateTime, Utc};
use crudforge::Resource;
use uuid::Uuid;

#[derive(Resource)]
#[resource(table = critters)]
pub struct Critter {
    pub id: Uuid,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    #[resource(aggregate(group_by, sum))]
    //~^ ERROR `sum` cannot apply to `name`, a Text member
    pub name: String,
    #[resource(aggregate(min))]
    //~^ ERROR `min` cannot apply to `is_vaccinated`, a Bool member
    pub is_vaccinated: bool,
    #[resource(aggregate(group_by))]
    //~^ ERROR JSON members cannot be grouped or counted
    pub details: serde_json::Value,
    #[resource(write_only, aggregate(count_distinct))]
    //~^ ERROR clients never read it
    pub secret: String,
    #[resource(aggregate(none, avg))]
    //~^ ERROR `none` allows nothing
    pub age: i32,
}

fn main() {}
