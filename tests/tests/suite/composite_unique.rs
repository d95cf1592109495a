//! Composite unique constraints (`#[resource(unique("event_id", "seat"))]`), on both backends:
//! the model-first migration creates the unique index (in a new table, and added to an
//! existing one, with its drop in `down.sql`); the schema check reports it missing (a plain
//! index on the same columns does not count, a `UNIQUE (...)` table constraint does); a
//! schema-first resource's `print-indexes` statements include it; and a write that breaks it
//! (POST, PATCH, batch create and batch update) is a 409 naming every member, while the same
//! seat for another event is accepted.
#![allow(missing_docs, clippy::unwrap_used)]

use actix_web::test;
use chrono::{DateTime, Utc};
use crudforge::__bench::make_migrations_for;
use crudforge::crud::Operation;
use crudforge::db::IndexSpec;
use crudforge::migrations::{make_migrations, run_migration_dir};
use crudforge::{with_conn, Api, Database, Resource};
use crudforge_tests::http::send;
use crudforge_tests::{backend_tests, Backend, TestDb};
use diesel::prelude::*;
use diesel_async::SimpleAsyncConnection;
use serde_json::{json, Value};
use std::path::Path;

/// An event.
#[derive(Debug, Clone, Queryable, Selectable, Resource)]
#[diesel(table_name = events)]
#[resource(model_first, rules = crudforge::perms::Open)]
pub struct Event {
    pub id: uuid::Uuid,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub title: String,
}

/// A ticket: one seat of an event, each seat sold once per event.
#[derive(Debug, Clone, Queryable, Selectable, Resource)]
#[diesel(table_name = tickets)]
#[resource(model_first, rules = crudforge::perms::Open, unique("event_id", "seat"))]
pub struct Ticket {
    pub id: uuid::Uuid,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    #[resource(references = "events")]
    pub event_id: uuid::Uuid,
    pub seat: i32,
    pub holder: Option<String>,
}

/// The ticket model before it declared its constraint.
mod v0 {
    use super::*;

    #[derive(Debug, Clone, Queryable, Selectable, Resource)]
    #[diesel(table_name = tickets)]
    #[resource(model_first, name = "TicketV0", rules = crudforge::perms::Open)]
    pub(crate) struct Ticket {
        pub id: uuid::Uuid,
        pub created_at: DateTime<Utc>,
        pub updated_at: DateTime<Utc>,
        #[resource(references = "events")]
        pub event_id: uuid::Uuid,
        pub seat: i32,
        pub holder: Option<String>,
    }
}

diesel::table! {
    use diesel::sql_types::*;
    use crudforge::sql_types::*;

    seats (id) {
        id -> PortableUuid,
        created_at -> PortableTimestamp,
        updated_at -> PortableTimestamp,
        section -> Text,
        number -> Integer,
    }
}

/// A schema-first resource (its table written by hand) with a composite unique constraint.
#[derive(Debug, Clone, Queryable, Selectable, Resource)]
#[diesel(table_name = seats)]
#[resource(rules = crudforge::perms::Open, index("section"), unique("section", "number"))]
pub struct Seat {
    pub id: uuid::Uuid,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub section: String,
    pub number: i32,
}

type Req = test::TestRequest;

async fn execute(db: &Database, sql: &str) {
    let mut conn = db.get().await.unwrap();
    with_conn!(conn, |c| c.batch_execute(sql).await).unwrap_or_else(|e| panic!("{sql}: {e}"));
}

fn read(dir: &Path, backend: &str, folder: &str, file: &str) -> String {
    std::fs::read_to_string(dir.join(backend).join(folder).join(file)).unwrap()
}

async fn schema_lines(api: &Api) -> Vec<String> {
    api.check_schema()
        .await
        .unwrap()
        .iter()
        .map(ToString::to_string)
        .collect()
}

fn mount_tickets(t: &TestDb, db: &Database) -> Api {
    Api::new(t.config(), db.clone())
        .unwrap()
        .mount(Event::blueprint("/api/events/"))
        .unwrap()
        .mount(Ticket::blueprint("/api/tickets/").batch([Operation::Post, Operation::Patch]))
        .unwrap()
}

