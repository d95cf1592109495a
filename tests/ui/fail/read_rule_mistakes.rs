use chrono::{DateTime, Utc};
use crudforge::Resource;
use uuid::Uuid;

#[derive(Resource)]
#[resource(table = loans)]
pub struct Loan {
    #[resource(read = admin)]
    //~^ ERROR the id is always returned
    pub id: Uuid,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub title: String,
    #[resource(read = owner(borrower))]
    //~^ ERROR `borrower` is not a field; the help lists the UUID fields
    pub note: Option<String>,
    #[resource(read = owner(title))]
    //~^ ERROR an owner field must be a UUID
    pub other: Option<String>,
    #[resource(write_only, read = admin)]
    //~^ ERROR a write-only field is never returned
    pub secret: Option<String>,
    #[resource(read = owner)]
    //~^ ERROR `owner` needs the field
    pub third: Option<String>,
}

fn main() {}
