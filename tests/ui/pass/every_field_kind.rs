// One field of every supported kind, required and optional.

use chrono::{DateTime, NaiveDate, Utc};
use crudforge::field::Kind;
use crudforge::Resource;
use diesel::prelude::*;
use uuid::Uuid;

diesel::table! {
    use diesel::sql_types::*;
    use crudforge::sql_types::*;

    samples (id) {
        id -> PortableUuid,
        created_at -> PortableTimestamp,
        updated_at -> PortableTimestamp,
        text -> Text,
        small -> SmallInt,
        int -> Integer,
        big -> BigInt,
        real -> Float,
        double -> Double,
        flag -> Bool,
        other_id -> PortableUuid,
        at -> PortableTimestamp,
        on -> Date,
        doc -> PortableJson,
        opt_text -> Nullable<Text>,
        opt_small -> Nullable<SmallInt>,
        opt_int -> Nullable<Integer>,
        opt_big -> Nullable<BigInt>,
        opt_real -> Nullable<Float>,
        opt_double -> Nullable<Double>,
        opt_flag -> Nullable<Bool>,
        opt_other_id -> Nullable<PortableUuid>,
        opt_at -> Nullable<PortableTimestamp>,
        opt_on -> Nullable<Date>,
        opt_doc -> Nullable<PortableJson>,
    }
}

#[derive(Queryable, Selectable, Resource)]
#[diesel(table_name = samples)]
pub struct Sample {
    pub id: Uuid,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub text: String,
    pub small: i16,
    pub int: i32,
    pub big: i64,
    pub real: f32,
    pub double: f64,
    pub flag: bool,
    pub other_id: Uuid,
    pub at: DateTime<Utc>,
    pub on: NaiveDate,
    pub doc: serde_json::Value,
    pub opt_text: Option<String>,
    pub opt_small: Option<i16>,
    pub opt_int: Option<i32>,
    pub opt_big: Option<i64>,
    pub opt_real: Option<f32>,
    pub opt_double: Option<f64>,
    pub opt_flag: Option<bool>,
    pub opt_other_id: Option<Uuid>,
    pub opt_at: Option<DateTime<Utc>>,
    pub opt_on: Option<NaiveDate>,
    pub opt_doc: Option<serde_json::Value>,
}

fn main() {
    let kind = |name| Sample::field(name).unwrap().kind;
    assert_eq!(kind("text"), Kind::Text);
    assert_eq!(kind("big"), Kind::Integer);
    assert_eq!(kind("real"), Kind::Float);
    assert_eq!(kind("flag"), Kind::Bool);
    assert_eq!(kind("opt_other_id"), Kind::Uuid);
    assert_eq!(kind("opt_at"), Kind::DateTime);
    assert_eq!(kind("on"), Kind::Date);
    assert_eq!(kind("opt_doc"), Kind::Json);
    assert!(Sample::field("opt_on").unwrap().nullable);
    assert!(!Sample::field("doc").unwrap().filterable);
}