const UNIQUE_SQL: &str =
    "CREATE UNIQUE INDEX IF NOT EXISTS tickets_event_id_seat_key ON tickets (event_id, seat);";

/// The members a problem's `errors` point at.
fn pointers(p: &Value) -> Vec<&str> {
    p["errors"]
        .as_array()
        .map(|a| a.iter().map(|e| e["pointer"].as_str().unwrap()).collect())
        .unwrap_or_default()
}

/// Checks a single write's 409: `field` the first member, `errors` every member.
fn assert_names_the_members(status: u16, p: &Value) {
    assert_eq!(status, 409, "{p}");
    assert_eq!(p["type"], "/errors/conflict_error", "{p}");
    assert_eq!(p["field"], "event_id", "{p}");
    assert_eq!(p["table"], "tickets", "{p}");
    assert_eq!(
        p["detail"], "A record with the same `event_id` and `seat` already exists in `tickets`.",
        "{p}"
    );
    assert_eq!(pointers(p), ["/event_id", "/seat"], "{p}");
    assert_eq!(
        p["errors"][1]["detail"],
        "another record has the same `event_id` and `seat`"
    );
}

#[::core::prelude::v1::test]
fn the_derive_declares_the_constraint() {
    assert_eq!(Ticket::UNIQUES, &[&["event_id", "seat"][..]]);
    assert_eq!(v0::Ticket::UNIQUES.len(), 0);
    let model = Ticket::MODEL.unwrap();
    assert_eq!(model.uniques, Ticket::UNIQUES);
    assert_eq!(
        model.unique_specs(),
        [IndexSpec::new_unique("tickets", &["event_id", "seat"])]
    );
    assert_eq!(Seat::MODEL, None);
    assert_eq!(
        Seat::indexes(),
        [
            IndexSpec::new("seats", &["section"]),
            IndexSpec::new_unique("seats", &["section", "number"]),
        ]
    );
}

/// A new table's migration creates the unique index after the table, on both backends; the
/// table's drop takes it along.
#[::core::prelude::v1::test]
fn a_new_tables_migration_creates_the_unique_index() {
    let dir = tempfile::tempdir().unwrap();
    let models = [Event::MODEL.unwrap(), Ticket::MODEL.unwrap()];
    let report = make_migrations_for(&models, dir.path(), "create_tickets").unwrap();
    let folder = report.folder.clone().unwrap();
    assert_eq!(report.changes, ["events: new table", "tickets: new table"]);
    for backend in ["sqlite", "postgres"] {
        let up = read(dir.path(), backend, &folder, "up.sql");
        let table = up.find("CREATE TABLE tickets").unwrap();
        let index = up.find(UNIQUE_SQL).unwrap_or_else(|| panic!("{up}"));
        assert!(table < index, "{up}");
        let down = read(dir.path(), backend, &folder, "down.sql");
        assert!(down.contains("DROP TABLE tickets;"), "{down}");
    }
}

