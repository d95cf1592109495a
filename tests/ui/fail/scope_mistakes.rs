use chrono::{DateTime, Utc};
use crudforge::Resource;
use uuid::Uuid;

#[derive(Resource)]
#[resource(table = loans, scope(overdue = "due_at < now", Late = "due_at < today"))]
//~^ ERROR a named filter's name is lower-case
#[resource(scope(overdue = "due_at < today", empty = " "))]
//~^ ERROR `overdue` is declared twice
//~| ERROR `empty` needs a condition
pub struct Loan {
    pub id: Uuid,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub due_at: DateTime<Utc>,
}

fn main() {}
