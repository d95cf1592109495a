//! Constraint failures on both backends: a delete of a row that others still reference
//! (`ON DELETE RESTRICT` and `NO ACTION`), a write that refers to a missing row and a unique
//! index are each 409 `conflict_error` naming the constraint's table and, where known, the
//! field; never a 500, and nothing is changed.
#![allow(missing_docs, clippy::unwrap_used)]

use actix_web::body::MessageBody;
use actix_web::dev::{Service, ServiceResponse};
use actix_web::test;
use chrono::{DateTime, Utc};
use crudforge::condition::{Arg, Cond};
use crudforge::{with_conn, Api, Database, Resource};
use crudforge_tests::{backend_tests, Backend, TestDb};
use diesel::prelude::*;
use diesel_async::SimpleAsyncConnection;
use serde_json::{json, Value};
use uuid::Uuid;

diesel::table! {
    use diesel::sql_types::*;
    use crudforge::sql_types::*;

    racks (id) {
        id -> PortableUuid,
        created_at -> PortableTimestamp,
        updated_at -> PortableTimestamp,
        label -> Text,
    }
}

diesel::table! {
    use diesel::sql_types::*;
    use crudforge::sql_types::*;

    shelves (id) {
        id -> PortableUuid,
        created_at -> PortableTimestamp,
        updated_at -> PortableTimestamp,
        name -> Text,
        rack_id -> Nullable<PortableUuid>,
    }
}

diesel::table! {
    use diesel::sql_types::*;
    use crudforge::sql_types::*;

    books (id) {
        id -> PortableUuid,
        created_at -> PortableTimestamp,
        updated_at -> PortableTimestamp,
        shelf_id -> PortableUuid,
        isbn -> Text,
    }
}

diesel::table! {
    use diesel::sql_types::*;
    use crudforge::sql_types::*;

    stickers (id) {
        id -> PortableUuid,
        created_at -> PortableTimestamp,
        updated_at -> PortableTimestamp,
        shelf_id -> PortableUuid,
    }
}

diesel::table! {
    use diesel::sql_types::*;
    use crudforge::sql_types::*;

    /// The racks table under another Rust name.
    #[sql_name = "racks"]
    rack_rows (id) {
        id -> PortableUuid,
        created_at -> PortableTimestamp,
        updated_at -> PortableTimestamp,
        label -> Text,
    }
}

/// The same racks through a `table!` that renames the table (`#[sql_name]`).
#[derive(Debug, Queryable, Selectable, Resource)]
#[diesel(table_name = rack_rows)]
#[resource(rules = crudforge::perms::Open)]
pub struct RackRow {
    pub id: Uuid,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub label: String,
}

/// Referenced by shelves (`NO ACTION`, the only table that references it).
#[derive(Debug, Queryable, Selectable, Resource)]
#[diesel(table_name = racks)]
#[resource(rules = crudforge::perms::Open)]
pub struct Rack {
    pub id: Uuid,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    #[resource(max_len = 50)]
    pub label: String,
}

/// Referenced by books (`RESTRICT`) and stickers (`NO ACTION`); `name` is unique.
#[derive(Debug, Queryable, Selectable, Resource)]
#[diesel(table_name = shelves)]
#[resource(rules = crudforge::perms::Open)]
pub struct Shelf {
    pub id: Uuid,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    #[resource(max_len = 50)]
    pub name: String,
    pub rack_id: Option<Uuid>,
}

#[derive(Debug, Queryable, Selectable, Resource)]
#[diesel(table_name = books)]
#[resource(rules = crudforge::perms::Open)]
pub struct Book {
    pub id: Uuid,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub shelf_id: Uuid,
    #[resource(max_len = 20)]
    pub isbn: String,
}

#[derive(Debug, Queryable, Selectable, Resource)]
#[diesel(table_name = stickers)]
#[resource(rules = crudforge::perms::Open)]
pub struct Sticker {
    pub id: Uuid,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub shelf_id: Uuid,
}

