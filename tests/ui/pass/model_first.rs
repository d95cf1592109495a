// A model-first resource of every supported type, required and optional: the derive declares
// `table!` and `Resource::MODEL`, with literal defaults, validators and foreign keys.

use chrono::{DateTime, NaiveDate, Utc};
use crudforge::migrations::{ColumnType, OnDelete};
use crudforge::Resource;
use diesel::prelude::*;
use uuid::Uuid;

#[derive(Queryable, Selectable, Resource)]
#[diesel(table_name = owners)]
#[resource(model_first)]
pub struct Owner {
    pub id: Uuid,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    #[resource(unique, max_len = 40)]
    pub name: String,
}

#[derive(Queryable, Selectable, Resource)]
#[diesel(table_name = samples)]
#[resource(model_first, index("owner_id", "int"))]
pub struct Sample {
    pub id: Uuid,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    #[resource(min_len = 1, max_len = 10, default = "x".to_string())]
    pub text: String,
    #[resource(min = -5, max = 5)]
    pub small: i16,
    #[resource(one_of = [1, 2, 3], default = 2)]
    pub int: i32,
    pub big: i64,
    #[resource(default = 1.5)]
    pub real: f32,
    #[resource(min = 0.5)]
    pub double: f64,
    #[resource(default = true)]
    pub flag: bool,
    #[resource(references = "owners", on_delete = "cascade")]
    pub owner_id: Uuid,
    pub at: DateTime<Utc>,
    pub on: NaiveDate,
    pub doc: serde_json::Value,
    #[resource(one_of = ["a", "b"])]
    pub opt_text: Option<String>,
    pub opt_small: Option<i16>,
    pub opt_int: Option<i32>,
    pub opt_big: Option<i64>,
    pub opt_real: Option<f32>,
    pub opt_double: Option<f64>,
    pub opt_flag: Option<bool>,
    #[resource(references = "owners.id", on_delete = "set_null")]
    pub opt_owner_id: Option<Uuid>,
    pub opt_at: Option<DateTime<Utc>>,
    pub opt_on: Option<NaiveDate>,
    pub opt_doc: Option<serde_json::Value>,
    #[resource(skip)]
    pub internal: Option<String>,
}

fn main() {
    let model = Sample::MODEL.unwrap();
    assert_eq!(model.table, "samples");
    assert_eq!(model.columns.len(), 26);
    assert_eq!(model.column("double").unwrap().ty, ColumnType::Double);
    let fk = model.column("opt_owner_id").unwrap().references.unwrap();
    assert_eq!((fk.table, fk.column, fk.on_delete), ("owners", "id", OnDelete::SetNull));
    // The declared table is Diesel's: queries compile against it.
    let _ = samples::table.filter(samples::opt_text.is_null()).select(samples::id);
    assert!(Owner::MODEL.unwrap().column("name").unwrap().field.unique);
}
