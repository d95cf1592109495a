use chrono::{DateTime, Utc};
use crudforge::Resource;
use uuid::Uuid;

#[derive(Resource)]
#[resource(table = critters)]
pub struct Critter(pub Uuid, pub DateTime<Utc>, pub DateTime<Utc>);
//~^ ERROR Resource needs named fields (on the parenthesized fields)

fn main() {}