async fn tables(db: &Database) {
    let (id, ts) = match db.backend() {
        Backend::Sqlite => ("TEXT", "TEXT"),
        Backend::Postgres => ("UUID", "TIMESTAMPTZ"),
    };
    let ddl = format!(
        "CREATE TABLE racks (id {id} PRIMARY KEY, created_at {ts} NOT NULL, updated_at {ts} NOT NULL, label TEXT NOT NULL);
         CREATE TABLE shelves (id {id} PRIMARY KEY, created_at {ts} NOT NULL, updated_at {ts} NOT NULL, name TEXT NOT NULL,
             rack_id {id} REFERENCES racks (id) ON DELETE NO ACTION);
         CREATE UNIQUE INDEX shelves_name ON shelves (name);
         CREATE TABLE books (id {id} PRIMARY KEY, created_at {ts} NOT NULL, updated_at {ts} NOT NULL,
             shelf_id {id} NOT NULL REFERENCES shelves (id) ON DELETE RESTRICT, isbn TEXT NOT NULL);
         CREATE UNIQUE INDEX books_isbn ON books (isbn);
         CREATE TABLE stickers (id {id} PRIMARY KEY, created_at {ts} NOT NULL, updated_at {ts} NOT NULL,
             shelf_id {id} NOT NULL REFERENCES shelves (id) ON DELETE NO ACTION);"
    );
    let mut conn = db.get().await.unwrap();
    with_conn!(conn, |c| c.batch_execute(&ddl).await).unwrap();
}

async fn api(t: &TestDb) -> (Api, Database) {
    let cfg = t.config();
    let db = t.open(&cfg).await;
    tables(&db).await;
    let api = Api::new(cfg, db.clone())
        .unwrap()
        .mount(Rack::blueprint("/api/racks/"))
        .unwrap()
        .mount(Shelf::blueprint("/api/shelves/"))
        .unwrap()
        .mount(Book::blueprint("/api/books/"))
        .unwrap()
        .mount(Sticker::blueprint("/api/stickers/"))
        .unwrap()
        .mount(RackRow::blueprint("/api/rack_rows/"))
        .unwrap();
    (api, db)
}

async fn send<S, B>(app: &S, req: test::TestRequest) -> (u16, Value)
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let resp = test::call_service(app, req.to_request()).await;
    let status = resp.status().as_u16();
    let bytes = test::read_body(resp).await;
    if bytes.is_empty() {
        return (status, Value::Null);
    }
    (status, serde_json::from_slice(&bytes).unwrap())
}

fn post(uri: &str, body: Value) -> test::TestRequest {
    test::TestRequest::post().uri(uri).set_json(body)
}

fn delete(uri: &str) -> test::TestRequest {
    test::TestRequest::delete().uri(uri)
}

/// A 409 `conflict_error` naming `table` and `field` (`None`: no `field` member).
fn conflict(status: u16, b: &Value, table: &str, field: Option<&str>) {
    assert_eq!(status, 409, "{b}");
    assert_eq!(b["type"], "/errors/conflict_error", "{b}");
    assert_eq!(b["table"], table, "{b}");
    match field {
        Some(f) => assert_eq!(b["field"], f, "{b}"),
        None => assert!(b.get("field").is_none(), "{b}"),
    }
    assert!(
        b["detail"]
            .as_str()
            .unwrap()
            .contains(&format!("`{table}`")),
        "{b}"
    );
}

