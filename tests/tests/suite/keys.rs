//! A write by key touches exactly one row, on both backends: a `res_id` that is not declared
//! unique is refused at mount time, and a key that still matches several rows (a unique index
//! missing from the migrations) makes PATCH and DELETE answer 409 without changing anything.
#![allow(missing_docs, clippy::unwrap_used)]

use actix_web::test;
use chrono::{DateTime, Utc};
use crudforge::crud::Operation;
use crudforge::{with_conn, Api, Resource};
use crudforge_tests::critters::Critter;
use crudforge_tests::{backend_tests, Backend};
use diesel::prelude::*;
use diesel_async::SimpleAsyncConnection;
use serde_json::{json, Value};
use uuid::Uuid;

diesel::table! {
    use diesel::sql_types::*;
    use crudforge::sql_types::*;

    labels (id) {
        id -> PortableUuid,
        created_at -> PortableTimestamp,
        updated_at -> PortableTimestamp,
        code -> Text,
        n -> Integer,
    }
}

/// A resource that declares `code` unique although its table has no unique index on it.
#[derive(Debug, Queryable, Selectable, Resource)]
#[diesel(table_name = labels)]
#[resource(rules = crudforge::perms::Open)]
pub struct Label {
    pub id: Uuid,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    #[resource(unique, max_len = 20)]
    pub code: String,
    pub n: i32,
}

backend_tests! {
    async fn a_non_unique_res_id_is_refused_at_mount_time(t) {
        let cfg = t.config();
        let db = t.open(&cfg).await;
        let api = Api::new(cfg, db).unwrap();
        let err = api.mount(Critter::blueprint("/api/by-name/").res_id("name")).unwrap_err();
        assert!(err.to_string().contains("not unique"), "{err}");
    }

    async fn a_key_that_matches_several_rows_changes_none(t) {
        let cfg = t.config();
        let db = t.open(&cfg).await;
        let ddl = match db.backend() {
            Backend::Sqlite => "CREATE TABLE labels (id TEXT PRIMARY KEY, created_at TEXT NOT NULL, updated_at TEXT NOT NULL, code TEXT NOT NULL, n INTEGER NOT NULL);",
            Backend::Postgres => "CREATE TABLE labels (id UUID PRIMARY KEY, created_at TIMESTAMPTZ NOT NULL, updated_at TIMESTAMPTZ NOT NULL, code TEXT NOT NULL, n INTEGER NOT NULL);",
        };
        let mut conn = db.get().await.unwrap();
        with_conn!(conn, |c| c.batch_execute(ddl).await).unwrap();
        for (code, n) in [("dup", 1), ("dup", 2), ("one", 3)] {
            let input: <Label as Resource>::Create = serde_json::from_value(json!({"code": code, "n": n})).unwrap();
            Label::insert(&mut conn, input).await.unwrap();
        }
        drop(conn);
        let api = Api::new(cfg, db.clone()).unwrap()
            .mount(Label::blueprint("/api/labels/").res_id("code").methods([Operation::Index, Operation::Get, Operation::Patch, Operation::Delete]))
            .unwrap();
        let app = test::init_service(api.app()).await;
        let resp = test::call_service(&app, test::TestRequest::patch().uri("/api/labels/dup").set_json(json!({"n": 9})).to_request()).await;
        assert_eq!(resp.status(), 409);
        let resp = test::call_service(&app, test::TestRequest::delete().uri("/api/labels/dup").to_request()).await;
        assert_eq!(resp.status(), 409);
        let resp = test::call_service(&app, test::TestRequest::get().uri("/api/labels/").to_request()).await;
        let v: Value = test::read_body_json(resp).await;
        let ns: Vec<i64> = v["data"].as_array().unwrap().iter().map(|r| r["n"].as_i64().unwrap()).collect();
        assert_eq!(ns.len(), 3, "nothing was deleted: {v}");
        assert!(!ns.contains(&9), "nothing was changed: {v}");
        // The one-row key still works.
        let resp = test::call_service(&app, test::TestRequest::patch().uri("/api/labels/one").set_json(json!({"n": 4})).to_request()).await;
        assert_eq!(resp.status(), 200);
        let resp = test::call_service(&app, test::TestRequest::delete().uri("/api/labels/one").to_request()).await;
        assert_eq!(resp.status(), 204);
    }
}
