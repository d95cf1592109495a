// Read rules of every form and named filters.

use chrono::{DateTime, Utc};
use crudforge::auth::CurrentUser;
use crudforge::Resource;
// The derive's hidden half: the read rules and named filters it wrote.
use crudforge::__private::Generated as _;
use diesel::prelude::*;
use uuid::Uuid;

diesel::table! {
    use diesel::sql_types::*;
    use crudforge::sql_types::*;

    loans (id) {
        id -> PortableUuid,
        created_at -> PortableTimestamp,
        updated_at -> PortableTimestamp,
        borrower_id -> Nullable<PortableUuid>,
        due_at -> PortableTimestamp,
        staff_note -> Nullable<Text>,
        borrower_note -> Nullable<Text>,
        shelf -> Text,
    }
}

mod rules {
    pub fn staff(user: Option<&crudforge::auth::CurrentUser>) -> bool {
        user.is_some_and(|u| u.has_role("STAFF", None))
    }
}

fn anyone(_: Option<&CurrentUser>) -> bool {
    true
}

#[derive(Queryable, Selectable, Resource)]
#[diesel(table_name = loans)]
#[resource(scope(overdue = "due_at < now", due_today = "due_at >= today"))]
#[resource(scope(shelved = "shelf = 'A'"))]
pub struct Loan {
    pub id: Uuid,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub borrower_id: Option<Uuid>,
    pub due_at: DateTime<Utc>,
    #[resource(read = admin, max_len = 100)]
    pub staff_note: Option<String>,
    #[resource(read = owner(borrower_id))]
    pub borrower_note: Option<String>,
    #[resource(read = rules::staff)]
    pub shelf: String,
}

/// A rule function next to the model, by its bare name.
#[derive(Queryable, Selectable, Resource)]
#[diesel(table_name = loans)]
#[resource(name = "OpenLoan")]
pub struct OpenLoan {
    pub id: Uuid,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub borrower_id: Option<Uuid>,
    pub due_at: DateTime<Utc>,
    pub staff_note: Option<String>,
    pub borrower_note: Option<String>,
    #[resource(read = anyone)]
    pub shelf: String,
}

fn main() {
    use crudforge::crud::Resource as _;
    let names: Vec<&str> = Loan::READ_RULES.iter().map(|(n, _)| *n).collect();
    assert_eq!(names, ["staff_note", "borrower_note", "shelf"]);
    assert_eq!(Loan::SCOPES.len(), 3);
    assert_eq!(OpenLoan::READ_RULES.len(), 1);
    assert!(OpenLoan::SCOPES.is_empty());
}