backend_tests! {
    async fn the_generator_adds_it_and_the_schema_check_finds_it(t) {
        let db = t.open(&t.config()).await;
        let dir = t.dir.path().join("migrations");

        // The tables without the constraint.
        let api0 = Api::new(t.config(), db.clone())
            .unwrap()
            .mount(Event::blueprint("/api/events/"))
            .unwrap()
            .mount(v0::Ticket::blueprint("/api/tickets/"))
            .unwrap();
        let first = make_migrations(&api0, &dir, "create_tickets").unwrap();
        assert!(!read(&dir, "sqlite", first.folder.as_ref().unwrap(), "up.sql").contains("UNIQUE INDEX"));
        run_migration_dir(&db, &dir).await.unwrap();

        // The model now declares it: the schema check misses it, the next migration adds it.
        let api = mount_tickets(&t, &db);
        assert_eq!(
            schema_lines(&api).await,
            ["tickets(event_id, seat): unique index missing"]
        );
        let second = make_migrations(&api, &dir, "ticket_seats").unwrap();
        assert_eq!(second.changes, ["tickets(event_id, seat): new unique index"], "{second}");
        assert!(second.todo.is_empty(), "{second}");
        let folder = second.folder.clone().unwrap();
        for backend in ["sqlite", "postgres"] {
            let up = read(&dir, backend, &folder, "up.sql");
            assert!(up.contains(UNIQUE_SQL), "{up}");
            let down = read(&dir, backend, &folder, "down.sql");
            assert!(down.contains("DROP INDEX IF EXISTS tickets_event_id_seat_key;"), "{down}");
        }
        assert_eq!(run_migration_dir(&db, &dir).await.unwrap().len(), 1);
        assert_eq!(schema_lines(&api).await, Vec::<String>::new());
        assert_eq!(make_migrations(&api, &dir, "again").unwrap().folder, None);

        // A plain index over the same columns is not the constraint.
        execute(&db, "DROP INDEX tickets_event_id_seat_key").await;
        execute(&db, "CREATE INDEX tickets_by_seat ON tickets (event_id, seat)").await;
        assert_eq!(
            schema_lines(&api).await,
            ["tickets(event_id, seat): unique index missing"]
        );
        // Nor is a unique index on one of its members (a stricter rule).
        execute(&db, "CREATE UNIQUE INDEX tickets_one_seat ON tickets (seat)").await;
        assert_eq!(
            schema_lines(&api).await,
            ["tickets(event_id, seat): unique index missing"]
        );
        // A unique index under another name, its columns in another order, is.
        execute(&db, "CREATE UNIQUE INDEX tickets_seat_event ON tickets (seat, event_id)").await;
        assert_eq!(schema_lines(&api).await, Vec::<String>::new());
    }

    async fn a_schema_first_resource_prints_and_checks_its_constraint(t) {
        let db = t.open(&t.config()).await;
        let api = Api::new(t.config(), db.clone())
            .unwrap()
            .mount(Seat::blueprint("/api/seats/"))
            .unwrap();
        // What `print-indexes` prints.
        let sql: Vec<String> = api.declared_indexes().iter().map(IndexSpec::create_sql).collect();
        assert_eq!(
            sql,
            [
                "CREATE INDEX IF NOT EXISTS seats_section_idx ON seats (section);",
                "CREATE UNIQUE INDEX IF NOT EXISTS seats_section_number_key ON seats (section, number);",
            ]
        );
        let (id, ts) = match db.backend() {
            Backend::Sqlite => ("TEXT", "TEXT"),
            Backend::Postgres => ("UUID", "TIMESTAMPTZ"),
        };
        let columns = format!(
            "id {id} PRIMARY KEY, created_at {ts} NOT NULL, updated_at {ts} NOT NULL, \
             section TEXT NOT NULL, number INTEGER NOT NULL"
        );
        execute(&db, &format!("CREATE TABLE seats ({columns})")).await;
        execute(&db, "CREATE INDEX seats_section_idx ON seats (section)").await;
        assert_eq!(
            schema_lines(&api).await,
            ["seats(section, number): unique index missing"]
        );
        assert_eq!(api.check_indexes().await.unwrap(), [IndexSpec::new_unique("seats", &["section", "number"])]);
        // A table constraint written in the CREATE TABLE is the constraint too.
        execute(&db, "DROP TABLE seats").await;
        execute(
            &db,
            &format!("CREATE TABLE seats ({columns}, UNIQUE (section, number))"),
        )
        .await;
        assert_eq!(schema_lines(&api).await, Vec::<String>::new());

        // Its violation names both members.
        let app = test::init_service(api.app()).await;
        let seat = json!({"section": "A", "number": 1});
        let (status, body) = send(&app, Req::post().uri("/api/seats/").set_json(&seat)).await;
        assert_eq!(status, 201, "{body}");
        let (status, p) = send(&app, Req::post().uri("/api/seats/").set_json(&seat)).await;
        assert_eq!(status, 409, "{p}");
        assert_eq!(p["field"], "section", "{p}");
        assert_eq!(pointers(&p), ["/section", "/number"], "{p}");
    }

    async fn a_duplicate_pair_is_a_409_naming_the_members(t) {
        let db = t.open(&t.config()).await;
        let dir = t.dir.path().join("migrations");
        let api = mount_tickets(&t, &db);
        make_migrations(&api, &dir, "create_tickets").unwrap();
        run_migration_dir(&db, &dir).await.unwrap();
        let app = test::init_service(api.app()).await;

        let mut events = Vec::new();
        for title in ["Concert", "Play"] {
            let (status, body) =
                send(&app, Req::post().uri("/api/events/").set_json(json!({"title": title}))).await;
            assert_eq!(status, 201, "{body}");
            events.push(body["id"].as_str().unwrap().to_owned());
        }
        let (concert, play) = (&events[0], &events[1]);
        let ticket = |event: &str, seat: i32| json!({"event_id": event, "seat": seat});
        let post = |body: Value| Req::post().uri("/api/tickets/").set_json(body);

        let (status, first) = send(&app, post(ticket(concert, 1))).await;
        assert_eq!(status, 201, "{first}");
        // POST: the same seat of the same event.
        let (status, p) = send(&app, post(ticket(concert, 1))).await;
        assert_names_the_members(status, &p);
        // The same seat of another event, and another seat of the same event.
        let (status, other_event) = send(&app, post(ticket(play, 1))).await;
        assert_eq!(status, 201, "{other_event}");
        let (status, second) = send(&app, post(ticket(concert, 2))).await;
        assert_eq!(status, 201, "{second}");
        // NULL-free members: a holder does not change the pair.
        let (status, p) = send(&app, post(json!({"event_id": play, "seat": 1, "holder": "Ann"}))).await;
        assert_names_the_members(status, &p);

        // PATCH: moving a ticket onto a taken seat (the seat, or the event).
        let patch = |id: &Value, body: Value| {
            Req::patch().uri(&format!("/api/tickets/{}", id.as_str().unwrap())).set_json(body)
        };
        let (status, p) = send(&app, patch(&second["id"], json!({"seat": 1}))).await;
        assert_names_the_members(status, &p);
        let (status, p) = send(&app, patch(&other_event["id"], json!({"event_id": concert}))).await;
        assert_names_the_members(status, &p);
        // A change that keeps the pair free is accepted.
        let (status, body) = send(&app, patch(&second["id"], json!({"seat": 3}))).await;
        assert_eq!(status, 200, "{body}");

        // Batch create: the refused item's members, nothing written.
        let count = |event: String| Req::get().uri(&format!("/api/tickets/?event_id={event}"));
        let (_, before) = send(&app, count(play.clone())).await;
        let items = json!({"items": [ticket(play, 5), ticket(concert, 1)]});
        let (status, p) = send(&app, Req::post().uri("/api/tickets/batch/").set_json(items)).await;
        assert_eq!(status, 409, "{p}");
        assert_eq!(pointers(&p), ["/items/1/event_id", "/items/1/seat"], "{p}");
        assert!(
            p["detail"].as_str().unwrap().ends_with(
                "A record with the same `event_id` and `seat` already exists in `tickets`."
            ),
            "{p}"
        );
        let (_, after) = send(&app, count(play.clone())).await;
        assert_eq!(after["data"], before["data"], "nothing was written");
        // Two items of one batch that collide with each other.
        let items = json!({"items": [ticket(play, 7), ticket(play, 7)]});
        let (status, p) = send(&app, Req::post().uri("/api/tickets/batch/").set_json(items)).await;
        assert_eq!(status, 409, "{p}");
        assert_eq!(pointers(&p), ["/items/1/event_id", "/items/1/seat"], "{p}");

        // Batch update: both members, in the refused item.
        let items = json!({"items": [{"id": second["id"], "changes": {"seat": 1}}]});
        let (status, p) = send(&app, Req::patch().uri("/api/tickets/batch/").set_json(items)).await;
        assert_eq!(status, 409, "{p}");
        let fields: Vec<&str> = p["errors"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["field"].as_str().unwrap())
            .collect();
        assert_eq!(fields, ["event_id", "seat"], "{p}");
        assert!(pointers(&p).iter().all(|p| p.starts_with("/items/0/")), "{p}");
    }
}