backend_tests! {
    async fn deleting_a_referenced_row_is_409_naming_the_referencing_table(t) {
        let (api, db) = api(&t).await;
        let app = test::init_service(api.app()).await;
        let (_, rack) = send(&app, post("/api/racks/", json!({"label": "r"}))).await;
        let rack = rack["id"].as_str().unwrap().to_owned();
        let (_, a) = send(&app, post("/api/shelves/", json!({"name": "a", "rack_id": rack}))).await;
        let a = a["id"].as_str().unwrap().to_owned();
        let (_, b) = send(&app, post("/api/shelves/", json!({"name": "b"}))).await;
        let b = b["id"].as_str().unwrap().to_owned();
        let (s, book) = send(&app, post("/api/books/", json!({"shelf_id": a, "isbn": "1"}))).await;
        assert_eq!(s, 201, "{book}");
        let (s, sticker) = send(&app, post("/api/stickers/", json!({"shelf_id": b}))).await;
        assert_eq!(s, 201, "{sticker}");

        // ON DELETE RESTRICT (SQLite reports it through a trigger, not as a foreign key).
        let (s, p) = send(&app, delete(&format!("/api/shelves/{a}"))).await;
        conflict(s, &p, "books", None);
        // ON DELETE NO ACTION, from a table among several that reference shelves.
        let (s, p) = send(&app, delete(&format!("/api/shelves/{b}"))).await;
        conflict(s, &p, "stickers", None);
        // NO ACTION, the only table that references racks.
        let (s, p) = send(&app, delete(&format!("/api/racks/{rack}"))).await;
        conflict(s, &p, "shelves", None);
        // The same through a model whose `table!` renames the table: SQLite's catalog is asked
        // about `racks`, the SQL name, so the referencing table is still named.
        let (s, p) = send(&app, delete(&format!("/api/rack_rows/{rack}"))).await;
        conflict(s, &p, "shelves", None);
        // Nothing was deleted.
        for uri in [format!("/api/shelves/{a}"), format!("/api/shelves/{b}"), format!("/api/racks/{rack}")] {
            assert_eq!(send(&app, test::TestRequest::get().uri(&uri)).await.0, 200, "{uri}");
        }
        // Once the references are gone, the deletes go through.
        assert_eq!(send(&app, delete(&format!("/api/books/{}", book["id"].as_str().unwrap()))).await.0, 204);
        assert_eq!(send(&app, delete(&format!("/api/stickers/{}", sticker["id"].as_str().unwrap()))).await.0, 204);
        assert_eq!(send(&app, delete(&format!("/api/shelves/{b}"))).await.0, 204);
        assert_eq!(send(&app, delete(&format!("/api/shelves/{a}"))).await.0, 204);
        assert_eq!(send(&app, delete(&format!("/api/racks/{rack}"))).await.0, 204);

        // Code of the application's own that deletes with `?` gets a 409 as well, not a 500.
        let (_, c) = send(&app, post("/api/shelves/", json!({"name": "c"}))).await;
        let c: Uuid = c["id"].as_str().unwrap().parse().unwrap();
        send(&app, post("/api/books/", json!({"shelf_id": c, "isbn": "2"}))).await;
        let mut conn = db.get().await.unwrap();
        let e = Shelf::delete(&mut conn, &[Cond::eq("id", Arg::Uuid(c))][..]).await.unwrap_err();
        let p = e.problem();
        assert_eq!((p.status, p.type_.as_str()), (409, "/errors/conflict_error"), "{p:?}");
    }

    async fn a_missing_reference_and_a_taken_value_are_409_naming_the_field(t) {
        let (api, _db) = api(&t).await;
        let app = test::init_service(api.app()).await;
        let (_, a) = send(&app, post("/api/shelves/", json!({"name": "a"}))).await;
        let a = a["id"].as_str().unwrap().to_owned();
        let (_, book) = send(&app, post("/api/books/", json!({"shelf_id": a, "isbn": "1"}))).await;
        let book = book["id"].as_str().unwrap().to_owned();
        send(&app, post("/api/books/", json!({"shelf_id": a, "isbn": "2"}))).await;

        // Unique indexes, on insert and on update.
        let (s, p) = send(&app, post("/api/books/", json!({"shelf_id": a, "isbn": "1"}))).await;
        conflict(s, &p, "books", Some("isbn"));
        let (s, p) = send(&app, test::TestRequest::patch().uri(&format!("/api/books/{book}")).set_json(json!({"isbn": "2"}))).await;
        conflict(s, &p, "books", Some("isbn"));
        let (s, p) = send(&app, post("/api/shelves/", json!({"name": "a"}))).await;
        conflict(s, &p, "shelves", Some("name"));
        // A reference to a row that does not exist, on insert and on update.
        let nowhere = Uuid::new_v4();
        let (s, p) = send(&app, post("/api/books/", json!({"shelf_id": nowhere, "isbn": "3"}))).await;
        conflict(s, &p, "books", Some("shelf_id"));
        let (s, p) = send(&app, test::TestRequest::patch().uri(&format!("/api/books/{book}")).set_json(json!({"shelf_id": nowhere}))).await;
        conflict(s, &p, "books", Some("shelf_id"));
        let (s, p) = send(&app, post("/api/shelves/", json!({"name": "z", "rack_id": nowhere}))).await;
        conflict(s, &p, "shelves", Some("rack_id"));
        // Nothing was written.
        let (_, list) = send(&app, test::TestRequest::get().uri("/api/books/?sort=isbn")).await;
        let isbns: Vec<&str> = list["data"].as_array().unwrap().iter().map(|b| b["isbn"].as_str().unwrap()).collect();
        assert_eq!(isbns, ["1", "2"], "{list}");
        assert!(list["data"].as_array().unwrap().iter().all(|b| b["shelf_id"] == a.as_str()), "{list}");
        let (_, shelves) = send(&app, test::TestRequest::get().uri("/api/shelves/")).await;
        assert_eq!(shelves["data"].as_array().unwrap().len(), 1, "{shelves}");
    }
}
